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

mod parser;
pub use parser::*;

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
