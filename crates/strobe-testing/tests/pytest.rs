//! The pytest adapter over output captured from `python3 -m pytest` (pytest
//! 9.2, Python 3.11) on `tests/fixtures/pytest_project`: the whole suite
//! (`pytest_mixed.stdout`), the suite with its deadlocking test interrupted
//! by SIGINT (`pytest_interrupted.stdout`), and the project with a test
//! module that cannot be imported (`pytest_collection_error.stdout`).

use strobe_testing::adapters::pytest::PytestAdapter;
use strobe_testing::{Stream, TestAdapter, TestLevel, TestResult, TestStatus, TestTarget};

const MIXED: &str = include_str!("output/pytest_mixed.stdout");
const INTERRUPTED: &str = include_str!("output/pytest_interrupted.stdout");
const COLLECTION_ERROR: &str = include_str!("output/pytest_collection_error.stdout");

fn parse(output: &str, exit_code: Option<i32>) -> TestResult {
    let mut parser = PytestAdapter.parser();
    for l in output.lines() {
        parser.line(Stream::Stdout, l);
    }
    parser.finish(exit_code)
}

fn failure<'a>(r: &'a TestResult, name: &str) -> &'a strobe_testing::TestFailure {
    r.failures
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no failure {name}: {:#?}", r.failures))
}

#[test]
fn a_mixed_run_is_counted_and_its_failures_located() {
    let r = parse(MIXED, Some(1));
    assert_eq!(r.framework, "pytest");
    assert_eq!(r.error, None);
    // 15 tests: a test with a failed subtest, or an error in teardown after
    // it passed, is one failed test; xfail counts as skipped.
    assert_eq!(r.tests.len(), 15, "{:#?}", r.tests);
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (6, 7, 2)
    );
    let skipped: Vec<&str> = r
        .tests
        .iter()
        .filter(|t| t.status == TestStatus::Skipped)
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(
        skipped,
        [
            "tests/unit/test_calc.py::test_skipped",
            "tests/unit/test_calc.py::test_empty_average"
        ]
    );
    let adds = r
        .tests
        .iter()
        .find(|t| t.name == "tests/unit/test_calc.py::test_adds")
        .unwrap();
    assert_eq!(adds.group.as_deref(), Some("tests/unit/test_calc.py"));
    assert!((adds.duration_ms.unwrap() - 0.1942).abs() < 1e-9);

    // An assertion in the test: placed there, pytest's explanation kept.
    let wrong = failure(&r, "tests/unit/test_calc.py::test_adds_wrong");
    assert_eq!(wrong.file.as_deref(), Some("tests/unit/test_calc.py"));
    assert_eq!(wrong.line, Some(14));
    assert!(
        wrong.message.starts_with("assert 4 == 5\n +  where 4 = "),
        "{}",
        wrong.message
    );
    assert_eq!(wrong.frames, ["test_adds_wrong"]);
    let printed = r
        .tests
        .iter()
        .find(|t| t.name == wrong.name)
        .and_then(|t| t.output.as_deref())
        .unwrap();
    assert!(printed.contains("adding two and two"), "{printed}");

    // An exception in the project's code: placed where it was raised.
    let error = failure(&r, "tests/unit/test_calc.py::test_parse_error");
    assert_eq!(error.file.as_deref(), Some("calc.py"));
    assert_eq!(error.line, Some(11));
    assert_eq!(
        error.message,
        "ValueError: invalid literal for int() with base 10: 'x'"
    );
    assert_eq!(error.frames, ["parse", "test_parse_error"]);

    let param = failure(&r, "tests/unit/test_calc.py::test_table[2-2-5]");
    assert_eq!(param.line, Some(33));

    // Errors in fixtures, at setup and at teardown.
    let setup = failure(&r, "tests/unit/test_calc.py::test_uses_database");
    assert_eq!(setup.line, Some(38));
    assert_eq!(
        setup.message,
        "RuntimeError: database fixture could not start"
    );
    let teardown = failure(&r, "tests/unit/test_edges.py::test_closes");
    assert_eq!(
        (teardown.file.as_deref(), teardown.line),
        (Some("tests/unit/test_edges.py"), Some(26))
    );

    // Subtests: the failed one's details, under its test's node id.
    let sub = failure(&r, "tests/unit/test_edges.py::test_each_text");
    assert_eq!((sub.file.as_deref(), sub.line), (Some("calc.py"), Some(11)));
    assert_eq!(
        sub.message,
        "subtest [parse] (text='x'): ValueError: invalid literal for int() with base 10: 'x'"
    );
    let unittest_sub = failure(&r, "tests/unit/test_edges.py::Sums::test_with_zero");
    assert_eq!(unittest_sub.line, Some(20));
    assert_eq!(
        unittest_sub.message,
        "subtest (i=1): AssertionError: 1 != 0"
    );

    assert_eq!(r.failures.len(), 7);
    // Trace suggestions are the project's own functions the traceback went
    // through, as Python patterns; test files are not suggested.
    assert_eq!(sub.suggested_traces, ["calc.parse"]);
    assert!(
        teardown.suggested_traces.is_empty(),
        "{:?}",
        teardown.suggested_traces
    );
}

#[test]
fn failed_tests_are_named_as_their_line_arrives() {
    let mut parser = PytestAdapter.parser();
    for l in MIXED
        .lines()
        .take_while(|l| !l.starts_with("====") || l.contains("starts"))
    {
        parser.line(Stream::Stdout, l);
    }
    // Every test has reported; pytest's failure reports come after the last.
    let p = parser.progress();
    assert_eq!((p.summary.passed, p.summary.failed), (7, 6));
    let names: Vec<&str> = p.failures.iter().map(|f| f.name.as_str()).collect();
    assert!(
        names.contains(&"tests/unit/test_calc.py::test_adds_wrong")
            && names.contains(&"tests/unit/test_edges.py::test_closes"),
        "{names:?}"
    );
    // The run is cut here: the names stay, without file:line.
    let r = parser.finish(None);
    assert_eq!(r.failures.len(), 6);
    assert!(r.failures.iter().all(|f| f.line.is_none()));
}

#[test]
fn an_interrupted_run_names_the_test_that_hung_and_where() {
    let mut parser = PytestAdapter.parser();
    let mut lines = INTERRUPTED.lines();
    for l in lines.by_ref() {
        if l.starts_with("tests/unit/test_hang.py") {
            break;
        }
        parser.line(Stream::Stdout, l);
    }
    // While it hangs, its name is the unfinished last line.
    assert_eq!(
        parser.running_in_partial_line(
            Stream::Stdout,
            "tests/unit/test_hang.py::test_hangs_when_asked "
        ),
        Some("tests/unit/test_hang.py::test_hangs_when_asked".to_string())
    );
    assert_eq!(
        parser.running_in_partial_line(
            Stream::Stdout,
            "tests/unit/test_edges.py::test_closes PASSED   253.4us"
        ),
        None
    );
    // SIGINT: pytest ends the line, then prints the whole report.
    parser.line(
        Stream::Stdout,
        "tests/unit/test_hang.py::test_hangs_when_asked ",
    );
    assert_eq!(
        parser.progress().running,
        ["tests/unit/test_hang.py::test_hangs_when_asked"]
    );
    for l in lines {
        parser.line(Stream::Stdout, l);
    }
    let r = parser.finish(Some(2));
    assert_eq!(r.error, None);
    let hung = failure(&r, "tests/unit/test_hang.py::test_hangs_when_asked");
    assert_eq!(hung.file.as_deref(), Some("/home/user/proj/calc.py"));
    assert_eq!(hung.line, Some(23));
    assert!(
        hung.message.starts_with("did not finish"),
        "{}",
        hung.message
    );
    // The failures before it got their reports too.
    assert_eq!(
        failure(&r, "tests/unit/test_calc.py::test_parse_error").line,
        Some(11)
    );
    assert_eq!(r.summary.failed, 8);
}

#[test]
fn a_module_that_does_not_import_is_an_error() {
    let r = parse(COLLECTION_ERROR, Some(2));
    let error = r.error.as_deref().unwrap();
    assert!(
        error.contains("tests/unit/test_imports.py")
            && error.contains("ModuleNotFoundError: No module named 'nope'"),
        "{error}"
    );
    let f = failure(&r, "tests/unit/test_imports.py");
    assert_eq!(
        (f.file.as_deref(), f.line),
        (Some("tests/unit/test_imports.py"), Some(2))
    );
}

#[test]
fn usage_errors_and_a_missing_pytest_are_errors() {
    let mut parser = PytestAdapter.parser();
    parser.line(Stream::Stderr, "/usr/bin/python3: No module named pytest");
    let r = parser.finish(Some(1));
    assert!(r.error.unwrap().contains("No module named pytest"));

    let mut parser = PytestAdapter.parser();
    for l in [
        "============================ no tests ran in 0.01s =============================",
        "ERROR: not found: /home/user/proj/tests/unit/test_calc.py::test_nope",
        "(no match in any of [<Module test_calc.py>])",
    ] {
        parser.line(Stream::Stderr, l);
    }
    let r = parser.finish(Some(4));
    assert_eq!(
        r.error.as_deref(),
        Some(
            "ERROR: not found: /home/user/proj/tests/unit/test_calc.py::test_nope\n(no match in any of [<Module test_calc.py>])"
        )
    );

    // No tests at all is no error: the session layer says noTests.
    let mut parser = PytestAdapter.parser();
    parser.line(
        Stream::Stdout,
        "============================ no tests ran in 0.01s =============================",
    );
    let r = parser.finish(Some(5));
    assert_eq!((r.error, r.tests.len()), (None, 0));
}

/// Skip reasons too long for what is left of the line, from tabulate
/// 0.9.0's suite (tests/real_software): pytest wraps one onto the next line
/// and glues the tail of another to the outcome word (`SKIPPEDb))`).
#[test]
fn skip_reasons_wrapped_or_glued_to_the_outcome_still_count() {
    let output = "\
test/test_input.py::test_numpy_2d_keys SKIPPED (test_numpy_2d_keys is
skipped)                                                                156.2us
test/test_regression.py::test_long_integers PASSED                      144.4us
test/test_regression.py::test_mix_normal_and_wide_characters SKIPPEDb)) 177.7us
test/test_regression.py::test_multiline_with_wide_characters SKIPPEDb)) 304.2us
test/test_regression.py::test_numpy_array_as_headers SKIPPED            191.1us
======================= 1 passed, 4 skipped in 1.02s ========================";
    let r = parse(output, Some(0));
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (1, 0, 4),
        "{:#?}",
        r.tests
    );
    assert!(
        r.tests
            .iter()
            .any(|t| t.name == "test/test_regression.py::test_mix_normal_and_wide_characters"),
        "{:#?}",
        r.tests
    );
}

#[test]
fn detection_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    let target = TestTarget::new(dir.path());
    assert_eq!(PytestAdapter.detect(&target), 0);
    std::fs::create_dir_all(dir.path().join("tests/unit")).unwrap();
    std::fs::write(
        dir.path().join("tests/unit/test_x.py"),
        "import unittest\nclass T(unittest.TestCase):\n    pass\n",
    )
    .unwrap();
    assert_eq!(PytestAdapter.detect(&target), 0, "unittest's");
    std::fs::write(
        dir.path().join("tests/unit/test_z.py"),
        "from calc import add\n\ndef test_z():\n    assert add(1, 1) == 2\n",
    )
    .unwrap();
    assert_eq!(PytestAdapter.detect(&target), 0, "unittest is mentioned");
    std::fs::remove_file(dir.path().join("tests/unit/test_x.py")).unwrap();
    assert_eq!(PytestAdapter.detect(&target), 65, "plain test functions");
    std::fs::write(
        dir.path().join("tests/unit/test_y.py"),
        "import pytest\n\ndef test_y():\n    pass\n",
    )
    .unwrap();
    assert_eq!(PytestAdapter.detect(&target), 70);
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.pytest.ini_options]\nmarkers = [\"unit\"]\n",
    )
    .unwrap();
    assert_eq!(PytestAdapter.detect(&target), 90);
    assert_eq!(
        strobe_testing::choose(&target, None).unwrap().name(),
        "pytest"
    );

    let one = PytestAdapter.single_test_command(&target, "tests/unit/test_y.py::test_y[a b]");
    assert_eq!(
        one.display(),
        "python3 -m pytest --verbosity=2 -p no:cacheprovider --tb=short -o console_output_style=times 'tests/unit/test_y.py::test_y[a b]'"
    );
    assert_eq!(one.cwd, dir.path());
    let unit = PytestAdapter.suite_command(&target, Some(TestLevel::Unit));
    assert_eq!(unit.args.last().unwrap(), "tests/unit", "the directory");
    let e2e = PytestAdapter.suite_command(&target, Some(TestLevel::E2e));
    assert_eq!(e2e.args[e2e.args.len() - 2..], ["-m", "e2e"], "the marker");
}
