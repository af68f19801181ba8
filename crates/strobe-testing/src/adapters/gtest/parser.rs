//! The parser of Google Test's console report, which streams per test.

use super::*;

/// The test being run.
struct Current {
    name: String,
    /// Its lines that are not Google Test's failure reports.
    output: String,
    /// Its failure, once Google Test reported one.
    failure: Option<usize>,
    /// Whether lines now belong to the first failure's message.
    in_message: bool,
}

/// Parses Google Test's console output as it streams.
#[derive(Default)]
pub struct GtestParser {
    /// The test suite running now.
    group: Option<String>,
    tests: Vec<TestCase>,
    summary: Summary,
    failures: Vec<TestFailure>,
    /// Tests started and not finished, in start order.
    running: Vec<String>,
    current: Option<Current>,
    /// Lines naming an error (build, configure, the build script) before
    /// any test ran, and what follows them.
    errors: Vec<String>,
    /// The last lines outside any test.
    tail: VecDeque<String>,
}

/// `Suite.Name (12 ms)` or `Inst/Suite.Name/1, where GetParam() = 3 (0 ms)`
/// → (`Suite.Name`, duration); the summary's `Suite.Name` lists have no
/// duration.
fn result_name(rest: &str) -> (&str, Option<f64>) {
    let (head, ms) = match rest.rsplit_once(" (") {
        Some((head, tail)) if tail.ends_with(" ms)") => {
            (head, tail.trim_end_matches(" ms)").parse::<f64>().ok())
        }
        _ => (rest, None),
    };
    let name = head.split_once(", where ").map_or(head, |(n, _)| n);
    (name.trim(), ms)
}

/// `path/to/x_test.cpp:16: Failure` → (file, line); `unknown file: Failure`
/// (an exception) → neither.
fn failure_header(line: &str) -> Option<(Option<String>, Option<u32>)> {
    let place = line.strip_suffix(": Failure")?;
    if place == "unknown file" {
        return Some((None, None));
    }
    match place.rsplit_once(':') {
        Some((file, n)) if n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty() => {
            Some((Some(file.to_string()), n.parse().ok()))
        }
        _ => Some((Some(place.to_string()), None)),
    }
}

/// The function Google Test generates for a test's body:
/// `Suite.Name` → `Suite_Name_Test::TestBody` (a parameterized test's
/// `Inst/Suite.Name/3` and a typed test's `Suite/0.Name` come from the same
/// class).
fn test_body(name: &str) -> Option<String> {
    let (suite, test) = name.split_once('.')?;
    let parts: Vec<&str> = suite.split('/').collect();
    let suite = match parts.as_slice() {
        [typed, n] if n.chars().all(|c| c.is_ascii_digit()) => *typed,
        parts => parts.last()?,
    };
    let test = test.split('/').next()?;
    Some(format!("{suite}_{test}_Test::TestBody"))
}

impl GtestParser {
    fn failure(&mut self, name: &str) -> usize {
        if let Some(i) = self.failures.iter().position(|f| f.name == name) {
            return i;
        }
        self.failures.push(TestFailure::new(name));
        self.failures.len() - 1
    }

    fn start(&mut self, name: &str) {
        self.running.push(name.to_string());
        self.current = Some(Current {
            name: name.to_string(),
            output: String::new(),
            failure: None,
            in_message: false,
        });
    }

    fn end(&mut self, name: &str, status: TestStatus, duration_ms: Option<f64>) {
        // Only a test that started ends: the summary at the end lists the
        // failed tests again, without a duration.
        let Some(i) = self.running.iter().position(|r| r == name) else {
            return;
        };
        self.running.remove(i);
        let current = match self.current.take() {
            Some(c) if c.name == name => Some(c),
            other => {
                self.current = other;
                None
            }
        };
        let output = current.as_ref().map(|c| c.output.clone());
        match status {
            TestStatus::Passed => self.summary.passed += 1,
            TestStatus::Failed => {
                self.summary.failed += 1;
                let i = self.failure(name);
                let f = &mut self.failures[i];
                if f.message.is_empty() {
                    f.message = "the test failed (Google Test reported no assertion)".into();
                }
                f.message = f.message.trim_end().to_string();
            }
            TestStatus::Skipped => self.summary.skipped += 1,
        }
        self.tests.push(TestCase {
            name: name.to_string(),
            status,
            duration_ms,
            group: name.split_once('.').map(|(s, _)| s.to_string()),
            output: output.filter(|o| !o.is_empty()),
        });
    }

    /// The test program ended (`why`) while tests were running: it crashed
    /// in them or hung until it was stopped. They failed, where is unknown.
    fn abandon_running(&mut self, why: &str) {
        for name in std::mem::take(&mut self.running) {
            let output = self
                .current
                .take()
                .filter(|c| c.name == name)
                .map(|c| c.output)
                .filter(|o| !o.is_empty());
            let i = self.failure(&name);
            let f = &mut self.failures[i];
            if f.message.is_empty() {
                f.message = format!("the test did not finish: the test program {why} while it ran");
                // What it printed before it stopped.
                f.output = output.clone().unwrap_or_default();
            }
            f.message = f.message.trim_end().to_string();
            if f.frames.is_empty() {
                f.frames = test_body(&name).into_iter().collect();
            }
            self.summary.failed += 1;
            self.tests.push(TestCase {
                group: name.split_once('.').map(|(s, _)| s.to_string()),
                name,
                status: TestStatus::Failed,
                duration_ms: None,
                output,
            });
        }
    }

    /// A line printed while a test runs: the test's own output, or Google
    /// Test's report of a failed assertion.
    fn test_line(&mut self, line: &str) {
        let Some((name, failure, in_message)) = self
            .current
            .as_ref()
            .map(|c| (c.name.clone(), c.failure, c.in_message))
        else {
            return;
        };
        if let Some((file, n)) = failure_header(line) {
            let i = match failure {
                Some(i) => i,
                None => {
                    let before = self.current.as_ref().map(|c| c.output.clone());
                    let i = self.failure(&name);
                    let f = &mut self.failures[i];
                    f.output.push_str(&before.unwrap_or_default());
                    f.file = file;
                    f.line = n;
                    f.frames = test_body(&name).into_iter().collect();
                    i
                }
            };
            push_line(&mut self.failures[i].output, line);
            if let Some(cur) = self.current.as_mut() {
                cur.failure = Some(i);
                // Later failures of the same test stay in its output only.
                cur.in_message = failure.is_none();
            }
            return;
        }
        match failure {
            Some(i) => {
                // Google Test's report and what the test prints after it
                // look alike: both are the message until the next report.
                let f = &mut self.failures[i];
                push_line(&mut f.output, line);
                if in_message {
                    push_line(&mut f.message, line);
                }
            }
            None => {
                if let Some(cur) = self.current.as_mut() {
                    push_line(&mut cur.output, line);
                }
            }
        }
    }

    /// A line outside any test: build output, or the run's banners.
    fn other_line(&mut self, line: &str) {
        if self.tests.is_empty() && self.running.is_empty() && self.errors.len() < MAX_ERROR_LINES {
            if !self.errors.is_empty() {
                self.errors.push(line.to_string());
            } else if names_error(line) {
                // The compiler's `file: In function …:` before its first
                // error says where.
                if let Some(context) = self.tail.back().filter(|l| l.ends_with(':')) {
                    self.errors.push(context.clone());
                }
                self.errors.push(line.to_string());
            }
        }
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(line.to_string());
    }
}

/// Whether a build or script line reports an error: the compiler's
/// `error:`, CMake's `CMake Error`, make's `*** [...] Error`, the linker's,
/// the shell's `not found`, the build script's own.
fn names_error(line: &str) -> bool {
    line.contains("error:")
        || line.contains("CMake Error")
        || line.contains("*** [")
        || line.contains("undefined reference")
        || line.contains(": not found")
        || line.starts_with("strobe: the build")
}

fn push_line(to: &mut String, line: &str) {
    to.push_str(line);
    to.push('\n');
}

impl OutputParser for GtestParser {
    fn line(&mut self, _stream: Stream, line: &str) {
        if let Some(name) = line.strip_prefix("[ RUN      ] ") {
            self.start(name.trim());
        } else if let Some(rest) = line.strip_prefix("[       OK ] ") {
            let (name, ms) = result_name(rest);
            self.end(name, TestStatus::Passed, ms);
        } else if let Some(rest) = line.strip_prefix("[  FAILED  ] ") {
            let (name, ms) = result_name(rest);
            self.end(name, TestStatus::Failed, ms);
        } else if let Some(rest) = line.strip_prefix("[  SKIPPED ] ") {
            let (name, ms) = result_name(rest);
            self.end(name, TestStatus::Skipped, ms);
        } else if let Some(name) = line.strip_prefix("[ DISABLED ] ") {
            // A DISABLED_ test is listed, never run.
            self.summary.skipped += 1;
            self.tests.push(TestCase {
                name: name.trim().to_string(),
                status: TestStatus::Skipped,
                duration_ms: None,
                group: name.split_once('.').map(|(s, _)| s.to_string()),
                output: None,
            });
        } else if let Some(rest) = line.strip_prefix("[----------] ") {
            // `2 tests from CalcTest` starts a suite; `… (0 ms total)`
            // ends it.
            if let Some((_, suite)) = rest.split_once(" from ")
                && !suite.ends_with(" ms total)")
            {
                self.group = Some(suite.trim().to_string());
            }
        } else if let Some(program) = line.strip_prefix("strobe: running ") {
            // The build script starts the next test program: the last one
            // ended, whatever it was running when it did.
            self.abandon_running("ended");
            self.group = Some(program.to_string());
        } else if line.starts_with("[==========] Running ") && !self.running.is_empty() {
            // Another program's run starts: the last one ended mid-test.
            self.abandon_running("ended");
        } else if self.current.is_some() {
            self.test_line(line);
        } else if !line.starts_with("[==========]") && !line.starts_with("[  PASSED  ]") {
            self.other_line(line);
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
        self.abandon_running(&match exit_code {
            Some(c) => format!("exited with code {c}"),
            None => "was killed (a crash or a stop)".to_string(),
        });
        let error = if self.tests.is_empty() && exit_code != Some(0) {
            Some(if !self.errors.is_empty() {
                self.errors.join("\n")
            } else if !self.tail.is_empty() {
                self.tail.iter().cloned().collect::<Vec<_>>().join("\n")
            } else {
                match exit_code {
                    Some(c) => format!("the test program exited with code {c} before any test ran"),
                    None => "the test program was killed before any test ran".to_string(),
                }
            })
        } else {
            None
        };
        let failures = self
            .failures
            .into_iter()
            .map(|mut f| {
                f.suggested_traces = GtestAdapter.suggest_traces(&f);
                f
            })
            .collect();
        TestResult {
            framework: "gtest".into(),
            summary: self.summary,
            tests: self.tests,
            failures,
            exit_code,
            error,
        }
    }
}
