//! tabulate's own pytest suite, from its PyPI sdist (pinned), through
//! debug_test, with the counts pytest itself reports for the same tree.
//! Chosen for being pure Python, widely used, tested with pytest (its
//! tox.ini), shipping its tests in the sdist, and skipping some of them
//! when optional packages are missing (numpy, pandas, wcwidth: not
//! installed here), so passed and skipped both count.

use crate::cache::{self, copy_tree, step};
use crate::support::Env;
use crate::{counts, run_tests};
use serde_json::json;
use std::path::PathBuf;
use std::process::Command;

/// The pinned release.
const VERSION: &str = "0.9.0";

/// The unpacked sdist in the cache.
fn sdist() -> PathBuf {
    let dir = cache::cached(&format!("tabulate-{VERSION}"), |into| {
        step(
            &format!("pip download tabulate=={VERSION}"),
            "PyPI",
            Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(["--no-binary", "tabulate", "--no-deps"])
                .arg(format!("tabulate=={VERSION}"))
                .arg("-d")
                .arg(into),
        );
        let archive = cache::only_file(into, ".tar.gz");
        cache::untar(&archive, into);
        std::fs::remove_file(archive).unwrap();
    });
    dir.join(format!("tabulate-{VERSION}"))
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
    copy_tree(&sdist(), work.path());
    let root = work.path().join(format!("tabulate-{VERSION}"));

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
