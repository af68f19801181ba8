//! The Catch2 adapter over output captured from real runs of Catch2 v2.13's
//! XML reporter (`-r xml --durations yes`): the fixture
//! `tests/fixtures/catch2_project` built with `g++ -g -O0 -pthread`
//! (`tests/output/catch2_mixed.stdout`; with STROBE_FIXTURE_HANG=1, killed
//! while the deadlocking test ran: `catch2_hang.stdout`; stopped with SIGINT
//! instead, as the stuck detector does: `catch2_interrupted.stdout`), and a scratch
//! test program with an exception, printed output, an INFO, an explicit
//! FAIL, nested sections and a segfault (`catch2_extras.stdout`). The
//! temporary project path is replaced by /home/user/proj.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use strobe_testing::adapters::catch2::{Catch2Adapter, test_spec};
use strobe_testing::adapters::gtest::GtestAdapter;
use strobe_testing::{OutputParser, Stream, TestAdapter, TestLevel, TestStatus, TestTarget};

const MIXED: &str = include_str!("output/catch2_mixed.stdout");
const HANG: &str = include_str!("output/catch2_hang.stdout");
const INTERRUPTED: &str = include_str!("output/catch2_interrupted.stdout");
const EXTRAS: &str = include_str!("output/catch2_extras.stdout");

fn feed(parser: &mut dyn OutputParser, text: &str) {
    for l in text.lines() {
        parser.line(Stream::Stdout, l);
    }
}

#[test]
fn a_mixed_run_is_counted_and_its_failure_located() {
    let mut parser = Catch2Adapter.parser();
    feed(parser.as_mut(), MIXED);
    let r = parser.finish(Some(1));
    assert_eq!(r.framework, "catch2");
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (2, 1, 0)
    );
    assert_eq!(r.error, None);
    assert_eq!(
        r.tests.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        [
            "adds two numbers",
            "mean of two numbers",
            "hangs when asked"
        ]
    );
    let adds = &r.tests[0];
    assert_eq!(adds.group.as_deref(), Some("calc_tests"));
    assert!(adds.duration_ms.is_some_and(|d| d > 0.0 && d < 1.0));

    assert_eq!(r.failures.len(), 1);
    let f = &r.failures[0];
    assert_eq!(f.name, "mean of two numbers");
    assert_eq!(f.file.as_deref(), Some("/home/user/proj/calc_test.cpp"));
    assert_eq!(f.line, Some(54));
    assert_eq!(
        f.message,
        "CHECK( m == Approx(1.5) )\nwith expansion:\n  1.0 == Approx( 1.5 )"
    );
    assert!(f.output.contains("calc_test.cpp:54: CHECK"), "{}", f.output);
    assert_eq!(f.suggested_traces, ["@file:calc_test.cpp"]);
}

#[test]
fn a_run_killed_while_a_test_hangs_keeps_the_earlier_failure() {
    let mut parser = Catch2Adapter.parser();
    let mut lines = HANG.lines();
    for l in lines.by_ref() {
        parser.line(Stream::Stdout, l);
        if l.trim() == "</Expanded>" {
            break;
        }
    }
    // The assertion is known before its test ends.
    let p = parser.progress();
    assert_eq!(p.running, ["mean of two numbers"]);
    assert_eq!(p.failures.len(), 1);
    assert_eq!(p.failures[0].line, Some(54));
    for l in lines {
        parser.line(Stream::Stdout, l);
    }
    let p = parser.progress();
    assert_eq!(p.running, ["hangs when asked"]);
    assert_eq!(p.current_group.as_deref(), Some("calc_tests"));
    assert_eq!((p.summary.passed, p.summary.failed), (1, 1));

    let r = parser.finish(None);
    assert_eq!(r.error, None);
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (1, 2, 0)
    );
    let mean = r
        .failures
        .iter()
        .find(|f| f.name == "mean of two numbers")
        .unwrap();
    assert_eq!(mean.file.as_deref(), Some("/home/user/proj/calc_test.cpp"));
    assert_eq!(mean.line, Some(54));
    let hung = r
        .failures
        .iter()
        .find(|f| f.name == "hangs when asked")
        .unwrap();
    assert!(hung.message.contains("did not finish"), "{}", hung.message);
}

#[test]
fn an_interrupted_test_is_reported_by_catch2_itself() {
    let mut parser = Catch2Adapter.parser();
    feed(parser.as_mut(), INTERRUPTED);
    let r = parser.finish(None);
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (1, 2, 0)
    );
    let hung = r
        .failures
        .iter()
        .find(|f| f.name == "hangs when asked")
        .unwrap();
    assert_eq!(hung.line, Some(59), "the test case's line");
    assert_eq!(
        hung.message,
        "fatal error condition:\n  SIGINT - Terminal interrupt signal"
    );
}

#[test]
fn exceptions_output_failures_sections_and_crashes() {
    let mut parser = Catch2Adapter.parser();
    feed(parser.as_mut(), EXTRAS);
    let r = parser.finish(None);
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (0, 4, 0)
    );
    let failure = |name: &str| r.failures.iter().find(|f| f.name == name).unwrap();

    // Names are unescaped; printf lines, <StdOut> and <StdErr> are the
    // test's output; an INFO goes with the failure it explains.
    let name = "throws <x> & \"y\", z";
    let throws = failure(name);
    assert_eq!(
        (throws.file.as_deref(), throws.line),
        (Some("extra.cpp"), Some(6))
    );
    assert_eq!(
        throws.message,
        "unexpected exception with message:\n  boom\nsecond line\nwith message:\n  some info 3"
    );
    let case = r.tests.iter().find(|t| t.name == name).unwrap();
    assert_eq!(
        case.output.as_deref(),
        Some("hello from printf\nhello from cout\nto cerr\n")
    );

    let fail = failure("explicit fail");
    assert_eq!((fail.line, fail.message.as_str()), (Some(13), "nope: 42"));
    let sections = failure("with sections");
    assert_eq!(sections.line, Some(15));
    assert_eq!(sections.message, "REQUIRE( 1 == 2 )");
    let segv = failure("segv");
    assert_eq!(segv.line, Some(17));
    assert_eq!(
        segv.message,
        "fatal error condition:\n  SIGSEGV - Segmentation violation signal"
    );
    assert_eq!(
        r.tests.iter().find(|t| t.name == "segv").unwrap().status,
        TestStatus::Failed
    );
}

#[test]
fn bad_arguments_are_the_result_error() {
    let mut parser = Catch2Adapter.parser();
    // What a Catch2 v2 binary prints for an unknown option.
    parser.line(Stream::Stderr, "");
    parser.line(Stream::Stderr, "Error(s) in input:");
    parser.line(Stream::Stderr, "  Unrecognised token: --bogus");
    parser.line(Stream::Stderr, "Run with -? for usage");
    let r = parser.finish(Some(255));
    let e = r.error.expect("error");
    assert!(e.contains("Unrecognised token: --bogus"), "{e}");
}

#[test]
fn traces_are_suggested_from_the_failing_test_source() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/catch2_project");
    let mut failure = strobe_testing::TestFailure::new("mean of two numbers");
    failure.file = Some(fixture.join("calc_test.cpp").display().to_string());
    failure.line = Some(54);
    assert_eq!(
        Catch2Adapter.suggest_traces(&failure),
        ["calc::mean", "calc::*", "@file:calc_test.cpp"]
    );
    // Placed at the test case (a fatal signal): its whole body.
    failure.line = Some(59);
    assert_eq!(
        Catch2Adapter.suggest_traces(&failure),
        ["locks::take_in_order", "locks::*", "@file:calc_test.cpp"]
    );
}

#[test]
fn test_names_are_escaped_for_the_test_spec() {
    assert_eq!(test_spec("mean of two numbers"), "mean of two numbers");
    assert_eq!(test_spec("a [b] c\\d"), "a \\[b\\] c\\\\d");
    assert_eq!(test_spec("~x, \"y\""), "\\~x\\, \\\"y\\\"");
}

#[test]
fn detection_probes_the_binary_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    assert_eq!(Catch2Adapter.detect(&TestTarget::new(root)), 0);

    // A program that answers --list-tests like Catch2 does.
    let lister = root.join("calc_tests");
    std::fs::write(
        &lister,
        "#!/bin/sh\n# answers --list-tests\nprintf 'All available test cases:\\n  adds\\n      [unit]\\n1 test case\\n'\n",
    )
    .unwrap();
    std::fs::set_permissions(&lister, std::fs::Permissions::from_mode(0o755)).unwrap();
    let target = TestTarget {
        root: root.to_path_buf(),
        command: Some("calc_tests".into()),
        cancel: Default::default(),
    };
    assert_eq!(Catch2Adapter.detect(&target), 85);
    assert_eq!(GtestAdapter.detect(&target), 0);
    assert_eq!(
        strobe_testing::choose(&target, None).unwrap().name(),
        "catch2"
    );
    // Mentions the option but lists nothing: not Catch2.
    let quiet = root.join("quiet");
    std::fs::write(&quiet, "#!/bin/sh\n# --list-tests\nexit 0\n").unwrap();
    std::fs::set_permissions(&quiet, std::fs::Permissions::from_mode(0o755)).unwrap();
    let quiet = TestTarget {
        root: root.to_path_buf(),
        command: Some("quiet".into()),
        cancel: Default::default(),
    };
    assert_eq!(Catch2Adapter.detect(&quiet), 0);

    let program = lister.display().to_string();
    let suite = Catch2Adapter.suite_command(&target, None);
    assert_eq!(suite.program, program);
    assert_eq!(suite.args, ["-r", "xml", "--durations", "yes"]);
    assert_eq!(suite.cwd, root);
    let unit = Catch2Adapter.suite_command(&target, Some(TestLevel::Unit));
    assert_eq!(unit.args, ["-r", "xml", "--durations", "yes", "[unit]"]);
    let one = Catch2Adapter.single_test_command(&target, "mean of two numbers");
    assert_eq!(
        one.display(),
        format!("{program} -r xml --durations yes 'mean of two numbers'")
    );

    // No binary: the run says what is missing.
    let none = Catch2Adapter.suite_command(&TestTarget::new(root), None);
    assert_eq!(none.program, "sh");
    assert!(none.args[1].contains("pass 'command'"), "{:?}", none.args);
}

#[test]
fn an_assertion_that_throws_says_why() {
    // Catch2 v2.13's XML for `INFO("ctx"); REQUIRE(thrower() == 1);` where
    // thrower() throws std::runtime_error("bad").
    let out = r#"<?xml version="1.0" encoding="UTF-8"?>
<Catch name="thr">
  <Group name="thr">
    <TestCase name="req throws" filename="thr.cpp" line="5">
      <Info>
        ctx
      </Info>
      <Expression success="false" type="REQUIRE" filename="thr.cpp" line="5">
        <Original>
          thrower() == 1
        </Original>
        <Expanded>
          thrower() == 1
        </Expanded>
        <Exception filename="thr.cpp" line="5">
          bad
        </Exception>
      </Expression>
      <OverallResult success="false"/>
    </TestCase>"#;
    let mut parser = Catch2Adapter.parser();
    feed(parser.as_mut(), out);
    let r = parser.finish(Some(1));
    assert_eq!(r.failures.len(), 1);
    assert_eq!(
        r.failures[0].message,
        "REQUIRE( thrower() == 1 )\nwith message:\n  ctx\ndue to unexpected exception with message:\n  bad"
    );
}
