//! A temporary directory per bridge, for Frida's own files.
//!
//! Frida writes its helper and agent libraries (about 10 MB) into a fresh
//! directory under `TMPDIR` and deletes it when it shuts down cleanly. A
//! bridge that is killed (a daemon killed, a test that kills the bridge)
//! leaves it: the test suite once left 3.3 GB of `/tmp/frida-*`. So each
//! bridge gets `TMPDIR` = a directory of its own under the daemon's
//! `bridge/tmp/`, removed when the bridge is gone, and directories whose
//! daemon is no longer running are removed when the next bridge starts.
//! Targets never see this `TMPDIR`: a spawn passes the target's own
//! environment.
//!
//! Frida also starts a daemon of its own from there, `idund` (its service
//! for Apple devices, started with the device manager), which detaches and
//! outlives the bridge; with a shared `/tmp` one such daemon served every
//! bridge and was never stopped. Whatever runs from a bridge's directory
//! was started by that bridge (the directory is the daemon's user's
//! alone), so it is killed before the directory is removed.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bridges started by this process, for unique names.
static STARTED: AtomicU64 = AtomicU64::new(0);

/// One bridge's directory; removed (with what Frida left in it) on drop.
#[derive(Debug)]
pub(crate) struct BridgeTmp {
    path: PathBuf,
}

impl BridgeTmp {
    /// Makes `<work_dir>/tmp/<pid>-<start time>-<n>` (owner-only) for a new
    /// bridge of this process, after removing those of dead processes.
    pub(crate) fn create(work_dir: &Path) -> io::Result<BridgeTmp> {
        let root = work_dir.join("tmp");
        fs::create_dir_all(&root)?;
        remove_orphans(&root);
        let me = std::process::id();
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let path = root.join(format!("{me}-{}-{n}", start_time(me).unwrap_or(0)));
        fs::DirBuilder::new()
            .mode(0o700)
            .recursive(false)
            .create(&path)?;
        Ok(BridgeTmp { path })
    }

    /// The directory (the bridge's `TMPDIR`).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for BridgeTmp {
    fn drop(&mut self) {
        remove(&self.path);
    }
}

/// Kills what runs from `dir` (Frida's `idund`), then removes `dir`.
fn remove(dir: &Path) {
    for pid in running_from(dir) {
        // SAFETY: kill(2) of a process whose executable is in this
        // daemon's own bridge directory: one its bridge started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    let _ = fs::remove_dir_all(dir);
}

/// Processes whose executable lies under `dir`.
fn running_from(dir: &Path) -> Vec<u32> {
    let Ok(procs) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe.starts_with(dir))
        })
        .collect()
}

/// Removes the directories of processes that are gone: a name's pid is not
/// running, or runs with another start time (the pid was reused).
fn remove_orphans(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, started)) = owner(&name.to_string_lossy()) else {
            continue;
        };
        let path = entry.path();
        // Never through a link: only a real directory of ours is entered.
        let is_dir = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if is_dir && start_time(pid) != Some(started) {
            remove(&path);
        }
    }
}

/// `(pid, start time)` from a directory name `<pid>-<start time>-<n>`.
fn owner(name: &str) -> Option<(u32, u64)> {
    let mut parts = name.splitn(3, '-');
    let pid = parts.next()?.parse().ok()?;
    let started = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u64>().ok()?;
    Some((pid, started))
}

/// A process's start time (clock ticks since boot, `/proc/PID/stat` field
/// 22): with the pid, it names one process.
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields
    // are counted after its closing parenthesis.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_processs_directories_go_and_a_live_ones_stay() {
        let work = tempfile::tempdir().unwrap();
        let ours = BridgeTmp::create(work.path()).unwrap();
        std::fs::write(ours.path().join("frida-helper"), b"x").unwrap();
        // pid 0 is never a process; a live pid with the wrong start time is
        // a reused pid.
        let dead = work.path().join("tmp/0-1-0");
        let reused = work.path().join(format!("tmp/{}-1-0", std::process::id()));
        let not_ours = work.path().join("tmp/notes");
        for d in [&dead, &reused, &not_ours] {
            std::fs::create_dir_all(d).unwrap();
        }
        let second = BridgeTmp::create(work.path()).unwrap();
        assert!(!dead.exists() && !reused.exists());
        assert!(not_ours.exists(), "a name that is not ours is left alone");
        assert!(ours.path().join("frida-helper").exists());
        assert_ne!(ours.path(), second.path());
        let kept = ours.path().to_path_buf();
        drop(ours);
        assert!(!kept.exists(), "removed with what was in it");
    }

    /// Frida's `idund` detaches from the bridge and would run on: what runs
    /// from a bridge's directory goes with it.
    #[test]
    fn what_runs_from_the_directory_is_stopped_with_it() {
        let work = tempfile::tempdir().unwrap();
        let tmp = BridgeTmp::create(work.path()).unwrap();
        let exe = tmp.path().join("idund");
        fs::copy("/bin/sleep", &exe).unwrap();
        let mut child = std::process::Command::new(&exe).arg("30").spawn().unwrap();
        assert!(
            (0..100).any(|_| {
                std::thread::sleep(std::time::Duration::from_millis(10));
                running_from(tmp.path()).contains(&child.id())
            }),
            "the copy runs from the directory"
        );
        drop(tmp);
        let status = child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
    }
}
