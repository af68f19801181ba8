//! How a target really ended, read from the kernel: Frida is the target's
//! parent (the bridge spawned it) and reaps it itself, reporting only
//! "process-terminated", so a target killed from outside (`kill -9`) or
//! leaving through a raw `exit_group` looked the same. The daemon opens a
//! pidfd on each target while it runs; once the parent has reaped it, the
//! kernel answers `PIDFD_GET_INFO` with the wait status (Linux 6.15+).
//! Before that, or on older kernels, a zombie's `/proc/PID/stat` holds the
//! same status; past both, the end stays unknown and says so.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// How a process ended, as its wait status says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Code(i32),
    /// A signal (this number) killed it.
    Signal(i32),
}

impl Ended {
    /// Decodes a `waitpid` status.
    pub fn of_wait_status(status: i32) -> Ended {
        match status & 0x7f {
            0 => Ended::Code((status >> 8) & 0xff),
            sig => Ended::Signal(sig),
        }
    }
}

/// A pidfd on one process, opened while it runs.
#[derive(Debug)]
pub struct ExitWatch {
    fd: OwnedFd,
    pid: u32,
}

/// `PIDFD_INFO_EXIT` of `linux/pidfd.h`.
const PIDFD_INFO_EXIT: u64 = 1 << 3;

/// `struct pidfd_info` as of Linux 6.15 (`PIDFD_INFO_SIZE_VER0`, 64 bytes):
/// the kernel copies at most the size the request names.
#[repr(C)]
#[derive(Default)]
struct PidfdInfo {
    mask: u64,
    cgroupid: u64,
    pid: u32,
    tgid: u32,
    ppid: u32,
    ruid: u32,
    rgid: u32,
    euid: u32,
    egid: u32,
    suid: u32,
    sgid: u32,
    fsuid: u32,
    fsgid: u32,
    exit_code: i32,
}

/// `PIDFD_GET_INFO`: `_IOWR(0xFF, 11, struct pidfd_info)`.
const PIDFD_GET_INFO: u64 =
    (3 << 30) | ((std::mem::size_of::<PidfdInfo>() as u64) << 16) | (0xFF << 8) | 11;

impl ExitWatch {
    /// Opens a pidfd on `pid`; `None` where the kernel has no pidfds.
    pub fn open(pid: u32) -> Option<ExitWatch> {
        // SAFETY: pidfd_open(2) takes a pid and flags and returns a new fd.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        Some(ExitWatch { fd, pid })
    }

    /// How the process ended, if that can be read yet.
    pub fn ended(&self) -> Option<Ended> {
        self.kernel_record().or_else(|| self.zombie_status())
    }

    /// Waits up to `timeout` for [`ExitWatch::ended`] to know (the parent may
    /// not have reaped the process yet); `None` if it never does.
    pub fn wait_ended(&self, timeout: Duration) -> Option<Ended> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(e) = self.ended() {
                return Some(e);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The kernel's record of a reaped process (Linux 6.15+).
    fn kernel_record(&self) -> Option<Ended> {
        let mut info = PidfdInfo {
            mask: PIDFD_INFO_EXIT,
            ..Default::default()
        };
        // SAFETY: the request names the size of `info`, which outlives the call.
        let r = unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                PIDFD_GET_INFO as _,
                &mut info as *mut PidfdInfo,
            )
        };
        (r == 0 && info.mask & PIDFD_INFO_EXIT != 0).then(|| Ended::of_wait_status(info.exit_code))
    }

    /// A zombie's wait status, from `/proc/PID/stat` (field 52). Only while
    /// the pidfd still refers to a live or zombie process is the pid ours:
    /// the poll readiness says the process exited, and `/proc` is read only
    /// while the pidfd's process is still not reaped.
    fn zombie_status(&self) -> Option<Ended> {
        let stat = crate::procfs::Stat::of(self.pid)?;
        if stat.state()? != 'Z' {
            return None;
        }
        let status = stat.exit_code()?;
        // The pid still names our process only if the pidfd is not yet
        // reaped: signalling 0 through it fails with ESRCH once it is.
        // SAFETY: pidfd_send_signal(2) with signal 0 sends nothing.
        let alive = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.fd.as_raw_fd(),
                0,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        } == 0;
        alive.then(|| Ended::of_wait_status(status))
    }
}

/// The conventional name of signal `sig` ("SIGKILL"), or "signal N".
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn wait_statuses_decode() {
        assert_eq!(Ended::of_wait_status(3 << 8), Ended::Code(3));
        assert_eq!(Ended::of_wait_status(9), Ended::Signal(9));
        assert_eq!(Ended::of_wait_status(0x80 | 11), Ended::Signal(11));
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(40), "signal 40");
    }

    #[test]
    fn a_killed_process_is_seen_killed_and_an_exit_code_is_seen_as_such() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let watch = ExitWatch::open(child.id()).expect("pidfds");
        assert_eq!(watch.ended(), None, "still running");
        // SAFETY: kill(2) of the child this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        // As a zombie (before the parent reaps it) and after.
        assert_eq!(
            watch.wait_ended(Duration::from_secs(5)),
            Some(Ended::Signal(9))
        );
        let _ = child.wait();
        if let Some(after) = watch.ended() {
            assert_eq!(after, Ended::Signal(9));
        }
        let mut child = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let watch = ExitWatch::open(child.id());
        let _ = child.wait();
        if let Some(w) = watch {
            // Reaped at once: only the kernel's record (6.15+) can say.
            if let Some(e) = w.ended() {
                assert_eq!(e, Ended::Code(3));
            }
        }
    }
}
