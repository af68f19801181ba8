//! Server-side waits: what `debug_query {waitMs}` and `debug_session
//! {action: "status", waitFor}` block on instead of letting the agent poll.
//!
//! A query waiter sleeps on the session's commit signal (rung by the store's
//! writer each time it makes events visible, and here when the session
//! ends) and then looks only at the events committed since it last looked;
//! a state waiter sleeps on the condition variables the debugger and the
//! lifecycle already notify. Both wake at least every [`RECHECK`] to
//! re-read the session's end, since a followed child's end rings nothing
//! of its own.

use super::*;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Longest a waiter sleeps before rechecking whether the session ended.
const RECHECK: Duration = Duration::from_millis(250);

/// Where a session's stored events stand, for a query waiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventFrontier {
    /// Event ids below this are committed (visible to [`SessionManager::query_committed`]).
    pub committed_seq: u64,
    /// The commit signal's generation: wait past it for the next commit.
    pub generation: u64,
    /// The session's process and every followed child ended (or it is a
    /// retained session): no event will come any more.
    pub ended: bool,
}

/// What `debug_session status` can wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateWait {
    /// The session's process (and its followed children) ended.
    Exit,
    /// A thread is paused (a breakpoint, a step, a pause).
    Paused,
}

/// How a state wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateWaitOutcome {
    /// What was waited for holds.
    Reached,
    /// The process ended first (waiting for a pause).
    Exited,
    /// The time ran out.
    TimedOut,
}

impl SessionManager {
    /// Where `id`'s events stand now (committed frontier, commit generation,
    /// whether more can come).
    pub fn event_frontier(&self, id: &str) -> Result<EventFrontier, SessionError> {
        match self.live(id) {
            Some(l) => Ok(EventFrontier {
                committed_seq: l.stats.committed_seq.load(Ordering::Acquire),
                generation: l.stats.commits.generation(),
                ended: self.session_over(&l),
            }),
            None => {
                self.key_of(id)?;
                Ok(EventFrontier {
                    committed_seq: u64::MAX,
                    generation: 0,
                    ended: true,
                })
            }
        }
    }

    /// Sleeps until a commit after generation `seen` made new events of
    /// `id` visible, the session ended, or `timeout`; where things stand then.
    pub fn wait_for_events(
        &self,
        id: &str,
        seen: u64,
        timeout: Duration,
    ) -> Result<EventFrontier, SessionError> {
        let deadline = Instant::now() + timeout;
        let Some(l) = self.live(id) else {
            return self.event_frontier(id);
        };
        loop {
            let step = deadline
                .saturating_duration_since(Instant::now())
                .min(RECHECK);
            let generation = l.stats.commits.wait_past(seen, step);
            let ended = self.session_over(&l);
            if generation > seen || ended || Instant::now() >= deadline {
                return Ok(EventFrontier {
                    committed_seq: l.stats.committed_seq.load(Ordering::Acquire),
                    generation,
                    ended,
                });
            }
        }
    }

    /// A query over the events already committed, without asking the
    /// writer to commit the rest first (a waiter's cheap look at what a
    /// commit just made visible).
    pub fn query_committed(
        &self,
        id: &str,
        filter: &EventFilter,
        page: QueryPage,
    ) -> Result<QueryResult, SessionError> {
        let key = self.key_of(id)?;
        self.store.query(key, filter, page).map_err(store_err)
    }

    /// Waits up to `timeout` for `what`; how the wait ended. A retained
    /// session has ended: an exit is reached at once, a pause never comes.
    pub fn wait_for_state(
        &self,
        id: &str,
        what: StateWait,
        timeout: Duration,
    ) -> Result<StateWaitOutcome, SessionError> {
        let deadline = Instant::now() + timeout;
        let Some(l) = self.live(id) else {
            self.key_of(id)?;
            return Ok(match what {
                StateWait::Exit => StateWaitOutcome::Reached,
                StateWait::Paused => StateWaitOutcome::Exited,
            });
        };
        loop {
            let over = self.session_over(&l);
            let outcome = match what {
                StateWait::Exit if over => Some(StateWaitOutcome::Reached),
                StateWait::Paused if self.any_paused(&l) => Some(StateWaitOutcome::Reached),
                StateWait::Paused if over => Some(StateWaitOutcome::Exited),
                _ if Instant::now() >= deadline => Some(StateWaitOutcome::TimedOut),
                _ => None,
            };
            if let Some(o) = outcome {
                return Ok(o);
            }
            // Pauses and the root's end notify `debug_changed`; a child's
            // pause or end is seen at the next recheck.
            let st = l.debug.lock().expect("debug lock");
            let wait = deadline
                .saturating_duration_since(Instant::now())
                .min(RECHECK);
            drop(l.debug_changed.wait_timeout(st, wait).expect("debug lock"));
        }
    }

    /// The root and every followed child ended.
    fn session_over(&self, root: &Live) -> bool {
        root.life.lock().expect("lifecycle lock").ended && self.running_children(root).is_empty()
    }

    /// A thread of the root or of a followed child is paused.
    fn any_paused(&self, root: &Live) -> bool {
        let paused = |l: &Live| !l.debug.lock().expect("debug lock").summary().1.is_empty();
        paused(root) || self.running_children(root).iter().any(|c| paused(c))
    }
}
