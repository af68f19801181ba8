//! Python stacks through py-spy (`py-spy dump --json`), which reads the
//! interpreter's frames from outside: a deadlocked interpreter runs no code
//! of ours, so nothing inside it could answer. Native frames of a Python
//! process only show the bytecode loop.

use super::{ProcessInfo, StackError, StackFrame, StackSampler, ThreadStack};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The py-spy sampler. `strobe setup` installs a pinned py-spy into
/// Strobe's venv ([`strobe_frida::PINNED_PY_SPY_VERSION`]).
pub struct PythonSampler {
    /// Strobe's venv, whose `bin/py-spy` comes first.
    venv: Option<PathBuf>,
}

impl PythonSampler {
    /// A sampler that looks for py-spy in `venv` (Strobe's) first.
    pub fn new(venv: Option<PathBuf>) -> Self {
        Self { venv }
    }
}

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

/// Which py-spy to run: `$STROBE_PY_SPY` when set (a path; nothing else
/// is looked at, so a test can take py-spy away), else the one in Strobe's
/// venv, else one on PATH. The error says how to get it.
fn py_spy(venv: Option<&Path>) -> Result<PathBuf, String> {
    let setup = format!(
        "run `strobe setup` (it installs py-spy=={} into Strobe's venv{})",
        strobe_frida::PINNED_PY_SPY_VERSION,
        venv.map(|v| format!(", {}", v.display()))
            .unwrap_or_default()
    );
    if let Some(chosen) = std::env::var_os("STROBE_PY_SPY").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(&chosen);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "Python stacks need py-spy, and STROBE_PY_SPY={} is no file: unset it or {setup}",
                p.display()
            ))
        };
    }
    if let Some(p) = venv.map(|v| v.join("bin/py-spy")).filter(|p| p.is_file()) {
        return Ok(p);
    }
    strobe_session::validate::resolve_command("py-spy", Path::new("/"), None)
        .map_err(|_| format!("Python stacks need py-spy, which is not installed: {setup}"))
}

impl StackSampler for PythonSampler {
    fn name(&self) -> &'static str {
        "python"
    }

    fn handles(&self, process: &ProcessInfo) -> bool {
        process.exe_name().starts_with("python")
    }

    fn sample(&self, process: &ProcessInfo) -> Result<Vec<ThreadStack>, StackError> {
        let spy = py_spy(self.venv.as_deref()).map_err(StackError::Tool)?;
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
                        entry: None,
                    })
                    .collect(),
            })
            .collect())
    }
}
