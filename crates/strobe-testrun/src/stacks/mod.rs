//! Thread stacks of a process Strobe started but did not instrument (a test
//! run's processes), as the process's own user: what the stuck detector
//! compares between samples and shows when it stops a test.
//!
//! Each runtime is one [`StackSampler`] in its own file, registered in
//! [`samplers()`]: native code is unwound through ptrace with each image's
//! CFI (no root needed, unlike `/proc/PID/task/*/stack`, which shows kernel
//! frames only); Python through py-spy, which reads the interpreter's frames.
//! The first sampler that handles a process wins; the native one handles
//! every process, so it goes last.

mod native;
mod python;

use serde::Serialize;
use std::path::PathBuf;

/// One frame of a thread's stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StackFrame {
    /// The function, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// Its source file, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The line in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The image (native) or module (Python) it is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// The code address (native frames).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The image file and its runtime base (native frames), for naming the
    /// frame later.
    #[serde(skip)]
    pub image: Option<(PathBuf, u64)>,
    /// Which function the frame is in, as cheaply as the sampler can tell
    /// at sampling time (native: `image+0xentry` from the image's symbol
    /// table), for comparing samples.
    #[serde(skip)]
    pub entry: Option<String>,
}

impl StackFrame {
    /// `function (file:line)`, as reports show it.
    pub fn display(&self) -> String {
        let function = self.function.as_deref().unwrap_or("??");
        match (&self.file, self.line) {
            (Some(f), Some(l)) => format!("{function} ({f}:{l})"),
            _ => match (&self.module, &self.address) {
                (Some(m), _) => format!("{function} ({m})"),
                (None, Some(a)) => format!("{function} ({a})"),
                (None, None) => function.to_string(),
            },
        }
    }
}

/// One thread and its frames, innermost first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStack {
    /// The thread's id (the kernel's tid).
    pub tid: u32,
    /// Its name (`comm`, or the runtime's name for it).
    pub name: String,
    /// Its frames, innermost first.
    pub frames: Vec<StackFrame>,
}

impl ThreadStack {
    /// What identifies the stack across samples, innermost first: the
    /// function of each frame where known, else its return address (a
    /// loop's pc moves, the addresses it will return to do not: an unknown
    /// innermost frame counts by its image).
    pub fn signature(&self) -> Vec<&str> {
        self.frames
            .iter()
            .enumerate()
            .map(|(i, f)| match (&f.entry, &f.function, i) {
                (Some(entry), _, _) => entry.as_str(),
                (None, Some(name), _) => name.as_str(),
                (None, None, 0) => f.module.as_deref().unwrap_or("??"),
                (None, None, _) => f.address.as_deref().unwrap_or("??"),
            })
            .collect()
    }
}

/// A process to sample.
#[derive(Debug, Clone)]
pub struct ProcessInfo {
    /// Its pid.
    pub pid: u32,
    /// Its executable (`/proc/PID/exe`).
    pub exe: Option<PathBuf>,
}

impl ProcessInfo {
    /// The process `pid`, as `/proc` shows it now.
    pub fn of(pid: u32) -> ProcessInfo {
        ProcessInfo {
            pid,
            exe: std::fs::read_link(format!("/proc/{pid}/exe")).ok(),
        }
    }

    /// The executable's file name.
    pub fn exe_name(&self) -> &str {
        self.exe
            .as_ref()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("")
    }
}

/// Why no stacks could be taken.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    /// The process is gone.
    #[error("process {0} has exited")]
    Gone(u32),
    /// The kernel refused to let Strobe stop the threads.
    #[error(
        "cannot stop the threads of process {pid} with ptrace ({reason}); another debugger may be attached, or kernel.yama.ptrace_scope forbids it"
    )]
    Ptrace {
        /// The process.
        pid: u32,
        /// The error.
        reason: String,
    },
    /// The runtime's tool is missing or failed.
    #[error("{0}")]
    Tool(String),
}

/// One way of taking a process's thread stacks.
pub trait StackSampler: Send + Sync {
    /// Short name, for reports: "native", "python".
    fn name(&self) -> &'static str;
    /// Whether this sampler knows the process's runtime.
    fn handles(&self, process: &ProcessInfo) -> bool;
    /// Every thread's stack, right now, as cheaply as the runtime allows
    /// (native frames are addresses until [`StackSampler::name_frames`]).
    fn sample(&self, process: &ProcessInfo) -> Result<Vec<ThreadStack>, StackError>;
    /// Names the frames a sample left unnamed (functions, files, lines):
    /// done only for stacks that are reported, as reading debug info takes
    /// far longer than the sample.
    fn name_frames(&self, _threads: &mut [ThreadStack]) {}
}

/// Every built-in sampler, most specific first. Symbol indexes are cached
/// under `symbol_cache`; py-spy is looked for in Strobe's `venv` first.
pub fn samplers(
    symbol_cache: Option<PathBuf>,
    venv: Option<PathBuf>,
) -> Vec<Box<dyn StackSampler>> {
    vec![
        Box::new(python::PythonSampler::new(venv)),
        Box::new(native::NativeSampler::new(symbol_cache)),
    ]
}

/// Names the frames of a sample taken by the sampler called `sampler`.
pub fn name_frames(samplers: &[Box<dyn StackSampler>], sampler: &str, threads: &mut [ThreadStack]) {
    if let Some(s) = samplers.iter().find(|s| s.name() == sampler) {
        s.name_frames(threads);
    }
}

/// The stacks of `process` by the first sampler that handles it, and that
/// sampler's name.
pub fn sample(
    samplers: &[Box<dyn StackSampler>],
    process: &ProcessInfo,
) -> (Result<Vec<ThreadStack>, StackError>, &'static str) {
    if process.exe.is_none() {
        return (Err(StackError::Gone(process.pid)), "none");
    }
    for s in samplers {
        if s.handles(process) {
            return (s.sample(process), s.name());
        }
    }
    (
        Err(StackError::Tool(format!(
            "no stack sampler for {}",
            process.exe_name()
        ))),
        "none",
    )
}
