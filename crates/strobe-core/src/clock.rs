//! The session clock.
//!
//! Every event of a session, whichever process stamps it (the daemon's output
//! readers, the bridge, the agent inside the target), is measured on
//! `CLOCK_MONOTONIC`. That clock is shared by all processes on the machine, so
//! timestamps taken in different processes can be compared directly; a session
//! stores its start instant and events carry nanoseconds since that start.

/// Nanoseconds of `CLOCK_MONOTONIC` (system-wide, not affected by wall-clock changes).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    debug_assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wall-clock milliseconds since the Unix epoch (for `startedAt`/`endedAt`).
pub fn unix_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn monotonic_never_goes_back() {
        let a = super::monotonic_ns();
        let b = super::monotonic_ns();
        assert!(b >= a);
        assert!(a > 0);
    }
}
