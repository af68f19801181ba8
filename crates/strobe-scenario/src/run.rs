//! Runs a scenario's steps in order against a live session, recording each
//! as a `scenario_step` event, and stops at the first failure with the
//! process left running for the agent to investigate.

use crate::ScenarioError;
use crate::eval::{Outcome, evaluate};
use crate::spec::{Check, Scenario, Step, StepKind};
use serde::Serialize;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use strobe_session::SessionManager;

/// How often a wait or a pending assertion looks again.
const POLL: Duration = Duration::from_millis(5);

/// One step's result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    /// 1-based.
    pub step: usize,
    /// The step as written.
    pub text: String,
    /// It passed (a `do` that was sent, a wait that ended, a check that held).
    pub ok: bool,
    /// What happened, in one line.
    pub summary: String,
    /// How long it took.
    pub elapsed_ms: f64,
}

/// Where a scenario failed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    /// The failing step (1-based).
    pub step: usize,
    /// The step as written.
    pub text: String,
    /// What it asked for.
    pub expected: String,
    /// What was found.
    pub actual: String,
    /// Events around it (debug_query eventIdFrom / eventIdTo).
    pub event_ids: Vec<u64>,
}

/// A scenario run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The scenario.
    pub name: String,
    /// The session it ran in (still live after a failure).
    pub session_id: String,
    /// Every step passed.
    pub passed: bool,
    /// Steps in the scenario.
    pub steps_total: usize,
    /// Each step run, in order.
    pub steps: Vec<StepResult>,
    /// The first failure.
    pub failure: Option<Failure>,
    /// The whole run.
    pub elapsed_ms: f64,
    /// Things worth knowing (a process whose latest calls could not be settled).
    pub warnings: Vec<String>,
}

fn ms(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 1e4).round() / 10.0
}

/// Runs `scenario` in session `id`.
pub fn run(
    mgr: &SessionManager,
    id: &str,
    scenario: &Scenario,
    ui: Option<&dyn crate::UiDriver>,
) -> Result<Report, ScenarioError> {
    let started = Instant::now();
    let mut report = Report {
        name: scenario.name.clone(),
        session_id: id.to_string(),
        passed: false,
        steps_total: scenario.steps.len(),
        steps: Vec::new(),
        failure: None,
        elapsed_ms: 0.0,
        warnings: Vec::new(),
    };
    // `ui` is the GUI driver, not a session channel.
    for c in scenario.channels.iter().filter(|c| *c != "ui") {
        mgr.add_channel(id, c)
            .map_err(|e| ScenarioError::Session(format!("channel {c}: {}", e.message())))?;
    }
    let session = |e: strobe_session::SessionError| ScenarioError::Session(e.message());
    // Checks look at what happened since the previous do step; before the
    // first one, since the session began (a first wait sees what the
    // program printed at start). The session must be live.
    mgr.session_now_ns(id).map_err(session)?;
    let mut window = 0;
    for step in &scenario.steps {
        let t = Instant::now();
        let (ok, summary, failure) = match &step.kind {
            StepKind::Do { channel, data } => {
                window = mgr.session_now_ns(id).map_err(session)?;
                // `ui` goes through the GUI driver, every other channel
                // through the session.
                let (sent, expected) = if channel == "ui" {
                    let driver = ui.ok_or_else(|| {
                        ScenarioError::Session(
                            "ui steps need a GUI driver (debug_test_scenario gives one)".into(),
                        )
                    })?;
                    (
                        driver.act(id, data),
                        format!("the GUI action {data} takes effect"),
                    )
                } else {
                    let sent = mgr
                        .channel_send(id, channel, data)
                        .map(|s| s.summary)
                        .map_err(|e| e.message());
                    (sent, format!("{channel} takes the stimulus"))
                };
                match sent {
                    Ok(line) => (true, format!("{channel}: {line}"), None),
                    Err(why) => {
                        let f = failure(step, expected, why.clone(), vec![]);
                        (false, format!("{channel}: {why}"), Some(f))
                    }
                }
            }
            StepKind::Sleep(ms) => {
                std::thread::sleep(Duration::from_millis(*ms));
                (true, format!("waited {ms} ms"), None)
            }
            StepKind::Until { check, timeout_ms } => {
                let deadline = t + Duration::from_millis(*timeout_ms);
                let o = poll(mgr, id, check, window, deadline, &mut report.warnings, ui)
                    .map_err(ScenarioError::Session)?;
                if o.pass {
                    (true, format!("{} after {:.1} ms", o.expected, ms(t)), None)
                } else {
                    let actual = format!("not within {timeout_ms} ms; seen: {}", o.actual);
                    let f = failure(step, o.expected.clone(), actual.clone(), o.event_ids);
                    (
                        false,
                        format!("timed out waiting for {}: {actual}", o.expected),
                        Some(f),
                    )
                }
            }
            StepKind::Assert(check) => {
                let o = if check.is_negative() {
                    report.warnings.extend(settle(mgr, id));
                    evaluate(mgr, id, check, window, ui).map_err(ScenarioError::Session)?
                } else {
                    let deadline = t + Duration::from_millis(check.within_ms);
                    poll(mgr, id, check, window, deadline, &mut report.warnings, ui)
                        .map_err(ScenarioError::Session)?
                };
                if o.pass {
                    (true, format!("{} ({})", o.expected, o.actual), None)
                } else {
                    let f = failure(step, o.expected.clone(), o.actual.clone(), o.event_ids);
                    (
                        false,
                        format!("expected {}, but {}", o.expected, o.actual),
                        Some(f),
                    )
                }
            }
        };
        let elapsed_ms = ms(t);
        let _ = mgr.record_scenario_step(
            id,
            &json!({
                "scenario": scenario.name,
                "step": step.number,
                "of": scenario.steps.len(),
                "text": step.text,
                "ok": ok,
                "elapsedMs": elapsed_ms,
                "failure": failure,
                "summary": format!("{} step {}/{} {}: {summary}", scenario.name, step.number, scenario.steps.len(), if ok { "passed" } else { "FAILED" }),
            }),
        );
        report.steps.push(StepResult {
            step: step.number,
            text: step.text.clone(),
            ok,
            summary,
            elapsed_ms,
        });
        if let Some(f) = failure {
            report.failure = Some(f);
            report.elapsed_ms = ms(started);
            return Ok(report);
        }
    }
    report.passed = true;
    report.elapsed_ms = ms(started);
    Ok(report)
}

fn failure(step: &Step, expected: String, actual: String, event_ids: Vec<u64>) -> Failure {
    Failure {
        step: step.number,
        text: step.text.clone(),
        expected,
        actual,
        event_ids,
    }
}

/// Everything the program did so far, stored; what could not be settled.
fn settle(mgr: &SessionManager, id: &str) -> Vec<String> {
    match mgr.settle(id) {
        Ok(w) => w,
        Err(e) => vec![e.message()],
    }
}

/// Evaluates `check` until it holds or `deadline` passes (at least once).
fn poll(
    mgr: &SessionManager,
    id: &str,
    check: &Check,
    window: u64,
    deadline: Instant,
    warnings: &mut Vec<String>,
    ui: Option<&dyn crate::UiDriver>,
) -> Result<Outcome, String> {
    loop {
        for w in settle(mgr, id) {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        let o = evaluate(mgr, id, check, window, ui)?;
        if o.pass || Instant::now() >= deadline {
            return Ok(o);
        }
        std::thread::sleep(POLL);
    }
}

/// The reply's short text: the verdict first, then what to do next.
pub fn render(r: &Report) -> String {
    let mut text = match &r.failure {
        None => format!(
            "Scenario {:?} passed: {} step(s) in {:.0} ms.",
            r.name, r.steps_total, r.elapsed_ms
        ),
        Some(f) => {
            let ids = if f.event_ids.is_empty() {
                String::new()
            } else {
                let first = f.event_ids.iter().min().copied().unwrap_or(0);
                format!(
                    "\nEvents: {} (debug_query {{sessionId: {:?}, eventIdFrom: {}}}).",
                    f.event_ids
                        .iter()
                        .map(|i| format!("#{i}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    r.session_id,
                    first.saturating_sub(5)
                )
            };
            format!(
                "Scenario {:?} FAILED at step {}/{}: {}\nExpected: {}\nActual: {}{ids}\nThe program is still running in session {}: investigate with debug_query, debug_trace, debug_memory.",
                r.name, f.step, r.steps_total, f.text, f.expected, f.actual, r.session_id
            )
        }
    };
    for s in &r.steps {
        text.push_str(&format!(
            "\n  {} {}. {} ({:.1} ms)",
            if s.ok { "✓" } else { "✗" },
            s.step,
            s.summary,
            s.elapsed_ms
        ));
    }
    for w in &r.warnings {
        text.push_str(&format!("\nwarning: {w}"));
    }
    text
}

/// Runs a scenario document: parsed (and refused whole when malformed),
/// then run.
pub fn run_document(
    mgr: &SessionManager,
    id: &str,
    name: &str,
    doc: &Value,
    ui: Option<std::sync::Arc<dyn crate::UiDriver>>,
) -> Result<Report, ScenarioError> {
    let kinds = match &ui {
        Some(d) => crate::spec::Kinds::with_ui(d.clone()),
        None => crate::spec::Kinds::registered(),
    };
    let scenario = crate::spec::parse(name, doc, &kinds)?;
    run(mgr, id, &scenario, ui.as_deref())
}
