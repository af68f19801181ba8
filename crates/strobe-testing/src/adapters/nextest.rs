//! Rust under cargo-nextest: `cargo nextest run`, for projects that opted
//! in (a `.config/nextest.toml`) on machines that have it; everything else
//! stays with the `cargo` adapter.
//!
//! Nextest's libtest-compatible JSON (`--message-format libtest-json`,
//! enabled on stable by `NEXTEST_EXPERIMENTAL_LIBTEST_JSON=1`) is read from
//! stdout: one line per event as it happens, `started` for each test (the
//! tests running now, the candidates when a run hangs), then `ok`, `ignored`
//! or `failed` with the test's captured output, where libtest's panic
//! header, message and backtrace are read by the cargo adapter's reader.
//! Names are `<binary id>$<test>`: the test part is the name (nextest's
//! `test(=name)` filter takes it back), the binary the group. Nextest's
//! human report still goes to stderr; from it come the build errors
//! before the run, and a failed test's status when it has no panic to
//! tell (`SIGSEGV`, `SIGTERM`, `TIMEOUT`…).
//!
//! An instrumented rerun traces one process, and nextest runs each test in
//! a process of its own under its launcher: the test program is the libtest
//! binary itself, found and run as the cargo adapter does; the parser then
//! reads its libtest output as the cargo adapter's parser does.
//!
//! One oddity of nextest 0.9.x's libtest-json: with a test filter, an
//! `#[ignore]`d test filtered out is reported `started` and never ends, so
//! it stays in `Progress.running` of that run.

use super::cargo::{CargoAdapter, CargoParser, read_failure_report};
use crate::adapter::{Ecosystem, OutputParser, Stream, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::result::{Progress, Summary, TestCase, TestFailure, TestResult, TestStatus};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Most lines of a build failure kept.
const MAX_BUILD_ERROR_LINES: usize = 60;

/// The `cargo nextest run` adapter.
pub struct NextestAdapter;

/// Whether `cargo-nextest` is installed where cargo finds subcommands: on
/// PATH or in `$CARGO_HOME/bin` (`~/.cargo/bin`).
fn nextest_installed() -> bool {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        dirs.push(PathBuf::from(home).join("bin"));
    } else if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".cargo/bin"));
    }
    dirs.iter().any(|d| d.join("cargo-nextest").is_file())
}

impl NextestAdapter {
    fn command(project_root: &Path, extra: &[&str]) -> TestCommand {
        let env = [
            ("CARGO_TERM_COLOR", "never"),
            ("RUST_BACKTRACE", "1"),
            ("NEXTEST_EXPERIMENTAL_LIBTEST_JSON", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect::<BTreeMap<_, _>>();
        // `--no-tests=warn`: a filter matching nothing is an empty run
        // (nextest fails it by default).
        let base = [
            "nextest",
            "run",
            "--no-fail-fast",
            "--no-tests=warn",
            "--message-format",
            "libtest-json",
        ];
        TestCommand {
            program: "cargo".into(),
            args: base.iter().chain(extra).map(|a| a.to_string()).collect(),
            cwd: project_root.to_path_buf(),
            env,
        }
    }
}

impl TestAdapter for NextestAdapter {
    fn name(&self) -> &'static str {
        "nextest"
    }
    fn title(&self) -> &'static str {
        "cargo-nextest"
    }
    fn ecosystem(&self) -> Ecosystem {
        Ecosystem::Rust
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        let root = target.root.as_path();
        // Above cargo's 90 only for projects that chose nextest, and only
        // where it can run; else 0 and cargo runs them.
        if root.join("Cargo.toml").is_file()
            && root.join(".config/nextest.toml").is_file()
            && nextest_installed()
        {
            95
        } else {
            0
        }
    }

    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand {
        let extra: &[&str] = match level {
            Some(TestLevel::Unit) => &["--lib", "--bins"],
            // As with cargo: no separate end-to-end tests, both mean `tests/`.
            Some(TestLevel::Integration | TestLevel::E2e) => &["--test", "*"],
            None => &[],
        };
        Self::command(target.root.as_path(), extra)
    }

    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        let filter = format!("test(={test})");
        Self::command(target.root.as_path(), &["-E", &filter])
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(NextestParser::default())
    }

    fn builds_first(&self) -> bool {
        true
    }

    fn test_program(
        &self,
        target: &TestTarget,
        level: Option<TestLevel>,
        test: Option<&str>,
    ) -> Result<TestCommand, String> {
        // Not `cargo nextest`: the test binary, which runs the test itself.
        CargoAdapter.test_program(target, level, test)
    }

    fn suggest_traces(&self, failure: &TestFailure) -> Vec<String> {
        // The same frames and modules as under `cargo test`.
        CargoAdapter.suggest_traces(failure)
    }
}

/// Parses `cargo nextest run --message-format libtest-json` as it streams.
#[derive(Default)]
pub struct NextestParser {
    group: Option<String>,
    tests: Vec<TestCase>,
    summary: Summary,
    failures: Vec<TestFailure>,
    /// Tests started and not finished: (group, name).
    running: Vec<(String, String)>,
    /// Nextest's status word for tests that ended other than by passing or
    /// failing an assertion (`SIGSEGV`, `TIMEOUT`…), from its human report.
    statuses: BTreeMap<String, String>,
    /// Whether nextest started running tests (after the build).
    started: bool,
    /// Whether a JSON event came: nextest's run, not a test binary's.
    events: bool,
    build_errors: Vec<String>,
    /// The test binary's own libtest output, when the test program ran
    /// without nextest (an instrumented rerun).
    libtest: CargoParser,
}

/// `SIGSEGV [   0.1s] (3/4) calc tests::x` → ("SIGSEGV", "tests::x").
fn status_line(line: &str) -> Option<(&str, &str)> {
    let (word, rest) = line.trim_start().split_once(" [")?;
    if !word.chars().all(|c| c.is_ascii_uppercase() || c == '-') || word.is_empty() {
        return None;
    }
    let (_, rest) = rest.split_once("] ")?;
    let rest = match rest.strip_prefix('(') {
        Some(r) => r.split_once(") ")?.1,
        None => rest,
    };
    let (_binary, test) = rest.split_once(' ')?;
    Some((word, test))
}

/// What nextest's status word says when the test printed no panic.
fn status_message(word: &str) -> String {
    match word {
        "TIMEOUT" => "timed out (nextest's slow-timeout)".to_string(),
        w if w.starts_with("SIG") => format!("the test's process ended with {w}"),
        w => format!("nextest reported {w}"),
    }
}

impl NextestParser {
    /// Whether the output is a test binary's own (libtest's human report),
    /// not nextest's: no nextest event, and libtest reported tests.
    fn runs_libtest(&self) -> bool {
        if self.events || self.started {
            return false;
        }
        let p = self.libtest.progress();
        p.summary.passed + p.summary.failed + p.summary.skipped > 0 || !p.failures.is_empty()
    }

    fn event(&mut self, event: &serde_json::Value) {
        if event["type"] != "test" {
            return;
        }
        let Some(full) = event["name"].as_str() else {
            return;
        };
        let (group, name) = full.split_once('$').unwrap_or(("", full));
        let kind = event["event"].as_str().unwrap_or_default();
        let key = (group.to_string(), name.to_string());
        if kind == "started" {
            if !self.running.contains(&key) {
                self.running.push(key);
            }
            self.group = Some(group.to_string());
            return;
        }
        let status = match kind {
            "ok" => TestStatus::Passed,
            "failed" => TestStatus::Failed,
            "ignored" => TestStatus::Skipped,
            // `timeout` is libtest's "still running" note, not an outcome.
            _ => return,
        };
        self.running.retain(|r| *r != key);
        let output = event["stdout"].as_str().unwrap_or_default();
        match status {
            TestStatus::Passed => self.summary.passed += 1,
            TestStatus::Skipped => self.summary.skipped += 1,
            TestStatus::Failed => {
                self.summary.failed += 1;
                let mut f = read_failure_report(TestFailure::new(name), output);
                if f.message.is_empty()
                    && let Some(word) = self.statuses.get(name)
                {
                    f.message = status_message(word);
                }
                self.failures.push(f);
            }
        }
        self.tests.push(TestCase {
            name: name.to_string(),
            status,
            duration_ms: event["exec_time"].as_f64().map(|s| s * 1000.0),
            group: (!group.is_empty()).then(|| group.to_string()),
            output: (!output.is_empty()).then(|| output.to_string()),
        });
    }

    fn stderr_line(&mut self, line: &str) {
        let t = line.trim_start();
        if t.starts_with("Starting ") {
            self.started = true;
            return;
        }
        if !self.started {
            // The build: keep from cargo's (or nextest's) first error on.
            if (t.starts_with("error") || !self.build_errors.is_empty())
                && self.build_errors.len() < MAX_BUILD_ERROR_LINES
            {
                self.build_errors.push(line.to_string());
            }
            return;
        }
        if let Some((word, test)) = status_line(line)
            && !matches!(word, "PASS" | "FAIL" | "SKIP" | "START" | "SLOW" | "RETRY")
        {
            self.statuses.insert(test.to_string(), word.to_string());
            // Its `failed` event may have come first.
            if let Some(f) = self
                .failures
                .iter_mut()
                .find(|f| f.name == test && f.message.is_empty())
            {
                f.message = status_message(word);
            }
        }
    }
}

impl OutputParser for NextestParser {
    fn line(&mut self, stream: Stream, line: &str) {
        match stream {
            Stream::Stdout => {
                if line.starts_with('{')
                    && let Ok(event) = serde_json::from_str::<serde_json::Value>(line)
                {
                    self.started = true;
                    self.events = true;
                    self.event(&event);
                } else if !self.events {
                    self.libtest.line(stream, line);
                }
            }
            Stream::Stderr => self.stderr_line(line),
        }
    }

    fn running(&self) -> Vec<String> {
        if self.runs_libtest() {
            return self.libtest.running();
        }
        self.running.iter().map(|(_, name)| name.clone()).collect()
    }

    fn progress(&self) -> Progress {
        if self.runs_libtest() {
            return self.libtest.progress();
        }
        Progress {
            summary: self.summary,
            current_group: self.group.clone(),
            running: self.running(),
            failures: self.failures.clone(),
        }
    }

    fn finish(self: Box<Self>, exit_code: Option<i32>) -> TestResult {
        let this = *self;
        if this.runs_libtest() {
            let mut result = Box::new(this.libtest).finish(exit_code);
            result.framework = "nextest".into();
            return result;
        }
        // Killed once tests started is a hang, not a failure to start.
        let ended_badly = match exit_code {
            Some(c) => c != 0,
            None => !this.started,
        };
        let error = if this.tests.is_empty() && !this.build_errors.is_empty() {
            Some(this.build_errors.join("\n"))
        } else if this.tests.is_empty() && ended_badly {
            Some(match exit_code {
                Some(c) => format!("cargo nextest exited with code {c} before any test ran"),
                None => "cargo nextest was killed before any test ran".to_string(),
            })
        } else {
            None
        };
        let failures = this
            .failures
            .into_iter()
            .map(|mut f| {
                f.suggested_traces = NextestAdapter.suggest_traces(&f);
                f
            })
            .collect();
        TestResult {
            framework: "nextest".into(),
            summary: this.summary,
            tests: this.tests,
            failures,
            exit_code,
            error,
        }
    }
}
