//! The Google Test adapter over output captured from real runs (Google Test
//! 1.12, CMake 3.25, g++ 12) of the adapter's build-and-run script on
//! `tests/fixtures/gtest_project` (`tests/output/gtest_mixed.*`; the same
//! with STROBE_FIXTURE_HANG=1, killed while the deadlocking test ran:
//! `gtest_hang.*`; the same project with a syntax error: `gtest_build_error.*`),
//! and of a scratch test program with an exception, a skipped, a
//! parameterized, a twice-failing and a disabled test (`gtest_extras.*`).
//! The temporary project path is replaced by /home/user/proj.

use std::path::Path;
use strobe_testing::adapters::catch2::Catch2Adapter;
use strobe_testing::adapters::gtest::GtestAdapter;
use strobe_testing::{OutputParser, Stream, TestAdapter, TestLevel, TestStatus, TestTarget};

const MIXED: &str = include_str!("output/gtest_mixed.stdout");
const HANG: &str = include_str!("output/gtest_hang.stdout");
const BUILD_ERROR_OUT: &str = include_str!("output/gtest_build_error.stdout");
const BUILD_ERROR_ERR: &str = include_str!("output/gtest_build_error.stderr");
const EXTRAS_OUT: &str = include_str!("output/gtest_extras.stdout");
const EXTRAS_ERR: &str = include_str!("output/gtest_extras.stderr");

fn feed(parser: &mut dyn OutputParser, stream: Stream, text: &str) {
    for l in text.lines() {
        parser.line(stream, l);
    }
}

#[test]
fn a_mixed_run_is_counted_and_its_failure_located() {
    let mut parser = GtestAdapter.parser();
    feed(parser.as_mut(), Stream::Stdout, MIXED);
    let r = parser.finish(Some(1));
    assert_eq!(r.framework, "gtest");
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (2, 1, 0)
    );
    assert_eq!(r.error, None);
    assert_eq!(
        r.tests.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        [
            "CalcUnitTest.AddsNumbers",
            "CalcUnitTest.MeanOfTwo",
            "LocksIntegrationTest.HangsWhenAsked"
        ],
        "the summary's list of failed tests is not counted again"
    );
    let adds = &r.tests[0];
    assert_eq!(adds.status, TestStatus::Passed);
    assert_eq!(adds.group.as_deref(), Some("CalcUnitTest"));
    assert_eq!(adds.duration_ms, Some(0.0));

    assert_eq!(r.failures.len(), 1);
    let f = &r.failures[0];
    assert_eq!(f.name, "CalcUnitTest.MeanOfTwo");
    assert_eq!(f.file.as_deref(), Some("/home/user/proj/calc_test.cpp"));
    assert_eq!(f.line, Some(16));
    assert_eq!(
        f.message,
        "Expected equality of these values:\n  m\n    Which is: 1\n  1.5\nmean of 1 and 2"
    );
    assert!(
        f.output
            .starts_with("/home/user/proj/calc_test.cpp:16: Failure\n"),
        "{}",
        f.output
    );
    assert_eq!(f.frames, ["CalcUnitTest_MeanOfTwo_Test::TestBody"]);
    // The source is not at /home/user/proj: the test body and its file.
    assert_eq!(
        f.suggested_traces,
        [
            "CalcUnitTest_MeanOfTwo_Test::TestBody",
            "@file:calc_test.cpp"
        ]
    );
}

#[test]
fn a_failure_is_known_when_reported_and_the_running_test_when_it_starts() {
    let mut parser = GtestAdapter.parser();
    let mut lines = MIXED.lines();
    for l in lines.by_ref() {
        parser.line(Stream::Stdout, l);
        if l.starts_with("[ RUN      ] CalcUnitTest.MeanOfTwo") {
            break;
        }
    }
    let p = parser.progress();
    assert_eq!(p.running, ["CalcUnitTest.MeanOfTwo"]);
    assert_eq!(p.current_group.as_deref(), Some("CalcUnitTest"));
    assert_eq!(p.summary.passed, 1);
    // The assertion's report, before the test ends.
    for l in lines.by_ref().take(1) {
        parser.line(Stream::Stdout, l);
    }
    let p = parser.progress();
    assert_eq!(p.failures.len(), 1);
    assert_eq!(p.failures[0].line, Some(16));
    assert_eq!(p.summary.failed, 0, "the test has not ended yet");
}

#[test]
fn a_run_killed_while_a_test_hangs_keeps_the_earlier_failure() {
    let mut parser = GtestAdapter.parser();
    feed(parser.as_mut(), Stream::Stdout, HANG);
    let p = parser.progress();
    assert_eq!(p.running, ["LocksIntegrationTest.HangsWhenAsked"]);
    assert_eq!(p.current_group.as_deref(), Some("LocksIntegrationTest"));
    let r = parser.finish(None);
    assert_eq!(r.error, None);
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (1, 2, 0)
    );
    let mean = r
        .failures
        .iter()
        .find(|f| f.name == "CalcUnitTest.MeanOfTwo")
        .unwrap();
    assert_eq!(mean.file.as_deref(), Some("/home/user/proj/calc_test.cpp"));
    assert_eq!(mean.line, Some(16));
    let hung = r
        .failures
        .iter()
        .find(|f| f.name == "LocksIntegrationTest.HangsWhenAsked")
        .unwrap();
    assert!(hung.message.contains("did not finish"), "{}", hung.message);
    assert_eq!(hung.line, None);
    assert_eq!(
        hung.frames,
        ["LocksIntegrationTest_HangsWhenAsked_Test::TestBody"]
    );
}

#[test]
fn a_build_error_is_the_result_error() {
    let mut parser = GtestAdapter.parser();
    feed(parser.as_mut(), Stream::Stdout, BUILD_ERROR_OUT);
    assert_eq!(parser.progress().current_group, None, "still building");
    feed(parser.as_mut(), Stream::Stderr, BUILD_ERROR_ERR);
    let r = parser.finish(Some(2));
    assert!(r.tests.is_empty());
    let e = r.error.expect("build error");
    assert!(
        e.starts_with("/home/user/proj/calc.cpp: In function ‘int calc::add(int, int)’:\n/home/user/proj/calc.cpp:5:37: error: expected ‘;’ before ‘double’"),
        "{e}"
    );
    assert!(e.contains("gmake: *** [Makefile:101: all] Error 2"), "{e}");
}

#[test]
fn no_test_and_success_is_zero_counts() {
    let mut parser = GtestAdapter.parser();
    for l in [
        "Running main() from ./googletest/src/gtest_main.cc",
        "Note: Google Test filter = Nope*",
        "[==========] Running 0 tests from 0 test suites.",
        "[==========] 0 tests from 0 test suites ran. (0 ms total)",
        "[  PASSED  ] 0 tests.",
    ] {
        parser.line(Stream::Stdout, l);
    }
    let r = parser.finish(Some(0));
    assert!(r.tests.is_empty());
    assert_eq!(r.error, None);
}

#[test]
fn exceptions_skips_parameters_and_disabled_tests() {
    let mut parser = GtestAdapter.parser();
    feed(parser.as_mut(), Stream::Stdout, EXTRAS_OUT);
    feed(parser.as_mut(), Stream::Stderr, EXTRAS_ERR);
    let r = parser.finish(Some(1));
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (1, 3, 2),
        "{:?}",
        r.tests
    );
    let status = |name: &str| r.tests.iter().find(|t| t.name == name).unwrap().status;
    assert_eq!(status("X.Skips"), TestStatus::Skipped);
    assert_eq!(status("X.DISABLED_Off"), TestStatus::Skipped);
    assert_eq!(status("Nums/P.Even/0"), TestStatus::Passed);
    let failure = |name: &str| r.failures.iter().find(|f| f.name == name).unwrap();

    let throws = failure("X.Throws");
    assert_eq!((throws.file.as_deref(), throws.line), (None, None));
    assert_eq!(
        throws.message,
        "C++ exception with description \"boom\" thrown in the test body."
    );
    let printed = r.tests.iter().find(|t| t.name == "X.Throws").unwrap();
    assert_eq!(printed.output.as_deref(), Some("printed\n"));

    // Two failures: the first places and explains it, both are in the output.
    let two = failure("X.Two");
    assert_eq!((two.file.as_deref(), two.line), (Some("x.cpp"), Some(6)));
    assert_eq!(two.message, "Expected equality of these values:\n  1\n  2");
    assert!(two.output.contains("why"), "{}", two.output);

    // The name without the parameter, as --gtest_filter takes it.
    let param = failure("Nums/P.Even/1");
    assert_eq!(param.line, Some(8));
    assert_eq!(param.frames, ["P_Even_Test::TestBody"]);
}

#[test]
fn traces_are_suggested_from_the_failing_test_source() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gtest_project");
    let mut failure = strobe_testing::TestFailure::new("CalcUnitTest.MeanOfTwo");
    failure.file = Some(fixture.join("calc_test.cpp").display().to_string());
    failure.line = Some(16);
    failure.frames = vec!["CalcUnitTest_MeanOfTwo_Test::TestBody".into()];
    assert_eq!(
        GtestAdapter.suggest_traces(&failure),
        [
            "calc::mean",
            "calc::*",
            "@file:calc.cpp",
            "CalcUnitTest_MeanOfTwo_Test::TestBody",
            "@file:calc_test.cpp"
        ]
    );
}

#[test]
fn detection_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let target = TestTarget::new(root);
    assert_eq!(GtestAdapter.detect(&target), 0);
    std::fs::write(root.join("CMakeLists.txt"), "project(x)\n").unwrap();
    assert_eq!(GtestAdapter.detect(&target), 0);
    std::fs::create_dir(root.join("tests")).unwrap();
    std::fs::write(
        root.join("tests/CMakeLists.txt"),
        "find_package(GTest REQUIRED)\n",
    )
    .unwrap();
    assert_eq!(GtestAdapter.detect(&target), 85, "gtest one directory down");
    assert_eq!(
        strobe_testing::choose(&target, None).unwrap().name(),
        "gtest"
    );
    assert_eq!(Catch2Adapter.detect(&target), 0, "catch2 needs a binary");

    // Built with CMake, run with the script's arguments as the filter.
    let suite = GtestAdapter.suite_command(&target, None);
    assert_eq!(suite.program, "sh");
    assert_eq!(suite.args[0], "-c");
    assert!(suite.args[1].starts_with("cmake -S . -B build/strobe -DCMAKE_BUILD_TYPE=Debug"));
    assert_eq!(suite.args[2..], ["strobe-gtest"]);
    assert_eq!(suite.cwd, root);
    assert_eq!(suite.env.get("GTEST_COLOR").map(String::as_str), Some("no"));
    let unit = GtestAdapter.suite_command(&target, Some(TestLevel::Unit));
    assert_eq!(unit.args[3], "--gtest_filter=*Unit*:*unit*");
    let one = GtestAdapter.single_test_command(&target, "CalcUnitTest.MeanOfTwo");
    assert_eq!(one.args[3], "--gtest_filter=CalcUnitTest.MeanOfTwo");

    // A named binary: what it contains decides, and it runs directly.
    std::fs::create_dir(root.join("bin")).unwrap();
    std::fs::write(
        root.join("bin/calc_test"),
        b"\x7fELF...--gtest_list_tests...",
    )
    .unwrap();
    let named = TestTarget {
        root: root.to_path_buf(),
        command: Some("bin/calc_test".into()),
        cancel: Default::default(),
    };
    assert_eq!(GtestAdapter.detect(&named), 85);
    assert_eq!(Catch2Adapter.detect(&named), 0, "not a Catch2 binary");
    let one = GtestAdapter.single_test_command(&named, "CalcUnitTest.MeanOfTwo");
    let program = root.join("bin/calc_test").display().to_string();
    assert_eq!(one.program, program);
    assert_eq!(one.args, ["--gtest_filter=CalcUnitTest.MeanOfTwo"]);
    let e2e = GtestAdapter.suite_command(&named, Some(TestLevel::E2e));
    assert_eq!(e2e.args, ["--gtest_filter=*E2E*:*E2e*:*e2e*"]);
    // Extra words of the command are arguments before the adapter's.
    let with_args = TestTarget {
        root: root.to_path_buf(),
        command: Some("bin/calc_test --gtest_repeat=2".into()),
        cancel: Default::default(),
    };
    assert_eq!(
        GtestAdapter.suite_command(&with_args, None).args,
        ["--gtest_repeat=2"]
    );
    // A binary that is not Google Test's, in a project whose CMake is.
    std::fs::write(root.join("bin/other"), b"\x7fELF...").unwrap();
    let other = TestTarget {
        root: root.to_path_buf(),
        command: Some("bin/other".into()),
        cancel: Default::default(),
    };
    assert_eq!(GtestAdapter.detect(&other), 0);
}

#[test]
fn a_program_that_died_mid_test_fails_that_test_when_the_next_starts() {
    // The build script runs the next test program after one was stopped.
    let mut parser = GtestAdapter.parser();
    feed(parser.as_mut(), Stream::Stdout, HANG);
    parser.line(Stream::Stdout, "strobe: running build/strobe/other_test");
    let p = parser.progress();
    assert!(p.running.is_empty());
    assert_eq!(p.summary.failed, 2);
    assert_eq!(p.current_group.as_deref(), Some("build/strobe/other_test"));
    assert!(
        p.failures
            .iter()
            .any(|f| f.name == "LocksIntegrationTest.HangsWhenAsked"
                && f.message.contains("ended while it ran")),
        "{:?}",
        p.failures
    );
}
