//! Strobe's own scenarios as a test suite: every file in
//! `<root>/.strobe/scenarios/*.json` is a test. `strobe scenarios` (the
//! daemon's own executable) launches each file's program as its `launch`
//! says, runs its steps through `debug_test_scenario`, stops it (keeping a
//! failed one's data) and prints one line per scenario, which this parser
//! reads:
//!
//! ```text
//! SCENARIO START name
//! SCENARIO RUNNING name 3s        (once a second while it runs)
//! SCENARIO PASS name 812.3
//! SCENARIO FAIL name 1530.9 .strobe/scenarios/name.json step 5/7: expected …; actual …
//! ```

use crate::adapter::{Ecosystem, OutputParser, Stream, TestAdapter, TestCommand, TestLevel, TestTarget};
use crate::result::{Progress, Summary, TestCase, TestFailure, TestResult, TestStatus};
use std::collections::BTreeMap;

/// Where a project keeps its scenario files.
pub const SCENARIO_DIR: &str = ".strobe/scenarios";

/// The scenario adapter.
pub struct ScenarioAdapter;

impl ScenarioAdapter {
    fn command(target: &TestTarget, only: Option<&str>) -> TestCommand {
        // The daemon runs this: its own executable is `strobe`.
        let exe = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "strobe".into());
        let mut args = vec![
            "scenarios".to_string(),
            "--project-root".to_string(),
            target.root.display().to_string(),
        ];
        if let Some(name) = only {
            args.extend(["--only".to_string(), name.to_string()]);
        }
        TestCommand {
            program: exe,
            args,
            cwd: target.root.clone(),
            env: BTreeMap::new(),
        }
    }
}

impl TestAdapter for ScenarioAdapter {
    fn name(&self) -> &'static str {
        "scenario"
    }
    fn title(&self) -> &'static str {
        "Strobe scenarios"
    }
    fn ecosystem(&self) -> Ecosystem {
        Ecosystem::Any
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        // Low: a project with scenarios usually has its own tests too,
        // which a run without `framework` should find first.
        let dir = target.root.join(SCENARIO_DIR);
        let any = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "json"));
        if any { 15 } else { 0 }
    }

    fn suite_command(&self, target: &TestTarget, _level: Option<TestLevel>) -> TestCommand {
        Self::command(target, None)
    }

    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        Self::command(target, Some(test))
    }

    fn parser(&self) -> Box<dyn OutputParser> {
        Box::new(ScenarioParser::default())
    }

    fn suggest_traces(&self, _failure: &TestFailure) -> Vec<String> {
        Vec::new()
    }
}

/// Reads `strobe scenarios`' lines.
#[derive(Default)]
struct ScenarioParser {
    tests: Vec<TestCase>,
    failures: Vec<TestFailure>,
    running: Vec<String>,
    /// Other lines (the runner's own errors), for a run that reports none.
    other: Vec<String>,
}

impl OutputParser for ScenarioParser {
    fn line(&mut self, _stream: Stream, line: &str) {
        let Some(rest) = line.strip_prefix("SCENARIO ") else {
            if self.other.len() < 50 && !line.trim().is_empty() {
                self.other.push(line.to_string());
            }
            return;
        };
        let mut words = rest.splitn(4, ' ');
        let (kind, name) = (words.next().unwrap_or(""), words.next().unwrap_or("").to_string());
        match kind {
            "START" => self.running.push(name),
            "PASS" | "FAIL" => {
                self.running.retain(|r| *r != name);
                let ms = words.next().and_then(|m| m.parse().ok());
                let passed = kind == "PASS";
                self.tests.push(TestCase {
                    name: name.clone(),
                    status: if passed { TestStatus::Passed } else { TestStatus::Failed },
                    duration_ms: ms,
                    group: None,
                    output: None,
                });
                if !passed {
                    let detail = words.next().unwrap_or("").to_string();
                    let mut f = TestFailure::new(&name);
                    // "<file> <message>": the file is the scenario's.
                    match detail.split_once(' ') {
                        Some((file, message)) if file.ends_with(".json") => {
                            f.file = Some(file.to_string());
                            f.message = message.to_string();
                        }
                        _ => f.message = detail.clone(),
                    }
                    f.output = line.to_string();
                    f.rerun = Some(format!("debug_test {{framework: \"scenario\", test: \"{name}\"}}"));
                    self.failures.push(f);
                }
            }
            _ => {}
        }
    }

    fn progress(&self) -> Progress {
        Progress {
            summary: summary(&self.tests),
            current_group: None,
            running: self.running.clone(),
            failures: self.failures.clone(),
        }
    }

    fn finish(self: Box<Self>, exit_code: Option<i32>) -> TestResult {
        let error = (self.tests.is_empty() && exit_code != Some(0)).then(|| {
            if self.other.is_empty() {
                "strobe scenarios printed no result".to_string()
            } else {
                self.other.join("\n")
            }
        });
        TestResult {
            framework: "scenario".into(),
            summary: summary(&self.tests),
            tests: self.tests,
            failures: self.failures,
            exit_code,
            error,
        }
    }
}

fn summary(tests: &[TestCase]) -> Summary {
    let mut s = Summary::default();
    for t in tests {
        match t.status {
            TestStatus::Passed => s.passed += 1,
            TestStatus::Failed => s.failed += 1,
            TestStatus::Skipped => s.skipped += 1,
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_lines_become_tests_and_failures() {
        let mut p: Box<dyn OutputParser> = Box::new(ScenarioParser::default());
        p.line(Stream::Stdout, "SCENARIO START a-note");
        assert_eq!(p.running(), ["a-note"]);
        p.line(Stream::Stdout, "SCENARIO RUNNING a-note 1s");
        p.line(Stream::Stdout, "SCENARIO PASS a-note 812.5");
        p.line(Stream::Stdout, "SCENARIO START zero");
        p.line(
            Stream::Stdout,
            "SCENARIO FAIL zero 1530.0 .strobe/scenarios/zero.json step 5/7: expected silence; actual rms 0.2",
        );
        let r = p.finish(Some(1));
        assert_eq!((r.summary.passed, r.summary.failed), (1, 1));
        assert_eq!(r.tests[0].duration_ms, Some(812.5));
        let f = &r.failures[0];
        assert_eq!(f.name, "zero");
        assert_eq!(f.file.as_deref(), Some(".strobe/scenarios/zero.json"));
        assert!(f.message.starts_with("step 5/7: expected silence"), "{}", f.message);
        assert!(r.error.is_none());
    }

    #[test]
    fn a_run_that_reports_nothing_says_what_it_printed() {
        let mut p: Box<dyn OutputParser> = Box::new(ScenarioParser::default());
        p.line(Stream::Stderr, "strobe scenarios: no scenario files in /p/.strobe/scenarios");
        let r = p.finish(Some(2));
        assert!(r.error.unwrap().contains("no scenario files"));
    }
}
