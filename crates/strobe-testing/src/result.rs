//! The universal test result every adapter produces.

use serde::Serialize;

/// How one test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TestStatus {
    /// It passed.
    Passed,
    /// It failed.
    Failed,
    /// It was not run (ignored, skipped, filtered).
    Skipped,
}

/// One test as the framework reported it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TestCase {
    /// Its name as the framework prints it (and takes it back to run it alone).
    pub name: String,
    /// How it ended.
    pub status: TestStatus,
    /// Its duration, when the framework reports one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// The group it ran in (a Rust test binary, a Python module…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// What the test printed, where the framework reports it per test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// A failed test, with where and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TestFailure {
    /// The test's name.
    pub name: String,
    /// Source file of the failure (the assertion or panic), when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Its line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The failure message (assertion text, panic message…).
    pub message: String,
    /// The test's captured output and the framework's report, as printed.
    pub output: String,
    /// Frames of the failure's stack in the project's own code, innermost
    /// first: function names, for trace suggestions.
    pub frames: Vec<String>,
    /// Trace patterns worth adding for an instrumented rerun.
    pub suggested_traces: Vec<String>,
    /// The command that runs this test alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerun: Option<String>,
}

impl TestFailure {
    /// A failure known by name only, its details still to come.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            file: None,
            line: None,
            message: String::new(),
            output: String::new(),
            frames: Vec::new(),
            suggested_traces: Vec::new(),
            rerun: None,
        }
    }
}

/// Counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Tests that passed.
    pub passed: u32,
    /// Tests that failed.
    pub failed: u32,
    /// Tests not run.
    pub skipped: u32,
}

/// What is known while a run goes on.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// Counts so far.
    pub summary: Summary,
    /// The group (test binary, module) running now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_group: Option<String>,
    /// Tests started and not finished yet, where the framework reports
    /// starts (Google Test's `[ RUN ]`, `go test -json`'s "run"…): the
    /// candidates when a run stops making progress.
    pub running: Vec<String>,
    /// Failures reported so far, complete or not.
    pub failures: Vec<TestFailure>,
}

/// A finished run.
///
/// A test the stuck detector stopped (deadlock, infinite loop, hard
/// timeout) counts as **failed**, whatever the framework made of the stop:
/// it is in `tests` with [`TestStatus::Failed`], counted once in
/// `summary.failed`, and in `failures`, placed at the test's own frame in
/// its stacks when they could be had (its message says what it waits on);
/// the run's report lists it among its stuck tests as well. Adapters report
/// what their framework printed (some count a stopped test as failed, some
/// never hear of it); the session layer that stopped it makes every result
/// agree with this rule.
///
/// No failure loses its details because another test hung: a failure whose
/// report never came (the framework prints it at the end, and the run was
/// stopped) is run again alone for its details where the adapter can
/// ([`crate::TestAdapter::details_command`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TestResult {
    /// The adapter's name.
    pub framework: String,
    /// Counts.
    pub summary: Summary,
    /// Every test reported.
    pub tests: Vec<TestCase>,
    /// The failures, with file:line and message.
    pub failures: Vec<TestFailure>,
    /// The run's exit code (`None`: killed).
    pub exit_code: Option<i32>,
    /// Why the run failed without a failing test (a build error…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
