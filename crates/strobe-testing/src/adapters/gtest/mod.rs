//! Google Test: runs the test binary the caller named (`command`), or builds
//! a CMake project that uses Google Test and runs every Google Test
//! executable the build produced.
//!
//! Output: Google Test's console report, which streams per test and is
//! flushed after every event (`[ RUN      ] Suite.Name`, `file:line: Failure`
//! and the message, `[  FAILED  ] Suite.Name (N ms)`), so a failure is
//! known with its file:line as soon as its test ends, and the test running
//! now is known from its `[ RUN ]` line. Its JSON/XML reports are written
//! only when the program exits, too late for a run that hangs.
//!
//! Levels: Google Test has no tags, so a level is a name filter: the tests
//! whose full name (`Suite.Name`) contains `Unit`/`unit`,
//! `Integration`/`integration` or `E2E`/`E2e`/`e2e` (suites named like
//! `CalcUnitTest`, `StoreIntegrationTest`).
//!
//! Building (no `command`): `cmake -S . -B build/strobe
//! -DCMAKE_BUILD_TYPE=Debug` (Debug for `-g`: Strobe's tracer and stack
//! capture need DWARF), `cmake --build`, then every executable file under
//! `build/strobe` (outside `CMakeFiles/` and `_deps/`) that contains Google
//! Test, in path order. This finds test programs whether or not the project
//! registers them with CTest. Its own build directory keeps the project's
//! own `build/` configuration untouched.
//!
//! The helpers at the end (the named program, binary markers, trace
//! suggestions from the test's source) are shared with the Catch2 adapter.

use crate::adapter::{Ecosystem, OutputParser, Stream, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::result::{Progress, Summary, TestCase, TestFailure, TestResult, TestStatus};
use crate::walk::{self, Cancel, WalkError};
use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};

mod parser;
pub use parser::*;

/// Where the adapter builds a CMake project, relative to its root (the
/// build script names it).
pub const BUILD_DIR: &str = "build/strobe";

/// Strings every Google Test program contains: the `--gtest_list_tests`
/// flag in its help text (statically linked) or the registration function
/// it imports (linked against libgtest.so).
const GTEST_MARKERS: [&[u8]; 2] = [b"gtest_list_tests", b"MakeAndRegisterTestInfo"];

/// Configure, build, then run each Google Test executable with the
/// script's arguments (`"$@"`: the filter), so no argument is ever quoted
/// into the script. Exits with the build's status when it fails, else with
/// the last failing test program's. One line without single quotes, so the
/// rerun hint stays readable. (Paths are split on spaces: CMake target
/// names have none.)
const BUILD_AND_RUN: &str = r#"cmake -S . -B build/strobe -DCMAKE_BUILD_TYPE=Debug && cmake --build build/strobe -j "$(nproc)" || exit; n=0; rc=0; for t in $(find build/strobe -type f -perm -u+x ! -path "*/CMakeFiles/*" ! -path "*/_deps/*" ! -name "*.so" ! -name "*.so.*" | sort); do grep -qs -e gtest_list_tests -e MakeAndRegisterTestInfo "$t" || continue; n=$((n+1)); echo "strobe: running $t"; "$t" "$@" || rc=$?; done; [ $n -gt 0 ] || { echo "strobe: the build produced no Google Test executable under build/strobe; name the test binary with command" >&2; exit 1; }; exit $rc"#;

/// Most lines of a build failure kept.
const MAX_ERROR_LINES: usize = 60;
/// Lines kept from the end of the output before the first test, for an
/// error that does not say "error".
const TAIL_LINES: usize = 30;

/// The Google Test adapter.
pub struct GtestAdapter;

impl GtestAdapter {
    fn command(target: &TestTarget, filter: Option<String>) -> TestCommand {
        let env = BTreeMap::from([("GTEST_COLOR".to_string(), "no".to_string())]);
        let filter = filter.map(|f| format!("--gtest_filter={f}"));
        match named_program(target) {
            Some((program, mut args)) => {
                args.extend(filter);
                TestCommand {
                    program,
                    args,
                    cwd: target.root.clone(),
                    env,
                }
            }
            None => {
                debug_assert!(BUILD_AND_RUN.contains(BUILD_DIR));
                TestCommand {
                    program: "sh".into(),
                    args: ["-c", BUILD_AND_RUN, "strobe-gtest"]
                        .into_iter()
                        .map(String::from)
                        .chain(filter)
                        .collect(),
                    cwd: target.root.clone(),
                    env,
                }
            }
        }
    }
}

/// Whether the project's CMakeLists.txt, at the root or one directory
/// down (`tests/CMakeLists.txt`), mentions Google Test.
fn cmake_uses_gtest(root: &Path) -> bool {
    let mentions = |p: &Path| {
        std::fs::read_to_string(p)
            .map(|t| t.contains("gtest") || t.contains("GTest"))
            .unwrap_or(false)
    };
    if mentions(&root.join("CMakeLists.txt")) {
        return true;
    }
    if !root.join("CMakeLists.txt").exists() {
        return false;
    }
    std::fs::read_dir(root)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name() != "build")
                .any(|e| mentions(&e.path().join("CMakeLists.txt")))
        })
        .unwrap_or(false)
}

impl TestAdapter for GtestAdapter {
    fn name(&self) -> &'static str {
        "gtest"
    }
    fn title(&self) -> &'static str {
        "Google Test"
    }
    fn ecosystem(&self) -> Ecosystem {
        Ecosystem::Cpp
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        // A named program decides by what it is: another framework's
        // binary in a project whose CMake also mentions gtest is not ours.
        if let Some((program, _)) = named_program(target) {
            return match locate(&program, &target.root) {
                Some(p) if file_contains_any(&p, &GTEST_MARKERS) => 85,
                _ => 0,
            };
        }
        if cmake_uses_gtest(&target.root) {
            85
        } else {
            0
        }
    }

    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand {
        let filter = level.map(|l| {
            match l {
                TestLevel::Unit => "*Unit*:*unit*",
                TestLevel::Integration => "*Integration*:*integration*",
                TestLevel::E2e => "*E2E*:*E2e*:*e2e*",
            }
            .to_string()
        });
        Self::command(target, filter)
    }

    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        Self::command(target, Some(test.to_string()))
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(GtestParser::default())
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
        let command = match test {
            Some(t) => self.single_test_command(target, t),
            None => self.suite_command(target, level),
        };
        if named_program(target).is_some() {
            return Ok(command);
        }
        // The script's sh is not the test program: build, then pick the
        // executable, as the script would.
        let filter = command.args.get(3).cloned();
        let root = target.root.as_path();
        let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
        for step in [
            vec!["-S", ".", "-B", BUILD_DIR, "-DCMAKE_BUILD_TYPE=Debug"],
            vec!["--build", BUILD_DIR, "-j", &jobs.to_string()],
        ] {
            let out = std::process::Command::new("cmake")
                .args(&step)
                .current_dir(root)
                .output()
                .map_err(|e| format!("cannot run cmake: {e} (is it on the daemon's PATH?)"))?;
            if !out.status.success() {
                let mut parser = GtestParser::default();
                for (stream, text) in [(Stream::Stdout, &out.stdout), (Stream::Stderr, &out.stderr)]
                {
                    for l in String::from_utf8_lossy(text).lines() {
                        parser.line(stream, l);
                    }
                }
                let error = Box::new(parser).finish(out.status.code()).error;
                return Err(format!(
                    "`cmake {}` failed:\n{}",
                    step.join(" "),
                    error.unwrap_or_default()
                ));
            }
        }
        let executables =
            gtest_executables(&root.join(BUILD_DIR), &target.cancel).map_err(|e| e.to_string())?;
        let chosen: Vec<&PathBuf> = match test {
            Some(t) => executables
                .iter()
                .filter(|exe| lists_test(exe, root, t))
                .collect(),
            None => executables.iter().collect(),
        };
        match (chosen.as_slice(), test) {
            ([exe], _) => Ok(TestCommand {
                program: exe.display().to_string(),
                args: filter.into_iter().collect(),
                cwd: target.root.clone(),
                env: command.env,
            }),
            ([], Some(t)) => Err(format!(
                "no Google Test executable under {BUILD_DIR} has a test named {t:?} (as --gtest_list_tests names it)"
            )),
            ([], None) => Err(format!(
                "the build produced no Google Test executable under {BUILD_DIR}; name the test binary with 'command'"
            )),
            (many, _) => Err(format!(
                "an instrumented run traces one test program; these {} qualify: {}. Name one with 'command', or one test with 'test'",
                many.len(),
                many.iter()
                    .map(|e| e.strip_prefix(root).unwrap_or(e).display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    fn builds_first(&self) -> bool {
        // Without `command` the script builds first; with one, the binary
        // prints its first suite at once.
        true
    }
}

/// The Google Test executables under a build directory, as the build
/// script finds them: executable files outside `CMakeFiles/` and `_deps/`,
/// not shared libraries, containing Google Test; in path order.
fn gtest_executables(dir: &Path, cancel: &Cancel) -> Result<Vec<PathBuf>, WalkError> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = Vec::new();
    walk::walk(
        dir,
        "Google Test executables",
        walk::Limits::default(),
        cancel,
        |e| {
            if e.is_dir {
                return e.name != "CMakeFiles" && e.name != "_deps";
            }
            let path = e.path(dir);
            if e.is_file
                && !e.name.ends_with(".so")
                && !e.name.contains(".so.")
                && std::fs::metadata(&path).is_ok_and(|m| m.permissions().mode() & 0o100 != 0)
                && file_contains_any(&path, &GTEST_MARKERS)
            {
                found.push(path);
            }
            false
        },
    )?;
    found.sort();
    Ok(found)
}

/// Whether `exe --gtest_list_tests --gtest_filter=<test>` lists a test
/// (its tests are the indented lines under their suite).
fn lists_test(exe: &Path, root: &Path, test: &str) -> bool {
    std::process::Command::new(exe)
        .arg("--gtest_list_tests")
        .arg(format!("--gtest_filter={test}"))
        .current_dir(root)
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.starts_with("  ") && !l.trim().is_empty())
        })
        .unwrap_or(false)
}

// ---------------------------------------------------------------------------
// Shared with the Catch2 adapter.

/// The program the caller named in `command` and the arguments it came
/// with: the whole text when it is a file (relative to the project root,
/// so a path with spaces works), else its first word as the program and
/// the other words as arguments. A relative program that exists under the
/// root is made absolute (the run's working directory is the root, but a
/// relative program path would be looked up from the daemon's).
pub(crate) fn named_program(target: &TestTarget) -> Option<(String, Vec<String>)> {
    let command = target.command.as_deref()?.trim();
    if command.is_empty() {
        return None;
    }
    if target.root.join(command).is_file() {
        return Some((target.root.join(command).display().to_string(), Vec::new()));
    }
    let mut words = command.split_whitespace().map(String::from);
    let first = words.next()?;
    let program = if target.root.join(&first).is_file() {
        target.root.join(&first).display().to_string()
    } else {
        first
    };
    Some((program, words.collect()))
}

/// The file a program name means: a path (relative to the root), or a
/// name looked up on PATH.
pub(crate) fn locate(program: &str, root: &Path) -> Option<PathBuf> {
    let direct = root.join(program);
    if direct.is_file() {
        return Some(direct);
    }
    if program.contains('/') {
        return None;
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Whether the file's bytes contain any of `needles`: tells a test
/// framework's binary without running it (running an unknown program with
/// another framework's flags can run its whole suite instead).
pub(crate) fn file_contains_any(path: &Path, needles: &[&[u8]]) -> bool {
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let keep = needles.iter().map(|n| n.len()).max().unwrap_or(1) - 1;
    let mut chunk = vec![0u8; 1 << 20];
    let mut window: Vec<u8> = Vec::new();
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        };
        window.extend_from_slice(&chunk[..n]);
        if needles
            .iter()
            .any(|needle| window.windows(needle.len()).any(|w| w == *needle))
        {
            return true;
        }
        // Keep the end, where a needle may continue into the next chunk.
        let cut = window.len().saturating_sub(keep);
        window.drain(..cut);
    }
}

/// Most trace patterns suggested per failure.
const MAX_SUGGESTIONS: usize = 5;
/// Namespaces that are the test framework or the standard library, not
/// the code under test.
const FOREIGN_NAMESPACES: [&str; 5] = ["std", "testing", "Catch", "Approx", "boost"];
/// Macros that open a test's body, in Google Test and Catch2.
const TEST_MACROS: [&str; 8] = [
    "TEST(",
    "TEST_F(",
    "TEST_P(",
    "TYPED_TEST(",
    "TEST_CASE(",
    "TEST_CASE_METHOD(",
    "SCENARIO(",
    "TEMPLATE_TEST_CASE(",
];

/// Trace patterns for a C++ test failure, most specific first: the
/// qualified functions the failing test calls up to the failing line
/// (`calc::mean`) and their namespaces (`calc::*`), the implementation files
/// of the project headers the test file includes (`@file:calc.cpp`), the
/// failure's frames, then every function of the test's file.
pub(crate) fn cpp_trace_suggestions(failure: &TestFailure) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |p: String| {
        if !out.contains(&p) && out.len() < MAX_SUGGESTIONS {
            out.push(p);
        }
    };
    let source = failure
        .file
        .as_deref()
        .and_then(|f| std::fs::read_to_string(f).ok().map(|s| (f, s)));
    if let Some((file, text)) = &source {
        let lines: Vec<&str> = text.lines().collect();
        if let Some(line) = failure.line
            && (line as usize) <= lines.len()
        {
            let is_test = |l: &&str| TEST_MACROS.iter().any(|m| l.trim_start().starts_with(m));
            let mut end = line as usize;
            let start = lines[..end].iter().rposition(is_test).unwrap_or(end - 1);
            if start == end - 1 && is_test(&lines[start]) {
                // Placed at the test itself (Catch2's fatal signal, SIGINT
                // of a hung test): its whole body.
                end = lines[end..]
                    .iter()
                    .position(is_test)
                    .map_or(lines.len(), |i| end + i);
            }
            for call in qualified_calls(&lines[start..end].join("\n")) {
                let namespace = call.rsplit_once("::").map(|(ns, _)| format!("{ns}::*"));
                push(call);
                if let Some(ns) = namespace {
                    push(ns);
                }
            }
        }
        let dir = Path::new(file).parent().unwrap_or(Path::new("."));
        for header in quoted_includes(text) {
            if let Some(implementation) = implementation_of(&dir.join(&header)) {
                push(format!("@file:{implementation}"));
            }
        }
    }
    for frame in &failure.frames {
        push(frame.clone());
    }
    if let Some(name) = failure
        .file
        .as_deref()
        .and_then(|f| Path::new(f).file_name())
        .and_then(|n| n.to_str())
    {
        push(format!("@file:{name}"));
    }
    out
}

/// `ns::f(` calls (and `ns::f` passed as an argument) in C++ source, in
/// order, without the framework's and the standard library's.
fn qualified_calls(code: &str) -> Vec<String> {
    let bytes = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut calls: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !(bytes[i].is_ascii_alphabetic() || bytes[i] == b'_')
            || (i > 0 && (ident(bytes[i - 1]) || bytes[i - 1] == b':'))
        {
            i += 1;
            continue;
        }
        // A run of `a::b::c`.
        let start = i;
        loop {
            while i < bytes.len() && ident(bytes[i]) {
                i += 1;
            }
            if bytes[i..].starts_with(b"::")
                && bytes
                    .get(i + 2)
                    .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_')
            {
                i += 2;
            } else {
                break;
            }
        }
        let name = &code[start..i];
        // Called, or passed as a function (`std::thread t(ns::f, …)`).
        let called = code[i..].trim_start().starts_with(['(', ',', ')']);
        let foreign = FOREIGN_NAMESPACES
            .iter()
            .any(|ns| name.split("::").next() == Some(*ns));
        if called && name.contains("::") && !foreign && !calls.iter().any(|c| c == name) {
            calls.push(name.to_string());
        }
    }
    calls
}

/// The files of `#include "…"` lines (the project's own headers).
fn quoted_includes(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("include")?.trim_start();
            let inner = rest.strip_prefix('"')?;
            inner.split_once('"').map(|(h, _)| h.to_string())
        })
        .collect()
}

/// The source file next to a header that implements it (`calc.h` →
/// `calc.cpp`), by file name.
fn implementation_of(header: &Path) -> Option<String> {
    let stem = header.file_stem()?.to_str()?;
    let dir = header.parent()?;
    ["cpp", "cc", "cxx", "c"]
        .iter()
        .map(|ext| format!("{stem}.{ext}"))
        .find(|name| dir.join(name).is_file())
}
