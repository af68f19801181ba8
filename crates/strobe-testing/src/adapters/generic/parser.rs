//! The generic adapter's parser: heuristics over TAP, `go test`, ctest and PASS/FAIL lines, and `file:line:` places.

use super::*;

/// A place in the source that output pointed at.
#[derive(Debug, Clone, PartialEq)]
struct Place {
    file: String,
    line: u32,
    /// What the line said after the place (`error: …`, an assertion…).
    message: String,
    /// The function, where the line names it.
    function: Option<String>,
    /// From a Python traceback, where the innermost frame comes last.
    traceback: bool,
}

/// Parses any test tool's output as it streams, by line shape.
#[derive(Default)]
pub struct GenericParser {
    tests: Vec<TestCase>,
    failures: Vec<TestFailure>,
    running: Vec<String>,
    /// The highest counts a summary line gave.
    reported: Option<Summary>,
    /// Places since the last result line: the next failure's, if it fails.
    pending: Vec<Place>,
    /// Output since the last result line.
    pending_output: Vec<String>,
    /// The failure whose result line came last: the lines after it are its
    /// output, and its place if it has none.
    open: Option<usize>,
    /// The first places of the run, for a run that names no test.
    places: Vec<Place>,
    /// The function the compiler's `In function 'f':` line named.
    function: Option<String>,
    make_errors: Vec<String>,
    bail_out: Option<String>,
    stderr: Vec<String>,
}

/// The path of `file:line`-shaped text: no spaces, an extension of 1 to 5
/// letters or digits, not a URL.
fn looks_like_path(text: &str) -> bool {
    let Some((stem, ext)) = text.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && !text.contains(char::is_whitespace)
        && !text.contains("//")
        && (1..=5).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric() || c == '+')
        && ext.chars().any(|c| c.is_ascii_alphabetic())
}

fn digits(text: &str) -> Option<u32> {
    (!text.is_empty() && text.chars().all(|c| c.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

/// `./x` → `x`: the same file however the tool named it.
fn tidy_path(path: &str) -> String {
    path.strip_prefix("./").unwrap_or(path).to_string()
}

/// A place a line points at, if any.
fn place(line: &str) -> Option<Place> {
    let t = line.trim();
    let t = t.strip_prefix("# ").unwrap_or(t).trim_start();
    // Python: `File "calc.py", line 6, in parse`.
    if let Some(rest) = t.strip_prefix("File \"")
        && let Some((file, rest)) = rest.split_once("\", line ")
    {
        let (n, function) = rest.split_once(", in ").unwrap_or((rest, ""));
        return Some(Place {
            file: file.to_string(),
            line: digits(n.trim())?,
            message: String::new(),
            function: (!function.is_empty()).then(|| function.to_string()),
            traceback: true,
        });
    }
    // JavaScript: `at fn (file:line:col)`, the project's own frames.
    if t.starts_with("at ")
        && let Some(frame) = js_frame(t)
    {
        return frame.is_own().then(|| Place {
            file: frame.file.clone(),
            line: frame.line,
            message: String::new(),
            function: frame.function.clone(),
            traceback: false,
        });
    }
    // Rust: `thread 'x' panicked at src/lib.rs:11:9:`.
    if let Some((_, rest)) = t.split_once("panicked at ") {
        let rest = rest.trim_end_matches(':');
        let mut parts = rest.rsplitn(3, ':');
        let _column = parts.next();
        let n = parts.next().and_then(digits)?;
        let file = parts.next()?;
        return looks_like_path(file).then(|| Place {
            file: tidy_path(file),
            line: n,
            message: String::new(),
            function: None,
            traceback: false,
        });
    }
    // Perl and TAP diagnostics: `at t/basic.t line 12.`
    if let Some((_, rest)) = t.split_once("at ")
        && let Some((file, rest)) = rest.split_once(" line ")
        && looks_like_path(file)
        && let Some(n) = digits(rest.trim_end_matches('.'))
    {
        return Some(Place {
            file: tidy_path(file),
            line: n,
            message: String::new(),
            function: None,
            traceback: false,
        });
    }
    // `file:line: message` and `file:line:col: message`.
    let mut parts = t.splitn(4, ':');
    let file = parts.next()?;
    if !looks_like_path(file) {
        return None;
    }
    let n = digits(parts.next()?.trim())?;
    let third = parts.next().unwrap_or("");
    let message = match digits(third) {
        Some(_) => parts.next().unwrap_or(""),
        None => match parts.next() {
            Some(rest) => &t[t.len() - rest.len() - third.len() - 1..],
            None => third,
        },
    };
    let message = message.trim();
    // Warnings and notes are not where a test failed.
    if message.starts_with("warning") || message.starts_with("note") {
        return None;
    }
    Some(Place {
        file: tidy_path(file),
        line: n,
        message: message.to_string(),
        function: None,
        traceback: false,
    })
}

/// A recognised test outcome: (status, name, message).
type Outcome<'a> = (TestStatus, &'a str, Option<&'a str>);

/// TAP: `ok 1 - name`, `not ok 2 - name`, `ok 3 - name # SKIP why`.
fn tap(line: &str) -> Option<Outcome<'_>> {
    let (passed, rest) = match line.strip_prefix("not ok") {
        Some(r) => (false, r),
        None => (true, line.strip_prefix("ok")?),
    };
    let rest = rest.strip_prefix(' ')?;
    let (number, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    digits(number)?;
    let name = rest.strip_prefix("- ").unwrap_or(rest).trim();
    let (name, directive) = match name.split_once(" # ") {
        Some((n, d)) => (n.trim(), Some(d.trim())),
        None => (name, None),
    };
    let skipped = directive.is_some_and(|d| {
        let d = d.to_ascii_uppercase();
        d.starts_with("SKIP") || d.starts_with("TODO")
    });
    let status = if skipped {
        TestStatus::Skipped
    } else if passed {
        TestStatus::Passed
    } else {
        TestStatus::Failed
    };
    // A nameless TAP test is known by its number.
    let name = if name.is_empty() { number } else { name };
    Some((status, name, None))
}

/// Go: `--- FAIL: TestX (0.00s)`.
fn go(line: &str) -> Option<Outcome<'_>> {
    let rest = line.trim_start().strip_prefix("--- ")?;
    let (word, rest) = rest.split_once(": ")?;
    let status = match word {
        "PASS" => TestStatus::Passed,
        "FAIL" => TestStatus::Failed,
        "SKIP" => TestStatus::Skipped,
        _ => return None,
    };
    let name = rest.rsplit_once(" (").map_or(rest, |(n, _)| n).trim();
    Some((status, name, None))
}

/// CTest: `2/3 Test #2: subtracts ........***Failed    0.00 sec`.
fn ctest(line: &str) -> Option<Outcome<'_>> {
    let (_, rest) = line.trim_start().split_once(" Test ")?;
    let rest = rest.trim_start().strip_prefix('#')?;
    let (_, rest) = rest.split_once(": ")?;
    let (name, rest) = rest.split_once(" .")?;
    let outcome = rest.trim_start_matches('.').trim().trim_start_matches('*');
    let status = if outcome.starts_with("Passed") {
        TestStatus::Passed
    } else if outcome.starts_with("Not Run")
        || outcome.starts_with("Skipped")
        || outcome.starts_with("Disabled")
    {
        TestStatus::Skipped
    } else {
        TestStatus::Failed
    };
    let message = (status == TestStatus::Failed).then(|| {
        outcome
            .split("  ")
            .next()
            .unwrap_or(outcome)
            .trim_end_matches(" sec")
    });
    Some((status, name.trim(), message))
}

/// `PASS name`, `FAILED id - message`, `FAIL [ 0.1s] (1/4) bin name`.
fn keyword(line: &str) -> Option<Outcome<'_>> {
    let t = line.trim_start();
    let words = [
        ("PASSED", TestStatus::Passed),
        ("PASS", TestStatus::Passed),
        ("FAILED", TestStatus::Failed),
        ("FAIL", TestStatus::Failed),
        ("SKIPPED", TestStatus::Skipped),
        ("SKIP", TestStatus::Skipped),
    ];
    let (status, rest) = words.iter().find_map(|(w, s)| {
        let rest = t.strip_prefix(w)?;
        (rest.starts_with(' ') || rest.starts_with(':')).then_some((*s, rest))
    })?;
    let mut rest = rest.trim_start_matches(':').trim_start();
    // nextest's `[   0.020s] (1/4) binary test`
    if rest.starts_with('[') {
        rest = rest.split_once("] ")?.1.trim_start();
        if rest.starts_with('(') && rest.contains('/') {
            rest = rest.split_once(") ")?.1;
        }
        rest = rest.split_once(' ').map_or(rest, |(_, test)| test);
    }
    let (name, message) = match rest.split_once(" - ") {
        Some((n, m)) => (n.trim(), Some(m.trim())),
        None => (rest.trim(), None),
    };
    // `FAILED (failures=2)` is unittest's verdict, `FAIL\tpkg` Go's.
    if name.is_empty() || name.starts_with('(') || name.contains('\t') {
        return None;
    }
    Some((status, name, message))
}

/// `name ... ok` (libtest, unittest, deno) and `id PASSED [ 50%]` (pytest -v).
fn suffix(line: &str) -> Option<Outcome<'_>> {
    let t = line.trim();
    if let Some((name, outcome)) = t.rsplit_once(" ... ") {
        let outcome = outcome.split(" (").next().unwrap_or(outcome);
        let status = match outcome {
            "ok" | "OK" | "passed" | "PASSED" => TestStatus::Passed,
            "FAILED" | "FAIL" | "ERROR" | "failed" => TestStatus::Failed,
            o if o.starts_with("ignored") || o.starts_with("skipped") => TestStatus::Skipped,
            _ => return None,
        };
        let name = name.strip_prefix("test ").unwrap_or(name).trim();
        return (!name.is_empty()).then_some((status, name, None));
    }
    let t = t.rsplit_once(" [").map_or(t, |(head, pct)| {
        if pct.trim_end_matches(']').trim().ends_with('%') {
            head.trim_end()
        } else {
            t
        }
    });
    let (name, word) = t.rsplit_once(' ')?;
    let status = match word {
        "PASSED" | "XFAIL" => TestStatus::Passed,
        "FAILED" | "ERROR" | "XPASS" => TestStatus::Failed,
        "SKIPPED" => TestStatus::Skipped,
        _ => return None,
    };
    // One token: a test id, not a sentence ending in FAILED, nor a build
    // tool's verdict (`BUILD FAILED`).
    let name = name.trim();
    let verdict = name.chars().all(|c| c.is_ascii_uppercase());
    (!name.is_empty() && !name.contains(' ') && !verdict).then_some((status, name, None))
}

/// `✓ name (3 ms)` and `✗ name`.
fn mark(line: &str) -> Option<Outcome<'_>> {
    let t = line.trim_start();
    let mut chars = t.chars();
    let status = match chars.next()? {
        '\u{2713}' | '\u{2714}' => TestStatus::Passed,
        '\u{2717}' | '\u{2715}' | '\u{2718}' | '\u{d7}' => TestStatus::Failed,
        _ => return None,
    };
    let rest = chars.as_str().strip_prefix(' ')?;
    let name = match rest.rsplit_once(" (") {
        Some((n, d)) if d.ends_with("ms)") || d.ends_with("s)") => n,
        _ => match rest.rsplit_once(" [") {
            Some((n, d)) if d.ends_with("ms]") => n,
            _ => rest,
        },
    };
    let name = name.trim();
    (!name.is_empty()).then_some((status, name, None))
}

/// Go's `=== RUN   TestX` and CTest's `Start 2: name`: a test began.
fn start(line: &str) -> Option<&str> {
    let t = line.trim();
    if let Some(name) = t.strip_prefix("=== RUN") {
        return Some(name.trim()).filter(|n| !n.is_empty());
    }
    let rest = t.strip_prefix("Start ")?;
    let (n, name) = rest.split_once(": ")?;
    digits(n)?;
    Some(name.trim())
}

/// Counts in a summary line: `2 passed, 1 failed`, `Tests: 1 failed, 3 total`,
/// `test result: FAILED. 2 passed; 1 failed; 0 ignored`, `3 passing`.
fn counts(line: &str) -> Option<Summary> {
    // Words between spaces, so `file.c:5:22: error` counts nothing.
    let words: Vec<&str> = line
        .split_whitespace()
        .map(|w| w.trim_matches(|c| ",;:()[]".contains(c)))
        .filter(|w| !w.is_empty())
        .collect();
    let mut found = false;
    let mut s = Summary::default();
    for (i, w) in words.iter().enumerate() {
        let Some(n) = digits(w) else {
            continue;
        };
        let mut next = words.get(i + 1).copied().unwrap_or("");
        if next == "tests" || next == "test" {
            next = words.get(i + 2).copied().unwrap_or("");
        }
        let next = next.trim_end_matches('.').to_ascii_lowercase();
        let slot = match next.as_str() {
            "passed" | "pass" | "passing" => &mut s.passed,
            "failed" | "fail" | "failing" | "failures" => &mut s.failed,
            "skipped" | "skip" | "pending" | "ignored" | "todo" => &mut s.skipped,
            _ => continue,
        };
        *slot = (*slot).max(n);
        found = true;
    }
    found.then_some(s)
}

impl GenericParser {
    fn outcome(&mut self, status: TestStatus, name: &str, message: Option<&str>, line: &str) {
        self.running.retain(|r| r != name);
        let pending = std::mem::take(&mut self.pending);
        let mut output = std::mem::take(&mut self.pending_output);
        self.open = None;
        // A name seen again (a summary repeating failures) is the same test.
        if let Some(t) = self.tests.iter_mut().find(|t| t.name == name) {
            if t.status == status {
                return;
            }
            t.status = status;
        } else {
            self.tests.push(TestCase {
                name: name.to_string(),
                status,
                duration_ms: None,
                group: None,
                output: None,
            });
        }
        if status != TestStatus::Failed {
            return;
        }
        if let Some(i) = self.failures.iter().position(|f| f.name == name) {
            self.open = Some(i);
            return;
        }
        let mut f = TestFailure::new(name);
        f.message = message.unwrap_or_default().to_string();
        // The innermost of a traceback, else the first place printed.
        let at = pending
            .iter()
            .find(|p| !p.traceback)
            .or_else(|| pending.iter().rev().find(|p| p.traceback));
        if let Some(p) = at {
            Self::locate(&mut f, p);
        }
        output.push(line.to_string());
        f.output = output.iter().map(|l| format!("{l}\n")).collect();
        self.failures.push(f);
        self.open = Some(self.failures.len() - 1);
    }

    fn locate(f: &mut TestFailure, p: &Place) {
        f.file = Some(p.file.clone());
        f.line = Some(p.line);
        if f.message.is_empty() {
            f.message = p.message.clone();
        }
        if let Some(func) = &p.function
            && !f.frames.contains(func)
        {
            f.frames.push(func.clone());
        }
    }

    fn text_line(&mut self, line: &str) {
        let unindented = !line.starts_with(' ') && !line.starts_with('\t');
        if unindented && let Some(reason) = line.strip_prefix("Bail out!") {
            self.bail_out = Some(format!("Bail out!{reason}"));
            return;
        }
        let recognised = if unindented { tap(line) } else { None }
            .or_else(|| go(line))
            .or_else(|| ctest(line))
            .or_else(|| keyword(line))
            .or_else(|| mark(line))
            .or_else(|| suffix(line));
        if let Some((status, name, message)) = recognised {
            self.outcome(status, name, message, line);
            return;
        }
        if let Some(name) = start(line) {
            if !self.running.iter().any(|r| r == name) {
                self.running.push(name.to_string());
            }
            return;
        }
        if let Some(c) = counts(line) {
            let r = self.reported.get_or_insert_with(Summary::default);
            r.passed = r.passed.max(c.passed);
            r.failed = r.failed.max(c.failed);
            r.skipped = r.skipped.max(c.skipped);
        }
        let t = line.trim();
        if t.starts_with("make") && t.contains(": *** ") {
            self.make_errors.push(t.to_string());
        }
        // The compiler's `x.c: In function 'f':` names the function of the
        // errors under it.
        if let Some((_, rest)) = t.split_once(": In function ") {
            let name = rest.trim_end_matches(':');
            let name = name.trim_matches(|c| "'‘’`\"".contains(c));
            self.function = Some(name.to_string());
        }
        if let Some(i) = self.open
            && self.failures[i].output.lines().count() < MAX_LINES
        {
            let f = &mut self.failures[i];
            f.output.push_str(line);
            f.output.push('\n');
        } else if self.pending_output.len() < MAX_LINES {
            self.pending_output.push(line.to_string());
        }
        if let Some(mut p) = place(line) {
            if p.function.is_none() {
                p.function = self.function.clone();
            }
            if self.places.len() < MAX_PLACES {
                self.places.push(p.clone());
            }
            match self.open {
                Some(i) if self.failures[i].file.is_none() => {
                    Self::locate(&mut self.failures[i], &p);
                }
                _ => self.pending.push(p),
            }
        }
    }

    fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for t in &self.tests {
            match t.status {
                TestStatus::Passed => s.passed += 1,
                TestStatus::Failed => s.failed += 1,
                TestStatus::Skipped => s.skipped += 1,
            }
        }
        if let Some(r) = self.reported {
            s.passed = s.passed.max(r.passed);
            s.failed = s.failed.max(r.failed);
            s.skipped = s.skipped.max(r.skipped);
        }
        s
    }

    /// The run as one test, when no test line was recognised.
    fn whole_command(&mut self, exit_code: i32) {
        let reported_failures = self.reported.is_some_and(|r| r.failed > 0);
        let failed = exit_code != 0 || reported_failures;
        let status = if failed {
            TestStatus::Failed
        } else {
            TestStatus::Passed
        };
        self.tests.push(TestCase {
            name: WHOLE_COMMAND.to_string(),
            status,
            duration_ms: None,
            group: None,
            output: None,
        });
        if !failed {
            return;
        }
        let mut f = TestFailure::new(WHOLE_COMMAND);
        let places = std::mem::take(&mut self.places);
        let at = places
            .iter()
            .find(|p| !p.traceback)
            .or_else(|| places.iter().rev().find(|p| p.traceback));
        if let Some(p) = at {
            Self::locate(&mut f, p);
        }
        if f.message.is_empty() {
            f.message =
                self.make_errors
                    .first()
                    .cloned()
                    .unwrap_or_else(|| match self.stderr.last() {
                        Some(last) => format!("the command exited with code {exit_code}: {last}"),
                        None => format!("the command exited with code {exit_code}"),
                    });
        }
        f.output = self
            .pending_output
            .iter()
            .map(|l| format!("{l}\n"))
            .collect();
        self.failures.push(f);
    }
}

impl OutputParser for GenericParser {
    fn line(&mut self, stream: Stream, line: &str) {
        let line = strip_ansi(line);
        let line = line.trim_end_matches('\r');
        if stream == Stream::Stderr && self.stderr.len() < MAX_LINES && !line.trim().is_empty() {
            self.stderr.push(line.to_string());
        }
        self.text_line(line);
    }

    fn running(&self) -> Vec<String> {
        self.running.clone()
    }

    fn progress(&self) -> Progress {
        Progress {
            summary: self.summary(),
            current_group: None,
            running: self.running(),
            failures: self.failures.clone(),
        }
    }

    fn finish(mut self: Box<Self>, exit_code: Option<i32>) -> TestResult {
        let mut error = self.bail_out.clone();
        if self.tests.is_empty() && error.is_none() {
            match exit_code {
                // sh: the command was not found or not executable.
                Some(c @ (126 | 127)) => {
                    error = Some(if self.stderr.is_empty() {
                        format!("the command exited with code {c}: not found or not executable")
                    } else {
                        self.stderr.join("\n")
                    })
                }
                Some(c) => self.whole_command(c),
                None => {
                    error = Some(
                        "the command was killed before any test result was recognised".to_string(),
                    )
                }
            }
        } else if error.is_none()
            && self.failures.is_empty()
            && let Some(c) = exit_code.filter(|c| *c != 0)
        {
            let why = self
                .make_errors
                .first()
                .cloned()
                .or_else(|| self.places.first().map(|p| p.message.clone()))
                .filter(|m| !m.is_empty())
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            error = Some(format!(
                "the command exited with code {c} though no recognised test failed{why}"
            ));
        }
        let summary = self.summary();
        let failures = self
            .failures
            .into_iter()
            .map(|mut f| {
                f.suggested_traces = GenericAdapter.suggest_traces(&f);
                f
            })
            .collect();
        TestResult {
            framework: "generic".into(),
            summary,
            tests: self.tests,
            failures,
            exit_code,
            error,
        }
    }
}
