//! debug_test with `go test -json` through MCP: tests/fixtures/go_project
//! (no dependencies, so no network), copied to a temporary directory.

use crate::support::Env;
use crate::{copy_fixture, run};
use serde_json::json;

const FILES: [&str; 7] = [
    "go.mod",
    "calc.go",
    "calc_test.go",
    "parse/parse.go",
    "parse/parse_test.go",
    "integration/flow_test.go",
    "e2e/e2e_test.go",
];

#[tokio::test(flavor = "multi_thread")]
async fn go_suite_levels_and_single_tests_have_structured_results() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("go_project", &FILES, work.path());
    let root = project.to_str().unwrap();

    let r = run(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "go", "detected: {r}");
    assert_eq!(r.get("error"), None, "{r}");
    assert_eq!(
        (
            &r["summary"]["passed"],
            &r["summary"]["failed"],
            &r["summary"]["skipped"]
        ),
        (&json!(6), &json!(3), &json!(1)),
        "{r}"
    );
    let failures = r["failures"].as_array().unwrap();
    let sub = failures
        .iter()
        .find(|f| f["name"] == "TestSub")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(
        (&sub["file"], &sub["line"]),
        (&json!("calc_test.go"), &json!(18))
    );
    assert_eq!(
        sub["message"],
        "Sub(5, 2) = 7, want 3\nfive minus two should be three"
    );
    assert_eq!(sub["rerun"], "go test -json -run '^TestSub$' ./...");
    assert_eq!(
        sub["suggestedTraces"],
        json!(["example.com/calc.TestSub", "example.com/calc.*"])
    );
    let panic = failures
        .iter()
        .find(|f| f["name"] == "TestDigitOutOfRange")
        .unwrap();
    assert_eq!(
        panic["file"],
        project.join("parse/parse.go").to_str().unwrap(),
        "{panic}"
    );
    assert_eq!(panic["line"], 6);
    assert!(
        panic["suggestedTraces"]
            .as_array()
            .unwrap()
            .contains(&json!("example.com/calc/parse.Digit")),
        "{panic}"
    );

    let unit = run(
        &c,
        json!({"action": "run", "projectRoot": root, "level": "unit"}),
    )
    .await;
    assert_eq!(
        (&unit["summary"]["passed"], &unit["summary"]["failed"]),
        (&json!(4), &json!(3)),
        "the root and parse packages: {unit}"
    );
    let integration = run(
        &c,
        json!({"action": "run", "projectRoot": root, "level": "integration"}),
    )
    .await;
    assert_eq!(
        (
            &integration["summary"]["passed"],
            &integration["summary"]["failed"]
        ),
        (&json!(1), &json!(0)),
        "{integration}"
    );

    // A subtest alone, by the name the failure carries.
    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": "TestTable/negative"}),
    )
    .await;
    assert_eq!(
        (&one["summary"]["passed"], &one["summary"]["failed"]),
        (&json!(0), &json!(1)),
        "{one}"
    );
    assert_eq!(one["failures"][0]["line"], 29, "{one}");
}
