//! The parser of the `@strobe {json}` lines Strobe's reporters print, and V8 stack frames.

use super::*;

#[derive(Debug, Default, Deserialize)]
struct Event {
    event: String,
    #[serde(default)]
    root: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    titles: Vec<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default, rename = "durationMs")]
    duration_ms: Option<f64>,
    #[serde(default)]
    errors: Vec<JsError>,
    #[serde(default)]
    output: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct JsError {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    stack: Option<String>,
    #[serde(default)]
    frames: Option<Vec<JsFrame>>,
}

#[derive(Debug, Deserialize)]
struct JsFrame {
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default, rename = "fn")]
    function: Option<String>,
}

impl JsError {
    fn message(&self) -> String {
        match (&self.message, &self.stack) {
            (Some(m), _) if !m.trim().is_empty() => m.trim_end().to_string(),
            (_, Some(s)) => stack_message(s),
            _ => "(no message)".to_string(),
        }
    }

    /// Its frames: the runner's parsed (and source-mapped) ones when
    /// given, else the stack's.
    fn frames(&self) -> Vec<Frame> {
        if let Some(frames) = &self.frames
            && !frames.is_empty()
        {
            return frames
                .iter()
                .filter_map(|f| {
                    Some(Frame {
                        function: f.function.clone().unwrap_or_default(),
                        file: f.file.clone()?,
                        line: f.line?,
                    })
                })
                .collect();
        }
        self.stack.as_deref().map(parse_stack).unwrap_or_default()
    }
}

/// A test that started and has not ended.
struct Running {
    id: Option<String>,
    name: String,
}

/// Parses the output of a JS runner with Strobe's reporter (see the
/// module's documentation for the events) as it streams.
pub struct JsParser {
    framework: &'static str,
    separator: &'static str,
    /// Whether output lines printed while exactly one test runs are that
    /// test's own (Mocha runs tests one at a time and captures nothing;
    /// Jest and Vitest capture and report output themselves).
    attach_output: bool,
    root: Option<String>,
    tests: Vec<TestCase>,
    /// Index in `tests` by the runner's test id.
    by_id: HashMap<String, usize>,
    /// Ids that have a result: a late `start` for them is stale.
    finished: HashSet<String>,
    summary: Summary,
    failures: Vec<TestFailure>,
    running: Vec<Running>,
    group: Option<String>,
    /// The run's own errors.
    run_errors: Vec<String>,
    /// Errors of test files that did not run.
    file_errors: Vec<String>,
    /// How many entries of `tests` are such files.
    file_failures: usize,
    saw_run: bool,
    /// Output lines printed while one test ran alone, by its name.
    pending_output: HashMap<String, String>,
    /// The last lines that were not events.
    tail: VecDeque<String>,
}

impl JsParser {
    /// A parser for `framework`'s runs; test names are the file and the
    /// titles joined by `separator`.
    pub fn new(framework: &'static str, separator: &'static str, attach_output: bool) -> Self {
        Self {
            framework,
            separator,
            attach_output,
            root: None,
            tests: Vec::new(),
            by_id: HashMap::new(),
            finished: HashSet::new(),
            summary: Summary::default(),
            failures: Vec::new(),
            running: Vec::new(),
            group: None,
            run_errors: Vec::new(),
            file_errors: Vec::new(),
            file_failures: 0,
            saw_run: false,
            pending_output: HashMap::new(),
            tail: VecDeque::new(),
        }
    }

    fn rel(&self, file: &str) -> String {
        relative(file, self.root.as_deref())
    }

    /// The name a test is reported (and rerun) by: its file relative to
    /// the project, then its titles.
    fn name(&self, file: Option<&str>, titles: &[String]) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(f) = file {
            parts.push(self.rel(f));
        }
        parts.extend(titles.iter().cloned());
        parts.join(self.separator)
    }

    /// A failure named `name` from `errors`: placed at the innermost frame
    /// in the project's own files (the assertion in the test, or the
    /// project code that threw), else in the test's file.
    fn failure(
        &self,
        name: &str,
        test_file: Option<&str>,
        errors: &[JsError],
        output: Option<&str>,
    ) -> TestFailure {
        let mut f = TestFailure::new(name);
        let root = self.root.as_deref();
        let messages: Vec<String> = errors.iter().map(JsError::message).collect();
        f.message = messages.join("\n\n");
        // A failure with no frame of the project's (a timeout, raised by
        // the runner) is at least in its test's file.
        f.file = test_file.map(|t| relative(t, root));
        if let Some(e) = errors.first() {
            let frames = e.frames();
            let own: Vec<&Frame> = frames.iter().filter(|fr| own_frame(fr, root)).collect();
            if let Some(at) = own.first() {
                f.file = Some(relative(&at.file, root));
                f.line = Some(at.line);
            }
            f.frames = own
                .iter()
                .map(|fr| fr.function.clone())
                .filter(|n| !n.is_empty())
                .collect();
            f.suggested_traces = file_patterns(&own, test_file, root);
        }
        if let Some(out) = output {
            f.output.push_str(out);
            if !out.ends_with('\n') {
                f.output.push('\n');
            }
        }
        for e in errors {
            f.output
                .push_str(e.stack.as_deref().unwrap_or(&e.message()));
            f.output.push('\n');
        }
        f
    }

    fn count(&mut self, status: TestStatus, delta: i32) {
        let n = match status {
            TestStatus::Passed => &mut self.summary.passed,
            TestStatus::Failed => &mut self.summary.failed,
            TestStatus::Skipped => &mut self.summary.skipped,
        };
        *n = n.saturating_add_signed(delta);
    }

    fn set_failure(&mut self, failure: Option<TestFailure>, name: &str) {
        let at = self.failures.iter().position(|f| f.name == name);
        match (failure, at) {
            (Some(f), Some(i)) => self.failures[i] = f,
            (Some(f), None) => self.failures.push(f),
            (None, Some(i)) => {
                self.failures.remove(i);
            }
            (None, None) => {}
        }
    }

    fn started(&mut self, e: Event) {
        if e.id.as_ref().is_some_and(|id| self.finished.contains(id)) {
            return;
        }
        let name = self.name(e.file.as_deref(), &e.titles);
        if let Some(f) = &e.file {
            self.group = Some(self.rel(f));
        }
        let known = self.running.iter().any(|r| match (&r.id, &e.id) {
            (Some(a), Some(b)) => a == b,
            _ => r.name == name,
        });
        if !known {
            self.running.push(Running { id: e.id, name });
        }
    }

    fn result(&mut self, e: Event) {
        let name = self.name(e.file.as_deref(), &e.titles);
        let status = match e.status.as_deref() {
            Some("passed") => TestStatus::Passed,
            Some("failed") => TestStatus::Failed,
            _ => TestStatus::Skipped,
        };
        let pos = self.running.iter().position(|r| match (&r.id, &e.id) {
            (Some(a), Some(b)) => a == b,
            _ => r.name == name,
        });
        if let Some(i) = pos {
            self.running.remove(i);
        }
        // What the test printed: the reporter's capture, else the lines
        // seen while it ran alone, else what an earlier report had.
        let previous = e.id.as_ref().and_then(|id| self.by_id.get(id).copied());
        let seen = self.pending_output.remove(&name);
        let output = e
            .output
            .clone()
            .or(seen)
            .or_else(|| previous.and_then(|i| self.tests[i].output.clone()));
        let failure = (status == TestStatus::Failed)
            .then(|| self.failure(&name, e.file.as_deref(), &e.errors, output.as_deref()));
        if let Some(id) = &e.id {
            self.finished.insert(id.clone());
        }
        match previous {
            Some(i) => {
                // The same test reported again (Vitest: the worker's early
                // line, then the reporter's): the later one stands.
                let old = self.tests[i].status;
                self.count(old, -1);
                self.count(status, 1);
                let t = &mut self.tests[i];
                t.status = status;
                t.duration_ms = e.duration_ms.or(t.duration_ms);
                t.output = output;
                self.set_failure(failure, &name);
            }
            None => {
                self.count(status, 1);
                if let Some(id) = &e.id {
                    self.by_id.insert(id.clone(), self.tests.len());
                }
                self.tests.push(TestCase {
                    name: name.clone(),
                    status,
                    duration_ms: e.duration_ms,
                    group: e.file.as_deref().map(|f| self.rel(f)),
                    output,
                });
                if let Some(f) = failure {
                    self.failures.push(f);
                }
            }
        }
    }

    /// A file that failed outside its tests: one failure named by the file
    /// (running that name reruns the file), its errors' messages added up.
    fn file_error(&mut self, e: Event) {
        let name = match &e.file {
            Some(f) => self.rel(f),
            None => "(unknown file)".to_string(),
        };
        let mut f = self.failure(&name, e.file.as_deref(), &e.errors, e.output.as_deref());
        if let Some(hook) = &e.title {
            f.message = format!("{hook}: {}", f.message);
        }
        self.file_errors.push(format!("{name}: {}", f.message));
        if let Some(i) = self.failures.iter().position(|x| x.name == name) {
            let old = &mut self.failures[i];
            old.message = format!("{}\n\n{}", old.message, f.message);
            old.output.push_str(&f.output);
            if old.file.is_none() {
                old.file = f.file;
                old.line = f.line;
            }
            return;
        }
        self.count(TestStatus::Failed, 1);
        self.file_failures += 1;
        self.tests.push(TestCase {
            name: name.clone(),
            status: TestStatus::Failed,
            duration_ms: None,
            group: Some(name),
            output: None,
        });
        self.failures.push(f);
    }

    fn event(&mut self, e: Event) {
        match e.event.as_str() {
            "run" => {
                self.saw_run = true;
                if let Some(root) = &e.root {
                    self.root = Some(root.trim_end_matches('/').to_string());
                }
            }
            "file-start" => {
                if let Some(f) = &e.file {
                    self.group = Some(self.rel(f));
                }
            }
            "file-end" => {}
            "start" => self.started(e),
            "result" => self.result(e),
            "file-error" => self.file_error(e),
            "end" => {
                for err in &e.errors {
                    self.run_errors.push(
                        err.stack
                            .clone()
                            .filter(|s| !s.is_empty())
                            .unwrap_or_else(|| err.message()),
                    );
                }
            }
            _ => {}
        }
    }

    /// A line that is not an event: kept for errors, and as the running
    /// test's output where that is how the runner works.
    fn other(&mut self, line: &str) {
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
        }
        // Bundlers print whole minified sources on one line.
        self.tail
            .push_back(line.chars().take(MAX_TAIL_LINE).collect::<String>());
        if self.attach_output && self.running.len() == 1 {
            let name = self.running[0].name.clone();
            let out = self.pending_output.entry(name).or_default();
            if out.len() < MAX_TEST_OUTPUT {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
}

impl OutputParser for JsParser {
    fn line(&mut self, _stream: Stream, line: &str) {
        let Some(at) = line.find(EVENT_MARKER) else {
            self.other(line);
            return;
        };
        // Test output without a newline can precede an event on its line.
        if at > 0 {
            self.other(&line[..at]);
        }
        match serde_json::from_str::<Event>(&line[at + EVENT_MARKER.len()..]) {
            Ok(e) => self.event(e),
            Err(_) => self.other(line),
        }
    }

    fn running(&self) -> Vec<String> {
        self.running.iter().map(|r| r.name.clone()).collect()
    }

    fn progress(&self) -> Progress {
        Progress {
            summary: self.summary,
            current_group: self.group.clone(),
            running: self.running(),
            failures: self.failures.clone(),
        }
    }

    fn finish(self: Box<Self>, exit_code: Option<i32>) -> TestResult {
        let this = *self;
        let tail = this
            .tail
            .iter()
            .map(String::as_str)
            .filter(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        // File-level failures are entries too: did any test itself run?
        let ran_tests = this.tests.len() > this.file_failures;
        let error = if !this.saw_run {
            // The runner never got to its tests: a config error, a missing
            // dependency, no test files (Mocha), a crash on start.
            match exit_code {
                Some(0) => None,
                _ if tail.contains("No test files found") => None,
                Some(c) => Some(format!(
                    "{} exited with code {c} before running any test:\n{tail}",
                    this.framework
                )),
                None => Some(format!(
                    "{} was stopped before running any test:\n{tail}",
                    this.framework
                )),
            }
        } else if !this.run_errors.is_empty() {
            Some(this.run_errors.join("\n\n"))
        } else if !ran_tests && !this.file_errors.is_empty() {
            Some(this.file_errors.join("\n\n"))
        } else {
            None
        };
        TestResult {
            framework: this.framework.to_string(),
            summary: this.summary,
            tests: this.tests,
            failures: this.failures,
            exit_code,
            error,
        }
    }
}

/// Trace patterns for an instrumented rerun of a failure: `@file:` the
/// project files (not the test's own) its error passed through, innermost
/// first, at most three.
fn file_patterns(own: &[&Frame], test_file: Option<&str>, root: Option<&str>) -> Vec<String> {
    let test = test_file.map(|t| relative(t, root));
    let mut patterns: Vec<String> = Vec::new();
    for fr in own {
        if test.as_deref() == Some(relative(&fr.file, root).as_str()) {
            continue;
        }
        let Some(name) = std::path::Path::new(&fr.file).file_name() else {
            continue;
        };
        let pattern = format!("@file:{}", name.to_string_lossy());
        if !patterns.contains(&pattern) && patterns.len() < 3 {
            patterns.push(pattern);
        }
    }
    patterns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v8_frames_are_parsed() {
        let stack = "TypeError: not a number: x\n    at parse (/p/src/calc.js:15:11)\n    at /p/t.test.js:15:12\n    at async Promise.all (index 0)\n    at new Thing (file:///p/a.mjs:3:1)\n    at process.processImmediate (node:internal/timers:483:21)";
        let frames = parse_stack(stack);
        assert_eq!(
            frames
                .iter()
                .map(|f| (f.function.as_str(), f.file.as_str(), f.line))
                .collect::<Vec<_>>(),
            [
                ("parse", "/p/src/calc.js", 15),
                ("", "/p/t.test.js", 15),
                ("new Thing", "/p/a.mjs", 3),
                ("process.processImmediate", "node:internal/timers", 483),
            ]
        );
        assert_eq!(stack_message(stack), "TypeError: not a number: x");
        assert_eq!(from_file_url("file:///a%20b/c.mjs"), "/a b/c.mjs");
        assert_eq!(
            stack_message(
                "Error: expect(received).toBe(expected)\n\nExpected: 3\n    at x (/p/a.js:1:1)"
            ),
            "expect(received).toBe(expected)\n\nExpected: 3"
        );
    }

    #[test]
    fn own_frames_are_the_projects() {
        let f = |file: &str| Frame {
            function: String::new(),
            file: file.to_string(),
            line: 1,
        };
        assert!(own_frame(&f("/p/src/a.js"), Some("/p")));
        assert!(own_frame(&f("test/a.spec.js"), Some("/p")));
        assert!(!own_frame(&f("/p/node_modules/x/a.js"), Some("/p")));
        assert!(!own_frame(&f("/elsewhere/a.js"), Some("/p")));
        assert!(!own_frame(&f("node:internal/timers"), None));
    }

    #[test]
    fn names_escape_into_anchored_patterns() {
        assert_eq!(
            full_name_pattern(&["a (b)".into(), "c.d?".into()], " "),
            "^a \\(b\\) c\\.d\\?$"
        );
        assert_eq!(runners_in("NODE_ENV=test jest --ci && tsc"), ["jest"]);
        assert_eq!(runners_in("node_modules/.bin/vitest run"), ["vitest"]);
        assert!(runners_in("ts-jest-helper").is_empty());
        assert_eq!(runners_in("bun test"), ["bun"]);
    }
}
