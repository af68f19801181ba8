//! The stuck detector on real hanging tests: a Rust deadlock and a busy
//! loop (native stacks through ptrace), a Python deadlock (py-spy), and a
//! test that sleeps on purpose (not stuck).

use crate::support::{Client, Env};
use crate::{copy_fixture, run};
use serde_json::{Value, json};

const RUST_FILES: [&str; 3] = ["Cargo.toml", "src/lib.rs", "tests/after.rs"];

async fn run_hanging(c: &Client, root: &str, framework: &str, hang: &str) -> Value {
    run(
        c,
        json!({"action": "run", "projectRoot": root, "framework": framework,
               "env": {"STROBE_FIXTURE_HANG": hang}}),
    )
    .await
}

/// Every frame of every stuck thread, as `function (file:line)`.
fn frames(stuck: &Value) -> Vec<String> {
    stuck["threads"]
        .as_array()
        .unwrap_or_else(|| panic!("no threads: {stuck}"))
        .iter()
        .flat_map(|t| t["stack"].as_array().unwrap().iter())
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

fn test_passed(details_path: &Value, name: &str) -> bool {
    let details: Value =
        serde_json::from_slice(&std::fs::read(details_path.as_str().unwrap()).unwrap()).unwrap();
    details["result"]["tests"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == name && t["status"] == "passed")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rust_deadlock_and_a_busy_loop_are_caught_with_their_stacks() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("stuck_project", &RUST_FILES, work.path());
    let root = project.to_str().unwrap();

    let r = run_hanging(&c, root, "cargo", "deadlock").await;
    assert_eq!(r["summary"]["stuck"], 1, "{r}");
    let s = &r["stuck"][0];
    assert_eq!(s["verdict"], "deadlock", "{s}");
    assert!(s["diagnosis"].as_str().unwrap().contains("futex"), "{s}");
    // libtest names a test's thread after the test (Linux keeps 15 bytes).
    assert!(
        s["name"].as_str().unwrap().contains("tests::deadlock"),
        "{s}"
    );
    let f = frames(s);
    assert!(
        f.iter()
            .filter(|f| f.starts_with("stuck::lock_both (") && f.contains("src/lib.rs:"))
            .count()
            >= 2,
        "both threads wait inside lock_both: {f:#?}"
    );
    assert!(
        s["suggestedTraces"]
            .as_array()
            .unwrap()
            .contains(&json!("stuck::lock_both")),
        "{s}"
    );
    // The stuck binary was stopped; cargo went on with the next one.
    assert!(
        test_passed(&r["details"], "runs_after_the_stuck_binary"),
        "{r}"
    );

    let r = run_hanging(&c, root, "cargo", "spin").await;
    assert_eq!(r["summary"]["stuck"], 1, "{r}");
    let s = &r["stuck"][0];
    assert_eq!(s["verdict"], "infiniteLoop", "{s}");
    assert!(
        frames(s)
            .iter()
            .any(|f| f.starts_with("stuck::spin_forever (")),
        "{s}"
    );
    assert!(
        test_passed(&r["details"], "runs_after_the_stuck_binary"),
        "{r}"
    );

    // Sleeping 7 s on purpose: silent and idle, but not stuck.
    let r = run_hanging(&c, root, "cargo", "sleep").await;
    assert_eq!(r["summary"]["stuck"], 0, "{r}");
    assert_eq!(r["summary"]["failed"], 0, "{r}");
    assert!(
        test_passed(&r["details"], "tests::sleeps_when_asked"),
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_deadlock_is_caught_with_python_frames() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("stuck_python", &["test_stuck.py"], work.path());
    let root = project.to_str().unwrap();
    let r = run_hanging(&c, root, "unittest", "deadlock").await;
    assert_eq!(r["summary"]["stuck"], 1, "{r}");
    let s = &r["stuck"][0];
    assert_eq!(s["verdict"], "deadlock", "{s}");
    assert_eq!(
        s["name"], "test_stuck.StuckTests.test_deadlocks_when_asked",
        "{s}"
    );
    assert_eq!(s["processes"][0]["sampler"], "python", "{s}");
    let f = frames(s);
    let in_lock_both = f
        .iter()
        .filter(|f| f.starts_with("lock_both (") && f.contains("test_stuck.py:"))
        .count();
    assert_eq!(
        in_lock_both, 2,
        "both threads wait inside lock_both: {f:#?}"
    );
}
