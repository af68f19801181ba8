//! Server-side waits end to end: `debug_query {waitMs}` and `debug_session
//! {action: "status", waitFor}` over MCP through the real `strobe mcp`
//! proxy, with a real target under Frida deciding when things happen (the
//! test creates the files `late_call` watches for).

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::{Client, Env, fixture};

/// A `late_call` session with `late_answer` traced: (session, go file,
/// quit file).
async fn late_call(c: &Client, env: &Env) -> (String, PathBuf, PathBuf) {
    let go = env.path().join("go");
    let quit = env.path().join("quit");
    let exe = fixture("late_call");
    let (id, _) = c
        .launch(&exe, &[go.to_str().unwrap(), quit.to_str().unwrap()])
        .await;
    c.wait_stdout(&id).await;
    c.ok(
        "debug_trace",
        json!({"sessionId": id, "add": ["late_answer", "never_called"]}),
    )
    .await;
    (id, go, quit)
}

/// Creates `file` after `after`, from another task.
fn touch_later(file: &Path, after: Duration) -> tokio::task::JoinHandle<()> {
    let file = file.to_path_buf();
    tokio::spawn(async move {
        tokio::time::sleep(after).await;
        std::fs::write(file, b"").unwrap();
    })
}

fn exits_of(id: &str, function: &str, wait_ms: u64) -> Value {
    json!({"sessionId": id, "eventType": "function_exit",
        "function": {"equals": function}, "waitMs": wait_ms})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_query_waits_for_a_return_that_comes_later_and_reports_progress() {
    let env = Env::new();
    let c = env.client().await;
    let (id, go, quit) = late_call(&c, &env).await;

    // Without waitMs: nothing yet, answered at once, no `wait`.
    let now = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "function_exit"}),
        )
        .await;
    assert_eq!(now["totalCount"], 0, "{now}");
    assert!(now.get("wait").is_none(), "{now}");

    c.take_progress();
    let trigger = touch_later(&go, Duration::from_secs(2));
    let r = c
        .reply("debug_query", exits_of(&id, "late_answer", 30_000))
        .await;
    trigger.await.unwrap();
    assert!(!r.is_error, "{}", r.text);
    let v = &r.value;
    assert_eq!(v["wait"]["outcome"], "matched", "{v}");
    assert!(v["wait"]["waitedMs"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["totalCount"], 1, "{v}");
    assert_eq!(v["events"][0]["returnValue"], 42, "{v}");
    assert!(
        r.text.starts_with("Waited ") && r.text.contains("a matching event was stored"),
        "{}",
        r.text
    );
    // The wait was over a second: the client heard at least one progress
    // notification about it, with the seconds waited growing.
    let notes = c.take_progress();
    assert!(!notes.is_empty(), "no progress while waiting");
    assert!(
        notes[0]
            .message
            .as_deref()
            .is_some_and(|m| m.contains("waiting for a matching event")),
        "{notes:?}"
    );
    assert!(notes.windows(2).all(|w| w[0].progress < w[1].progress));

    // Something already matches: answered at once.
    let again = c
        .ok("debug_query", exits_of(&id, "late_answer", 30_000))
        .await;
    assert_eq!(again["wait"]["outcome"], "matched");
    assert_eq!(again["wait"]["waitedMs"], 0, "{again}");

    std::fs::write(&quit, b"").unwrap();
    c.wait_ended(&id).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wait_times_out_or_ends_with_the_process_and_says_which() {
    let env = Env::new();
    let c = env.client().await;
    let (id, _go, quit) = late_call(&c, &env).await;

    let r = c
        .reply("debug_query", exits_of(&id, "never_called", 400))
        .await;
    assert!(!r.is_error, "{}", r.text);
    assert_eq!(r.value["wait"]["outcome"], "timeout", "{}", r.value);
    assert_eq!(r.value["totalCount"], 0);
    assert!(r.text.contains("still running"), "{}", r.text);

    // The process ends while the query waits: it answers then, long
    // before its 60 s.
    let trigger = touch_later(&quit, Duration::from_millis(800));
    let r = c
        .reply("debug_query", exits_of(&id, "never_called", 60_000))
        .await;
    trigger.await.unwrap();
    assert_eq!(r.value["wait"]["outcome"], "exited", "{}", r.value);
    assert!(r.value["wait"]["waitedMs"].as_u64().unwrap() < 60_000);
    assert!(r.text.contains("the process has ended"), "{}", r.text);

    // Waiting for the exit event itself matches it (it is stored before
    // the end is announced).
    let v = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "process_exit", "waitMs": 5_000}),
        )
        .await;
    assert_eq!(v["wait"]["outcome"], "matched", "{v}");

    // On an ended session nothing can come: no wait at all.
    let v = c
        .ok("debug_query", exits_of(&id, "never_called", 60_000))
        .await;
    assert_eq!(v["wait"]["outcome"], "exited", "{v}");
    assert_eq!(v["wait"]["waitedMs"], 0, "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn many_concurrent_waiters_all_wake_on_one_event() {
    let env = Env::new();
    let c = env.client().await;
    let other = env.client().await;
    let (id, go, quit) = late_call(&c, &env).await;

    let mut waiters = Vec::new();
    for i in 0..12 {
        let client = if i % 2 == 0 { &c } else { &other };
        waiters.push(client.reply("debug_query", exits_of(&id, "late_answer", 30_000)));
    }
    let trigger = touch_later(&go, Duration::from_millis(1500));
    let replies = futures_util::future::join_all(waiters).await;
    trigger.await.unwrap();
    for r in &replies {
        assert!(!r.is_error, "{}", r.text);
        assert_eq!(r.value["wait"]["outcome"], "matched", "{}", r.value);
        assert_eq!(r.value["events"][0]["returnValue"], 42, "{}", r.value);
    }
    std::fs::write(&quit, b"").unwrap();
    c.wait_ended(&id).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn status_waits_for_a_pause_or_the_exit() {
    let env = Env::new();
    let c = env.client().await;
    let (id, go, quit) = late_call(&c, &env).await;
    let status = |what: &str, ms: u64| json!({"action": "status", "sessionId": id, "waitFor": what, "waitMs": ms});

    let r = c.reply("debug_session", status("paused", 300)).await;
    assert_eq!(r.value["wait"]["outcome"], "timeout", "{}", r.value);
    assert_eq!(r.value["state"], "running");
    assert!(
        r.text.starts_with("No thread paused within waitMs"),
        "{}",
        r.text
    );

    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "add": [{"function": "late_answer"}]}),
    )
    .await;
    let trigger = touch_later(&go, Duration::from_millis(1000));
    let v = c.ok("debug_session", status("paused", 30_000)).await;
    trigger.await.unwrap();
    assert_eq!(v["wait"]["outcome"], "reached", "{v}");
    assert_eq!(v["wait"]["for"], "paused");
    assert_eq!(v["pausedThreads"][0]["function"], "late_answer", "{v}");
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "remove": ["bp-1"]}),
    )
    .await;
    c.ok(
        "debug_continue",
        json!({"sessionId": id, "action": "continue"}),
    )
    .await;

    let trigger = touch_later(&quit, Duration::from_millis(800));
    let v = c.ok("debug_session", status("exit", 30_000)).await;
    trigger.await.unwrap();
    assert_eq!(v["wait"]["outcome"], "reached", "{v}");
    assert_eq!(v["state"], "exited", "{v}");
    assert_eq!(v["exitCode"], 0, "{v}");

    // A pause can no longer come.
    let v = c.ok("debug_session", status("paused", 30_000)).await;
    assert_eq!(v["wait"]["outcome"], "exited", "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_wait_arguments_are_refused_with_the_fix() {
    let env = Env::new();
    let c = env.client().await;
    let (id, _go, quit) = late_call(&c, &env).await;
    let r = c
        .reply("debug_query", exits_of(&id, "late_answer", 60_001))
        .await;
    assert!(r.error_text().contains("at most 60000"), "{}", r.text);
    let r = c
        .reply(
            "debug_query",
            json!({"sessionId": id, "aggregate": "function", "waitMs": 100}),
        )
        .await;
    assert!(r.error_text().contains("without 'aggregate'"), "{}", r.text);
    let r = c
        .reply(
            "debug_session",
            json!({"action": "status", "sessionId": id, "waitFor": "crash"}),
        )
        .await;
    assert!(
        r.error_text().contains("\"exit\" or \"paused\""),
        "{}",
        r.text
    );
    let r = c
        .reply(
            "debug_session",
            json!({"action": "status", "sessionId": id, "waitMs": 100}),
        )
        .await;
    assert!(r.error_text().contains("needs 'waitFor'"), "{}", r.text);
    std::fs::write(&quit, b"").unwrap();
    c.wait_ended(&id).await;
}
