//! MCP progress notifications for `debug_test {action: "status"}`: when
//! the client sends a progress token, the 15 s wait is cut into one-second
//! steps and each step that finds the run still going tells the client how
//! far it got, in words an agent or a human reads at a glance.

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strobe_core::ToolError;
use strobe_testrun::TestRunner;

/// How often a waiting `status` reports progress.
const STEP: Duration = Duration::from_secs(1);

/// `debug_test` status that waits up to `wait` like the plain one, sending
/// a `notifications/progress` for `token` every [`STEP`] while the run goes
/// on. The notification's `progress` is the run's elapsed seconds, which
/// only grows, as MCP requires; its message carries the counts and the
/// test running now with its usual duration.
pub async fn test_status(
    tests: Arc<TestRunner>,
    id: String,
    wait: Duration,
    token: ProgressToken,
    peer: Peer<RoleServer>,
) -> Result<Value, ToolError> {
    let deadline = Instant::now() + wait;
    let mut last_progress = -1.0;
    loop {
        let step = deadline.saturating_duration_since(Instant::now()).min(STEP);
        let (t, run) = (tests.clone(), id.clone());
        let status = crate::reply::blocking(move || t.status(&run, step)).await?;
        if status["status"] != "running" || Instant::now() >= deadline {
            return Ok(status);
        }
        let progress = status["elapsedMs"].as_f64().unwrap_or(0.0) / 1000.0;
        if progress <= last_progress {
            continue;
        }
        last_progress = progress;
        let note =
            ProgressNotificationParam::new(token.clone(), progress).with_message(message(&status));
        // A client that went away only loses its notifications; the call
        // still answers (or is cancelled by rmcp).
        if let Err(e) = peer.notify_progress(note).await {
            tracing::debug!("progress notification not sent: {e}");
        }
    }
}

/// One line saying where a running test run is.
pub fn message(status: &Value) -> String {
    let p = &status["progress"];
    let count = |k: &str| p[k].as_u64().unwrap_or(0);
    let seconds = |v: &Value| v.as_f64().map(|ms| ms / 1000.0);
    let mut text = format!(
        "{}: {} passed, {} failed, {} skipped after {:.1} s",
        status["phase"].as_str().unwrap_or("running"),
        count("passed"),
        count("failed"),
        count("skipped"),
        seconds(&status["elapsedMs"]).unwrap_or(0.0),
    );
    if let Some(name) = p["currentTest"].as_str() {
        text.push_str(&format!(
            "; {name} running for {:.1} s",
            seconds(&p["currentTestElapsedMs"]).unwrap_or(0.0)
        ));
        match (
            seconds(&p["currentTestBaselineMs"]),
            p["currentTestBaselineRuns"].as_u64(),
        ) {
            (Some(usual), Some(runs)) => text.push_str(&format!(
                " (usually {usual:.1} s over its last {runs} run{})",
                if runs == 1 { "" } else { "s" }
            )),
            _ => text.push_str(" (no earlier run to compare with)"),
        }
    }
    let warning = &status["stuckWarning"];
    if let Some(silent) = seconds(&warning["silentForMs"]) {
        text.push_str(&format!(
            "; no output for {silent:.1} s, {}",
            warning["judgement"].as_str().unwrap_or("being checked")
        ));
    }
    let stuck = status["stuck"].as_array().map_or(0, Vec::len);
    if stuck > 0 {
        text.push_str(&format!("; {stuck} stuck test(s) stopped"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_message_names_the_running_test_and_its_usual_time() {
        let s = json!({
            "status": "running", "phase": "running", "elapsedMs": 12_345,
            "progress": {"passed": 3, "failed": 1, "skipped": 0,
                "currentTest": "calc::slow", "currentTestElapsedMs": 4_200,
                "currentTestBaselineMs": 800, "currentTestBaselineRuns": 10},
            "stuck": [],
        });
        assert_eq!(
            message(&s),
            "running: 3 passed, 1 failed, 0 skipped after 12.3 s; calc::slow running for 4.2 s \
             (usually 0.8 s over its last 10 runs)"
        );
    }

    #[test]
    fn a_test_never_run_before_says_so_and_compiling_has_no_test() {
        let s = json!({"phase": "running", "elapsedMs": 1000,
            "progress": {"passed": 0, "failed": 0, "skipped": 0,
                "currentTest": "t", "currentTestElapsedMs": 10}});
        assert!(message(&s).ends_with("t running for 0.0 s (no earlier run to compare with)"));
        let c = json!({"phase": "compiling", "elapsedMs": 500, "progress": {}});
        assert_eq!(
            message(&c),
            "compiling: 0 passed, 0 failed, 0 skipped after 0.5 s"
        );
    }
}
