//! Node.js programs, first slice: a `node` command is a JavaScript
//! session, and patterns in JavaScript's dotted names are resolved from the
//! project's sources (CommonJS, ES modules, classes, accessors, arrow
//! functions bound to a name) before the program runs. No agent tracer
//! hooks JavaScript yet: the launch says so, names what matched, and the
//! session still records the program's output and exit. Real Node 20 under
//! real Frida, through MCP.

mod support;

use serde_json::json;
use std::path::PathBuf;
use support::Env;

fn shop() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/javascript/shop")
        .canonicalize()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_patterns_are_resolved_from_source_and_the_launch_says_what_is_traced() {
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
    let warnings: Vec<String> = launched["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("{launched}"))
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect();
    let all = warnings.join("\n");
    // Everything the patterns matched, by the names the resolver gives:
    // the module from the path (src/ dropped, api/pricing.mjs → api.pricing),
    // a class's constructor, methods and getter.
    let traced = warnings
        .iter()
        .find(|w| w.contains("JavaScript function(s) matched"))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(
        traced.starts_with("6 JavaScript function(s) matched"),
        "{traced}"
    );
    for name in [
        "app.main",
        "cart.Cart.constructor",
        "cart.Cart.add",
        "cart.Cart.get total",
        "cart.checkout",
    ] {
        assert!(traced.contains(name), "{name}: {traced}");
    }
    assert!(traced.contains("not built yet"), "{traced}");
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
        !all.contains("too small to patch"),
        "no native explanation for JavaScript functions: {all}"
    );
    // The program runs as it would: its output and exit are recorded.
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    let out = c.events(&id, Some("stdout")).await;
    assert_eq!(out[0]["text"], "4.5", "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn uncaught_errors_and_rejections_are_crashes_and_process_exit_is_an_exit() {
    let env = Env::new();
    let c = env.client().await;
    let run = |script: &'static str| {
        let c = &c;
        async move {
            let v = c
                .ok(
                    "debug_launch",
                    json!({"command": "node", "args": [script], "projectRoot": shop(), "cwd": shop()}),
                )
                .await;
            let id = v["sessionId"].as_str().unwrap().to_string();
            let st = c.wait_ended(&id).await;
            (id, st)
        }
    };

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

/// A TypeScript project compiled by the real `tsc` (npm, pinned in
/// agent/package.json; `./dev test` installs it) with source maps: the
/// crash's stack and throw site are in TypeScript terms, the compiled
/// positions kept beside them.
#[tokio::test(flavor = "multi_thread")]
async fn a_typescript_crash_is_reported_in_typescript_terms() {
    let tsc = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../agent/node_modules/.bin/tsc");
    assert!(
        tsc.exists(),
        "{} is missing: `./dev test` installs the agent's npm packages (typescript among them)",
        tsc.display()
    );
    let work = tempfile::tempdir().unwrap();
    let root = work.path().canonicalize().unwrap();
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/javascript/ts");
    std::fs::create_dir_all(root.join("src")).unwrap();
    for f in ["tsconfig.json", "src/orders.ts"] {
        std::fs::copy(fixture.join(f), root.join(f)).unwrap();
    }
    let built = std::process::Command::new(&tsc)
        .arg("-p")
        .arg(&root)
        .output()
        .unwrap();
    assert!(built.status.success(), "tsc: {built:?}");

    let env = Env::new();
    let c = env.client().await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": ["dist/orders.js"], "projectRoot": root, "cwd": root}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["state"], "crashed", "{st}");
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
