//! url-join's own Mocha suite, from its npm tarball (pinned), through
//! debug_test, with the counts Mocha itself reports for the project's test
//! script. Chosen for shipping its tests in the tarball, running them with
//! Mocha and being widely used; its script (`mocha --require should`)
//! passes Mocha an option the suite cannot run without.

use crate::cache::{self, step};
use crate::support::Env;
use crate::{counts, fixture_dir, run_tests};
use serde_json::json;
use std::path::PathBuf;
use std::process::Command;

/// The pinned release.
const VERSION: &str = "4.0.1";

/// The unpacked package in the cache, with its test dependencies (pinned
/// by tests/fixtures/real_node's lock) in its `node_modules`.
fn package() -> PathBuf {
    let dir = cache::cached(&format!("url-join-{VERSION}"), |into| {
        step(
            &format!("npm pack url-join@{VERSION}"),
            "npm",
            Command::new("npm")
                .args(["pack", "--silent", &format!("url-join@{VERSION}")])
                .arg("--pack-destination")
                .arg(into),
        );
        let archive = cache::only_file(into, ".tgz");
        cache::untar(&archive, into);
        std::fs::remove_file(archive).unwrap();
        let deps = into.join("deps");
        std::fs::create_dir_all(&deps).unwrap();
        for f in ["package.json", "package-lock.json"] {
            std::fs::copy(fixture_dir("real_node").join(f), deps.join(f)).unwrap();
        }
        step(
            "npm ci (url-join's test dependencies)",
            "npm",
            Command::new("npm")
                .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
                .args(["--loglevel=error"])
                .current_dir(&deps),
        );
        std::fs::rename(deps.join("node_modules"), into.join("package/node_modules")).unwrap();
        std::fs::remove_dir_all(deps).unwrap();
    });
    dir.join("package")
}

/// A count from Mocha's spec reporter (`  20 passing (7ms)`), 0 if absent.
fn mocha_count(text: &str, word: &str) -> u64 {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let n = w.next()?.parse::<u64>().ok()?;
            (w.next()? == word).then_some(n)
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn url_join_mocha_counts_equal_mochas_own() {
    let work = tempfile::tempdir().unwrap();
    cache::copy_tree(&package(), work.path());
    let root = work.path().join("package");

    // The project's test script as npm would run it.
    let native = Command::new("sh")
        .args(["-c", "PATH=node_modules/.bin:$PATH; mocha --require should"])
        .current_dir(&root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&native.stdout);
    let own = (
        mocha_count(&text, "passing"),
        mocha_count(&text, "failing"),
        mocha_count(&text, "pending"),
    );
    assert!(own.0 >= 20, "Mocha's own run: {text}");

    let env = Env::new();
    let c = env.client().await;
    let r = run_tests(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "mocha", "{r}");
    assert_eq!(counts(&r), own, "Mocha said:\n{text}\nStrobe: {r}");
}
