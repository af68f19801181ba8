//! The stuck detector on real hanging tests: a Rust deadlock and a busy
//! loop (native stacks through ptrace), a Python deadlock (py-spy), and a
//! test that sleeps on purpose (not stuck).

use crate::support::{Client, Env};
use crate::{copy_fixture, run};
use serde_json::{Value, json};

const RUST_FILES: [&str; 3] = ["Cargo.toml", "src/lib.rs", "tests/after.rs"];

async fn run_hanging(c: &Client, root: &str, framework: &str, hang: &str) -> Value {
    run_with(c, root, framework, json!({"STROBE_FIXTURE_HANG": hang})).await
}

async fn run_with(c: &Client, root: &str, framework: &str, env: Value) -> Value {
    run(
        c,
        json!({"action": "run", "projectRoot": root, "framework": framework, "env": env}),
    )
    .await
}

/// The failure of test `name` in a result.
fn failure<'a>(r: &'a Value, name: &str) -> &'a Value {
    let found: Vec<&Value> = r["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "one failure named {name}: {r}");
    found[0]
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

    // A test that fails with a message runs beside the one that hangs.
    let r = run_with(
        &c,
        root,
        "cargo",
        json!({"STROBE_FIXTURE_HANG": "deadlock", "STROBE_FIXTURE_FAIL": "1"}),
    )
    .await;
    assert_eq!(r["summary"]["stuck"], 1, "{r}");
    let s = &r["stuck"][0];
    assert_eq!(s["verdict"], "deadlock", "{s}");
    assert!(s["diagnosis"].as_str().unwrap().contains("futex"), "{s}");
    // Its real name: from its thread's stack (Linux keeps 15 bytes of the
    // thread name libtest gives it, `tests::deadloc`).
    assert_eq!(s["name"], "tests::deadlocks_when_asked", "{s}");
    // libtest prints failure reports only in its summary, which the stopped
    // binary never printed: the failure still has its place and message.
    let f = failure(&r, "tests::fails_when_asked");
    assert_eq!(
        (&f["file"], &f["line"]),
        (&json!("src/lib.rs"), &json!(42)),
        "{f}"
    );
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("balance of alice is wrong"),
        "{f}"
    );
    // The stopped test counts as failed, once, placed in the test itself.
    assert_eq!(r["summary"]["failed"], 2, "{r}");
    let hung = failure(&r, "tests::deadlocks_when_asked");
    assert_eq!(
        (&hung["file"], &hung["line"]),
        (&json!("src/lib.rs"), &json!(55)),
        "{hung}"
    );
    assert!(
        hung["message"]
            .as_str()
            .unwrap()
            .starts_with("stuck (deadlock)"),
        "{hung}"
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
    assert_eq!(s["name"], "tests::spins_when_asked", "{s}");
    assert_eq!(r["summary"]["failed"], 1, "{r}");
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

#[tokio::test(flavor = "multi_thread")]
async fn a_pytest_deadlock_fails_once_at_the_tests_own_frame() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("pytest_project", &crate::pytest::FILES, work.path());
    let root = project.to_str().unwrap();
    let r = run_with(&c, root, "pytest", json!({"STROBE_FIXTURE_HANG": "1"})).await;
    assert_eq!(r["summary"]["stuck"], 1, "{r}");
    let name = "tests/unit/test_hang.py::test_hangs_when_asked";
    assert_eq!(r["stuck"][0]["name"], name, "{r}");
    // Failed once (pytest's SIGINT report made it a failure already), at
    // the test's own line, not threading.py where SIGINT landed; the
    // message says where the threads wait.
    let hung = failure(&r, name);
    assert_eq!(
        (&hung["file"], &hung["line"]),
        (&json!("tests/unit/test_hang.py"), &json!(16)),
        "{hung}"
    );
    let message = hung["message"].as_str().unwrap();
    assert!(message.starts_with("stuck (deadlock)"), "{hung}");
    assert!(
        message.contains("calc.py:23 (transfer)"),
        "the lock site: {hung}"
    );
    // The other failures kept their reports.
    let f = failure(&r, "tests/unit/test_calc.py::test_parse_error");
    assert_eq!(
        (&f["file"], &f["line"]),
        (&json!("calc.py"), &json!(11)),
        "{f}"
    );
    assert_eq!(
        r["summary"]["failed"], 8,
        "7 failures and the stuck test: {r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_deadlock_without_py_spy_still_gets_a_verdict_and_says_how_to_get_stacks() {
    // A fresh machine: no py-spy. STROBE_PY_SPY names the one to use, here
    // one that is not there (the venv's and PATH's are then not looked at).
    let env = Env::new();
    let mut daemon = env
        .command(&["daemon"])
        .env("STROBE_PY_SPY", env.path().join("no-py-spy"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(crate::support::wait_until(
        std::time::Duration::from_secs(10),
        || env.path().join("strobe.sock").exists()
    ));
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("pytest_project", &crate::pytest::FILES, work.path());
    let root = project.to_str().unwrap();
    let r = run_with(&c, root, "pytest", json!({"STROBE_FIXTURE_HANG": "1"})).await;
    // Output silence, CPU and the threads' waits decide, not stacks.
    assert_eq!(r["summary"]["stuck"], 1, "{r}");
    let s = &r["stuck"][0];
    assert_eq!(s["verdict"], "deadlock", "{s}");
    assert!(
        s["diagnosis"].as_str().unwrap().contains("futex"),
        "the waits are named: {s}"
    );
    let hint = s["stacksUnavailable"]
        .as_str()
        .unwrap_or_else(|| panic!("{s}"));
    assert!(hint.contains("strobe setup"), "{hint}");
    let hung = failure(&r, "tests/unit/test_hang.py::test_hangs_when_asked");
    assert!(
        hung["message"].as_str().unwrap().contains("strobe setup"),
        "{hung}"
    );
    drop(c);
    crate::support::signal(daemon.id(), 15);
    let _ = daemon.wait();
}
