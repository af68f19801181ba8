//! A finished run's result made whole: failures whose report never came
//! (the framework prints them at the end, and a hung test got the run
//! stopped) are run again alone for their details, and tests the stuck
//! detector stopped count as failed, as [`strobe_testing::TestResult`]
//! defines, whatever the framework made of the stop.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use strobe_testing::{
    Stream, TestAdapter, TestCase, TestFailure, TestResult, TestStatus, TestTarget,
};

/// Most failures run again for their details per run.
const MAX_RERUNS: usize = 5;
/// Longest one such rerun may take (it builds nothing new: the run just
/// built everything).
const RERUN_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether a failure is known by name only: no place, no message and no
/// report at all (a test that failed without a panic still has its
/// report's text).
fn lacks_details(f: &TestFailure) -> bool {
    f.message.is_empty() && f.file.is_none() && f.output.is_empty()
}

/// Runs each failure that lacks its details again alone (up to
/// [`MAX_RERUNS`], never a stuck test, which would hang again) and takes
/// its place, message, output and frames from that run. `env` is the run's
/// own environment on top of the adapter's; `on_spawn` gets each rerun's
/// process group while it runs (None after), so shutdown can stop it.
pub(super) fn fill_missing_details(
    adapter: &dyn TestAdapter,
    target: &TestTarget,
    env: &BTreeMap<String, String>,
    result: &mut TestResult,
    stuck: &[String],
    on_spawn: &dyn Fn(Option<u32>),
) {
    let wanted: Vec<String> = result
        .failures
        .iter()
        .filter(|f| lacks_details(f) && !stuck.contains(&f.name))
        .map(|f| f.name.clone())
        .take(MAX_RERUNS)
        .collect();
    for name in wanted {
        if target.cancel.is_cancelled() {
            return;
        }
        let Some(case) = result.tests.iter().find(|t| t.name == name).cloned() else {
            continue;
        };
        let Some(cmd) = adapter.details_command(target, &case) else {
            continue;
        };
        let outcome = rerun(adapter, &cmd, env, on_spawn);
        let f = result
            .failures
            .iter_mut()
            .find(|f| f.name == name)
            .expect("the failure being completed");
        let display = cmd.display();
        match outcome {
            Some(again) => match again.failures.into_iter().find(|g| g.name == name) {
                Some(g) => {
                    f.file = g.file;
                    f.line = g.line;
                    f.message = g.message;
                    f.frames = g.frames;
                    f.suggested_traces = g.suggested_traces;
                    f.output = format!(
                        "(its report never came: the run ended first; this is from `{display}`)\n{}",
                        g.output
                    );
                }
                None if passed(&again.tests, &name) => {
                    f.message = format!(
                        "failed in the run, but passed when run again alone (`{display}`): it may depend on other tests or be flaky; the run ended before the framework printed why it failed"
                    );
                }
                None => {
                    f.message = format!(
                        "the run ended before the framework printed why it failed, and `{display}` did not say either"
                    );
                }
            },
            None => {
                f.message = format!(
                    "the run ended before the framework printed why it failed, and `{display}` did not finish within {} s",
                    RERUN_TIMEOUT.as_secs()
                );
            }
        }
    }
}

fn passed(tests: &[TestCase], name: &str) -> bool {
    tests
        .iter()
        .any(|t| t.name == name && t.status == TestStatus::Passed)
}

/// Runs `cmd` in its own process group, parsing its output; `None` when
/// it did not end within [`RERUN_TIMEOUT`] (its group is killed).
fn rerun(
    adapter: &dyn TestAdapter,
    cmd: &strobe_testing::TestCommand,
    env: &BTreeMap<String, String>,
    on_spawn: &dyn Fn(Option<u32>),
) -> Option<TestResult> {
    let mut child = Command::new(&cmd.program)
        .args(&cmd.args)
        .current_dir(&cmd.cwd)
        .envs(&cmd.env)
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .ok()?;
    let pgid = child.id();
    on_spawn(Some(pgid));
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let out = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + RERUN_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            _ => {
                // SAFETY: killing the process group this rerun created.
                unsafe { libc::kill(-(pgid as i32), libc::SIGKILL) };
                let _ = child.wait();
                break None;
            }
        }
    };
    on_spawn(None);
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    let status = status?;
    let mut parser = adapter.parser();
    // Headers (stderr) before results (stdout), as they come live.
    for l in err.lines() {
        parser.line(Stream::Stderr, l);
    }
    for l in out.lines() {
        parser.line(Stream::Stdout, l);
    }
    Some(parser.finish(status.code()))
}

/// Makes every test the stuck detector stopped a failure, counted once:
/// added when the framework never reported it (libtest), turned failed
/// when it reported otherwise, and placed at the test's own frame in its
/// stacks (a place outside the project, like pytest's `threading.py` line
/// where SIGINT landed, says nothing and is dropped).
pub(super) fn count_stuck_as_failed(
    result: &mut TestResult,
    stuck: &[Value],
    project_root: &std::path::Path,
) {
    for report in stuck {
        // A report that names no test (neither the framework nor the stacks
        // did) still stands for one: the thread's or the program's name.
        let fallback = report["name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .map(|n| vec![json!({ "name": n })])
            .unwrap_or_default();
        let tests = match report["tests"].as_array() {
            Some(t) if !t.is_empty() => t,
            _ => &fallback,
        };
        for t in tests {
            let Some(name) = t["name"].as_str() else {
                continue;
            };
            match result.tests.iter_mut().find(|c| c.name == name) {
                Some(c) if c.status == TestStatus::Failed => {}
                Some(c) => {
                    let old = match c.status {
                        TestStatus::Passed => &mut result.summary.passed,
                        _ => &mut result.summary.skipped,
                    };
                    *old = old.saturating_sub(1);
                    result.summary.failed += 1;
                    c.status = TestStatus::Failed;
                }
                None => {
                    result.summary.failed += 1;
                    result.tests.push(TestCase {
                        name: name.to_string(),
                        status: TestStatus::Failed,
                        duration_ms: None,
                        group: report["group"].as_str().map(str::to_string),
                        output: None,
                    });
                }
            }
            let i = match result.failures.iter().position(|f| f.name == name) {
                Some(i) => i,
                None => {
                    result.failures.push(TestFailure::new(name));
                    result.failures.len() - 1
                }
            };
            let f = &mut result.failures[i];
            match t["file"].as_str() {
                Some(file) => {
                    f.file = Some(file.to_string());
                    f.line = t["line"].as_u64().map(|l| l as u32);
                }
                None if f
                    .file
                    .as_deref()
                    .is_some_and(|file| !crate::stuck::own_frame(file, project_root)) =>
                {
                    f.file = None;
                    f.line = None;
                }
                None => {}
            }
            let said = std::mem::take(&mut f.message);
            f.message = stuck_message(report);
            if !said.is_empty() {
                f.message.push_str("\nThe framework said: ");
                f.message.push_str(&said);
            }
        }
    }
}

/// What a stuck test's failure says: the verdict, where its threads wait,
/// and how to get stacks when there were none.
fn stuck_message(report: &Value) -> String {
    let verdict = match report["verdict"].as_str() {
        Some("deadlock") => "deadlock",
        Some("infiniteLoop") => "infinite loop",
        _ => "timeout",
    };
    let secs = report["silentForMs"].as_u64().unwrap_or(0) as f64 / 1000.0;
    let mut m = format!("stuck ({verdict}): no output for {secs:.1} s, stopped by Strobe");
    let sites: Vec<&str> = report["waitsAt"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !sites.is_empty() {
        m.push_str("; its threads are at ");
        m.push_str(&sites.join(", "));
    }
    if let Some(hint) = report["stacksUnavailable"].as_str() {
        m.push_str("; no stacks: ");
        m.push_str(hint);
    }
    m
}

/// The text a completed run's reply shows: its counts, its error (the
/// reason it failed without a failing test, which counts cannot show),
/// then each failure.
pub fn completed_text(v: &Value) -> String {
    let id = v["testRunId"].as_str().unwrap_or("?");
    let n = |k: &str| v["summary"][k].as_u64().unwrap_or(0);
    let mut text = format!(
        "{id}: {} passed, {} failed, {} skipped",
        n("passed"),
        n("failed"),
        n("skipped")
    );
    if n("stuck") > 0 {
        text.push_str(&format!(" ({} stopped as stuck)", n("stuck")));
    }
    if let Some(e) = v["error"].as_str() {
        text.push_str("\nERROR: ");
        text.push_str(e);
    } else if v["noTests"] == true {
        text.push_str("\nNo tests ran: ");
        text.push_str(v["hint"].as_str().unwrap_or(""));
    }
    for f in v["failures"].as_array().into_iter().flatten() {
        let at = match (f["file"].as_str(), f["line"].as_u64()) {
            (Some(file), Some(line)) => format!(" at {file}:{line}"),
            (Some(file), None) => format!(" in {file}"),
            _ => String::new(),
        };
        text.push_str(&format!(
            "\nFAILED {}{at}: {}",
            f["name"].as_str().unwrap_or("?"),
            f["message"].as_str().unwrap_or("")
        ));
    }
    text
}

/// A completed run that never ran its tests, for `status`.
pub(super) fn failed_result(
    id: &str,
    framework: &str,
    error: &str,
    session: Option<&str>,
) -> Value {
    json!({
        "testRunId": id,
        "status": "completed",
        "framework": framework,
        "summary": {"passed": 0, "failed": 0, "skipped": 0, "stuck": 0},
        "failures": [],
        "error": error,
        "sessionId": session,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(tests: Vec<TestCase>, failures: Vec<TestFailure>) -> TestResult {
        let mut summary = strobe_testing::Summary::default();
        for t in &tests {
            match t.status {
                TestStatus::Passed => summary.passed += 1,
                TestStatus::Failed => summary.failed += 1,
                TestStatus::Skipped => summary.skipped += 1,
            }
        }
        TestResult {
            framework: "x".into(),
            summary,
            tests,
            failures,
            exit_code: None,
            error: None,
        }
    }

    fn case(name: &str, status: TestStatus) -> TestCase {
        TestCase {
            name: name.into(),
            status,
            duration_ms: None,
            group: None,
            output: None,
        }
    }

    fn report(name: &str, file: Option<&str>) -> Value {
        json!({
            "tests": [{"name": name, "file": file, "line": file.map(|_| 16)}],
            "group": "unittests src/lib.rs",
            "verdict": "deadlock",
            "silentForMs": 6500,
            "waitsAt": ["calc.py:23 (transfer)"],
        })
    }

    #[test]
    fn a_stuck_test_the_framework_never_reported_is_added_as_failed() {
        // libtest: the stopped binary never printed the hung test's line.
        let mut r = result(vec![case("tests::ok", TestStatus::Passed)], vec![]);
        count_stuck_as_failed(
            &mut r,
            &[report("tests::hangs", Some("src/lib.rs"))],
            "/p".as_ref(),
        );
        assert_eq!((r.summary.passed, r.summary.failed), (1, 1));
        let t = r.tests.iter().find(|t| t.name == "tests::hangs").unwrap();
        assert_eq!(t.group.as_deref(), Some("unittests src/lib.rs"));
        let f = &r.failures[0];
        assert_eq!((f.file.as_deref(), f.line), (Some("src/lib.rs"), Some(16)));
        assert!(f.message.starts_with("stuck (deadlock)"), "{}", f.message);
        assert!(f.message.contains("calc.py:23 (transfer)"), "{}", f.message);
    }

    #[test]
    fn a_stuck_test_the_framework_reported_failed_is_counted_once_and_placed_in_the_test() {
        // pytest: SIGINT made it a failure located in the standard library.
        let mut f = TestFailure::new("t.py::test_x");
        f.file = Some("/usr/lib/python3.11/threading.py".into());
        f.line = Some(1139);
        f.message = "did not finish: interrupted (KeyboardInterrupt)".into();
        let mut r = result(vec![case("t.py::test_x", TestStatus::Failed)], vec![f]);
        count_stuck_as_failed(
            &mut r,
            &[report("t.py::test_x", Some("t.py"))],
            "/p".as_ref(),
        );
        assert_eq!(r.summary.failed, 1);
        assert_eq!(r.failures.len(), 1);
        let f = &r.failures[0];
        assert_eq!((f.file.as_deref(), f.line), (Some("t.py"), Some(16)));
        assert!(f.message.contains("KeyboardInterrupt"), "{}", f.message);

        // Without stacks, a place outside the project is dropped.
        let mut f = TestFailure::new("t.py::test_x");
        f.file = Some("/usr/lib/python3.11/threading.py".into());
        let mut r = result(vec![case("t.py::test_x", TestStatus::Failed)], vec![f]);
        count_stuck_as_failed(&mut r, &[report("t.py::test_x", None)], "/p".as_ref());
        assert_eq!(r.failures[0].file, None);
    }

    #[test]
    fn a_stuck_report_that_names_no_test_still_counts_one_failed() {
        // generic or catch2: no running list and no test names in the stacks.
        let mut r = result(vec![case("a", TestStatus::Passed)], vec![]);
        let mut rep = report("unused", None);
        rep["tests"] = json!([]);
        rep["name"] = json!("./run_tests");
        count_stuck_as_failed(&mut r, &[rep], "/p".as_ref());
        assert_eq!((r.summary.passed, r.summary.failed), (1, 1));
        assert_eq!(r.failures[0].name, "./run_tests");
    }

    /// Runs cargo's parser over a canned libtest report instead of cargo.
    struct Rerunning;

    impl TestAdapter for Rerunning {
        fn name(&self) -> &'static str {
            "fake"
        }
        fn title(&self) -> &'static str {
            "fake"
        }
        fn ecosystem(&self) -> strobe_testing::Ecosystem {
            strobe_testing::Ecosystem::Any
        }
        fn detect(&self, _: &TestTarget) -> u8 {
            0
        }
        fn suite_command(
            &self,
            target: &TestTarget,
            _: Option<strobe_testing::TestLevel>,
        ) -> strobe_testing::TestCommand {
            self.single_test_command(target, "")
        }
        fn single_test_command(&self, target: &TestTarget, _: &str) -> strobe_testing::TestCommand {
            strobe_testing::TestCommand {
                program: "true".into(),
                args: Vec::new(),
                cwd: target.root.clone(),
                env: BTreeMap::new(),
            }
        }
        fn parser(&self) -> Box<dyn strobe_testing::OutputParser> {
            strobe_testing::adapters::cargo::CargoAdapter.parser()
        }
        fn suggest_traces(&self, _: &TestFailure) -> Vec<String> {
            Vec::new()
        }
        fn details_command(
            &self,
            target: &TestTarget,
            test: &TestCase,
        ) -> Option<strobe_testing::TestCommand> {
            let report = format!(
                "running 1 test\ntest {0} ... FAILED\n\nfailures:\n\n---- {0} stdout ----\n\n\
                 thread '{0}' (7) panicked at src/lib.rs:11:9:\nbalance of $WHO is wrong\nnote: run with RUST_BACKTRACE=1\n\n\
                 failures:\n    {0}\n\ntest result: FAILED. 0 passed; 1 failed\n",
                test.name
            );
            let mut cmd = self.single_test_command(target, &test.name);
            cmd.program = "sh".into();
            // An unquoted here-document: $WHO expands, quotes stay.
            cmd.args = vec!["-c".into(), format!("cat <<EOF\n{report}EOF\n")];
            Some(cmd)
        }
    }

    #[test]
    fn a_failure_without_its_report_gets_it_from_a_rerun_with_the_runs_env() {
        let mut reported = TestFailure::new("tests::reported");
        reported.output = "Error: it returned Err\n".into();
        let mut r = result(
            vec![
                case("tests::fails", TestStatus::Failed),
                case("tests::reported", TestStatus::Failed),
                case("tests::hangs", TestStatus::Failed),
            ],
            vec![
                TestFailure::new("tests::fails"),
                reported,
                TestFailure::new("tests::hangs"),
            ],
        );
        let env = BTreeMap::from([("WHO".to_string(), "alice".to_string())]);
        let spawned = std::sync::Mutex::new(Vec::new());
        fill_missing_details(
            &Rerunning,
            &TestTarget::new("/"),
            &env,
            &mut r,
            &["tests::hangs".to_string()],
            &|pgid| spawned.lock().unwrap().push(pgid),
        );
        let f = &r.failures[0];
        assert_eq!((f.file.as_deref(), f.line), (Some("src/lib.rs"), Some(11)));
        assert_eq!(f.message, "balance of alice is wrong");
        // A failure with a report, and the stuck test, are not rerun.
        assert_eq!(r.failures[1].message, "");
        assert_eq!(r.failures[2].message, "");
        let spawned = spawned.into_inner().unwrap();
        assert_eq!(
            spawned.len(),
            2,
            "one rerun, its group then none: {spawned:?}"
        );
        assert_eq!(spawned[1], None);
    }

    #[test]
    fn a_failed_run_shows_its_error_not_null_counts() {
        let v = failed_result("test-cargo-2", "cargo", "Name one test", None);
        let text = completed_text(&v);
        assert!(!text.contains("null"), "{text}");
        assert!(text.contains("ERROR: Name one test"), "{text}");
        let v = json!({"testRunId": "test-cargo-1", "summary": {"passed": 0, "failed": 0, "skipped": 0},
            "error": "error: could not find `Cargo.toml` in `/tmp/x` or any parent directory"});
        assert!(completed_text(&v).contains("could not find `Cargo.toml`"));
    }
}
