//! What the interpreter runs and where its modules are: the interpreter's
//! name, its arguments (script, `-m module`, `-c`), its `sys.path` (asked
//! of the interpreter itself), module names of files, and the walk that
//! finds a tree's sources.

use super::super::walk::walk_files;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the interpreter gets to print its search path.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Is `path` a CPython interpreter, by its file name (`python`,
/// `python3`, `python3.11`, …)?
pub fn is_interpreter(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(OsStr::to_str) else {
        return false;
    };
    let Some(version) = name.strip_prefix("python") else {
        return false;
    };
    version.is_empty()
        || version
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
}

/// What the interpreter's arguments run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// A script file (or a directory or zip with `__main__.py`), as given.
    Script(PathBuf),
    /// `-m module`.
    Module(String),
    /// `-c command`.
    Command,
    /// Nothing named: the REPL or `-` (standard input).
    Interactive,
}

/// Options the interpreter reads before the program and the options among
/// them that change `sys.path` (`-I`, `-E`, `-s`, `-S`, `-P`), which the
/// search path probe passes on.
pub fn parse_args(args: &[String]) -> (Program, Vec<String>) {
    let mut path_flags = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            break;
        }
        if arg == "-" || !arg.starts_with('-') {
            return (program_of(Some(arg)), path_flags);
        }
        if let Some(long) = arg.strip_prefix("--") {
            // The one long option with a value; others (`--help`) stand alone.
            if long == "check-hash-based-pycs" {
                i += 1;
            }
            continue;
        }
        let flags = &arg[1..];
        for (at, c) in flags.char_indices() {
            if matches!(c, 'c' | 'm' | 'W' | 'X') {
                let attached = &flags[at + 1..];
                let value = if attached.is_empty() {
                    i += 1;
                    args.get(i - 1).cloned().unwrap_or_default()
                } else {
                    attached.to_string()
                };
                match c {
                    'c' => return (Program::Command, path_flags),
                    'm' => return (Program::Module(value), path_flags),
                    _ => break,
                }
            }
            if matches!(c, 'I' | 'E' | 's' | 'S' | 'P') {
                path_flags.push(format!("-{c}"));
            }
        }
    }
    (program_of(args.get(i)), path_flags)
}

fn program_of(arg: Option<&String>) -> Program {
    match arg {
        Some(a) if a != "-" => Program::Script(PathBuf::from(a)),
        _ => Program::Interactive,
    }
}

/// Why the interpreter could not say its search path.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// It could not be started.
    #[error("cannot run {interpreter}: {source}")]
    Spawn {
        /// The interpreter.
        interpreter: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// It did not finish in time (and was killed).
    #[error("{interpreter} did not print its sys.path within {}s", PROBE_TIMEOUT.as_secs())]
    Timeout {
        /// The interpreter.
        interpreter: PathBuf,
    },
    /// It failed.
    #[error("{interpreter} failed to print its sys.path ({status}): {stderr}")]
    Failed {
        /// The interpreter.
        interpreter: PathBuf,
        /// How it exited.
        status: std::process::ExitStatus,
        /// The end of what it printed on stderr.
        stderr: String,
    },
}

/// `sys.path` as the interpreter reports it when run with `flags` from
/// `cwd` with `env` added: NUL-separated raw bytes, so that any path
/// (even one that is not UTF-8) comes back exactly.
pub fn probe_sys_path(
    interpreter: &Path,
    flags: &[String],
    cwd: &Path,
    env: &[(String, String)],
) -> Result<Vec<PathBuf>, ProbeError> {
    let mut cmd = Command::new(interpreter);
    cmd.args(flags)
        .arg("-c")
        .arg("import os, sys; sys.stdout.buffer.write(b'\\0'.join(map(os.fsencode, sys.path)))")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if cwd.is_dir() {
        cmd.current_dir(cwd);
    }
    let mut child = cmd.spawn().map_err(|source| ProbeError::Spawn {
        interpreter: interpreter.to_path_buf(),
        source,
    })?;
    // Read in threads so a full pipe cannot stall the child past the timeout.
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|s| Box::new(s) as _));
    let err = drain(child.stderr.take().map(|s| Box::new(s) as _));
    let deadline = Instant::now() + PROBE_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ProbeError::Timeout {
                    interpreter: interpreter.to_path_buf(),
                });
            }
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if !status.success() {
        let text = String::from_utf8_lossy(&stderr);
        let tail: Vec<&str> = text.lines().rev().take(3).collect();
        return Err(ProbeError::Failed {
            interpreter: interpreter.to_path_buf(),
            status,
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
        });
    }
    Ok(stdout
        .split(|&b| b == 0)
        .map(|p| PathBuf::from(OsStr::from_bytes(p)))
        .collect())
}

/// The dotted module name of `file`: its path below the longest search
/// path entry (or the project root) holding it, `pkg/__init__.py` → `pkg`.
pub fn module_name(file: &Path, search_path: &[PathBuf], project_root: &Path) -> String {
    let base = search_path
        .iter()
        .map(PathBuf::as_path)
        .chain([project_root])
        .filter(|e| file.starts_with(e))
        .max_by_key(|e| e.as_os_str().len());
    let rel = base.map_or(file, |b| file.strip_prefix(b).unwrap_or(file));
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .filter(|c| c != "/")
        .collect();
    if let Some(last) = parts.last_mut()
        && let Some(stem) = last.strip_suffix(".py")
    {
        *last = stem.to_string();
    }
    if parts.len() > 1 && parts.last().is_some_and(|l| l == "__init__") {
        parts.pop();
    }
    parts.join(".")
}

/// Directories that hold no user code: hidden ones, caches, installed
/// packages.
fn skipped_dir(name: &OsStr) -> bool {
    let name = name.as_bytes();
    name.starts_with(b".")
        || [
            &b"__pycache__"[..],
            b"node_modules",
            b"site-packages",
            b"dist-packages",
        ]
        .contains(&name)
}

/// Kernel file systems, never source trees (and endless to walk).
const PSEUDO_FS: [&str; 3] = ["/proc", "/sys", "/dev"];

/// Appends the `.py` files under `root` (see [`walk_files`]: skipping
/// [`skipped_dir`]s, virtualenvs and kernel file systems) to `out`; true
/// when it stopped at a limit.
pub(super) fn walk_sources(root: &Path, out: &mut Vec<PathBuf>) -> bool {
    if PSEUDO_FS.iter().any(|p| root == Path::new(p)) {
        return false;
    }
    walk_files(
        root,
        out,
        |dir| {
            dir.file_name().is_none_or(|n| !skipped_dir(n))
                && !dir.join("pyvenv.cfg").exists()
                && !PSEUDO_FS.iter().any(|p| dir == Path::new(p))
        },
        |file| file.as_os_str().as_bytes().ends_with(b".py"),
    )
}
