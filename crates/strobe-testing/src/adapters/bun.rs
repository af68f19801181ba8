//! Bun's built-in runner: `bun test`, reading its console report.
//!
//! Bun has no streaming machine-readable reporter (its `--reporter=junit`
//! file is written when the run ends), but its console report, on stderr,
//! is written test by test: a failing test's code excerpt, `error: …`
//! message and `at fn (file:line:col)` frames, then its `(fail) name [ms]`
//! line (`✗` on a terminal); `(pass)`, `(skip)` and `(todo)` lines for the
//! others, and a `file.test.ts:` line before each file's tests. So a
//! failure is complete the moment its test ends. `console.log` goes to
//! stdout and becomes the output of the test that finishes next.
//!
//! Bun does not announce a test before it runs, so `Progress.running` stays
//! empty; the current file is the progress's group.
//!
//! The JavaScript helpers here (frames, ANSI, regex escaping) are shared by
//! the other JavaScript-runtime adapters (`deno`, `generic`).

use crate::adapter::{Ecosystem, OutputParser, Stream, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::result::{Progress, Summary, TestCase, TestFailure, TestResult, TestStatus};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

/// Most stderr lines kept to explain a run that reported no test.
const MAX_ERROR_LINES: usize = 60;
/// Most lines of a test's own output kept with it.
const MAX_OUTPUT_LINES: usize = 200;
/// What the run's closing counts count: ` 2 pass`, ` 1 expect() calls`…
const SUMMARY_WORDS: [&str; 8] = [
    "pass",
    "fail",
    "skip",
    "todo",
    "error",
    "filtered out",
    "expect() call",
    "snapshot",
];

/// The `bun test` adapter.
pub struct BunAdapter;

/// Runners other adapters own: a package.json naming one is their project,
/// even with a bun lockfile (bun is then only the package manager).
const OTHER_RUNNERS: [&str; 3] = ["jest", "vitest", "mocha"];
/// Their config files.
const OTHER_CONFIGS: [&str; 3] = ["jest.config.", "vitest.config.", ".mocharc"];

impl BunAdapter {
    fn command(project_root: &Path, args: &[String]) -> TestCommand {
        TestCommand {
            program: project_tool(project_root, "bun"),
            args: std::iter::once("test".to_string())
                .chain(args.iter().cloned())
                .collect(),
            cwd: project_root.to_path_buf(),
            // Plain `(pass)`/`(fail)` lines even if the daemon's environment
            // asks for colour (the parser strips colour codes anyway).
            env: BTreeMap::from([("NO_COLOR".to_string(), "1".to_string())]),
        }
    }
}

/// The project's own `node_modules/.bin/<tool>` when it has one (the version
/// it pins), else `<tool>` from PATH.
pub(crate) fn project_tool(project_root: &Path, tool: &str) -> String {
    let local = project_root.join("node_modules/.bin").join(tool);
    if local.exists() {
        local.display().to_string()
    } else {
        tool.to_string()
    }
}

/// `tests/<level>` when the project has that directory: JavaScript runners
/// have no notion of levels, so the directory convention is the level.
pub(crate) fn level_dir(project_root: &Path, level: Option<TestLevel>) -> Option<String> {
    let name = match level? {
        TestLevel::Unit => "unit",
        TestLevel::Integration => "integration",
        TestLevel::E2e => "e2e",
    };
    let dir = format!("tests/{name}");
    project_root.join(&dir).is_dir().then(|| format!("./{dir}"))
}

/// Whether package.json (parsed) names one of the other JavaScript runners
/// as a dependency, a config key or in a script.
fn names_other_runner(package: &serde_json::Value) -> bool {
    let deps = [
        "dependencies",
        "devDependencies",
        "peerDependencies",
        "optionalDependencies",
    ];
    let in_deps = deps.iter().any(|d| {
        package[d]
            .as_object()
            .is_some_and(|m| OTHER_RUNNERS.iter().any(|r| m.contains_key(*r)))
    });
    let as_key = OTHER_RUNNERS.iter().any(|r| package.get(r).is_some());
    let in_scripts = package["scripts"].as_object().is_some_and(|s| {
        s.values().filter_map(|v| v.as_str()).any(|cmd| {
            cmd.split(|c: char| c.is_whitespace() || c == '&' || c == ';')
                .any(|word| OTHER_RUNNERS.contains(&word))
        })
    });
    in_deps || as_key || in_scripts
}

impl TestAdapter for BunAdapter {
    fn name(&self) -> &'static str {
        "bun"
    }
    fn title(&self) -> &'static str {
        "Bun"
    }
    fn ecosystem(&self) -> Ecosystem {
        Ecosystem::JavaScript
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        let root = target.root.as_path();
        let package = std::fs::read_to_string(root.join("package.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
        let lockfile = root.join("bun.lockb").exists() || root.join("bun.lock").exists();
        let script = package.as_ref().is_some_and(|p| {
            p["scripts"].as_object().is_some_and(|s| {
                s.values()
                    .filter_map(|v| v.as_str())
                    .any(|cmd| cmd.contains("bun test"))
            })
        });
        if !lockfile && !script {
            return 0;
        }
        // Jest, Vitest and Mocha projects belong to their adapters even when
        // bun installs their packages.
        let other_config = std::fs::read_dir(root).is_ok_and(|d| {
            d.flatten().any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                OTHER_CONFIGS.iter().any(|c| name.starts_with(c))
            })
        });
        if other_config || package.as_ref().is_some_and(names_other_runner) {
            return 0;
        }
        85
    }

    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand {
        let root = target.root.as_path();
        // A positional argument starting with `./` is a path filter.
        let args: Vec<String> = level_dir(root, level).into_iter().collect();
        Self::command(root, &args)
    }

    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        // Bun reports `describe > test` but matches the pattern against the
        // names joined by spaces; anchored, so `add` does not also run
        // `add twice`.
        let joined = test.split(" > ").collect::<Vec<_>>().join(" ");
        let pattern = format!("^{}$", regex_escape(&joined));
        Self::command(
            target.root.as_path(),
            &["--test-name-pattern".to_string(), pattern],
        )
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(BunParser::default())
    }

    fn suggest_traces(&self, _failure: &TestFailure) -> Vec<String> {
        // Strobe's tracer hooks native functions; JavaScript functions run
        // in the JIT and are not patterns it can resolve.
        Vec::new()
    }
}

/// `text` without ANSI escape sequences: some tools colour parts of their
/// output even with NO_COLOR set.
pub(crate) fn strip_ansi(text: &str) -> Cow<'_, str> {
    if !text.contains('\x1b') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            // Parameters, then one final byte in @..~.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            chars.next();
        }
    }
    Cow::Owned(out)
}

/// `text` with the regular-expression metacharacters escaped, for the
/// runners whose name filter is a regex.
pub(crate) fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// One frame of a JavaScript stack trace.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsFrame {
    /// The function, when the frame names one.
    pub function: Option<String>,
    /// The file as a path (a `file://` URL decoded) or as printed.
    pub file: String,
    /// Its line.
    pub line: u32,
}

impl JsFrame {
    /// Whether the frame is in the project's own code, not the runtime's
    /// (`node:`, `ext:`, `bun:`), a dependency or a remote module.
    pub fn is_own(&self) -> bool {
        !self.file.contains("/node_modules/")
            && !self.file.starts_with("node:")
            && !self.file.starts_with("ext:")
            && !self.file.starts_with("bun:")
            && !self.file.starts_with("jsr:")
            && !self.file.starts_with("npm:")
            && !self.file.contains("://")
            && self.file != "native"
    }

    /// Whether the frame is an assertion helper's (`assertEquals`,
    /// `expect…`): the failure is the caller's line, as with test
    /// frameworks' own assertions.
    fn is_assertion_helper(&self) -> bool {
        self.function.as_deref().is_some_and(|f| {
            let last = f.rsplit('.').next().unwrap_or(f);
            last.starts_with("assert") || last.starts_with("expect")
        })
    }
}

/// `at fn (file:line:col)`, `at async fn (…)` or `at file:line:col`.
pub(crate) fn js_frame(line: &str) -> Option<JsFrame> {
    let rest = line.trim_start().strip_prefix("at ")?;
    let rest = rest.strip_prefix("async ").unwrap_or(rest);
    let (function, place) = match rest.strip_suffix(')').and_then(|r| r.rsplit_once(" (")) {
        Some((f, place)) => (Some(f.trim()), place),
        None => (None, rest.trim()),
    };
    let mut parts = place.rsplitn(3, ':');
    let _column = parts.next()?.parse::<u32>().ok()?;
    let line = parts.next()?.parse::<u32>().ok()?;
    let file = parts.next()?;
    let file = match file.strip_prefix("file://") {
        Some(path) => percent_decode(path),
        None => file.to_string(),
    };
    let function = function
        .filter(|f| !f.is_empty() && *f != "<anonymous>")
        .map(str::to_string);
    Some(JsFrame {
        function,
        file,
        line,
    })
}

/// `%20` and friends in a `file://` URL's path.
fn percent_decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = path
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where a failure is placed, from its frames (innermost first): the
/// innermost frame in the project's own code that is not an assertion
/// helper, else the innermost own frame.
pub(crate) fn failure_frame(frames: &[JsFrame]) -> Option<&JsFrame> {
    let own = || frames.iter().filter(|f| f.is_own());
    own()
        .find(|f| !f.is_assertion_helper())
        .or_else(|| own().next())
}

/// The function names of a failure's own frames, innermost first.
pub(crate) fn own_functions(frames: &[JsFrame]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in frames.iter().filter(|f| f.is_own()) {
        if let Some(name) = &f.function
            && !out.contains(name)
        {
            out.push(name.clone());
        }
    }
    out
}

/// Parses `bun test`'s console report as it streams.
#[derive(Default)]
pub struct BunParser {
    group: Option<String>,
    tests: Vec<TestCase>,
    summary: Summary,
    failures: Vec<TestFailure>,
    /// stderr lines since the last test line: the next failure's report.
    report: Vec<String>,
    /// stdout lines since the last test line: the next test's own output.
    output: Vec<String>,
    /// The failure whose `(fail)` line was the last line: a timeout's
    /// `^ this test timed out` note follows it.
    just_failed: Option<usize>,
    /// Inside an `# Unhandled error between tests` block: its lines and
    /// how many `-----` rules were seen.
    unhandled: Option<(Vec<String>, u8)>,
    /// Errors outside any test (a file that does not load…).
    errors: Vec<String>,
    /// stderr lines, to explain a run that reported no test.
    stderr: Vec<String>,
    no_tests: bool,
}

/// A test line: `(pass) name [0.39ms]`, or `✓ name [0.39ms]` on a terminal.
fn test_line(line: &str) -> Option<(TestStatus, &str, Option<f64>)> {
    let marks = [
        ("(pass) ", TestStatus::Passed),
        ("(fail) ", TestStatus::Failed),
        ("(skip) ", TestStatus::Skipped),
        ("(todo) ", TestStatus::Skipped),
        ("\u{2713} ", TestStatus::Passed),
        ("\u{2717} ", TestStatus::Failed),
        ("\u{bb} ", TestStatus::Skipped),
        ("\u{270e} ", TestStatus::Skipped),
    ];
    let (status, rest) = marks
        .iter()
        .find_map(|(m, s)| line.strip_prefix(m).map(|r| (*s, r)))?;
    let (name, duration) = match rest.rsplit_once(" [") {
        Some((name, d)) if d.ends_with("ms]") => (name, d.trim_end_matches("ms]").parse().ok()),
        Some((name, d)) if d.ends_with("s]") => (
            name,
            d.trim_end_matches("s]")
                .parse::<f64>()
                .ok()
                .map(|s| s * 1000.0),
        ),
        _ => (rest, None),
    };
    Some((status, name.trim(), duration))
}

/// A file heading: `calc.test.ts:` (bun only runs files named like tests).
fn file_heading(line: &str) -> Option<&str> {
    let name = line.strip_suffix(':')?;
    let looks_like_test = [".test.", "_test_", ".spec.", "_spec_", "_test.", "_spec."]
        .iter()
        .any(|m| name.contains(m));
    (!line.starts_with(' ') && looks_like_test).then_some(name)
}

/// A report's message: the `error: …` line and what follows it, up to the
/// first frame.
fn report_message(report: &[String]) -> String {
    let Some(start) = report.iter().position(|l| l.starts_with("error:")) else {
        return String::new();
    };
    let mut lines: Vec<&str> = Vec::new();
    for (i, l) in report[start..].iter().enumerate() {
        if l.trim_start().starts_with("at ") && js_frame(l).is_some() {
            break;
        }
        lines.push(if i == 0 {
            l.trim_start_matches("error:").trim_start()
        } else {
            l
        });
    }
    lines.join("\n").trim().to_string()
}

impl BunParser {
    fn result(&mut self, status: TestStatus, name: &str, duration_ms: Option<f64>) {
        let report = std::mem::take(&mut self.report);
        let output = std::mem::take(&mut self.output);
        self.just_failed = None;
        let own_output = (!output.is_empty()).then(|| output.join("\n"));
        match status {
            TestStatus::Passed => self.summary.passed += 1,
            TestStatus::Skipped => self.summary.skipped += 1,
            TestStatus::Failed => {
                self.summary.failed += 1;
                let frames: Vec<JsFrame> = report.iter().filter_map(|l| js_frame(l)).collect();
                let mut f = TestFailure::new(name);
                f.message = report_message(&report);
                if let Some(at) = failure_frame(&frames) {
                    f.file = Some(at.file.clone());
                    f.line = Some(at.line);
                }
                f.frames = own_functions(&frames);
                f.output = output
                    .iter()
                    .chain(report.iter())
                    .map(|l| format!("{l}\n"))
                    .collect();
                self.failures.push(f);
                self.just_failed = Some(self.failures.len() - 1);
            }
        }
        self.tests.push(TestCase {
            name: name.to_string(),
            status,
            duration_ms,
            group: self.group.clone(),
            output: own_output,
        });
    }

    fn stderr_line(&mut self, line: &str) {
        if self.stderr.len() < MAX_ERROR_LINES && !line.trim().is_empty() {
            self.stderr.push(line.to_string());
        }
        let is_rule = line.len() >= 10 && line.chars().all(|c| c == '-');
        if let Some((lines, rules)) = &mut self.unhandled {
            if is_rule {
                *rules += 1;
                if *rules >= 2 {
                    let text = lines.join("\n").trim().to_string();
                    self.errors.push(text);
                    self.unhandled = None;
                }
            } else {
                lines.push(line.to_string());
            }
            return;
        }
        if line.starts_with("# Unhandled error") {
            self.unhandled = Some((vec![line.trim_start_matches("# ").to_string()], 0));
            return;
        }
        if let Some((status, name, duration)) = test_line(line) {
            self.result(status, name, duration);
            return;
        }
        if let Some(name) = file_heading(line) {
            self.group = Some(name.to_string());
            self.report.clear();
            self.just_failed = None;
            return;
        }
        let t = line.trim();
        // A timeout is told after the test's line.
        if let Some(i) = self.just_failed
            && let Some(note) = t.strip_prefix("^ ")
        {
            let f = &mut self.failures[i];
            if f.message.is_empty() {
                f.message = note.to_string();
            }
            f.output.push_str(line);
            f.output.push('\n');
            return;
        }
        self.just_failed = None;
        // The summary's counts (` 2 pass`, `Ran 5 tests…`) repeat ours.
        let summary = t.starts_with("Ran ")
            || t.split_once(' ').is_some_and(|(n, what)| {
                n.chars().all(|c| c.is_ascii_digit())
                    && SUMMARY_WORDS.iter().any(|w| what.starts_with(w))
            });
        if !summary {
            self.report.push(line.to_string());
        }
    }
}

impl OutputParser for BunParser {
    fn line(&mut self, stream: Stream, line: &str) {
        let line = strip_ansi(line);
        let line = line.trim_end_matches('\r');
        if line.trim() == "No tests found!" {
            self.no_tests = true;
            return;
        }
        match stream {
            Stream::Stdout => {
                if !line.starts_with("bun test v") && self.output.len() < MAX_OUTPUT_LINES {
                    self.output.push(line.to_string());
                }
            }
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
        let error = if !this.errors.is_empty() {
            // A file that does not load runs none of its tests: the run
            // is incomplete even when other files' tests ran.
            Some(this.errors.join("\n\n"))
        } else if this.tests.is_empty() && !this.no_tests && exit_code != Some(0) {
            Some(if this.stderr.is_empty() {
                match exit_code {
                    Some(c) => format!("bun test exited with code {c} before any test ran"),
                    None => "bun test was killed before any test ran".to_string(),
                }
            } else {
                this.stderr.join("\n")
            })
        } else {
            None
        };
        TestResult {
            framework: "bun".into(),
            summary: this.summary,
            tests: this.tests,
            failures: this.failures,
            exit_code,
            error,
        }
    }
}
