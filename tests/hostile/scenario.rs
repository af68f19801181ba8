//! Scenarios a hostile repository could ship, run by `debug_test_scenario`
//! against the repl fixture: `assert: file` aimed outside the project (an
//! absolute path, `..`, a committed link out of the tree, a FIFO inside
//! it), a scenario of 20,000 steps, and waits whose session ends under
//! them (the target killed with -9, `debug_session stop`). Nothing outside
//! the tree is read or echoed, the reply stays within its budget, and a
//! wait ends with its session.

use crate::canary::Canaries;
use crate::support::{Client, Env, fixture, running, signal};
use serde_json::{Value, json};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

/// Longest a call that should come back at once may take here: the test's
/// bound, far below the waits' 600 s timeouts.
const BOUND: Duration = Duration::from_secs(60);

/// The repl fixture launched in project `root`, once it printed "ready":
/// its session and pid.
async fn repl(c: &Client, root: &Path) -> (String, u32) {
    let exe = fixture("repl");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": root, "stdin": "pipe"}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let ready = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "stdout", "textContains": "ready", "waitMs": 30000}),
        )
        .await;
    assert_eq!(ready["wait"]["outcome"], "matched", "{ready}");
    (id, v["pid"].as_u64().unwrap() as u32)
}

async fn scenario(c: &Client, id: &str, steps: Value) -> crate::support::Reply {
    let call = c.reply(
        "debug_test_scenario",
        json!({"sessionId": id, "scenario": {"steps": steps}}),
    );
    tokio::time::timeout(BOUND, call)
        .await
        .expect("debug_test_scenario came back within the test's bound")
}

/// Waits until the scenario running in `id` recorded its first step.
async fn first_step_done(c: &Client, id: &str) {
    let v = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "scenario_step", "waitMs": 30000}),
        )
        .await;
    assert_eq!(v["wait"]["outcome"], "matched", "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn file_checks_never_read_or_show_a_file_outside_the_project() {
    let env = Env::new();
    let c = env.client().await;
    let canaries = Canaries::new(&["secret"]);
    let secret = canaries.path("secret");
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    std::fs::write(root.join("conf.ini"), "volume=3\n").unwrap();
    std::os::unix::fs::symlink(&secret, root.join("link.txt")).unwrap();
    let fifo = CString::new(root.join("pipe").as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo(3) in the test's own temporary directory.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let (id, _) = repl(&c, root).await;

    // ../<the canaries' folder>/secret, from the project root.
    let climbing = format!(
        "../{}/secret",
        canaries.dir.path().file_name().unwrap().to_str().unwrap()
    );
    let outside = [
        (secret.to_str().unwrap().to_string(), "is absolute"),
        (climbing, "climbs out with \"..\""),
        (
            "link.txt".to_string(),
            "leads out of the project through a symbolic link",
        ),
    ];
    for (path, says) in outside {
        for check in [
            json!({"assert": "file", "path": path, "contains": "canary"}),
            json!({"assert": "file", "path": path, "exists": false}),
        ] {
            let r = scenario(&c, &id, json!([check])).await;
            assert!(!r.is_error, "{}", r.text);
            assert_eq!(r.value["passed"], false, "{path}: {}", r.text);
            let actual = r.value["failure"]["actual"].as_str().unwrap();
            assert!(
                actual.contains(says) && actual.contains("relative to the project root"),
                "{path}: {actual}"
            );
            let all = format!("{}{}", r.text, r.value);
            assert!(
                !all.contains("must never change"),
                "the canary's content was echoed: {all}"
            );
        }
    }

    // A FIFO in the project is not opened (it would block the scenario).
    let r = scenario(
        &c,
        &id,
        json!([{"assert": "file", "path": "pipe", "contains": "x"}]),
    )
    .await;
    let actual = r.value["failure"]["actual"].as_str().unwrap();
    assert!(actual.contains("is a FIFO, not a regular file"), "{actual}");

    // A file inside the project is read as before.
    let r = scenario(
        &c,
        &id,
        json!([{"assert": "file", "path": "conf.ini", "contains": "volume=3"}]),
    )
    .await;
    assert_eq!(r.value["passed"], true, "{}", r.text);

    canaries.assert_untouched();
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

/// A repository's `.strobe/scenarios/x.json` linking to a JSON file
/// outside it, and a relative `scenarioFile` climbing out: refused before
/// they are read (their steps would be echoed in the reply).
#[tokio::test(flavor = "multi_thread")]
async fn scenario_files_named_in_the_project_stay_in_it() {
    let env = Env::new();
    let c = env.client().await;
    let elsewhere = tempfile::tempdir().unwrap();
    let theirs = elsewhere.path().join("private.json");
    std::fs::write(
        &theirs,
        json!({"steps": [{"assert": "stdout", "contains": "private-token-1234"}]}).to_string(),
    )
    .unwrap();
    let project = tempfile::tempdir().unwrap();
    let dir = project.path().join(".strobe/scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&theirs, dir.join("linked.json")).unwrap();
    let (id, _) = repl(&c, project.path()).await;
    let climbing = format!(
        "../{}/private.json",
        elsewhere.path().file_name().unwrap().to_str().unwrap()
    );
    for file in ["linked", climbing.as_str()] {
        let r = c
            .reply(
                "debug_test_scenario",
                json!({"sessionId": id, "scenarioFile": file}),
            )
            .await;
        assert!(
            r.error_text().contains("leads out of the project"),
            "{file}: {}",
            r.text
        );
        assert!(!r.text.contains("private-token"), "{}", r.text);
    }
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_huge_scenario_is_refused_and_a_long_one_answers_within_the_budget() {
    let env = Env::new();
    let c = env.client().await;
    let project = tempfile::tempdir().unwrap();
    let (id, _) = repl(&c, project.path()).await;

    let waits = |n: usize| Value::Array((0..n).map(|_| json!({"wait": 0})).collect());
    let r = scenario(&c, &id, waits(20_000)).await;
    assert!(
        r.error_text()
            .contains("20000 steps, over the limit of 1000"),
        "{}",
        r.text
    );
    assert!(r.text.len() < 1_000, "{} bytes", r.text.len());
    assert!(c.events(&id, Some("scenario_step")).await.is_empty());

    // The most steps allowed: a pass whose reply lists the first and last
    // steps and counts the rest.
    let r = scenario(&c, &id, waits(1_000)).await;
    assert_eq!(r.value["passed"], true, "{}", r.text);
    let chars = r.text.chars().count();
    println!(
        "a 1,000-step reply: {chars} characters of text, {} of JSON",
        r.value.to_string().len()
    );
    assert!(chars <= 16_000, "{chars} characters");
    assert_eq!(r.value["steps"].as_array().unwrap().len(), 20);
    assert_eq!(r.value["stepsOmitted"], 980);
    assert!(
        r.text.contains("980 passing step(s) left out"),
        "{}",
        r.text
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wait_ends_when_the_target_is_killed() {
    let env = Env::new();
    let c = env.client().await;
    let watcher = env.client().await;
    let project = tempfile::tempdir().unwrap();
    let (id, pid) = repl(&c, project.path()).await;
    let status = c.status(&id).await;
    assert_eq!(status["pid"], pid, "{status}");

    let run = scenario(
        &c,
        &id,
        json!([
            {"wait": {"until": {"assert": "stdout", "contains": "ready", "since": "start"}}},
            {"wait": {"until": {"assert": "stdout", "contains": "never printed"}, "timeoutMs": 600000}},
        ]),
    );
    let kill = async {
        first_step_done(&watcher, &id).await;
        signal(pid, 9);
    };
    let (r, ()) = tokio::join!(run, kill);
    println!("{}", r.text);
    assert!(!r.is_error, "{}", r.text);
    assert_eq!(r.value["failure"]["step"], 2, "{}", r.text);
    let actual = r.value["failure"]["actual"].as_str().unwrap();
    assert!(
        actual.contains("the program was killed by SIGKILL (signal 9)")
            && actual.contains("while waiting"),
        "{actual}"
    );
    assert!(
        r.text
            .contains("killed by SIGKILL (signal 9), sent from outside Strobe, while waiting for"),
        "{}",
        r.text
    );
    assert!(r.text.contains("The session is over"), "{}", r.text);
    assert!(!running(pid));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wait_ends_when_the_session_is_stopped() {
    let env = Env::new();
    let c = env.client().await;
    let watcher = env.client().await;
    let project = tempfile::tempdir().unwrap();
    let (id, pid) = repl(&c, project.path()).await;

    let run = scenario(&c, &id, json!([{"wait": 0}, {"wait": 600000}]));
    let stop = async {
        first_step_done(&watcher, &id).await;
        watcher
            .ok("debug_session", json!({"action": "stop", "sessionId": id}))
            .await;
    };
    let (r, ()) = tokio::join!(run, stop);
    println!("{}", r.text);
    assert!(!r.is_error, "{}", r.text);
    assert_eq!(r.value["failure"]["step"], 2, "{}", r.text);
    let actual = r.value["failure"]["actual"].as_str().unwrap();
    assert!(
        actual.contains("the session was stopped (debug_session stop)")
            && actual.contains("into a 600000 ms wait"),
        "{actual}"
    );
    assert!(!running(pid));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scenario_in_an_unknown_session_is_session_not_found() {
    let env = Env::new();
    let c = env.client().await;
    for args in [
        json!({"sessionId": "no-such-session", "scenario": {"steps": [{"wait": 0}]}}),
        json!({"sessionId": "no-such-session", "scenarioFile": "any"}),
    ] {
        let r = c.reply("debug_test_scenario", args).await;
        assert!(
            r.error_text().starts_with("SESSION_NOT_FOUND"),
            "{}",
            r.text
        );
    }
}
