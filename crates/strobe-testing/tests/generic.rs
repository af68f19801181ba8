//! The generic adapter over output captured from real tools:
//! tests/fixtures/generic_project's `run-tests.sh` (TAP with `file:line:`
//! diagnostics), `ctest --output-on-failure` (CMake 3, three tests, one
//! failing with a C assertion's `file:line:`), `go test -v` (Go 1.19), a
//! quiet `pytest -q`, and `make` stopping on a C compile error.

use strobe_testing::adapters::generic::{GenericAdapter, WHOLE_COMMAND};
use strobe_testing::{Stream, TestAdapter, TestResult, TestStatus, TestTarget};

fn run(out: &str, err: &str, exit: Option<i32>) -> TestResult {
    let mut parser = GenericAdapter.parser();
    for l in out.lines() {
        parser.line(Stream::Stdout, l);
    }
    for l in err.lines() {
        parser.line(Stream::Stderr, l);
    }
    parser.finish(exit)
}

fn counts(r: &TestResult) -> (u32, u32, u32) {
    (r.summary.passed, r.summary.failed, r.summary.skipped)
}

#[test]
fn tap_with_diagnostics() {
    let out = include_str!("output/generic_tap.stdout");
    let r = run(out, "", Some(1));
    assert_eq!(r.framework, "generic");
    assert_eq!(counts(&r), (2, 1, 0));
    assert_eq!(r.error, None);
    let f = &r.failures[0];
    assert_eq!(f.name, "test_negative_numbers");
    assert_eq!(
        (f.file.as_deref(), f.line),
        (Some("run-tests.sh"), Some(23))
    );
    assert_eq!(f.message, "five minus two: expected 7, got 3");
    assert!(
        f.suggested_traces.is_empty(),
        "a shell script is not traced"
    );

    // Cut right after the failure's diagnostic (a later test hangs).
    let mut parser = GenericAdapter.parser();
    for l in out.lines().take_while(|l| !l.starts_with("ok 3")) {
        parser.line(Stream::Stdout, l);
    }
    let p = parser.progress();
    assert_eq!(p.failures[0].line, Some(23));
    let r = parser.finish(None);
    assert_eq!(r.error, None);
    assert_eq!(r.failures[0].file.as_deref(), Some("run-tests.sh"));
}

#[test]
fn ctest_with_output_on_failure() {
    let out = include_str!("output/generic_ctest.stdout");
    let r = run(out, include_str!("output/generic_ctest.stderr"), Some(8));
    assert_eq!(counts(&r), (2, 1, 0));
    assert_eq!(r.error, None);
    let f = &r.failures[0];
    assert_eq!(f.name, "subtracts");
    assert_eq!(f.file.as_deref(), Some("/home/user/proj/check.c"));
    assert_eq!(f.line, Some(7));
    assert_eq!(f.message, "Failed");
    assert_eq!(f.suggested_traces, ["@file:check.c"]);
    assert!(
        f.output.contains("assertion failed: 5 - 2 == 7"),
        "{}",
        f.output
    );

    // CTest says when a test starts: the one running when the run stops.
    let mut parser = GenericAdapter.parser();
    for l in out.lines().take_while(|l| !l.starts_with("3/3")) {
        parser.line(Stream::Stdout, l);
    }
    assert_eq!(parser.progress().running, ["divides"]);
}

#[test]
fn go_test_verbose() {
    let r = run(
        include_str!("output/generic_go.stdout"),
        include_str!("output/generic_go.stderr"),
        Some(1),
    );
    assert_eq!(counts(&r), (1, 1, 1));
    let f = &r.failures[0];
    assert_eq!(f.name, "TestSubtracts");
    assert_eq!(
        (f.file.as_deref(), f.line),
        (Some("calc_test.go"), Some(13))
    );
    assert_eq!(f.message, "five minus two: got 3, want 7");
    assert!(r.tests.iter().all(|t| !t.name.contains("calc\t")));
}

#[test]
fn a_quiet_reporter_with_counts() {
    // pytest -q names only its failure; its summary gives the counts.
    let r = run(
        include_str!("output/generic_pytest_q.stdout"),
        include_str!("output/generic_pytest_q.stderr"),
        Some(1),
    );
    assert_eq!(counts(&r), (1, 1, 0));
    let f = &r.failures[0];
    assert_eq!(f.name, "test_sum.py::test_negative");
    assert_eq!(f.message, "assert 3 == 7");
    assert_eq!((f.file.as_deref(), f.line), (Some("test_sum.py"), Some(10)));
}

#[test]
fn nothing_recognised_is_one_test_decided_by_the_exit_code() {
    let r = run(
        include_str!("output/generic_make.stdout"),
        include_str!("output/generic_make.stderr"),
        Some(2),
    );
    assert_eq!(counts(&r), (0, 1, 0));
    assert_eq!(r.error, None);
    let f = &r.failures[0];
    assert_eq!(f.name, WHOLE_COMMAND);
    // The first error, not the warning before it.
    assert_eq!((f.file.as_deref(), f.line), (Some("check.c"), Some(5)));
    assert_eq!(f.message, "error: expected ‘;’ before ‘return’");
    assert_eq!(f.frames, ["main"]);
    assert_eq!(f.suggested_traces, ["@file:check.c", "main"]);

    let r = run("all good\n", "", Some(0));
    assert_eq!(counts(&r), (1, 0, 0));
    assert_eq!(r.tests[0].name, WHOLE_COMMAND);
    assert_eq!(r.tests[0].status, TestStatus::Passed);

    // The command is missing: an error, not a failing test.
    let r = run("", "sh: 1: ./nope.sh: not found\n", Some(127));
    assert!(r.tests.is_empty());
    assert_eq!(r.error.as_deref(), Some("sh: 1: ./nope.sh: not found"));
}

#[test]
fn other_common_shapes() {
    let r = run(
        "\
        PASS [   0.020s] (1/3) calc tests::sums_numbers\n\
        FAIL [   0.100s] (2/3) calc tests::negative_numbers\n\
        thread 'tests::negative_numbers' (21576) panicked at src/lib.rs:21:9:\n\
        test tests::sums_numbers ... ok\n\
        test_calc.py::test_adds PASSED                                     [ 50%]\n\
        \u{2713} adds (3 ms)\n\
        \u{2715} subtracts (1 ms)\n\
            at Object.<anonymous> (/home/user/proj/calc.test.js:9:17)\n\
            at node:internal/main:1:1\n\
        not ok 7 - later # TODO not written\n\
        FAILED (failures=2)\n\
        FAIL\tcalc\t0.003s\n\
        BUILD FAILED\n",
        "",
        Some(1),
    );
    let names: Vec<(&str, TestStatus)> = r
        .tests
        .iter()
        .map(|t| (t.name.as_str(), t.status))
        .collect();
    assert_eq!(
        names,
        [
            ("tests::sums_numbers", TestStatus::Passed),
            ("tests::negative_numbers", TestStatus::Failed),
            ("test_calc.py::test_adds", TestStatus::Passed),
            ("adds", TestStatus::Passed),
            ("subtracts", TestStatus::Failed),
            ("later", TestStatus::Skipped),
        ]
    );
    let rust = &r.failures[0];
    assert_eq!(
        (rust.file.as_deref(), rust.line),
        (Some("src/lib.rs"), Some(21))
    );
    let js = &r.failures[1];
    assert_eq!(
        (js.file.as_deref(), js.line),
        (Some("/home/user/proj/calc.test.js"), Some(9))
    );

    // A bail-out is the run's error.
    let r = run("1..3\nok 1 - a\nBail out! no database\n", "", Some(1));
    assert_eq!(r.error.as_deref(), Some("Bail out! no database"));
}

#[test]
fn detection_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    let mut target = TestTarget::new(dir.path());
    assert_eq!(GenericAdapter.detect(&target), 0);
    target.command = Some("./run-tests.sh --tap".into());
    assert_eq!(GenericAdapter.detect(&target), 1);
    assert_eq!(
        strobe_testing::choose(&target, None).unwrap().name(),
        "generic",
        "nothing else knows the project"
    );
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    assert_eq!(
        strobe_testing::choose(&target, None).unwrap().name(),
        "cargo",
        "any real adapter wins"
    );

    let suite = GenericAdapter.suite_command(&target, None);
    assert_eq!(suite.program, "sh");
    assert_eq!(suite.args, ["-c", "./run-tests.sh --tap"]);
    assert_eq!(suite.cwd, dir.path());
    let one = GenericAdapter.single_test_command(&target, "it's one");
    assert_eq!(one.args, ["-c", "./run-tests.sh --tap 'it'\\''s one'"]);
    let whole = GenericAdapter.single_test_command(&target, WHOLE_COMMAND);
    assert_eq!(whole.args, suite.args);

    // Chosen by name with no command: the run says what is missing.
    target.command = None;
    let none = GenericAdapter.suite_command(&target, None);
    assert!(none.args[1].contains("`command`"), "{:?}", none.args);
    let r = run(
        "",
        "the generic adapter runs the command line given as `command`, and none was given\n",
        Some(127),
    );
    assert!(r.error.unwrap().contains("`command`"));
}
