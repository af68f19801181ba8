//! The vitest adapter over output captured from real `vitest run` (5.1)
//! runs with Strobe's reporter and setup file on
//! tests/fixtures/vitest_project (`tests/output/vitest_*`, the project's
//! path replaced by /home/user/proj): the suite (a passing, a failing
//! assertion, a test whose code throws, a skipped test, and an integration
//! test), the suite with its hanging test spinning until killed, and the
//! suite with a test file whose import fails.

use strobe_testing::adapters::vitest::VitestAdapter;
use strobe_testing::{OutputParser, Stream, TestAdapter, TestLevel, TestStatus, TestTarget};

const MIXED_OUT: &str = include_str!("output/vitest_mixed.stdout");
const MIXED_ERR: &str = include_str!("output/vitest_mixed.stderr");
const HANG_OUT: &str = include_str!("output/vitest_hang.stdout");
const BROKEN_OUT: &str = include_str!("output/vitest_broken.stdout");
const BROKEN_ERR: &str = include_str!("output/vitest_broken.stderr");

fn feed(parser: &mut dyn OutputParser, out: &str, err: &str) {
    for l in out.lines() {
        parser.line(Stream::Stdout, l);
    }
    for l in err.lines() {
        parser.line(Stream::Stderr, l);
    }
}

#[test]
fn a_mixed_run_is_counted_once_and_its_failures_located() {
    // Each test that ran is reported twice, by the worker at once and by
    // the reporter later: counted once.
    let mut parser = VitestAdapter.parser();
    feed(parser.as_mut(), MIXED_OUT, MIXED_ERR);
    let r = parser.finish(Some(1));
    assert_eq!(r.framework, "vitest");
    assert_eq!(r.error, None);
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (3, 2, 1)
    );
    assert_eq!(r.tests.len(), 6);
    let skipped = r
        .tests
        .iter()
        .find(|t| t.status == TestStatus::Skipped)
        .unwrap();
    assert_eq!(skipped.name, "tests/unit/calc.test.js > calc > is slow");

    let fail = &r.failures[0];
    assert_eq!(
        fail.name,
        "tests/unit/calc.test.js > calc > subtracts numbers"
    );
    assert_eq!(fail.file.as_deref(), Some("tests/unit/calc.test.js"));
    assert_eq!(fail.line, Some(11));
    assert_eq!(
        fail.message,
        "AssertionError: expected 7 to be 3 // Object.is equality"
    );
    assert!(
        fail.output.starts_with("five minus two\n"),
        "{}",
        fail.output
    );
    let subtracts = r.tests.iter().find(|t| t.name == fail.name).unwrap();
    assert_eq!(subtracts.output.as_deref(), Some("five minus two\n"));
    assert!(subtracts.duration_ms.is_some(), "the reporter's duration");

    let thrown = &r.failures[1];
    assert_eq!(
        thrown.name,
        "tests/unit/calc.test.js > calc > parses numbers"
    );
    assert_eq!(
        (thrown.file.as_deref(), thrown.line),
        (Some("src/calc.js"), Some(15))
    );
    assert_eq!(thrown.message, "TypeError: not a number: x");
    assert_eq!(thrown.frames, ["parse"]);
}

#[test]
fn failures_are_known_while_a_later_test_in_the_file_hangs() {
    // Vitest's reporters had received nothing of the file (its worker sends
    // results every 100 ms, and spun first); the setup file's lines came
    // from the worker as each test ended.
    let mut parser = VitestAdapter.parser();
    feed(parser.as_mut(), HANG_OUT, "");
    let p = parser.progress();
    assert_eq!(
        p.running,
        ["tests/unit/calc.test.js > calc > hangs when asked"]
    );
    assert_eq!((p.summary.passed, p.summary.failed), (1, 2));
    let r = parser.finish(None);
    assert_eq!(r.error, None);
    assert_eq!(r.failures.len(), 2);
    assert_eq!(
        (r.failures[0].file.as_deref(), r.failures[0].line),
        (Some("tests/unit/calc.test.js"), Some(11))
    );
    assert_eq!(
        (r.failures[1].file.as_deref(), r.failures[1].line),
        (Some("src/calc.js"), Some(15))
    );
    assert_eq!(r.failures[1].message, "TypeError: not a number: x");
}

#[test]
fn a_file_that_does_not_load_is_a_failure_named_by_the_file() {
    let mut parser = VitestAdapter.parser();
    feed(parser.as_mut(), BROKEN_OUT, BROKEN_ERR);
    let r = parser.finish(Some(1));
    assert_eq!(r.error, None, "the other files' tests ran");
    let broken = r
        .failures
        .iter()
        .find(|f| f.name == "tests/unit/broken.test.js")
        .unwrap();
    assert_eq!(
        (broken.file.as_deref(), broken.line),
        (Some("tests/unit/broken.test.js"), Some(2))
    );
    assert!(
        broken
            .message
            .starts_with("Error: Cannot find module '../../src/missing.js'"),
        "{}",
        broken.message
    );
}

#[test]
fn detection_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    let target = TestTarget::new(dir.path());
    assert_eq!(VitestAdapter.detect(&target), 0);
    std::fs::write(
        dir.path().join("package.json"),
        r#"{"type": "module", "devDependencies": {"vitest": "^5"}}"#,
    )
    .unwrap();
    assert_eq!(VitestAdapter.detect(&target), 95);
    std::fs::write(dir.path().join("bun.lockb"), "").unwrap();
    assert_eq!(
        strobe_testing::choose(&target, None).unwrap().name(),
        "vitest"
    );
    // Both runners installed, the test script runs Jest.
    std::fs::write(
        dir.path().join("package.json"),
        r#"{"scripts": {"test": "jest"}, "devDependencies": {"jest": "^30", "vitest": "^5"}}"#,
    )
    .unwrap();
    assert!(VitestAdapter.detect(&target) < 92);
    std::fs::remove_file(dir.path().join("package.json")).unwrap();
    std::fs::write(dir.path().join("vitest.config.ts"), "export default {}").unwrap();
    assert_eq!(VitestAdapter.detect(&target), 95, "a config file alone");

    let suite = VitestAdapter.suite_command(&target, None);
    assert_eq!(suite.program, "vitest");
    assert_eq!(suite.args[0], "run");
    let reporter = suite.args[1].strip_prefix("--reporter=").unwrap();
    let setup = std::path::Path::new(reporter).with_file_name("vitest-setup.mjs");
    assert!(setup.is_file(), "the setup file sits beside the reporter");

    std::fs::create_dir_all(dir.path().join("tests/unit")).unwrap();
    std::fs::write(dir.path().join("tests/unit/calc.test.js"), "").unwrap();
    let one = VitestAdapter.single_test_command(&target, "tests/unit/calc.test.js > calc > adds");
    assert!(
        one.display()
            .ends_with("tests/unit/calc.test.js -t '^calc > adds$'"),
        "{}",
        one.display()
    );
    let unit = VitestAdapter.suite_command(&target, Some(TestLevel::Unit));
    assert_eq!(unit.args.last().unwrap(), "tests/unit/");
}
