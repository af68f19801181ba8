//! What tracing must never do to a program or to its evidence: take it
//! down with a pattern that matches everything, let trace load evict its
//! output, or hang on (and misreport) a program stopped by a signal. Real
//! targets under real Frida, through MCP.

mod support;

use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use support::{Client, Env, fixture, fixture_with};

#[tokio::test(flavor = "multi_thread")]
async fn trace_load_evicts_calls_but_never_the_programs_output() {
    // 100,000 traced calls (200,000 events) against a cap of 2,000 calls.
    let env = Env::with_settings(json!({"events.maxPerSession": 2_000}));
    let c = env.client().await;
    c.ok("debug_trace", json!({"add": ["work"], "sampling": false}))
        .await;
    let exe = fixture("chatty_loop");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let s = c.wait_ended(&id).await;
    assert_eq!(s["exitCode"], 0, "{s}");
    let evicted = s["events"]["evicted"].as_u64().unwrap();
    assert!(evicted >= 190_000, "the calls were evicted: {s}");
    assert_eq!(s["events"]["evictedOutput"], 0, "{s}");

    let out = c.query_all(&id, json!({"eventType": "stdout"})).await;
    assert_eq!(out.len(), 100, "every output line is kept");
    assert_eq!(out[0]["text"], "progress 0");
    assert_eq!(out[99]["text"], "progress 99000");
    let err = c.events(&id, Some("stderr")).await;
    assert!(err[0]["text"].as_str().unwrap().starts_with("done"));
    let exits = c.query_all(&id, json!({"eventType": "process_exit"})).await;
    assert_eq!(exits.len(), 1);

    // The reply says which events went and which setting keeps more.
    let q = c
        .reply(
            "debug_query",
            json!({"sessionId": id, "eventType": "stdout", "limit": 5}),
        )
        .await;
    let text = &q.text;
    assert!(
        text.contains("function calls were evicted") && text.contains("events.maxPerSession"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_patterns_never_take_the_program_down() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("ticker");
    let (id, pid) = c.launch(&exe, &["-1", "20"]).await;
    let alive = || Path::new(&format!("/proc/{pid}")).exists();
    for pattern in ["**", "**::**::**"] {
        let r = c
            .reply("debug_trace", json!({"sessionId": id, "add": [pattern]}))
            .await;
        assert!(!r.is_error, "{pattern}: {}", r.text);
        let warnings = r.value["warnings"].to_string();
        assert!(
            warnings.contains("left out") && warnings.contains("libc.so.6"),
            "{pattern}: says what it left out and how to reach it: {warnings}"
        );
        assert!(
            r.value["hookedFunctions"].as_u64().unwrap() >= 3,
            "{}",
            r.value
        );
        ticks_go_on(&c, &id).await;
        assert!(alive(), "{pattern} killed the program");
        c.ok("debug_trace", json!({"sessionId": id, "remove": [pattern]}))
            .await;
    }
    // A prefix reaches libc, but never the functions the hook itself calls.
    let r = c
        .reply(
            "debug_trace",
            json!({"sessionId": id, "add": ["pthread_*"]}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text);
    let warnings = r.value["warnings"].to_string();
    assert!(
        warnings.contains("pthread_getspecific") && warnings.contains("not hooked"),
        "{warnings} {}",
        r.value
    );
    ticks_go_on(&c, &id).await;
    assert!(alive(), "pthread_* killed the program");
    c.ok("debug_trace", json!({"sessionId": id, "add": ["**"]}))
        .await;
    ticks_go_on(&c, &id).await;
    let calls = c
        .query_all(
            &id,
            json!({"eventType": "function_enter", "function": {"equals": "tick_work"}}),
        )
        .await;
    assert!(!calls.is_empty(), "the program's own calls are traced");
    assert_eq!(c.status(&id).await["state"], "running");
}

/// Waits until the ticker prints three more ticks (it is alive and running
/// its traced code), for at most 20 s.
async fn ticks_go_on(c: &Client, id: &str) {
    let count = |v: Value| v["totalCount"].as_u64().unwrap_or(0);
    let q = json!({"sessionId": id, "eventType": "stdout", "limit": 1});
    let before = count(c.ok("debug_query", q.clone()).await);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while count(c.ok("debug_query", q.clone()).await) < before + 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the program stopped printing ticks"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopped_program_says_so_and_tracing_waits_for_it() {
    // A request timeout long enough that waiting for it would hang the test:
    // the answer must come from seeing the stop, not from timing out.
    let env = Env::with_settings(json!({"bridge.requestTimeoutMs": 600_000}));
    let c = env.client().await;
    let exe = fixture("ticker");
    let (id, pid) = c.launch(&exe, &["-1", "20"]).await;
    support::signal(pid, 19); // SIGSTOP
    // Every thread, not only the main one: the group stop reaches each in
    // turn, and the status asks about all of them (under load the main
    // thread was seen stopped while an agent thread was not yet).
    assert!(support::wait_until(Duration::from_secs(10), || {
        std::fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|tasks| {
            tasks.flatten().all(|t| {
                std::fs::read_to_string(t.path().join("stat"))
                    .is_ok_and(|s| s[s.rfind(')').unwrap() + 2..].starts_with('T'))
            })
        })
    }));
    let s = c
        .reply(
            "debug_session",
            json!({"action": "status", "sessionId": id}),
        )
        .await;
    assert!(
        s.value["stopped"].as_str().unwrap().contains("kill -CONT"),
        "{}",
        s.value
    );
    assert!(s.text.contains("stopped by a signal"), "{}", s.text);

    let r = c
        .reply(
            "debug_trace",
            json!({"sessionId": id, "add": ["tick_work"]}),
        )
        .await;
    assert!(
        r.error_text().contains("PROCESS_STOPPED") || r.value["error"]["code"] == "PROCESS_STOPPED",
        "{}",
        r.text
    );
    assert!(r.text.contains(&format!("kill -CONT {pid}")), "{}", r.text);

    support::signal(pid, 18); // SIGCONT
    ticks_go_on(&c, &id).await;
    let s = c.status(&id).await;
    assert!(s.get("stopped").is_none(), "{s}");
    assert_eq!(
        s["trace"]["hookedFunctions"].as_u64().unwrap_or(0),
        0,
        "the refused request changed nothing, before or after SIGCONT: {s}"
    );
    let t = c
        .ok(
            "debug_trace",
            json!({"sessionId": id, "add": ["tick_work"]}),
        )
        .await;
    assert_eq!(t["hookedFunctions"], 1);
    assert_eq!(c.status(&id).await["trace"]["hookedFunctions"], 1);
}

/// A thread loading a library while patterns are active waits for the
/// library's hooks inside dlopen, holding the loader's lock: at most
/// `trace.libraryWaitMs`. Past it the load goes on (a Frida thread needing
/// that lock can never hang the program), the hooks go in when they come,
/// and the session's status names the library. At 0 the loader never waits.
#[tokio::test(flavor = "multi_thread")]
async fn a_library_load_never_waits_longer_than_the_limit_and_its_hooks_still_go_in() {
    let env = Env::with_settings(json!({"trace.libraryWaitMs": 0}));
    let c = env.client().await;
    let (exe, plugin, dir) = support::dl_fixture();
    let work = tempfile::tempdir().unwrap();
    let go = work.path().join("go");
    c.ok("debug_trace", json!({"add": ["plugin_entry"]})).await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": [plugin, "0", go], "projectRoot": dir}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    // The plugin's load went on without waiting; its hooks came after.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let late = loop {
        let st = c.status(&id).await;
        let hooked =
            c.ok("debug_trace", json!({"sessionId": id})).await["hookedFunctions"].as_u64();
        if let Some(late) = st["trace"]["lateLibraries"]
            .as_array()
            .filter(|l| !l.is_empty())
            && hooked == Some(1)
        {
            break late.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no late library, or no hooks: {st}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        std::fs::canonicalize(late[0]["path"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(&plugin).unwrap(),
        "{late:?}"
    );
    assert!(late[0]["waitedMs"].is_u64(), "{late:?}");
    std::fs::write(&go, "").unwrap();
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);
    let exits = c.calls_of(&id, "function_exit", "plugin_entry").await;
    assert!(
        exits.iter().any(|e| e["returnValue"] == 103),
        "the call after the hooks came is traced: {exits:?}"
    );
}

/// The line of `tests/fixtures/scanner.c` holding `@marker`.
fn scanner_line(marker: &str) -> u64 {
    support::marker_line(include_str!("fixtures/scanner.c"), marker)
}

/// Both of glibc's sscanf entry points.
const SSCANF: [&str; 2] = ["sscanf", "__isoc99_sscanf"];
/// What Frida's own threads (its main loop, its D-Bus link to the daemon)
/// call all the time and the scanner never does.
const FRIDAS: [&str; 4] = ["poll", "ppoll", "recvmsg", "sendmsg"];

#[tokio::test(flavor = "multi_thread")]
async fn strobes_own_libc_calls_are_never_the_programs_and_stepping_over_a_traced_call_is_safe() {
    // Frida reads /proc/self/maps with sscanf whenever Strobe asks it for
    // the memory map (adding a breakpoint, stepping): with sscanf traced,
    // those calls entered the program's hooks, were recorded as the
    // program's (hundreds per breakpoint) and a step-over killed it.
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture_with("scanner", &[]);
    let (id, pid) = c.launch(&exe, &[]).await;
    c.ok(
        "debug_trace",
        json!({"sessionId": id, "add": SSCANF.iter().chain(&FRIDAS).collect::<Vec<_>>(), "sampling": false}),
    )
    .await;
    c.wait_stdout(&id).await;
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "add": [{"file": "scanner.c", "line": scanner_line("parse-scan")}]}),
    )
    .await;
    let p = c.wait_paused(&id).await;
    assert_eq!(p["line"], scanner_line("parse-scan"), "{p:?}");
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "remove": ["bp-1"]}),
    )
    .await;

    // Over the traced sscanf call, twice round the loop's body.
    let v = c.step(&id, "step-over").await;
    assert_eq!(v["line"], scanner_line("parse-sum"), "{v}");
    let v = c.step(&id, "step-over").await;
    assert_eq!(v["function"], "parse_pair", "{v}");
    let s = c.status(&id).await;
    assert_eq!(
        s["state"], "running",
        "the step left the program alive: {s}"
    );
    c.ok(
        "debug_continue",
        json!({"sessionId": id, "action": "continue", "timeoutMs": 300}),
    )
    .await;
    let before = c.stdout_lines(&id).await.len();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while c.stdout_lines(&id).await.len() < before + 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the program stopped printing"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.ok(
        "debug_session",
        json!({"action": "stop", "sessionId": id, "retain": true}),
    )
    .await;

    // Every recorded sscanf is the program's: one per line it printed (plus
    // the one in flight when it was stopped), all on its main thread.
    let printed = c.stdout_lines(&id).await.len();
    // The program's sscanf is glibc's C99 one (__isoc99_sscanf), Frida's the
    // old one: both are traced, and every call of either is counted.
    let mut calls = Vec::new();
    for name in SSCANF {
        calls.extend(c.calls_of(&id, "function_enter", name).await);
    }
    assert!(!calls.is_empty(), "the program's own calls are recorded");
    assert!(
        calls.len() <= printed + 1,
        "{} sscanf calls recorded for {printed} lines printed: Strobe's own calls were recorded",
        calls.len()
    );
    for e in &calls {
        assert_eq!(e["threadId"], pid, "a call on another thread: {e}");
    }
    for name in FRIDAS {
        let calls = c.calls_of(&id, "function_enter", name).await;
        assert!(
            calls.is_empty(),
            "Frida's {name} calls recorded: {} of {:?}: {:?}",
            calls.len(),
            calls.first().map(|e| &e["threadId"]),
            calls.last().map(|e| &e["threadId"])
        );
    }
}
