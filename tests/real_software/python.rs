//! Real Python projects' own test suites, from their PyPI sdists (pinned),
//! through debug_test, with the counts their runner itself reports for the
//! same tree. Both are pure Python, widely used and ship their tests:
//! - tabulate runs pytest (its tox.ini) and skips some tests when optional
//!   packages are missing (numpy, pandas, wcwidth: not installed here), so
//!   passed and skipped both count;
//! - more-itertools runs unittest (its tox.ini and Makefile), with
//!   docstrings on many tests, doctests added by `load_tests`, and
//!   warnings printed while tests run.

use crate::cache::{self, copy_tree, step};
use crate::support::Env;
use crate::{counts, run_tests};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The unpacked sdist of `name==version` in the cache.
fn sdist(name: &str, version: &str) -> PathBuf {
    let dir = cache::cached(&format!("{name}-{version}"), |into| {
        step(
            &format!("pip download {name}=={version}"),
            "PyPI",
            Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(["--no-binary", name, "--no-deps"])
                .arg(format!("{name}=={version}"))
                .arg("-d")
                .arg(into),
        );
        let archive = cache::only_file(into, ".tar.gz");
        cache::untar(&archive, into);
        std::fs::remove_file(archive).unwrap();
    });
    dir.join(format!("{name}-{version}"))
}

/// A copy of the sdist, to run in.
fn project(name: &str, version: &str, work: &Path) -> PathBuf {
    copy_tree(&sdist(name, version), work);
    work.join(format!("{name}-{version}"))
}

/// (passed, failed, skipped) from pytest's closing line, `247 passed,
/// 37 skipped, 2 warnings, 12 subtests passed in 0.83s` (subtests are
/// not tests; errors count as failures).
fn pytest_counts(summary: &str) -> (u64, u64, u64) {
    let words: Vec<&str> = summary
        .split(|c: char| c.is_whitespace() || c == ',' || c == '=')
        .filter(|w| !w.is_empty())
        .collect();
    let mut c = (0, 0, 0);
    for pair in words.windows(2) {
        let Ok(n) = pair[0].parse::<u64>() else {
            continue;
        };
        match pair[1] {
            "passed" => c.0 += n,
            "failed" | "error" | "errors" => c.1 += n,
            "skipped" => c.2 += n,
            _ => {}
        }
    }
    c
}

#[tokio::test(flavor = "multi_thread")]
async fn tabulate_pytest_counts_equal_pytests_own() {
    let work = tempfile::tempdir().unwrap();
    let root = project("tabulate", "0.9.0", work.path());

    let native = Command::new("python3")
        .args(["-m", "pytest", "-p", "no:cacheprovider", "-q"])
        .current_dir(&root)
        .output()
        .expect("python3 -m pytest runs (./dev test puts a venv with pytest on PATH)");
    let text = String::from_utf8_lossy(&native.stdout);
    let summary = text.lines().last().unwrap_or_default();
    let own = pytest_counts(summary);
    assert!(own.0 > 200 && own.2 > 0, "pytest's own run: {text}");

    let env = Env::new();
    let c = env.client().await;
    let r = run_tests(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "pytest", "{r}");
    assert_eq!(counts(&r), own, "pytest said: {summary}\nStrobe: {r}");
}

/// (passed, failed, skipped) from unittest's closing lines, `Ran 817
/// tests in 1.926s` and `OK (skipped=1)` or `FAILED (failures=1,
/// errors=2, skipped=3, expected failures=1, unexpected successes=1)`.
fn unittest_counts(text: &str) -> (u64, u64, u64) {
    let ran: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("Ran ")?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no 'Ran N tests' in {text}"));
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let of = |key: &str| -> u64 {
        last.split(['(', ',', ')'])
            .filter_map(|part| part.trim().strip_prefix(key)?.parse::<u64>().ok())
            .sum()
    };
    let failed = of("failures=") + of("errors=") + of("unexpected successes=");
    let skipped = of("skipped=") + of("expected failures=");
    (ran - failed - skipped, failed, skipped)
}

#[tokio::test(flavor = "multi_thread")]
async fn more_itertools_unittest_counts_equal_unittests_own() {
    let work = tempfile::tempdir().unwrap();
    let root = project("more-itertools", "10.5.0", work.path());

    let native = Command::new("python3")
        .args(["-m", "unittest"])
        .current_dir(&root)
        .output()
        .expect("python3 -m unittest runs");
    let text = String::from_utf8_lossy(&native.stderr);
    let own = unittest_counts(&text);
    assert!(own.0 > 800, "unittest's own run: {text}");

    let env = Env::new();
    let c = env.client().await;
    let r = run_tests(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "unittest", "{r}");
    assert_eq!(counts(&r), own, "unittest said: {text}\nStrobe: {r}");
}
