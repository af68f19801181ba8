//! The nextest adapter over output captured from `cargo nextest run
//! --message-format libtest-json` (cargo-nextest 0.9.143, stable Rust, with
//! NEXTEST_EXPERIMENTAL_LIBTEST_JSON=1) on tests/fixtures/nextest_project:
//! `nextest_mixed.*` (a passing, a failing, an ignored, a deadlock-on-request
//! and an integration test), `nextest_hang.*` (the same with
//! STROBE_FIXTURE_HANG=1, stopped by SIGTERM after 8 s) and
//! `nextest_build_error.stderr` (a type error).

use strobe_testing::adapters::nextest::NextestAdapter;
use strobe_testing::{Stream, TestAdapter, TestLevel, TestStatus, TestTarget};

const MIXED_OUT: &str = include_str!("output/nextest_mixed.stdout");
const MIXED_ERR: &str = include_str!("output/nextest_mixed.stderr");
const HANG_OUT: &str = include_str!("output/nextest_hang.stdout");
const HANG_ERR: &str = include_str!("output/nextest_hang.stderr");

fn feed(parser: &mut dyn strobe_testing::OutputParser, out: &str, err: &str) {
    for l in err.lines() {
        parser.line(Stream::Stderr, l);
    }
    for l in out.lines() {
        parser.line(Stream::Stdout, l);
    }
}

#[test]
fn a_mixed_run_is_counted_and_its_failures_located() {
    let mut parser = NextestAdapter.parser();
    feed(parser.as_mut(), MIXED_OUT, MIXED_ERR);
    let r = parser.finish(Some(100));
    assert_eq!(r.framework, "nextest");
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (3, 1, 1)
    );
    assert_eq!(r.error, None);
    let it = r
        .tests
        .iter()
        .find(|t| t.name == "blank_items_count_as_zero")
        .unwrap();
    assert_eq!(it.group.as_deref(), Some("calc::api"));
    assert!(it.duration_ms.unwrap() > 0.0);
    let skipped = r
        .tests
        .iter()
        .find(|t| t.name == "tests::slow_case")
        .unwrap();
    assert_eq!(skipped.status, TestStatus::Skipped);

    assert_eq!(r.failures.len(), 1);
    let f = &r.failures[0];
    assert_eq!(f.name, "tests::negative_numbers");
    assert_eq!(f.file.as_deref(), Some("src/lib.rs"));
    assert_eq!(f.line, Some(21));
    assert_eq!(
        f.message,
        "assertion `left == right` failed: five minus two\n  left: 3\n right: 7"
    );
    assert_eq!(f.frames, ["calc::tests::negative_numbers"]);
    assert_eq!(f.suggested_traces, ["calc::tests::*"]);
}

#[test]
fn a_hang_leaves_its_test_running_and_earlier_failures_known() {
    // The run as it stood while the deadlocked test hung: every line up to
    // the integration test's result.
    let mut parser = NextestAdapter.parser();
    for l in HANG_ERR.lines().take_while(|l| !l.contains("Cancelling")) {
        parser.line(Stream::Stderr, l);
    }
    for l in HANG_OUT.lines().take(13) {
        parser.line(Stream::Stdout, l);
    }
    let p = parser.progress();
    assert_eq!(p.running, ["tests::test_hangs_when_asked"]);
    assert_eq!((p.summary.passed, p.summary.failed), (2, 1));
    assert_eq!(p.failures[0].name, "tests::negative_numbers");
    assert_eq!(
        (p.failures[0].file.as_deref(), p.failures[0].line),
        (Some("src/lib.rs"), Some(21))
    );
    let r = parser.finish(None);
    assert_eq!(r.error, None, "tests ran: the kill is not a build error");

    // Nextest itself stopped it (SIGTERM): its status is the message.
    let mut parser = NextestAdapter.parser();
    feed(parser.as_mut(), HANG_OUT, HANG_ERR);
    let r = parser.finish(Some(124));
    let hung = r
        .failures
        .iter()
        .find(|f| f.name == "tests::test_hangs_when_asked")
        .unwrap();
    assert_eq!(hung.message, "the test's process ended with SIGTERM");
}

#[test]
fn a_test_binarys_own_output_is_read_as_libtest() {
    // An instrumented rerun runs the libtest binary without nextest
    // (captured from `cargo test` on the cargo fixture).
    let mut parser = NextestAdapter.parser();
    for l in include_str!("output/cargo_mixed.stdout").lines() {
        parser.line(Stream::Stdout, l);
    }
    assert_eq!(parser.progress().summary.failed, 2);
    let r = parser.finish(Some(101));
    assert_eq!(r.framework, "nextest");
    assert_eq!(r.error, None);
    let f = r
        .failures
        .iter()
        .find(|f| f.name == "tests::fails")
        .unwrap();
    assert_eq!((f.file.as_deref(), f.line), (Some("src/lib.rs"), Some(11)));
}

#[test]
fn a_build_error_is_the_runs_error() {
    let mut parser = NextestAdapter.parser();
    for l in include_str!("output/nextest_build_error.stderr").lines() {
        parser.line(Stream::Stderr, l);
    }
    let r = parser.finish(Some(101));
    assert!(r.tests.is_empty());
    let error = r.error.unwrap();
    assert!(
        error.starts_with("error[E0308]: mismatched types"),
        "{error}"
    );
    assert!(error.contains("src/lib.rs:20:25"), "{error}");
}

#[test]
fn detection_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    let target = TestTarget::new(dir.path());
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    assert_eq!(NextestAdapter.detect(&target), 0, "not opted in");
    assert_eq!(
        strobe_testing::choose(&target, None).unwrap().name(),
        "cargo"
    );
    std::fs::create_dir_all(dir.path().join(".config")).unwrap();
    std::fs::write(dir.path().join(".config/nextest.toml"), "").unwrap();
    let installed = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("cargo-nextest").is_file()));
    if installed {
        assert_eq!(NextestAdapter.detect(&target), 95);
        assert_eq!(
            strobe_testing::choose(&target, None).unwrap().name(),
            "nextest"
        );
    }

    let suite = NextestAdapter.suite_command(&target, None);
    assert_eq!(
        suite.display(),
        "cargo nextest run --no-fail-fast --no-tests=warn --message-format libtest-json"
    );
    assert_eq!(suite.env["NEXTEST_EXPERIMENTAL_LIBTEST_JSON"], "1");
    assert_eq!(suite.env["RUST_BACKTRACE"], "1");
    let unit = NextestAdapter.suite_command(&target, Some(TestLevel::Unit));
    assert!(
        unit.display().ends_with(" --lib --bins"),
        "{}",
        unit.display()
    );
    let integration = NextestAdapter.suite_command(&target, Some(TestLevel::Integration));
    assert!(
        integration.display().ends_with(" --test '*'"),
        "{}",
        integration.display()
    );
    let one = NextestAdapter.single_test_command(&target, "tests::negative_numbers");
    assert_eq!(
        one.args[one.args.len() - 2..],
        ["-E", "test(=tests::negative_numbers)"]
    );
    assert_eq!(one.cwd, dir.path());
}
