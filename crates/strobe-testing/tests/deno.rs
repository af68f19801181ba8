//! The deno adapter over output captured from `deno test -P --reporter=tap`
//! (Deno 2.9.6, NO_COLOR) on tests/fixtures/deno_project
//! (`tests/output/deno_mixed.*`: a passing, a failing assertion, an ignored,
//! a throwing, a test with a failing step, and a passing test), and on the
//! same project with a type error (`deno_type_error.stderr`).

use strobe_testing::adapters::deno::DenoAdapter;
use strobe_testing::{Stream, TestAdapter, TestLevel, TestStatus, TestTarget};

const MIXED_OUT: &str = include_str!("output/deno_mixed.stdout");
const MIXED_ERR: &str = include_str!("output/deno_mixed.stderr");

#[test]
fn a_mixed_run_is_counted_and_its_failures_located() {
    let mut parser = DenoAdapter.parser();
    for l in MIXED_OUT.lines() {
        parser.line(Stream::Stdout, l);
    }
    for l in MIXED_ERR.lines() {
        parser.line(Stream::Stderr, l);
    }
    let r = parser.finish(Some(1));
    assert_eq!(r.framework, "deno");
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (2, 3, 1)
    );
    assert_eq!(r.error, None);
    let ignored = r.tests.iter().find(|t| t.name == "slow case").unwrap();
    assert_eq!(ignored.status, TestStatus::Skipped);
    assert_eq!(ignored.group.as_deref(), Some("./calc_test.ts"));

    // The local assertion helper is skipped: the failure is the test's line.
    let assertion = r
        .failures
        .iter()
        .find(|f| f.name == "negative numbers")
        .unwrap();
    assert_eq!(
        assertion.file.as_deref(),
        Some("/home/user/proj/calc_test.ts")
    );
    assert_eq!(assertion.line, Some(10));
    assert_eq!(
        assertion.message,
        "Error: five minus two: expected 7, got 3"
    );
    assert_eq!(assertion.frames, ["assertEquals"]);
    assert!(assertion.suggested_traces.is_empty());

    // A throw is placed where it was thrown.
    let thrown = r.failures.iter().find(|f| f.name == "parse error").unwrap();
    assert_eq!(thrown.file.as_deref(), Some("/home/user/proj/calc.ts"));
    assert_eq!(thrown.line, Some(13));
    assert_eq!(thrown.message, "Error: not a count: \"x\"");

    // "1 test step failed." says less than the step's own failure.
    let steps = r.failures.iter().find(|f| f.name == "steps").unwrap();
    assert_eq!(steps.file.as_deref(), Some("/home/user/proj/calc_test.ts"));
    assert_eq!(steps.line, Some(23));
    assert_eq!(
        steps.message,
        "step \"second step\": Error: blank counts as zero: expected 5, got 4"
    );
}

#[test]
fn failures_are_known_as_their_test_ends() {
    // The run is cut (a later test spins forever) after the first
    // failure's block: it is complete already.
    let mut parser = DenoAdapter.parser();
    for l in MIXED_OUT.lines().take_while(|l| !l.starts_with("ok 3 ")) {
        parser.line(Stream::Stdout, l);
    }
    let p = parser.progress();
    assert_eq!((p.summary.passed, p.summary.failed), (1, 1));
    assert_eq!(p.current_group.as_deref(), Some("./calc_test.ts"));
    assert_eq!(p.failures[0].line, Some(10));
    let r = parser.finish(None);
    assert_eq!(r.error, None, "tests ran: the kill is not an error");
    assert_eq!(
        r.failures[0].file.as_deref(),
        Some("/home/user/proj/calc_test.ts")
    );
}

#[test]
fn a_type_error_is_the_runs_error() {
    let mut parser = DenoAdapter.parser();
    for l in include_str!("output/deno_type_error.stderr").lines() {
        parser.line(Stream::Stderr, l);
    }
    let r = parser.finish(Some(1));
    assert!(r.tests.is_empty());
    let e = r.error.unwrap();
    assert!(
        e.starts_with("TS2322 [ERROR]: Type 'number' is not assignable to type 'string'."),
        "{e}"
    );
    assert!(e.contains("calc_test.ts:9:9"), "{e}");
    assert!(!e.contains('\x1b'), "colour codes are stripped: {e}");

    // No test modules: an empty run, not an error.
    let mut parser = DenoAdapter.parser();
    parser.line(Stream::Stderr, "error: No test modules found");
    let r = parser.finish(Some(1));
    assert_eq!((r.tests.len(), r.error), (0, None));
}

#[test]
fn a_failure_outside_any_test_is_said() {
    // TAP leaves out errors raised outside tests: the exit code tells.
    let mut parser = DenoAdapter.parser();
    for l in ["TAP version 14", "# ./a_test.ts", "ok 1 - a", "1..1"] {
        parser.line(Stream::Stdout, l);
    }
    parser.line(Stream::Stderr, "error: Test failed");
    let r = parser.finish(Some(1));
    assert!(
        r.error.unwrap().contains("error outside any test"),
        "exit 1 with every test passed"
    );
}

#[test]
fn detection_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    let target = TestTarget::new(dir.path());
    assert_eq!(DenoAdapter.detect(&target), 0);
    std::fs::write(dir.path().join("deno.jsonc"), "{}").unwrap();
    assert_eq!(DenoAdapter.detect(&target), 90);
    assert_eq!(
        strobe_testing::choose(&target, None).unwrap().name(),
        "deno"
    );
    // A bun project that is also a Deno project: Deno is surer.
    std::fs::write(dir.path().join("bun.lock"), "{}").unwrap();
    assert_eq!(
        strobe_testing::choose(&target, None).unwrap().name(),
        "deno"
    );

    let suite = DenoAdapter.suite_command(&target, None);
    assert_eq!(suite.display(), "deno test --reporter=tap");
    assert_eq!(suite.env["NO_COLOR"], "1");
    // Permissions in the config are only granted with -P.
    std::fs::write(
        dir.path().join("deno.jsonc"),
        r#"{ "test": { "permissions": { "env": true } } }"#,
    )
    .unwrap();
    assert_eq!(
        DenoAdapter.suite_command(&target, None).display(),
        "deno test --reporter=tap -P"
    );
    std::fs::create_dir_all(dir.path().join("tests/integration")).unwrap();
    assert_eq!(
        DenoAdapter
            .suite_command(&target, Some(TestLevel::Integration))
            .display(),
        "deno test --reporter=tap -P ./tests/integration"
    );
    let one = DenoAdapter.single_test_command(&target, "parse error");
    assert_eq!(
        one.args,
        [
            "test",
            "--reporter=tap",
            "-P",
            "--filter",
            "/^parse error$/"
        ]
    );
    assert_eq!(one.cwd, dir.path());
}
