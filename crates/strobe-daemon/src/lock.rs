//! An exclusive lock file (flock: released by the kernel when the process
//! dies, however it dies): the daemon's, and the desktop app's single
//! instance.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Holds the lock while alive.
pub struct DaemonLock {
    _file: File,
}

/// Tries to take the lock; `Ok(None)` when another process holds it.
pub fn try_lock(path: &Path) -> io::Result<Option<DaemonLock>> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)?;
    // SAFETY: flock on a valid open file descriptor.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        Ok(Some(DaemonLock { _file: file }))
    } else {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            Err(e)
        }
    }
}
