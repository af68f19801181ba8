//! Requests to an agent wait while its process forks.
//!
//! Frida's handling of a gated child crashes the child when a message
//! between the agent and the daemon is in flight at the moment of the fork
//! (docs/FRIDA_NOTES.md). The agent's fork guard drains its own messages
//! and announces the fork (`fork_barrier`); the daemon then lets the fork go
//! only once every request it had sent that agent was answered, and sends
//! it no new request until the agent says the fork returned (`fork_done`).
//! A request that comes meanwhile (a status poll asking which threads are
//! Frida's, a tool call) waits here. Every wait is bounded: a process that
//! dies mid-fork, or a fork that never reports back, holds nothing for long.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Longest a request waits for a fork to return before it goes anyway.
pub(super) const FORK_HOLD: Duration = Duration::from_secs(2);
/// Longest a fork waits for the answers to requests already sent.
pub(super) const ANSWERS_WAIT: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
struct GateState {
    /// Since when the process has been forking (between the barrier and
    /// the fork's return), if it is.
    forking_since: Option<Instant>,
    /// Requests sent to the agent and not answered (or given up) yet.
    in_flight: u32,
}

/// One process's gate (see the module's doc).
#[derive(Debug, Default)]
pub(super) struct ForkGate {
    state: Mutex<GateState>,
    changed: Condvar,
}

/// A request counted as in flight until it is dropped.
pub(super) struct InFlight<'a>(&'a ForkGate);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut s = self.0.state.lock().expect("fork gate lock");
        s.in_flight = s.in_flight.saturating_sub(1);
        self.0.changed.notify_all();
    }
}

impl ForkGate {
    /// Waits while the process forks (at most `FORK_HOLD` from the
    /// barrier), then counts a request as in flight until the returned
    /// guard is dropped. Checking and counting are one step, so a fork
    /// announced right after sees this request and waits for its answer.
    pub(super) fn request(&self) -> InFlight<'_> {
        let mut s = self.state.lock().expect("fork gate lock");
        while let Some(since) = s.forking_since {
            let left = FORK_HOLD.saturating_sub(since.elapsed());
            if left.is_zero() {
                // The fork never reported back: stop holding anyone.
                tracing::debug!("a fork did not report back within {FORK_HOLD:?}");
                s.forking_since = None;
                break;
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .expect("fork gate lock")
                .0;
        }
        s.in_flight += 1;
        InFlight(self)
    }

    /// The process announced a fork: new requests wait from now on.
    /// Returns whether requests are in flight (the fork must wait for
    /// their answers: [`ForkGate::await_answers`]).
    pub(super) fn close(&self) -> bool {
        let mut s = self.state.lock().expect("fork gate lock");
        s.forking_since = Some(Instant::now());
        s.in_flight > 0
    }

    /// Waits (at most `limit`) until no request is in flight; returns
    /// whether none is.
    pub(super) fn await_answers(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut s = self.state.lock().expect("fork gate lock");
        while s.in_flight > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            s = self
                .changed
                .wait_timeout(s, left)
                .expect("fork gate lock")
                .0;
        }
        true
    }

    /// The fork returned (or the process ended): requests go again.
    pub(super) fn open(&self) {
        self.state.lock().expect("fork gate lock").forking_since = None;
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn a_request_waits_until_the_fork_returns() {
        let gate = Arc::new(ForkGate::default());
        assert!(!gate.close(), "nothing was in flight");
        let sent = Arc::new(AtomicBool::new(false));
        let (g, s) = (gate.clone(), sent.clone());
        let t = std::thread::spawn(move || {
            let _r = g.request();
            s.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(100));
        assert!(!sent.load(Ordering::SeqCst), "sent while the process forks");
        gate.open();
        t.join().unwrap();
        assert!(sent.load(Ordering::SeqCst));
    }

    #[test]
    fn a_fork_waits_for_the_answers_to_requests_already_sent() {
        let gate = Arc::new(ForkGate::default());
        let r = gate.request();
        assert!(gate.close(), "a request is in flight");
        assert!(!gate.await_answers(Duration::from_millis(50)));
        let g = gate.clone();
        let t = std::thread::spawn(move || g.await_answers(Duration::from_secs(10)));
        std::thread::sleep(Duration::from_millis(50));
        drop(r);
        assert!(t.join().unwrap(), "the answer came");
    }

    #[test]
    fn a_fork_that_never_returns_holds_requests_for_a_bounded_time() {
        let gate = ForkGate::default();
        gate.close();
        let started = Instant::now();
        drop(gate.request());
        assert!(started.elapsed() >= FORK_HOLD - Duration::from_millis(10));
        // And the gate is open for the next one.
        let started = Instant::now();
        drop(gate.request());
        assert!(started.elapsed() < FORK_HOLD);
    }
}
