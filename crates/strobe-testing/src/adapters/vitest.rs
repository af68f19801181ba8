//! Vitest: `vitest run` with Strobe's reporter (`reporters/vitest.mjs`)
//! beside Vitest's default one. Vitest's reporters get test results from
//! the workers at most every 100 ms, and its built-in ones name a failure's
//! file:line only in the summary at the end; a test that spins forever
//! keeps both from ever arriving. So the reporter also adds a setup file
//! (`reporters/vitest-setup.mjs`) that reports each test's start and end
//! from inside the worker, at once; the reporter's later result for the
//! same test id (source-mapped frames, duration, console output) replaces
//! it. Parsing is shared with the other JS runners ([`super::js`]).
//!
//! Names are `<file> > <describe…> > <test>` as Vitest prints them, the
//! file relative to the project: the rerun command gives Vitest the file as
//! a filter and the titles as an anchored `-t` pattern (Vitest matches it
//! against the titles joined by ` > `). Levels are directories (see
//! [`super::js::level_dirs`]), given to Vitest as file filters.
//!
//! Test files may `import { test, expect } from 'vitest'` even without a
//! local install: Vitest resolves its own package for the files it runs.

use super::js::{self, JsParser};
use crate::adapter::{Ecosystem, OutputParser, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::result::TestFailure;

/// Vitest's separator between a test's suites and title.
const SEPARATOR: &str = " > ";

/// The `vitest` adapter.
pub struct VitestAdapter;

impl VitestAdapter {
    fn command(target: &TestTarget, extra: Vec<String>) -> TestCommand {
        let mut args = vec![
            "run".to_string(),
            format!("--reporter={}", js::reporter_path("vitest.mjs")),
            "--reporter=default".to_string(),
            "--passWithNoTests".to_string(),
        ];
        args.extend(extra);
        js::command(&target.root, "vitest", args)
    }
}

impl TestAdapter for VitestAdapter {
    fn name(&self) -> &'static str {
        "vitest"
    }
    fn title(&self) -> &'static str {
        "Vitest"
    }
    fn ecosystem(&self) -> Ecosystem {
        Ecosystem::JavaScript
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        js::detect(
            &target.root,
            "vitest",
            &["vitest.config.", "vitest.workspace."],
            95,
        )
    }

    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand {
        // Vitest's positional arguments are substrings of test file paths;
        // the trailing slash keeps `test/unit` from matching `test/units`.
        let dirs = level
            .map(|l| js::level_dirs(&target.root, l))
            .unwrap_or_default();
        Self::command(target, dirs.into_iter().map(|d| format!("{d}/")).collect())
    }

    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        let (file, titles) = js::split_name(&target.root, test, SEPARATOR);
        let mut args = Vec::new();
        if let Some(f) = file {
            args.push(f);
        }
        if !titles.is_empty() {
            args.extend(["-t".to_string(), js::full_name_pattern(&titles, " > ")]);
        }
        Self::command(target, args)
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(JsParser::new("vitest", SEPARATOR, false))
    }

    /// An instrumented run runs the test files one at a time
    /// (`--no-file-parallelism`), in one worker at a time, each followed
    /// into under the tracer (Vite reads and transforms the project's
    /// files in Vitest's own process; sources.cjs serves it the probed
    /// copies).
    fn test_program(
        &self,
        target: &TestTarget,
        level: Option<TestLevel>,
        test: Option<&str>,
    ) -> Result<TestCommand, String> {
        Ok(js::with_flag(self, target, level, test, "--no-file-parallelism"))
    }

    fn suggest_traces(&self, failure: &TestFailure) -> Vec<String> {
        // The parser names the project files the failure's error passed
        // through (`@file:` patterns).
        failure.suggested_traces.clone()
    }
}
