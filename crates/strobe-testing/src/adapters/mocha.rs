//! Mocha: `mocha` with Strobe's reporter (`reporters/mocha.cjs`) in place
//! of Mocha's (it takes only one). Mocha's `json-stream` comes close, one
//! line per passed or failed test, but has no line for a test's start: the
//! test that never returns could not be named. Ours reports starts, ends
//! and hook failures as they happen; Mocha runs one test at a time and
//! captures nothing, so the lines printed between a test's start and end
//! are that test's output. Parsing is shared with the other JS runners
//! ([`super::js`]).
//!
//! Names are `<file> > <describe…> > <test>`, the file relative to the
//! project: the rerun command gives Mocha the file and the titles, joined
//! by spaces as Mocha's full title joins them, as an anchored `--grep`.
//! Mocha adds a config file's `spec` to the files given on its command
//! line, so a level runs its directories (see [`super::js::level_dirs`])
//! and `--ignore`s the other levels' directories.

use super::js::{self, JsParser};
use crate::adapter::{OutputParser, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::result::TestFailure;

/// The separator Strobe puts between a Mocha test's file, suites and title.
const SEPARATOR: &str = " > ";

/// The `mocha` adapter.
pub struct MochaAdapter;

impl MochaAdapter {
    fn command(target: &TestTarget, extra: Vec<String>) -> TestCommand {
        let mut args = vec!["--reporter".to_string(), js::reporter_path("mocha.cjs")];
        args.extend(extra);
        js::command(&target.root, "mocha", args)
    }
}

impl TestAdapter for MochaAdapter {
    fn name(&self) -> &'static str {
        "mocha"
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        js::detect(&target.root, "mocha", &[".mocharc."], 90)
    }

    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand {
        let Some(level) = level else {
            return Self::command(target, Vec::new());
        };
        let dirs = js::level_dirs(&target.root, level);
        if dirs.is_empty() {
            return Self::command(target, Vec::new());
        }
        let mut args = vec!["--recursive".to_string()];
        for other in js::other_level_dirs(&target.root, level) {
            args.extend(["--ignore".to_string(), format!("{other}/**")]);
        }
        args.extend(dirs);
        Self::command(target, args)
    }

    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        let (file, titles) = js::split_name(&target.root, test, SEPARATOR);
        let mut args = Vec::new();
        if let Some(f) = file {
            args.push(f);
        }
        if !titles.is_empty() {
            args.extend(["--grep".to_string(), js::full_name_pattern(&titles, " ")]);
        }
        Self::command(target, args)
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(JsParser::new("mocha", SEPARATOR, true))
    }

    fn suggest_traces(&self, _failure: &TestFailure) -> Vec<String> {
        // Strobe's tracer hooks native functions; JavaScript functions run
        // in V8's JIT and are no patterns it can resolve.
        Vec::new()
    }
}
