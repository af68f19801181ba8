//! debug_test with the generic adapter through MCP: any command line, here
//! tests/fixtures/generic_project's TAP-printing `run-tests.sh`, copied to a
//! temporary directory.

use crate::support::Env;
use crate::{copy_fixture, run};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_command_lines_results_are_structured() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("generic_project", &["run-tests.sh", "calc.sh"], work.path());
    let root = project.to_str().unwrap();

    let r = run(
        &c,
        json!({"action": "run", "projectRoot": root, "command": "./run-tests.sh"}),
    )
    .await;
    assert_eq!(r["framework"], "generic", "nothing else knows it: {r}");
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
    assert_eq!(f["name"], "test_negative_numbers");
    assert_eq!(f["file"], "run-tests.sh");
    assert_eq!(f["line"], 23);
    assert_eq!(f["message"], "five minus two: expected 7, got 3");
    assert_eq!(
        f["rerun"],
        r"sh -c './run-tests.sh '\''test_negative_numbers'\'''"
    );

    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root, "command": "./run-tests.sh",
               "test": "test_sums_numbers"}),
    )
    .await;
    assert_eq!(
        (&one["summary"]["passed"], &one["summary"]["failed"]),
        (&json!(1), &json!(0)),
        "{one}"
    );

    // Output it cannot read: the exit code decides.
    let plain = run(
        &c,
        json!({"action": "run", "projectRoot": root, "command": "echo checking; exit 3"}),
    )
    .await;
    assert_eq!(plain["summary"]["failed"], 1, "{plain}");
    assert_eq!(plain["failures"][0]["name"], "(whole command)", "{plain}");

    // Named with no command: the run says what is missing.
    let missing = run(
        &c,
        json!({"action": "run", "projectRoot": root, "framework": "generic"}),
    )
    .await;
    assert!(
        missing["error"]
            .as_str()
            .unwrap_or_default()
            .contains("`command`"),
        "{missing}"
    );
}
