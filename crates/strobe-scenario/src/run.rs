//! Runs a scenario's steps in order against a live session, recording each
//! as a `scenario_step` event, and stops at the first failure with the
//! process left running for the agent to investigate. Every wait ends with
//! the session (see `waits`), and the report stays within a reply's
//! budget: the steps between the first few and the last ones, which all
//! passed, are counted rather than listed.

use crate::ScenarioError;
use crate::spec::{Scenario, Step, StepKind};
use crate::waits::{self, End};
use serde::Serialize;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use strobe_session::{SessionError, SessionManager};

/// Steps a report lists from the start of the run.
const HEAD_SHOWN: usize = 5;
/// Steps a report lists from the end of the run (the failing one last).
const TAIL_SHOWN: usize = 15;
/// Characters of a step's text or summary a report keeps.
const STEP_CHARS: usize = 300;
/// Characters of a failure's text, expected and actual a report keeps.
const FAILURE_CHARS: usize = 1_500;
/// Warnings a report keeps.
const WARNINGS_SHOWN: usize = 10;
/// Characters of a warning or the scenario's name a report keeps.
const NOTE_CHARS: usize = 200;
/// The most characters [`render`] writes: the usual bound of a tool
/// reply's text, met by the limits above whatever the scenario holds.
pub const REPLY_CHARS: usize = 16_000;

/// One step's result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    /// 1-based.
    pub step: usize,
    /// The step as written (cut at 300 characters).
    pub text: String,
    /// It passed (a `do` that was sent, a wait that ended, a check that held).
    pub ok: bool,
    /// What happened, in one line (cut at 300 characters).
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
    /// Steps run, in order: the first 5 and the last 15 when more ran.
    pub steps: Vec<StepResult>,
    /// Steps run but not listed in `steps` (all passed; each is a
    /// `scenario_step` event).
    pub steps_omitted: usize,
    /// The first failure.
    pub failure: Option<Failure>,
    /// The whole run.
    pub elapsed_ms: f64,
    /// Things worth knowing (a process whose latest calls could not be settled).
    pub warnings: Vec<String>,
    /// How the session ended during the run, when it did (the program
    /// exited or was killed, or the session was stopped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
}

fn ms(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 1e4).round() / 10.0
}

/// A step's outcome: passed, its one line, its failure.
type Ran = (bool, String, Option<Failure>);

/// Refuses a session that is not live: an unknown id with the session's
/// own error (`SESSION_NOT_FOUND`), a kept one saying it ended.
fn live(mgr: &SessionManager, id: &str) -> Result<(), ScenarioError> {
    if mgr.session_now_ns(id).is_ok() {
        return Ok(());
    }
    mgr.status(id)?;
    Err(SessionError::validation(format!(
        "session {id:?} has ended and is only kept for reading: a scenario runs in a live session \
         (debug_launch first, or `strobe scenarios` for files with a launch section)"
    ))
    .into())
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
        name: crate::clip(&scenario.name, NOTE_CHARS),
        session_id: id.to_string(),
        passed: false,
        steps_total: scenario.steps.len(),
        steps: Vec::new(),
        steps_omitted: 0,
        failure: None,
        elapsed_ms: 0.0,
        warnings: Vec::new(),
        ended: None,
    };
    live(mgr, id)?;
    // `ui` is the GUI driver, not a session channel.
    for c in scenario.channels.iter().filter(|c| *c != "ui") {
        mgr.add_channel(id, c)
            .map_err(|e| e.map(|m| format!("channel {c}: {m}")))?;
    }
    // Checks look at what happened since the previous do step; before the
    // first one, since the session began (a first wait sees what the
    // program printed at start).
    let mut window = 0;
    for step in &scenario.steps {
        let t = Instant::now();
        let (ok, summary, failure) = run_step(mgr, id, step, &mut window, &mut report, ui)?;
        let elapsed_ms = ms(t);
        let _ = mgr.record_scenario_step(
            id,
            &json!({
                "scenario": scenario.name,
                "step": step.number,
                "of": scenario.steps.len(),
                "text": crate::clip(&step.text, FAILURE_CHARS),
                "ok": ok,
                "elapsedMs": elapsed_ms,
                "failure": failure,
                "summary": format!("{} step {}/{} {}: {}", scenario.name, step.number, scenario.steps.len(), if ok { "passed" } else { "FAILED" }, crate::clip(&summary, FAILURE_CHARS)),
            }),
        );
        report.steps.push(StepResult {
            step: step.number,
            text: crate::clip(&step.text, STEP_CHARS),
            ok,
            summary: crate::clip(&summary, STEP_CHARS),
            elapsed_ms,
        });
        if let Some(f) = failure {
            report.failure = Some(Failure {
                text: crate::clip(&f.text, FAILURE_CHARS),
                expected: crate::clip(&f.expected, FAILURE_CHARS),
                actual: crate::clip(&f.actual, FAILURE_CHARS),
                ..f
            });
            return Ok(finish(report, started));
        }
    }
    report.passed = true;
    Ok(finish(report, started))
}

/// The report within its budget: the middle of a long run counted, not
/// listed; warnings capped.
fn finish(mut r: Report, started: Instant) -> Report {
    if r.steps.len() > HEAD_SHOWN + TAIL_SHOWN {
        let cut = r.steps.len() - HEAD_SHOWN - TAIL_SHOWN;
        r.steps.drain(HEAD_SHOWN..HEAD_SHOWN + cut);
        r.steps_omitted = cut;
    }
    if r.warnings.len() > WARNINGS_SHOWN {
        let more = r.warnings.len() - WARNINGS_SHOWN;
        r.warnings.truncate(WARNINGS_SHOWN);
        r.warnings.push(format!("{more} more warning(s) left out"));
    }
    r.warnings = r
        .warnings
        .iter()
        .map(|w| crate::clip(w, NOTE_CHARS))
        .collect();
    r.elapsed_ms = ms(started);
    r
}

/// Notes how the session ended in the report, and says it in a clause.
fn ended(report: &mut Report, end: &End) -> String {
    report.ended = Some(end.note());
    end.says.clone()
}

fn run_step(
    mgr: &SessionManager,
    id: &str,
    step: &Step,
    window: &mut u64,
    report: &mut Report,
    ui: Option<&dyn crate::UiDriver>,
) -> Result<Ran, ScenarioError> {
    let t = Instant::now();
    Ok(match &step.kind {
        StepKind::Do { channel, data } => {
            let Ok(now) = mgr.session_now_ns(id) else {
                // Stopped since the previous step.
                let how = ended(report, &waits::how_it_ended(mgr, id));
                let f = failure(step, format!("{channel} takes the stimulus"), how, vec![]);
                return Ok((false, format!("{channel}: {}", f.actual), Some(f)));
            };
            *window = now;
            // `ui` goes through the GUI driver, every other channel
            // through the session.
            let (sent, expected) = if channel == "ui" {
                let driver = ui.ok_or_else(|| {
                    SessionError::validation(
                        "ui steps need a GUI driver (debug_test_scenario gives one)",
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
        StepKind::Sleep(wait) => match waits::sleep(mgr, id, *wait) {
            None => (true, format!("waited {wait} ms"), None),
            // A stop ends the run; the program's own end only ends the
            // wait early (nothing more can happen), and the checks after
            // it read what it recorded.
            Some(end) => {
                let how = ended(report, &end);
                let line = format!("{how}, {:.0} ms into a {wait} ms wait", ms(t));
                if end.stopped {
                    let f = failure(step, format!("a {wait} ms wait"), line.clone(), vec![]);
                    (false, line, Some(f))
                } else {
                    (true, format!("{line}: the wait ended there"), None)
                }
            }
        },
        StepKind::Until { check, timeout_ms } => {
            let deadline = t + Duration::from_millis(*timeout_ms);
            let p = waits::poll(mgr, id, check, *window, deadline, &mut report.warnings, ui)
                .map_err(ScenarioError::Check)?;
            let o = p.outcome;
            if o.pass {
                (true, format!("{} after {:.1} ms", o.expected, ms(t)), None)
            } else {
                let actual = match &p.ended {
                    Some(end) => format!(
                        "{}, while waiting ({:.0} ms of {timeout_ms}); seen: {}",
                        ended(report, end),
                        ms(t),
                        o.actual
                    ),
                    None => format!("not within {timeout_ms} ms; seen: {}", o.actual),
                };
                let summary = match &p.ended {
                    Some(end) => format!("{}, while waiting for {}", end.says, o.expected),
                    None => format!("timed out waiting for {}: {actual}", o.expected),
                };
                let f = failure(step, o.expected.clone(), actual, o.event_ids);
                (false, summary, Some(f))
            }
        }
        StepKind::Assert(check) => {
            // A negative check is read once, after a settle: waiting
            // cannot prove an absence.
            let within = if check.is_negative() {
                0
            } else {
                check.within_ms
            };
            let deadline = t + Duration::from_millis(within);
            let p = waits::poll(mgr, id, check, *window, deadline, &mut report.warnings, ui)
                .map_err(ScenarioError::Check)?;
            let o = p.outcome;
            if o.pass {
                (true, format!("{} ({})", o.expected, o.actual), None)
            } else {
                let actual = match &p.ended {
                    Some(end) if !check.is_negative() => {
                        format!("{}; {} before it held", o.actual, ended(report, end))
                    }
                    _ => o.actual.clone(),
                };
                let summary = format!("expected {}, but {actual}", o.expected);
                let f = failure(step, o.expected.clone(), actual, o.event_ids);
                (false, summary, Some(f))
            }
        }
    })
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

/// The reply's short text: the verdict first, then what to do next.
pub fn render(r: &Report) -> String {
    let next = match &r.ended {
        Some(how) => format!("The session is over: {how}."),
        None => format!(
            "The program is still running in session {}: investigate with debug_query, debug_trace, debug_memory.",
            r.session_id
        ),
    };
    let mut text = match &r.failure {
        None => {
            let mut t = format!(
                "Scenario {:?} passed: {} step(s) in {:.0} ms.",
                r.name, r.steps_total, r.elapsed_ms
            );
            if r.ended.is_some() {
                t.push(' ');
                t.push_str(&next);
            }
            t
        }
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
                "Scenario {:?} FAILED at step {}/{}: {}\nExpected: {}\nActual: {}{ids}\n{next}",
                r.name, f.step, r.steps_total, f.text, f.expected, f.actual
            )
        }
    };
    let mut previous = 0;
    for s in &r.steps {
        if s.step > previous + 1 {
            text.push_str(&format!(
                "\n  … {} passing step(s) left out: each is a scenario_step event \
                 (debug_query {{sessionId: {:?}, eventType: \"scenario_step\"}})",
                s.step - previous - 1,
                r.session_id
            ));
        }
        previous = s.step;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn step(n: usize, ok: bool) -> StepResult {
        StepResult {
            step: n,
            text: "x".repeat(5_000),
            ok,
            summary: "y".repeat(5_000),
            elapsed_ms: 0.0,
        }
    }

    /// The most a report can hold — as many steps as a scenario may have,
    /// each with long text, a long failure, many warnings — renders within
    /// the reply budget and says what it left out.
    #[test]
    fn a_long_run_renders_within_the_budget() {
        let n = crate::spec::MAX_STEPS;
        let mut r = Report {
            name: crate::clip(&"n".repeat(900), NOTE_CHARS),
            session_id: "s".into(),
            passed: false,
            steps_total: n,
            steps: Vec::new(),
            steps_omitted: 0,
            failure: None,
            elapsed_ms: 0.0,
            warnings: (0..50)
                .map(|i| format!("{i}{}", "w".repeat(2_000)))
                .collect(),
            ended: Some(
                waits::End {
                    says: "e".repeat(9_000),
                    stopped: false,
                    kept: true,
                }
                .note(),
            ),
        };
        for i in 1..=n {
            let s = step(i, i < n);
            r.steps.push(StepResult {
                text: crate::clip(&s.text, STEP_CHARS),
                summary: crate::clip(&s.summary, STEP_CHARS),
                ..s
            });
        }
        r.failure = Some(Failure {
            step: n,
            text: crate::clip(&"t".repeat(9_000), FAILURE_CHARS),
            expected: crate::clip(&"e".repeat(9_000), FAILURE_CHARS),
            actual: crate::clip(&"a".repeat(9_000), FAILURE_CHARS),
            event_ids: vec![1, 2, 3, 4, 5],
        });
        let r = finish(r, Instant::now());
        assert_eq!(r.steps.len(), HEAD_SHOWN + TAIL_SHOWN);
        assert_eq!(r.steps_omitted, n - HEAD_SHOWN - TAIL_SHOWN);
        assert_eq!(r.steps.last().unwrap().step, n, "the failing step is shown");
        let text = render(&r);
        assert!(
            text.chars().count() <= REPLY_CHARS,
            "{} characters",
            text.chars().count()
        );
        assert!(
            text.contains(&format!(
                "… {} passing step(s) left out",
                n - HEAD_SHOWN - TAIL_SHOWN
            )),
            "{text}"
        );
        assert!(text.contains("40 more warning(s) left out"), "{text}");
    }
}
