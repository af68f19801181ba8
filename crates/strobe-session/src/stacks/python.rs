//! Python stacks through py-spy (`py-spy dump --json`), which reads the
//! interpreter's frames from outside: a deadlocked interpreter runs no code
//! of ours, so nothing inside it could answer. Native frames of a Python
//! process only show the bytecode loop.

use super::{ProcessInfo, StackError, StackFrame, StackSampler, ThreadStack};
use serde::Deserialize;
use std::path::PathBuf;
use std::process::Command;

/// The py-spy sampler.
pub struct PythonSampler;

#[derive(Deserialize)]
struct SpyThread {
    os_thread_id: Option<u32>,
    thread_id: u64,
    thread_name: Option<String>,
    frames: Vec<SpyFrame>,
}

#[derive(Deserialize)]
struct SpyFrame {
    name: String,
    filename: String,
    line: Option<u32>,
    module: Option<String>,
}

/// py-spy on PATH, else in Strobe's venv (`STROBE_VENV`).
fn py_spy() -> Option<PathBuf> {
    crate::validate::resolve_command("py-spy", std::path::Path::new("/"))
        .ok()
        .or_else(|| {
            let venv = std::env::var_os("STROBE_VENV")?;
            let p = PathBuf::from(venv).join("bin/py-spy");
            p.is_file().then_some(p)
        })
}

impl StackSampler for PythonSampler {
    fn name(&self) -> &'static str {
        "python"
    }

    fn handles(&self, process: &ProcessInfo) -> bool {
        process.exe_name().starts_with("python")
    }

    fn sample(&self, process: &ProcessInfo) -> Result<Vec<ThreadStack>, StackError> {
        let spy = py_spy().ok_or_else(|| {
            StackError::Tool(
                "Python stacks need py-spy (pip install py-spy, on the daemon's PATH)".into(),
            )
        })?;
        let out = Command::new(&spy)
            .args(["dump", "--json", "--pid", &process.pid.to_string()])
            .output()
            .map_err(|e| StackError::Tool(format!("cannot run {}: {e}", spy.display())))?;
        if !out.status.success() {
            return Err(StackError::Tool(format!(
                "py-spy dump failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let threads: Vec<SpyThread> = serde_json::from_slice(&out.stdout)
            .map_err(|e| StackError::Tool(format!("py-spy dump printed no JSON stacks: {e}")))?;
        Ok(threads
            .into_iter()
            .map(|t| ThreadStack {
                tid: t.os_thread_id.unwrap_or(t.thread_id as u32),
                name: t.thread_name.unwrap_or_default(),
                frames: t
                    .frames
                    .into_iter()
                    .map(|f| StackFrame {
                        function: Some(f.name),
                        file: Some(f.filename),
                        line: f.line,
                        module: f.module,
                        address: None,
                        image: None,
                    })
                    .collect(),
            })
            .collect())
    }
}
