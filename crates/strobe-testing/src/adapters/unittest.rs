//! Python's built-in `unittest`: `python3 -m unittest -v`, whose verbose
//! report (on stderr) names every test as it finishes and ends with a
//! traceback per failure and error.

use crate::adapter::{Ecosystem, OutputParser, Stream, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::result::{Progress, Summary, TestCase, TestFailure, TestResult, TestStatus};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `unittest` adapter.
pub struct UnittestAdapter;

/// Files that mark pytest as the project's runner (its adapter, when there
/// is one, wins; unittest still runs plain `TestCase`s).
const PYTEST_MARKERS: [&str; 3] = ["pytest.ini", "conftest.py", "tox.ini"];

impl UnittestAdapter {
    fn command(project_root: &Path, args: &[&str]) -> TestCommand {
        TestCommand {
            program: "python3".into(),
            args: ["-m", "unittest", "-v"]
                .iter()
                .chain(args)
                .map(|a| a.to_string())
                .collect(),
            cwd: project_root.to_path_buf(),
            env: BTreeMap::from([("PYTHONUNBUFFERED".to_string(), "1".to_string())]),
        }
    }
}

/// Python files named like unittest's default discovery pattern, at the
/// root or one directory down.
fn has_test_files(root: &Path) -> bool {
    let is_test = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("test") && n.ends_with(".py"))
    };
    let Ok(entries) = std::fs::read_dir(root) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        is_test(&p)
            || (p.is_dir()
                && std::fs::read_dir(&p)
                    .map(|d| d.flatten().any(|e| is_test(&e.path())))
                    .unwrap_or(false))
    })
}

impl TestAdapter for UnittestAdapter {
    fn name(&self) -> &'static str {
        "unittest"
    }
    fn title(&self) -> &'static str {
        "unittest"
    }
    fn ecosystem(&self) -> Ecosystem {
        Ecosystem::Python
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        let project_root = target.root.as_path();
        if !has_test_files(project_root) {
            return 0;
        }
        if PYTEST_MARKERS.iter().any(|m| project_root.join(m).exists()) {
            30
        } else {
            60
        }
    }

    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand {
        let project_root = target.root.as_path();
        // unittest has no levels: a `tests/<level>` directory is one.
        let dir = level.map(|l| {
            let name = match l {
                TestLevel::Unit => "unit",
                TestLevel::Integration => "integration",
                TestLevel::E2e => "e2e",
            };
            PathBuf::from("tests").join(name)
        });
        match dir {
            Some(d) if project_root.join(&d).is_dir() => {
                let d = d.display().to_string();
                Self::command(project_root, &["discover", "-s", &d, "-t", "."])
            }
            _ => Self::command(project_root, &[]),
        }
    }

    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        let project_root = target.root.as_path();
        Self::command(project_root, &[test])
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(UnittestParser::default())
    }

    fn suggest_traces(&self, _failure: &TestFailure) -> Vec<String> {
        // Strobe's tracer hooks native code; Python functions are not
        // patterns it can resolve yet.
        Vec::new()
    }
}

/// Parses `python -m unittest -v` output as it streams.
#[derive(Default)]
pub struct UnittestParser {
    tests: Vec<TestCase>,
    summary: Summary,
    failures: Vec<TestFailure>,
    /// The failure whose report is being read, and whether its traceback
    /// has started.
    block: Option<(usize, bool)>,
    /// Frames of the traceback being read: (file, line, function).
    frames: Vec<(String, u32, String)>,
    errors: Vec<String>,
    /// A test whose line began but whose outcome has not come yet: the
    /// outcome ends its docstring's first line, or comes alone after
    /// output the test printed mid-line.
    pending: Option<String>,
}

/// `test_x (module.Class.test_x)` (3.11+) or `test_x (module.Class)` → the
/// dotted id unittest takes back.
fn test_id(head: &str) -> Option<String> {
    let (method, rest) = head.split_once(" (")?;
    let inside = rest.strip_suffix(')')?;
    Some(if inside.ends_with(&format!(".{method}")) {
        inside.to_string()
    } else {
        format!("{inside}.{method}")
    })
}

/// A line that is only a test's name, `test_x (module.Class.test_x)` or a
/// doctest's `adjacent (more_itertools.more)`: no spaces but the one
/// before the parenthesis. `-v` prints it alone when the test has a
/// docstring, whose first line follows with the outcome.
fn test_head(line: &str) -> Option<String> {
    let (method, rest) = line.split_once(" (")?;
    (!method.is_empty() && !method.contains(' ') && !rest.contains(' '))
        .then(|| test_id(line))
        .flatten()
}

impl UnittestParser {
    /// Counts `id` with `outcome` (`ok`, `FAIL`, `skipped 'why'`…); false
    /// when `outcome` is none.
    fn record(&mut self, id: String, outcome: &str) -> bool {
        let status = match outcome {
            "ok" => TestStatus::Passed,
            "FAIL" | "ERROR" | "unexpected success" => TestStatus::Failed,
            o if o.starts_with("skipped") || o == "expected failure" => TestStatus::Skipped,
            _ => return false,
        };
        match status {
            TestStatus::Passed => self.summary.passed += 1,
            TestStatus::Failed => {
                self.summary.failed += 1;
                self.failure(&id);
            }
            TestStatus::Skipped => self.summary.skipped += 1,
        }
        self.tests.push(TestCase {
            name: id,
            status,
            duration_ms: None,
            group: None,
            output: None,
        });
        true
    }

    fn failure(&mut self, name: &str) -> usize {
        if let Some(i) = self.failures.iter().position(|f| f.name == name) {
            return i;
        }
        self.failures.push(TestFailure::new(name));
        self.failures.len() - 1
    }

    /// The report of one failure ended: place it at its innermost frame in
    /// the project (not the standard library).
    fn close_block(&mut self) {
        let Some((i, _)) = self.block.take() else {
            return;
        };
        let frames = std::mem::take(&mut self.frames);
        let own: Vec<&(String, u32, String)> = frames
            .iter()
            .filter(|(file, _, _)| !file.contains("/lib/python3") && !file.starts_with('<'))
            .collect();
        let f = &mut self.failures[i];
        if let Some((file, line, _)) = own.last().or(frames.last().as_ref()) {
            f.file = Some(file.clone());
            f.line = Some(*line);
        }
        f.frames = own.iter().rev().map(|(_, _, func)| func.clone()).collect();
        f.message = f.message.trim_end().to_string();
    }

    fn block_line(&mut self, line: &str) {
        let Some((i, in_traceback)) = self.block else {
            return;
        };
        let f = &mut self.failures[i];
        f.output.push_str(line);
        f.output.push('\n');
        if line.starts_with("Traceback (most recent call last):") {
            self.block = Some((i, true));
            return;
        }
        if !in_traceback || line.chars().all(|c| c == '-') {
            return;
        }
        if let Some(rest) = line.strip_prefix("  File \"")
            && let Some((file, rest)) = rest.split_once("\", line ")
        {
            let (n, func) = rest.split_once(", in ").unwrap_or((rest, ""));
            if let Ok(n) = n.trim().parse() {
                self.frames.push((file.to_string(), n, func.to_string()));
            }
            return;
        }
        if line.starts_with("    ") {
            return; // source lines and carets under a frame
        }
        // The exception, possibly over several lines.
        if !f.message.is_empty() {
            f.message.push('\n');
        }
        f.message.push_str(line);
    }
}

impl OutputParser for UnittestParser {
    fn line(&mut self, _stream: Stream, line: &str) {
        let separator = line.len() >= 20 && line.chars().all(|c| c == '=');
        if separator || line.starts_with("Ran ") && line.contains(" test") {
            self.close_block();
            return;
        }
        for prefix in ["FAIL: ", "ERROR: "] {
            if let Some(head) = line.strip_prefix(prefix)
                && let Some(id) = test_id(head)
            {
                self.close_block();
                let i = self.failure(&id);
                self.block = Some((i, false));
                return;
            }
        }
        if self.block.is_some() {
            self.block_line(line);
            return;
        }
        // `name (id) ... ok`, or a docstring's first line `… ... ok` after
        // `name (id)` alone.
        if let Some((head, outcome)) = line.rsplit_once(" ... ") {
            let id = match test_head(head) {
                Some(id) => Some(id),
                None => self.pending.take().or_else(|| test_id(head)),
            };
            if let Some(id) = id {
                // Other output cut the line (a warning printed while the
                // test ran): the outcome comes alone on a later line.
                self.pending = None;
                if !self.record(id.clone(), outcome) {
                    self.pending = Some(id);
                }
                return;
            }
        }
        if let Some(id) = test_head(line) {
            self.pending = Some(id);
            return;
        }
        if let Some(id) = self.pending.take() {
            if !self.record(id.clone(), line.trim()) {
                self.pending = Some(id);
            }
            return;
        }
        if line.starts_with("ModuleNotFoundError")
            || line.starts_with("ImportError")
            || line.starts_with("SyntaxError")
            || line.contains("No module named")
        {
            self.errors.push(line.to_string());
        }
    }

    fn running_in_partial_line(&self, _stream: Stream, partial: &str) -> Option<String> {
        if let Some(id) = &self.pending {
            return Some(id.clone());
        }
        test_id(partial.strip_suffix(" ... ")?)
    }

    fn running(&self) -> Vec<String> {
        Vec::new()
    }

    fn progress(&self) -> Progress {
        Progress {
            summary: self.summary,
            current_group: None,
            running: Vec::new(),
            failures: self.failures.clone(),
        }
    }

    fn finish(mut self: Box<Self>, exit_code: Option<i32>) -> TestResult {
        self.close_block();
        let error = if self.tests.is_empty() && !self.errors.is_empty() {
            Some(self.errors.join("\n"))
        } else if self.tests.is_empty() && exit_code.is_some_and(|c| c != 0 && c != 5) {
            Some(format!(
                "python3 -m unittest exited with code {} before any test ran",
                exit_code.unwrap_or(-1)
            ))
        } else {
            None
        };
        TestResult {
            framework: "unittest".into(),
            summary: self.summary,
            tests: self.tests,
            failures: self.failures,
            exit_code,
            error,
        }
    }
}
