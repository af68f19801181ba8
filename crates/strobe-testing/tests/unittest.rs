//! The unittest adapter over output captured from `python3 -m unittest -v`
//! (Python 3.11) on a module with a passing, a failing, an erroring and a
//! skipped test (`tests/output/unittest_mixed.stderr`).

use strobe_testing::adapters::unittest::UnittestAdapter;
use strobe_testing::{Stream, TestAdapter, TestStatus, TestTarget};

const MIXED: &str = include_str!("output/unittest_mixed.stderr");

#[test]
fn a_mixed_run_is_counted_and_its_failures_located() {
    let mut parser = UnittestAdapter.parser();
    for l in MIXED.lines() {
        parser.line(Stream::Stderr, l);
    }
    let r = parser.finish(Some(1));
    assert_eq!(r.framework, "unittest");
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (1, 2, 1)
    );
    assert_eq!(r.error, None);
    let skipped = r
        .tests
        .iter()
        .find(|t| t.status == TestStatus::Skipped)
        .unwrap();
    assert_eq!(skipped.name, "test_calc.CalcTests.test_slow");

    let fail = r
        .failures
        .iter()
        .find(|f| f.name == "test_calc.CalcTests.test_fails")
        .unwrap();
    assert_eq!(fail.file.as_deref(), Some("/home/user/calc/test_calc.py"));
    assert_eq!(fail.line, Some(11));
    assert_eq!(fail.message, "AssertionError: 2 != 3");
    assert_eq!(fail.frames, ["test_fails"]);

    // An error is placed where it was raised, in the project's code.
    let error = r
        .failures
        .iter()
        .find(|f| f.name == "test_calc.CalcTests.test_parse_error")
        .unwrap();
    assert_eq!(error.file.as_deref(), Some("/home/user/calc/calc.py"));
    assert_eq!(error.line, Some(6));
    assert_eq!(
        error.message,
        "ValueError: invalid literal for int() with base 10: 'x'"
    );
    assert_eq!(error.frames, ["parse", "test_parse_error"]);
}

#[test]
fn failures_are_known_as_their_report_arrives() {
    let mut parser = UnittestAdapter.parser();
    for l in MIXED.lines().take_while(|l| !l.starts_with("Ran ")) {
        parser.line(Stream::Stderr, l);
    }
    // The run is cut before its summary: both failures were reported.
    let r = parser.finish(None);
    assert_eq!(r.failures.len(), 2);
    assert!(
        r.failures.iter().all(|f| f.line.is_some()),
        "{:?}",
        r.failures
    );
}

/// Shapes from more-itertools 10.5.0's suite (`python3 -m unittest -v`,
/// tests/real_software): a test with a docstring (its name alone, then the
/// docstring's first line with the outcome), a doctest added by
/// `load_tests`, and a warning printed while a test ran, which pushes the
/// outcome to a line of its own.
#[test]
fn docstrings_doctests_and_warnings_mid_line_still_count() {
    let output = "\
test_call_once (tests.test_more.AdjacentTests.test_call_once)
Test that the predicate is only called once per item. ... ok
test_strict (tests.test_more.SortTogetherTest.test_strict) ... /src/more.py:1742: DeprecationWarning: zip_equal will be removed
  warnings.warn(
ok
test_uneven (tests.test_more.SortTogetherTest.test_uneven)
tests trimming (of iterables) ... FAIL
adjacent (more_itertools.more)
Doctest: more_itertools.more.adjacent ... ok
test_plain (tests.test_more.ZipEqualTest.test_plain) ... skipped 'no reason'
----------------------------------------------------------------------
Ran 5 tests in 0.010s

FAILED (failures=1, skipped=1)";
    let mut parser = UnittestAdapter.parser();
    for l in output.lines() {
        parser.line(Stream::Stderr, l);
    }
    let r = parser.finish(Some(1));
    let names: Vec<(&str, TestStatus)> = r
        .tests
        .iter()
        .map(|t| (t.name.as_str(), t.status))
        .collect();
    assert_eq!(
        names,
        [
            (
                "tests.test_more.AdjacentTests.test_call_once",
                TestStatus::Passed
            ),
            (
                "tests.test_more.SortTogetherTest.test_strict",
                TestStatus::Passed
            ),
            (
                "tests.test_more.SortTogetherTest.test_uneven",
                TestStatus::Failed
            ),
            ("more_itertools.more.adjacent", TestStatus::Passed),
            (
                "tests.test_more.ZipEqualTest.test_plain",
                TestStatus::Skipped
            ),
        ]
    );
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (3, 1, 1)
    );
}

#[test]
fn detection_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(UnittestAdapter.detect(&TestTarget::new(dir.path())), 0);
    std::fs::write(dir.path().join("test_x.py"), "").unwrap();
    assert_eq!(UnittestAdapter.detect(&TestTarget::new(dir.path())), 60);
    assert_eq!(
        strobe_testing::choose(&TestTarget::new(dir.path()), None)
            .unwrap()
            .name(),
        "unittest"
    );
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    assert_eq!(
        strobe_testing::choose(&TestTarget::new(dir.path()), None)
            .unwrap()
            .name(),
        "cargo",
        "the more confident adapter wins"
    );
    let one = UnittestAdapter.single_test_command(&TestTarget::new(dir.path()), "test_x.T.test_a");
    assert_eq!(one.display(), "python3 -m unittest -v test_x.T.test_a");
    std::fs::create_dir_all(dir.path().join("tests/unit")).unwrap();
    let unit = UnittestAdapter.suite_command(
        &TestTarget::new(dir.path()),
        Some(strobe_testing::TestLevel::Unit),
    );
    assert_eq!(
        unit.display(),
        "python3 -m unittest -v discover -s tests/unit -t ."
    );
}
