//! debug_test with Vitest through MCP: tests/fixtures/vitest_project,
//! copied to a temporary directory, run by the `vitest` on PATH (the
//! project has no node_modules; its tests import from 'vitest' all the
//! same).

use crate::jest::{failures_stream_past_a_hang, instrumented_calc_run};
use crate::support::Env;
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

#[tokio::test(flavor = "multi_thread")]
async fn vitest_results_are_structured_and_single_tests_rerun() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("vitest_project", &FILES, work.path());
    let root = project.to_str().unwrap();

    let r = run(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "vitest", "detected: {r}");
    assert_eq!(counts(&r), (3, 2, 1), "{r}");
    let failures = r["failures"].as_array().unwrap();
    let f = failures
        .iter()
        .find(|f| f["name"] == "tests/unit/calc.test.js > calc > subtracts numbers")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(f["file"], "tests/unit/calc.test.js");
    assert_eq!(f["line"], 11);
    assert_eq!(
        f["message"],
        "AssertionError: expected 7 to be 3 // Object.is equality"
    );
    let rerun = f["rerun"].as_str().unwrap();
    assert!(
        rerun.starts_with("vitest run --reporter=")
            && rerun.ends_with("tests/unit/calc.test.js -t '^calc > subtracts numbers$'"),
        "{rerun}"
    );
    // The test's console output is in the details file.
    let details: Value =
        serde_json::from_slice(&std::fs::read(r["details"].as_str().unwrap()).unwrap()).unwrap();
    assert!(
        details["result"]["tests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == f["name"] && t["output"] == "five minus two\n"),
        "{details}"
    );

    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root,
               "test": "tests/unit/calc.test.js > calc > subtracts numbers"}),
    )
    .await;
    assert_eq!((counts(&one).0, counts(&one).1), (0, 1), "{one}");
    let ok = run(
        &c,
        json!({"action": "run", "projectRoot": root,
               "test": "tests/unit/calc.test.js > calc > adds numbers"}),
    )
    .await;
    assert_eq!((counts(&ok).0, counts(&ok).1), (1, 0), "{ok}");

    let unit = run(
        &c,
        json!({"action": "run", "projectRoot": root, "level": "unit"}),
    )
    .await;
    assert_eq!(counts(&unit), (2, 2, 1), "tests/unit only: {unit}");

    failures_stream_past_a_hang(
        &c,
        root,
        "tests/unit/calc.test.js > calc > hangs when asked",
    )
    .await;
}

/// `debug_test` with `tracePatterns` on Vitest: Vite reads and transforms
/// the project's files in Vitest's own process and the tests run in a
/// forked worker; the project's functions are traced there, the counts are
/// those of the plain run, and the files on disk stay as they were.
#[tokio::test(flavor = "multi_thread")]
async fn an_instrumented_vitest_run_traces_the_project_in_its_workers() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("vitest_project", &FILES, work.path());
    instrumented_calc_run(
        &c,
        &project,
        "vitest_project",
        &FILES,
        &["calc.*".to_string()],
        json!({}),
    )
    .await;
}

/// The same on a TypeScript project Vite compiles itself (no tsc, no
/// source map on disk): the `.ts` sources get probed copies as they are,
/// the functions are named and traced in TypeScript's terms, and an import
/// of a type only (which the compiler drops) still links.
#[tokio::test(flavor = "multi_thread")]
async fn an_instrumented_vitest_run_traces_typescript_sources() {
    const TS_FILES: [&str; 5] = [
        "package.json",
        "src/calc.ts",
        "src/pair.ts",
        "tests/unit/calc.test.ts",
        "tests/integration/report.test.ts",
    ];
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("vitest_ts_project", &TS_FILES, work.path());
    instrumented_calc_run(
        &c,
        &project,
        "vitest_ts_project",
        &TS_FILES,
        &["calc.*".to_string()],
        json!({}),
    )
    .await;
}
