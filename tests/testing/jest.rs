//! debug_test with Jest through MCP: tests/fixtures/jest_project, copied to
//! a temporary directory, run by the `jest` on PATH (the project has no
//! node_modules).

use crate::support::{Client, Env};
use crate::{copy_fixture, run};
use serde_json::{Value, json};

const FILES: [&str; 4] = [
    "package.json",
    "src/calc.js",
    "tests/unit/calc.test.js",
    "tests/integration/report.test.js",
];

fn counts(r: &Value) -> (u64, u64, u64) {
    let s = &r["summary"];
    (
        s["passed"].as_u64().unwrap(),
        s["failed"].as_u64().unwrap(),
        s["skipped"].as_u64().unwrap(),
    )
}

/// Starts the suite with the hanging test spinning, and waits until the
/// failures before it and the stuck test itself are reported while the run
/// goes on (or the run is ended by the stuck detector).
pub(crate) async fn failures_stream_past_a_hang(c: &Client, root: &str, hang_test: &str) {
    let started = c
        .ok(
            "debug_test",
            json!({"action": "run", "projectRoot": root,
                   "env": {"STROBE_FIXTURE_HANG": "1"}}),
        )
        .await;
    let id = started["testRunId"].as_str().unwrap().to_string();
    for _ in 0..20 {
        let s = c
            .ok("debug_test", json!({"action": "status", "testRunId": id}))
            .await;
        let failures = if s["status"] == "completed" {
            &s["failures"]
        } else {
            &s["failuresSoFar"]
        };
        let located = failures
            .as_array()
            .is_some_and(|f| f.len() == 2 && f.iter().all(|f| f["line"].is_u64()));
        let named = s["status"] == "completed"
            || s["running"]
                .as_array()
                .is_some_and(|r| r.contains(&json!(hang_test)));
        if located && named {
            return;
        }
        assert!(
            s["status"] != "completed",
            "ended without both failures: {s}"
        );
    }
    panic!("run {id}: the failures before the hang never showed");
}

#[tokio::test(flavor = "multi_thread")]
async fn jest_results_are_structured_and_single_tests_rerun() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("jest_project", &FILES, work.path());
    let root = project.to_str().unwrap();

    let r = run(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "jest", "detected: {r}");
    assert_eq!(counts(&r), (3, 2, 1), "{r}");
    let failures = r["failures"].as_array().unwrap();
    let f = failures
        .iter()
        .find(|f| f["name"] == "tests/unit/calc.test.js › calc › subtracts numbers")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(f["file"], "tests/unit/calc.test.js");
    assert_eq!(f["line"], 10);
    assert!(
        f["message"].as_str().unwrap().contains("Received: 7"),
        "{f}"
    );
    let rerun = f["rerun"].as_str().unwrap();
    assert!(
        rerun.starts_with("jest --ci --reporters=")
            && rerun.ends_with(
                "--runTestsByPath tests/unit/calc.test.js -t '^calc subtracts numbers$'"
            ),
        "{rerun}"
    );
    let thrown = failures
        .iter()
        .find(|f| f["name"] == "tests/unit/calc.test.js › calc › parses numbers")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(
        (&thrown["file"], &thrown["line"]),
        (&json!("src/calc.js"), &json!(15))
    );

    // The failing test alone (Jest reports the others of its file skipped).
    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root,
               "test": "tests/unit/calc.test.js › calc › subtracts numbers"}),
    )
    .await;
    assert_eq!((counts(&one).0, counts(&one).1), (0, 1), "{one}");
    let ok = run(
        &c,
        json!({"action": "run", "projectRoot": root,
               "test": "tests/unit/calc.test.js › calc › adds numbers"}),
    )
    .await;
    assert_eq!((counts(&ok).0, counts(&ok).1), (1, 0), "{ok}");

    let unit = run(
        &c,
        json!({"action": "run", "projectRoot": root, "level": "unit"}),
    )
    .await;
    assert_eq!(counts(&unit), (2, 2, 1), "tests/unit only: {unit}");
    let integration = run(
        &c,
        json!({"action": "run", "projectRoot": root, "level": "integration"}),
    )
    .await;
    assert_eq!(counts(&integration), (1, 0, 0), "{integration}");

    failures_stream_past_a_hang(
        &c,
        root,
        "tests/unit/calc.test.js › calc › hangs when asked",
    )
    .await;
}
