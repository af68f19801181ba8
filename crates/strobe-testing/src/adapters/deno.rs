//! Deno's built-in runner: `deno test --reporter=tap`.
//!
//! Of Deno's reporters, TAP is the one that streams a failure's details: its
//! `not ok N - name` line is followed at once by a YAML block holding one
//! JSON object with the error message, its stack (`at fn
//! (file:///…:line:col)`) and where the test was declared. The pretty
//! reporter prints `name ... FAILED` as tests end but keeps every error
//! for the end of the run, and JUnit is a file written at the end.
//! TAP's price: Deno leaves out the tests' console output and errors raised
//! outside any test (both only in the pretty reporter); a run failing with
//! no failing test says so and how to see it.
//!
//! A failure is placed at the innermost frame in the project's own code
//! that is not an assertion helper (`assert*`/`expect*`), else at the
//! test's declaration. A test whose steps (`t.step`) failed is reported by
//! Deno as "N test steps failed": it takes its first failed step's place
//! and message instead.
//!
//! Deno type-checks before it tests: its errors (on stderr) are the run's
//! error. `-P` is passed when deno.json declares permissions (Deno refuses
//! them otherwise), so a project's tests get the access they were given.
//! Deno caches under `DENO_DIR` (default `~/.cache/deno`); the fixture
//! imports nothing remote, so nothing is downloaded.

use super::bun::{
    JsFrame, failure_frame, js_frame, level_dir, own_functions, project_tool, regex_escape,
    strip_ansi,
};
use crate::adapter::{Ecosystem, OutputParser, Stream, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::result::{Progress, Summary, TestCase, TestFailure, TestResult, TestStatus};
use std::collections::BTreeMap;
use std::path::Path;

/// Most stderr lines kept for a run's error.
const MAX_ERROR_LINES: usize = 60;

/// The config files that make a Deno project.
const CONFIGS: [&str; 2] = ["deno.json", "deno.jsonc"];

/// The `deno test` adapter.
pub struct DenoAdapter;

impl DenoAdapter {
    fn command(project_root: &Path, extra: &[String]) -> TestCommand {
        let mut args = vec!["test".to_string(), "--reporter=tap".to_string()];
        let permissions = CONFIGS.iter().any(|c| {
            std::fs::read_to_string(project_root.join(c))
                .is_ok_and(|t| t.contains("\"permissions\""))
        });
        if permissions {
            args.push("-P".to_string());
        }
        args.extend(extra.iter().cloned());
        TestCommand {
            program: project_tool(project_root, "deno"),
            args,
            cwd: project_root.to_path_buf(),
            env: BTreeMap::from([
                ("NO_COLOR".to_string(), "1".to_string()),
                // Deno is a Rust program: with the daemon's RUST_BACKTRACE
                // its own errors end in an empty backtrace.
                ("RUST_BACKTRACE".to_string(), "0".to_string()),
            ]),
        }
    }
}

impl TestAdapter for DenoAdapter {
    fn name(&self) -> &'static str {
        "deno"
    }
    fn title(&self) -> &'static str {
        "Deno"
    }
    fn ecosystem(&self) -> Ecosystem {
        Ecosystem::JavaScript
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        if CONFIGS.iter().any(|c| target.root.join(c).is_file()) {
            90
        } else {
            0
        }
    }

    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand {
        let root = target.root.as_path();
        let args: Vec<String> = level_dir(root, level).into_iter().collect();
        Self::command(root, &args)
    }

    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        // `/…/` makes the filter a regex; anchored, so `add` does not also
        // run `add twice`.
        let filter = format!("/^{}$/", regex_escape(test));
        Self::command(target.root.as_path(), &["--filter".to_string(), filter])
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(DenoParser::default())
    }

    fn builds_first(&self) -> bool {
        // Type checking (and fetching imports) comes before the first test.
        true
    }

    fn suggest_traces(&self, _failure: &TestFailure) -> Vec<String> {
        // Strobe's tracer hooks native functions; JavaScript functions run
        // in V8's JIT and are not patterns it can resolve.
        Vec::new()
    }
}

/// What a YAML block's JSON says about a failure.
#[derive(Debug, Clone, Default)]
struct Details {
    message: String,
    file: Option<String>,
    line: Option<u32>,
    frames: Vec<String>,
    text: String,
}

/// Reads the JSON of a `not ok` block: `{"message": "Error: …\n<source
/// line>\n   ^\n    at …", "at": {"file": "./x_test.ts", "line": 8}}`.
fn details(json: &serde_json::Value) -> Details {
    let text = json["message"].as_str().unwrap_or_default().to_string();
    let lines: Vec<&str> = text.lines().collect();
    let frames: Vec<JsFrame> = lines.iter().filter_map(|l| js_frame(l)).collect();
    let first_frame = lines
        .iter()
        .position(|l| js_frame(l).is_some())
        .unwrap_or(lines.len());
    // The message ends where Deno quotes the failing source line, the one
    // above its `^` (or `~~~`) marker.
    let caret = lines[..first_frame].iter().position(|l| {
        let t = l.trim();
        !t.is_empty() && t.chars().all(|c| c == '^' || c == '~')
    });
    let end = caret.map_or(first_frame, |c| c.saturating_sub(1));
    let message = lines[..end].join("\n").trim().to_string();
    let (file, line) = match failure_frame(&frames) {
        Some(f) => (Some(f.file.clone()), Some(f.line)),
        None => (
            json["at"]["file"].as_str().map(str::to_string),
            json["at"]["line"].as_u64().map(|l| l as u32),
        ),
    };
    Details {
        message,
        file,
        line,
        frames: own_functions(&frames),
        text,
    }
}

/// Where the next JSON line of a YAML block goes.
#[derive(Debug, Clone)]
enum Block {
    /// A test's failure.
    Test(usize),
    /// A failed step of the test whose subtest is being read.
    Step(String),
}

/// Parses `deno test --reporter=tap` as it streams.
#[derive(Default)]
pub struct DenoParser {
    group: Option<String>,
    tests: Vec<TestCase>,
    summary: Summary,
    failures: Vec<TestFailure>,
    /// The `not ok` whose YAML block comes next or is being read.
    block: Option<Block>,
    /// Failed steps of the current subtest: (step, details).
    steps: Vec<(String, Details)>,
    errors: Vec<String>,
    no_tests: bool,
}

/// `ok 3 - name # SKIP` / `not ok 2 - name` → (passed?, name, skipped?).
fn tap_result(line: &str) -> Option<(bool, &str, bool)> {
    let (ok, rest) = match line.strip_prefix("not ok ") {
        Some(r) => (false, r),
        None => (true, line.strip_prefix("ok ")?),
    };
    let (number, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    number.parse::<u32>().ok()?;
    let name = rest.strip_prefix("- ").unwrap_or(rest);
    let (name, skipped) = match name.rsplit_once(" # ") {
        Some((n, d)) if d.starts_with("SKIP") || d.starts_with("TODO") => (n, true),
        _ => (name, false),
    };
    Some((ok, name, skipped))
}

impl DenoParser {
    fn result(&mut self, ok: bool, name: &str, skipped: bool) {
        let status = if skipped {
            TestStatus::Skipped
        } else if ok {
            TestStatus::Passed
        } else {
            TestStatus::Failed
        };
        match status {
            TestStatus::Passed => self.summary.passed += 1,
            TestStatus::Skipped => self.summary.skipped += 1,
            TestStatus::Failed => {
                self.summary.failed += 1;
                self.failures.push(TestFailure::new(name));
                self.block = Some(Block::Test(self.failures.len() - 1));
            }
        }
        if status != TestStatus::Failed {
            self.steps.clear();
        }
        self.tests.push(TestCase {
            name: name.to_string(),
            status,
            duration_ms: None,
            group: self.group.clone(),
            output: None,
        });
    }

    fn json(&mut self, json: &serde_json::Value) {
        let d = details(json);
        match self.block.clone() {
            Some(Block::Step(step)) => self.steps.push((step, d)),
            Some(Block::Test(i)) => {
                let f = &mut self.failures[i];
                f.output = format!("{}\n", d.text);
                // "1 test step failed.": the step's failure is the one to see.
                let from_step = if d.message.contains("test step") {
                    self.steps.first().cloned()
                } else {
                    None
                };
                let (d, prefix) = match from_step {
                    Some((step, s)) => {
                        f.output.push_str(&s.text);
                        f.output.push('\n');
                        (s, format!("step {step:?}: "))
                    }
                    None => (d, String::new()),
                };
                f.message = format!("{prefix}{}", d.message);
                f.file = d.file;
                f.line = d.line;
                f.frames = d.frames;
                self.steps.clear();
            }
            None => {}
        }
    }

    fn stdout_line(&mut self, line: &str) {
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if t == "---" || t == "..." {
            if t == "..." {
                self.block = None;
            }
            return;
        }
        if t.starts_with('{') {
            if let Ok(json) = serde_json::from_str::<serde_json::Value>(t) {
                self.json(&json);
            }
            return;
        }
        if indent > 0 {
            // A step of the current subtest: its parent's line carries the
            // outcome; a failed step's details are kept for it.
            if let Some((ok, name, _)) = tap_result(t)
                && !ok
            {
                self.block = Some(Block::Step(name.to_string()));
            }
            return;
        }
        if let Some(comment) = t.strip_prefix("# ") {
            if comment.starts_with("Subtest: ") {
                self.steps.clear();
            } else {
                self.group = Some(comment.to_string());
            }
            return;
        }
        if let Some((ok, name, skipped)) = tap_result(t) {
            self.result(ok, name, skipped);
        }
    }

    fn stderr_line(&mut self, line: &str) {
        let t = line.trim();
        if t.is_empty()
            || t.starts_with("Check ")
            || t.starts_with("Download ")
            || t == "error: Test failed"
            || t == "Stack backtrace:"
            || t.ends_with(": <unknown>")
        {
            return;
        }
        if t.contains("No test modules found") {
            self.no_tests = true;
            return;
        }
        if self.errors.len() < MAX_ERROR_LINES {
            self.errors.push(line.to_string());
        }
    }
}

impl OutputParser for DenoParser {
    fn line(&mut self, stream: Stream, line: &str) {
        let line = strip_ansi(line);
        let line = line.trim_end_matches('\r');
        match stream {
            Stream::Stdout => self.stdout_line(line),
            Stream::Stderr => self.stderr_line(line),
        }
    }

    fn running(&self) -> Vec<String> {
        Vec::new()
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
        let failed_outside_tests =
            !this.tests.is_empty() && this.failures.is_empty() && exit_code.is_some_and(|c| c != 0);
        let error = if this.tests.is_empty() && this.no_tests {
            None
        } else if this.tests.is_empty() && exit_code != Some(0) {
            Some(if this.errors.is_empty() {
                match exit_code {
                    Some(c) => format!("deno test exited with code {c} before any test ran"),
                    None => "deno test was killed before any test ran".to_string(),
                }
            } else {
                this.errors.join("\n")
            })
        } else if failed_outside_tests {
            Some(format!(
                "deno test exited with code {} though no test failed: an error outside any test \
                 (top-level code, a dangling promise), which Deno's TAP reporter does not print; \
                 run `deno test` to see it{}{}",
                exit_code.unwrap_or(-1),
                if this.errors.is_empty() { "" } else { "\n" },
                this.errors.join("\n")
            ))
        } else {
            None
        };
        TestResult {
            framework: "deno".into(),
            summary: this.summary,
            tests: this.tests,
            failures: this.failures,
            exit_code,
            error,
        }
    }
}
