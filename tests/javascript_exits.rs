//! How Node.js programs end, and what their launch says, end to end on
//! real Node 20 under real Frida through MCP: an uncaught exception or
//! rejection is a crash reported in JavaScript (and, through source maps,
//! TypeScript) terms and `process.exit(n)` an exit; a file the probes
//! cannot be written into, and a program under Node's permission model,
//! run as they are with a warning that says why. (Call tracing is in
//! javascript.rs.)

mod support;

use serde_json::{Value, json};
use std::path::PathBuf;
use support::Env;

fn shop() -> PathBuf {
    support::javascript_fixture("shop")
}

/// Launches `node <script>` in the shop fixture with the environment
/// `env` (an object) and waits for its end: the session id and its status.
async fn run_shop(c: &support::Client, script: &str, env: Value) -> (String, Value) {
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": [script], "projectRoot": shop(), "cwd": shop(), "env": env}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    (id, st)
}

#[tokio::test(flavor = "multi_thread")]
async fn uncaught_errors_and_rejections_are_crashes_and_process_exit_is_an_exit() {
    let env = Env::new();
    let c = env.client().await;
    let run = |script: &'static str| run_shop(&c, script, json!({}));

    // A thrown error: its type, message and own properties, where it was
    // thrown, the stack innermost first, and the stderr lines Node printed.
    let (id, st) = run("boom.js").await;
    assert_eq!(st["state"], "crashed", "{st}");
    assert_eq!(
        st["reason"], "uncaught TypeError: bad quantity: many",
        "{st}"
    );
    let crash = &c.events(&id, Some("crash")).await[0];
    assert_eq!(crash["kind"], "javascript-exception", "{crash}");
    assert_eq!(crash["exitCode"], 1);
    let e = &crash["exception"];
    assert_eq!(e["type"], "TypeError");
    assert_eq!(e["message"], "bad quantity: many");
    assert_eq!(e["properties"]["code"], "'E_QTY'", "{e}");
    let boom = shop().join("boom.js").display().to_string();
    assert_eq!(e["thrownAt"], json!({"file": boom, "line": 5}), "{e}");
    let stack = crash["stack"].as_array().unwrap();
    assert_eq!(
        (&stack[0]["function"], &stack[0]["file"], &stack[0]["line"]),
        (&json!("parseQty"), &json!(boom), &json!(3)),
        "{stack:?}"
    );
    assert!(
        stack.iter().any(|f| f["function"] == "Importer.run"),
        "{stack:?}"
    );
    let ids = e["stderrEventIds"].as_array().unwrap();
    let stderr = c.events(&id, Some("stderr")).await;
    assert!(
        stderr.iter().any(|l| json!(l["id"]) == ids[0] && l["text"].as_str().unwrap().ends_with("boom.js:5")),
        "{ids:?} {stderr:?}"
    );

    // An async function's rejection nobody handled.
    let (id, st) = run("reject.mjs").await;
    assert_eq!(st["state"], "crashed", "{st}");
    let crash = &c.events(&id, Some("crash")).await[0];
    assert_eq!(crash["exception"]["type"], "RangeError", "{crash}");
    assert_eq!(crash["exception"]["message"], "no price for gadget");
    assert_eq!(crash["stack"][0]["function"], "fetchPrice", "{crash}");
    assert_eq!(
        crash["stack"][0]["file"],
        shop().join("reject.mjs").display().to_string(),
        "a file:// URL becomes a path: {crash}"
    );

    // process.exit(3): an exit with its code, no crash.
    let (id, st) = run("quits.js").await;
    assert_eq!(
        (&st["state"], &st["exitCode"]),
        (&json!("exited"), &json!(3)),
        "{st}"
    );
    assert!(c.events(&id, Some("crash")).await.is_empty());
}

/// With STROBE_JS_CRASH_LOCALS=1 the crash carries the throwing frame's
/// locals (read by the debugger worker where V8 paused on the throw): a
/// synchronous throw's and an async function's rejection's. Without it
/// (the test above, and the first run here) it has none.
#[tokio::test(flavor = "multi_thread")]
async fn a_crash_carries_the_throwing_frames_locals_when_asked() {
    let env = Env::new();
    let c = env.client().await;
    let crash_of = |script: &'static str, locals: bool| {
        let c = &c;
        async move {
            let env = if locals {
                json!({"STROBE_JS_CRASH_LOCALS": "1"})
            } else {
                json!({})
            };
            let (id, st) = run_shop(c, script, env).await;
            let stderr = c.events(&id, Some("stderr")).await;
            assert_eq!(st["state"], "crashed", "{st} {stderr:?}");
            c.events(&id, Some("crash")).await[0]["exception"].clone()
        }
    };
    let plain = crash_of("boom.js", false).await;
    assert!(plain.get("locals").is_none(), "{plain}");
    assert!(
        plain["localsHint"]
            .as_str()
            .unwrap()
            .contains("STROBE_JS_CRASH_LOCALS=1"),
        "{plain}"
    );

    let e = crash_of("boom.js", true).await;
    // Nothing else printed: the debugger's session ended before Node's
    // report (Node would add that it waits for the debugger).
    // Compared by count: ids are per session, and an event before the
    // output (in another order on a loaded machine) shifts them all.
    let stderr_count = |e: &Value| e["stderrEventIds"].as_array().map(Vec::len);
    assert!(stderr_count(&plain).is_some_and(|n| n > 0), "{plain}");
    assert_eq!(stderr_count(&e), stderr_count(&plain), "{e} {plain}");
    assert_eq!(e["message"], "bad quantity: many", "{e}");
    let local = |e: &Value, name: &str| {
        e["locals"]
            .as_array()
            .and_then(|l| l.iter().find(|v| v["name"] == name).cloned())
            .unwrap_or_else(|| panic!("no local {name}: {e}"))
    };
    assert_eq!(local(&e, "text")["value"], "many", "{e}");
    assert_eq!(local(&e, "e")["type"], "TypeError", "{e}");

    let e = crash_of("reject.mjs", true).await;
    assert_eq!(e["type"], "RangeError", "{e}");
    assert_eq!(local(&e, "sku")["value"], "gadget", "{e}");

    // process.exit with the debugger's session open: the session ends
    // first, so Node does not print that it waits for the debugger.
    let (id, st) = run_shop(&c, "quits.js", json!({"STROBE_JS_CRASH_LOCALS": "1"})).await;
    assert_eq!(st["exitCode"], 3);
    let stderr = c.events(&id, Some("stderr")).await;
    assert!(
        !format!("{stderr:?}").contains("Waiting for the debugger"),
        "{stderr:?}"
    );
}

/// A TypeScript project compiled by the real `tsc` (npm, pinned in
/// agent/package.json; `./dev test` installs it) with source maps: the
/// crash's stack and throw site are in TypeScript terms, the compiled
/// positions kept beside them.
#[tokio::test(flavor = "multi_thread")]
async fn a_typescript_crash_is_reported_in_typescript_terms() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().canonicalize().unwrap();
    support::build_typescript("ts", &["tsconfig.json", "src/orders.ts"], &root);

    let env = Env::new();
    let c = env.client().await;
    // A pattern on the TypeScript name traces the compiled function Node runs.
    c.ok("debug_trace", json!({"add": ["orders.OrderBook.add"]}))
        .await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": ["dist/orders.js"], "projectRoot": root, "cwd": root}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    assert_eq!(v["pendingPatternsApplied"], 1, "{v}");
    assert!(
        v["warnings"].is_null() || v["warnings"].as_array().unwrap().is_empty(),
        "{v}"
    );
    let st = c.wait_ended(&id).await;
    assert_eq!(st["state"], "crashed", "{st}");
    let enters = c
        .calls_of(&id, "function_enter", "orders.OrderBook.add")
        .await;
    let orders: Vec<&Value> = enters.iter().map(|e| &e["arguments"][0]["value"]).collect();
    assert_eq!(
        orders,
        [
            &json!({"sku": "widget", "qty": 2}),
            &json!({"sku": "gadget", "qty": 0})
        ],
        "{enters:?}"
    );
    // Named, placed and numbered in TypeScript terms.
    assert!(
        enters[0]["sourceFile"]
            .as_str()
            .unwrap()
            .ends_with("src/orders.ts")
            && enters[0]["line"] == 11,
        "{:?}",
        enters[0]
    );
    let exits = c
        .calls_of(&id, "function_exit", "orders.OrderBook.add")
        .await;
    assert_eq!(exits[0]["returnType"], "undefined", "{exits:?}");
    assert_eq!(
        exits[1]["exception"]["type"], "",
        "thrown, its value in the exception event: {exits:?}"
    );
    let raised = c.events(&id, Some("exception")).await;
    assert_eq!(
        (
            &raised[0]["function"],
            &raised[0]["exceptionType"],
            &raised[0]["message"]
        ),
        (
            &json!("orders.OrderBook.add"),
            &json!("RangeError"),
            &json!("quantity must be positive: 0")
        ),
        "nothing caught it: Node's uncaught handler gave its value: {raised:?}"
    );
    let crash = &c.events(&id, Some("crash")).await[0];
    let ts = root.join("src/orders.ts").display().to_string();
    let js = root.join("dist/orders.js").display().to_string();
    let top = &crash["stack"][0];
    assert_eq!(
        (&top["function"], &top["file"], &top["line"]),
        (&json!("OrderBook.add"), &json!(ts), &json!(13)),
        "the throw statement's line in orders.ts: {crash}"
    );
    assert_eq!(top["generated"]["file"], json!(js), "{top}");
    assert_eq!(crash["exception"]["thrownAt"]["file"], json!(ts), "{crash}");
    assert_eq!(crash["exception"]["thrownAt"]["line"], 13, "{crash}");
    // The call site in the module's top level, line 21.
    assert_eq!(crash["stack"][1]["line"], 21, "{crash}");
}

/// A source the probes cannot be written into (a syntax error) is named
/// at launch, and the program runs as it is.
#[tokio::test(flavor = "multi_thread")]
async fn a_file_that_cannot_be_probed_is_named_at_launch() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().canonicalize().unwrap();
    std::fs::write(
        root.join("ok.js"),
        "function hi() { return 'hi'; }\nconsole.log(hi());\n",
    )
    .unwrap();
    std::fs::write(root.join("broken.js"), "function (\n").unwrap();
    let env = Env::new();
    let c = env.client().await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": ["ok.js"], "projectRoot": root, "cwd": root}),
        )
        .await;
    let said = v["warnings"].to_string();
    assert!(
        said.contains("1 JavaScript file(s) were not probed") && said.contains("broken.js"),
        "{v}"
    );
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.wait_ended(&id).await;
    assert_eq!(c.stdout_lines(&id).await, ["hi"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_under_nodes_permission_model_runs_untraced_and_is_told_why() {
    // Node's permission model refuses to read any file it was not given,
    // Strobe's runtime included: with it, Node would exit at once
    // (ERR_ACCESS_DENIED) before the program started.
    let work = tempfile::tempdir().unwrap();
    let root = work.path().canonicalize().unwrap();
    std::fs::write(
        root.join("ok.js"),
        "function hi() { return 'hi'; }\nconsole.log(hi());\n",
    )
    .unwrap();
    let env = Env::new();
    let c = env.client().await;
    let allow = format!("--allow-fs-read={}", root.display());
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": ["--experimental-permission", allow, "ok.js"],
                   "projectRoot": root, "cwd": root}),
        )
        .await;
    let said = v["warnings"].to_string();
    assert!(
        said.contains("permission model") && said.contains("--experimental-permission"),
        "{v}"
    );
    let id = v["sessionId"].as_str().unwrap().to_string();
    let end = c.wait_ended(&id).await;
    assert_eq!(end["exitCode"], 0, "{end}");
    assert_eq!(c.stdout_lines(&id).await, ["hi"]);
}

/// Strobe's read and vm wrappers (for Jest's and Vitest's own module
/// loading) are only in a test runner's process: any other program keeps
/// Node's own `fs.readFileSync` and `vm.createContext`.
#[tokio::test(flavor = "multi_thread")]
async fn a_program_that_is_not_a_test_runner_keeps_nodes_own_reads() {
    let env = Env::new();
    let c = env.client().await;
    let (id, st) = run_shop(&c, "own_reads.js", json!({})).await;
    assert_eq!(st["exitCode"], 0);
    assert_eq!(
        c.stdout_lines(&id).await,
        ["readFileSync own", "createContext own"]
    );
}
