//! debug_test with `go test -json` through MCP: tests/fixtures/go_project
//! (no dependencies, so no network), copied to a temporary directory.

use crate::support::{self, Env};
use crate::{copy_fixture, run};
use serde_json::json;
use std::time::Duration;

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

/// A tree like /usr's (`bin/X11 -> .`) plus a wide and a deep part: level
/// discovery walks it without following the cycle.
fn hostile_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::os::unix::fs::symlink(".", root.join("bin/X11")).unwrap();
    std::os::unix::fs::symlink("..", root.join("bin/up")).unwrap();
    for i in 0..2_000 {
        std::fs::write(root.join(format!("bin/tool{i}")), "").unwrap();
    }
    let deep: std::path::PathBuf = (0..40).map(|i| format!("d{i}")).collect();
    std::fs::create_dir_all(root.join(&deep)).unwrap();
    std::os::unix::fs::symlink("/", root.join(&deep).join("root")).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tree_with_a_symlink_cycle_gets_a_prompt_answer() {
    let env = Env::new();
    let c = env.client().await;
    let tree = hostile_tree();
    let root = tree.path().to_str().unwrap();
    // It used to walk the cycle forever (and SIGTERM waited on it).
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        run(
            &c,
            json!({"action": "run", "projectRoot": root, "framework": "go", "level": "unit"}),
        ),
    )
    .await
    .expect("an answer, not an endless walk");
    // No go.mod: go's own error is the run's error.
    assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_while_a_run_is_being_prepared_stops_the_daemon() {
    let env = Env::new();
    let c = env.client().await;
    let pid = env.daemon_pid().expect("daemon running");
    let tree = hostile_tree();
    let root = tree.path().to_str().unwrap();
    let call = c.reply(
        "debug_test",
        json!({"action": "run", "projectRoot": root, "framework": "go", "level": "unit"}),
    );
    // Send SIGTERM while the request is (or was) walking the tree.
    let _ = tokio::time::timeout(std::time::Duration::from_millis(200), call).await;
    crate::support::signal(pid, 15);
    assert!(
        env.wait_daemon_gone(pid, std::time::Duration::from_secs(15)),
        "the daemon did not stop on SIGTERM"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_run_request_stops_its_walk() {
    // 100,000 directories: walking them takes about half a second, far
    // longer than the cancellation's round trip once the walk has begun.
    let dir = tempfile::tempdir().unwrap();
    for i in 0..400 {
        for j in 0..250 {
            std::fs::create_dir_all(dir.path().join(format!("d{i}/e{j}"))).unwrap();
        }
    }
    std::fs::write(dir.path().join("go.mod"), "module example.com/w\n").unwrap();
    let env = Env::new();
    let c = env.client().await;
    let log = env.path().join("logs/daemon.log");
    let logged = |what: &str| std::fs::read_to_string(&log).map_or(0, |l| l.matches(what).count());
    // A run that finished its walk before the cancellation arrived proves
    // nothing: try again (the log counts each attempt's lines).
    for attempt in 1..=3 {
        let args =
            json!({"action": "run", "projectRoot": dir.path(), "framework": "go", "level": "unit"});
        let serde_json::Value::Object(map) = args else {
            unreachable!()
        };
        let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(
            rmcp::model::CallToolRequestParams::new("debug_test").with_arguments(map),
        ));
        let handle = c
            .service
            .peer()
            .send_cancellable_request(request, Default::default())
            .await
            .unwrap();
        // Cancel once the daemon is preparing the run (walking the tree).
        assert!(
            support::wait_until(Duration::from_secs(30), || logged(
                "debug_test run: preparing"
            ) >= attempt),
            "the run request never started"
        );
        handle.cancel(Some("test".into())).await.unwrap();
        assert!(
            support::wait_until(Duration::from_secs(30), || logged(
                "cancelled by the client"
            ) >= attempt),
            "a cancelled request says what it stopped: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        if logged("the request was cancelled") > 0 {
            return;
        }
    }
    panic!(
        "the walk never stopped for a cancellation: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
}
