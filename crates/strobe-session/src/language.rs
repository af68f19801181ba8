//! What a launch command runs: native code, a Python program under an
//! interpreter, or a Node.js program (`node`, or a script with a node `#!`
//! line, launched as node with the script first). A Python program is
//! launched as the real interpreter with the script in its arguments, so
//! the agent lands in the interpreter itself rather than in a shell script
//! in front of it:
//!
//! - `python3 app.py`, `python3.11 -m pkg`: the interpreter;
//! - `app.py` (or any script) with a `#!…python…` line: its interpreter,
//!   with the script as the first argument (this covers `pytest` and other
//!   console scripts, whose shebang names their virtualenv's python);
//! - an interpreter that is itself a script (a pyenv or asdf shim, a
//!   wrapper) is asked for `sys.executable`: the binary it would exec.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use strobe_symbols::Language;
// One rule for what names an interpreter: the Python resolver's, which opens on the same images.
use strobe_symbols::resolvers::javascript::is_node;
use strobe_symbols::resolvers::python::is_interpreter;

/// The program a launch runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The executable to spawn.
    pub command: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The code it runs.
    pub language: Language,
    /// How the command was turned into this one, when it was ("pyenv shim
    /// /root/.pyenv/shims/python3 → /root/.pyenv/versions/3.11.7/bin/python3").
    pub note: Option<String>,
}

fn is_elf(path: &Path) -> bool {
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|_| head == *b"\x7fELF")
}

/// A script's `#!` line: the interpreter and its one optional argument,
/// with `/usr/bin/env NAME` looked up on PATH.
fn shebang(path: &Path, env: &BTreeMap<String, String>) -> Option<(PathBuf, Vec<String>)> {
    let mut buf = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut buf).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let line = text.strip_prefix("#!")?.lines().next()?.trim();
    let mut words = line.split_whitespace();
    let interp = PathBuf::from(words.next()?);
    let rest: Vec<String> = words.map(str::to_string).collect();
    if interp.file_name().is_some_and(|n| n == "env") {
        let name = rest.iter().find(|w| !w.starts_with('-'))?;
        let found = lookup(name, env)?;
        let after: Vec<String> = rest
            .iter()
            .skip_while(|w| *w != name)
            .skip(1)
            .cloned()
            .collect();
        return Some((found, after));
    }
    Some((interp, rest))
}

fn lookup(name: &str, env: &BTreeMap<String, String>) -> Option<PathBuf> {
    let path = env
        .get("PATH")
        .cloned()
        .or_else(|| std::env::var("PATH").ok())?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Asks an interpreter that is a script (a shim) which binary it runs.
fn real_interpreter(shim: &Path, env: &BTreeMap<String, String>) -> Option<PathBuf> {
    let mut child = Command::new(shim)
        .args(["-c", "import sys; print(sys.executable)"])
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    let exe = PathBuf::from(out.trim());
    (exe.is_absolute() && is_elf(&exe)).then_some(exe)
}

/// What `command args` runs, in the environment the target gets.
pub fn detect(command: &Path, args: &[String], env: &BTreeMap<String, String>) -> Program {
    if let Some(node) = node_program(command, args, env) {
        return node;
    }
    let native = || Program {
        command: command.to_path_buf(),
        args: args.to_vec(),
        language: Language::Native,
        note: None,
    };
    let (interp, argv, via_script) = if is_elf(command) {
        if !is_interpreter(command) {
            return native();
        }
        (command.to_path_buf(), args.to_vec(), false)
    } else {
        let Some((interp, extra)) = shebang(command, env) else {
            return native();
        };
        if is_interpreter(&interp) {
            let mut argv = extra;
            argv.push(command.display().to_string());
            argv.extend(args.iter().cloned());
            (interp, argv, true)
        } else if is_interpreter(command) {
            // The command itself is a shim named python (its #! is bash).
            (command.to_path_buf(), args.to_vec(), false)
        } else {
            return native();
        }
    };
    let mut note = via_script.then(|| {
        format!(
            "{} is a Python script: launched as {} {}",
            command.display(),
            interp.display(),
            command.display()
        )
    });
    let command = if is_elf(&interp) {
        interp
    } else {
        match real_interpreter(&interp, env) {
            Some(real) => {
                note = Some(format!(
                    "{} is a wrapper script (e.g. a pyenv shim): launched the interpreter it runs, {}",
                    interp.display(),
                    real.display()
                ));
                real
            }
            // Not resolvable: launch as given, traced as native.
            None => {
                return Program {
                    note: Some(format!(
                        "{} names a Python interpreter that could not be run to find its binary: \
                         launched as given, without Python tracing",
                        interp.display()
                    )),
                    ..native()
                };
            }
        }
    };
    Program {
        command,
        args: argv,
        language: Language::Python,
        note,
    }
}

/// A Node.js program: `node` itself, or a script whose `#!` line runs
/// node (launched as node with the script first, like a Python script).
fn node_program(
    command: &Path,
    args: &[String],
    env: &BTreeMap<String, String>,
) -> Option<Program> {
    if is_elf(command) {
        return is_node(command).then(|| Program {
            command: command.to_path_buf(),
            args: args.to_vec(),
            language: Language::JavaScript,
            note: None,
        });
    }
    let (interp, extra) = shebang(command, env)?;
    if !is_node(&interp) {
        return None;
    }
    let mut argv = extra;
    argv.push(command.display().to_string());
    argv.extend(args.iter().cloned());
    Some(Program {
        note: Some(format!(
            "{} is a Node.js script: launched as {} {}",
            command.display(),
            interp.display(),
            command.display()
        )),
        command: interp,
        args: argv,
        language: Language::JavaScript,
    })
}

/// A process being attached to: its executable, and for an interpreter
/// its arguments from `/proc/PID/cmdline` (a relative script path made
/// absolute against the process's working directory), which the Python
/// and JavaScript resolvers need to name the script's module.
pub fn attached(pid: u32, exe: &Path) -> Program {
    let native = Program {
        command: exe.to_path_buf(),
        args: Vec::new(),
        language: Language::Native,
        note: None,
    };
    let language = if is_interpreter(exe) {
        Language::Python
    } else if is_node(exe) {
        Language::JavaScript
    } else {
        return native;
    };
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
    let args = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0)
                .skip(1)
                .filter(|a| !a.is_empty())
                .map(|a| {
                    let arg = String::from_utf8_lossy(a).into_owned();
                    match &cwd {
                        Some(dir) if !arg.starts_with('-') && dir.join(&arg).is_file() => {
                            dir.join(&arg).display().to_string()
                        }
                        _ => arg,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    Program {
        args,
        language,
        ..native
    }
}

/// The project's language by its files (Python: `pyproject.toml`,
/// `setup.py`, `setup.cfg`, `requirements.txt`; else JavaScript:
/// `package.json`, `tsconfig.json`), for a command that says nothing: a
/// dotted pattern on a native program (a shell script that runs Python,
/// say) is told how to launch the interpreter instead.
pub fn project_language(root: &Path) -> Option<Language> {
    [
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "requirements.txt",
    ]
    .iter()
    .any(|f| root.join(f).is_file())
    .then_some(Language::Python)
    .or_else(|| {
        ["package.json", "tsconfig.json"]
            .iter()
            .any(|f| root.join(f).is_file())
            .then_some(Language::JavaScript)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> BTreeMap<String, String> {
        std::env::vars().collect()
    }

    #[test]
    fn interpreter_names() {
        for yes in ["python", "python3", "/usr/bin/python3.11", "python3.12"] {
            assert!(is_interpreter(Path::new(yes)), "{yes}");
        }
        for no in ["pythonw-x", "ipython", "python3-config", "cat"] {
            assert!(!is_interpreter(Path::new(no)), "{no}");
        }
    }

    #[test]
    fn native_programs_stay_as_they_are() {
        let p = detect(Path::new("/bin/cat"), &["x".into()], &env());
        assert_eq!(p.language, Language::Native);
        assert_eq!(
            (p.command.as_path(), p.args.as_slice()),
            (Path::new("/bin/cat"), &["x".to_string()][..])
        );
    }

    #[test]
    fn scripts_with_a_python_shebang_run_under_their_interpreter() {
        let dir = std::env::temp_dir().join(format!("strobe-lang-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("tool");
        std::fs::write(&script, "#!/usr/bin/env python3\nprint(1)\n").unwrap();
        let p = detect(&script, &["--flag".into()], &env());
        assert_eq!(p.language, Language::Python);
        assert!(
            is_elf(&p.command),
            "a real interpreter, not a shim: {:?}",
            p.command
        );
        assert_eq!(p.args, vec![script.display().to_string(), "--flag".into()]);
        let shell = dir.join("run.sh");
        std::fs::write(&shell, "#!/bin/sh\necho\n").unwrap();
        assert_eq!(detect(&shell, &[], &env()).language, Language::Native);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn node_and_scripts_with_a_node_shebang_are_javascript() {
        let node = Path::new("/usr/bin/node");
        assert!(is_elf(node), "the test set-up installs Debian's nodejs");
        let p = detect(node, &["app.js".into()], &env());
        assert_eq!(
            (p.language, p.command.as_path(), p.args.as_slice()),
            (Language::JavaScript, node, &["app.js".to_string()][..])
        );
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("cli");
        std::fs::write(&script, "#!/usr/bin/env node\nconsole.log(1)\n").unwrap();
        let p = detect(&script, &["-v".into()], &env());
        assert_eq!(p.language, Language::JavaScript);
        assert_eq!(p.args, vec![script.display().to_string(), "-v".into()]);
        assert!(p.note.unwrap().contains("Node.js script"));
        std::fs::write(dir.path().join("package.json"), "{}").unwrap();
        assert_eq!(project_language(dir.path()), Some(Language::JavaScript));
    }

    #[test]
    fn shims_are_followed_to_the_interpreter_they_exec() {
        let dir = std::env::temp_dir().join(format!("strobe-shim-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Debian's interpreter: python3-dev and the tests' other needs come with it.
        let real = Path::new("/usr/bin/python3.11");
        assert!(is_elf(real), "the test set-up installs Debian's python3.11");
        let shim = dir.join("python3");
        std::fs::write(
            &shim,
            format!("#!/bin/sh\nexec {} \"$@\"\n", real.display()),
        )
        .unwrap();
        std::fs::set_permissions(&shim, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let p = detect(&shim, &["app.py".into()], &env());
        assert_eq!(p.language, Language::Python);
        assert!(is_elf(&p.command) && p.command != shim, "{:?}", p.command);
        assert_eq!(p.args, vec!["app.py".to_string()]);
        assert!(p.note.unwrap().contains("wrapper"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
