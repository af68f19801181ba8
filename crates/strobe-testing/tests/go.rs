//! The go adapter over output captured from `go test -json` (Go 1.19) on
//! `tests/fixtures/go_project`: the whole module (`go_mixed.stdout`), the
//! module with its deadlocking test stopped by SIGINT to the test binary, as
//! Strobe's stuck detector does (`go_interrupted.stdout`) or by SIGQUIT
//! (`go_sigquit.stdout`: Go's runtime then prints every goroutine), that
//! test alone under `-timeout 2s` (`go_timeout.stdout`), and the module with
//! a type error in its root package (`go_build_error.*`).

use strobe_testing::adapters::go::GoAdapter;
use strobe_testing::{
    OutputParser, Stream, TestAdapter, TestFailure, TestLevel, TestResult, TestStatus, TestTarget,
};

const MIXED: &str = include_str!("output/go_mixed.stdout");
const INTERRUPTED: &str = include_str!("output/go_interrupted.stdout");
const SIGQUIT: &str = include_str!("output/go_sigquit.stdout");
const TIMEOUT: &str = include_str!("output/go_timeout.stdout");
const BUILD_OUT: &str = include_str!("output/go_build_error.stdout");
const BUILD_ERR: &str = include_str!("output/go_build_error.stderr");

fn feed(parser: &mut dyn OutputParser, stdout: &str) {
    for l in stdout.lines() {
        parser.line(Stream::Stdout, l);
    }
}

fn parse(stdout: &str, exit_code: Option<i32>) -> TestResult {
    let mut parser = GoAdapter.parser();
    feed(parser.as_mut(), stdout);
    parser.finish(exit_code)
}

fn failure<'a>(r: &'a TestResult, name: &str) -> &'a TestFailure {
    r.failures
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no failure {name}: {:#?}", r.failures))
}

#[test]
fn a_mixed_run_is_counted_and_its_failures_located() {
    let r = parse(MIXED, Some(1));
    assert_eq!(r.framework, "go");
    assert_eq!(r.error, None);
    // TestTable only groups its subtests: they are the tests.
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (6, 3, 1)
    );
    assert_eq!(r.tests.len(), 10);
    assert!(r.tests.iter().all(|t| t.name != "TestTable"));
    let skipped = r
        .tests
        .iter()
        .find(|t| t.status == TestStatus::Skipped)
        .unwrap();
    assert_eq!(skipped.name, "TestSkipped");
    assert_eq!(skipped.group.as_deref(), Some("example.com/calc"));
    let flow = r.tests.iter().find(|t| t.name == "TestAddThenSub").unwrap();
    assert_eq!(flow.group.as_deref(), Some("example.com/calc/integration"));

    // t.Errorf after a t.Log: the error is the message, continuation too.
    let sub = failure(&r, "TestSub");
    assert_eq!(
        (sub.file.as_deref(), sub.line),
        (Some("calc_test.go"), Some(18))
    );
    assert_eq!(
        sub.message,
        "Sub(5, 2) = 7, want 3\nfive minus two should be three"
    );
    assert_eq!(sub.frames, ["example.com/calc.TestSub"]);
    assert_eq!(
        sub.suggested_traces,
        ["example.com/calc.TestSub", "example.com/calc.*"]
    );
    assert_eq!(sub.suggested_traces, GoAdapter.suggest_traces(sub));

    let table = failure(&r, "TestTable/negative");
    assert_eq!(table.line, Some(29));
    assert_eq!(table.message, "Add(-1, -1) = -2, want -3");

    // A panic: the innermost frame in the project, and the functions to trace.
    let panic = failure(&r, "TestDigitOutOfRange");
    assert_eq!(
        panic.file.as_deref(),
        Some("/home/user/proj/parse/parse.go")
    );
    assert_eq!(panic.line, Some(6));
    assert_eq!(
        panic.message,
        "panic: runtime error: index out of range [5] with length 2"
    );
    assert_eq!(
        panic.frames,
        [
            "example.com/calc/parse.Digit",
            "example.com/calc/parse.TestDigitOutOfRange"
        ]
    );
    assert_eq!(
        panic.suggested_traces,
        [
            "example.com/calc/parse.Digit",
            "example.com/calc/parse.TestDigitOutOfRange",
            "example.com/calc/parse.*"
        ]
    );
    assert_eq!(r.failures.len(), 3);
}

#[test]
fn failures_are_known_as_each_test_ends_and_running_tests_are_named() {
    let mut parser = GoAdapter.parser();
    let mut lines = MIXED.lines();
    for l in lines.by_ref() {
        parser.line(Stream::Stdout, l);
        if l.contains(r#""Test":"TestTable/negative","Output":"    calc_test.go"#) {
            break;
        }
    }
    let p = parser.progress();
    assert_eq!(p.current_group.as_deref(), Some("example.com/calc"));
    assert_eq!(p.running, ["TestTable/negative"], "the innermost test");
    let sub = &p.failures[0];
    assert_eq!((sub.name.as_str(), sub.line), ("TestSub", Some(18)));
    // The run is killed here.
    let r = parser.finish(None);
    let cut = failure(&r, "TestTable/negative");
    assert_eq!(
        (cut.message.as_str(), cut.line),
        ("did not finish: Add(-1, -1) = -2, want -3", Some(29))
    );
    assert_eq!(
        r.failures.len(),
        2,
        "TestTable is only its subtests' group: {:#?}",
        r.failures
    );
}

#[test]
fn a_test_binary_stopped_mid_test_fails_that_test() {
    let mut parser = GoAdapter.parser();
    let package_ends = r#""Action":"fail","Package":"example.com/calc","Elapsed""#;
    for l in INTERRUPTED.lines() {
        if l.contains(package_ends) {
            // SIGINT killed the binary mid-test: the test is still running.
            assert_eq!(parser.progress().running, ["TestHangsWhenAsked"]);
        }
        parser.line(Stream::Stdout, l);
    }
    assert!(parser.progress().running.is_empty());
    let r = parser.finish(Some(1));
    assert_eq!(r.error, None);
    let hung = failure(&r, "TestHangsWhenAsked");
    assert!(
        hung.message.starts_with("did not finish"),
        "{}",
        hung.message
    );
    assert_eq!(
        hung.suggested_traces,
        ["example.com/calc.TestHangsWhenAsked", "example.com/calc.*"]
    );
    // The other packages went on.
    assert_eq!(
        failure(&r, "TestDigitOutOfRange").line,
        Some(6),
        "{:#?}",
        r.failures
    );
}

#[test]
fn a_timeout_places_the_test_at_its_goroutine_s_frame() {
    let r = parse(TIMEOUT, Some(1));
    let hung = failure(&r, "TestHangsWhenAsked");
    assert_eq!(
        (hung.file.as_deref(), hung.line),
        (Some("/home/user/proj/calc_test.go"), Some(54))
    );
    assert_eq!(
        hung.message,
        "did not finish: panic: test timed out after 2s"
    );
    // The test's own goroutine first, then the project's code the others
    // are stuck in.
    assert_eq!(hung.frames[0], "example.com/calc.TestHangsWhenAsked");
    assert!(
        hung.frames
            .contains(&"example.com/calc.Transfer".to_string()),
        "{:?}",
        hung.frames
    );
    assert!(
        hung.suggested_traces
            .contains(&"example.com/calc.*".to_string())
    );
    assert_eq!(r.summary.failed, 1);
}

#[test]
fn sigquit_s_goroutine_dump_places_the_hanging_test() {
    let r = parse(SIGQUIT, Some(1));
    let hung = failure(&r, "TestHangsWhenAsked");
    assert_eq!(
        (hung.file.as_deref(), hung.line),
        (Some("/home/user/proj/calc_test.go"), Some(54))
    );
    assert_eq!(hung.message, "did not finish: SIGQUIT: quit");
    assert!(
        hung.frames
            .contains(&"example.com/calc.Transfer".to_string()),
        "{:?}",
        hung.frames
    );
}

#[test]
fn build_failures_are_the_error_and_other_packages_still_count() {
    let mut parser = GoAdapter.parser();
    for l in BUILD_ERR.lines() {
        parser.line(Stream::Stderr, l);
    }
    feed(parser.as_mut(), BUILD_OUT);
    let r = parser.finish(Some(2));
    let error = r.error.as_deref().unwrap();
    assert!(
        error.starts_with(
            "build failed: example.com/calc, example.com/calc/e2e, example.com/calc/integration\n"
        ),
        "{error}"
    );
    assert!(error.contains("./calc.go:11:13: undefined: c"), "{error}");
    assert_eq!((r.summary.passed, r.summary.failed), (1, 1));

    // The go command's complaint before anything ran is the error too.
    let mut parser = GoAdapter.parser();
    parser.line(
        Stream::Stderr,
        "go: go.mod file not found in current directory or any parent directory; see 'go help modules'",
    );
    assert!(parser.finish(Some(1)).error.unwrap().contains("go.mod"));

    // A module without packages has no tests, which is no error.
    let mut parser = GoAdapter.parser();
    parser.line(
        Stream::Stderr,
        r#"go: warning: "./..." matched no packages"#,
    );
    parser.line(Stream::Stdout, "no packages to test");
    let r = parser.finish(Some(1));
    assert_eq!((r.error, r.tests.len()), (None, 0));
}

#[test]
fn detection_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let target = TestTarget::new(root);
    assert_eq!(GoAdapter.detect(&target), 0);
    std::fs::write(root.join("go.mod"), "module example.com/m\n\ngo 1.19\n").unwrap();
    assert_eq!(GoAdapter.detect(&target), 90);
    assert_eq!(strobe_testing::choose(&target, None).unwrap().name(), "go");

    let suite = GoAdapter.suite_command(&target, None);
    assert_eq!(suite.display(), "go test -json ./...");
    assert_eq!(suite.cwd, root);
    if std::env::var_os("HOME").is_some() {
        assert!(!suite.env.contains_key("GOCACHE"), "go finds its cache");
    }
    let one = GoAdapter.single_test_command(&target, "TestTable/neg.x");
    assert_eq!(
        one.display(),
        r"go test -json -run '^TestTable$/^neg\.x$' ./..."
    );

    // Levels by name when no directory says.
    std::fs::write(root.join("m_test.go"), "package m\n").unwrap();
    let integration = GoAdapter.suite_command(&target, Some(TestLevel::Integration));
    assert_eq!(
        integration.display(),
        "go test -json -run Integration ./..."
    );
    assert_eq!(
        GoAdapter
            .suite_command(&target, Some(TestLevel::Unit))
            .display(),
        "go test -json ./..."
    );

    // Levels by directory.
    for d in [
        "parse",
        "integration",
        "tests/e2e",
        "vendor/x",
        "testdata",
        "nested",
    ] {
        std::fs::create_dir_all(root.join(d)).unwrap();
        std::fs::write(root.join(d).join("x_test.go"), "package x\n").unwrap();
    }
    std::fs::write(root.join("nested/go.mod"), "module example.com/n\n").unwrap();
    let level = |l| GoAdapter.suite_command(&target, Some(l)).display();
    assert_eq!(level(TestLevel::Unit), "go test -json . ./parse");
    assert_eq!(level(TestLevel::Integration), "go test -json ./integration");
    assert_eq!(level(TestLevel::E2e), "go test -json ./tests/e2e");
}

#[test]
fn instrumented_reruns_are_refused_with_what_to_do_instead() {
    let target = TestTarget {
        root: std::path::PathBuf::from("/p"),
        command: None,
        cancel: Default::default(),
    };
    let e = GoAdapter
        .test_program(&target, None, Some("TestAdd"))
        .unwrap_err();
    assert!(e.contains("not supported yet"), "{e}");
    assert!(e.contains("without tracePatterns/watches"), "{e}");
}

#[test]
fn level_discovery_skips_symlink_cycles_and_stops_when_cancelled() {
    // /usr has `bin/X11 -> .`: following it, the walk never ended.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("integration/deep/a/b/c/d/e/f")).unwrap();
    std::fs::write(root.join("integration/x_test.go"), "package x\n").unwrap();
    std::fs::write(root.join("m_test.go"), "package m\n").unwrap();
    std::os::unix::fs::symlink(".", root.join("integration/X11")).unwrap();
    std::os::unix::fs::symlink("..", root.join("integration/deep/up")).unwrap();
    let target = TestTarget::new(root);
    let unit = GoAdapter
        .run_command(&target, Some(TestLevel::Unit), None)
        .unwrap();
    assert_eq!(unit.display(), "go test -json .");
    let integration = GoAdapter
        .run_command(&target, Some(TestLevel::Integration), None)
        .unwrap();
    assert_eq!(integration.display(), "go test -json ./integration");

    // Daemon shutdown raises the flag: the walk stops and says why.
    target.cancel.cancel();
    let e = GoAdapter
        .run_command(&target, Some(TestLevel::Unit), None)
        .unwrap_err();
    assert!(e.to_string().contains("shutting down"), "{e}");

    // So does a request's own flag, which sits within the daemon's.
    let daemon = strobe_testing::walk::Cancel::default();
    let request = strobe_testing::walk::Cancel::default();
    let target = TestTarget {
        cancel: request.within(&daemon),
        ..TestTarget::new(root)
    };
    GoAdapter
        .run_command(&target, Some(TestLevel::Unit), None)
        .unwrap();
    request.cancel();
    let e = GoAdapter
        .run_command(&target, Some(TestLevel::Unit), None)
        .unwrap_err();
    assert!(e.to_string().contains("request was cancelled"), "{e}");
    assert!(!daemon.is_cancelled(), "other requests go on");
}
