//! debug_test with Catch2 through MCP: tests/fixtures/catch2_project,
//! copied to a temporary directory and compiled there with
//! `g++ -g -O0 -pthread`, its binary passed as `command`.

use crate::support::Env;
use crate::{copy_fixture, run};
use serde_json::json;
use std::process::Command;

#[tokio::test(flavor = "multi_thread")]
async fn catch2_binary_results_are_structured() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("catch2_project", &["calc_test.cpp"], work.path());
    let source = project.join("calc_test.cpp");
    let built = Command::new("g++")
        .args(["-g", "-O0", "-pthread", "-o"])
        .arg(project.join("calc_tests"))
        .arg(&source)
        .status()
        .expect("g++");
    assert!(built.success(), "g++ failed");
    let root = project.to_str().unwrap();

    let r = run(
        &c,
        json!({"action": "run", "projectRoot": root, "command": "calc_tests"}),
    )
    .await;
    assert_eq!(r["framework"], "catch2", "detected by probing: {r}");
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
    assert_eq!(f["name"], "mean of two numbers");
    assert_eq!(f["file"], source.to_str().unwrap());
    assert_eq!(f["line"], 54);
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("1.0 == Approx( 1.5 )"),
        "{f}"
    );
    let traces = f["suggestedTraces"].as_array().unwrap();
    assert!(traces.contains(&json!("calc::mean")), "{f}");
    let binary = project.join("calc_tests");
    assert_eq!(
        f["rerun"],
        format!(
            "{} -r xml --durations yes 'mean of two numbers'",
            binary.display()
        )
    );

    // One test by its name (with spaces), and one level by its tag.
    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root, "command": "calc_tests",
               "test": "adds two numbers"}),
    )
    .await;
    assert_eq!(
        (&one["summary"]["passed"], &one["summary"]["failed"]),
        (&json!(1), &json!(0)),
        "{one}"
    );
    let integration = run(
        &c,
        json!({"action": "run", "projectRoot": root, "command": "calc_tests",
               "level": "integration"}),
    )
    .await;
    assert_eq!(
        (
            &integration["summary"]["passed"],
            &integration["summary"]["failed"]
        ),
        (&json!(1), &json!(0)),
        "[integration] only: {integration}"
    );

    // Rerun instrumented: the binary under Frida, the suggested function
    // traced.
    let traced = run(
        &c,
        json!({"action": "run", "projectRoot": root, "command": "calc_tests",
               "test": "mean of two numbers", "tracePatterns": ["calc::mean"]}),
    )
    .await;
    assert_eq!(traced["summary"]["failed"], 1, "{traced}");
    assert_eq!(traced["failures"][0]["line"], 54, "{traced}");
    let session = traced["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{traced}"));
    let enters = c.events(session, Some("function_enter")).await;
    assert!(
        enters.iter().any(|e| e["function"] == "calc::mean"),
        "{enters:?}"
    );

    // Named without a binary: the run says what is missing.
    let missing = run(
        &c,
        json!({"action": "run", "projectRoot": root, "framework": "catch2"}),
    )
    .await;
    assert!(
        missing["error"]
            .as_str()
            .unwrap_or_default()
            .contains("pass 'command'"),
        "{missing}"
    );
}
