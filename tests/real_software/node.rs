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

/// Mocha's own counts (passing, failing, pending) for the project's test
/// script as npm would run it, and what it printed.
fn mochas_own(root: &std::path::Path) -> ((u64, u64, u64), String) {
    let native = Command::new("sh")
        .args(["-c", "PATH=node_modules/.bin:$PATH; mocha --require should"])
        .current_dir(root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&native.stdout).into_owned();
    let own = (
        mocha_count(&text, "passing"),
        mocha_count(&text, "failing"),
        mocha_count(&text, "pending"),
    );
    (own, text)
}

#[tokio::test(flavor = "multi_thread")]
async fn url_join_mocha_counts_equal_mochas_own() {
    let work = tempfile::tempdir().unwrap();
    cache::copy_tree(&package(), work.path());
    let root = work.path().join("package");

    // The project's test script as npm would run it.
    let (own, text) = mochas_own(&root);
    assert!(own.0 >= 20, "Mocha's own run: {text}");

    let env = Env::new();
    let c = env.client().await;
    let r = run_tests(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "mocha", "{r}");
    assert_eq!(counts(&r), own, "Mocha said:\n{text}\nStrobe: {r}");
}

/// The same suite run again with a trace pattern on a function of the
/// library (url-join's own code, which nobody here wrote): the counts are
/// still Mocha's own, and the library's calls are on the session's
/// timeline with their typed arguments and results.
#[tokio::test(flavor = "multi_thread")]
async fn url_join_traced_under_debug_test_keeps_mochas_counts() {
    let work = tempfile::tempdir().unwrap();
    cache::copy_tree(&package(), work.path());
    let root = work.path().join("package");
    let (own, text) = mochas_own(&root);

    let env = Env::new();
    let c = env.client().await;
    let r = run_tests(
        &c,
        // Mocha's and should's own code probed and traced too: the probes
        // written into a few hundred files of real third-party code must
        // leave the suite's results as they were.
        json!({"action": "run", "projectRoot": root,
               "tracePatterns": ["lib.url-join.normalize", "mocha.**", "should.**"]}),
    )
    .await;
    assert_eq!(counts(&r), own, "Mocha said:\n{text}\nStrobe: {r}");
    let session = r["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("an instrumented run names its session: {r}"))
        .to_string();
    let enters = c
        .calls_of(&session, "function_enter", "lib.url-join.normalize")
        .await;
    let exits = c
        .calls_of(&session, "function_exit", "lib.url-join.normalize")
        .await;
    assert!(
        enters.len() >= own.0 as usize,
        "one call or more per test: {}",
        enters.len()
    );
    assert_eq!(exits.len(), enters.len());
    assert_eq!(
        enters[0]["arguments"][0]["name"], "strArray",
        "{:?}",
        enters[0]
    );
    assert_eq!(
        enters[0]["arguments"][0]["type"], "Array",
        "{:?}",
        enters[0]
    );
    assert!(
        exits.iter().any(|e| e["returnType"] == "string"
            && e["returnValue"]
                .as_str()
                .is_some_and(|s| s.starts_with("http"))),
        "{exits:?}"
    );
    // The tests that expect urljoin to throw (five `assert.throws`): those
    // exits say the call threw. The value is not known: what caught it is
    // Node's own `assert`, not code of the project (see the README).
    let threw = exits.iter().filter(|e| e["exception"].is_object()).count();
    assert!(threw >= 5, "{exits:?}");
    let page = c
        .ok(
            "debug_query",
            json!({"sessionId": session, "eventType": "function_exit", "aggregate": "function"}),
        )
        .await;
    let text = page.to_string();
    assert!(
        text.contains("mocha.lib.runner.Runner.runTests"),
        "mocha's own calls: {text}"
    );
    assert!(text.contains("should."), "should's own calls: {text}");
}

/// Functions inside packages nobody here wrote, in `node_modules`, while a
/// script uses them: `ms` named before the launch (probed with the
/// project), `minimatch` named while the program runs and before it loads
/// it (probed then), `he` named after the program loaded it (probed then,
/// and its loaded script swapped for the probed copy). All pinned by
/// url-join's fixture lock.
#[tokio::test(flavor = "multi_thread")]
async fn functions_inside_node_modules_packages_are_traced_when_a_pattern_names_them() {
    let work = tempfile::tempdir().unwrap();
    cache::copy_tree(&package(), work.path());
    let root = work.path().join("package").canonicalize().unwrap();
    let go = work.path().join("go");
    std::fs::write(
        root.join("uses_packages.js"),
        format!(
            r#"const fs = require("fs");
const he = require("he");
console.log(require("ms")("2 days"));
const wait = setInterval(() => {{
  if (!fs.existsSync({go:?})) return;
  clearInterval(wait);
  const minimatch = require("minimatch");
  console.log(minimatch("lib/url-join.js", "lib/*.js"));
  console.log(he.encode("<b>"));
}}, 20);
"#
        ),
    )
    .unwrap();

    let env = Env::new();
    let c = env.client().await;
    c.ok("debug_trace", json!({"add": ["ms.parse"]})).await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": ["uses_packages.js"], "projectRoot": root, "cwd": root}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    assert_eq!(v["pendingPatternsApplied"], 1, "{v}");
    c.wait_stdout(&id).await;
    let added = c
        .ok(
            "debug_trace",
            json!({"sessionId": id, "add": ["minimatch.**"]}),
        )
        .await;
    assert!(added["hookedFunctions"].as_u64().unwrap() > 10, "{added}");
    let said = added["warnings"].to_string();
    assert!(said.contains("was probed now"), "{added}");
    let added = c
        .ok("debug_trace", json!({"sessionId": id, "add": ["he.**"]}))
        .await;
    assert!(added["hookedFunctions"].as_u64().unwrap() > 3, "{added}");
    assert!(
        !added["warnings"].to_string().contains("cannot be probed"),
        "{added}"
    );
    std::fs::write(&go, "").unwrap();
    let st = c.wait_ended(&id).await;
    let stderr = c.events(&id, Some("stderr")).await;
    assert_eq!(st["exitCode"], 0, "{st} {stderr:?}");
    assert_eq!(
        c.stdout_lines(&id).await,
        ["172800000", "true", "&#x3C;b&#x3E;"]
    );

    let parse = c.calls_of(&id, "function_enter", "ms.parse").await;
    assert_eq!(parse[0]["arguments"][0]["value"], "2 days", "{parse:?}");
    assert!(
        parse[0]["sourceFile"]
            .as_str()
            .unwrap()
            .ends_with("node_modules/ms/index.js"),
        "{parse:?}"
    );
    let exits = c.calls_of(&id, "function_exit", "ms.parse").await;
    assert_eq!(exits[0]["returnValue"], 172_800_000, "{exits:?}");
    let mm = c
        .calls_of(&id, "function_enter", "minimatch.minimatch.minimatch")
        .await;
    assert_eq!(
        (
            &mm[0]["arguments"][0]["value"],
            &mm[0]["arguments"][1]["value"]
        ),
        (&json!("lib/url-join.js"), &json!("lib/*.js")),
        "{mm:?}"
    );
    let exits = c
        .calls_of(&id, "function_exit", "minimatch.minimatch.minimatch")
        .await;
    assert_eq!(exits[0]["returnValue"], true, "{exits:?}");
    // `he` was loaded before its pattern: traced all the same.
    let encode = c.calls_of(&id, "function_enter", "he.he.encode").await;
    assert_eq!(encode[0]["arguments"][0]["value"], "<b>", "{encode:?}");
    // Its methods too, named under their class.
    let methods = c
        .calls_of(&id, "function_enter", "minimatch.minimatch.Minimatch.match")
        .await;
    assert!(!methods.is_empty());
}
