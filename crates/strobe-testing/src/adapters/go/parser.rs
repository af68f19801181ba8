//! The parser of `go test -json`'s events and Go's goroutine dumps.

use super::*;

/// One test2json event.
#[derive(serde::Deserialize)]
struct Event {
    #[serde(rename = "Action")]
    action: String,
    #[serde(rename = "Package", default)]
    package: Option<String>,
    #[serde(rename = "Test", default)]
    test: Option<String>,
    #[serde(rename = "Output", default)]
    output: Option<String>,
    #[serde(rename = "Elapsed", default)]
    elapsed: Option<f64>,
    /// Go 1.24+: the package of a `build-output` / `build-fail` event.
    #[serde(rename = "ImportPath", default)]
    import_path: Option<String>,
}

/// (package, test).
type Key = (String, String);

/// Parses `go test -json` output as it streams.
#[derive(Default)]
pub struct GoParser {
    tests: Vec<TestCase>,
    summary: Summary,
    failures: Vec<TestFailure>,
    /// Tests started and not ended, in start order.
    running: Vec<Key>,
    /// Each running test's output lines.
    output: HashMap<Key, Vec<String>>,
    /// Tests that ran subtests.
    parents: HashSet<Key>,
    /// Tests started so far.
    starts: usize,
    /// Each test's (latest) start, numbered.
    started: HashMap<Key, usize>,
    /// The latest start among the subtests of (package, parent test; "" for
    /// the top level).
    latest_sibling: HashMap<Key, usize>,
    /// Tests that called `t.Parallel` (paused): they run beside their
    /// siblings.
    parallel: HashSet<Key>,
    /// The package of the last event.
    package: Option<String>,
    /// Packages whose build failed.
    failed_builds: Vec<String>,
    /// The compiler's and the go command's own lines.
    build_errors: Vec<String>,
    /// Each package's own output (outside any test).
    package_output: HashMap<String, Vec<String>>,
    /// Packages that failed with no failing test to show for it.
    package_errors: Vec<String>,
}

/// A goroutine of a dump: its `(function, file, line)` frames, innermost
/// first, and the function that created it.
#[derive(Default)]
struct Goroutine {
    frames: Vec<(String, String, u32)>,
    created_by: Option<String>,
}

/// The function of a dump's frame line: `pkg.F(0x1, …)` → `pkg.F`.
fn frame_function(line: &str) -> Option<&str> {
    let line = line.trim_end();
    let body = line.strip_suffix(')')?;
    let mut depth = 1;
    for (i, c) in body.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return (i > 0).then(|| &body[..i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Goroutines of a dump in `lines` (a panic's, a timeout's, SIGQUIT's).
fn goroutines(lines: &[String]) -> Vec<Goroutine> {
    let mut out: Vec<Goroutine> = Vec::new();
    let mut function: Option<String> = None;
    for line in lines {
        if line.starts_with("goroutine ") && line.trim_end().ends_with(':') {
            out.push(Goroutine::default());
            function = None;
            continue;
        }
        let Some(g) = out.last_mut() else {
            continue;
        };
        if let Some(place) = line.strip_prefix('\t') {
            let place = place.split(' ').next().unwrap_or(place);
            if let (Some(f), Some((file, n))) = (function.take(), place.rsplit_once(':'))
                && let Ok(n) = n.parse()
            {
                g.frames.push((f, file.to_string(), n));
            }
        } else if let Some(creator) = line.strip_prefix("created by ") {
            let creator = creator.split(" in goroutine ").next().unwrap_or(creator);
            g.created_by = Some(creator.trim_end().to_string());
        } else if let Some(f) = frame_function(line) {
            function = Some(f.to_string());
        }
    }
    out
}

/// Is `function` the test function `test` (or a closure in it)?
fn in_test(function: &str, test: &str) -> bool {
    let start = function.rfind('/').map_or(0, |i| i + 1);
    function[start..].split('.').nth(1) == Some(test)
}

/// The Go installation's source directory, from the frames of the runtime
/// and testing packages (`/usr/lib/go-1.19/src/`).
fn goroot_src(goroutines: &[Goroutine]) -> Option<String> {
    goroutines
        .iter()
        .flat_map(|g| &g.frames)
        .filter(|(f, _, _)| f.starts_with("runtime.") || f.starts_with("testing."))
        .find_map(|(_, file, _)| file.find("/src/").map(|i| file[..i + 5].to_string()))
}

/// A message `file.go:12: text` line of a test's output, with its indent.
fn message_line(line: &str) -> Option<(usize, &str, u32, &str)> {
    let text = line.trim_start();
    let indent = line.len() - text.len();
    if indent == 0 {
        return None;
    }
    let (place, message) = text.split_once(": ")?;
    let (file, n) = place.rsplit_once(':')?;
    if !file.ends_with(".go") || file.contains(' ') {
        return None;
    }
    Some((indent, file, n.parse().ok()?, message))
}

impl GoParser {
    fn output_line(&mut self, line: &str) {
        let Ok(e) = serde_json::from_str::<Event>(line) else {
            self.text_line(line);
            return;
        };
        if let Some(p) = &e.package {
            self.package = Some(p.clone());
        }
        match e.action.as_str() {
            "build-output" => {
                if let Some(o) = &e.output {
                    for l in o.lines() {
                        self.build_error(l);
                    }
                }
            }
            "build-fail" => {
                if let Some(p) = e.import_path.or(e.package) {
                    self.failed_build(&p);
                }
            }
            _ => match (e.package.clone(), e.test.clone()) {
                (Some(package), Some(test)) => self.test_event(&e, package, test),
                (Some(package), None) => self.package_event(&e, package),
                _ => {}
            },
        }
    }

    fn test_event(&mut self, e: &Event, package: String, test: String) {
        let key = (package, test);
        match e.action.as_str() {
            "run" => {
                let parent = key.1.rsplit_once('/').map_or("", |(p, _)| p);
                if !parent.is_empty() {
                    self.parents.insert((key.0.clone(), parent.to_string()));
                }
                self.starts += 1;
                self.started.insert(key.clone(), self.starts);
                self.latest_sibling
                    .insert((key.0.clone(), parent.to_string()), self.starts);
                if !self.running.contains(&key) {
                    self.running.push(key.clone());
                }
                self.output.entry(key).or_default();
            }
            "output" => {
                let lines = self.output.entry(key).or_default();
                if let Some(o) = &e.output
                    && lines.len() < MAX_TEST_LINES
                {
                    lines.push(o.trim_end_matches(['\n', '\r']).to_string());
                }
            }
            "pass" => self.end(key, TestStatus::Passed, e.elapsed, true),
            "skip" => self.end(key, TestStatus::Skipped, e.elapsed, true),
            "fail" => self.end(key, TestStatus::Failed, e.elapsed, true),
            "pause" => {
                self.parallel.insert(key);
            }
            _ => {} // cont, bench
        }
    }

    fn package_event(&mut self, e: &Event, package: String) {
        match e.action.as_str() {
            "output" => {
                let Some(o) = &e.output else {
                    return;
                };
                let o = o.trim_end_matches(['\n', '\r']);
                if o.ends_with("[build failed]") {
                    self.failed_build(&package);
                }
                let lines = self.package_output.entry(package).or_default();
                if lines.len() < MAX_TEST_LINES {
                    lines.push(o.to_string());
                }
            }
            "fail" => {
                // Its running tests ended with the test binary.
                let unfinished: Vec<Key> = self
                    .running
                    .iter()
                    .filter(|(p, _)| *p == package)
                    .cloned()
                    .collect();
                let any = !unfinished.is_empty();
                for key in unfinished.into_iter().rev() {
                    self.end_unfinished(key);
                }
                let output = self.package_output.remove(&package).unwrap_or_default();
                let failed_test = self.tests.iter().any(|t| {
                    t.status == TestStatus::Failed && t.group.as_deref() == Some(package.as_str())
                });
                if !any && !failed_test && !self.failed_builds.contains(&package) {
                    let said: Vec<&str> = output
                        .iter()
                        .map(String::as_str)
                        .filter(|l| !l.is_empty() && *l != "FAIL" && !l.starts_with("FAIL\t"))
                        .collect();
                    self.package_errors.push(format!(
                        "{package} failed without a failing test{}",
                        if said.is_empty() {
                            String::new()
                        } else {
                            format!(":\n{}", said.join("\n"))
                        }
                    ));
                }
            }
            "pass" | "skip" => {
                self.package_output.remove(&package);
            }
            _ => {}
        }
    }

    /// A line that is not an event: the go command's own (stderr, and
    /// `FAIL pkg [build failed]` on stdout before Go 1.24).
    fn text_line(&mut self, line: &str) {
        if let Some(rest) = line.strip_prefix("FAIL\t")
            && let Some(package) = rest.strip_suffix(" [build failed]")
        {
            self.failed_build(package);
        } else if !line.trim().is_empty() {
            self.build_error(line);
        }
    }

    fn build_error(&mut self, line: &str) {
        if self.build_errors.len() < MAX_BUILD_ERROR_LINES {
            self.build_errors.push(line.to_string());
        }
    }

    fn failed_build(&mut self, package: &str) {
        if !self.failed_builds.iter().any(|p| p == package) {
            self.failed_builds.push(package.to_string());
        }
    }

    /// A sequential test that a later sibling followed has finished: Go
    /// before 1.20 reports subtests' ends only when their parent ends.
    fn superseded(&self, key: &Key) -> bool {
        let parent = key.1.rsplit_once('/').map_or("", |(p, _)| p);
        let latest = self
            .latest_sibling
            .get(&(key.0.clone(), parent.to_string()));
        !self.parallel.contains(key) && latest > self.started.get(key)
    }

    /// A test whose binary ended before it did: failed, unless it had
    /// finished already ([`Self::superseded`]), when its output tells
    /// whether it failed and otherwise it is left out, its outcome unknown.
    fn end_unfinished(&mut self, key: Key) {
        if !self.superseded(&key) {
            self.end(key, TestStatus::Failed, None, false);
            return;
        }
        let said_why = self
            .output
            .get(&key)
            .is_some_and(|lines| lines.iter().any(|l| message_line(l).is_some()));
        if said_why {
            self.end(key, TestStatus::Failed, None, true);
        } else {
            self.running.retain(|k| *k != key);
            self.output.remove(&key);
        }
    }

    /// A test ended, or its binary did before it (`finished` false).
    fn end(&mut self, key: Key, status: TestStatus, elapsed: Option<f64>, finished: bool) {
        self.running.retain(|k| *k != key);
        let lines = self.output.remove(&key).unwrap_or_default();
        let (package, name) = key;
        let failure = (status == TestStatus::Failed)
            .then(|| self.failure(&package, &name, &lines, finished))
            .flatten();
        // A test that only ran subtests is their group, not a test itself.
        if self.parents.contains(&(package.clone(), name.clone())) && failure.is_none() {
            return;
        }
        match status {
            TestStatus::Passed => self.summary.passed += 1,
            TestStatus::Failed => self.summary.failed += 1,
            TestStatus::Skipped => self.summary.skipped += 1,
        }
        self.tests.push(TestCase {
            name,
            status,
            duration_ms: elapsed.map(|s| s * 1000.0),
            group: Some(package),
            output: (!lines.is_empty()).then(|| lines.join("\n")),
        });
        if let Some(f) = failure {
            self.failures.push(f);
        }
    }

    /// What a failed test's output says: a panic or goroutine dump's
    /// innermost own frame, else its last `file:line: message`. `None` for a
    /// test that failed only through its subtests.
    fn failure(
        &self,
        package: &str,
        name: &str,
        lines: &[String],
        finished: bool,
    ) -> Option<TestFailure> {
        let top = name.split('/').next().unwrap_or(name);
        let mut f = TestFailure::new(name);
        f.output = lines.join("\n");
        let stop = lines.iter().find(|l| {
            l.starts_with("panic: ") || l.starts_with("fatal error: ") || *l == "SIGQUIT: quit"
        });
        if let Some(stop) = stop {
            f.message = stop.trim_end_matches(" [recovered]").to_string();
            let all = goroutines(lines);
            let src = goroot_src(&all);
            let own = |file: &str| {
                !file.contains("/pkg/mod/")
                    && !file.ends_with("_testmain.go")
                    && src.as_deref().is_none_or(|s| !file.starts_with(s))
            };
            // The test's goroutine, else one it started, else the first.
            let chosen = all
                .iter()
                .position(|g| g.frames.iter().any(|(func, _, _)| in_test(func, top)))
                .or_else(|| {
                    all.iter()
                        .position(|g| g.created_by.as_deref().is_some_and(|c| in_test(c, top)))
                })
                .unwrap_or(0);
            if let Some(g) = all.get(chosen)
                && let Some((_, file, line)) = g.frames.iter().find(|(_, file, _)| own(file))
            {
                f.file = Some(file.clone());
                f.line = Some(*line);
            }
            // The chosen goroutine's own functions, then the others'.
            let order = std::iter::once(chosen).chain((0..all.len()).filter(|i| *i != chosen));
            for i in order {
                for (func, file, _) in &all[i].frames {
                    if own(file) && !f.frames.contains(func) {
                        f.frames.push(func.clone());
                    }
                }
            }
            if !finished {
                f.message = format!("did not finish: {}", f.message);
            }
        } else {
            // The last `file:line: message` block (t.Log lines look the same
            // and usually come first), with its continuation lines.
            let mut block: Option<(usize, String, u32, Vec<String>)> = None;
            for l in lines {
                if let Some((indent, file, n, message)) = message_line(l) {
                    block = Some((indent, file.to_string(), n, vec![message.to_string()]));
                } else if let Some((indent, _, _, text)) = block.as_mut()
                    && l.len() - l.trim_start().len() > *indent
                    && !l.trim_start().starts_with("--- ")
                {
                    text.push(l.trim_start().to_string());
                }
            }
            match block {
                Some((_, file, n, text)) => {
                    f.file = Some(file);
                    f.line = Some(n);
                    f.message = text.join("\n");
                    if !finished {
                        f.message = format!("did not finish: {}", f.message);
                    }
                }
                // Its subtests failed (or did not finish): they say why.
                None if self
                    .parents
                    .contains(&(package.to_string(), name.to_string())) =>
                {
                    return None;
                }
                None if !finished => {
                    f.message = "did not finish: its test binary ended while it ran (killed by a signal, os.Exit or a crash)".into();
                }
                None => f.message = "failed without a message".into(),
            }
            f.frames = vec![format!("{package}.{top}")];
        }
        f.suggested_traces = suggest(&f.frames);
        Some(f)
    }
}

impl OutputParser for GoParser {
    fn line(&mut self, stream: Stream, line: &str) {
        match stream {
            Stream::Stdout => self.output_line(line),
            Stream::Stderr => self.text_line(line),
        }
    }

    fn running(&self) -> Vec<String> {
        // The innermost (a test whose subtest runs is waiting for it), and
        // not one a sibling followed.
        self.running
            .iter()
            .filter(|key| {
                let (p, t) = key;
                !self.superseded(key)
                    && !self
                        .running
                        .iter()
                        .any(|(p2, t2)| p2 == p && t2.starts_with(&format!("{t}/")))
            })
            .map(|(_, t)| t.clone())
            .collect()
    }

    fn progress(&self) -> Progress {
        let running = self.running();
        Progress {
            summary: self.summary,
            current_group: self.package.clone(),
            running,
            failures: self.failures.clone(),
        }
    }

    fn finish(mut self: Box<Self>, exit_code: Option<i32>) -> TestResult {
        // The run was killed: its running tests never ended.
        for key in std::mem::take(&mut self.running).into_iter().rev() {
            self.end_unfinished(key);
        }
        let mut errors: Vec<String> = Vec::new();
        if !self.failed_builds.is_empty() {
            errors.push(format!(
                "build failed: {}\n{}",
                self.failed_builds.join(", "),
                self.build_errors.join("\n")
            ));
        } else if self
            .build_errors
            .iter()
            .any(|l| l.contains("matched no packages") || l.starts_with("no packages to test"))
        {
            // A module without packages has no tests: no error.
        } else if self.tests.is_empty() && !self.build_errors.is_empty() {
            errors.push(self.build_errors.join("\n"));
        } else if self.tests.is_empty() && exit_code.is_some_and(|c| c != 0) {
            errors.push(format!(
                "go test exited with code {} before any test ran",
                exit_code.unwrap_or(-1)
            ));
        }
        errors.append(&mut self.package_errors);
        TestResult {
            framework: "go".into(),
            summary: self.summary,
            tests: self.tests,
            failures: self.failures,
            exit_code,
            error: (!errors.is_empty()).then(|| errors.join("\n")),
        }
    }
}
