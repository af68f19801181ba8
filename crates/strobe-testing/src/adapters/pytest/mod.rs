//! pytest: `python3 -m pytest`, reading its verbose terminal report.
//!
//! pytest has no built-in machine-readable stream (its JSON report log is a
//! plugin; `--junitxml` is written when the session ends), so the parser
//! reads the human report, which pytest 9 prints in two parts:
//!
//! - one line per test as it finishes (`path::test OUTCOME duration`): the
//!   counts and the names of failed tests are known at once. pytest prints a
//!   test's name when it starts and ends that line only when the next test
//!   starts, so a hanging test is the name on the unfinished last line
//!   ([`OutputParser::running_in_partial_line`]);
//! - a report per failure (`--tb=short`: `file:line: in function` entries
//!   and `E   ` message lines) after the last test. No built-in option prints
//!   it earlier (`-x` would stop the run), so a failure's file:line and
//!   message arrive with the report. pytest prints that report when it is
//!   interrupted too (SIGINT, as Strobe's stuck detector sends before
//!   killing), followed by where the running test was stopped.
//!
//! Options, and why: `--verbosity=2` (per-test lines even when the project's
//! `addopts` has `-q`, which a plain `-v` would cancel out; full assertion
//! diffs), `-p no:cacheprovider` (no `.pytest_cache` written into the
//! project), `--tb=short` (one line per frame, with its function), `-o
//! console_output_style=times` (each test's duration instead of a
//! percentage).

use crate::adapter::{Ecosystem, OutputParser, Stream, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::result::{Progress, Summary, TestCase, TestFailure, TestResult, TestStatus};
use crate::walk;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

mod parser;
pub use parser::*;

/// The options of every pytest command (after `python3 -m pytest`).
const OPTIONS: [&str; 6] = [
    "--verbosity=2",
    "-p",
    "no:cacheprovider",
    "--tb=short",
    "-o",
    "console_output_style=times",
];

/// Outcome words of pytest's per-test lines.
const OUTCOMES: [&str; 9] = [
    "PASSED",
    "FAILED",
    "ERROR",
    "SKIPPED",
    "XFAIL",
    "XPASS",
    "SUBPASSED",
    "SUBFAILED",
    "SUBSKIPPED",
];

/// Most lines of a tool error kept.
const MAX_ERROR_LINES: usize = 40;
/// Largest test file read to detect the runner.
const MAX_TEST_FILE_BYTES: u64 = 1 << 20;

/// The pytest adapter.
pub struct PytestAdapter;

impl PytestAdapter {
    fn command(project_root: &Path, extra: &[&str]) -> TestCommand {
        let env = [("PYTHONUNBUFFERED", "1"), ("PY_COLORS", "0")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>();
        TestCommand {
            program: "python3".into(),
            args: ["-m", "pytest"]
                .iter()
                .chain(OPTIONS.iter())
                .chain(extra)
                .map(|a| a.to_string())
                .collect(),
            cwd: project_root.to_path_buf(),
            env,
        }
    }
}

/// Configuration that names pytest: a file of its own, or its section in a
/// shared one.
fn has_pytest_config(root: &Path) -> bool {
    let file = |f: &str| root.join(f).is_file();
    let section = |f: &str, header: &str| {
        std::fs::read_to_string(root.join(f)).is_ok_and(|text| text.contains(header))
    };
    ["pytest.ini", "pytest.toml", ".pytest.toml", "conftest.py"]
        .iter()
        .any(|f| file(f))
        || file("tests/conftest.py")
        || section("pyproject.toml", "[tool.pytest")
        || section("setup.cfg", "[tool:pytest]")
        || section("tox.ini", "[pytest]")
}

/// What the project's test files say about their runner, looking at most
/// three directories down and at 50 files.
#[derive(Debug, PartialEq)]
enum TestFiles {
    None,
    /// Some file imports pytest.
    ImportPytest,
    /// Module-level `def test_*` functions and no mention of unittest:
    /// tests only pytest collects.
    Plain,
    /// Anything else (unittest's adapter takes them).
    Other,
}

fn test_files(target: &TestTarget) -> TestFiles {
    let root = target.root.as_path();
    let mut files = Vec::new();
    let limits = walk::Limits {
        depth: 3,
        ..walk::Limits::default()
    };
    // A walk cut short (a huge tree, shutdown) leaves the files found so
    // far as the evidence: detection only weighs hints.
    let _ = walk::walk(root, "Python test files", limits, &target.cancel, |e| {
        if e.is_dir {
            let skip = e.name.starts_with('.')
                || e.name.contains("venv")
                || [
                    "node_modules",
                    "site-packages",
                    "__pycache__",
                    "build",
                    "dist",
                ]
                .contains(&e.name.as_str());
            return !skip;
        }
        if e.is_file
            && e.name.ends_with(".py")
            && (e.name.starts_with("test_") || e.name.ends_with("_test.py"))
            && files.len() < 50
        {
            files.push(e.path(root));
        }
        false
    });
    if files.is_empty() {
        return TestFiles::None;
    }
    let texts: Vec<String> = files
        .iter()
        .filter_map(|f| walk::read_small_file(f, MAX_TEST_FILE_BYTES))
        .collect();
    if texts
        .iter()
        .any(|t| t.contains("import pytest") || t.contains("from pytest"))
    {
        TestFiles::ImportPytest
    } else if texts.iter().any(|t| t.contains("unittest"))
        || !texts
            .iter()
            .any(|t| t.lines().any(|l| l.starts_with("def test")))
    {
        TestFiles::Other
    } else {
        TestFiles::Plain
    }
}

impl TestAdapter for PytestAdapter {
    fn name(&self) -> &'static str {
        "pytest"
    }
    fn title(&self) -> &'static str {
        "pytest"
    }
    fn ecosystem(&self) -> Ecosystem {
        Ecosystem::Python
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        let root = target.root.as_path();
        if has_pytest_config(root) {
            return 90;
        }
        // Above unittest's 60: these tests need pytest to run at all.
        match test_files(target) {
            TestFiles::ImportPytest => 70,
            TestFiles::Plain => 65,
            TestFiles::None | TestFiles::Other => 0,
        }
    }

    /// Levels: the directory `tests/<level>` when the project has it, else
    /// the marker of that name (`-m unit`, `-m integration`, `-m e2e`).
    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand {
        let root = target.root.as_path();
        let Some(level) = level else {
            return Self::command(root, &[]);
        };
        let name = match level {
            TestLevel::Unit => "unit",
            TestLevel::Integration => "integration",
            TestLevel::E2e => "e2e",
        };
        let dir = format!("tests/{name}");
        if root.join(&dir).is_dir() {
            Self::command(root, &[&dir])
        } else {
            Self::command(root, &["-m", name])
        }
    }

    /// `test` is a node id as the report prints it
    /// (`tests/test_x.py::TestClass::test_y[param]`), or a file or directory.
    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        Self::command(target.root.as_path(), &[test])
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(PytestParser::default())
    }

    fn suggest_traces(&self, failure: &TestFailure) -> Vec<String> {
        // The parser suggests Python patterns (module.function) from each
        // failure's traceback, where the files are known.
        failure.suggested_traces.clone()
    }
}
