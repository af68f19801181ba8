//! Node.js programs: a `node` command is a JavaScript session; patterns in
//! JavaScript's dotted names are resolved from the project's sources
//! (CommonJS, ES modules, classes, accessors, arrow functions bound to a
//! name) and the calls are traced through the probes written into the
//! sources as Node loads them, pending or live, with typed values, async
//! exits and exceptions, in worker threads and beside a native addon's
//! calls. How programs end and what a launch says are in
//! javascript_exits.rs. Real Node 20 under real Frida, through MCP.

mod support;

use serde_json::{Value, json};
use std::path::PathBuf;
use support::Env;

fn shop() -> PathBuf {
    support::javascript_fixture("shop")
}

/// The exits of function `name` in `events` (a verbose query's), in order.
fn exits_of<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["eventType"] == "function_exit" && e["function"] == name)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn pending_javascript_patterns_trace_commonjs_es_modules_classes_and_async_functions() {
    let env = Env::new();
    let c = env.client().await;
    c.ok(
        "debug_trace",
        json!({"add": ["app.main", "cart.Cart.*", "cart.checkout", "api.pricing.discount",
                       "cart::Cart::add", "nosuch.*"]}),
    )
    .await;
    let launched = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": ["app.js"], "projectRoot": shop(),
                   "cwd": shop()}),
        )
        .await;
    let id = launched["sessionId"].as_str().unwrap().to_string();
    let all = launched["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .map(|w| w.as_str().unwrap().to_string())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    assert!(
        all.contains("\"::\" is native (C/C++/Rust) syntax; JavaScript functions are named")
            && all.contains("\"cart.Cart.add\""),
        "native syntax on a JavaScript program: {all}"
    );
    assert!(
        all.contains("\"nosuch.*\" matched no function, JavaScript"),
        "{all}"
    );
    assert!(
        !all.contains("cannot be traced"),
        "every match is traced: {all}"
    );
    assert_eq!(launched["pendingPatternsApplied"], 6, "{launched}");
    // The program runs as it would: its output and exit are recorded.
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    assert_eq!(c.stdout_lines(&id).await, ["4.5"]);

    let events = c.query_all(&id, json!({})).await;
    let calls: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["eventType"].as_str().unwrap().starts_with("function_"))
        .map(|e| {
            (
                e["eventType"].as_str().unwrap().to_string(),
                e["function"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for name in [
        "app.main",
        "cart.Cart.constructor",
        "cart.Cart.add",
        "cart.Cart.get total",
        "cart.checkout",
        "api.pricing.discount",
    ] {
        for kind in ["function_enter", "function_exit"] {
            assert_eq!(
                calls.iter().filter(|(k, f)| k == kind && f == name).count(),
                1,
                "{kind} {name}: {calls:?}"
            );
        }
    }
    // Typed arguments by name, and return values of their JavaScript types.
    let add = events
        .iter()
        .find(|e| e["eventType"] == "function_enter" && e["function"] == "cart.Cart.add")
        .unwrap();
    assert_eq!(
        add["arguments"],
        json!([{"name": "name", "type": "string", "value": "widget"},
               {"name": "price", "type": "number", "value": 2.5},
               {"name": "qty", "type": "number", "value": 2}]),
        "{add}"
    );
    assert_eq!(
        exits_of(&events, "cart.Cart.add")[0]["returnType"],
        "undefined"
    );
    assert_eq!(
        exits_of(&events, "cart.Cart.get total")[0]["returnValue"],
        5
    );
    // An ES module (loaded through the loader hooks) and an async arrow
    // function: its exit comes when its promise settles, after the awaited
    // discount, with the value it resolved to.
    assert_eq!(
        exits_of(&events, "api.pricing.discount")[0]["returnValue"],
        4.5
    );
    let checkout = exits_of(&events, "cart.checkout")[0];
    assert_eq!(checkout["returnValue"], 4.5, "{checkout}");
    let seq = |kind: &str, name: &str| {
        events
            .iter()
            .find(|e| e["eventType"] == kind && e["function"] == name)
            .map(|e| e["timestampNs"].as_u64().unwrap())
            .unwrap()
    };
    assert!(seq("function_exit", "cart.checkout") > seq("function_exit", "api.pricing.discount"));
    assert!(seq("function_exit", "app.main") > seq("function_exit", "cart.checkout"));
    let enter = events
        .iter()
        .find(|e| e["eventType"] == "function_enter" && e["function"] == "cart.checkout")
        .unwrap();
    assert_eq!(
        enter["arguments"][0]["type"], "Cart",
        "a class instance by its constructor: {enter}"
    );
    assert_eq!(
        enter["arguments"][0]["value"]["items"][0]["name"], "widget",
        "{enter}"
    );
    assert_eq!(
        enter["arguments"][1]["value"], "<function discount>",
        "{enter}"
    );
}

/// Functions traced while the program runs, and untraced again; every
/// kind of value previewed; exceptions thrown and rejected.
#[tokio::test(flavor = "multi_thread")]
async fn live_javascript_patterns_are_added_and_removed_without_a_restart() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let stop = work.path().join("stop");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": ["live.js", stop], "projectRoot": shop(), "cwd": shop()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.wait_stdout(&id).await;
    // The functions were loaded (and are being called) before the pattern.
    // With expression watches, JavaScript run in the program with the
    // call's arguments by name (and `retval` at its exit).
    let added = c
        .ok(
            "debug_trace",
            json!({"sessionId": id, "add": ["orders.*"], "serializationDepth": 5, "watches": {"add": [
                {"expr": "order.lines.length * 10", "label": "tens", "on": ["orders.total"]},
                {"expr": "retval > 300 ? 'big' : 'small'", "label": "size", "on": ["orders.total"]}]}}),
        )
        .await;
    assert_eq!(added["hookedFunctions"], 5, "{added}");
    // A watch that does not compile is refused, and says why.
    let bad = c
        .raw(
            "debug_trace",
            json!({"sessionId": id, "watches": {"add": [{"expr": "1 +", "label": "broken", "on": ["orders.total"]}]}}),
        )
        .await;
    assert!(format!("{bad:?}").contains("does not compile"), "{bad:?}");
    let wanted = ["orders.total", "orders.settle", "orders.describe"];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut events = Vec::new();
    while wanted.iter().any(|w| exits_of(&events, w).is_empty()) {
        assert!(
            std::time::Instant::now() < deadline,
            "no calls traced: {events:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        events = c
            .query_all(&id, json!({"function": {"contains": "orders."}}))
            .await;
    }
    c.ok(
        "debug_trace",
        json!({"sessionId": id, "remove": ["orders.*"], "watches": {"remove": ["tens", "size"]}}),
    )
    .await;
    // Calls made before the removal may still be on their way; none after.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let settled = c
        .query_all(&id, json!({"function": {"contains": "orders."}}))
        .await
        .len();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let later = c
        .query_all(&id, json!({"function": {"contains": "orders."}}))
        .await;
    assert_eq!(
        later.len(),
        settled,
        "calls recorded after the pattern was removed"
    );
    std::fs::write(&stop, "").unwrap();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");

    let events = later;
    // Previews of every kind, by the JavaScript type's name, made without
    // running the program's code.
    let described: Vec<(&Value, &Value)> = events
        .iter()
        .filter(|e| e["eventType"] == "function_enter" && e["function"] == "orders.describe")
        .map(|e| (&e["arguments"][0]["type"], &e["arguments"][0]["value"]))
        .take(12)
        .collect();
    let first = described
        .iter()
        .position(|(t, _)| *t == "undefined")
        .unwrap();
    let got: Vec<(Value, Value)> = described[first..]
        .iter()
        .map(|(t, v)| ((*t).clone(), (*v).clone()))
        .chain(
            described[..first]
                .iter()
                .map(|(t, v)| ((*t).clone(), (*v).clone())),
        )
        .collect();
    let want = [
        (json!("undefined"), Value::Null),
        (json!("null"), Value::Null),
        (json!("boolean"), json!(true)),
        (json!("bigint"), json!("7n")),
        (json!("string"), json!("text")),
        (json!("Array"), json!([1, [2, [3, [4]]]])),
        (json!("Map"), json!({"k": 1})),
        (json!("Set"), json!([1, 2])),
        (json!("Uint8Array"), json!("<Buffer 68 69>")),
        (json!("Point"), json!({"$type": "Point", "x": 1, "y": 2})),
        (
            json!("Object"),
            json!({"nested": {"deep": {"deeper": {"deepest": 1}}}}),
        ),
        (json!("function"), json!("<function total>")),
    ];
    assert_eq!(got, want);
    // A throw out of a traced function is an exception event, and the
    // exit says it raised; an async function's rejection likewise, when
    // its promise settles (after the awaited timer).
    let raised = c.events(&id, Some("exception")).await;
    assert!(
        raised.iter().any(|e| e["function"] == "orders.validate"
            && e["exceptionType"] == "RangeError"
            && e["message"].as_str().unwrap().ends_with("is empty")),
        "{raised:?}"
    );
    assert!(
        raised
            .iter()
            .any(|e| e["function"] == "orders.settle" && e["message"] == "card declined"),
        "{raised:?}"
    );
    let settles = exits_of(&events, "orders.settle");
    assert!(
        settles.iter().any(|e| e["exception"]["type"] == "Error"),
        "{settles:?}"
    );
    // It exits when its promise settles: after the `total` it calls once
    // its timer has fired, not at its first `await`.
    let totals: Vec<u64> = events
        .iter()
        .filter(|e| e["eventType"] == "function_enter" && e["function"] == "orders.total")
        .map(|e| e["timestampNs"].as_u64().unwrap())
        .collect();
    // (Not the last: it may have been in flight when the pattern was
    // removed, and the total it called then was not traced.)
    let resolved: Vec<&&Value> = settles
        .iter()
        .filter(|e| e["returnType"] == "number")
        .collect();
    for s in &resolved[..resolved.len() - 1] {
        let end = s["timestampNs"].as_u64().unwrap();
        let start = end - s["durationNs"].as_u64().unwrap();
        assert!(
            totals.iter().any(|t| (start..end).contains(t)),
            "an async exit covers its awaits: {s}"
        );
    }
    let totals_in: Vec<&Value> = events
        .iter()
        .filter(|e| e["eventType"] == "function_enter" && e["function"] == "orders.total")
        .collect();
    assert_eq!(
        totals_in[0]["watchValues"]["tens"], 20,
        "{:?}",
        totals_in[0]
    );
    let totals_out = exits_of(&events, "orders.total");
    let w = &totals_out[0]["watchValues"];
    assert_eq!(w["tens"], 20, "the arguments at the exit too: {w}");
    let big = totals_out[0]["returnValue"].as_f64().unwrap() > 300.0;
    assert_eq!(w["size"], if big { "big" } else { "small" }, "{w}");
    assert!(
        exits_of(&events, "orders.settle")[0]
            .get("watchValues")
            .is_none(),
        "only where `on` says"
    );
    // A generator exits with what it returned, after its last yield.
    assert_eq!(exits_of(&events, "orders.batches")[0]["returnValue"], 2);
}

/// A native addon's C function and the JavaScript that calls it, in one
/// session: the C call nests inside the JavaScript one on the same thread.
#[tokio::test(flavor = "multi_thread")]
async fn a_native_addon_call_nests_inside_the_javascript_that_made_it() {
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/javascript/addon");
    let work = tempfile::tempdir().unwrap();
    let root = work.path().canonicalize().unwrap();
    std::fs::copy(fixture.join("mix.js"), root.join("mix.js")).unwrap();
    // raw.c without debug info: its calls are recorded untyped (the native
    // tracer's fast path), scale_sum's typed.
    let raw = root.join("raw.o");
    let built = std::process::Command::new("gcc")
        .args(["-g0", "-O1", "-fPIC", "-c"])
        .arg(fixture.join("raw.c"))
        .arg("-o")
        .arg(&raw)
        .output()
        .unwrap();
    assert!(built.status.success(), "gcc: {built:?}");
    let built = std::process::Command::new("gcc")
        .args([
            "-g",
            "-O1",
            "-shared",
            "-fPIC",
            "-I/usr/include/node",
            "-DNODE_GYP_MODULE_NAME=mix",
        ])
        .arg(fixture.join("mix.c"))
        .arg(&raw)
        .arg("-o")
        .arg(root.join("mix.node"))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "gcc (Node's headers come with Debian's nodejs): {built:?}"
    );

    let env = Env::new();
    let c = env.client().await;
    c.ok(
        "debug_trace",
        json!({"add": ["mix.compute", "scale_sum", "raw_twice"]}),
    )
    .await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": ["mix.js"], "projectRoot": root, "cwd": root}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    assert_eq!(c.stdout_lines(&id).await, ["7"]);
    let events = c
        .query_all(&id, json!({"eventType": "function_enter"}))
        .await;
    let compute = events
        .iter()
        .find(|e| e["function"] == "mix.compute")
        .unwrap();
    let native = events
        .iter()
        .find(|e| e["function"] == "scale_sum")
        .unwrap();
    assert_eq!(native["parentEventId"], compute["id"], "{events:?}");
    let raw = events
        .iter()
        .find(|e| e["function"] == "raw_twice")
        .unwrap();
    assert_eq!(
        raw["parentEventId"], compute["id"],
        "untyped, nested too: {events:?}"
    );
    assert_eq!(native["threadId"], compute["threadId"]);
    assert!(native["timestampNs"].as_u64() > compute["timestampNs"].as_u64());
    assert_eq!(
        (
            &native["arguments"][0]["value"],
            &native["arguments"][1]["value"]
        ),
        (&json!(1.0), &json!(2.0)),
        "{native}"
    );
    let exits = c.calls_of(&id, "function_exit", "scale_sum").await;
    assert_eq!(exits[0]["returnValue"], 6.0, "{exits:?}");
}

/// Calls in worker threads are traced on their own threads, nested as
/// they ran, beside the main thread's.
#[tokio::test(flavor = "multi_thread")]
async fn worker_thread_calls_are_traced_on_their_threads() {
    let env = Env::new();
    let c = env.client().await;
    c.ok(
        "debug_trace",
        json!({"add": ["crunch.*", "workers.collect"]}),
    )
    .await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": ["workers.js"], "projectRoot": shop(), "cwd": shop()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    assert_eq!(c.stdout_lines(&id).await, ["44"]);
    let pid = v["pid"].as_u64().unwrap();
    let crunches = c.calls_of(&id, "function_enter", "crunch.crunch").await;
    assert_eq!(crunches.len(), 2, "one per worker: {crunches:?}");
    let threads: std::collections::BTreeSet<u64> = crunches
        .iter()
        .map(|e| e["threadId"].as_u64().unwrap())
        .collect();
    assert_eq!(threads.len(), 2, "{crunches:?}");
    assert!(
        !threads.contains(&pid),
        "not on the main thread: {crunches:?}"
    );
    let squares = c.calls_of(&id, "function_enter", "crunch.square").await;
    assert_eq!(squares.len(), 3 + 4, "{squares:?}");
    for s in &squares {
        let parent = crunches
            .iter()
            .find(|e| e["id"] == s["parentEventId"])
            .unwrap_or_else(|| panic!("square nests in its worker's crunch: {s}"));
        assert_eq!(parent["threadId"], s["threadId"]);
    }
    let collect = c.calls_of(&id, "function_exit", "workers.collect").await;
    assert_eq!(collect[0]["returnValue"], 44, "{collect:?}");
    assert_eq!(collect[0]["threadId"].as_u64(), Some(pid));
}
