//! Jest: `jest --ci` with Strobe's reporter (`reporters/jest.cjs`) beside
//! Jest's default one. Jest's built-in reporters, `--json` included, report
//! a test file only once all of it has run; the reporter API calls ours as
//! each test starts and ends (`onTestCaseStart`, `onTestCaseResult`), so a
//! failure is known with its file:line as soon as its test ends, and the
//! test that never ends is named in `running`. Parsing is shared with the
//! other JS runners ([`super::js`]).
//!
//! Names are `<file> › <describe…> › <test>` (Jest's own separator), the
//! file relative to the project: the rerun command gives Jest the file with
//! `--runTestsByPath` and the titles, joined by spaces as Jest joins them,
//! as an anchored `-t` pattern. Levels are directories (see
//! [`super::js::level_dirs`]), given to Jest as path patterns.

use super::js::{self, JsParser};
use crate::adapter::{Ecosystem, OutputParser, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::result::TestFailure;

/// Jest's separator between a test's describe blocks and title.
const SEPARATOR: &str = " \u{203A} ";

/// The `jest` adapter.
pub struct JestAdapter;

impl JestAdapter {
    fn command(target: &TestTarget, extra: Vec<String>) -> TestCommand {
        let mut args = vec![
            "--ci".to_string(),
            // Ours first: the dispatcher calls reporters in order, and the
            // first is called before Jest goes back to the test.
            format!("--reporters={}", js::reporter_path("jest.cjs")),
            "--reporters=default".to_string(),
            "--passWithNoTests".to_string(),
        ];
        args.extend(extra);
        js::command(&target.root, "jest", args)
    }
}

impl TestAdapter for JestAdapter {
    fn name(&self) -> &'static str {
        "jest"
    }
    fn title(&self) -> &'static str {
        "Jest"
    }
    fn ecosystem(&self) -> Ecosystem {
        Ecosystem::JavaScript
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        js::detect(&target.root, "jest", &["jest.config."], 92)
    }

    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand {
        // Jest's positional arguments are regular expressions over the test
        // files' paths; one per level directory.
        let dirs = level
            .map(|l| js::level_dirs(&target.root, l))
            .unwrap_or_default();
        let patterns = dirs
            .iter()
            .map(|d| format!("/{}/", js::regex_escape(d)))
            .collect();
        Self::command(target, patterns)
    }

    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        let (file, titles) = js::split_name(&target.root, test, SEPARATOR);
        let mut args = Vec::new();
        if let Some(f) = file {
            args.extend(["--runTestsByPath".to_string(), f]);
        }
        if !titles.is_empty() {
            args.extend(["-t".to_string(), js::full_name_pattern(&titles, " ")]);
        }
        Self::command(target, args)
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(JsParser::new("jest", SEPARATOR, false))
    }

    /// An instrumented run runs every test file in Jest's own process
    /// (`--runInBand`): one process under the tracer, its calls on one
    /// timeline, instead of a Frida injection into each worker.
    fn test_program(
        &self,
        target: &TestTarget,
        level: Option<TestLevel>,
        test: Option<&str>,
    ) -> Result<TestCommand, String> {
        Ok(js::with_flag(self, target, level, test, "--runInBand"))
    }

    fn suggest_traces(&self, failure: &TestFailure) -> Vec<String> {
        // The parser names the project files the failure's error passed
        // through (`@file:` patterns).
        failure.suggested_traces.clone()
    }
}
