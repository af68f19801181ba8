//! The mocha adapter over output captured from real `mocha` 12 runs with
//! Strobe's reporter on tests/fixtures/mocha_project (`tests/output/mocha_*`,
//! the project's path replaced by /home/user/proj): the suite (a passing, a
//! failing assertion, a test whose code throws, a skipped test, and an
//! integration test), the suite with its hanging test spinning until
//! killed, and the suite with a spec file whose `require` fails.

use strobe_testing::adapters::mocha::MochaAdapter;
use strobe_testing::{OutputParser, Stream, TestAdapter, TestLevel, TestStatus, TestTarget};

const MIXED_OUT: &str = include_str!("output/mocha_mixed.stdout");
const HANG_OUT: &str = include_str!("output/mocha_hang.stdout");
const BROKEN_ERR: &str = include_str!("output/mocha_broken.stderr");
const TIMEOUT_HOOK_OUT: &str = include_str!("output/mocha_timeout_hook.stdout");

fn feed(parser: &mut dyn OutputParser, out: &str) {
    for l in out.lines() {
        parser.line(Stream::Stdout, l);
    }
}

#[test]
fn a_mixed_run_is_counted_and_its_failures_located() {
    let mut parser = MochaAdapter.parser();
    feed(parser.as_mut(), MIXED_OUT);
    let r = parser.finish(Some(2));
    assert_eq!(r.framework, "mocha");
    assert_eq!(r.error, None);
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (3, 2, 1)
    );
    let skipped = r
        .tests
        .iter()
        .find(|t| t.status == TestStatus::Skipped)
        .unwrap();
    assert_eq!(skipped.name, "test/unit/calc.spec.js > calc > is slow");

    let fail = &r.failures[0];
    assert_eq!(
        fail.name,
        "test/unit/calc.spec.js > calc > subtracts numbers"
    );
    assert_eq!(fail.file.as_deref(), Some("test/unit/calc.spec.js"));
    assert_eq!(fail.line, Some(11));
    assert_eq!(
        fail.message,
        "AssertionError: Expected values to be strictly equal:\n\n7 !== 3"
    );
    // Printed while it ran: its own output.
    let subtracts = r.tests.iter().find(|t| t.name == fail.name).unwrap();
    assert_eq!(subtracts.output.as_deref(), Some("five minus two\n"));

    let thrown = &r.failures[1];
    assert_eq!(
        (thrown.file.as_deref(), thrown.line),
        (Some("src/calc.js"), Some(15))
    );
    assert_eq!(thrown.message, "TypeError: not a number: x");
    assert_eq!(thrown.frames, ["parse", "Context.<anonymous>"]);
    assert_eq!(MochaAdapter.suggest_traces(thrown), ["@file:calc.js"]);
}

#[test]
fn failures_are_known_while_a_later_test_hangs() {
    let mut parser = MochaAdapter.parser();
    feed(parser.as_mut(), HANG_OUT);
    let p = parser.progress();
    assert_eq!(
        p.running,
        ["test/unit/calc.spec.js > calc > hangs when asked"]
    );
    let r = parser.finish(None);
    assert_eq!(r.error, None);
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (2, 2, 1)
    );
    assert!(
        r.failures.iter().all(|f| f.line.is_some()),
        "{:?}",
        r.failures
    );
}

#[test]
fn a_timeout_is_in_its_test_file_and_a_failing_hook_fails_its_file() {
    // `mocha --timeout 200` on a test whose promise never settles, and a
    // suite whose `before` hook throws.
    let mut parser = MochaAdapter.parser();
    feed(parser.as_mut(), TIMEOUT_HOOK_OUT);
    let r = parser.finish(Some(2));
    assert_eq!(r.error, None);
    assert_eq!((r.summary.passed, r.summary.failed), (0, 2));
    let timeout = &r.failures[0];
    assert_eq!(timeout.name, "test/wait.spec.js > waiting > never resolves");
    // Only Node's timer frames: no line, but the file.
    assert_eq!(
        (timeout.file.as_deref(), timeout.line),
        (Some("test/wait.spec.js"), None)
    );
    assert!(
        timeout
            .message
            .starts_with("Error: Timeout of 200ms exceeded")
    );
    let hook = &r.failures[1];
    assert_eq!(
        hook.name, "test/wait.spec.js",
        "rerunning it reruns the file"
    );
    assert_eq!(
        (hook.file.as_deref(), hook.line),
        (Some("test/wait.spec.js"), Some(9))
    );
    assert_eq!(
        hook.message,
        "setup > \"before all\" hook for \"is never run\": Error: no database"
    );
}

#[test]
fn a_spec_that_does_not_load_fails_the_run() {
    // Mocha loads every file before running any test: nothing ran.
    let mut parser = MochaAdapter.parser();
    for l in BROKEN_ERR.lines() {
        parser.line(Stream::Stderr, l);
    }
    let r = parser.finish(Some(1));
    let e = r.error.unwrap();
    assert!(e.contains("Cannot find module '../../src/missing'"), "{e}");
    // No test files at all is no error: zero counts.
    let mut parser = MochaAdapter.parser();
    parser.line(Stream::Stderr, "Error: No test files found: \"test\"");
    let r = parser.finish(Some(1));
    assert_eq!((r.error, r.tests.len()), (None, 0));
}

#[test]
fn detection_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    let target = TestTarget::new(dir.path());
    assert_eq!(MochaAdapter.detect(&target), 0);
    std::fs::write(dir.path().join(".mocharc.yml"), "spec: test/**/*.spec.js\n").unwrap();
    assert_eq!(MochaAdapter.detect(&target), 90);
    std::fs::write(
        dir.path().join("package.json"),
        r#"{"scripts": {"test": "mocha"}}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("bun.lock"), "").unwrap();
    assert_eq!(
        strobe_testing::choose(&target, None).unwrap().name(),
        "mocha"
    );

    let suite = MochaAdapter.suite_command(&target, None);
    assert_eq!(suite.program, "mocha");
    assert_eq!(suite.args[0], "--reporter");
    assert!(std::path::Path::new(&suite.args[1]).is_file());

    std::fs::create_dir_all(dir.path().join("test/unit")).unwrap();
    std::fs::create_dir_all(dir.path().join("test/integration")).unwrap();
    std::fs::write(dir.path().join("test/unit/calc.spec.js"), "").unwrap();
    let one = MochaAdapter.single_test_command(&target, "test/unit/calc.spec.js > calc > adds");
    assert!(
        one.display()
            .ends_with("test/unit/calc.spec.js --grep '^calc adds$'"),
        "{}",
        one.display()
    );
    let unit = MochaAdapter.suite_command(&target, Some(TestLevel::Unit));
    assert!(
        unit.display()
            .ends_with("--recursive --ignore 'test/integration/**' test/unit"),
        "{}",
        unit.display()
    );
}
