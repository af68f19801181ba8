//! The bun adapter over output captured from `bun test` 1.4.5 (non-TTY,
//! NO_COLOR) on tests/fixtures/bun_project (`tests/output/bun_mixed.*`: a
//! passing, a failing `expect`, a skipped, a throwing and a passing test),
//! and on a test file importing a missing module (`bun_load_error`).

use strobe_testing::adapters::bun::BunAdapter;
use strobe_testing::{OutputParser, Stream, TestAdapter, TestLevel, TestStatus, TestTarget};

const MIXED_OUT: &str = include_str!("output/bun_mixed.stdout");
const MIXED_ERR: &str = include_str!("output/bun_mixed.stderr");

/// Feeds the run as it interleaves live: the test's `console.log` (stdout)
/// comes while it runs, before its report on stderr. Stops after `upto`.
fn feed(parser: &mut dyn OutputParser, upto: Option<&str>) {
    let mut out = MIXED_OUT.lines();
    parser.line(Stream::Stdout, out.next().unwrap()); // bun test v1.4.5
    for line in MIXED_ERR.lines() {
        if line.contains("/** Parses") {
            // The throwing test's excerpt: it printed before it threw.
            for l in out.by_ref() {
                parser.line(Stream::Stdout, l);
            }
        }
        parser.line(Stream::Stderr, line);
        if Some(line) == upto {
            return;
        }
    }
}

#[test]
fn a_mixed_run_is_counted_and_its_failures_located() {
    let mut parser = BunAdapter.parser();
    feed(parser.as_mut(), None);
    let r = parser.finish(Some(1));
    assert_eq!(r.framework, "bun");
    assert_eq!(
        (r.summary.passed, r.summary.failed, r.summary.skipped),
        (2, 2, 1)
    );
    assert_eq!(r.error, None);
    let skipped = r
        .tests
        .iter()
        .find(|t| t.name == "sumList > slow case")
        .unwrap();
    assert_eq!(skipped.status, TestStatus::Skipped);
    assert_eq!(skipped.group.as_deref(), Some("calc.test.ts"));
    assert!(r.tests[0].duration_ms.is_some());

    let expect = r
        .failures
        .iter()
        .find(|f| f.name == "sumList > negative numbers")
        .unwrap();
    assert_eq!(expect.file.as_deref(), Some("/home/user/proj/calc.test.ts"));
    assert_eq!(expect.line, Some(11));
    assert_eq!(
        expect.message,
        "expect(received).toBe(expected)\n\nExpected: 7\nReceived: 3"
    );
    assert!(expect.suggested_traces.is_empty());

    // A throw is placed where it was thrown, in the project's code, with
    // the test's console output.
    let thrown = r.failures.iter().find(|f| f.name == "parse error").unwrap();
    assert_eq!(thrown.file.as_deref(), Some("/home/user/proj/calc.ts"));
    assert_eq!(thrown.line, Some(13));
    assert_eq!(thrown.message, "not a count: \"x\"");
    assert_eq!(thrown.frames, ["parseCount"]);
    assert!(
        thrown.output.starts_with("parsing x\n"),
        "{}",
        thrown.output
    );
    let case = r.tests.iter().find(|t| t.name == "parse error").unwrap();
    assert_eq!(case.output.as_deref(), Some("parsing x"));
}

#[test]
fn failures_are_known_as_their_test_ends() {
    // The run is cut (a later test spins forever) right after the first
    // failure's line: it is complete already.
    let mut parser = BunAdapter.parser();
    feed(
        parser.as_mut(),
        Some("(fail) sumList > negative numbers [0.21ms]"),
    );
    let p = parser.progress();
    assert_eq!(p.summary.passed, 1);
    assert_eq!(p.summary.failed, 1);
    assert_eq!(p.current_group.as_deref(), Some("calc.test.ts"));
    assert_eq!(p.failures[0].line, Some(11));
    let r = parser.finish(None);
    assert_eq!(r.exit_code, None);
    assert_eq!(r.error, None, "tests ran: the kill is not an error");
    assert_eq!(
        r.failures[0].file.as_deref(),
        Some("/home/user/proj/calc.test.ts")
    );
}

#[test]
fn a_file_that_does_not_load_is_the_runs_error() {
    let mut parser = BunAdapter.parser();
    for l in include_str!("output/bun_load_error.stderr").lines() {
        parser.line(Stream::Stderr, l);
    }
    let r = parser.finish(Some(1));
    assert!(r.tests.is_empty());
    let e = r.error.unwrap();
    assert!(e.contains("Cannot find module './nope'"), "{e}");

    // No test files at all: an empty run, not an error.
    let mut parser = BunAdapter.parser();
    parser.line(Stream::Stdout, "bun test v1.4.5 (a7733435c)");
    parser.line(Stream::Stderr, "No tests found!");
    let r = parser.finish(Some(1));
    assert_eq!((r.tests.len(), r.error), (0, None));
}

#[test]
fn terminal_marks_and_timeouts_are_read_too() {
    let mut parser = BunAdapter.parser();
    for l in [
        "\x1b[0m\x1b[32m\u{2713}\x1b[0m \x1b[0msumList\x1b[2m >\x1b[0m\x1b[1m sums numbers\x1b[0m \x1b[0m\x1b[2m[0.24ms\x1b[0m\x1b[2m]\x1b[0m",
        "(fail) waits [100.01ms]",
        "  ^ this test timed out after 100ms.",
    ] {
        parser.line(Stream::Stderr, l);
    }
    let r = parser.finish(Some(1));
    assert_eq!(r.tests[0].name, "sumList > sums numbers");
    assert_eq!(r.tests[0].status, TestStatus::Passed);
    assert_eq!(r.failures[0].message, "this test timed out after 100ms.");
}

#[test]
fn detection_and_commands() {
    let dir = tempfile::tempdir().unwrap();
    let target = TestTarget::new(dir.path());
    assert_eq!(BunAdapter.detect(&target), 0);
    std::fs::write(
        dir.path().join("package.json"),
        r#"{"scripts": {"test": "bun test"}}"#,
    )
    .unwrap();
    assert_eq!(BunAdapter.detect(&target), 85);
    assert_eq!(strobe_testing::choose(&target, None).unwrap().name(), "bun");
    // A lockfile alone is a bun project too.
    std::fs::write(dir.path().join("package.json"), r#"{"name": "x"}"#).unwrap();
    assert_eq!(BunAdapter.detect(&target), 0);
    std::fs::write(dir.path().join("bun.lock"), "{}").unwrap();
    assert_eq!(BunAdapter.detect(&target), 85);
    // Jest, Vitest and Mocha projects are theirs, even installed by bun.
    for package in [
        r#"{"devDependencies": {"jest": "^30"}}"#,
        r#"{"devDependencies": {"vitest": "^5"}}"#,
        r#"{"scripts": {"test": "mocha test/"}}"#,
    ] {
        std::fs::write(dir.path().join("package.json"), package).unwrap();
        assert_eq!(BunAdapter.detect(&target), 0, "{package}");
    }
    std::fs::write(dir.path().join("package.json"), r#"{"name": "x"}"#).unwrap();
    std::fs::write(dir.path().join("vitest.config.ts"), "").unwrap();
    assert_eq!(BunAdapter.detect(&target), 0);
    std::fs::remove_file(dir.path().join("vitest.config.ts")).unwrap();

    let suite = BunAdapter.suite_command(&target, None);
    assert_eq!(suite.display(), "bun test");
    assert_eq!(suite.env["NO_COLOR"], "1");
    assert_eq!(suite.cwd, dir.path());
    // No tests/unit directory: the level cannot be told apart.
    assert_eq!(
        BunAdapter
            .suite_command(&target, Some(TestLevel::Unit))
            .display(),
        "bun test"
    );
    std::fs::create_dir_all(dir.path().join("tests/unit")).unwrap();
    assert_eq!(
        BunAdapter
            .suite_command(&target, Some(TestLevel::Unit))
            .display(),
        "bun test ./tests/unit"
    );
    let one = BunAdapter.single_test_command(&target, "sumList > add (twice)");
    assert_eq!(
        one.args,
        ["test", "--test-name-pattern", r"^sumList add \(twice\)$"]
    );
    // The project's own bun first.
    std::fs::create_dir_all(dir.path().join("node_modules/.bin")).unwrap();
    std::fs::write(dir.path().join("node_modules/.bin/bun"), "").unwrap();
    assert_eq!(
        BunAdapter.suite_command(&target, None).program,
        dir.path()
            .join("node_modules/.bin/bun")
            .display()
            .to_string()
    );
}
