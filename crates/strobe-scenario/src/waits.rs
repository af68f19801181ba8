//! Waits that end with the session. A fixed wait sleeps on the session's
//! commit signal (rung when the store makes events visible and when the
//! process ends); a `wait.until` and a positive check's `withinMs` look at
//! the session's end before each evaluation. So the target's death or a
//! `debug_session stop` ends any wait at once, saying which, instead of
//! after its whole timeout.

use crate::eval::{Outcome, evaluate};
use crate::spec::Check;
use std::time::{Duration, Instant};
use strobe_session::{SessionError, SessionManager, SessionState};

/// How often a pending check is evaluated again (and the session's end
/// looked at).
const POLL: Duration = Duration::from_millis(5);

/// How the session ended.
#[derive(Debug, Clone)]
pub(crate) struct End {
    /// In a clause: "the program was killed by SIGKILL (signal 9), sent
    /// from outside Strobe", "the session was stopped (debug_session stop)".
    pub says: String,
    /// By `debug_session stop` (the run cannot go on), not by the
    /// program's own end.
    pub stopped: bool,
    /// What it recorded is still stored.
    pub kept: bool,
}

impl End {
    /// The clause with where its events are: a report's `ended`.
    pub fn note(&self) -> String {
        let mut note = crate::clip(&self.says, 600);
        if self.kept {
            note.push_str("; what it recorded stays queryable (debug_query)");
        }
        note
    }
}

/// How session `id` ended.
pub(crate) fn how_it_ended(mgr: &SessionManager, id: &str) -> End {
    let s = match mgr.status(id) {
        Ok(s) => s,
        Err(SessionError::UnknownSession(_)) => {
            return End {
                says: "the session was stopped (debug_session stop) and its data deleted".into(),
                stopped: true,
                kept: false,
            };
        }
        Err(e) => {
            return End {
                says: format!("the session ended ({})", e.message()),
                stopped: true,
                kept: false,
            };
        }
    };
    let reason = s.reason.unwrap_or_default();
    let says = match s.state {
        SessionState::Stopped => "the session was stopped (debug_session stop)".into(),
        SessionState::Crashed => format!("the program crashed ({reason})"),
        SessionState::Failed => format!("the session failed ({reason})"),
        _ => match (s.exit_code, s.signal) {
            (Some(code), _) => format!("the program exited with code {code}"),
            (None, _) if reason.starts_with("killed by") => format!("the program was {reason}"),
            (None, Some(sig)) => format!("the program was killed by {sig}"),
            (None, None) if !reason.is_empty() => format!("the program ended ({reason})"),
            (None, None) => "the program ended".into(),
        },
    };
    // A stop deletes the data unless asked to retain it, which is not
    // known here yet: no claim that it stays.
    let stopped = s.state == SessionState::Stopped;
    End {
        says,
        stopped,
        kept: !stopped,
    }
}

/// Whether the session is over (its process and followed children ended,
/// or it was stopped): no event will come any more. A session that is
/// gone (stopped, its data deleted) is over too.
fn over(mgr: &SessionManager, id: &str) -> (bool, u64) {
    match mgr.event_frontier(id) {
        Ok(f) => (f.ended, f.generation),
        Err(_) => (true, 0),
    }
}

/// A fixed wait of `ms`; ends early, with how, when the session ends.
pub(crate) fn sleep(mgr: &SessionManager, id: &str, ms: u64) -> Option<End> {
    let deadline = Instant::now() + Duration::from_millis(ms);
    loop {
        let (ended, generation) = over(mgr, id);
        if ended {
            return Some(how_it_ended(mgr, id));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        // Returns at a commit, the session's end or `left`.
        if mgr.wait_for_events(id, generation, left).is_err() {
            return Some(how_it_ended(mgr, id));
        }
    }
}

/// What a poll came to: the check's outcome, and how the session ended
/// when it ended before the check held.
pub(crate) struct Polled {
    /// The last evaluation.
    pub outcome: Outcome,
    /// Set when the session ended first (the evaluation saw everything it
    /// recorded).
    pub ended: Option<End>,
}

/// Everything the program did so far, stored; what could not be settled.
pub(crate) fn settle(mgr: &SessionManager, id: &str) -> Vec<String> {
    match mgr.settle(id) {
        Ok(w) => w,
        Err(e) => vec![e.message()],
    }
}

/// Evaluates `check` until it holds, `deadline` passes (at least once) or
/// the session ends. The session's end is read before each evaluation, so
/// the last one saw every event it will ever have.
pub(crate) fn poll(
    mgr: &SessionManager,
    id: &str,
    check: &Check,
    window: u64,
    deadline: Instant,
    warnings: &mut Vec<String>,
    ui: Option<&dyn crate::UiDriver>,
) -> Result<Polled, String> {
    let mut last: Option<Outcome> = None;
    loop {
        let (ended, _) = over(mgr, id);
        if !ended {
            for w in settle(mgr, id) {
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
            }
        }
        let outcome = match evaluate(mgr, id, check, window, ui) {
            Ok(o) if o.pass => {
                return Ok(Polled {
                    outcome: o,
                    ended: None,
                });
            }
            Ok(o) => o,
            // Stopped (its data deleted) while it was read: the session's
            // end is the answer, with what the check last saw.
            Err(e) if over(mgr, id).0 => {
                let outcome = last.unwrap_or(Outcome {
                    pass: false,
                    expected: "the step's condition".into(),
                    actual: e,
                    event_ids: vec![],
                });
                return Ok(Polled {
                    outcome,
                    ended: Some(how_it_ended(mgr, id)),
                });
            }
            Err(e) => return Err(e),
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if ended || left.is_zero() {
            return Ok(Polled {
                outcome,
                ended: ended.then(|| how_it_ended(mgr, id)),
            });
        }
        last = Some(outcome);
        // The next look (which reads the session's end first) is at most
        // POLL away: a wake at each commit would settle at the commit
        // rate, and each settle makes a commit of its own.
        std::thread::sleep(left.min(POLL));
    }
}
