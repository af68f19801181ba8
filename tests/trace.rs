//! Function tracing end to end: patterns through MCP, hooks installed by the
//! real agent in real targets, events read back from the real store.

mod support;

use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use support::{Client, Env, fixture, fixture_with};

async fn trace(c: &Client, args: Value) -> Value {
    c.ok("debug_trace", args).await
}

/// Pages through every event matching `filter`.
async fn all(c: &Client, id: &str, filter: Value) -> Vec<Value> {
    c.query_all(id, filter).await
}

/// The id of the session's newest stored event.
async fn newest_id(c: &Client, id: &str) -> u64 {
    let total = c
        .ok("debug_query", json!({"sessionId": id, "limit": 1}))
        .await["totalCount"]
        .as_u64()
        .unwrap();
    let last = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "offset": total.saturating_sub(1), "limit": 1, "verbose": true}),
        )
        .await;
    last["events"][0]["id"].as_u64().expect("an event")
}

/// Names of every function entered in a session.
async fn entered_functions(c: &Client, id: &str) -> std::collections::HashSet<String> {
    all(c, id, json!({"eventType": "function_enter"}))
        .await
        .iter()
        .map(|e| e["function"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn pending_patterns_are_hooked_before_main_with_call_tree() {
    let env = Env::new();
    let c = env.client().await;
    let t = trace(&c, json!({"add": ["fib", "add"]})).await;
    assert_eq!(t["mode"], "pending");
    assert_eq!(t["activePatterns"], json!(["fib", "add"]));
    let exe = fixture("trace_c");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    assert_eq!(v["pendingPatternsApplied"], 2);
    let id = v["sessionId"].as_str().unwrap().to_string();
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);

    let adds = all(&c, &id, json!({"function": {"equals": "add"}})).await;
    assert_eq!(
        adds.len(),
        6,
        "3 calls of add from main's loop, enter + exit: {adds:?}"
    );
    let first = &adds[0];
    assert_eq!(first["eventType"], "function_enter");
    assert_eq!(
        first["sourceFile"].as_str().unwrap().rsplit('/').next(),
        Some("trace_c.c")
    );
    assert_eq!(first["line"], 11);
    assert_eq!(adds[1]["eventType"], "function_exit");
    assert!(adds[1]["durationNs"].as_u64().unwrap() > 0);

    let fib_enters = all(
        &c,
        &id,
        json!({"eventType": "function_enter", "function": {"equals": "fib"}}),
    )
    .await;
    assert_eq!(fib_enters.len(), 177, "fib(10) makes 177 calls, none lost");
    let top = &fib_enters[0];
    assert_eq!(
        top["arguments"],
        json!([{"name": "n", "type": "int", "value": 10}]),
        "typed from DWARF"
    );
    assert!(
        top.get("parentEventId").is_none(),
        "the outer call has no traced parent"
    );
    let by_id: std::collections::HashMap<u64, &Value> = fib_enters
        .iter()
        .map(|e| (e["id"].as_u64().unwrap(), e))
        .collect();
    for e in &fib_enters[1..] {
        let parent = e["parentEventId"]
            .as_u64()
            .expect("recursive calls have a parent");
        assert_eq!(
            by_id[&parent]["function"], "fib",
            "parent is the calling fib"
        );
    }
    let exits = all(&c, &id, json!({"eventType": "function_exit", "function": {"equals": "fib"}, "returnValue": {"equals": 55}})).await;
    assert_eq!(exits.len(), 1, "only fib(10) returns 55");
    assert!(exits[0].get("parentEventId").is_none());
    let slow = all(&c, &id, json!({"eventType": "function_exit", "function": {"equals": "fib"}, "minDurationNs": exits[0]["durationNs"]})).await;
    assert_eq!(slow.len(), 1, "the outermost call is the slowest");
    let zero = all(&c, &id, json!({"eventType": "function_exit", "function": {"equals": "fib"}, "returnValue": {"isNull": true}})).await;
    assert_eq!(zero.len(), 34, "fib(0) is reached 34 times in fib(10)");
    // One small response says what ran.
    let agg = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "aggregate": "function"}),
        )
        .await;
    let rows = agg["functions"].as_array().unwrap();
    assert_eq!(agg["totalFunctions"], 2);
    let fib = rows.iter().find(|r| r["function"] == "fib").unwrap();
    assert_eq!(
        (fib["calls"].as_u64(), fib["returns"].as_u64()),
        (Some(177), Some(177))
    );
    assert_eq!(fib["returnedZero"], 34);
    assert!(fib["maxDurationNs"].as_u64().unwrap() >= fib["meanDurationNs"].as_u64().unwrap());
    let totals: Vec<u64> = rows
        .iter()
        .map(|r| r["totalDurationNs"].as_u64().unwrap())
        .collect();
    assert!(
        totals.windows(2).all(|w| w[0] >= w[1]),
        "slowest total first: {totals:?}"
    );
    let r = c
        .reply(
            "debug_query",
            json!({"sessionId": id, "aggregate": "thread"}),
        )
        .await;
    assert!(r.error_text().contains("\"function\""));
    trace(&c, json!({"remove": ["fib", "add"]})).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn live_patterns_add_and_remove_hooks_on_threads() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture_with("trace_threads", &["-pthread"]);
    let (id, _) = c.launch(&exe, &[]).await;
    let t = trace(
        &c,
        json!({"sessionId": id, "add": ["work", "middle", "leaf", "no_such_function"]}),
    )
    .await;
    assert_eq!(t["mode"], "runtime");
    assert_eq!(t["hookedFunctions"], 3, "{t}");
    let warnings = t["warnings"].to_string();
    assert!(
        warnings.contains("no_such_function") && warnings.contains("matched no function"),
        "{warnings}"
    );

    // Wait for calls on both worker threads.
    let mut leaves = Vec::new();
    for _ in 0..200 {
        leaves = all(
            &c,
            &id,
            json!({"eventType": "function_enter", "function": {"equals": "leaf"}}),
        )
        .await;
        let tids: std::collections::HashSet<_> =
            leaves.iter().map(|e| e["threadId"].clone()).collect();
        if tids.len() == 2 && leaves.len() > 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let tids: std::collections::HashSet<_> = leaves.iter().map(|e| e["threadId"].clone()).collect();
    assert_eq!(tids.len(), 2, "both worker threads traced");
    // leaf's parent is middle, whose parent is work, on the same thread.
    let sample = leaves
        .iter()
        .find(|e| e["parentEventId"].is_u64())
        .expect("a leaf with a parent");
    let parent = c
        .ok("debug_query", json!({"sessionId": id, "offset": sample["parentEventId"].as_u64().unwrap() - 1, "limit": 1, "verbose": true}))
        .await;
    let _ = parent;
    let middles = all(
        &c,
        &id,
        json!({"eventType": "function_enter", "function": {"equals": "middle"}}),
    )
    .await;
    let middle_ids: std::collections::HashSet<u64> =
        middles.iter().map(|e| e["id"].as_u64().unwrap()).collect();
    assert!(
        leaves
            .iter()
            .filter(|e| e["parentEventId"].is_u64())
            .all(|e| middle_ids.contains(&e["parentEventId"].as_u64().unwrap()))
    );

    // Thread names and regex/file filters.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let named = c.ok("debug_query", json!({"sessionId": id, "threadName": {"contains": "worker-1"}, "limit": 1, "verbose": true})).await;
    assert!(named["totalCount"].as_u64().unwrap() > 0, "{named}");
    assert_eq!(named["events"][0]["threadName"], "worker-1");
    let re = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "function": {"matches": "^(work|middle)$"}, "limit": 1}),
        )
        .await;
    let file = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "sourceFile": {"contains": "trace_threads.c"}, "limit": 1}),
        )
        .await;
    assert!(re["totalCount"].as_u64().unwrap() > 0 && file["totalCount"].as_u64().unwrap() > 0);

    let t = trace(&c, json!({"sessionId": id, "remove": ["leaf"]})).await;
    assert_eq!(t["hookedFunctions"], 2);
    // Compared by event id, not by count: at thousands of calls a second the
    // session reaches its event cap and evicts its oldest chunks, so counts
    // can stay flat or shrink while new events keep arriving.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let settled = newest_id(&c, &id).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let late_leaves = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "function": {"equals": "leaf"}, "eventIdFrom": settled + 1, "limit": 1}),
        )
        .await;
    assert_eq!(
        late_leaves["totalCount"], 0,
        "no leaf events after its pattern was removed: {late_leaves}"
    );
    // New work events keep arriving (polled: a loaded machine may take a while).
    let mut more = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let q = c
            .ok(
                "debug_query",
                json!({"sessionId": id, "function": {"equals": "work"}, "eventIdFrom": settled + 1, "limit": 1}),
            )
            .await;
        if q["totalCount"].as_u64().unwrap() > 0 {
            more = true;
            break;
        }
    }
    assert!(more, "work is still traced");
    let s = c.status(&id).await;
    assert_eq!(s["events"]["dropped"], 0);
    assert_eq!(
        s["trace"]["hookedFunctions"], 2,
        "status shows the tracing state: {s}"
    );
    assert_eq!(
        s["trace"]["activePatterns"],
        json!(["work", "middle", "no_such_function"])
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn pattern_forms_on_cpp_and_rust() {
    let env = Env::new();
    let c = env.client().await;
    let cpp = support::compile_with("trace_cpp.cpp", "g++", &["-g", "-O0"]);
    let root = cpp.parent().unwrap();
    for (pattern, must_have) in [
        ("audio::dsp::*::process", "audio::dsp::LowPass::process"),
        ("audio::**", "audio::Mixer::mix"),
        ("@file:trace_cpp", "main"),
        ("audio::clamp_value<*>", "audio::clamp_value<float>"),
        ("audio::io::*", "audio::io::open_device"),
    ] {
        trace(&c, json!({"add": [pattern]})).await;
        let v = c
            .ok("debug_launch", json!({"command": cpp, "projectRoot": root}))
            .await;
        let id = v["sessionId"].as_str().unwrap().to_string();
        let st = c.wait_ended(&id).await;
        let names = entered_functions(&c, &id).await;
        assert!(names.contains(must_have), "{pattern}: {names:?}");
        // Exceptions thrown through traced functions reach their handlers.
        assert_eq!(st["exitCode"], 0, "{pattern}: {st}");
        let out = c.events(&id, Some("stdout")).await;
        assert!(
            out[0]["text"]
                .as_str()
                .unwrap()
                .ends_with("opened=2 failed=2"),
            "{pattern}: {out:?}"
        );
        trace(&c, json!({"remove": [pattern]})).await;
    }
    // @usercode: the fixtures folder is the project; libstdc++ is not user code.
    let rs = support::compile_with("trace_rust.rs", "rustc", &["-g", "--edition", "2021"]);
    trace(&c, json!({"add": ["@usercode"]})).await;
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .canonicalize()
        .unwrap();
    let v = c
        .ok(
            "debug_launch",
            json!({"command": rs, "projectRoot": fixtures}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    let names = entered_functions(&c, &id).await;
    assert!(
        names.contains("trace_rust::parser::deep::validate"),
        "{names:?} {st}"
    );
    assert!(
        names
            .iter()
            .any(|n| n.contains("Square as trace_rust::Shape>::area")),
        "{names:?}"
    );
    // A panic unwinds through traced functions to catch_unwind.
    assert!(
        names.contains("trace_rust::parser::deep::checked_div"),
        "{names:?}"
    );
    assert_eq!(st["exitCode"], 0, "{st}");
    let out = c.events(&id, Some("stdout")).await;
    assert_eq!(out[0]["text"], "3 1 9 9 caught=1", "{out:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("std::") || n.starts_with("core::") || n.starts_with("alloc::")),
        "{names:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn trace_errors_are_actionable() {
    let env = Env::new();
    let c = env.client().await;
    let r = c.reply("debug_trace", json!({"add": ["a***b"]})).await;
    assert!(r.error_text().contains("INVALID_PATTERN") && r.error_text().contains("'**'"));
    let r = c
        .reply("debug_trace", json!({"sessionId": "nope", "add": ["x"]}))
        .await;
    assert!(r.error_text().contains("SESSION_NOT_FOUND"));
    let r = c
        .reply("debug_trace", json!({"add": ["x"], "watchez": {}}))
        .await;
    assert!(
        r.error_text().contains("unknown field `watchez`"),
        "not silently ignored: {}",
        r.text
    );
    let r = c
        .reply(
            "debug_trace",
            json!({"add": ["x"], "projectRoot": "relative"}),
        )
        .await;
    assert!(r.error_text().contains("absolute"));
    let (id, _) = c.launch(&fixture("output"), &[]).await;
    c.wait_ended(&id).await;
    let r = c
        .reply("debug_trace", json!({"sessionId": id, "add": ["main"]}))
        .await;
    assert!(r.error_text().contains("PROCESS_EXITED"), "{}", r.text);
    let r = c
        .reply(
            "debug_query",
            json!({"sessionId": id, "returnValue": {"equals": [1]}}),
        )
        .await;
    assert!(r.error_text().contains("returnValue.equals"));
    // Functions too small to patch are reported, not silently skipped.
    let opt = support::compile_with("trace_c.c", "gcc", &["-g", "-O2"]);
    let (id, _) = c.launch(&opt, &["3", "30"]).await;
    let t = c
        .ok(
            "debug_trace",
            json!({"sessionId": id, "add": ["add", "tiny_inline"]}),
        )
        .await;
    let w = t["warnings"].to_string();
    assert!(w.contains("tiny_inline inlined into"), "{w}");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shared_libraries_and_dlopen_are_traced() {
    let env = Env::new();
    let c = env.client().await;
    let (exe, plugin, dir) = support::dl_fixture();
    // Pending: a library linked at start and a plugin loaded later.
    trace(&c, json!({"add": ["lib_scale", "plugin_entry"]})).await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": [plugin, "0"], "projectRoot": dir}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);
    let exits = all(&c, &id, json!({"eventType": "function_exit"})).await;
    let got: Vec<(String, String)> = exits
        .iter()
        .map(|e| {
            (
                e["function"].as_str().unwrap().to_string(),
                e["returnValue"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("lib_scale".into(), "41".into()),
            ("plugin_entry".into(), "101".into()),
            ("plugin_entry".into(), "102".into())
        ],
        "calls into the linked library and the dlopen'ed plugin, from the first call on"
    );
    assert!(
        exits[1]["sourceFile"]
            .as_str()
            .unwrap()
            .ends_with("libtraceplugin.c")
    );
    trace(&c, json!({"remove": ["lib_scale", "plugin_entry"]})).await;

    // Live: a pattern added while running also covers a library loaded afterwards.
    let (id, _) = c.launch(&exe, &[plugin.to_str().unwrap(), "1500"]).await;
    let t = trace(
        &c,
        json!({"sessionId": id, "add": ["plugin_entry", "lib_*"]}),
    )
    .await;
    assert_eq!(
        t["hookedFunctions"], 1,
        "lib_scale now; the plugin is not loaded yet: {t}"
    );
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);
    let n = all(
        &c,
        &id,
        json!({"eventType": "function_enter", "function": {"equals": "plugin_entry"}}),
    )
    .await
    .len();
    assert_eq!(n, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn hot_functions_are_sampled_unless_told_not_to() {
    let env = Env::with_settings(json!({"events.maxPerSession": 5_000_000}));
    let c = env.client().await;
    let exe = support::compile_with("hot_loop.c", "gcc", &["-g", "-O0", "-rdynamic"]);
    let root = exe.parent().unwrap();
    let run =
        |n: u64| json!({"command": exe, "projectRoot": root, "env": {"HOT_LOOP_N": n.to_string()}});
    // Default: a function called over 100k times a second is sampled.
    trace(&c, json!({"add": ["tiny"]})).await;
    let v = c.ok("debug_launch", run(3_000_000)).await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.wait_ended(&id).await;
    let enters = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "function_enter", "offset": 1000, "limit": 5}),
        )
        .await;
    let total = enters["totalCount"].as_u64().unwrap();
    assert!(
        total > 1000 && total < 3_000_000,
        "sampled: {total} of 3000000 calls recorded"
    );
    // The first window (100 ms) is recorded in full; later calls are sampled.
    let last = c
        .ok("debug_query", json!({"sessionId": id, "eventType": "function_enter", "offset": total - 1, "limit": 1}))
        .await;
    assert_eq!(last["events"][0]["sampled"], true, "{last}");
    let exits = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "function_exit", "limit": 1}),
        )
        .await;
    assert_eq!(
        exits["totalCount"].as_u64().unwrap(),
        total,
        "an exit is recorded for every recorded enter"
    );
    trace(&c, json!({"remove": ["tiny"]})).await;

    // Live: a later debug_trace call reports which functions are sampled
    // (and is not held up by the agent's steady stream of reports).
    // Staged so the hook is in before the loop starts (uninstrumented, the
    // loop may finish before a live debug_trace arrives on a loaded machine).
    trace(&c, json!({"add": ["tiny"]})).await;
    let v = c.ok("debug_launch", run(50_000_000)).await;
    let live_id = v["sessionId"].as_str().unwrap().to_string();
    let mut report = json!(null);
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        report = trace(&c, json!({"sessionId": live_id})).await;
        if report["sampledFunctions"].is_array() {
            break;
        }
    }
    assert_eq!(
        report["sampledFunctions"][0]["function"], "tiny",
        "{report}"
    );
    assert!(report["sampledFunctions"][0]["oneIn"].as_u64().unwrap() > 1);
    assert!(report["warnings"].to_string().contains("sampling: false"));
    c.ok(
        "debug_session",
        json!({"action": "stop", "sessionId": live_id}),
    )
    .await;

    // sampling: false records every call.
    trace(&c, json!({"add": ["tiny"], "sampling": false})).await;
    let v = c.ok("debug_launch", run(500_000)).await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.wait_ended(&id).await;
    let enters = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "function_enter", "limit": 1}),
        )
        .await;
    assert_eq!(enters["totalCount"], 500_000);
    assert!(enters["events"][0].get("sampled").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_just_before_a_crash_are_kept() {
    let env = Env::new();
    let c = env.client().await;
    trace(&c, json!({"add": ["write_through"]})).await;
    let exe = fixture("crash");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": ["segv"], "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let s = c.wait_ended(&id).await;
    assert_eq!(s["state"], "crashed");
    // The enter was still in the agent's ring when the fault hit: the crash
    // handler flushed it before reporting the crash.
    let all_events = all(&c, &id, json!({})).await;
    let kinds: Vec<&str> = all_events
        .iter()
        .map(|e| e["eventType"].as_str().unwrap())
        .collect();
    let enter = kinds
        .iter()
        .position(|k| *k == "function_enter")
        .expect("the call into write_through was kept");
    let crash = kinds.iter().position(|k| *k == "crash").unwrap();
    assert!(enter < crash, "{kinds:?}");
    assert_eq!(all_events[enter]["function"], "write_through");
    assert_eq!(
        all_events[enter]["arguments"][0]["value"],
        Value::Null,
        "it was called with NULL"
    );
    // The crash's backtrace goes through the tracing hook: the faulting
    // function first, then its caller with file:line, no hook frames.
    let bt = all_events[crash]["backtrace"].as_array().unwrap();
    assert_eq!(bt[0]["name"], "write_through", "{bt:?}");
    let main = bt
        .iter()
        .find(|f| f["name"] == "main")
        .expect("main in the backtrace");
    let call_line = include_str!("fixtures/crash.c")
        .lines()
        .position(|l| l.contains("write_through(NULL, 21);"))
        .unwrap()
        + 1;
    assert_eq!(main["line"], call_line, "{bt:?}");
    assert!(
        bt.iter().all(|f| f["module"].is_string()),
        "only frames in the program's modules: {bt:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn forked_children_of_a_traced_program_run_to_completion() {
    // Not followed, the child inherits the hooks and a copy of the agent's
    // ring that nobody drains, and its _exit would wait for an
    // acknowledgement that never comes: both used to hang it (and the parent
    // waiting for it).
    let env = Env::new();
    let c = env.client().await;
    trace(&c, json!({"add": ["step", "forked"], "sampling": false})).await;
    let exe = fixture("fork_loop");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": ["400000"], "projectRoot": exe.parent().unwrap(),
                   "followChildren": false}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    let out: Vec<String> = c.stdout_lines(&id).await;
    assert_eq!(
        out,
        ["child done 400000", "parent done, child exit 0"],
        "{out:?}"
    );
    let calls = c.calls_of(&id, "function_enter", "step").await;
    assert_eq!(calls.len(), 1, "the parent's one call, none of the child's");
    // The fork happened inside `forked`, so its return ran in both; the
    // child shares the parent's ring memory (a memfd) and must not write
    // into it: one exit, the parent's.
    let returns = c.calls_of(&id, "function_exit", "forked").await;
    assert_eq!(returns.len(), 1, "{returns:?}");
    assert_eq!(returns[0]["threadId"], calls[0]["threadId"], "{returns:?}");

    // Followed (the default), the fork comes right after a traced call:
    // Frida's handling of the gated child used to crash it in about 1 run
    // in 6 when agent messages were in flight (the fork guard waits for
    // them). Every call of the child is its own.
    trace(&c, json!({"add": ["step"], "sampling": false})).await;
    let (id, parent) = c.launch(&exe, &["1000"]).await;
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    let processes = st["processes"].as_array().unwrap();
    let child = processes
        .iter()
        .find(|p| p["origin"] == "fork")
        .unwrap_or_else(|| panic!("the child was followed: {st}"));
    assert_eq!(child["exitCode"], 0, "{st}");
    let child_pid = child["pid"].as_u64().unwrap();
    let calls = c.calls_of(&id, "function_enter", "step").await;
    let of = |pid: u64| calls.iter().filter(|e| e["pid"] == pid).count();
    assert_eq!(of(parent as u64), 1, "the parent's call");
    assert_eq!(of(child_pid), 1000, "the child's calls");
}
