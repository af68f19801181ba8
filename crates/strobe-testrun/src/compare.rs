//! `debug_test {rerun: "compare"}`: a traced run of a test that fails is
//! compared with the last traced run of the same test that passed, while
//! that run's session is still kept. This side finds the baseline and says
//! so in the result (`compare`); the MCP layer runs the diff itself, since
//! the diff belongs to the query service.

use crate::runs::{Run, TestRunRequest, TestRuns};
use serde_json::{Value, json};
use strobe_session::SessionManager;

/// What an instrumented run traced: the key its baselines share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Traced {
    project_root: String,
    test: Option<String>,
    /// Sorted, so the same patterns in another order match.
    patterns: Vec<String>,
    compare: bool,
}

impl Traced {
    pub(crate) fn of(req: &TestRunRequest) -> Traced {
        let mut patterns = req.trace_patterns.clone();
        patterns.sort();
        Traced {
            project_root: req.project_root.clone(),
            test: req.test.clone(),
            patterns,
            compare: req.compare,
        }
    }

    fn same_test(&self, other: &Traced) -> bool {
        self.project_root == other.project_root
            && self.test == other.test
            && self.patterns == other.patterns
    }
}

/// Whether a completed result passed: no failures and at least one pass.
fn passed(result: &Value) -> bool {
    let s = &result["summary"];
    s["failed"] == 0
        && s["stuck"].as_u64().unwrap_or(0) == 0
        && s["passed"].as_u64().unwrap_or(0) > 0
}

/// Stores a traced run that passed as its test's newest baseline, so a
/// failing `rerun: "compare"` finds it even after a daemon restart.
pub(crate) fn record_pass(run: &Run, result: &Value) {
    let (Some(traced), Some(session)) = (run.traced.get(), result["sessionId"].as_str()) else {
        return;
    };
    if !passed(result) {
        return;
    }
    let pass = strobe_store::TracedPass {
        project_root: traced.project_root.clone(),
        test: traced.test.clone(),
        patterns: traced.patterns.clone(),
        session_id: session.to_string(),
        finished_at: strobe_core::clock::unix_millis(),
    };
    if let Err(e) = run.store.record_traced_pass(pass) {
        tracing::warn!("storing test run {} as a baseline: {e}", run.id);
    }
}

/// Adds `compare` to the completed result of run `id` if it asked for it:
/// the baseline session, or why there is none.
pub(crate) fn annotate(runs: &TestRuns, mgr: &SessionManager, id: &str, result: &mut Value) {
    let all: Vec<std::sync::Arc<Run>> = runs
        .runs
        .lock()
        .expect("runs lock")
        .values()
        .cloned()
        .collect();
    let Some(run) = all.iter().find(|r| r.id == id) else {
        return;
    };
    let Some(traced) = run.traced.get().filter(|t| t.compare) else {
        return;
    };
    annotate_with(runs, mgr, &all, run, traced, result);
    result["compare"]["tracePatterns"] = json!(traced.patterns);
}

fn annotate_with(
    runs: &TestRuns,
    mgr: &SessionManager,
    all: &[std::sync::Arc<Run>],
    run: &Run,
    traced: &Traced,
    result: &mut Value,
) {
    if passed(result) {
        result["compare"] = json!({
            "baselineSessionId": null,
            "passed": true,
            "hint": "this run passed: it is the baseline a later rerun: \"compare\" of this test (same patterns) is diffed against",
        });
        return;
    }
    // The newest earlier traced run of the same test that passed and whose
    // session is still there.
    let mut earlier: Vec<&std::sync::Arc<Run>> = all
        .iter()
        .filter(|r| r.started < run.started)
        .filter(|r| r.traced.get().is_some_and(|t| t.same_test(traced)))
        .collect();
    earlier.sort_by_key(|r| std::cmp::Reverse(r.started));
    let baseline = earlier.into_iter().find_map(|r| {
        let state = r.state.lock().expect("run lock");
        let done = state.result.as_ref()?;
        let session = state.session_id.clone()?;
        (passed(done) && mgr.status(&session).is_ok()).then_some(session)
    });
    // Else the one an earlier daemon stored, if it finished before this run
    // started and its session is still retained.
    let started_ms = strobe_core::clock::unix_millis() - run.started.elapsed().as_millis() as i64;
    let baseline = baseline.or_else(|| {
        let stored = runs
            .store
            .traced_pass(
                &traced.project_root,
                traced.test.as_deref(),
                &traced.patterns,
            )
            .map_err(|e| tracing::warn!("reading the baseline of test run {}: {e}", run.id))
            .ok()??;
        (stored.finished_at <= started_ms && mgr.status(&stored.session_id).is_ok())
            .then_some(stored.session_id)
    });
    result["compare"] = match baseline {
        Some(s) => json!({"baselineSessionId": s}),
        None => json!({
            "baselineSessionId": null,
            "hint": "no passing traced run of this test (same projectRoot, test and tracePatterns) whose session is still kept: \
                     run it where it passes (before the change that broke it) with the same arguments, then rerun: \"compare\" here again",
        }),
    };
}

/// The trace patterns the newest run of `project_root` that failed `test`
/// suggested for it (a rerun: "compare" without tracePatterns uses them).
pub(crate) fn suggested_patterns(
    runs: &TestRuns,
    project_root: &str,
    test: &str,
) -> Option<Vec<String>> {
    let mut all: Vec<std::sync::Arc<Run>> = runs
        .runs
        .lock()
        .expect("runs lock")
        .values()
        .filter(|r| r.project_root == project_root)
        .cloned()
        .collect();
    all.sort_by_key(|r| std::cmp::Reverse(r.started));
    all.iter().find_map(|r| {
        let state = r.state.lock().expect("run lock");
        let failures = state.result.as_ref()?["failures"].as_array()?.clone();
        let f = failures.iter().find(|f| f["name"] == test)?;
        let patterns: Vec<String> = f["suggestedTraces"]
            .as_array()?
            .iter()
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect();
        (!patterns.is_empty()).then_some(patterns)
    })
}
