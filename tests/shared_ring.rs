//! Records delivered from the target's shared ring straight to the store
//! (the daemon maps the agent's memfd and drains it): lossless past the
//! ring's size with back-pressure, through a `kill -9`, and the message
//! path kept as the fallback (`trace.sharedRing: false`). Real targets
//! under Frida, over MCP through the real proxy.

mod support;

use serde_json::{Value, json};
use support::{Client, Env, fixture};

/// How many `function` calls (exits) the session stored, counted exactly.
async fn exits(c: &Client, id: &str, function: &str) -> u64 {
    let q = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "function_exit",
                   "function": {"equals": function}, "limit": 1, "exactCount": true}),
        )
        .await;
    q["totalCount"].as_u64().unwrap_or_else(|| panic!("{q}"))
}

/// Runs hot_loop with `n` calls of `tiny` traced; its final status.
async fn hot_loop(c: &Client, n: u64) -> (String, Value) {
    c.ok("debug_trace", json!({"add": ["tiny"], "sampling": false}))
        .await;
    let exe = fixture("hot_loop");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap(),
                   "env": {"HOT_LOOP_N": n.to_string()}}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    (id, st)
}

#[tokio::test(flavor = "multi_thread")]
async fn records_past_the_rings_size_all_arrive_from_shared_memory() {
    let env = Env::with_settings(json!({"events.maxPerSession": 1_000_000}));
    let c = env.client().await;
    // 300,000 calls are 600,000 records: the 262,144-slot ring wraps and
    // fills, and the loop waits for the daemon instead of losing any.
    let (id, st) = hot_loop(&c, 300_000).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    assert_eq!(st["trace"]["delivery"], "shared memory", "{st}");
    // The hook's machine-code fast path found the thread's state (it was
    // once silently off: docs/BENCHMARKS.md, 2026-11-29).
    assert_eq!(st["trace"]["slowHook"], Value::Null, "{st}");
    assert_eq!(st["events"]["dropped"], 0, "{st}");
    assert_eq!(st["events"]["evicted"], 0, "{st}");
    assert_eq!(exits(&c, &id, "tiny").await, 300_000);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_shared_ring_off_records_come_in_messages_as_before() {
    let env =
        Env::with_settings(json!({"trace.sharedRing": false, "events.maxPerSession": 1_000_000}));
    let c = env.client().await;
    let (id, st) = hot_loop(&c, 300_000).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    assert_eq!(
        st["trace"]["delivery"], "messages (trace.sharedRing is off)",
        "{st}"
    );
    assert_eq!(st["events"]["dropped"], 0, "{st}");
    assert_eq!(st["events"]["evicted"], 0, "{st}");
    assert_eq!(exits(&c, &id, "tiny").await, 300_000);
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_committed_before_a_kill_9_are_all_stored() {
    // The program kills itself with SIGKILL right after a burst of 100,000
    // calls: nothing in it runs after that, so the last records are still
    // in the ring. The daemon's mapping outlives the process and its last
    // pass stores them (shipped in messages every 2 ms, they were lost).
    let env = Env::new();
    let c = env.client().await;
    c.ok("debug_trace", json!({"add": ["tick"], "sampling": false}))
        .await;
    let exe = fixture("burst_kill");
    let (id, _) = c.launch(&exe, &["100000"]).await;
    let st = c.wait_ended(&id).await;
    assert!(
        st["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("SIGKILL"),
        "{st}"
    );
    assert_eq!(st["trace"]["delivery"], "shared memory", "{st}");
    assert_eq!(st["events"]["dropped"], 0, "{st}");
    assert_eq!(exits(&c, &id, "tick").await, 100_000);
    let out = c.stdout_lines(&id).await;
    assert_eq!(out, ["ticks 100000"], "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_threads_last_calls_arrive_while_it_blocks() {
    // Five calls fill no thread's stage (stage.ts): they reach the ring
    // only because the agent's drain moves them there while the thread
    // sits blocked. Built without DWARF: with a capture plan the first
    // calls are typed, and typed records go to the ring directly.
    let env = Env::new();
    let c = env.client().await;
    c.ok("debug_trace", json!({"add": ["tick"], "sampling": false}))
        .await;
    let exe = support::fixture_with("calls_then_wait", &["-g0"]);
    let (id, _) = c.launch(&exe, &["5"]).await;
    c.wait_stdout(&id).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut seen = 0;
    while std::time::Instant::now() < deadline {
        seen = exits(&c, &id, "tick").await;
        if seen == 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        seen, 5,
        "the blocked thread's staged calls were never stored"
    );
    let st = c.status(&id).await;
    assert_eq!(st["state"], "running", "{st}");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn more_threads_than_stages_lose_nothing() {
    // 300 threads alive at once, twice: 256 take a stage each, the others
    // write to the ring directly, and the second wave reuses the stages
    // the first one's threads gave back as they ended. Without DWARF, so
    // no record is typed (typed ones bypass the stages).
    let env = Env::new();
    let c = env.client().await;
    c.ok("debug_trace", json!({"add": ["tick"], "sampling": false}))
        .await;
    let exe = support::fixture_with("many_threads", &["-pthread", "-g0"]);
    let (id, _) = c.launch(&exe, &["300", "20"]).await;
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    assert_eq!(st["events"]["dropped"], 0, "{st}");
    assert_eq!(exits(&c, &id, "tick").await, 24_000);
    let enters = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "function_enter",
                   "function": {"equals": "tick"}, "limit": 1, "exactCount": true}),
        )
        .await;
    assert_eq!(enters["totalCount"], 24_000, "{enters}");
    assert_eq!(c.stdout_lines(&id).await, ["threads 600 calls 24000"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_fast_path_off_calls_are_still_recorded_and_status_says_why() {
    // The program makes 40 pthread keys before anything is traced: the
    // agent's key (made with the first pattern) is past the 32 glibc keeps
    // in the thread's descriptor, so the hook cannot find the thread's
    // state from %fs and every call takes the slow path.
    let env = Env::new();
    let c = env.client().await;
    let exe = support::fixture_with("many_keys", &["-pthread", "-g0"]);
    let (id, _) = c.launch(&exe, &[]).await;
    c.wait_stdout(&id).await;
    c.ok(
        "debug_trace",
        json!({"sessionId": id, "add": ["work"], "sampling": false}),
    )
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut seen = 0;
    while std::time::Instant::now() < deadline && seen < 20 {
        seen = exits(&c, &id, "work").await;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(seen >= 20, "calls on the slow path are recorded: {seen}");
    let r = c
        .reply(
            "debug_session",
            json!({"action": "status", "sessionId": id}),
        )
        .await;
    let why = r.value["trace"]["slowHook"].as_str().unwrap_or_default();
    assert!(why.contains("pthread key"), "{}", r.value);
    assert!(
        r.text.contains("slow path") && r.text.contains(why),
        "the short text says so: {}",
        r.text
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}
