//! Breakpoints, logpoints and stepping end to end, through MCP on a real
//! program under Frida: function and line breakpoints, conditions, hit
//! counts, paused-thread status with arguments and backtrace, locals read
//! and written, step over / into / out (with recursion), threads pausing at
//! one breakpoint while the rest of the program runs, logpoints on the
//! timeline, and the errors an agent can make.

mod support;

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::{Client, Env, fixture_with};

/// The line of `tests/fixtures/debugee.c` holding `@marker`.
fn line_of(marker: &str) -> u64 {
    support::marker_line(include_str!("fixtures/debugee.c"), marker)
}

async fn wait_paused(c: &Client, id: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = c.status(id).await;
        let paused = s["pausedThreads"].as_array().cloned().unwrap_or_default();
        if paused.len() >= count {
            return paused;
        }
        assert!(Instant::now() < deadline, "not {count} paused threads: {s}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn read(c: &Client, id: &str, names: &[&str]) -> Vec<Value> {
    let targets: Vec<Value> = names.iter().map(|n| json!({"variable": n})).collect();
    c.ok("debug_memory", json!({"sessionId": id, "targets": targets}))
        .await["results"]
        .as_array()
        .unwrap()
        .clone()
}

async fn step(c: &Client, id: &str, action: &str) -> Value {
    let v = c
        .ok("debug_continue", json!({"sessionId": id, "action": action}))
        .await;
    assert_eq!(v["status"], "paused", "{action}: {v}");
    v
}

#[tokio::test(flavor = "multi_thread")]
async fn breakpoints_pause_show_the_frame_and_step_over_into_and_out() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture_with("debugee", &["-pthread"]);
    let (id, _pid) = c.launch(&exe, &[]).await;

    let v = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"function": "compute"}]}),
        )
        .await;
    let bp = &v["breakpoints"][0];
    assert_eq!(bp["id"], "bp-1", "{v}");
    assert_eq!(bp["function"], "compute");
    assert_eq!(
        bp["line"],
        line_of("compute-body"),
        "stops after the prologue: {v}"
    );

    // The hit: paused thread with breakpoint, line, typed argument, backtrace.
    let paused = wait_paused(&c, &id, 1).await;
    let p = &paused[0];
    assert_eq!(p["breakpointId"], "bp-1", "{p}");
    assert_eq!(p["function"], "compute");
    assert_eq!(p["line"], line_of("compute-body"));
    assert_eq!(p["arguments"][0]["name"], "x", "{p}");
    let x = p["arguments"][0]["value"].as_i64().expect("x is typed");
    let frames: Vec<&str> = p["backtrace"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert!(frames.iter().any(|f| f.starts_with("main")), "{frames:?}");

    // Status text names the pause.
    let s = c
        .reply(
            "debug_session",
            json!({"action": "status", "sessionId": id}),
        )
        .await;
    assert!(s.text.contains("paused (bp-1) in compute"), "{}", s.text);

    // Locals of the paused frame through debug_memory (a global still resolves).
    let r = read(&c, &id, &["x", "g_config.origin"]).await;
    assert_eq!(r[0]["value"], x, "{r:?}");
    assert_eq!(r[0]["local"], true);
    assert_eq!(r[1]["value"]["y"], 4, "{r:?}");

    // The breakpoint stays while we step, so remove it first.
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "remove": ["bp-1"]}),
    )
    .await;

    let v = step(&c, &id, "step-over").await;
    assert_eq!(v["line"], line_of("compute-call"), "{v}");
    assert_eq!(v["function"], "compute");
    assert_eq!(read(&c, &id, &["doubled"]).await[0]["value"], 2 * x);

    let v = step(&c, &id, "step-into").await;
    assert_eq!(v["function"], "square", "step into enters the callee: {v}");
    assert_eq!(v["line"], line_of("square-body"));
    assert_eq!(read(&c, &id, &["v"]).await[0]["value"], 2 * x);

    let v = step(&c, &id, "step-out").await;
    assert_eq!(v["function"], "compute", "{v}");
    assert_eq!(
        v["line"],
        line_of("compute-after"),
        "step out finishes the caller's line: {v}"
    );
    assert_eq!(read(&c, &id, &["sq"]).await[0]["value"], 4 * x * x);

    // Write a local, then see the program use it.
    let w = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "action": "write", "targets": [{"variable": "sq", "value": 41}]}),
        )
        .await;
    assert_eq!(w["results"][0]["newValue"], 41, "{w}");
    let v = step(&c, &id, "step-over").await;
    assert_eq!(v["line"], line_of("compute-return"));
    assert_eq!(read(&c, &id, &["total"]).await[0]["value"], 42);

    // Step over the last lines: the step ends in the caller, on its next line.
    step(&c, &id, "step-over").await;
    let v = step(&c, &id, "step-over").await;
    assert_eq!(v["function"], "main", "{v}");
    assert!(v["line"].as_u64().unwrap() > line_of("main-compute"), "{v}");

    // Continue: nothing else is set, so it runs (the wait times out) and nothing is paused.
    let v = c
        .ok(
            "debug_continue",
            json!({"sessionId": id, "action": "continue", "timeoutMs": 300}),
        )
        .await;
    assert_eq!(v["status"], "running", "{v}");
    assert!(c.status(&id).await.get("pausedThreads").is_none());

    // Recursion: a conditional breakpoint in the deepest frame, then step out
    // returns to the frame above (not to another recursion level).
    let v = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"function": "fact", "condition": "n == 1"}]}),
        )
        .await;
    let fact_bp = v["breakpoints"][0]["id"].as_str().unwrap().to_string();
    let p = &wait_paused(&c, &id, 1).await[0];
    assert_eq!(p["arguments"][0]["value"], 1, "the condition held: {p}");
    let depth = p["backtrace"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["name"] == "fact")
        .count();
    assert!(depth >= 4, "fact(4) → fact(1) is 4 frames deep: {p}");
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "remove": [fact_bp]}),
    )
    .await;
    let v = step(&c, &id, "step-out").await;
    assert_eq!(v["function"], "fact", "{v}");
    assert_eq!(v["line"], line_of("fact-return"), "{v}");
    assert_eq!(read(&c, &id, &["n", "below"]).await[0]["value"], 2);

    // Hit count: pauses from the 3rd hit on.
    let v = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"file": "debugee.c", "line": line_of("square-body"), "hitCount": 3}]}),
        )
        .await;
    assert_eq!(v["breakpoints"][0]["function"], "square");
    c.ok(
        "debug_continue",
        json!({"sessionId": id, "action": "continue", "timeoutMs": 5000}),
    )
    .await;
    let s = c.status(&id).await;
    let bp = &s["breakpoints"][0];
    assert_eq!(bp["hits"], 3, "{s}");
    assert_eq!(s["pausedThreads"][0]["breakpointId"], bp["id"]);

    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn threads_pause_alone_and_logpoints_log_without_pausing() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture_with("debugee", &["-pthread"]);
    let (id, _pid) = c.launch(&exe, &["3"]).await;

    // Three workers hit the same breakpoint; each pauses on its own while main runs on.
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "add": [{"function": "worker_tick"}]}),
    )
    .await;
    let paused = wait_paused(&c, &id, 3).await;
    let mut tids: Vec<u64> = paused
        .iter()
        .map(|p| p["threadId"].as_u64().unwrap())
        .collect();
    tids.dedup();
    assert_eq!(tids.len(), 3, "{paused:?}");
    let ids: Vec<i64> = {
        let mut v: Vec<i64> = paused
            .iter()
            .map(|p| p["arguments"][0]["value"].as_i64().unwrap())
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids, vec![0, 1, 2], "each worker's own id: {paused:?}");
    let before = c.events(&id, Some("stdout")).await.len();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = c.events(&id, Some("stdout")).await.len();
    assert!(
        after > before,
        "main keeps printing while workers are paused"
    );

    // A step needs to know which thread.
    let e = c
        .reply(
            "debug_continue",
            json!({"sessionId": id, "action": "step-over"}),
        )
        .await;
    assert!(e.error_text().contains("threadId"), "{}", e.text);

    // Logpoint with a template over parameters, a local struct's field and a global.
    let v = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "remove": ["bp-1"], "add": [
                {"function": "square", "message": "v={v} first={args[0]} name={g_config.name}", "condition": "v % 4 == 0"}
            ]}),
        )
        .await;
    assert_eq!(v["breakpoints"].as_array().unwrap().len(), 1, "{v}");
    let v = c
        .ok(
            "debug_continue",
            json!({"sessionId": id, "action": "continue", "timeoutMs": 300}),
        )
        .await;
    assert_eq!(v["resumed"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(v["status"], "running", "logpoints never pause: {v}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let logs = loop {
        let logs = c.events(&id, Some("logpoint")).await;
        if logs.len() >= 3 || Instant::now() > deadline {
            break logs;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(logs.len() >= 3, "{logs:?}");
    let text = logs[0].to_string();
    assert!(text.contains("name=debugee"), "{text}");
    for l in &logs {
        let msg = l.to_string();
        let v: i64 = msg
            .split("v=")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{msg}"));
        assert_eq!(v % 4, 0, "the condition filters: {msg}");
        assert!(msg.contains(&format!("first={v}")), "{msg}");
    }
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn breakpoint_mistakes_get_clear_errors() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture_with("debugee", &["-pthread"]);
    let (id, _pid) = c.launch(&exe, &[]).await;
    let add = |spec: Value| json!({"sessionId": id, "add": [spec]});

    let e = c
        .reply("debug_breakpoint", add(json!({"function": "no_such_fn"})))
        .await;
    assert!(e.error_text().contains("no function matches"), "{}", e.text);
    let e = c.reply("debug_breakpoint", add(json!({"line": 3}))).await;
    assert!(e.error_text().contains("'line' needs 'file'"), "{}", e.text);
    let e = c
        .reply(
            "debug_breakpoint",
            add(json!({"file": "debugee.c", "line": 100000})),
        )
        .await;
    assert!(e.error_text().contains("no code at or after"), "{}", e.text);
    let e = c
        .reply(
            "debug_breakpoint",
            add(json!({"function": "compute", "condition": "x >"})),
        )
        .await;
    assert!(e.error_text().contains("could not set"), "{}", e.text);
    let e = c
        .reply(
            "debug_breakpoint",
            json!({"sessionId": id, "remove": ["bp-99"]}),
        )
        .await;
    assert!(
        e.error_text().contains("no breakpoint or logpoint"),
        "{}",
        e.text
    );
    let e = c.reply("debug_continue", json!({"sessionId": id})).await;
    assert!(e.error_text().contains("no thread"), "{}", e.text);
    let e = c
        .reply("debug_continue", json!({"sessionId": id, "action": "jump"}))
        .await;
    assert!(e.error_text().contains("step-over"), "{}", e.text);

    // A line without code moves to the next line that has some, and says so.
    let blank = line_of("main-compute") + 6;
    let v = c
        .ok(
            "debug_breakpoint",
            add(json!({"file": "debugee.c", "line": blank})),
        )
        .await;
    let bp = &v["breakpoints"][0];
    assert!(bp["line"].as_u64().unwrap() > blank, "{v}");
    assert!(bp["note"].as_str().unwrap().contains("moved"), "{v}");

    // Limits: 50 breakpoints.
    let many: Vec<Value> = (0..50).map(|_| json!({"function": "square"})).collect();
    let e = c
        .reply("debug_breakpoint", json!({"sessionId": id, "add": many}))
        .await;
    assert!(e.error_text().contains("at most 50"), "{}", e.text);

    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_line_breakpoint_lands_only_in_the_file_named() {
    let env = Env::new();
    let c = env.client().await;
    let exe = support::compile_with("lgammaf_main.c", "gcc", &["-g", "-O0", "--", "-lm"]);
    let (id, _pid) = c.launch(&exe, &[]).await;
    // libm (with libc6-dbg installed) has w_lgammaf_main.c, with code at
    // line 24 too: a file name is matched by whole path components.
    let v = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"file": "lgammaf_main.c", "line": 24}]}),
        )
        .await;
    let bp = &v["breakpoints"][0];
    assert_eq!(bp["function"], "tick", "{v}");
    assert_eq!(bp["addresses"].as_array().unwrap().len(), 1, "{v}");
    assert!(
        bp["file"].as_str().unwrap().ends_with("/lgammaf_main.c"),
        "{v}"
    );
    let paused = wait_paused(&c, &id, 1).await;
    assert_eq!(paused[0]["function"], "tick", "{paused:?}");
    assert_eq!(paused[0]["line"], 24);
    // A tail that is not a whole file name finds nothing.
    let e = c
        .reply(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"file": "f_main.c", "line": 24}]}),
        )
        .await;
    assert!(e.error_text().contains("no code at or after"), "{}", e.text);
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_short_program_stops_at_staged_breakpoints_and_on_entry() {
    let env = Env::new();
    let c = env.client().await;
    // trace_c ends within milliseconds: too soon for a breakpoint set after launch.
    let exe = support::fixture("trace_c");
    let root = exe.parent().unwrap();
    let v = c
        .ok("debug_breakpoint", json!({"add": [{"function": "fib"}]}))
        .await;
    assert_eq!(v["mode"], "staged", "{v}");
    assert_eq!(v["staged"][0]["id"], "staged-1", "{v}");

    let launch = c
        .ok("debug_launch", json!({"command": exe, "projectRoot": root}))
        .await;
    assert_eq!(launch["pendingBreakpointsApplied"], 1, "{launch}");
    let id = launch["sessionId"].as_str().unwrap().to_string();
    let paused = wait_paused(&c, &id, 1).await;
    assert_eq!(paused[0]["function"], "fib", "{paused:?}");
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "remove": ["bp-1"]}),
    )
    .await;
    c.ok("debug_continue", json!({"sessionId": id})).await;
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);

    // Staged breakpoints are removed by their staged id, and say which exist.
    let r = c
        .reply("debug_breakpoint", json!({"remove": ["staged-9"]}))
        .await;
    assert!(r.error_text().contains("staged-1"), "{}", r.text);
    let v = c
        .ok("debug_breakpoint", json!({"remove": ["staged-1"]}))
        .await;
    assert_eq!(v["staged"], json!([]), "{v}");

    // stopOnEntry: the launch answers with the main thread paused in main.
    let r = c
        .reply(
            "debug_launch",
            json!({"command": exe, "projectRoot": root, "stopOnEntry": true}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text);
    let v = &r.value;
    assert!(v.get("pendingBreakpointsApplied").is_none(), "{v}");
    assert_eq!(v["paused"]["function"], "main", "{v}");
    assert!(
        v["paused"]["file"].as_str().unwrap().ends_with("trace_c.c"),
        "{v}"
    );
    assert!(r.text.contains("Paused in main"), "{}", r.text);
    let id = v["sessionId"].as_str().unwrap().to_string();
    assert_eq!(
        c.events(&id, Some("stdout")).await.len(),
        0,
        "nothing ran yet"
    );
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "remove": [v["paused"]["breakpointId"]]}),
    )
    .await;
    c.ok("debug_continue", json!({"sessionId": id})).await;
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);
    assert!(!c.events(&id, Some("stdout")).await.is_empty());

    // An attached process is past main.
    let r = c
        .reply(
            "debug_launch",
            json!({"attachPid": std::process::id(), "projectRoot": root, "stopOnEntry": true}),
        )
        .await;
    assert!(r.error_text().contains("stopOnEntry"), "{}", r.text);
}

/// Pauses thread `tid`, retrying while it happens to be between system
/// calls (running the program's code for a moment).
async fn pause(c: &Client, id: &str, tid: u32) -> Value {
    for _ in 0..50 {
        let r = c
            .reply(
                "debug_continue",
                json!({"sessionId": id, "action": "pause", "threadId": tid}),
            )
            .await;
        if !r.is_error {
            return r.value;
        }
        assert!(r.text.contains("running the program's code"), "{}", r.text);
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    panic!("thread {tid} was never found waiting in a system call");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_thread_pauses_where_its_system_call_returns_and_a_busy_one_is_refused() {
    let env = Env::new();
    let c = env.client().await;
    let debugee = fixture_with("debugee", &["-pthread"]);
    let (id, pid) = c.launch(&debugee, &["1"]).await;
    c.wait_stdout(&id).await;

    // main sleeps in usleep between rounds: it pauses where usleep returns.
    let v = pause(&c, &id, pid).await;
    let usleep_in_main = include_str!("fixtures/debugee.c")
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("usleep(20000);"))
        .last()
        .unwrap()
        .0 as u64
        + 1;
    // At the return address: the rest of the usleep line, or (usleep being
    // the loop body's last call) the loop's increment, as the compiler's
    // line table says.
    let loop_line = include_str!("fixtures/debugee.c")
        .lines()
        .position(|l| l.contains("for (int round"))
        .unwrap() as u64
        + 1;
    assert_eq!(v["status"], "paused", "{v}");
    assert_eq!(
        (v["reason"].clone(), v["function"].clone()),
        (json!("pause"), json!("main")),
        "{v}"
    );
    assert!(
        [usleep_in_main, loop_line].contains(&v["line"].as_u64().unwrap()),
        "{v}"
    );
    // The agent's status shows the same pause, and main does no more rounds.
    let s = c.status(&id).await;
    let paused = s["pausedThreads"].as_array().unwrap();
    assert!(
        paused
            .iter()
            .any(|p| p["threadId"] == pid && p["reason"] == "pause"),
        "{s}"
    );
    let rounds = c.stdout_lines(&id).await.len();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(c.stdout_lines(&id).await.len(), rounds, "main is paused");
    // Mistakes.
    let again = c
        .reply(
            "debug_continue",
            json!({"sessionId": id, "action": "pause", "threadId": pid}),
        )
        .await;
    assert!(
        again.error_text().contains("already paused"),
        "{}",
        again.text
    );
    let none = c
        .reply(
            "debug_continue",
            json!({"sessionId": id, "action": "pause"}),
        )
        .await;
    assert!(
        none.error_text().contains("needs 'threadId'"),
        "{}",
        none.text
    );
    let stranger = c
        .reply(
            "debug_continue",
            json!({"sessionId": id, "action": "pause", "threadId": 1}),
        )
        .await;
    assert!(
        stranger.error_text().contains("not a thread of session"),
        "{}",
        stranger.text
    );
    // Continued, it runs on.
    c.ok(
        "debug_continue",
        json!({"sessionId": id, "threadId": pid, "timeoutMs": 1}),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.stdout_lines(&id).await.len() <= rounds {
        assert!(Instant::now() < deadline, "main never ran on");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;

    // A thread busy in the program's own code is not stopped from outside.
    let busy = fixture_with("bp_loop", &[]);
    let (id, pid) = c.launch(&busy, &["2000000000", "0"]).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = c
        .reply(
            "debug_continue",
            json!({"sessionId": id, "action": "pause", "threadId": pid}),
        )
        .await;
    assert!(r.error_text().contains("set a breakpoint"), "{}", r.text);
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}
