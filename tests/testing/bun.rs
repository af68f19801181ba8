//! debug_test with Bun through MCP: tests/fixtures/bun_project, copied to a
//! temporary directory, run by the `bun` on PATH (no node_modules, nothing
//! installed).

use crate::support::{Client, Env};
use crate::{copy_fixture, run};
use serde_json::json;

/// Starts the suite with its hanging test spinning (STROBE_FIXTURE_HANG=1)
/// and waits until the failures named, which come before the hang, are
/// reported with their place while the run goes on (or once the stuck
/// detector ended it). The daemon stops the run when the test ends.
pub(crate) async fn failures_known_during_a_hang(c: &Client, root: &str, names: &[&str]) {
    let started = c
        .ok(
            "debug_test",
            json!({"action": "run", "projectRoot": root,
                   "env": {"STROBE_FIXTURE_HANG": "1"}}),
        )
        .await;
    let id = started["testRunId"].as_str().unwrap().to_string();
    for _ in 0..10 {
        let s = c
            .ok("debug_test", json!({"action": "status", "testRunId": id}))
            .await;
        let failures = if s["status"] == "completed" {
            &s["failures"]
        } else {
            &s["failuresSoFar"]
        };
        let located = |name: &&str| {
            failures
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f["name"] == *name && f["line"].is_u64()))
        };
        if names.iter().all(located) {
            return;
        }
        assert!(
            s["status"] != "completed",
            "ended without the failures: {s}"
        );
    }
    panic!("run {id}: the failures before the hang never showed");
}

#[tokio::test(flavor = "multi_thread")]
async fn bun_results_are_structured() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture(
        "bun_project",
        &["package.json", "calc.ts", "calc.test.ts"],
        work.path(),
    );
    let root = project.to_str().unwrap();

    let r = run(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "bun", "detected: {r}");
    assert_eq!(
        (
            &r["summary"]["passed"],
            &r["summary"]["failed"],
            &r["summary"]["skipped"]
        ),
        (&json!(2), &json!(2), &json!(1)),
        "{r}"
    );
    let failures = r["failures"].as_array().unwrap();
    let expect = failures
        .iter()
        .find(|f| f["name"] == "sumList > negative numbers")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(
        expect["file"],
        project.join("calc.test.ts").to_str().unwrap()
    );
    assert_eq!(expect["line"], 11);
    assert!(
        expect["message"].as_str().unwrap().contains("Expected: 7"),
        "{expect}"
    );
    assert_eq!(
        expect["rerun"],
        "bun test --test-name-pattern '^sumList negative numbers$'"
    );
    let thrown = failures
        .iter()
        .find(|f| f["name"] == "parse error")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(thrown["file"], project.join("calc.ts").to_str().unwrap());
    assert_eq!(thrown["line"], 13);

    // The rerun name runs that test alone.
    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": "sumList > negative numbers"}),
    )
    .await;
    assert_eq!(
        (&one["summary"]["passed"], &one["summary"]["failed"]),
        (&json!(0), &json!(1)),
        "{one}"
    );
    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": "sumList > sums numbers"}),
    )
    .await;
    assert_eq!(
        (&one["summary"]["passed"], &one["summary"]["failed"]),
        (&json!(1), &json!(0)),
        "{one}"
    );

    // The last test spins forever: the failures before it are known.
    failures_known_during_a_hang(&c, root, &["sumList > negative numbers", "parse error"]).await;
}
