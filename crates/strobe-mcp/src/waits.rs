//! Server-side waits over MCP: `debug_query {waitMs}` stepped one second at
//! a time so a client that gave a progress token hears how long it has
//! waited, and `debug_session {action: "status", waitFor, waitMs}`.

use crate::reply::blocking;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strobe_core::ToolError;
use strobe_query::QueryParams;
use strobe_query::wait::{self, Begun, MAX_WAIT_MS};
use strobe_session::{SessionManager, StateWait, StateWaitOutcome};

/// How often a waiting call reports progress.
const STEP: Duration = Duration::from_secs(1);

/// `debug_query`, waiting as `waitMs` asks, with a progress notification
/// for `token` after each [`STEP`] without a match (`progress` = seconds
/// waited, `total` = the seconds asked for).
pub async fn query(
    mgr: Arc<SessionManager>,
    p: QueryParams,
    token: Option<ProgressToken>,
    peer: Peer<RoleServer>,
) -> Result<(Value, String), ToolError> {
    let Some(token) = token.filter(|_| p.wait_ms.is_some()) else {
        return blocking(move || strobe_query::run_query(&mgr, p)).await;
    };
    let m = mgr.clone();
    let mut w = match blocking(move || wait::begin(&m, p)).await? {
        Begun::Answered(answer) => return Ok(answer),
        Begun::Waiting(w) => w,
    };
    let total = w
        .deadline()
        .saturating_duration_since(Instant::now())
        .as_secs_f64()
        + w.elapsed().as_secs_f64();
    loop {
        let m = mgr.clone();
        let (back, how) = blocking(move || {
            let until = Instant::now() + STEP;
            let how = w.step(&m, until)?;
            Ok::<_, ToolError>((w, how))
        })
        .await?;
        w = back;
        if let Some(how) = how {
            let m = mgr.clone();
            return blocking(move || w.finish(&m, how)).await;
        }
        let waited = w.elapsed().as_secs_f64();
        let note = ProgressNotificationParam::new(token.clone(), waited)
            .with_total(total)
            .with_message(format!(
                "waiting for a matching event in {}: {waited:.0} s of {total:.0} s",
                w.session_id()
            ));
        if let Err(e) = peer.notify_progress(note).await {
            tracing::debug!("progress notification not sent: {e}");
        }
    }
}

/// Reads `debug_session status`'s `waitFor` and `waitMs`: what to wait for
/// and how long, or `None` for a plain status.
pub fn state_wait(
    wait_for: Option<&str>,
    wait_ms: Option<u64>,
) -> Result<Option<(StateWait, Duration)>, ToolError> {
    let what = match wait_for {
        None if wait_ms.is_some() => {
            return Err(ToolError::validation(
                "'waitMs' needs 'waitFor': \"exit\" or \"paused\"",
            ));
        }
        None => return Ok(None),
        Some("exit") => StateWait::Exit,
        Some("paused") => StateWait::Paused,
        Some(other) => {
            return Err(ToolError::validation(format!(
                "'waitFor' {other:?} is not \"exit\" or \"paused\""
            )));
        }
    };
    let ms = wait_ms.unwrap_or(10_000);
    if !(1..=MAX_WAIT_MS).contains(&ms) {
        return Err(ToolError::validation(format!(
            "'waitMs' must be 1–{MAX_WAIT_MS} (default 10000), got {ms}; call again to wait longer"
        )));
    }
    Ok(Some((what, Duration::from_millis(ms))))
}

/// The `wait` part of a status that waited, and the line that says how it
/// ended.
pub fn state_wait_report(
    what: StateWait,
    outcome: StateWaitOutcome,
    waited: Duration,
) -> (Value, String) {
    let (for_name, thing) = match what {
        StateWait::Exit => ("exit", "the process's end"),
        StateWait::Paused => ("paused", "a paused thread"),
    };
    let (name, line) = match outcome {
        StateWaitOutcome::Reached => (
            "reached",
            format!("Waited {:.1} s for {thing}.", waited.as_secs_f64()),
        ),
        StateWaitOutcome::Exited => (
            "exited",
            format!(
                "The process ended after {:.1} s without {thing}.",
                waited.as_secs_f64()
            ),
        ),
        StateWaitOutcome::TimedOut => (
            "timeout",
            format!(
                "{} within waitMs ({:.1} s): call again to keep waiting.",
                match what {
                    StateWait::Exit => "The process is still running",
                    StateWait::Paused => "No thread paused",
                },
                waited.as_secs_f64()
            ),
        ),
    };
    (
        json!({"for": for_name, "outcome": name, "waitedMs": waited.as_millis() as u64}),
        line,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_arguments_are_checked_with_the_fix_in_the_message() {
        assert!(state_wait(None, None).unwrap().is_none());
        let e = state_wait(None, Some(5)).unwrap_err().to_string();
        assert!(e.contains("needs 'waitFor'"), "{e}");
        let e = state_wait(Some("done"), None).unwrap_err().to_string();
        assert!(e.contains("\"exit\" or \"paused\""), "{e}");
        let e = state_wait(Some("exit"), Some(60_001))
            .unwrap_err()
            .to_string();
        assert!(e.contains("1–60000"), "{e}");
        assert_eq!(
            state_wait(Some("paused"), None).unwrap(),
            Some((StateWait::Paused, Duration::from_secs(10)))
        );
    }
}
