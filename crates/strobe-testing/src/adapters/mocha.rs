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
//!
//! Many projects give Mocha its options in `package.json`'s `test` script
//! instead of a config file (`mocha --recursive`, `mocha --require should`,
//! `mocha 'tests/**/*.js'`): those are taken from the script, so the run
//! covers what the project's own does (its reporter and watch options
//! left out; a single test also leaves out its name filters).

use super::js::{self, JsParser};
use crate::adapter::{Ecosystem, OutputParser, TestAdapter, TestCommand, TestLevel, TestTarget};
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

/// Mocha's options that take a value, given as the next word unless
/// written `--option=value`.
const VALUE_OPTIONS: [&str; 30] = [
    "--require",
    "-r",
    "--ui",
    "-u",
    "--timeout",
    "-t",
    "--slow",
    "-s",
    "--grep",
    "-g",
    "--fgrep",
    "-f",
    "--reporter",
    "-R",
    "--reporter-option",
    "--reporter-options",
    "-O",
    "--ignore",
    "--exclude",
    "--extension",
    "--file",
    "--config",
    "--package",
    "--spec",
    "--jobs",
    "-j",
    "--retries",
    "--node-option",
    "--watch-files",
    "--watch-ignore",
];

/// Options Strobe's command replaces (its reporter) or that would keep the
/// run from ending (watch mode).
const DROPPED: [&str; 9] = [
    "--reporter",
    "-R",
    "--reporter-option",
    "--reporter-options",
    "-O",
    "--watch",
    "-w",
    "--watch-files",
    "--watch-ignore",
];

/// Name filters, left out when Strobe runs one test by its own.
const FILTERS: [&str; 6] = ["--grep", "-g", "--fgrep", "-f", "--invert", "-i"];

/// What `package.json`'s `test` script gives Mocha: its options (each with
/// its value) and its spec files or globs. Empty when the script does not
/// run `mocha`; only the first `mocha` of the script counts, up to the
/// end of that command.
#[derive(Debug, Default, PartialEq, Eq)]
struct ScriptArgs {
    options: Vec<Vec<String>>,
    specs: Vec<String>,
}

impl ScriptArgs {
    fn of(root: &std::path::Path) -> ScriptArgs {
        js::package_json(root)
            .and_then(|p| p["scripts"]["test"].as_str().map(ScriptArgs::parse))
            .unwrap_or_default()
    }

    fn parse(script: &str) -> ScriptArgs {
        let mut out = ScriptArgs::default();
        let words: Vec<String> = script.split_whitespace().map(unquote).collect();
        let Some(start) = words
            .iter()
            .position(|w| w.rsplit('/').next() == Some("mocha"))
        else {
            return out;
        };
        let mut rest = words[start + 1..]
            .iter()
            .take_while(|w| !["&&", "||", ";", "|", ">", "2>", "&"].contains(&w.as_str()))
            .cloned();
        while let Some(w) = rest.next() {
            if !w.starts_with('-') {
                out.specs.push(w);
                continue;
            }
            let name = w.split('=').next().unwrap_or(&w).to_string();
            let mut option = vec![w.clone()];
            if !w.contains('=') && VALUE_OPTIONS.contains(&name.as_str()) {
                option.extend(rest.next());
            }
            if let Some(spec) = w.strip_prefix("--spec=") {
                out.specs.push(spec.to_string());
            } else if name == "--spec" {
                out.specs.extend(option.into_iter().skip(1));
            } else if !DROPPED.contains(&name.as_str()) {
                out.options.push(option);
            }
        }
        out
    }

    /// The options, flattened; name filters left out with `filters: false`.
    fn options(&self, filters: bool) -> Vec<String> {
        self.options
            .iter()
            .filter(|o| filters || !FILTERS.contains(&o[0].split('=').next().unwrap_or("")))
            .flatten()
            .cloned()
            .collect()
    }
}

/// A script word without the shell quotes around it.
fn unquote(word: &str) -> String {
    let w = word.trim_matches(|c| c == '\'' || c == '"');
    w.to_string()
}

impl TestAdapter for MochaAdapter {
    fn name(&self) -> &'static str {
        "mocha"
    }
    fn title(&self) -> &'static str {
        "Mocha"
    }
    fn ecosystem(&self) -> Ecosystem {
        Ecosystem::JavaScript
    }

    fn detect(&self, target: &TestTarget) -> u8 {
        js::detect(&target.root, "mocha", &[".mocharc."], 90)
    }

    fn suite_command(&self, target: &TestTarget, level: Option<TestLevel>) -> TestCommand {
        let script = ScriptArgs::of(&target.root);
        let whole = || {
            let mut args = script.options(true);
            args.extend(script.specs.iter().cloned());
            args
        };
        let Some(level) = level else {
            return Self::command(target, whole());
        };
        let dirs = js::level_dirs(&target.root, level);
        if dirs.is_empty() {
            return Self::command(target, whole());
        }
        let mut args = script.options(true);
        args.push("--recursive".to_string());
        for other in js::other_level_dirs(&target.root, level) {
            args.extend(["--ignore".to_string(), format!("{other}/**")]);
        }
        args.extend(dirs);
        Self::command(target, args)
    }

    fn single_test_command(&self, target: &TestTarget, test: &str) -> TestCommand {
        let (file, titles) = js::split_name(&target.root, test, SEPARATOR);
        let mut args = ScriptArgs::of(&target.root).options(false);
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

    fn suggest_traces(&self, failure: &TestFailure) -> Vec<String> {
        // The parser names the project files the failure's error passed
        // through (`@file:` patterns).
        failure.suggested_traces.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_test_scripts_options_and_specs_are_kept() {
        // url-join 4.0.1: its tests need `should` loaded first.
        let s = ScriptArgs::parse("mocha --require should");
        assert_eq!(s.options(true), strs(&["--require", "should"]));
        assert!(s.specs.is_empty());
        // node-cron 3.0.3, under a coverage tool whose own options stay out.
        let s = ScriptArgs::parse("nyc --reporter=html --reporter=text mocha --recursive");
        assert_eq!(s.options(true), strs(&["--recursive"]));
        // Quoted globs, spec options, values after '=', the end of the
        // command, and the options Strobe replaces.
        let s = ScriptArgs::parse(
            "./node_modules/.bin/mocha -R spec --timeout=5000 -g fast 'test/**/*.js' \
             --spec=extra.js -w && eslint .",
        );
        assert_eq!(s.options(true), strs(&["--timeout=5000", "-g", "fast"]));
        assert_eq!(s.options(false), strs(&["--timeout=5000"]));
        assert_eq!(s.specs, strs(&["test/**/*.js", "extra.js"]));
        assert_eq!(ScriptArgs::parse("jest --ci"), ScriptArgs::default());
    }

    #[test]
    fn commands_carry_the_scripts_arguments() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"scripts": {"test": "mocha --require should 'tests/*.js'"}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("tests/unit")).unwrap();
        let target = TestTarget::new(dir.path());
        let a = MochaAdapter;
        let suite = a.suite_command(&target, None).args;
        assert_eq!(suite[2..], strs(&["--require", "should", "tests/*.js"]));
        let unit = a.suite_command(&target, Some(TestLevel::Unit)).args;
        assert_eq!(
            unit[2..],
            strs(&["--require", "should", "--recursive", "tests/unit"])
        );
        let one = a.single_test_command(&target, "adds").args;
        assert_eq!(one[2..], strs(&["--require", "should", "--grep", "^adds$"]));
    }
}
