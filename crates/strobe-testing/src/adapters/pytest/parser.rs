//! The parser of pytest's verbose report: per-test lines, then the failure reports.

use super::*;

/// Parses pytest's verbose report as it streams.
#[derive(Default)]
pub struct PytestParser {
    tests: Vec<TestCase>,
    /// Node id → index in `tests`.
    index: HashMap<String, usize>,
    summary: Summary,
    failures: Vec<TestFailure>,
    /// A test whose name ended a line with no outcome after it: started,
    /// not finished.
    started: Option<String>,
    section: Section,
    block: Option<Block>,
    /// `ERROR:` lines, `INTERNALERROR>` lines, a missing pytest.
    errors: Vec<String>,
    /// Where a KeyboardInterrupt stopped the run: `(file, line)`.
    interrupted_at: Option<(String, u32)>,
    /// The `!!! KeyboardInterrupt !!!` banner was the last line.
    interrupt_banner: bool,
    /// Node ids that failed to collect.
    collection_errors: Vec<String>,
}

/// Where in pytest's output the parser is.
#[derive(Default, PartialEq)]
enum Section {
    /// The header and the per-test lines.
    #[default]
    Tests,
    /// `ERRORS` or `FAILURES`: one block per failure.
    Reports,
    /// `short test summary info`.
    ShortSummary,
    /// Anything after (warnings, durations…).
    Other,
}

/// One failure's report.
#[derive(Default)]
struct Block {
    /// Its title: `test_x`, `Class.test_x`, `test_x [msg] (i=1)` (a
    /// subtest), `ERROR at setup of test_x`, `ERROR collecting path`.
    title: String,
    lines: Vec<String>,
    /// `(file, line, function)` of each traceback entry, outermost first.
    frames: Vec<(String, u32, String)>,
    /// The `E` lines of the last traceback.
    message: Vec<String>,
    /// Other text (`contains 1 failed subtest`, `[XPASS(strict)]`).
    text: Vec<String>,
    /// A `File "x", line N` inside the message (syntax errors).
    quoted_at: Option<(String, u32)>,
    /// Lines after a `Captured stdout call` header.
    captured: Vec<String>,
    in_captured: bool,
}

/// The `title` of a `<c><c><c> title <c><c><c>` separator line drawn with `c`.
fn separator(line: &str, c: char) -> Option<&str> {
    let inner = line.strip_prefix(c)?.strip_suffix(c)?;
    let title = inner.trim_matches(c);
    let title = title.strip_prefix(' ')?.strip_suffix(' ')?;
    // `_ _ _ _` (between long-style entries) is no title.
    (!title.is_empty() && !title.starts_with(c) && !title.ends_with(c)).then_some(title)
}

/// The node id and outcome of a per-test line: `path::name OUTCOME …`.
///
/// The outcome word is usually followed by a space, `(reason)` or
/// `[subtest]`, but pytest 9 can glue the tail of a skip reason to it
/// (`test_x SKIPPEDb))`: its wrapping of a reason longer than what is left
/// of the line). So when the id before it is a whole node id (balanced
/// brackets: not the inside of a parameter holding spaces), the word is
/// enough.
fn outcome_line(line: &str) -> Option<(&str, &'static str)> {
    if line.starts_with(' ') {
        return None;
    }
    for (i, _) in line.match_indices(' ') {
        let id = &line[..i];
        if !id.contains("::") {
            continue;
        }
        let rest = &line[i + 1..];
        let word_len = rest
            .find(|c: char| !c.is_ascii_uppercase())
            .unwrap_or(rest.len());
        let word = &rest[..word_len];
        if let Some(o) = OUTCOMES.iter().find(|o| **o == word) {
            let next = rest[word_len..].chars().next();
            let whole_id = id.matches('[').count() == id.matches(']').count();
            if whole_id || matches!(next, None | Some(' ' | '[' | '(')) {
                return Some((id, o));
            }
        }
    }
    None
}

/// A node id alone on a line (with pytest's trailing space): the test has
/// started and has no outcome yet.
fn started_test(line: &str) -> Option<&str> {
    let id = line.strip_suffix(' ')?.trim_end();
    (!line.starts_with(' ') && id.contains(".py::") && outcome_line(line).is_none()).then_some(id)
}

/// The duration ending a line (`12.3us`, `4.56ms`, `1.234s`, `2m 5s`), in
/// milliseconds.
fn duration_ms(line: &str) -> Option<f64> {
    let mut words = line.split_whitespace().rev();
    let last = words.next()?;
    for (unit, scale) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] {
        if let Some(n) = last.strip_suffix(unit)
            && let Ok(v) = n.parse::<f64>()
        {
            let minutes = words
                .next()
                .and_then(|w| w.strip_suffix('m'))
                .and_then(|m| m.parse::<f64>().ok())
                .filter(|_| unit == "s");
            return Some(v * scale + minutes.unwrap_or(0.0) * 60_000.0);
        }
    }
    None
}

/// `file:line: in function` (a `--tb=short` traceback entry).
fn traceback_entry(line: &str) -> Option<(String, u32, String)> {
    if line.starts_with(' ') {
        return None;
    }
    let (place, func) = line.split_once(": in ")?;
    let (file, n) = place.rsplit_once(':')?;
    Some((file.to_string(), n.parse().ok()?, func.to_string()))
}

/// `file:line: Exception`: the last line of a long-style report, and where
/// a KeyboardInterrupt stopped the run.
fn crash_line(line: &str) -> Option<(String, u32)> {
    let (place, what) = line.rsplit_once(": ")?;
    if what.is_empty()
        || !what
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    {
        return None;
    }
    let (file, n) = place.rsplit_once(':')?;
    Some((file.to_string(), n.parse().ok()?))
}

/// Frames in the project's code: not the standard library, installed
/// packages or frozen modules.
fn own_file(file: &str) -> bool {
    !(file.starts_with('<')
        || file.contains("site-packages")
        || file.contains("dist-packages")
        || file.contains("/lib/python3"))
}

/// Trace patterns for a failure: the project's own functions its traceback
/// went through, test files left out (the test is known; what it called is
/// the question), innermost first, as Python patterns name them: the
/// module (the file's path from pytest's root, `/` as `.`, no `.py`) and the
/// function.
fn python_patterns(frames: &[&(String, u32, String)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (file, _, func) in frames.iter().rev() {
        let name = file.rsplit('/').next().unwrap_or(file);
        let test_file = name.starts_with("test_") || name.ends_with("_test.py") || name == "conftest.py";
        if test_file || func == "<module>" || file.starts_with('/') || !file.ends_with(".py") {
            continue;
        }
        let module = file.trim_end_matches(".py").trim_end_matches("/__init__").replace('/', ".");
        let pattern = format!("{module}.{func}");
        if !out.contains(&pattern) {
            out.push(pattern);
        }
    }
    out.truncate(3);
    out
}

/// The headline pytest gives a test: its node id past the file, `::` as `.`.
fn headline(id: &str) -> String {
    id.split("::").skip(1).collect::<Vec<_>>().join(".")
}

/// The file part of a node id.
fn id_file(id: &str) -> &str {
    id.split("::").next().unwrap_or(id)
}

impl PytestParser {
    fn failure(&mut self, name: &str) -> usize {
        if let Some(i) = self.failures.iter().position(|f| f.name == name) {
            return i;
        }
        self.failures.push(TestFailure::new(name));
        self.failures.len() - 1
    }

    /// Records `id`'s outcome; a test reported twice (an error in teardown
    /// after it passed, a failed subtest) ends failed, counted once.
    fn record(&mut self, id: &str, status: TestStatus, duration_ms: Option<f64>) {
        let count = |s: &mut Summary, status: TestStatus, by: i32| {
            let n = match status {
                TestStatus::Passed => &mut s.passed,
                TestStatus::Failed => &mut s.failed,
                TestStatus::Skipped => &mut s.skipped,
            };
            *n = n.saturating_add_signed(by);
        };
        if status == TestStatus::Failed {
            self.failure(id);
        }
        if let Some(&i) = self.index.get(id) {
            let old = self.tests[i].status;
            if status == TestStatus::Failed && old != TestStatus::Failed {
                count(&mut self.summary, old, -1);
                count(&mut self.summary, status, 1);
                self.tests[i].status = status;
            }
            return;
        }
        count(&mut self.summary, status, 1);
        self.index.insert(id.to_string(), self.tests.len());
        self.tests.push(TestCase {
            name: id.to_string(),
            status,
            duration_ms,
            group: Some(id_file(id).to_string()),
            output: None,
        });
    }

    fn test_line(&mut self, line: &str) {
        if let Some((id, word)) = outcome_line(line) {
            self.started = None;
            let status = match word {
                "PASSED" | "XPASS" => TestStatus::Passed,
                "FAILED" | "ERROR" | "SUBFAILED" => TestStatus::Failed,
                "SKIPPED" | "XFAIL" => TestStatus::Skipped,
                // A subtest that passed or was skipped says nothing about
                // its test, which reports on its own.
                _ => return,
            };
            let duration = duration_ms(line).filter(|d| *d > 0.0);
            self.record(id, status, duration);
        } else if let Some(id) = started_test(line) {
            self.started = Some(id.to_string());
        } else if line.starts_with("ERROR: ")
            || line.starts_with("INTERNALERROR>")
            || line.contains("No module named pytest")
        {
            if self.errors.len() < MAX_ERROR_LINES {
                self.errors.push(line.to_string());
            }
        } else if !self.errors.is_empty()
            && self.errors.len() < MAX_ERROR_LINES
            && !line.is_empty()
            && !line.starts_with('=')
        {
            // The rest of a usage error (`inifile: …`, `(no match in any of …)`).
            self.errors.push(line.to_string());
        }
    }

    fn summary_line(&mut self, line: &str) {
        // `FAILED id - message`, `ERROR id`, `SUBFAILED[msg] (i=1) id - message`:
        // every failed test named by its node id, the fallback when a
        // report's title matched no test.
        let Some(word) = ["FAILED", "ERROR", "SUBFAILED"]
            .into_iter()
            .find(|w| line.starts_with(w))
        else {
            return;
        };
        let rest = line[word.len()..].trim_start();
        // A subtest's description comes before the id; a collection error
        // names a file (no `::`).
        let rest = match rest.find("::") {
            Some(colons) => &rest[rest[..colons].rfind(' ').map_or(0, |i| i + 1)..],
            None => rest,
        };
        let (id, message) = rest.split_once(" - ").unwrap_or((rest, ""));
        if id.is_empty() || id.contains(' ') && !id.contains("::") {
            return;
        }
        self.record(id, TestStatus::Failed, None);
        let i = self.failure(id);
        if self.failures[i].message.is_empty() {
            self.failures[i].message = message.to_string();
        }
    }

    fn block_line(&mut self, line: &str) {
        let Some(b) = self.block.as_mut() else {
            return;
        };
        b.lines.push(line.to_string());
        if separator(line, '-').is_some_and(|t| t.starts_with("Captured ")) {
            b.in_captured = true;
            b.captured.push(line.to_string());
            return;
        }
        if b.in_captured {
            b.captured.push(line.to_string());
            return;
        }
        if let Some(frame) = traceback_entry(line) {
            if !b.message.is_empty() {
                // A chained exception: its traceback is the one that counts.
                b.message.clear();
                b.frames.clear();
            }
            b.frames.push(frame);
        } else if line == "E" || line.starts_with("E ") {
            let m = line[1..].strip_prefix("   ").unwrap_or(&line[1..]);
            if let Some(rest) = m.trim_start().strip_prefix("File \"")
                && let Some((file, rest)) = rest.split_once("\", line ")
                && let Ok(n) = rest.trim().parse()
            {
                b.quoted_at = Some((file.to_string(), n));
            }
            b.message.push(m.to_string());
        } else if line.starts_with("    ") || line.trim().is_empty() {
            // Source lines and carets under an entry.
        } else if let Some(place) = crash_line(line) {
            b.quoted_at.get_or_insert(place);
        } else {
            b.text.push(line.to_string());
        }
    }

    /// The node id a report's title names: a test seen on a per-test line
    /// whose headline is the title (or starts it, for a subtest), the one in
    /// a file the traceback went through when several are.
    fn resolve(&self, title: &str, frames: &[(String, u32, String)]) -> (String, Option<String>) {
        let title = title.strip_prefix("[doctest] ").unwrap_or(title);
        if let Some(path) = title.strip_prefix("ERROR collecting ") {
            return (path.to_string(), None);
        }
        let title = title
            .strip_prefix("ERROR at setup of ")
            .or_else(|| title.strip_prefix("ERROR at teardown of "))
            .unwrap_or(title);
        let mut candidates: Vec<(&str, Option<&str>)> = self
            .tests
            .iter()
            .filter_map(|t| {
                let head = headline(&t.name);
                if title == head {
                    Some((t.name.as_str(), None))
                } else {
                    title
                        .strip_prefix(&head)
                        .and_then(|rest| rest.strip_prefix(' '))
                        .map(|sub| (t.name.as_str(), Some(sub)))
                }
            })
            .collect();
        if candidates.len() > 1 {
            let in_trace = |id: &str| frames.iter().any(|(f, _, _)| f == id_file(id));
            if candidates.iter().any(|(id, _)| in_trace(id)) {
                candidates.retain(|(id, _)| in_trace(id));
            }
        }
        match candidates.first() {
            Some((id, sub)) => (id.to_string(), sub.map(str::to_string)),
            None => (title.to_string(), None),
        }
    }

    /// A failure's report ended: place it at its innermost frame in the
    /// project.
    fn close_block(&mut self) {
        let Some(b) = self.block.take() else {
            return;
        };
        let (id, subtest) = self.resolve(&b.title, &b.frames);
        if b.title.starts_with("ERROR collecting ") && !self.collection_errors.contains(&id) {
            self.collection_errors.push(id.clone());
        }
        self.record(&id, TestStatus::Failed, None);
        let i = self.failure(&id);
        let own: Vec<&(String, u32, String)> =
            b.frames.iter().filter(|(f, _, _)| own_file(f)).collect();
        let place = own
            .last()
            .map(|(f, n, _)| (f.clone(), *n))
            .or(b.quoted_at.clone())
            .or_else(|| b.frames.last().map(|(f, n, _)| (f.clone(), *n)));
        let message = if b.message.is_empty() {
            b.text.join("\n")
        } else {
            b.message.join("\n")
        };
        let message = message.trim().to_string();
        let f = &mut self.failures[i];
        f.output.push_str(&b.lines.join("\n"));
        f.output.push('\n');
        // The first report that places the failure wins: a test's own
        // report after its subtests' says only "contains 1 failed subtest".
        if f.file.is_none() && (place.is_some() || f.message.is_empty()) {
            if let Some((file, line)) = place {
                f.file = Some(file);
                f.line = Some(line);
            }
            f.message = match &subtest {
                Some(sub) => format!("subtest {sub}: {message}"),
                None => message,
            };
            f.frames = own
                .iter()
                .rev()
                .map(|(_, _, func)| func.clone())
                .filter(|func| func != "<module>")
                .collect();
            f.suggested_traces = python_patterns(&own);
        }
        if !b.captured.is_empty()
            && let Some(&t) = self.index.get(&id)
        {
            let out = self.tests[t].output.get_or_insert_with(String::new);
            out.push_str(&b.captured.join("\n"));
            out.push('\n');
        }
    }
}

impl OutputParser for PytestParser {
    fn line(&mut self, _stream: Stream, line: &str) {
        // SIGINT: pytest prints its report, then where the test it stopped
        // was, under a banner.
        if self.interrupt_banner {
            self.interrupt_banner = false;
            self.interrupted_at = crash_line(line);
            return;
        }
        if separator(line, '!').is_some_and(|t| t == "KeyboardInterrupt") {
            self.interrupt_banner = true;
            return;
        }
        if let Some(title) = separator(line, '=') {
            self.close_block();
            self.section = match title {
                "ERRORS" | "FAILURES" => Section::Reports,
                "short test summary info" => Section::ShortSummary,
                "test session starts" => Section::Tests,
                // Warnings, durations, the closing counts.
                _ => Section::Other,
            };
            return;
        }
        match self.section {
            Section::Reports => {
                if let Some(title) = separator(line, '_') {
                    self.close_block();
                    self.block = Some(Block {
                        title: title.to_string(),
                        ..Block::default()
                    });
                } else {
                    self.block_line(line);
                }
            }
            Section::ShortSummary => self.summary_line(line),
            Section::Tests | Section::Other => self.test_line(line),
        }
    }

    fn running_in_partial_line(&self, _stream: Stream, partial: &str) -> Option<String> {
        started_test(partial).map(str::to_string)
    }

    fn running(&self) -> Vec<String> {
        self.started.iter().cloned().collect()
    }

    fn progress(&self) -> Progress {
        Progress {
            summary: self.summary,
            current_group: self
                .started
                .as_deref()
                .or(self.tests.last().map(|t| t.name.as_str()))
                .map(|id| id_file(id).to_string()),
            running: self.running(),
            failures: self.failures.clone(),
        }
    }

    fn finish(mut self: Box<Self>, exit_code: Option<i32>) -> TestResult {
        self.close_block();
        // The test that was running when the run was stopped.
        if let Some(id) = self.started.take() {
            self.record(&id, TestStatus::Failed, None);
            let i = self.failure(&id);
            let f = &mut self.failures[i];
            match self.interrupted_at.clone() {
                Some((file, line)) => {
                    f.message =
                        format!("did not finish: interrupted (KeyboardInterrupt) at {file}:{line}");
                    f.file = Some(file);
                    f.line = Some(line);
                }
                None => f.message = "did not finish: the run was stopped while it ran".into(),
            }
        }
        let ran = self.tests.len() - self.collection_errors.len();
        let error = if !self.collection_errors.is_empty() && ran == 0 {
            let what: Vec<String> = self
                .failures
                .iter()
                .filter(|f| self.collection_errors.contains(&f.name))
                .map(|f| match (&f.file, f.line) {
                    (Some(file), Some(line)) => {
                        format!("{} ({file}:{line}): {}", f.name, f.message)
                    }
                    _ => format!("{}: {}", f.name, f.message),
                })
                .collect();
            Some(format!(
                "pytest could not collect the tests:\n{}",
                what.join("\n")
            ))
        } else if self.errors.iter().any(|e| e.starts_with("INTERNALERROR>"))
            || (ran == 0 && !self.errors.is_empty())
        {
            let mut text = self.errors.join("\n");
            if text.contains("No module named pytest") {
                text.push_str("\n(install pytest for the python3 on the daemon's PATH)");
            }
            Some(text)
        } else if ran == 0 && exit_code.is_some_and(|c| c != 0 && c != 5) {
            Some(format!(
                "python3 -m pytest exited with code {} before any test ran",
                exit_code.unwrap_or(-1)
            ))
        } else {
            None
        };
        TestResult {
            framework: "pytest".into(),
            summary: self.summary,
            tests: self.tests,
            failures: self.failures,
            exit_code,
            error,
        }
    }
}
