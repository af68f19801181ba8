//! debug_test with Deno through MCP: tests/fixtures/deno_project, copied to
//! a temporary directory, run by the `deno` on PATH. The fixture imports
//! nothing remote, so nothing is downloaded.

use crate::support::Env;
use crate::{copy_fixture, run};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn deno_results_are_structured() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture(
        "deno_project",
        &["deno.json", "assert.ts", "calc.ts", "calc_test.ts"],
        work.path(),
    );
    let root = project.to_str().unwrap();

    let r = run(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "deno", "detected: {r}");
    assert_eq!(
        (
            &r["summary"]["passed"],
            &r["summary"]["failed"],
            &r["summary"]["skipped"]
        ),
        (&json!(2), &json!(3), &json!(1)),
        "{r}"
    );
    let failures = r["failures"].as_array().unwrap();
    let f = failures
        .iter()
        .find(|f| f["name"] == "negative numbers")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(f["file"], project.join("calc_test.ts").to_str().unwrap());
    assert_eq!(f["line"], 10);
    assert!(
        f["message"].as_str().unwrap().contains("five minus two"),
        "{f}"
    );
    assert_eq!(
        f["rerun"],
        "deno test --reporter=tap -P --filter '/^negative numbers$/'"
    );
    let steps = failures
        .iter()
        .find(|f| f["name"] == "steps")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(steps["line"], 23, "the failed step's place: {steps}");

    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": "sums numbers"}),
    )
    .await;
    assert_eq!(
        (&one["summary"]["passed"], &one["summary"]["failed"]),
        (&json!(1), &json!(0)),
        "{one}"
    );

    // The last test spins forever: the failures before it are known.
    crate::bun::failures_known_during_a_hang(
        &c,
        root,
        &["negative numbers", "parse error", "steps"],
    )
    .await;
}
