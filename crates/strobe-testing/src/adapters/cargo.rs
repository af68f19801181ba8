//! Rust: `cargo test` on stable, reading libtest's human output (its JSON
//! format needs nightly). `--no-fail-fast` so every test binary runs;
//! `RUST_BACKTRACE=1` so a failure's frames name the functions to trace.

use crate::adapter::{Ecosystem, OutputParser, Stream, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::result::{Progress, Summary, TestCase, TestFailure, TestResult, TestStatus};
use std::collections::BTreeMap;
use std::path::Path;

/// Most trace patterns suggested per failure.
const MAX_SUGGESTIONS: usize = 5;
/// Most lines of a build failure kept.
const MAX_BUILD_ERROR_LINES: usize = 60;

/// The `cargo test` adapter.
pub struct CargoAdapter;

impl CargoAdapter {
    fn command(project_root: &Path, args: &[&str]) -> TestCommand {
        let env = [("CARGO_TERM_COLOR", "never"), ("RUST_BACKTRACE", "1")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>();
        TestCommand {
            program: "cargo".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: project_root.to_path_buf(),
            env,
        }
    }
}

impl TestAdapter for CargoAdapter {
    fn name(&self) -> &'static str {
        "cargo"
    }
    fn title(&self) -> &'static str {
        "cargo"
    }
    fn ecosystem(&self) -> Ecosystem {
        Ecosystem::Rust
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        let project_root = target.root.as_path();
        let Ok(manifest) = std::fs::read_to_string(project_root.join("Cargo.toml")) else {
            return 0;
        };
        if manifest.contains("[package]") || manifest.contains("[workspace]") {
            90
        } else {
            50
        }
    }

    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand {
        let project_root = target.root.as_path();
        let mut args = vec!["test", "--no-fail-fast"];
        match level {
            Some(TestLevel::Unit) => args.extend(["--lib", "--bins"]),
            // Cargo has no separate end-to-end tests: both mean `tests/`.
            Some(TestLevel::Integration | TestLevel::E2e) => args.extend(["--test", "*"]),
            None => {}
        }
        Self::command(project_root, &args)
    }

    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        let project_root = target.root.as_path();
        Self::command(
            project_root,
            &["test", "--no-fail-fast", "--", test, "--exact"],
        )
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(CargoParser::default())
    }

    /// The test binary's target alone (from its group: `unittests
    /// src/lib.rs` → `--lib`, `tests/api.rs` → `--test api`…) and the test
    /// by its exact name: libtest prints a failure's report in its summary,
    /// which never comes once a hung test got the binary stopped.
    fn details_command(&self, target: &TestTarget, test: &TestCase) -> Option<TestCommand> {
        let group = test.group.as_deref().unwrap_or("");
        let selector: Vec<String> = if group == "unittests src/lib.rs" {
            vec!["--lib".into()]
        } else if group.starts_with("unittests src/") {
            vec!["--bins".into()]
        } else if let Some(file) = group.strip_prefix("tests/") {
            let name = file.strip_suffix(".rs").unwrap_or(file);
            let name = name.strip_suffix("/main").unwrap_or(name);
            vec!["--test".into(), name.into()]
        } else if group.starts_with("Doc-tests ") {
            vec!["--doc".into()]
        } else {
            Vec::new()
        };
        let mut args = vec!["test".to_string(), "--no-fail-fast".into()];
        args.extend(selector);
        args.extend(["--".into(), test.name.clone(), "--exact".into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Some(Self::command(&target.root, &args))
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
        let mut build = self.suite_command(target, level);
        build
            .args
            .extend(["--no-run", "--message-format=json"].map(String::from));
        let out = std::process::Command::new(&build.program)
            .args(&build.args)
            .current_dir(&build.cwd)
            .envs(&build.env)
            .output()
            .map_err(|e| format!("cannot run `{}`: {e}", build.display()))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(MAX_BUILD_ERROR_LINES).collect();
            return Err(format!(
                "`{}` failed:\n{}",
                build.display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        let executables = test_executables(&String::from_utf8_lossy(&out.stdout));
        let chosen: Vec<&String> = match test {
            Some(t) => executables
                .iter()
                .filter(|exe| lists_test(exe, &target.root, t))
                .collect(),
            None => executables.iter().collect(),
        };
        let mut env = build.env.clone();
        env.remove("CARGO_TERM_COLOR");
        match (chosen.as_slice(), test) {
            ([exe], _) => Ok(TestCommand {
                program: exe.to_string(),
                args: test
                    .map(|t| vec![t.to_string(), "--exact".to_string()])
                    .unwrap_or_default(),
                cwd: target.root.clone(),
                env,
            }),
            ([], Some(t)) => Err(format!(
                "no test binary of this project has a test named {t:?} (as `cargo test -- --list` names it)"
            )),
            ([], None) => Err("the build produced no test binary".into()),
            (many, _) => Err(format!(
                "an instrumented run traces one test binary; these {} have {}: {}. Name one test with 'test' (or a 'level')",
                many.len(),
                test.map_or("tests".to_string(), |t| format!("a test named {t:?}")),
                many.iter()
                    .map(|e| std::path::Path::new(e.as_str())
                        .file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    fn suggest_traces(&self, failure: &TestFailure) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut push = |p: String| {
            if !out.contains(&p) && out.len() < MAX_SUGGESTIONS {
                out.push(p);
            }
        };
        // The functions the failure went through, then the test's module.
        for f in failure.frames.iter().skip(1) {
            push(f.clone());
        }
        if let Some(test) = failure.frames.first()
            && let Some((module, _)) = test.rsplit_once("::")
        {
            push(format!("{module}::*"));
        }
        out
    }
}

/// Parses `cargo test` output as it streams.
#[derive(Default)]
pub struct CargoParser {
    group: Option<String>,
    /// Test binaries cargo announced on stderr ("Running …", "Doc-tests …")
    /// whose results have not started on stdout yet. The two pipes are read
    /// by separate threads, so a header may be read after the results it
    /// announces, or before the previous binary's last results: headers are
    /// paired with stdout's `running N tests` lines in order instead.
    headers: std::collections::VecDeque<String>,
    /// Where the current binary's tests start in `tests`, while its header
    /// has not been read yet.
    awaiting_header: Option<usize>,
    tests: Vec<TestCase>,
    summary: Summary,
    failures: Vec<TestFailure>,
    /// The failure whose `---- name stdout ----` block is being read.
    block: Option<usize>,
    section: Section,
    /// A backtrace frame's function, waiting for its `at` line.
    frame: Option<String>,
    build_errors: Vec<String>,
}

#[derive(Default, PartialEq)]
enum Section {
    /// Captured output before the panic.
    #[default]
    Output,
    /// The panic message.
    Message,
    /// The backtrace.
    Backtrace,
    /// Notes after it.
    Rest,
}

impl CargoParser {
    fn failure(&mut self, name: &str) -> usize {
        if let Some(i) = self.failures.iter().position(|f| f.name == name) {
            return i;
        }
        self.failures.push(TestFailure::new(name));
        self.failures.len() - 1
    }

    fn test_line(&mut self, name: &str, outcome: &str) {
        let status = if outcome == "ok" {
            TestStatus::Passed
        } else if outcome.starts_with("FAILED") {
            TestStatus::Failed
        } else if outcome.starts_with("ignored") {
            TestStatus::Skipped
        } else {
            return;
        };
        match status {
            TestStatus::Passed => self.summary.passed += 1,
            TestStatus::Failed => {
                self.summary.failed += 1;
                self.failure(name);
            }
            TestStatus::Skipped => self.summary.skipped += 1,
        }
        self.tests.push(TestCase {
            name: name.to_string(),
            status,
            duration_ms: None,
            group: self.group.clone(),
            output: None,
        });
    }

    /// A test binary announced on stderr: the group of the results
    /// already read without one, else of the next results to start.
    fn header(&mut self, group: String) {
        match self.awaiting_header.take() {
            Some(start) => {
                for t in &mut self.tests[start..] {
                    t.group = Some(group.clone());
                }
                self.group = Some(group);
            }
            None => self.headers.push_back(group),
        }
    }

    fn block_line(&mut self, i: usize, line: &str) {
        let f = &mut self.failures[i];
        f.output.push_str(line);
        f.output.push('\n');
        if let Some(place) = panic_location(line) {
            f.file = Some(place.0);
            f.line = place.1;
            if let Some(message) = place.2 {
                f.message = message;
            }
            self.section = Section::Message;
            return;
        }
        match self.section {
            Section::Message if line.starts_with("stack backtrace:") => {
                self.section = Section::Backtrace
            }
            Section::Message if line.starts_with("note: ") => self.section = Section::Rest,
            Section::Message => {
                if !f.message.is_empty() {
                    f.message.push('\n');
                }
                f.message.push_str(line);
            }
            Section::Backtrace => {
                let t = line.trim_start();
                if let Some(at) = t.strip_prefix("at ") {
                    // The program's own code: relative paths (toolchain
                    // frames point into /rustc/ or the registry).
                    if let Some(name) = self.frame.take()
                        && !at.starts_with('/')
                        && !f.frames.contains(&name)
                    {
                        f.frames.push(name);
                    }
                } else if let Some((n, name)) = t.split_once(": ")
                    && n.chars().all(|c| c.is_ascii_digit())
                {
                    let name = name.trim_end_matches("::{{closure}}");
                    self.frame = Some(name.to_string());
                } else if t.starts_with("note: ") {
                    self.section = Section::Rest;
                }
            }
            Section::Output | Section::Rest => {}
        }
    }
}

/// Reads libtest's report of one failed test (its captured output: the
/// panic header, message and backtrace) into `failure`, line by line as a
/// `---- name stdout ----` block of `cargo test` is read: for runners that
/// hand the report over whole (cargo-nextest).
pub(crate) fn read_failure_report(failure: TestFailure, report: &str) -> TestFailure {
    let mut parser = CargoParser {
        failures: vec![failure],
        block: Some(0),
        ..CargoParser::default()
    };
    for line in report.lines() {
        parser.block_line(0, line);
    }
    parser.failures.pop().expect("the failure being read")
}

/// The test executables in `cargo --message-format=json` output.
fn test_executables(json_lines: &str) -> Vec<String> {
    json_lines
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .filter_map(|m| m["executable"].as_str().map(str::to_string))
        .collect()
}

/// Whether a libtest binary has a test named exactly `test`.
fn lists_test(exe: &str, cwd: &Path, test: &str) -> bool {
    std::process::Command::new(exe)
        .args(["--list", "--exact", test])
        .current_dir(cwd)
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.strip_suffix(": test") == Some(test))
        })
}

/// `(file, line, message)` of a panic header: `thread 'x' (tid) panicked at
/// src/lib.rs:11:9:` (message on the next lines) or, before Rust 1.73,
/// `thread 'x' panicked at 'message', src/lib.rs:11:9`.
fn panic_location(line: &str) -> Option<(String, Option<u32>, Option<String>)> {
    let rest = line.strip_prefix("thread '")?;
    let at = rest.find("panicked at ")? + "panicked at ".len();
    let place = &rest[at..];
    let (message, place) = match place.strip_prefix('\'') {
        Some(old) => {
            let (msg, place) = old.rsplit_once("', ")?;
            (Some(msg.to_string()), place)
        }
        None => (None, place.strip_suffix(':').unwrap_or(place)),
    };
    let mut parts = place.rsplitn(3, ':');
    let _column = parts.next();
    let line = parts.next().and_then(|l| l.parse().ok());
    let file = parts.next().unwrap_or(place).to_string();
    Some((file, line, message))
}

impl OutputParser for CargoParser {
    fn line(&mut self, stream: Stream, line: &str) {
        if stream == Stream::Stderr {
            let t = line.trim_start();
            let header = if let Some(running) = t.strip_prefix("Running ") {
                Some(running.split_once(" (").map_or(running, |(g, _)| g))
            } else if t.starts_with("Doc-tests ") {
                Some(t)
            } else {
                None
            };
            if let Some(group) = header {
                self.header(group.to_string());
            } else if (t.starts_with("error[") || t.starts_with("error:"))
                && !t.starts_with("error: test failed")
                && !t.contains("target failed")
                && !t.contains("targets failed")
            {
                self.build_errors.push(line.to_string());
            } else if !self.build_errors.is_empty()
                && self.tests.is_empty()
                && self.build_errors.len() < MAX_BUILD_ERROR_LINES
            {
                // The compiler's explanation under its error line.
                self.build_errors.push(line.to_string());
            }
            return;
        }
        if let Some(i) = self.block {
            if line == "failures:" || line.starts_with("test result: ") {
                self.block = None;
            } else if let Some(name) = line
                .strip_prefix("---- ")
                .and_then(|l| l.strip_suffix(" stdout ----"))
            {
                self.block = Some(self.failure(name));
                self.section = Section::Output;
                self.frame = None;
                return;
            } else {
                self.block_line(i, line);
                return;
            }
        }
        if line.starts_with("test result: ") {
            return;
        }
        if line.starts_with("running ") && (line.ends_with(" test") || line.ends_with(" tests")) {
            // A test binary starts reporting.
            match self.headers.pop_front() {
                Some(group) => {
                    self.group = Some(group);
                    self.awaiting_header = None;
                }
                None => {
                    self.group = None;
                    self.awaiting_header = Some(self.tests.len());
                }
            }
            return;
        }
        if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|l| l.strip_suffix(" stdout ----"))
        {
            self.block = Some(self.failure(name));
            self.section = Section::Output;
            self.frame = None;
        } else if let Some(rest) = line.strip_prefix("test ")
            && let Some((name, outcome)) = rest.rsplit_once(" ... ")
        {
            self.test_line(name, outcome);
        }
    }

    fn running(&self) -> Vec<String> {
        Vec::new()
    }

    /// With one test thread (`--test-threads=1`) libtest prints `test name
    /// ... ` before running the test and its outcome after; with more, the
    /// whole line when the test ends (the stuck detector then names a hung
    /// test from its thread's stack).
    fn running_in_partial_line(&self, stream: Stream, partial: &str) -> Option<String> {
        let name = partial.strip_prefix("test ")?.strip_suffix(" ... ")?;
        (stream == Stream::Stdout && self.block.is_none() && !name.is_empty())
            .then(|| name.to_string())
    }

    fn progress(&self) -> Progress {
        Progress {
            summary: self.summary,
            current_group: self.group.clone(),
            running: Vec::new(),
            failures: self.failures.clone(),
        }
    }

    fn finish(self: Box<Self>, exit_code: Option<i32>) -> TestResult {
        let this = *self;
        let error = if this.tests.is_empty() && !this.build_errors.is_empty() {
            Some(this.build_errors.join("\n"))
        } else if this.tests.is_empty() && exit_code != Some(0) {
            Some(match exit_code {
                Some(c) => format!("cargo test exited with code {c} before any test ran"),
                None => "cargo test was killed before any test ran".to_string(),
            })
        } else {
            None
        };
        let failures = this
            .failures
            .into_iter()
            .map(|mut f| {
                f.suggested_traces = CargoAdapter.suggest_traces(&f);
                f
            })
            .collect();
        TestResult {
            framework: "cargo".into(),
            summary: this.summary,
            tests: this.tests,
            failures,
            exit_code,
            error,
        }
    }
}
