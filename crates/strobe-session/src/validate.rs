//! Launch request validation: every problem becomes a `VALIDATION_ERROR`
//! that says what to change.

use crate::SessionError;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use strobe_core::error::excerpt;

/// The kernel's `PF_KTHREAD` flag in `/proc/PID/stat`.
const PF_KTHREAD: u64 = 0x0020_0000;

/// Checks that `pid` names a running process Strobe may attach to, and
/// returns its executable. Refused up front: init, kernel threads, and
/// Strobe's own processes (the daemon, `strobe mcp` proxies, the desktop
/// app, bridges and Frida's helpers): injecting into those hangs the
/// bridge doing it, or the daemon itself.
pub fn attach_target(pid: u32) -> Result<PathBuf, SessionError> {
    if pid <= 1 {
        return Err(SessionError::validation(format!(
            "'attachPid' {pid} is {}; give the pid of the program to debug (`pgrep NAME` finds it)",
            if pid == 1 {
                "init, the system's first process"
            } else {
                "not a process"
            }
        )));
    }
    if pid == std::process::id() {
        return Err(SessionError::validation(format!(
            "'attachPid' {pid} is the Strobe daemon itself; give the pid of the program to debug"
        )));
    }
    if !Path::new(&format!("/proc/{pid}")).exists() {
        return Err(SessionError::validation(format!(
            "no process with pid {pid} is running (check with `ps -p {pid}`); to start a program, give 'command' instead"
        )));
    }
    if crate::procfs::Stat::of(pid).and_then(|s| s.state()) == Some('Z') {
        return Err(SessionError::validation(format!(
            "process {pid} has exited (its parent has not collected it yet, so `ps` still lists it as \
             <defunct>); there is nothing left to debug: start the program again, or give 'command' to launch it"
        )));
    }
    if stat_flags(pid).is_some_and(|f| f & PF_KTHREAD != 0) {
        return Err(SessionError::validation(format!(
            "'attachPid' {pid} is a kernel thread, which has no user-space code to debug; give the pid of a program"
        )));
    }
    if let Some(what) = strobe_process(pid) {
        return Err(SessionError::validation(format!(
            "'attachPid' {pid} is {what}, one of Strobe's own processes, which Strobe cannot debug; give the pid of \
             the program to debug"
        )));
    }
    std::fs::read_link(format!("/proc/{pid}/exe")).map_err(|e| {
        SessionError::validation(format!(
            "cannot read /proc/{pid}/exe ({e}): the process belongs to another user or is a kernel thread; \
             Strobe can attach only to processes of the user the daemon runs as"
        ))
    })
}

/// The `flags` field of `/proc/PID/stat`.
fn stat_flags(pid: u32) -> Option<u64> {
    crate::procfs::Stat::of(pid)?.flags()
}

/// What `pid` is when it is one of Strobe's own processes: one running the
/// same executable as this daemon or another Strobe binary (`strobe`,
/// `strobe-app`), a Frida bridge (a Python running `bridge-*.py`), or one
/// of Frida's helpers.
fn strobe_process(pid: u32) -> Option<&'static str> {
    let exe = format!("/proc/{pid}/exe");
    if let (Ok(theirs), Ok(ours)) = (std::fs::metadata(&exe), std::fs::metadata("/proc/self/exe"))
        && (theirs.dev(), theirs.ino()) == (ours.dev(), ours.ino())
    {
        return Some("a Strobe process (daemon or `strobe mcp`)");
    }
    let target = std::fs::read_link(&exe).ok()?;
    let name = target.file_name()?.to_string_lossy();
    let name = name.trim_end_matches(" (deleted)");
    if name == "strobe" || name == "strobe-app" {
        return Some("a Strobe process (daemon, `strobe mcp` or the desktop app)");
    }
    if name.starts_with("frida-") {
        return Some("one of Frida's helper processes");
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let is_bridge = cmdline.split(|b| *b == 0).any(|arg| {
        let file = arg.rsplit(|b| *b == b'/').next().unwrap_or(arg);
        is_bridge_script(file)
    });
    is_bridge.then_some("a Strobe Frida bridge")
}

/// Strobe's bridge script as the daemon writes it: `bridge-<hex hash>.py`
/// (a user's own `bridge.py` or `bridge_server.py` is not one).
fn is_bridge_script(file: &[u8]) -> bool {
    file.strip_prefix(b"bridge-")
        .and_then(|rest| rest.strip_suffix(b".py"))
        .is_some_and(|hash| hash.len() >= 8 && hash.iter().all(u8::is_ascii_hexdigit))
}

/// Refuses a NUL byte in `value`: the C strings a program is started with
/// end at the first NUL, so the rest would be dropped without a word.
pub fn no_nul(what: &str, value: &str) -> Result<(), SessionError> {
    match value.find('\0') {
        None => Ok(()),
        Some(at) => Err(SessionError::validation(format!(
            "{what} contains a NUL byte (at byte {at} of {:?}); a program's arguments, paths and environment \
             are C strings that end at NUL, so it would be cut there: remove it",
            excerpt(value)
        ))),
    }
}

/// Every launch argument must be free of NUL bytes.
pub fn args(args: &[String]) -> Result<(), SessionError> {
    args.iter()
        .enumerate()
        .try_for_each(|(i, a)| no_nul(&format!("'args[{i}]'"), a))
}

/// Resolves `command` to an absolute executable path: a path with a slash is
/// taken relative to `cwd`; a bare name is looked up on `search_path` (the
/// launch's own `PATH`, when its environment sets one) or the daemon's `PATH`.
pub fn resolve_command(
    command: &str,
    cwd: &Path,
    search_path: Option<&str>,
) -> Result<PathBuf, SessionError> {
    no_nul("'command'", command)?;
    if command.trim().is_empty() {
        return Err(SessionError::validation(
            "'command' is empty: give the path of the executable to launch",
        ));
    }
    let candidate = if command.contains('/') {
        let p = Path::new(command);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            cwd.join(p)
        }
    } else {
        let path = search_path
            .map(std::ffi::OsString::from)
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        match std::env::split_paths(&path)
            .map(|d| d.join(command))
            .find(|p| is_executable_file(p))
        {
            Some(p) => p,
            None => {
                let command = excerpt(command);
                return Err(SessionError::validation(format!(
                    "'command' {command:?} was not found on PATH; give an absolute path (e.g. /path/to/build/{command})"
                )));
            }
        }
    };
    let meta = std::fs::metadata(&candidate).map_err(|e| {
        SessionError::validation(format!(
            "'command' {}: {e}. Build the program first or fix the path",
            candidate.display()
        ))
    })?;
    if meta.is_dir() {
        return Err(SessionError::validation(format!(
            "'command' {} is a directory, not an executable",
            candidate.display()
        )));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(SessionError::validation(format!(
            "'command' {} is not executable (chmod +x it, or launch its interpreter with the file as an argument)",
            candidate.display()
        )));
    }
    Ok(candidate)
}

fn is_executable_file(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `projectRoot` must be an absolute, existing directory.
pub fn project_root(root: &str) -> Result<PathBuf, SessionError> {
    no_nul("'projectRoot'", root)?;
    let p = Path::new(root);
    if !p.is_absolute() {
        return Err(SessionError::validation(format!(
            "'projectRoot' must be an absolute path, got {root:?} (relative paths are ambiguous: the daemon does not share your working directory)"
        )));
    }
    if !p.is_dir() {
        return Err(SessionError::validation(format!(
            "'projectRoot' {root} is not an existing directory"
        )));
    }
    Ok(p.to_path_buf())
}

/// `cwd`, when given, must be an absolute, existing directory.
pub fn cwd(cwd: Option<&str>, project_root: &Path) -> Result<PathBuf, SessionError> {
    let Some(c) = cwd else {
        return Ok(project_root.to_path_buf());
    };
    no_nul("'cwd'", c)?;
    let p = Path::new(c);
    if !p.is_absolute() {
        return Err(SessionError::validation(format!(
            "'cwd' must be an absolute path, got {c:?}"
        )));
    }
    if !p.is_dir() {
        return Err(SessionError::validation(format!(
            "'cwd' {c} is not an existing directory"
        )));
    }
    Ok(p.to_path_buf())
}

/// Environment variable names must be non-empty and contain no `=` or NUL;
/// values no NUL.
pub fn env_key(key: &str, value: &str) -> Result<(), SessionError> {
    if key.is_empty() || key.contains('=') || key.contains('\0') {
        return Err(SessionError::validation(format!(
            "'env' name {:?} is invalid: names must be non-empty, without '=' or NUL",
            excerpt(key)
        )));
    }
    no_nul(&format!("'env' value of {:?}", excerpt(key)), value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(
            resolve_command("sh", tmp.path(), None)
                .unwrap()
                .is_absolute()
        );
        assert!(
            resolve_command("definitely-not-a-command-xyz", tmp.path(), None)
                .unwrap_err()
                .message()
                .contains("PATH")
        );
        assert!(resolve_command("", tmp.path(), None).is_err());
        // The launch's own PATH, when its environment gives one.
        let bin = tmp.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink("/bin/sh", bin.join("only-here")).unwrap();
        let own = format!("{}:/usr/bin", bin.display());
        assert_eq!(
            resolve_command("only-here", tmp.path(), Some(&own)).unwrap(),
            bin.join("only-here")
        );
        assert!(resolve_command("only-here", tmp.path(), None).is_err());
        let f = tmp.path().join("data.txt");
        std::fs::write(&f, "x").unwrap();
        assert!(
            resolve_command(f.to_str().unwrap(), tmp.path(), None)
                .unwrap_err()
                .message()
                .contains("not executable")
        );
        assert!(
            resolve_command("./data.txt", tmp.path(), None)
                .unwrap_err()
                .message()
                .contains("not executable")
        );
        assert!(
            resolve_command(tmp.path().to_str().unwrap(), tmp.path(), None)
                .unwrap_err()
                .message()
                .contains("directory")
        );
        assert!(
            resolve_command("./missing", tmp.path(), None)
                .unwrap_err()
                .message()
                .contains("Build the program")
        );
    }

    #[test]
    fn roots_and_cwds() {
        assert!(
            project_root("rel/path")
                .unwrap_err()
                .message()
                .contains("absolute")
        );
        assert!(project_root("/definitely/not/here").is_err());
        assert!(project_root("/").is_ok());
        assert!(cwd(Some("x"), Path::new("/")).is_err());
        assert_eq!(cwd(None, Path::new("/tmp")).unwrap(), PathBuf::from("/tmp"));
        assert!(env_key("A=B", "").is_err());
        assert!(env_key("A", "b").is_ok());
    }

    #[test]
    fn nul_bytes_are_refused_where_c_strings_are_made() {
        let e = args(&["ok".into(), "a\0b".into()]).unwrap_err().message();
        assert!(
            e.starts_with("'args[1]' contains a NUL byte (at byte 1"),
            "{e}"
        );
        assert!(args(&["plain".into()]).is_ok());
        assert!(
            resolve_command("/bin/s\0h", Path::new("/"), None)
                .unwrap_err()
                .message()
                .contains("'command' contains a NUL")
        );
        assert!(
            project_root("/tmp\0x")
                .unwrap_err()
                .message()
                .contains("'projectRoot' contains a NUL")
        );
        assert!(
            cwd(Some("/tmp\0x"), Path::new("/"))
                .unwrap_err()
                .message()
                .contains("'cwd' contains a NUL")
        );
        let e = env_key("K", "v\0w").unwrap_err().message();
        assert!(e.contains("'env' value of \"K\" contains a NUL"), "{e}");
    }

    /// Right after exec the kernel can show an empty command line for a
    /// moment; a real bridge has long been running when someone names it.
    fn wait_for_cmdline(pid: u32) {
        for _ in 0..500 {
            if std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| !c.is_empty()) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    #[test]
    fn init_kernel_threads_and_strobes_own_processes_cannot_be_attached() {
        let e = |pid| attach_target(pid).unwrap_err().message();
        assert!(e(1).contains("init"), "{}", e(1));
        assert!(e(0).contains("not a process"), "{}", e(0));
        assert!(e(std::process::id()).contains("daemon itself"));
        // kthreadd (pid 2) is the kernel threads' parent wherever /proc shows it.
        if stat_flags(2).is_some_and(|f| f & PF_KTHREAD != 0) {
            assert!(e(2).contains("kernel thread"), "{}", e(2));
        }
        // This test runs the same executable as itself, as the daemon would.
        assert!(strobe_process(std::process::id()).is_some());
        // A Python running a bridge script (here a shell with that argument).
        let mut bridge = std::process::Command::new("sh")
            .args(["-c", "sleep 30; true", "/tmp/x/bridge-0123abcd.py"])
            .spawn()
            .unwrap();
        wait_for_cmdline(bridge.id());
        let msg = e(bridge.id());
        let _ = bridge.kill();
        let _ = bridge.wait();
        assert!(msg.contains("Strobe Frida bridge"), "{msg}");
        let mut other = std::process::Command::new("sh")
            .args(["-c", "sleep 30; true", "/tmp/x/app.py"])
            .spawn()
            .unwrap();
        wait_for_cmdline(other.id());
        let what = strobe_process(other.id());
        let _ = other.kill();
        let _ = other.wait();
        assert_eq!(what, None);
    }

    #[test]
    fn an_exited_process_not_yet_collected_is_named_as_exited() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        // A zombie until waited for.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while crate::procfs::Stat::of(child.id()).and_then(|s| s.state()) != Some('Z') {
            assert!(
                std::time::Instant::now() < deadline,
                "never became a zombie"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let msg = attach_target(child.id()).unwrap_err().message();
        child.wait().unwrap();
        assert!(msg.contains("has exited"), "{msg}");
    }

    #[test]
    fn only_strobes_own_bridge_script_counts_as_a_bridge() {
        assert!(is_bridge_script(b"bridge-0123abcd4567ef89.py"));
        for user in [
            &b"bridge.py"[..],
            b"bridge_server.py",
            b"bridge-v2.py",
            b"bridge-.py",
        ] {
            assert!(!is_bridge_script(user), "{}", String::from_utf8_lossy(user));
        }
    }
}
