//! debug_test with Google Test through MCP: tests/fixtures/gtest_project,
//! copied to a temporary directory, built by the adapter with CMake (its
//! build directory stays in the copy), then its binary named directly.

use crate::support::Env;
use crate::{copy_fixture, run};
use serde_json::json;

const FILES: [&str; 4] = ["CMakeLists.txt", "calc.h", "calc.cpp", "calc_test.cpp"];

#[tokio::test(flavor = "multi_thread")]
async fn gtest_is_built_with_cmake_and_its_results_structured() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("gtest_project", &FILES, work.path());
    let root = project.to_str().unwrap();

    let r = run(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "gtest", "detected: {r}");
    assert_eq!(
        (
            &r["summary"]["passed"],
            &r["summary"]["failed"],
            &r["summary"]["skipped"]
        ),
        (&json!(2), &json!(1), &json!(0)),
        "{r}"
    );
    let failures = r["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{r}");
    let f = &failures[0];
    assert_eq!(f["name"], "CalcUnitTest.MeanOfTwo");
    assert_eq!(f["file"], project.join("calc_test.cpp").to_str().unwrap());
    assert_eq!(f["line"], 16);
    assert!(
        f["message"].as_str().unwrap().contains("mean of 1 and 2"),
        "{f}"
    );
    let traces = f["suggestedTraces"].as_array().unwrap();
    for t in ["calc::mean", "calc::*", "@file:calc.cpp"] {
        assert!(traces.contains(&json!(t)), "{t}: {f}");
    }
    let rerun = f["rerun"].as_str().unwrap();
    assert!(
        rerun.starts_with("sh -c 'cmake -S . -B build/strobe"),
        "{rerun}"
    );
    assert!(
        rerun.ends_with("' strobe-gtest --gtest_filter=CalcUnitTest.MeanOfTwo"),
        "{rerun}"
    );
    let binary = project.join("build/strobe/calc_test");
    assert!(binary.is_file(), "built in the project's copy");

    // One test alone, and one level, through the same build.
    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": "CalcUnitTest.AddsNumbers"}),
    )
    .await;
    assert_eq!(
        (&one["summary"]["passed"], &one["summary"]["failed"]),
        (&json!(1), &json!(0)),
        "{one}"
    );
    let unit = run(
        &c,
        json!({"action": "run", "projectRoot": root, "level": "unit"}),
    )
    .await;
    assert_eq!(
        (&unit["summary"]["passed"], &unit["summary"]["failed"]),
        (&json!(1), &json!(1)),
        "the Unit suite only: {unit}"
    );

    // The binary named directly: no build.
    let direct = run(
        &c,
        json!({"action": "run", "projectRoot": root, "command": "build/strobe/calc_test"}),
    )
    .await;
    assert_eq!(direct["framework"], "gtest", "{direct}");
    assert_eq!(
        (&direct["summary"]["passed"], &direct["summary"]["failed"]),
        (&json!(2), &json!(1)),
        "{direct}"
    );
    assert_eq!(
        direct["failures"][0]["rerun"],
        format!("{} --gtest_filter=CalcUnitTest.MeanOfTwo", binary.display())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn gtest_instrumented_rerun_traces_the_test_binary() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("gtest_project", &FILES, work.path());
    let root = project.to_str().unwrap();
    // Built by the adapter, then the test binary itself runs under Frida.
    let r = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": "CalcUnitTest.MeanOfTwo",
               "tracePatterns": ["calc::mean"]}),
    )
    .await;
    assert_eq!(r["summary"]["failed"], 1, "{r}");
    assert_eq!(r["failures"][0]["line"], 16, "{r}");
    let session = r["sessionId"].as_str().unwrap_or_else(|| panic!("{r}"));
    let status = c.status(session).await;
    assert!(
        status["binaryPath"]
            .as_str()
            .unwrap()
            .ends_with("build/strobe/calc_test"),
        "the test binary itself ran under Frida: {status}"
    );
    let enters = c.events(session, Some("function_enter")).await;
    assert!(
        enters.iter().any(|e| e["function"] == "calc::mean"),
        "{enters:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gtest_build_error_is_the_run_error() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("gtest_project", &FILES, work.path());
    let calc = project.join("calc.cpp");
    let broken = std::fs::read_to_string(&calc)
        .unwrap()
        .replace("return a + b;", "return a + b");
    std::fs::write(&calc, broken).unwrap();
    let r = run(
        &c,
        json!({"action": "run", "projectRoot": project.to_str().unwrap()}),
    )
    .await;
    let e = r["error"].as_str().unwrap_or_else(|| panic!("{r}"));
    assert!(e.contains("calc.cpp:5:"), "{e}");
    assert!(e.contains("error:"), "{e}");
    assert_eq!(r["summary"]["passed"], 0, "{r}");
}
