//! Output capture: the target's stdout and stderr pipes become events.
//!
//! One thread polls both pipes, so both streams are stamped by the same
//! reader on the session clock and their relative order is the order in
//! which the reader saw the data. Data is split into lines; a piece without
//! a newline is held for at most [`PARTIAL_HOLD`] and then stored flagged
//! `FLAG_PARTIAL_LINE` (a prompt, or a write still in progress), so nothing
//! written is ever lost or delayed indefinitely. Bytes are stored as written
//! (non-UTF-8 included). Appends block when the store is behind, which stops
//! reading and lets the pipe's own back-pressure slow the target: nothing is
//! dropped.

use std::io::{ErrorKind, PipeReader, Read};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use strobe_core::clock::monotonic_ns;
use strobe_core::event::{EventBatch, EventHeader, EventKind, FLAG_PARTIAL_LINE};
use strobe_store::Store;

/// How long an unterminated line waits for its newline before it is stored.
pub const PARTIAL_HOLD: Duration = Duration::from_millis(20);
/// Longest line stored as one event; longer lines are split (flagged partial).
pub const MAX_LINE: usize = 64 * 1024;
const READ_SIZE: usize = 256 * 1024;
/// Most bytes read from the pipes after capture was asked to stop.
const FINAL_DRAIN_BYTES: usize = 64 << 20;

struct Stream {
    pipe: Option<PipeReader>,
    kind: EventKind,
    carry: Vec<u8>,
    carry_since: Option<(Instant, u64)>,
}

/// Handle to a running capture thread.
pub struct Capture {
    stop: Arc<AtomicBool>,
    sync: Arc<SyncState>,
    thread: Option<JoinHandle<()>>,
}

/// Requests to store everything the pipes hold now (see [`Capture::sync`]).
#[derive(Default)]
struct SyncState {
    requested: AtomicU64,
    done: Mutex<u64>,
    changed: Condvar,
}

impl Capture {
    /// Starts capturing `stdout`/`stderr` of process `pid` into session `key`
    /// (either may be absent). `origin_ns` is the session clock's zero.
    pub fn start(
        store: Store,
        key: i64,
        pid: u32,
        origin_ns: u64,
        stdout: Option<PipeReader>,
        stderr: Option<PipeReader>,
    ) -> Capture {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let sync = Arc::new(SyncState::default());
        let syncing = sync.clone();
        let thread = std::thread::Builder::new()
            .name(format!("strobe-capture-{pid}"))
            .spawn(move || {
                let streams = [
                    Stream {
                        pipe: stdout,
                        kind: EventKind::Stdout,
                        carry: Vec::new(),
                        carry_since: None,
                    },
                    Stream {
                        pipe: stderr,
                        kind: EventKind::Stderr,
                        carry: Vec::new(),
                        carry_since: None,
                    },
                ];
                run(store, key, pid, origin_ns, streams, flag, &syncing);
                // Nobody waits on a capture that ended.
                *syncing.done.lock().expect("sync lock") = u64::MAX;
                syncing.changed.notify_all();
            })
            .expect("spawning a thread");
        Capture {
            stop,
            sync,
            thread: Some(thread),
        }
    }

    /// Waits (at most `timeout`) until everything the pipes held when it was
    /// called has been handed to the store, unterminated lines included, and
    /// returns whether that happened in time. Used while a crashing process
    /// is held, so the runtime's last words are stored before the crash.
    pub fn sync(&self, timeout: Duration) -> bool {
        let ticket = self.sync.requested.fetch_add(1, Ordering::SeqCst) + 1;
        let deadline = Instant::now() + timeout;
        let mut done = self.sync.done.lock().expect("sync lock");
        while *done < ticket {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            done = self
                .sync
                .changed
                .wait_timeout(done, left)
                .expect("sync lock")
                .0;
        }
        true
    }

    /// Waits up to `grace` for both pipes to reach end-of-file, then stops
    /// reading anyway (a grandchild may keep a pipe open forever).
    pub fn finish(mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.thread.as_ref().is_none_or(|t| t.is_finished()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The inode of the pipe behind `fd` (what `/proc/PID/fd/N` shows as
/// `pipe:[inode]`), `None` when it is not a pipe.
pub fn pipe_inode(fd: &impl AsRawFd) -> Option<u64> {
    // SAFETY: fstat writes into a zeroed stat buffer for a valid descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } == 0;
    (ok && st.st_mode & libc::S_IFMT == libc::S_IFIFO).then_some(st.st_ino)
}

/// The inode of the pipe that descriptor `fd` of process `pid` refers to.
pub fn pipe_inode_of(pid: u32, fd: i32) -> Option<u64> {
    let link = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok()?;
    link.to_str()?
        .strip_prefix("pipe:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

fn run(
    store: Store,
    key: i64,
    pid: u32,
    origin: u64,
    mut streams: [Stream; 2],
    stop: Arc<AtomicBool>,
    sync: &SyncState,
) {
    let mut buf = vec![0u8; READ_SIZE];
    loop {
        let wanted = sync.requested.load(Ordering::SeqCst);
        let syncing = wanted > *sync.done.lock().expect("sync lock");
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(2);
        let mut which = Vec::with_capacity(2);
        for (i, s) in streams.iter().enumerate() {
            if let Some(p) = &s.pipe {
                fds.push(libc::pollfd {
                    fd: p.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                });
                which.push(i);
            }
        }
        if fds.is_empty() {
            break;
        }
        let timeout_ms = if syncing {
            0
        } else if streams.iter().any(|s| s.carry_since.is_some()) {
            5
        } else {
            50
        };
        // SAFETY: `fds` is a valid array of pollfd for the given length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        let mut batch = EventBatch::default();
        if n > 0 {
            for (slot, &i) in fds.iter().zip(&which) {
                if slot.revents == 0 {
                    continue;
                }
                let s = &mut streams[i];
                let pipe = s.pipe.as_mut().expect("polled streams have a pipe");
                match pipe.read(&mut buf) {
                    Ok(0) => {
                        let ts = monotonic_ns().saturating_sub(origin);
                        flush_carry(s, pid, ts, &mut batch);
                        s.pipe = None;
                    }
                    Ok(len) => {
                        let ts = monotonic_ns().saturating_sub(origin);
                        split_lines(s, &buf[..len], pid, ts, &mut batch);
                    }
                    Err(e)
                        if e.kind() == ErrorKind::Interrupted
                            || e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => {
                        tracing::warn!("reading {} of pid {pid} failed: {e}", s.kind.name());
                        let ts = monotonic_ns().saturating_sub(origin);
                        flush_carry(s, pid, ts, &mut batch);
                        s.pipe = None;
                    }
                }
            }
        }
        // Unterminated lines that waited long enough are stored as they are.
        for s in streams.iter_mut() {
            if let Some((since, ts)) = s.carry_since
                && since.elapsed() >= PARTIAL_HOLD
            {
                emit(s.kind, pid, ts, FLAG_PARTIAL_LINE, &s.carry, &mut batch);
                s.carry.clear();
                s.carry_since = None;
            }
        }
        if syncing && n == 0 {
            // The pipes are empty: what was in them is in this batch.
            for s in streams.iter_mut() {
                let ts = monotonic_ns().saturating_sub(origin);
                flush_carry(s, pid, ts, &mut batch);
            }
        }
        if !batch.is_empty() && store.append(key, batch).is_err() {
            break;
        }
        if syncing && n == 0 {
            *sync.done.lock().expect("sync lock") = wanted;
            sync.changed.notify_all();
        }
        if stop.load(Ordering::SeqCst) {
            // Whatever is still in the pipes was written before the end:
            // read it all (without waiting for writers that never close).
            let mut batch = EventBatch::default();
            for s in streams.iter_mut() {
                if let Some(pipe) = s.pipe.take() {
                    // SAFETY: fcntl on a valid, owned pipe descriptor.
                    unsafe {
                        let fd = pipe.as_raw_fd();
                        let flags = libc::fcntl(fd, libc::F_GETFL);
                        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
                    }
                    let mut pipe = pipe;
                    // Bounded: a grandchild may go on writing forever.
                    let mut budget = FINAL_DRAIN_BYTES;
                    while budget > 0 {
                        match pipe.read(&mut buf) {
                            Ok(0) => break,
                            Ok(len) => {
                                budget = budget.saturating_sub(len);
                                let ts = monotonic_ns().saturating_sub(origin);
                                split_lines(s, &buf[..len], pid, ts, &mut batch);
                            }
                            Err(e) if e.kind() == ErrorKind::Interrupted => {}
                            Err(_) => break,
                        }
                    }
                }
                let ts = monotonic_ns().saturating_sub(origin);
                flush_carry(s, pid, ts, &mut batch);
            }
            let _ = store.append(key, batch);
            break;
        }
    }
}

fn emit(kind: EventKind, pid: u32, ts: u64, flags: u8, bytes: &[u8], batch: &mut EventBatch) {
    batch.push(
        EventHeader {
            ts_ns: ts,
            kind: kind as u8,
            flags,
            pid,
            ..Default::default()
        },
        bytes,
    );
}

fn flush_carry(s: &mut Stream, pid: u32, ts: u64, batch: &mut EventBatch) {
    if !s.carry.is_empty() {
        let t = s.carry_since.map_or(ts, |(_, t)| t);
        emit(s.kind, pid, t, FLAG_PARTIAL_LINE, &s.carry, batch);
        s.carry.clear();
    }
    s.carry_since = None;
}

/// Splits `data` into line events (newline stripped); keeps the tail as carry.
fn split_lines(s: &mut Stream, mut data: &[u8], pid: u32, ts: u64, batch: &mut EventBatch) {
    while let Some(nl) = memchr::memchr(b'\n', data) {
        let line = &data[..nl];
        if s.carry.is_empty() {
            emit_long(s.kind, pid, ts, line, batch);
        } else {
            s.carry.extend_from_slice(line);
            let t = s.carry_since.map_or(ts, |(_, t)| t);
            let carry = std::mem::take(&mut s.carry);
            emit_long(s.kind, pid, t, &carry, batch);
            s.carry = carry;
            s.carry.clear();
            s.carry_since = None;
        }
        data = &data[nl + 1..];
    }
    if !data.is_empty() {
        if s.carry_since.is_none() {
            s.carry_since = Some((Instant::now(), ts));
        }
        s.carry.extend_from_slice(data);
        while s.carry.len() >= MAX_LINE {
            let rest = s.carry.split_off(MAX_LINE);
            emit(s.kind, pid, ts, FLAG_PARTIAL_LINE, &s.carry, batch);
            s.carry = rest;
        }
    }
}

/// A complete line; very long ones are split into partial pieces.
fn emit_long(kind: EventKind, pid: u32, ts: u64, line: &[u8], batch: &mut EventBatch) {
    let mut rest = line;
    while rest.len() > MAX_LINE {
        emit(kind, pid, ts, FLAG_PARTIAL_LINE, &rest[..MAX_LINE], batch);
        rest = &rest[MAX_LINE..];
    }
    emit(kind, pid, ts, 0, rest, batch);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream() -> Stream {
        Stream {
            pipe: None,
            kind: EventKind::Stdout,
            carry: Vec::new(),
            carry_since: None,
        }
    }

    fn texts(b: &EventBatch) -> Vec<(Vec<u8>, u8)> {
        b.headers
            .iter()
            .map(|h| (b.payload_of(h).to_vec(), h.flags))
            .collect()
    }

    #[test]
    fn splits_lines_and_carries_partials() {
        let mut s = stream();
        let mut b = EventBatch::default();
        split_lines(&mut s, b"a\nbb\nccc", 1, 10, &mut b);
        assert_eq!(texts(&b), vec![(b"a".to_vec(), 0), (b"bb".to_vec(), 0)]);
        assert_eq!(s.carry, b"ccc");
        split_lines(&mut s, b"d\n\n", 1, 20, &mut b);
        assert_eq!(b.len(), 4);
        assert_eq!(texts(&b)[2], (b"cccd".to_vec(), 0));
        assert_eq!(
            b.headers[2].ts_ns, 10,
            "a joined line keeps its first byte's time"
        );
        assert_eq!(texts(&b)[3], (b"".to_vec(), 0), "empty lines are kept");
        assert!(s.carry.is_empty());
    }

    #[test]
    fn long_lines_are_split_not_lost() {
        let mut s = stream();
        let mut b = EventBatch::default();
        let mut data = vec![b'x'; MAX_LINE * 2 + 10];
        data.push(b'\n');
        split_lines(&mut s, &data, 1, 0, &mut b);
        let t = texts(&b);
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].1, FLAG_PARTIAL_LINE);
        assert_eq!(
            t.iter().map(|(p, _)| p.len()).sum::<usize>(),
            MAX_LINE * 2 + 10
        );
    }

    #[test]
    fn flush_keeps_unterminated_tail() {
        let mut s = stream();
        let mut b = EventBatch::default();
        split_lines(&mut s, b"prompt> ", 1, 5, &mut b);
        assert!(b.is_empty());
        flush_carry(&mut s, 1, 9, &mut b);
        assert_eq!(texts(&b), vec![(b"prompt> ".to_vec(), FLAG_PARTIAL_LINE)]);
        assert_eq!(b.headers[0].ts_ns, 5);
    }
}
