//! The extension point: one [`TestAdapter`] per test framework.

use crate::result::{Progress, TestCase, TestFailure, TestResult};
use crate::walk::{Cancel, WalkError};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Which tests of a suite to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestLevel {
    /// Tests next to the code (Rust: `--lib`/`--bins`).
    Unit,
    /// Tests of the public interface (Rust: `tests/`).
    Integration,
    /// Whole-program tests, where the framework tells them apart.
    E2e,
}

/// What a run is pointed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestTarget {
    /// The project directory (absolute).
    pub root: PathBuf,
    /// The test program or command line the caller named (`command`): the
    /// compiled Catch2 / Google Test binary, or the generic adapter's
    /// command line. `None` lets the adapter find or build it.
    pub command: Option<String>,
    /// Raised to stop work done for this target (walks of the project
    /// tree), e.g. when the daemon shuts down.
    pub cancel: Cancel,
}

impl TestTarget {
    /// A project with no command named.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            command: None,
            cancel: Cancel::default(),
        }
    }
}

/// A command to run, with its working directory and extra environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCommand {
    /// The program (looked up on PATH when not absolute).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The working directory.
    pub cwd: PathBuf,
    /// Variables added to the environment.
    pub env: BTreeMap<String, String>,
}

impl TestCommand {
    /// The command as a shell line, for humans and rerun hints.
    pub fn display(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .map(|a| {
                if a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+".contains(c))
                {
                    a.to_string()
                } else {
                    format!("'{}'", a.replace('\'', "'\\''"))
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Which pipe a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout = 0,
    /// Standard error.
    Stderr = 1,
}

/// Reads a run's output as it arrives.
pub trait OutputParser: Send {
    /// One complete line (without its newline).
    fn line(&mut self, stream: Stream, line: &str);
    /// What is known so far: counts, the test running now, failures so far.
    fn progress(&self) -> Progress;
    /// The tests running now, as in [`Progress::running`]. Asked after
    /// every line to time tests whose framework reports no duration, so it
    /// must be cheap (`progress` copies every failure so far).
    fn running(&self) -> Vec<String> {
        self.progress().running
    }
    /// The test an unfinished last line names, for frameworks that print a
    /// test's name when it starts and its outcome on the same line when it
    /// ends (`test_x (mod.Class.test_x) ... `): the one running now.
    fn running_in_partial_line(&self, _stream: Stream, _partial: &str) -> Option<String> {
        None
    }
    /// The result once the run ended with `exit_code` (`None`: killed).
    fn finish(self: Box<Self>, exit_code: Option<i32>) -> TestResult;
}

/// The language family a framework tests. Hints for projects with no tests
/// name the frameworks of the project's family, and JavaScript runners are
/// told apart by the `test` script that invokes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecosystem {
    /// Rust (cargo, nextest).
    Rust,
    /// Python (pytest, unittest).
    Python,
    /// JavaScript and TypeScript runners invoked from `package.json`.
    JavaScript,
    /// Go (`go test`).
    Go,
    /// C and C++ test binaries.
    Cpp,
    /// Any language (a command line Strobe only reads the output of).
    Any,
}

/// One test framework.
pub trait TestAdapter: Send + Sync {
    /// Short name, as `framework` takes it: "cargo", "pytest", …
    fn name(&self) -> &'static str;
    /// The framework as people write it in prose ("Google Test"): the
    /// README's `debug_test` row names every adapter by it.
    fn title(&self) -> &'static str;
    /// The language family it tests.
    fn ecosystem(&self) -> Ecosystem;
    /// How sure the adapter is that `target` uses its framework, 0 (not at
    /// all) to 100; the highest wins.
    fn detect(&self, target: &TestTarget) -> u8;
    /// The whole suite, or one level of it.
    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand;
    /// One test, by the name the framework reports.
    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand;
    /// The command a run starts: `test` alone, else the suite or one
    /// level of it. Adapters that look through the project's tree to build
    /// it (Go's levels) fail here, saying why, when that look is cut short
    /// (see [`crate::walk`]); by default the single-test or suite command.
    fn run_command(
        &self,
        target: &TestTarget,
        level: Option<TestLevel>,
        test: Option<&str>,
    ) -> Result<TestCommand, WalkError> {
        Ok(match test {
            Some(t) => self.single_test_command(target, t),
            None => self.suite_command(target, level),
        })
    }
    /// The command that runs the failed test `test` alone again to get
    /// the details its run never printed: frameworks that print a failure's
    /// report only at the end (libtest) lose it when the run is stopped
    /// while another test hangs. `None` (the default) where reports come as
    /// failures happen.
    fn details_command(&self, _target: &TestTarget, _test: &TestCase) -> Option<TestCommand> {
        None
    }
    /// A parser for the output of this adapter's commands.
    fn parser(&self) -> Box<dyn OutputParser>;
    /// Trace patterns worth adding when rerunning `failure` instrumented.
    fn suggest_traces(&self, failure: &TestFailure) -> Vec<String>;
    /// The process that runs the tests itself — the test binary or the
    /// interpreter, not a build tool or launcher — for an instrumented
    /// rerun under Frida, whose trace patterns resolve against its symbols.
    /// Building it first if need be (blocking). By default the single-test
    /// or suite command, for frameworks whose command is that process.
    fn test_program(
        &self,
        target: &TestTarget,
        level: Option<TestLevel>,
        test: Option<&str>,
    ) -> Result<TestCommand, String> {
        Ok(match test {
            Some(t) => self.single_test_command(target, t),
            None => self.suite_command(target, level),
        })
    }
    /// The signal the stuck detector stops a stuck test process with
    /// before it kills it (SIGKILL after a grace period): SIGINT (2) by
    /// default, so frameworks print what they know (pytest's report,
    /// Catch2's fatal condition); Go's test binaries print every goroutine's
    /// stack on SIGQUIT (3) and nothing on SIGINT.
    fn stop_signal(&self) -> i32 {
        2
    }
    /// Whether the command builds before it tests (cargo, go, CMake): its
    /// silence then is compilation, not a stuck test, until the parser
    /// reports the run has started.
    fn builds_first(&self) -> bool {
        false
    }
}
