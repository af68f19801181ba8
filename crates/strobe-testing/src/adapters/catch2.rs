//! Catch2: runs the compiled test binary the caller named (`command`) with
//! its XML reporter, `-r xml --durations yes`.
//!
//! Why XML: it is the one built-in reporter that streams per test case
//! with names and locations. It writes `<TestCase name=… filename=… line=…>`
//! when a test starts (flushed, so the test running now is known), each
//! failed assertion with its file:line right after the assertion, and
//! `<OverallResult success=…>` when the test ends. The console reporter
//! names a test only when it has something to print, the compact reporter
//! never names tests, and TeamCity/TAP need extra headers compiled in.
//! Catch2 pretty-prints the XML one element per line, which the parser
//! reads line by line; lines that are not XML inside a test are what the
//! test printed with `printf` (its `std::cout` comes as `<StdOut>`).
//!
//! Detection probes the binary with `--list-tests`, after checking that it
//! contains that option at all (a Google Test program given an unknown flag
//! runs its whole suite). So without `command` Catch2 is never detected
//! (confidence 0): the adapter does not build the project, and a run with
//! `framework: "catch2"` and no `command` ends in an error that says so.
//!
//! Levels are tags: `[unit]`, `[integration]`, `[e2e]`. One test is run by
//! its name, escaped for Catch2's test-spec syntax.

use crate::adapter::{Ecosystem, OutputParser, Stream, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::adapters::gtest::{cpp_trace_suggestions, file_contains_any, locate, named_program};
use crate::result::{Progress, Summary, TestCase, TestFailure, TestResult, TestStatus};
use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long `--list-tests` may take when probing a binary.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// Most lines kept of what a run printed before any test.
const MAX_ERROR_LINES: usize = 60;

/// Without a binary there is nothing to run: say so as the run's error.
const NO_COMMAND: &str = "echo \"strobe: catch2 runs a compiled test binary: pass 'command' with its path (absolute or relative to the project root)\" >&2; exit 2";

/// The Catch2 adapter.
pub struct Catch2Adapter;

impl Catch2Adapter {
    fn command(target: &TestTarget, spec: Option<String>) -> TestCommand {
        let Some((program, mut args)) = named_program(target) else {
            return TestCommand {
                program: "sh".into(),
                args: vec!["-c".into(), NO_COMMAND.into()],
                cwd: target.root.clone(),
                env: BTreeMap::new(),
            };
        };
        args.extend(["-r", "xml", "--durations", "yes"].map(String::from));
        args.extend(spec);
        TestCommand {
            program,
            args,
            cwd: target.root.clone(),
            env: BTreeMap::new(),
        }
    }
}

/// A test name as a Catch2 test spec matching only it: `,` separates specs,
/// `[` starts a tag, `"` quotes, a leading `~` excludes, `\` escapes.
pub fn test_spec(name: &str) -> String {
    let mut spec = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '\\' | ',' | '[' | ']' | '"' | '~') {
            spec.push('\\');
        }
        spec.push(c);
    }
    spec
}

/// Whether `program --list-tests` lists Catch2 test cases, given
/// [`PROBE_TIMEOUT`] at most.
fn lists_test_cases(program: &Path, args: &[String], cwd: &Path) -> bool {
    let Ok(mut child) = Command::new(program)
        .args(args)
        .arg("--list-tests")
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let Some(stdout) = child.stdout.take() else {
        return false;
    };
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.take(1 << 20).read_to_end(&mut out);
        out
    });
    let deadline = Instant::now() + PROBE_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                // Not a quick listing: not Catch2. The reader thread ends
                // when the pipe closes.
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
    let out = reader.join().unwrap_or_default();
    // "All available test cases:" … "3 test cases" (also "Matching …").
    String::from_utf8_lossy(&out).contains("test case")
}

impl TestAdapter for Catch2Adapter {
    fn name(&self) -> &'static str {
        "catch2"
    }
    fn title(&self) -> &'static str {
        "Catch2"
    }
    fn ecosystem(&self) -> Ecosystem {
        Ecosystem::Cpp
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        let Some((program, args)) = named_program(target) else {
            return 0;
        };
        match locate(&program, &target.root) {
            Some(p)
                if file_contains_any(&p, &[b"--list-tests"])
                    && lists_test_cases(&p, &args, &target.root) =>
            {
                85
            }
            _ => 0,
        }
    }

    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand {
        let tag = level.map(|l| {
            match l {
                TestLevel::Unit => "[unit]",
                TestLevel::Integration => "[integration]",
                TestLevel::E2e => "[e2e]",
            }
            .to_string()
        });
        Self::command(target, tag)
    }

    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        Self::command(target, Some(test_spec(test)))
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(Catch2Parser::default())
    }

    fn suggest_traces(&self, failure: &TestFailure) -> Vec<String> {
        cpp_trace_suggestions(failure)
    }

    fn test_program(
        &self,
        target: &TestTarget,
        level: Option<TestLevel>,
        test: Option<&str>,
    ) -> Result<TestCommand, String> {
        if named_program(target).is_none() {
            return Err(
                "catch2 runs a compiled test binary: pass 'command' with its path (absolute or relative to the project root)".into(),
            );
        }
        Ok(match test {
            Some(t) => self.single_test_command(target, t),
            None => self.suite_command(target, level),
        })
    }
}

/// A failed assertion being read: `<Expression …>` with its `<Original>` and
/// `<Expanded>`.
#[derive(Default)]
struct Expression {
    failed: bool,
    macro_name: String,
    file: Option<String>,
    line: Option<u32>,
    original: String,
    /// Whether this assertion placed its test's failure (its message may
    /// still gain the exception that made it fail).
    placed: bool,
}

/// The test case being read.
struct Current {
    name: String,
    /// What it printed (`printf` lines, `<StdOut>`, `<StdErr>`).
    output: String,
    /// Its failure, once an assertion failed.
    failure: Option<usize>,
    /// Its entry in `tests`, once its `<OverallResult>` came.
    case: Option<usize>,
}

/// Parses Catch2's XML reporter output as it streams.
#[derive(Default)]
pub struct Catch2Parser {
    /// The `<Group>` (the binary's name).
    group: Option<String>,
    tests: Vec<TestCase>,
    summary: Summary,
    failures: Vec<TestFailure>,
    running: Vec<String>,
    current: Option<Current>,
    expression: Option<Expression>,
    /// `<Info>` messages since the last assertion.
    infos: Vec<String>,
    /// The text element being read (its tag) and its lines so far.
    text: Option<(String, Vec<String>)>,
    /// The element whose text is read: (tag, file, line).
    element: Option<(String, Option<String>, Option<u32>)>,
    /// Lines printed outside any test, before the first (errors).
    errors: VecDeque<String>,
}

/// An attribute's value in an XML start tag, unescaped.
fn attr(tag: &str, key: &str) -> Option<String> {
    let start = tag.find(&format!(" {key}=\""))? + key.len() + 3;
    let len = tag[start..].find('"')?;
    Some(unescape(&tag[start..start + len]))
}

/// XML entities back to text.
fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(end) = rest.find(';') else { break };
        let entity = &rest[1..end];
        let c = match entity {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            e => e
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| e.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Elements whose content is text, one or more lines.
const TEXT_ELEMENTS: [&str; 9] = [
    "Original",
    "Expanded",
    "Exception",
    "Failure",
    "FatalErrorCondition",
    "Info",
    "Warning",
    "StdOut",
    "StdErr",
];

fn line_number(tag: &str) -> Option<u32> {
    attr(tag, "line").and_then(|l| l.parse().ok())
}

impl Catch2Parser {
    fn failure(&mut self, name: &str) -> usize {
        if let Some(i) = self.failures.iter().position(|f| f.name == name) {
            return i;
        }
        self.failures.push(TestFailure::new(name));
        self.failures.len() - 1
    }

    /// Adds a line to the current test's output (and its failure's).
    fn output(&mut self, line: &str) {
        let Some(cur) = self.current.as_mut() else {
            return;
        };
        push_line(&mut cur.output, line);
        if let Some(i) = cur.case {
            let case = &mut self.tests[i];
            let out = case.output.get_or_insert_with(String::new);
            push_line(out, line);
        }
        if let Some(i) = cur.failure {
            push_line(&mut self.failures[i].output, line);
        }
    }

    /// An assertion of the current test failed at `file:line`; the first
    /// one places and explains the failure, later ones are in its output.
    fn failed(&mut self, file: Option<String>, line: Option<u32>, message: String) {
        let Some((name, before, known)) = self
            .current
            .as_ref()
            .map(|c| (c.name.clone(), c.output.clone(), c.failure))
        else {
            return;
        };
        let mut message = message;
        for info in std::mem::take(&mut self.infos) {
            message.push_str("\nwith message:\n  ");
            message.push_str(&info);
        }
        let i = match known {
            Some(i) => i,
            None => {
                let i = self.failure(&name);
                let f = &mut self.failures[i];
                f.output.push_str(&before);
                f.file = file.clone();
                f.line = line;
                f.message = message.clone();
                if let Some(cur) = self.current.as_mut() {
                    cur.failure = Some(i);
                }
                i
            }
        };
        let place = match (&file, line) {
            (Some(f), Some(l)) => format!("{f}:{l}: "),
            (Some(f), None) => format!("{f}: "),
            _ => String::new(),
        };
        push_line(&mut self.failures[i].output, &format!("{place}{message}"));
    }

    /// A text element ended.
    fn text_ended(&mut self, tag: &str, lines: Vec<String>) {
        // The first line is indented like the markup, the others are not.
        let text = lines
            .iter()
            .enumerate()
            .map(|(i, l)| if i == 0 { l.trim_start() } else { l.as_str() })
            .collect::<Vec<_>>()
            .join("\n");
        let text = unescape(&text);
        let (file, line) = self
            .element
            .take()
            .map(|(_, f, l)| (f, l))
            .unwrap_or_default();
        match tag {
            "Original" => {
                if let Some(e) = self.expression.as_mut() {
                    e.original = text;
                }
            }
            "Expanded" => {
                // The assertion is complete: a failure is known now, before
                // its test ends.
                if let Some(e) = self.expression.as_ref().filter(|e| e.failed) {
                    let mut message = format!("{}( {} )", e.macro_name, e.original);
                    if text != e.original {
                        message.push_str("\nwith expansion:\n  ");
                        message.push_str(&text);
                    }
                    let (file, line) = (e.file.clone(), e.line);
                    let first = self.current.as_ref().is_some_and(|c| c.failure.is_none());
                    self.failed(file, line, message);
                    if let Some(e) = self.expression.as_mut() {
                        e.placed = first;
                    }
                }
            }
            "Exception" => {
                let why = format!("due to unexpected exception with message:\n  {text}");
                match self.expression.as_ref().map(|e| (e.failed, e.placed)) {
                    // Inside a failed expression: why it failed, which
                    // completes the failure it placed.
                    Some((true, placed)) => {
                        let failure = self.current.as_ref().and_then(|c| c.failure);
                        if let (true, Some(i)) = (placed, failure) {
                            let f = &mut self.failures[i];
                            f.message.push('\n');
                            f.message.push_str(&why);
                        }
                        self.output(&why);
                    }
                    _ => self.failed(
                        file,
                        line,
                        format!("unexpected exception with message:\n  {text}"),
                    ),
                }
            }
            "Failure" => self.failed(file, line, text),
            "FatalErrorCondition" => {
                self.failed(file, line, format!("fatal error condition:\n  {text}"))
            }
            "Info" => self.infos.push(text),
            _ => {
                // Warning, StdOut, StdErr: what the test printed.
                for l in text.lines() {
                    self.output(l);
                }
            }
        }
    }

    fn test_started(&mut self, tag: &str) {
        let name = attr(tag, "name").unwrap_or_default();
        self.running.push(name.clone());
        self.infos.clear();
        self.expression = None;
        self.current = Some(Current {
            name,
            output: String::new(),
            failure: None,
            case: None,
        });
    }

    /// `<OverallResult success="…" durationInSeconds="…"…>`: the test ended.
    fn test_ended(&mut self, tag: &str) {
        let Some(cur) = self.current.as_mut() else {
            return;
        };
        if cur.case.is_some() {
            return;
        }
        let name = cur.name.clone();
        let skipped = attr(tag, "skips").is_some_and(|s| s != "0");
        let status = match attr(tag, "success").as_deref() {
            _ if skipped => TestStatus::Skipped,
            Some("true") => TestStatus::Passed,
            _ => TestStatus::Failed,
        };
        cur.case = Some(self.tests.len());
        let output = Some(cur.output.clone()).filter(|o| !o.is_empty());
        self.running.retain(|r| r != &name);
        match status {
            TestStatus::Passed => self.summary.passed += 1,
            TestStatus::Skipped => self.summary.skipped += 1,
            TestStatus::Failed => {
                self.summary.failed += 1;
                let i = self.failure(&name);
                if self.failures[i].message.is_empty() {
                    self.failures[i].message = "the test case failed".into();
                }
                if let Some(cur) = self.current.as_mut() {
                    cur.failure = Some(i);
                }
            }
        }
        self.tests.push(TestCase {
            name,
            status,
            duration_ms: attr(tag, "durationInSeconds")
                .and_then(|s| s.parse::<f64>().ok())
                .map(|s| s * 1000.0),
            group: self.group.clone(),
            output,
        });
    }
}

fn push_line(to: &mut String, line: &str) {
    to.push_str(line);
    to.push('\n');
}

impl OutputParser for Catch2Parser {
    fn line(&mut self, _stream: Stream, line: &str) {
        let t = line.trim();
        if let Some((tag, lines)) = self.text.as_mut() {
            if t == format!("</{tag}>") {
                let (tag, lines) = self.text.take().expect("text element");
                self.text_ended(&tag, lines);
            } else {
                lines.push(line.to_string());
            }
            return;
        }
        // `<Name attr…>`, `<Name/>` → "Name"; `</Name>` → "/Name".
        let element = t.strip_prefix('<').map(|r| {
            let (close, r) = r.strip_prefix('/').map_or(("", r), |r| ("/", r));
            format!("{close}{}", r.split([' ', '>', '/']).next().unwrap_or(""))
        });
        match element.as_deref() {
            Some("Group") => self.group = attr(t, "name"),
            Some("TestCase") => self.test_started(t),
            Some("Expression") => {
                self.expression = Some(Expression {
                    failed: attr(t, "success").as_deref() == Some("false"),
                    macro_name: attr(t, "type").unwrap_or_default(),
                    file: attr(t, "filename"),
                    line: line_number(t),
                    original: String::new(),
                    placed: false,
                })
            }
            Some("OverallResult") => self.test_ended(t),
            Some(tag) if TEXT_ELEMENTS.contains(&tag) => {
                self.element = Some((tag.to_string(), attr(t, "filename"), line_number(t)));
                if t.ends_with("/>") {
                    self.text_ended(tag, Vec::new());
                } else {
                    self.text = Some((tag.to_string(), Vec::new()));
                }
            }
            Some("/Expression") => {
                self.expression = None;
                self.infos.clear();
            }
            Some("/TestCase") => {
                self.current = None;
                self.expression = None;
            }
            Some(
                "?xml"
                | "Catch"
                | "Catch2TestRun"
                | "/Catch"
                | "/Catch2TestRun"
                | "/Group"
                | "Section"
                | "/Section"
                | "OverallResults"
                | "OverallResultsCases"
                | "/OverallResult"
                | "Randomness",
            ) => {}
            _ if self.current.is_some() => self.output(line),
            _ => {
                if self.tests.is_empty() {
                    if self.errors.len() == MAX_ERROR_LINES {
                        self.errors.pop_front();
                    }
                    self.errors.push_back(line.to_string());
                }
            }
        }
    }

    fn running(&self) -> Vec<String> {
        self.running.clone()
    }

    fn progress(&self) -> Progress {
        Progress {
            summary: self.summary,
            current_group: self.group.clone(),
            running: self.running(),
            failures: self.failures.clone(),
        }
    }

    fn finish(mut self: Box<Self>, exit_code: Option<i32>) -> TestResult {
        // A test still running when the program ended crashed it or hung
        // until it was stopped: it failed.
        for name in std::mem::take(&mut self.running) {
            let why = match exit_code {
                Some(c) => format!("exited with code {c}"),
                None => "was killed (a crash or a stop)".to_string(),
            };
            let i = self.failure(&name);
            if self.failures[i].message.is_empty() {
                self.failures[i].message =
                    format!("the test did not finish: the test program {why} while it ran");
            }
            self.summary.failed += 1;
            let output = self
                .current
                .as_ref()
                .filter(|c| c.name == name)
                .map(|c| c.output.clone())
                .filter(|o| !o.is_empty());
            self.tests.push(TestCase {
                name,
                status: TestStatus::Failed,
                duration_ms: None,
                group: self.group.clone(),
                output,
            });
        }
        let error = if self.tests.is_empty() && exit_code != Some(0) {
            let printed = self.errors.iter().cloned().collect::<Vec<_>>().join("\n");
            Some(if printed.trim().is_empty() {
                match exit_code {
                    Some(c) => format!("the test program exited with code {c} before any test ran"),
                    None => "the test program was killed before any test ran".to_string(),
                }
            } else {
                printed
            })
        } else {
            None
        };
        let failures = self
            .failures
            .into_iter()
            .map(|mut f| {
                f.suggested_traces = Catch2Adapter.suggest_traces(&f);
                f
            })
            .collect();
        TestResult {
            framework: "catch2".into(),
            summary: self.summary,
            tests: self.tests,
            failures,
            exit_code,
            error,
        }
    }
}
