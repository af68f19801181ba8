//! The jest adapter over output captured from real `jest` 30 runs with
//! Strobe's reporter on tests/fixtures/jest_project (`tests/output/jest_*`,
//! the project's path replaced by /home/user/proj): the suite (a passing,
//! a failing assertion, a test whose code throws, a skipped test, and an
//! integration test), the suite with its hanging test spinning until
//! killed, and the suite with a test file whose import fails.

use strobe_testing::adapters::jest::JestAdapter;
use strobe_testing::{OutputParser, Stream, TestAdapter, TestLevel, TestStatus, TestTarget};

const MIXED_OUT: &str = include_str!("output/jest_mixed.stdout");
const MIXED_ERR: &str = include_str!("output/jest_mixed.stderr");
const HANG_OUT: &str = include_str!("output/jest_hang.stdout");
const BROKEN_OUT: &str = include_str!("output/jest_broken.stdout");
const BROKEN_ERR: &str = include_str!("output/jest_broken.stderr");

fn feed(parser: &mut dyn OutputParser, out: &str, err: &str) {
    for l in out.lines() {
        parser.line(Stream::Stdout, l);
    }
    for l in err.lines() {
        parser.line(Stream::Stderr, l);
    }
}

#[test]
fn a_mixed_run_is_counted_and_its_failures_located() {
    let mut parser = JestAdapter.parser();
    feed(parser.as_mut(), MIXED_OUT, MIXED_ERR);
    let r = parser.finish(Some(1));
    assert_eq!(r.framework, "jest");
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
    assert_eq!(skipped.name, "tests/unit/calc.test.js › calc › is slow");
    assert_eq!(skipped.group.as_deref(), Some("tests/unit/calc.test.js"));

    let fail = &r.failures[0];
    assert_eq!(
        fail.name,
        "tests/unit/calc.test.js › calc › subtracts numbers"
    );
    assert_eq!(fail.file.as_deref(), Some("tests/unit/calc.test.js"));
    assert_eq!(fail.line, Some(10));
    assert_eq!(
        fail.message,
        "expect(received).toBe(expected) // Object.is equality\n\nExpected: 3\nReceived: 7"
    );
    // A throw is placed where the project's code threw it.
    let thrown = &r.failures[1];
    assert_eq!(
        thrown.name,
        "tests/unit/calc.test.js › calc › parses numbers"
    );
    assert_eq!(thrown.file.as_deref(), Some("src/calc.js"));
    assert_eq!(thrown.line, Some(15));
    assert_eq!(thrown.message, "TypeError: not a number: x");
    assert_eq!(thrown.frames, ["parse", "Object.parse"]);
    // Its instrumented rerun traces the file it threw in.
    assert_eq!(JestAdapter.suggest_traces(thrown), ["@file:calc.js"]);
    // An assertion in the test itself suggests nothing.
    assert!(JestAdapter.suggest_traces(&r.failures[0]).is_empty());
}

#[test]
fn failures_are_known_while_a_later_test_in_the_file_hangs() {
    // Jest's own reporters had printed nothing of the file when it was
    // killed; Strobe's reported each test as it ended.
    let mut parser = JestAdapter.parser();
    feed(parser.as_mut(), HANG_OUT, "");
    let p = parser.progress();
    assert_eq!(
        p.running,
        ["tests/unit/calc.test.js › calc › hangs when asked"]
    );
    assert_eq!(p.current_group.as_deref(), Some("tests/unit/calc.test.js"));
    assert_eq!((p.summary.passed, p.summary.failed), (1, 2));
    let r = parser.finish(None);
    assert_eq!(r.error, None);
    assert_eq!(r.failures.len(), 2);
    assert_eq!(
        (r.failures[0].file.as_deref(), r.failures[0].line),
        (Some("tests/unit/calc.test.js"), Some(10))
    );
    assert_eq!(
        (r.failures[1].file.as_deref(), r.failures[1].line),
        (Some("src/calc.js"), Some(15))
    );
}

#[test]
fn a_file_that_does_not_load_is_a_failure_named_by_the_file() {
    let mut parser = JestAdapter.parser();
    feed(parser.as_mut(), BROKEN_OUT, BROKEN_ERR);
    let r = parser.finish(Some(1));
    assert_eq!(r.error, None, "the other files' tests ran");
    assert_eq!((r.summary.passed, r.summary.failed), (3, 3));
    let broken = r
        .failures
        .iter()
        .find(|f| f.name == "tests/unit/broken.test.js")
        .unwrap();
    assert_eq!(broken.file.as_deref(), Some("tests/unit/broken.test.js"));
    assert_eq!(broken.line, Some(1));
    assert!(
        broken
            .message
            .starts_with("Cannot find module '../../src/missing'"),
        "{}",
        broken.message
    );

    // Nothing but the broken file: that is the run's error.
    let mut parser = JestAdapter.parser();
    for l in BROKEN_OUT
        .lines()
        .filter(|l| !l.contains("\"event\":\"result\"") && !l.contains("\"event\":\"start\""))
    {
        parser.line(Stream::Stdout, l);
    }
    let r = parser.finish(Some(1));
    assert!(r.error.unwrap().contains("Cannot find module"));
}

#[test]
fn a_runner_that_never_starts_reports_why() {
    let mut parser = JestAdapter.parser();
    parser.line(Stream::Stderr, "● Validation Error:");
    parser.line(
        Stream::Stderr,
        "  Module ./nope.js in the setupFiles option was not found.",
    );
    let r = parser.finish(Some(1));
    let e = r.error.unwrap();
    assert!(
        e.contains("exited with code 1") && e.contains("nope.js"),
        "{e}"
    );
    // No test files: zero counts, no error (--passWithNoTests exits 0).
    let mut parser = JestAdapter.parser();
    parser.line(
        Stream::Stdout,
        r#"@strobe {"event":"run","runner":"jest","root":"/p"}"#,
    );
    parser.line(Stream::Stdout, r#"@strobe {"event":"end","errors":[]}"#);
    let r = parser.finish(Some(0));
    assert_eq!((r.error, r.tests.len()), (None, 0));
}

#[test]
fn detection_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    let target = TestTarget::new(dir.path());
    assert_eq!(JestAdapter.detect(&target), 0);
    std::fs::write(dir.path().join("package.json"), r#"{"name": "x"}"#).unwrap();
    assert_eq!(JestAdapter.detect(&target), 0, "a package.json alone");
    std::fs::write(
        dir.path().join("package.json"),
        r#"{"scripts": {"test": "jest --coverage"}, "devDependencies": {"jest": "^30"}}"#,
    )
    .unwrap();
    assert_eq!(JestAdapter.detect(&target), 92);
    std::fs::write(dir.path().join("bun.lock"), "").unwrap();
    assert_eq!(
        strobe_testing::choose(&target, None).unwrap().name(),
        "jest"
    );
    // Both runners installed, the test script says which one runs.
    std::fs::write(
        dir.path().join("package.json"),
        r#"{"scripts": {"test": "jest"}, "devDependencies": {"jest": "^30", "vitest": "^5"}}"#,
    )
    .unwrap();
    assert_eq!(
        strobe_testing::choose(&target, None).unwrap().name(),
        "jest"
    );
    std::fs::remove_file(dir.path().join("package.json")).unwrap();
    std::fs::write(dir.path().join("jest.config.js"), "module.exports = {};").unwrap();
    assert_eq!(JestAdapter.detect(&target), 92, "a config file alone");

    let suite = JestAdapter.suite_command(&target, None);
    assert_eq!(suite.program, "jest", "no local install: the one on PATH");
    assert_eq!(suite.cwd, dir.path());
    assert!(suite.args.contains(&"--ci".to_string()));
    let reporter = suite.args[1].strip_prefix("--reporters=").unwrap();
    assert!(
        std::fs::read_to_string(reporter)
            .unwrap()
            .contains("onTestCaseStart"),
        "the reporter is written where the command says"
    );
    assert_eq!(suite.args[2], "--reporters=default");

    std::fs::create_dir_all(dir.path().join("tests/unit")).unwrap();
    std::fs::write(dir.path().join("tests/unit/calc.test.js"), "").unwrap();
    let one =
        JestAdapter.single_test_command(&target, "tests/unit/calc.test.js › calc › adds (1+1)");
    assert!(
        one.display()
            .ends_with("--runTestsByPath tests/unit/calc.test.js -t '^calc adds \\(1\\+1\\)$'"),
        "{}",
        one.display()
    );
    // A name without its file, as Jest's full name.
    let by_name = JestAdapter.single_test_command(&target, "calc adds");
    assert!(by_name.display().ends_with("-t '^calc adds$'"));
    let unit = JestAdapter.suite_command(&target, Some(TestLevel::Unit));
    assert_eq!(unit.args.last().unwrap(), "/tests\\/unit/");
    let e2e = JestAdapter.suite_command(&target, Some(TestLevel::E2e));
    assert_eq!(e2e.args, suite.args, "no e2e directory: the whole suite");

    std::fs::create_dir_all(dir.path().join("node_modules/.bin")).unwrap();
    std::fs::write(dir.path().join("node_modules/.bin/jest"), "").unwrap();
    assert_eq!(
        JestAdapter.suite_command(&target, None).program,
        dir.path()
            .join("node_modules/.bin/jest")
            .display()
            .to_string()
    );
}
