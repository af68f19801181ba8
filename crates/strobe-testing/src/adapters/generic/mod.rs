//! The fallback: any command line (`command`), run as it is through `sh -c`
//! in the project root, its output read with heuristics for the line shapes
//! test tools commonly print.
//!
//! Test outcomes: TAP (`ok 1 - name`, `not ok 2 - name # SKIP`), Go's
//! `--- PASS: name`, CTest's `1/3 Test #1: name ....   Passed`, lines
//! starting `PASS`/`FAIL`/`SKIP` (nextest's `PASS [ 0.1s] (1/4) bin name`
//! and pytest's `FAILED id - message` included), `name ... ok|FAILED`,
//! `id PASSED`, and `✓`/`✗` marks. Starts: Go's `=== RUN` and CTest's
//! `Start N: name` (the tests running now). Counts: lines like `2 passed,
//! 1 failed`, which raise the counts where they are higher than the tests
//! seen (a quiet reporter names only its failures). Places: `file:line:`
//! (compilers, Go, pytest, shell checks), Python's `File "x.py", line N`,
//! JavaScript's `at fn (file:line:col)`, Rust's `panicked at file:line`,
//! Perl's `at file line N`; make's `*** [...] Error` lines.
//!
//! A place goes to the failing test it belongs to: output printed before a
//! test's result line is that test's (Go), and a failure with no place yet
//! takes the places printed after its line (TAP diagnostics, CTest output).
//! When no test line is recognised at all, the run is one test,
//! [`WHOLE_COMMAND`], passed or failed by the exit code (and any counts),
//! placed at the first error place seen.
//!
//! There is no general way to run one test of an unknown tool: the single
//! test command is the command line with the test's name appended, which
//! suits scripts taking test names as arguments; [`WHOLE_COMMAND`] reruns
//! the command as it is. Levels are the tool's business: they run the
//! command unchanged.

use super::bun::{js_frame, strip_ansi};
use crate::adapter::{Ecosystem, OutputParser, Stream, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::result::{Progress, Summary, TestCase, TestFailure, TestResult, TestStatus};
use std::collections::BTreeMap;

mod parser;
use parser::*;

/// The name of the one test a run is when no test line was recognised.
pub const WHOLE_COMMAND: &str = "(whole command)";

/// Most lines of output kept per failure, and of stderr for an error.
const MAX_LINES: usize = 200;
/// Most places remembered for a run that names no test.
const MAX_PLACES: usize = 20;
/// Most trace patterns suggested per failure.
const MAX_SUGGESTIONS: usize = 5;
/// Source files of native code, which Strobe's tracer can hook.
const NATIVE: [&str; 10] = ["c", "cc", "cpp", "cxx", "c++", "h", "hh", "hpp", "hxx", "m"];

/// The generic adapter.
pub struct GenericAdapter;

impl GenericAdapter {
    fn shell(target: &TestTarget, line: String) -> TestCommand {
        TestCommand {
            program: "sh".into(),
            args: vec!["-c".into(), line],
            cwd: target.root.clone(),
            env: BTreeMap::new(),
        }
    }
}

/// `text` quoted for `sh`.
fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

impl TestAdapter for GenericAdapter {
    fn name(&self) -> &'static str {
        "generic"
    }
    fn title(&self) -> &'static str {
        "generic"
    }
    fn ecosystem(&self) -> Ecosystem {
        Ecosystem::Any
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        // The last resort: any real adapter that knows the project wins.
        if target.command.is_some() { 1 } else { 0 }
    }

    fn suite_command(&self, target: &TestTarget, _level: Option<TestLevel>) -> TestCommand {
        let line = match &target.command {
            Some(c) => c.clone(),
            // Chosen by name without a command: say what it needs, as the
            // run's error (127, as for a command not found).
            None => "echo 'the generic adapter runs the command line given as `command`, \
                     and none was given' >&2; exit 127"
                .to_string(),
        };
        Self::shell(target, line)
    }

    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        match &target.command {
            Some(c) if test != WHOLE_COMMAND => {
                Self::shell(target, format!("{c} {}", sh_quote(test)))
            }
            _ => self.suite_command(target, None),
        }
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(GenericParser::default())
    }

    fn suggest_traces(&self, failure: &TestFailure) -> Vec<String> {
        // Only native code can be traced: its file, then its functions.
        let Some(file) = failure.file.as_deref() else {
            return Vec::new();
        };
        let native = file
            .rsplit_once('.')
            .is_some_and(|(_, ext)| NATIVE.contains(&ext));
        if !native {
            return Vec::new();
        }
        let base = file.rsplit('/').next().unwrap_or(file);
        let mut out = vec![format!("@file:{base}")];
        for f in &failure.frames {
            if out.len() < MAX_SUGGESTIONS && !out.contains(f) {
                out.push(f.clone());
            }
        }
        out
    }
}
