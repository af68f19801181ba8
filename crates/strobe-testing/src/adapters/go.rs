//! Go: `go test -json ./...`, whose events (test2json) stream as each test
//! starts (`run`), prints (`output`) and ends (`pass`, `fail`, `skip`), per
//! package, with packages interleaved.
//!
//! A failure's file:line and message come from its own output: the
//! `    file_test.go:12: message` lines `t.Error`/`t.Fatal` print (the last
//! of them: `t.Log` lines look the same and usually come first), or, for a
//! panic or a timeout, the goroutine dump's innermost frame in the project's
//! code. A test binary that dies (a signal, `os.Exit`, a crash) ends its
//! package without ending its running tests: those failed, "did not
//! finish". Build failures (`FAIL pkg [build failed]` and the compiler's
//! lines on stderr; `build-output`/`build-fail` events since Go 1.24) are
//! the result's error.
//!
//! Levels go by directory, the usual Go layout: packages under a directory
//! named `integration` (or `e2e`) anywhere in the module are that level's,
//! every other package with tests is a unit package. A project without such
//! directories gets `-run` name patterns instead: `Integration` and
//! `E2E|E2e` in the test's name; its unit level is the whole module.

use crate::adapter::{Ecosystem, OutputParser, Stream, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::result::{Progress, Summary, TestCase, TestFailure, TestResult, TestStatus};
use crate::walk::{self, Cancel, WalkError};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Most trace patterns suggested per failure.
const MAX_SUGGESTIONS: usize = 5;
/// Most lines of build errors kept.
const MAX_BUILD_ERROR_LINES: usize = 60;
/// Most output lines kept per test (a goroutine dump can be long).
const MAX_TEST_LINES: usize = 2_000;
/// Directory names that hold integration tests.
const INTEGRATION_DIRS: [&str; 3] = ["integration", "integration_test", "integrationtest"];
/// Directory names that hold end-to-end tests.
const E2E_DIRS: [&str; 3] = ["e2e", "e2e_test", "e2etest"];

/// The `go test` adapter.
pub struct GoAdapter;

impl GoAdapter {
    fn command(project_root: &Path, args: &[&str]) -> TestCommand {
        let mut env = BTreeMap::new();
        // go needs a writable build cache, which it finds through GOCACHE,
        // XDG_CACHE_HOME or HOME; a daemon started with none of them gets
        // one in the temporary directory.
        let unset = |v: &str| std::env::var_os(v).is_none_or(|x| x.is_empty());
        if ["GOCACHE", "XDG_CACHE_HOME", "HOME"]
            .iter()
            .all(|v| unset(v))
        {
            env.insert(
                "GOCACHE".to_string(),
                std::env::temp_dir()
                    .join("strobe-go-build")
                    .display()
                    .to_string(),
            );
        }
        TestCommand {
            program: "go".into(),
            args: ["test", "-json"]
                .iter()
                .chain(args)
                .map(|a| a.to_string())
                .collect(),
            cwd: project_root.to_path_buf(),
            env,
        }
    }
}

/// Directories (relative to `root`) holding `_test.go` files, as `go test
/// ./...` would visit them: no `vendor`, `testdata`, hidden or `_` ones,
/// nor nested modules (nor symbolic links, which `./...` does not follow
/// either). Bounded like every walk ([`crate::walk`]).
fn test_dirs(root: &Path, cancel: &Cancel) -> Result<Vec<PathBuf>, WalkError> {
    let mut found: Vec<PathBuf> = Vec::new();
    walk::walk(
        root,
        "Go test files",
        walk::Limits::default(),
        cancel,
        |e| {
            if e.is_dir {
                return !(e.name.starts_with(['.', '_'])
                    || e.name == "vendor"
                    || e.name == "testdata"
                    || e.path(root).join("go.mod").exists());
            }
            if e.is_file && e.name.ends_with("_test.go") {
                let dir = e.rel.parent().map(Path::to_path_buf).unwrap_or_default();
                if !found.contains(&dir) {
                    found.push(dir);
                }
            }
            false
        },
    )?;
    found.sort();
    Ok(found)
}

/// The command for one level: by directory when the project has level
/// directories, else by test name pattern.
fn level_command(root: &Path, level: TestLevel, cancel: &Cancel) -> Result<TestCommand, WalkError> {
    let dirs = test_dirs(root, cancel)?;
    let by_dir = dirs.iter().any(|d| dir_level(d) != TestLevel::Unit);
    if !by_dir {
        return Ok(match level {
            TestLevel::Unit => GoAdapter::command(root, &["./..."]),
            TestLevel::Integration => GoAdapter::command(root, &["-run", "Integration", "./..."]),
            TestLevel::E2e => GoAdapter::command(root, &["-run", "E2E|E2e", "./..."]),
        });
    }
    let packages: Vec<String> = dirs
        .iter()
        .filter(|d| dir_level(d) == level)
        .map(|d| package_arg(d))
        .collect();
    if packages.is_empty() {
        // No package of that level: a run of no test (`-run '^$'`) says so.
        return Ok(GoAdapter::command(root, &["-run", "^$", "./..."]));
    }
    let args: Vec<&str> = packages.iter().map(String::as_str).collect();
    Ok(GoAdapter::command(root, &args))
}

/// The level a test directory belongs to by its path.
fn dir_level(rel: &Path) -> TestLevel {
    let names: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if names.iter().any(|n| E2E_DIRS.contains(&n.as_str())) {
        TestLevel::E2e
    } else if names.iter().any(|n| INTEGRATION_DIRS.contains(&n.as_str())) {
        TestLevel::Integration
    } else {
        TestLevel::Unit
    }
}

/// `./dir` as `go test` takes a package directory.
fn package_arg(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        ".".to_string()
    } else {
        format!("./{}", rel.display())
    }
}

/// A `-run` pattern matching exactly `name`, subtests included: `-run`
/// splits on `/`, one regular expression per level.
fn run_pattern(name: &str) -> String {
    name.split('/')
        .map(|part| {
            let mut quoted = String::from("^");
            for c in part.chars() {
                if r"\.+*?()|[]{}^$".contains(c) {
                    quoted.push('\\');
                }
                quoted.push(c);
            }
            quoted.push('$');
            quoted
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The package of a Go function name: `example.com/calc.(*T).Add` →
/// `example.com/calc`.
fn package_of(function: &str) -> Option<&str> {
    let name = function.split('[').next().unwrap_or(function);
    let start = name.rfind('/').map_or(0, |i| i + 1);
    let dot = name[start..].find('.')?;
    Some(&name[..start + dot])
}

/// Trace patterns for a failure's frames (Go symbol names, as Strobe's
/// tracer matches them): the functions, then their packages (`pkg.*`).
fn suggest(frames: &[String]) -> Vec<String> {
    let mut globs: Vec<String> = Vec::new();
    for f in frames {
        if let Some(p) = package_of(f) {
            let g = format!("{p}.*");
            if !globs.contains(&g) {
                globs.push(g);
            }
        }
    }
    globs.truncate(2);
    let mut out: Vec<String> = Vec::new();
    for f in frames {
        if out.len() + globs.len() >= MAX_SUGGESTIONS {
            break;
        }
        if !out.contains(f) {
            out.push(f.clone());
        }
    }
    out.extend(globs);
    out
}

impl TestAdapter for GoAdapter {
    fn stop_signal(&self) -> i32 {
        3 // SIGQUIT: the binary prints every goroutine, placing the hung test
    }

    fn name(&self) -> &'static str {
        "go"
    }

    fn title(&self) -> &'static str {

        "go test"

    }

    fn ecosystem(&self) -> Ecosystem {

        Ecosystem::Go

    }

    fn detect(&self, target: &TestTarget) -> u8 {
        let root = target.root.as_path();
        if root.join("go.mod").is_file() {
            90
        } else if root.join("go.work").is_file() {
            85
        } else {
            0
        }
    }

    /// A level whose packages cannot be listed within the walk's bounds
    /// falls back to the whole module here; [`TestAdapter::run_command`]
    /// reports it instead.
    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand {
        let root = target.root.as_path();
        match level {
            None => Self::command(root, &["./..."]),
            Some(level) => level_command(root, level, &target.cancel)
                .unwrap_or_else(|_| Self::command(root, &["./..."])),
        }
    }

    fn run_command(
        &self,
        target: &TestTarget,
        level: Option<TestLevel>,
        test: Option<&str>,
    ) -> Result<TestCommand, WalkError> {
        match (test, level) {
            (Some(t), _) => Ok(self.single_test_command(target, t)),
            (None, Some(level)) => level_command(&target.root, level, &target.cancel),
            (None, None) => Ok(self.suite_command(target, None)),
        }
    }

    /// `test` is the name `go test` reports: `TestName` or `TestName/sub`,
    /// run in every package that has it.
    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        Self::command(
            target.root.as_path(),
            &["-run", &run_pattern(test), "./..."],
        )
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(GoParser::default())
    }

    fn suggest_traces(&self, failure: &TestFailure) -> Vec<String> {
        suggest(&failure.frames)
    }

    fn builds_first(&self) -> bool {
        true
    }

    /// Refused: `go test` is the go tool, which builds the test binary
    /// without debug info and runs it as a child that the Frida session
    /// does not follow (Go's runtime starts children with a raw clone, not
    /// libc's fork), and Go symbols are not resolved yet. Tracing `go`
    /// itself would hook the build tool, which is worse than saying so.
    fn test_program(
        &self,
        _target: &TestTarget,
        _level: Option<TestLevel>,
        _test: Option<&str>,
    ) -> Result<TestCommand, String> {
        Err("instrumented reruns of Go tests are not supported yet: `go test` builds the test binary \
             without debug info and runs it as a child process the Frida session does not follow, and \
             Strobe does not resolve Go symbols yet. Run the test without tracePatterns/watches: the \
             result has every failure with file:line, and a hung test gets stack-sampled stuck \
             detection and Go's goroutine dump."
            .to_string())
    }
}

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
