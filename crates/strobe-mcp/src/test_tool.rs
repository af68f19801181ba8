//! `debug_test`: a project's test run started, or its status read (with
//! progress notifications when the client gave a progress token), and the
//! one-line text of each answer.

use crate::params::TestParams;
use crate::reply::{blocking, fail, ok, watch_request};
use rmcp::model::{CallToolResult, ProgressToken};
use std::sync::Arc;
use strobe_core::{Settings, ToolError};
use strobe_testrun::TestRunner;

/// Runs `debug_test`; `ct` is the call's cancellation (it stops a run's
/// preparing work).
pub(crate) async fn debug_test(
    mgr: Arc<strobe_session::SessionManager>,
    tests: Arc<TestRunner>,
    settings: Settings,
    p: TestParams,
    progress_token: Option<ProgressToken>,
    peer: rmcp::Peer<rmcp::RoleServer>,
    ct: tokio_util::sync::CancellationToken,
) -> CallToolResult {
    // A client that cancels the call stops the run's preparing work (a
    // walk of the project) instead of leaving it to run to its bound.
    let cancel = strobe_testing::walk::Cancel::default();
    let cancelled = cancel.clone();
    let on_cancel = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            ct.cancelled().await;
            cancel.cancel();
        })
    };
    let r = if let ("status", Some(id), Some(token)) =
        (p.action.as_str(), p.test_run_id.clone(), progress_token)
    {
        crate::progress::test_status(tests, id, strobe_testrun::STATUS_WAIT, token, peer).await
    } else {
        blocking(move || match p.action.as_str() {
            "run" => {
                let project_root = p.project_root.ok_or_else(|| {
                    ToolError::validation("action \"run\" needs 'projectRoot' (absolute)")
                })?;
                tracing::info!("debug_test run: preparing {project_root}");
                // They end up in a command line, whose C strings end at NUL.
                for (what, v) in [("'command'", &p.command), ("'test'", &p.test)] {
                    if let Some(v) = v {
                        strobe_session::validate::no_nul(what, v)?;
                    }
                }
                let level = match p.level.as_deref() {
                    None => None,
                    Some("unit") => Some(strobe_testing::TestLevel::Unit),
                    Some("integration") => Some(strobe_testing::TestLevel::Integration),
                    Some("e2e") => Some(strobe_testing::TestLevel::E2e),
                    Some(other) => {
                        return Err(ToolError::validation(format!(
                            "'level' {other:?} is not \"unit\", \"integration\" or \"e2e\""
                        )));
                    }
                };
                if level.is_some() && p.test.is_some() {
                    return Err(ToolError::validation(
                        "give 'level' or 'test', not both: a single test runs at whatever level it is",
                    ));
                }
                let compare = match p.rerun.as_deref() {
                    None => false,
                    Some("compare") => true,
                    Some(other) => {
                        return Err(ToolError::validation(format!(
                            "'rerun' {other:?} is not \"compare\" (rerun the test traced and diff it with its last passing traced run)"
                        )));
                    }
                };
                let r = tests.run(&strobe_testrun::TestRunRequest {
                    compare,
                    project_root,
                    framework: p.framework,
                    level,
                    test: p.test,
                    command: p.command,
                    env: p.env.unwrap_or_default(),
                    trace_patterns: p.trace_patterns.unwrap_or_default(),
                    watches: p
                        .watches
                        .unwrap_or_default()
                        .into_iter()
                        .map(watch_request)
                        .collect(),
                    cancel: Some(cancel),
                }, &settings);
                if cancelled.is_cancelled() {
                    // rmcp dropped the call's future: nobody reads this answer,
                    // so the log says what the cancellation stopped.
                    let what = match &r {
                        Ok(v) => format!("it had already answered ({})", v["status"]),
                        Err(e) => e.message.clone(),
                    };
                    tracing::info!("debug_test run cancelled by the client: {what}");
                }
                r
            }
            "status" => {
                let id = p.test_run_id.ok_or_else(|| {
                    ToolError::validation("action \"status\" needs 'testRunId' (from action \"run\")")
                })?;
                tests.status(&id, strobe_testrun::STATUS_WAIT)
            }
            other => Err(ToolError::validation(format!(
                "'action' {other:?} is not \"run\" or \"status\""
            ))),
        })
            .await
    };
    on_cancel.abort();
    let r = match r {
        Ok(v) => with_diff(mgr, v).await,
        Err(e) => Err(e),
    };
    match r {
        Ok((v, diff_text)) => {
            let text = match v["status"].as_str() {
                Some("noTests") => format!(
                    "No tests found ({} project, {}): {}",
                    v["language"].as_str().unwrap_or("?"),
                    v["buildSystem"].as_str().unwrap_or("?"),
                    v["hint"].as_str().unwrap_or("")
                ),
                Some("completed") => strobe_testrun::completed_text(&v),
                _ if v.get("phase").is_some() => format!(
                    "{} {}; ask debug_test {{action: \"status\", testRunId}} again",
                    v["testRunId"].as_str().unwrap_or("?"),
                    crate::progress::message(&v)
                ),
                _ => format!(
                    "{} started; ask debug_test {{action: \"status\", testRunId}} for its progress",
                    v["testRunId"].as_str().unwrap_or("?"),
                ),
            };
            ok(v, format!("{text}{diff_text}"))
        }
        Err(e) => fail(e),
    }
}

/// A finished `rerun: "compare"` run that failed, with a baseline found:
/// the diff of its session against the baseline's, under `diff`, and its
/// text to add to the answer's.
async fn with_diff(
    mgr: Arc<strobe_session::SessionManager>,
    mut v: serde_json::Value,
) -> Result<(serde_json::Value, String), ToolError> {
    let (Some(baseline), Some(candidate)) = (
        v["compare"]["baselineSessionId"]
            .as_str()
            .map(str::to_string),
        v["sessionId"].as_str().map(str::to_string),
    ) else {
        let hint = v["compare"]["hint"]
            .as_str()
            .map(|h| format!("\nCompare: {h}"))
            .unwrap_or_default();
        return Ok((v, hint));
    };
    let p = strobe_query::diff::DiffParams {
        baseline,
        candidate,
        functions: None,
        max_items: None,
    };
    match blocking(move || strobe_query::diff::run_diff(&mgr, p)).await {
        Ok((d, text)) => {
            v["diff"] = d;
            Ok((v, format!("\n{text}")))
        }
        // The run's own answer stands; the diff's failure is said beside it.
        Err(e) => {
            let msg = format!("\nCompare: the diff failed: {}", e.message);
            v["compare"]["error"] = serde_json::json!(e.message);
            Ok((v, msg))
        }
    }
}
