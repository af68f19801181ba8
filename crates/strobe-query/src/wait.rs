//! `debug_query {waitMs}`: when nothing matches yet, the call returns as
//! soon as a matching event is stored, the process ends, or the time runs
//! out, and says which.
//!
//! The daemon evaluates the condition as events arrive: the waiter sleeps
//! on the session's commit signal and, on each commit, looks only at the
//! events that commit made visible (ids from the last frontier on, one
//! event asked for, no flush), so a wait costs in proportion to what
//! arrives, not to the session's size. The full page is read once, at the
//! end. The wait is taken in steps so MCP can send progress between them.

use crate::params::QueryParams;
use crate::service::{Prepared, answer, prepare};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use strobe_core::ToolError;
use strobe_session::SessionManager;
use strobe_store::QueryPage;

/// Longest `waitMs`.
pub const MAX_WAIT_MS: u64 = 60_000;

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// A matching event was stored.
    Matched,
    /// The process (and its followed children) ended with nothing matching.
    Exited,
    /// `waitMs` ran out with nothing matching.
    TimedOut,
}

impl Waited {
    fn name(self) -> &'static str {
        match self {
            Waited::Matched => "matched",
            Waited::Exited => "exited",
            Waited::TimedOut => "timeout",
        }
    }
}

/// What [`begin`] found.
pub enum Begun {
    /// No wait needed: something matched already, or no event can come.
    Answered((Value, String)),
    /// Nothing matches yet: step through the wait.
    Waiting(Box<QueryWait>),
}

/// A `debug_query` waiting for its first match.
pub struct QueryWait {
    params: QueryParams,
    prepared: Prepared,
    /// Ids below this were looked at.
    frontier: u64,
    /// The commit generation last seen.
    generation: u64,
    started: Instant,
    deadline: Instant,
}

/// Checks `waitMs`, answers at once when something matches (or nothing
/// more can come), else returns the wait to step through.
pub fn begin(mgr: &SessionManager, p: QueryParams) -> Result<Begun, ToolError> {
    let wait_ms = p.wait_ms.unwrap_or(0);
    if wait_ms > MAX_WAIT_MS {
        return Err(ToolError::validation(format!(
            "'waitMs' must be at most {MAX_WAIT_MS} (60 s), got {wait_ms}; call again to wait longer"
        )));
    }
    if p.aggregate.is_some() {
        return Err(ToolError::validation(
            "'waitMs' waits for events, not for 'aggregate' rows: wait without 'aggregate', then aggregate",
        ));
    }
    let started = Instant::now();
    // Taken before the first look: whatever commits after it is looked at
    // again by the first step, so nothing falls between the two.
    let before = mgr.event_frontier(&p.session_id)?;
    let prepared = prepare(mgr, &p)?;
    let (mut v, mut text) = answer(mgr, &p, &prepared)?;
    let matched = v["totalCount"].as_u64().unwrap_or(0) > 0;
    let over = mgr.event_frontier(&p.session_id)?.ended;
    if matched || over || wait_ms == 0 {
        let how = if matched {
            Waited::Matched
        } else if over {
            Waited::Exited
        } else {
            Waited::TimedOut
        };
        annotate(&mut v, &mut text, how, Duration::ZERO);
        return Ok(Begun::Answered((v, text)));
    }
    Ok(Begun::Waiting(Box::new(QueryWait {
        params: p,
        prepared,
        frontier: before.committed_seq,
        generation: before.generation,
        started,
        deadline: started + Duration::from_millis(wait_ms),
    })))
}

impl QueryWait {
    /// When the wait gives up.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// How long it has waited.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The session waited on.
    pub fn session_id(&self) -> &str {
        &self.params.session_id
    }

    /// Waits until `until` (or the deadline, if sooner); how the wait ended,
    /// or `None` if it goes on.
    pub fn step(
        &mut self,
        mgr: &SessionManager,
        until: Instant,
    ) -> Result<Option<Waited>, ToolError> {
        let end = until.min(self.deadline);
        loop {
            let now = Instant::now();
            if now >= self.deadline {
                return Ok(Some(Waited::TimedOut));
            }
            if now >= end {
                return Ok(None);
            }
            let f = mgr.wait_for_events(&self.params.session_id, self.generation, end - now)?;
            self.generation = f.generation;
            if f.committed_seq > self.frontier || f.ended {
                if self.probe(mgr, f.ended)? {
                    return Ok(Some(Waited::Matched));
                }
                self.frontier = self.frontier.max(f.committed_seq);
            }
            if f.ended {
                return Ok(Some(Waited::Exited));
            }
        }
    }

    /// Does an event from the frontier on match? After the end, everything
    /// is committed first (the last output and the exit itself may match).
    fn probe(&self, mgr: &SessionManager, ended: bool) -> Result<bool, ToolError> {
        let mut filter = self.prepared.filter.clone();
        filter.seq_from = Some(filter.seq_from.unwrap_or(0).max(self.frontier));
        let page = QueryPage {
            offset: 0,
            limit: 1,
        };
        let id = &self.params.session_id;
        let found = if ended {
            mgr.query(id, &filter, page)?
        } else {
            mgr.query_committed(id, &filter, page)?
        };
        Ok(!found.events.is_empty())
    }

    /// The answer after the wait: the page as `debug_query` gives it, with
    /// `wait` saying how the wait ended.
    pub fn finish(
        self: Box<Self>,
        mgr: &SessionManager,
        how: Waited,
    ) -> Result<(Value, String), ToolError> {
        let (mut v, mut text) = answer(mgr, &self.params, &self.prepared)?;
        annotate(&mut v, &mut text, how, self.started.elapsed());
        Ok((v, text))
    }
}

/// Adds `wait` to the answer and says how the wait ended first in its text.
fn annotate(v: &mut Value, text: &mut String, how: Waited, waited: Duration) {
    let ms = waited.as_millis() as u64;
    v["wait"] = json!({ "outcome": how.name(), "waitedMs": ms });
    let secs = waited.as_secs_f64();
    let line = match how {
        Waited::Matched if ms == 0 => return,
        Waited::Matched => format!("Waited {secs:.1} s: a matching event was stored."),
        Waited::Exited => format!(
            "Nothing matched, and the process has ended (waited {secs:.1} s): no more events will come."
        ),
        Waited::TimedOut => format!(
            "Nothing matched within waitMs ({secs:.1} s); the process is still running: call again to keep waiting."
        ),
    };
    *text = format!("{line}\n{text}");
}
