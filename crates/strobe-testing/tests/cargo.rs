//! The cargo adapter over output captured from a real `cargo test` run
//! (`tests/output/cargo_*`: a crate with a passing, a failing assertion, a
//! panicking, an ignored and an integration test; then the same crate with
//! a type error).

use strobe_testing::{
    Stream, TestAdapter, TestLevel, TestStatus, TestTarget, adapters::cargo::CargoAdapter,
};

const MIXED_OUT: &str = include_str!("output/cargo_mixed.stdout");
const MIXED_ERR: &str = include_str!("output/cargo_mixed.stderr");

/// Feeds stdout, putting each stderr `Running`/`Doc-tests` line before the
/// `running N tests` line it announces, as they interleave live.
fn feed(parser: &mut dyn strobe_testing::OutputParser, out: &str, err: &str, upto: Option<&str>) {
    let mut announcements = err.lines().filter(|l| {
        l.trim_start().starts_with("Running ") || l.trim_start().starts_with("Doc-tests ")
    });
    for l in err
        .lines()
        .filter(|l| l.trim_start().starts_with("Compiling"))
    {
        parser.line(Stream::Stderr, l);
    }
    for line in out.lines() {
        if line.starts_with("running ")
            && let Some(a) = announcements.next()
        {
            parser.line(Stream::Stderr, a);
        }
        parser.line(Stream::Stdout, line);
        if Some(line) == upto {
            return;
        }
    }
}

#[test]
fn a_mixed_run_is_counted_and_its_failures_located() {
    let mut parser = CargoAdapter.parser();
    feed(parser.as_mut(), MIXED_OUT, MIXED_ERR, None);
    let r = parser.finish(Some(101));
    assert_eq!(r.framework, "cargo");
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (2, 2, 1)
    );
    assert_eq!(r.error, None);
    let it = r.tests.iter().find(|t| t.name == "integration_ok").unwrap();
    assert_eq!(it.group.as_deref(), Some("tests/it.rs"));
    assert_eq!(it.status, TestStatus::Passed);
    let unit = r.tests.iter().find(|t| t.name == "tests::skipped").unwrap();
    assert_eq!(unit.group.as_deref(), Some("unittests src/lib.rs"));
    assert_eq!(unit.status, TestStatus::Skipped);

    let fails = r
        .failures
        .iter()
        .find(|f| f.name == "tests::fails")
        .unwrap();
    assert_eq!(fails.file.as_deref(), Some("src/lib.rs"));
    assert_eq!(fails.line, Some(11));
    assert_eq!(
        fails.message,
        "assertion `left == right` failed: one plus one\n  left: 2\n right: 3"
    );
    assert_eq!(fails.frames, ["demo::tests::fails"]);
    assert_eq!(fails.suggested_traces, ["demo::tests::*"]);

    let panics = r
        .failures
        .iter()
        .find(|f| f.name == "tests::prints_then_fails")
        .unwrap();
    assert_eq!(panics.line, Some(17));
    assert_eq!(panics.message, "boom 42");
    assert!(
        panics.output.starts_with("some output\n"),
        "{}",
        panics.output
    );
}

#[test]
fn failures_are_known_before_the_run_ends() {
    // The run stops (say a later test hangs) right after the first failure
    // report: its place and message are already there.
    let mut parser = CargoAdapter.parser();
    feed(
        parser.as_mut(),
        MIXED_OUT,
        MIXED_ERR,
        Some("test tests::fails ... FAILED"),
    );
    let p = parser.progress();
    assert_eq!(p.summary.failed, 1);
    assert_eq!(p.failures[0].name, "tests::fails");
    assert_eq!(p.failures[0].file, None, "libtest prints details later");
    assert_eq!(p.current_group.as_deref(), Some("unittests src/lib.rs"));

    let mut parser = CargoAdapter.parser();
    feed(parser.as_mut(), MIXED_OUT, MIXED_ERR, Some(" right: 3"));
    let f = &parser.progress().failures;
    let fails = f.iter().find(|f| f.name == "tests::fails").unwrap();
    assert_eq!(
        (fails.file.as_deref(), fails.line),
        (Some("src/lib.rs"), Some(11))
    );
    let r = parser.finish(None);
    assert_eq!(r.exit_code, None);
    assert_eq!(r.error, None, "tests ran: the kill is not a build error");
}

#[test]
fn a_build_error_is_the_runs_error() {
    let mut parser = CargoAdapter.parser();
    for l in include_str!("output/cargo_build_error.stderr").lines() {
        parser.line(Stream::Stderr, l);
    }
    let r = parser.finish(Some(101));
    assert!(r.tests.is_empty());
    let error = r.error.unwrap();
    assert!(
        error.starts_with("error[E0308]: mismatched types"),
        "{error}"
    );
    assert!(error.contains("src/lib.rs:19:26"), "{error}");
}

#[test]
fn detection_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(CargoAdapter.detect(&TestTarget::new(dir.path())), 0);
    assert!(strobe_testing::choose(&TestTarget::new(dir.path()), None).is_err());
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    assert_eq!(CargoAdapter.detect(&TestTarget::new(dir.path())), 90);
    assert_eq!(
        strobe_testing::choose(&TestTarget::new(dir.path()), None)
            .unwrap()
            .name(),
        "cargo"
    );
    let e = strobe_testing::choose(&TestTarget::new(dir.path()), Some("nose"))
        .err()
        .unwrap();
    assert!(e.to_string().contains("known: cargo"), "{e}");

    let unit = CargoAdapter.suite_command(&TestTarget::new(dir.path()), Some(TestLevel::Unit));
    assert_eq!(unit.args, ["test", "--no-fail-fast", "--lib", "--bins"]);
    assert_eq!(unit.env["RUST_BACKTRACE"], "1");
    let integration =
        CargoAdapter.suite_command(&TestTarget::new(dir.path()), Some(TestLevel::Integration));
    assert_eq!(
        integration.display(),
        "cargo test --no-fail-fast --test '*'"
    );
    let one = CargoAdapter.single_test_command(&TestTarget::new(dir.path()), "tests::fails");
    assert_eq!(
        one.display(),
        "cargo test --no-fail-fast -- tests::fails --exact"
    );
    assert_eq!(one.cwd, dir.path());
}

/// The two pipes are read by separate threads, so cargo's stderr headers can
/// be read after the stdout results they announce, or all before any: each
/// binary's tests still get its own group.
#[test]
fn groups_survive_stdout_and_stderr_read_out_of_order() {
    let groups = |lines: &[(Stream, &str)]| {
        let mut parser = CargoAdapter.parser();
        for (s, l) in lines {
            parser.line(*s, l);
        }
        parser
            .finish(Some(0))
            .tests
            .into_iter()
            .map(|t| (t.name, t.group.unwrap_or_default()))
            .collect::<Vec<_>>()
    };
    use Stream::{Stderr as E, Stdout as O};
    let want = vec![
        ("tests::a".to_string(), "unittests src/lib.rs".to_string()),
        ("api_works".to_string(), "tests/api.rs".to_string()),
        (
            "src/lib.rs - f (line 3)".to_string(),
            "Doc-tests calc".to_string(),
        ),
    ];
    // Every header first (stderr's thread ran ahead).
    assert_eq!(
        groups(&[
            (
                E,
                "     Running unittests src/lib.rs (target/debug/deps/calc-1)"
            ),
            (E, "     Running tests/api.rs (target/debug/deps/api-2)"),
            (E, "   Doc-tests calc"),
            (O, "running 1 test"),
            (O, "test tests::a ... ok"),
            (O, "test result: ok. 1 passed"),
            (O, "running 1 test"),
            (O, "test api_works ... ok"),
            (O, "test result: ok. 1 passed"),
            (O, "running 1 test"),
            (O, "test src/lib.rs - f (line 3) ... ok"),
        ]),
        want
    );
    // Each header after its results (stdout's thread ran ahead).
    assert_eq!(
        groups(&[
            (O, "running 1 test"),
            (O, "test tests::a ... ok"),
            (
                E,
                "     Running unittests src/lib.rs (target/debug/deps/calc-1)"
            ),
            (O, "running 1 test"),
            (O, "test api_works ... ok"),
            (E, "     Running tests/api.rs (target/debug/deps/api-2)"),
            (O, "running 1 test"),
            (E, "   Doc-tests calc"),
            (O, "test src/lib.rs - f (line 3) ... ok"),
        ]),
        want
    );
}

#[test]
fn a_failure_without_its_report_is_rerun_alone_in_its_target() {
    // A hung test got the binary stopped before libtest's summary, which
    // holds every failure's report: the failure is known by name only.
    let mut parser = CargoAdapter.parser();
    feed(
        parser.as_mut(),
        MIXED_OUT,
        MIXED_ERR,
        Some("test tests::fails ... FAILED"),
    );
    let r = parser.finish(None);
    let f = r
        .failures
        .iter()
        .find(|f| f.name == "tests::fails")
        .unwrap();
    assert_eq!((f.file.as_deref(), f.message.as_str()), (None, ""));
    let case = r.tests.iter().find(|t| t.name == "tests::fails").unwrap();
    let target = TestTarget::new("/p");
    let cmd = CargoAdapter.details_command(&target, case).unwrap();
    assert_eq!(
        cmd.display(),
        "cargo test --no-fail-fast --lib -- tests::fails --exact"
    );
    assert_eq!(cmd.env["RUST_BACKTRACE"], "1");
    let mut it = case.clone();
    it.group = Some("tests/it.rs".into());
    assert_eq!(
        CargoAdapter
            .details_command(&target, &it)
            .unwrap()
            .display(),
        "cargo test --no-fail-fast --test it -- tests::fails --exact"
    );
}

#[test]
fn one_test_thread_names_the_running_test_on_its_unfinished_line() {
    let parser = CargoAdapter.parser();
    assert_eq!(
        parser.running_in_partial_line(Stream::Stdout, "test bank::tests::opposite ... "),
        Some("bank::tests::opposite".to_string())
    );
    assert_eq!(
        parser.running_in_partial_line(Stream::Stdout, "test bank::tests::opposite ... ok"),
        None
    );
    assert_eq!(
        parser.running_in_partial_line(Stream::Stdout, "some out"),
        None
    );
}
