//! The write end of a launched program's stdin pipe, shared by the session
//! (which owns it and closes it when the session ends) and the `stdio`
//! channel (which writes to it).

use crate::bounded_write::BoundedWriteError;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Why bytes could not be written to a program's stdin.
#[derive(Debug, thiserror::Error)]
pub enum StdinError {
    /// The write end was closed (by a `close` stimulus or the session's end).
    #[error("the program's stdin was already closed (EOF was sent)")]
    Closed,
    /// The program closed its end or exited.
    #[error("the program no longer reads its stdin (it closed it or exited)")]
    Gone,
    /// The pipe stayed full: the program is not reading.
    #[error(
        "wrote {written} of {total} bytes: the program did not read its stdin for {waited_ms} ms (the pipe is full)"
    )]
    Full {
        /// Bytes the pipe took.
        written: usize,
        /// Bytes asked for.
        total: usize,
        /// How long the write waited.
        waited_ms: u64,
    },
    /// Any other write error.
    #[error("writing to the program's stdin failed: {0}")]
    Io(#[from] std::io::Error),
}

/// A program's stdin: writes never block the caller longer than asked.
#[derive(Clone)]
pub struct StdinPort(Arc<Mutex<Option<File>>>);

impl StdinPort {
    /// Takes the pipe's write end (made non-blocking here).
    pub fn new(file: File) -> StdinPort {
        let fd = file.as_raw_fd();
        // SAFETY: fcntl on a descriptor this value owns.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
            }
        }
        StdinPort(Arc::new(Mutex::new(Some(file))))
    }

    /// Writes all of `bytes`, waiting at most `patience` for a full pipe
    /// to drain.
    pub fn write(&self, bytes: &[u8], patience: Duration) -> Result<usize, StdinError> {
        let mut guard = self.0.lock().expect("stdin lock");
        let file = guard.as_mut().ok_or(StdinError::Closed)?;
        crate::bounded_write::write_bounded(file, bytes, patience).map_err(|e| match e {
            BoundedWriteError::Full {
                written,
                total,
                waited_ms,
            } => StdinError::Full {
                written,
                total,
                waited_ms,
            },
            BoundedWriteError::Gone(_) => StdinError::Gone,
            BoundedWriteError::Io(e) => StdinError::Io(e),
        })
    }

    /// Closes the write end: the program reads EOF. False if it already was.
    pub fn close(&self) -> bool {
        self.0.lock().expect("stdin lock").take().is_some()
    }

    /// Whether the write end is still open.
    pub fn is_open(&self) -> bool {
        self.0.lock().expect("stdin lock").is_some()
    }
}

impl std::fmt::Debug for StdinPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StdinPort(open: {})", self.is_open())
    }
}

impl PartialEq for StdinPort {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for StdinPort {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn writes_reach_the_reader_and_close_is_eof() {
        let (mut r, w) = std::io::pipe().unwrap();
        let port = StdinPort::new(File::from(std::os::fd::OwnedFd::from(w)));
        assert_eq!(port.write(b"hello\n", Duration::from_secs(1)).unwrap(), 6);
        assert!(port.close());
        assert!(!port.close(), "closing twice says so");
        let mut got = String::new();
        r.read_to_string(&mut got).unwrap();
        assert_eq!(got, "hello\n");
        assert!(matches!(
            port.write(b"x", Duration::ZERO),
            Err(StdinError::Closed)
        ));
    }

    #[test]
    fn a_reader_that_never_reads_gets_a_full_pipe_error_not_a_hang() {
        let (_r, w) = std::io::pipe().unwrap();
        let port = StdinPort::new(File::from(std::os::fd::OwnedFd::from(w)));
        let big = vec![b'x'; 1 << 20];
        let e = port.write(&big, Duration::from_millis(50)).unwrap_err();
        assert!(e.to_string().contains("did not read its stdin"), "{e}");
    }

    #[test]
    fn a_reader_that_went_away_is_named() {
        let (r, w) = std::io::pipe().unwrap();
        drop(r);
        let port = StdinPort::new(File::from(std::os::fd::OwnedFd::from(w)));
        assert!(matches!(
            port.write(b"x", Duration::ZERO),
            Err(StdinError::Gone)
        ));
    }
}
