//! debug_test with cargo-nextest through MCP: tests/fixtures/nextest_project
//! (the cargo fixture plus `.config/nextest.toml` and a deadlock-on-request
//! test), copied to a temporary directory and built there. Without
//! cargo-nextest installed the same project goes to the cargo adapter; the
//! build (crates/strobe-cli/build.rs) decides which of the two is tested.

use crate::support::Env;
use crate::{copy_fixture, run};
use serde_json::json;

const FILES: [&str; 4] = [
    "Cargo.toml",
    ".config/nextest.toml",
    "src/lib.rs",
    "tests/api.rs",
];

/// A machine with cargo-nextest cannot show the fallback, nor one without
/// it the nextest run: one of the two tests is always ignored, saying why.
#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    strobe_cargo_nextest,
    ignore = "checks the fallback to cargo for machines without cargo-nextest: it was installed when the tests were built"
)]
async fn without_cargo_nextest_the_project_runs_under_cargo() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("nextest_project", &FILES, work.path());
    let r = run(&c, json!({"action": "run", "projectRoot": project})).await;
    assert_eq!(r["framework"], "cargo", "the fallback: {r}");
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cargo_nextest),
    ignore = "needs cargo-nextest (cargo install cargo-nextest --locked): not found when the tests were built"
)]
async fn nextest_results_are_structured() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("nextest_project", &FILES, work.path());
    let root = project.to_str().unwrap();

    let r = run(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "nextest", "detected: {r}");
    assert_eq!(
        (
            &r["summary"]["passed"],
            &r["summary"]["failed"],
            &r["summary"]["skipped"]
        ),
        (&json!(3), &json!(1), &json!(1)),
        "{r}"
    );
    let failures = r["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{r}");
    let f = &failures[0];
    assert_eq!(f["name"], "tests::negative_numbers");
    assert_eq!(f["file"], "src/lib.rs");
    assert_eq!(f["line"], 21);
    assert!(
        f["message"].as_str().unwrap().contains("five minus two"),
        "{f}"
    );
    assert_eq!(
        f["rerun"],
        "cargo nextest run --no-fail-fast --no-tests=warn --message-format libtest-json \
         -E 'test(=tests::negative_numbers)'"
    );
    assert!(
        f["suggestedTraces"]
            .as_array()
            .unwrap()
            .contains(&json!("calc::tests::*")),
        "{f}"
    );

    let unit = run(
        &c,
        json!({"action": "run", "projectRoot": root, "level": "unit"}),
    )
    .await;
    assert_eq!(
        (
            &unit["summary"]["passed"],
            &unit["summary"]["failed"],
            &unit["summary"]["skipped"]
        ),
        (&json!(2), &json!(1), &json!(1)),
        "unit tests only: {unit}"
    );
    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": "tests::sums_numbers"}),
    )
    .await;
    assert_eq!(
        (&one["summary"]["passed"], &one["summary"]["failed"]),
        (&json!(1), &json!(0)),
        "{one}"
    );

    // Instrumented, the test binary itself runs under Frida, not nextest.
    let traced = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": "tests::negative_numbers",
               "tracePatterns": ["calc::sum_list"]}),
    )
    .await;
    assert_eq!(traced["framework"], "nextest", "{traced}");
    assert_eq!(traced["summary"]["failed"], 1, "{traced}");
    assert_eq!(traced["failures"][0]["line"], 21, "{traced}");
    let session = traced["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{traced}"));
    let enters = c.events(session, Some("function_enter")).await;
    assert!(
        enters.iter().any(|e| e["function"] == "calc::sum_list"),
        "{enters:?}"
    );
}
