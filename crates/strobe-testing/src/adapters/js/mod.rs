//! What the JavaScript adapters (Jest, Vitest, Mocha) share: Strobe's own
//! reporter for each runner, the parser of the lines those reporters print,
//! JS stack frames, detection from `package.json`, and the test directory
//! conventions that make levels.
//!
//! Why reporters of our own: the runners' built-in reporters either print a
//! test file's results only once the whole file has finished (Jest's
//! `default`/`verbose`/`json`, Vitest's `json`/`junit`/`tap`), or have no
//! event for a test's start (Mocha's `json-stream`), or name a failure's
//! file:line only in a summary at the very end (Vitest's `verbose`). A test
//! that spins forever then hides every failure of its file, and which test
//! is stuck. Each runner has a documented reporter API that is called as
//! each test starts and ends; `reporters/*.cjs|mjs` use it to print one
//! `@strobe {json}` line per event, written synchronously to fd 1 before
//! the next test can start. They are compiled into Strobe and written to a
//! cache directory ([`reporter_dir`]) when a command is built; the runner's
//! usual human reporter still runs beside them, for the log.
//!
//! The events (every field optional but `event`):
//! - `run {runner, root}`: the run started in `root` (the command's cwd).
//! - `file-start {file}` / `file-end {file}`: a test file started / ended.
//! - `start {id?, file, titles}`: a test started.
//! - `result {id?, file, titles, status, durationMs, errors, output}`: a
//!   test ended; `status` is passed, failed or skipped. With an `id`
//!   (Vitest), a later result for the same id replaces the earlier one.
//! - `file-error {file, title?, errors}`: a test file failed outside any
//!   test (it did not load, a `beforeAll` hook failed…).
//! - `end {errors}`: the run ended; `errors` are the run's own (unhandled
//!   errors, a crashed worker).
//!
//! An error is `{message?, stack?, frames?: [{file, line, column, fn}]}`.

use crate::adapter::{OutputParser, Stream, TestCommand, TestLevel};
use crate::result::{Progress, Summary, TestCase, TestFailure, TestResult, TestStatus};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

mod parser;
pub use parser::*;

/// What starts every event line.
pub const EVENT_MARKER: &str = "@strobe ";
/// Lines of other output kept to explain a run that reported nothing.
const TAIL_LINES: usize = 40;
/// Longest line kept of those.
const MAX_TAIL_LINE: usize = 500;
/// Longest test output kept per test.
const MAX_TEST_OUTPUT: usize = 64 * 1024;

/// The reporters compiled in: (file name, source). Jest and Mocha load
/// CommonJS by path; Vitest loads ES modules through its own module runner,
/// and its setup file must sit beside its reporter.
const REPORTERS: [(&str, &str); 4] = [
    ("jest.cjs", include_str!("../reporters/jest.cjs")),
    ("mocha.cjs", include_str!("../reporters/mocha.cjs")),
    ("vitest.mjs", include_str!("../reporters/vitest.mjs")),
    (
        "vitest-setup.mjs",
        include_str!("../reporters/vitest-setup.mjs"),
    ),
];

/// FNV-1a over the reporters' sources: a new Strobe with changed
/// reporters writes them to a new directory, so runs of an older daemon
/// keep theirs.
fn reporters_hash() -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, src) in REPORTERS {
        for b in name.bytes().chain(src.bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The directory holding Strobe's JS reporters, written there first when
/// missing or different: under `$XDG_CACHE_HOME` or `~/.cache`, else the
/// temporary directory.
pub fn reporter_dir() -> Result<PathBuf, String> {
    let name = format!("strobe/js-reporters/{:016x}", reporters_hash());
    let bases = [
        std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .map(|h| PathBuf::from(h).join(".cache")),
        Some(std::env::temp_dir()),
    ];
    let mut errors = Vec::new();
    for base in bases.into_iter().flatten() {
        let dir = base.join(&name);
        match install_reporters(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) => errors.push(format!("{}: {e}", dir.display())),
        }
    }
    Err(format!(
        "could not write Strobe's test reporters ({})",
        errors.join("; ")
    ))
}

fn install_reporters(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (file, src) in REPORTERS {
        let path = dir.join(file);
        if std::fs::read(&path).is_ok_and(|b| b == src.as_bytes()) {
            continue;
        }
        // Written aside and renamed, so a concurrent run never loads half
        // a file; the aside name is unique to this process and call.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{file}.{}.{n}.tmp", std::process::id()));
        std::fs::write(&tmp, src)?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(())
}

/// The path of one reporter file, or of where it would be: a command is
/// still built when the cache cannot be written (its run then reports the
/// runner's own error for the missing file).
pub fn reporter_path(file: &str) -> String {
    match reporter_dir() {
        Ok(dir) => dir.join(file).display().to_string(),
        Err(_) => std::env::temp_dir()
            .join("strobe/js-reporters")
            .join(file)
            .display()
            .to_string(),
    }
}

/// The runner's executable: the project's own `node_modules/.bin/<tool>`
/// when installed, else `<tool>` on PATH.
pub fn program(root: &Path, tool: &str) -> String {
    let local = root.join("node_modules/.bin").join(tool);
    if local.is_file() {
        local.display().to_string()
    } else {
        tool.to_string()
    }
}

/// A command in `root` with colours off (the log stays readable and the
/// parser sees plain text).
pub fn command(root: &Path, tool: &str, args: Vec<String>) -> TestCommand {
    let env = [("FORCE_COLOR", "0"), ("NO_COLOR", "1")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect::<BTreeMap<_, _>>();
    TestCommand {
        program: program(root, tool),
        args,
        cwd: root.to_path_buf(),
        env,
    }
}

/// `adapter`'s single-test or suite command (what `test_program` runs by
/// default) with `flag` added: how an instrumented run of a JavaScript
/// runner keeps its tests in fewer processes.
pub fn with_flag(
    adapter: &dyn crate::TestAdapter,
    target: &crate::TestTarget,
    level: Option<crate::TestLevel>,
    test: Option<&str>,
    flag: &str,
) -> TestCommand {
    let mut command = match test {
        Some(t) => adapter.single_test_command(target, t),
        None => adapter.suite_command(target, level),
    };
    command.args.push(flag.to_string());
    command
}

/// The project's `package.json`, parsed.
pub fn package_json(root: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(root.join("package.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Runners a script line invokes: words equal to a runner's name, or a
/// path ending in one (`node_modules/.bin/jest`).
fn runners_in(script: &str) -> Vec<&'static str> {
    // The JS runners a `test` script may invoke, for telling them apart:
    // every registered JavaScript adapter (Jest, Vitest, Mocha, and Bun's
    // and Deno's own `bun test` / `deno test`).
    let runners = crate::framework_names_of(crate::Ecosystem::JavaScript);
    let words = script.split(|c: char| c.is_whitespace() || "&|;()'\"`".contains(c));
    let mut found = Vec::new();
    for w in words {
        let last = w.rsplit('/').next().unwrap_or(w);
        for &r in &runners {
            if last == r && !found.contains(&r) {
                found.push(r);
            }
        }
    }
    found
}

/// How sure we are that the project at `root` runs its tests with `tool`:
/// `confidence` when a config file named `<config_prefix>*` exists, or
/// `package.json` names `tool` (a dependency, a script, or its own config
/// key); much less when `package.json`'s `test` script runs another JS
/// runner and not this one (a project migrating between runners keeps
/// both as dependencies, and a `bun test` project may have Jest's; its test
/// script says which one is in use).
pub fn detect(root: &Path, tool: &str, config_prefixes: &[&str], confidence: u8) -> u8 {
    let config_file = std::fs::read_dir(root).ok().is_some_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            config_prefixes.iter().any(|p| name.starts_with(p))
        })
    });
    let pkg = package_json(root);
    let in_package = pkg.as_ref().is_some_and(|p| {
        let dep = ["devDependencies", "dependencies", "peerDependencies"]
            .iter()
            .any(|k| p.get(k).and_then(|d| d.get(tool)).is_some());
        let script = p
            .get("scripts")
            .and_then(|s| s.as_object())
            .is_some_and(|s| {
                s.values()
                    .filter_map(|v| v.as_str())
                    .any(|v| runners_in(v).contains(&tool))
            });
        dep || script || p.get(tool).is_some()
    });
    if !config_file && !in_package {
        return 0;
    }
    let test_script = pkg
        .as_ref()
        .and_then(|p| p.get("scripts"))
        .and_then(|s| s.get("test"))
        .and_then(|t| t.as_str())
        .map(runners_in)
        .unwrap_or_default();
    if !test_script.is_empty() && !test_script.contains(&tool) {
        return 40;
    }
    confidence
}

/// The directories holding one level's tests, relative to `root`, that
/// exist: `tests/<level>`, `test/<level>`, `__tests__/<level>` (and a
/// top-level `e2e/` for end-to-end tests). JS runners have no notion of
/// levels; this directory convention is the common one.
pub fn level_dirs(root: &Path, level: TestLevel) -> Vec<String> {
    let name = match level {
        TestLevel::Unit => "unit",
        TestLevel::Integration => "integration",
        TestLevel::E2e => "e2e",
    };
    let mut candidates = vec![
        format!("tests/{name}"),
        format!("test/{name}"),
        format!("__tests__/{name}"),
    ];
    if level == TestLevel::E2e {
        candidates.push("e2e".to_string());
    }
    candidates
        .into_iter()
        .filter(|d| root.join(d).is_dir())
        .collect()
}

/// The level directories of every level but `level`, for runners that can
/// only exclude (Mocha adds its config's `spec` to the ones given).
pub fn other_level_dirs(root: &Path, level: TestLevel) -> Vec<String> {
    [TestLevel::Unit, TestLevel::Integration, TestLevel::E2e]
        .into_iter()
        .filter(|l| *l != level)
        .flat_map(|l| level_dirs(root, l))
        .collect()
}

/// A test name split back into its file (when its first part is one, as
/// the parser writes names) and its titles.
pub fn split_name(root: &Path, name: &str, separator: &str) -> (Option<String>, Vec<String>) {
    let parts: Vec<&str> = name.split(separator).collect();
    let first = parts[0];
    if root.join(first).is_file() {
        let titles = parts[1..].iter().map(|s| s.to_string()).collect();
        return (Some(first.to_string()), titles);
    }
    (None, parts.into_iter().map(str::to_string).collect())
}

/// `text` as a JavaScript regular expression matching it literally
/// (syntax characters only: Vitest and Jest may compile with the `u` flag,
/// where other escapes are errors).
pub fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\^$.*+?()[]{}|/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// An anchored regular expression for a test's full name: its titles
/// joined by `joiner`, as the runner's name filter sees them.
pub fn full_name_pattern(titles: &[String], joiner: &str) -> String {
    let escaped: Vec<String> = titles.iter().map(|t| regex_escape(t)).collect();
    format!("^{}$", escaped.join(joiner))
}

/// One frame of a JS stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The function, as V8 names it (empty for an anonymous one).
    pub function: String,
    /// The file: a path, a `file://` URL turned into a path, `node:…`.
    pub file: String,
    /// 1-based line.
    pub line: u32,
}

/// The frames of a V8 stack (`    at fn (file:line:col)`, `    at
/// file:line:col`, `async`/`new` prefixes), innermost first; other lines
/// (the message) are skipped.
pub fn parse_stack(stack: &str) -> Vec<Frame> {
    stack.lines().filter_map(parse_frame).collect()
}

fn parse_frame(line: &str) -> Option<Frame> {
    let rest = line.trim_start().strip_prefix("at ")?;
    let (function, place) = match rest.strip_suffix(')').and_then(|r| r.rsplit_once(" (")) {
        Some((f, p)) => (f.to_string(), p),
        None => (String::new(), rest),
    };
    let function = function
        .strip_prefix("async ")
        .unwrap_or(&function)
        .to_string();
    let mut parts = place.rsplitn(3, ':');
    let col = parts.next()?;
    let line = parts.next()?;
    let file = parts.next()?;
    col.parse::<u32>().ok()?;
    let line: u32 = line.parse().ok()?;
    let file = from_file_url(file);
    Some(Frame {
        function,
        file,
        line,
    })
}

/// Whether a frame is in the project's own code: not a dependency, not
/// Node's internals; relative paths are the project's (runners print them
/// relative to the working directory), absolute ones must be under `root`
/// when it is known.
fn own_frame(frame: &Frame, root: Option<&str>) -> bool {
    let f = frame.file.as_str();
    if f.contains("/node_modules/")
        || f.starts_with("node:")
        || f.starts_with("internal/")
        || f.starts_with('<')
        || f == "native"
    {
        return false;
    }
    match root {
        Some(root) if f.starts_with('/') => f.starts_with(&format!("{root}/")),
        _ => true,
    }
}

/// A `file://` URL (ES modules' frames) as a path, `%XX` escapes decoded;
/// anything else as it is.
fn from_file_url(file: &str) -> String {
    let Some(path) = file.strip_prefix("file://") else {
        return file.to_string();
    };
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%')
            .then(|| path.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A path relative to `root` when under it, else as it is.
fn relative(path: &str, root: Option<&str>) -> String {
    let path = from_file_url(path);
    let path = path.as_str();
    if let Some(root) = root
        && let Some(rel) = path.strip_prefix(root)
        && let Some(rel) = rel.strip_prefix('/')
    {
        return rel.to_string();
    }
    path.to_string()
}

/// The message of a stack: the lines before its first frame, with the
/// generic `Error: ` prefix (Jest's matcher errors) left out.
fn stack_message(stack: &str) -> String {
    let head: Vec<&str> = stack
        .lines()
        .take_while(|l| parse_frame(l).is_none())
        .collect();
    let text = head.join("\n");
    let text = text.trim_end();
    text.strip_prefix("Error: ").unwrap_or(text).to_string()
}
