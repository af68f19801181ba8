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

/// `debug_test` with `tracePatterns` on Jest: the project's functions are
/// traced inside Jest's own module sandbox (a vm context per test file,
/// modules read and transformed by Jest itself), the counts are those of
/// the plain run, and the test files on disk stay as they were.
#[tokio::test(flavor = "multi_thread")]
async fn an_instrumented_jest_run_traces_the_project_inside_jests_sandbox() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("jest_project", &FILES, work.path());
    // The plain run suggests tracing the file parse('x') threw in; the
    // instrumented run takes that suggestion.
    let plain = run(&c, json!({"action": "run", "projectRoot": project})).await;
    let thrown = plain["failures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "tests/unit/calc.test.js › calc › parses numbers")
        .unwrap_or_else(|| panic!("{plain}"));
    assert_eq!(
        thrown["suggestedTraces"],
        json!(["@file:calc.js"]),
        "{thrown}"
    );
    let patterns: Vec<String> = serde_json::from_value(thrown["suggestedTraces"].clone()).unwrap();
    instrumented_calc_run(&c, &project, "jest_project", &FILES, &patterns, json!({})).await;
}

/// The same with Jest's native ES modules (`--experimental-vm-modules`,
/// no transform): Jest reads each module's text through the same loader
/// and links it as a `vm.SourceTextModule` in its sandbox.
#[tokio::test(flavor = "multi_thread")]
async fn an_instrumented_jest_run_traces_es_modules_in_jests_sandbox() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("jest_esm_project", &FILES, work.path());
    instrumented_calc_run(
        &c,
        &project,
        "jest_esm_project",
        &FILES,
        &["calc.*".to_string()],
        json!({"NODE_OPTIONS": "--experimental-vm-modules"}),
    )
    .await;
}

/// An instrumented run of the calc fixture `fixture` (copied to `project`)
/// with `patterns` naming its calc.js, and the environment `env` (an
/// object): the plain run's counts, calc.js traced with typed arguments, return
/// values and the throw, and the project's files on disk unchanged.
pub(crate) async fn instrumented_calc_run(
    c: &Client,
    project: &std::path::Path,
    fixture: &str,
    files: &[&str],
    patterns: &[String],
    env: Value,
) {
    let r = run(
        c,
        json!({"action": "run", "projectRoot": project, "tracePatterns": patterns, "env": env}),
    )
    .await;
    assert_eq!(counts(&r), (3, 2, 1), "the plain run's counts: {r}");
    let session = r["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("an instrumented run names its session: {r}"))
        .to_string();
    let adds = c.calls_of(&session, "function_enter", "calc.add").await;
    assert!(!adds.is_empty(), "calc.add traced: {r}");
    let add = adds
        .iter()
        .find(|e| e["arguments"][0]["value"] == 2)
        .unwrap_or_else(|| panic!("add(2, 3): {adds:?}"));
    assert_eq!(add["arguments"][1]["name"], "b", "{add}");
    assert_eq!(add["arguments"][1]["value"], 3, "{add}");
    let subs = c.calls_of(&session, "function_exit", "calc.sub").await;
    assert!(
        subs.iter().any(|e| e["returnValue"] == 7),
        "sub(5, 2) returned 7: {subs:?}"
    );
    // parse('x') threw: its exit says so.
    let parses = c.calls_of(&session, "function_exit", "calc.parse").await;
    assert!(
        parses.iter().any(|e| e["exception"].is_object()),
        "{parses:?}"
    );
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    for f in files {
        assert_eq!(
            std::fs::read_to_string(project.join(f)).unwrap(),
            std::fs::read_to_string(fixtures.join(fixture).join(f)).unwrap(),
            "{f} unchanged"
        );
    }
}
