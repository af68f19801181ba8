//! Writes into a pipe or FIFO opened non-blocking, bounded in time: the
//! program's stdin (stdin_port.rs) and a file channel's FIFO
//! (channels/file/ops.rs). A reader that stops reading costs the caller
//! `patience`, never a blocked thread.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// How a bounded write into a pipe or FIFO ended short.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BoundedWriteError {
    /// The reader did not drain the FIFO in time.
    #[error(
        "its reader took {written} of {total} bytes within {waited_ms} ms and stopped reading: nothing more was written"
    )]
    Full {
        /// Bytes the FIFO took.
        written: usize,
        /// Bytes asked for.
        total: usize,
        /// How long the write waited.
        waited_ms: u64,
    },
    /// The reader closed its end.
    #[error("its reader closed it after {0} bytes")]
    Gone(usize),
    /// Any other failure.
    #[error("{0}")]
    Io(std::io::Error),
}

/// Writes all of `bytes` into a non-blocking descriptor, waiting at most
/// `patience` in all for it to take them.
pub(crate) fn write_bounded(
    f: &mut File,
    bytes: &[u8],
    patience: Duration,
) -> Result<usize, BoundedWriteError> {
    let started = Instant::now();
    let mut written = 0;
    while written < bytes.len() {
        match f.write(&bytes[written..]) {
            Ok(n) => written += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let left = patience.saturating_sub(started.elapsed());
                if left.is_zero() {
                    return Err(BoundedWriteError::Full {
                        written,
                        total: bytes.len(),
                        waited_ms: started.elapsed().as_millis() as u64,
                    });
                }
                let mut pfd = libc::pollfd {
                    fd: f.as_raw_fd(),
                    events: libc::POLLOUT,
                    revents: 0,
                };
                let ms = left.as_millis().clamp(1, 100) as i32;
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut pfd, 1, ms) };
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::BrokenPipe => {
                return Err(BoundedWriteError::Gone(written));
            }
            Err(e) => return Err(BoundedWriteError::Io(e)),
        }
    }
    Ok(written)
}
