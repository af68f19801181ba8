//! debug_test with Mocha through MCP: tests/fixtures/mocha_project, copied
//! to a temporary directory, run by the `mocha` on PATH (the project has
//! no node_modules).

use crate::jest::failures_stream_past_a_hang;
use crate::support::Env;
use crate::{copy_fixture, run};
use serde_json::{Value, json};

const FILES: [&str; 5] = [
    "package.json",
    ".mocharc.json",
    "src/calc.js",
    "test/unit/calc.spec.js",
    "test/integration/report.spec.js",
];

fn counts(r: &Value) -> (u64, u64, u64) {
    let s = &r["summary"];
    (
        s["passed"].as_u64().unwrap(),
        s["failed"].as_u64().unwrap(),
        s["skipped"].as_u64().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn mocha_results_are_structured_and_single_tests_rerun() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("mocha_project", &FILES, work.path());
    let root = project.to_str().unwrap();

    let r = run(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "mocha", "detected: {r}");
    assert_eq!(counts(&r), (3, 2, 1), "{r}");
    let failures = r["failures"].as_array().unwrap();
    let f = failures
        .iter()
        .find(|f| f["name"] == "test/unit/calc.spec.js > calc > subtracts numbers")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(f["file"], "test/unit/calc.spec.js");
    assert_eq!(f["line"], 11);
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .starts_with("AssertionError: Expected values to be strictly equal"),
        "{f}"
    );
    let rerun = f["rerun"].as_str().unwrap();
    assert!(
        rerun.starts_with("mocha --reporter ")
            && rerun.ends_with("test/unit/calc.spec.js --grep '^calc subtracts numbers$'"),
        "{rerun}"
    );

    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root,
               "test": "test/unit/calc.spec.js > calc > subtracts numbers"}),
    )
    .await;
    assert_eq!(counts(&one), (0, 1, 0), "{one}");
    let ok = run(
        &c,
        json!({"action": "run", "projectRoot": root,
               "test": "test/integration/report.spec.js > report > totals a report"}),
    )
    .await;
    assert_eq!(counts(&ok), (1, 0, 0), "{ok}");

    let unit = run(
        &c,
        json!({"action": "run", "projectRoot": root, "level": "unit"}),
    )
    .await;
    assert_eq!(counts(&unit), (2, 2, 1), "test/unit only: {unit}");

    failures_stream_past_a_hang(&c, root, "test/unit/calc.spec.js > calc > hangs when asked").await;
}
