//! JavaScript breakpoints, logpoints and stepping end to end, through MCP
//! on real Node.js 20 under Frida: line and function breakpoints with
//! JavaScript conditions and hit counts, a condition that does not parse
//! (V8's message), the paused frame's typed locals and backtrace, step
//! over / into / out (never stopping in the probes written into the
//! sources), logpoints, a removed breakpoint that pauses no more, and
//! TypeScript lines through tsc's source maps.

mod support;

use serde_json::{Value, json};
use std::path::PathBuf;
use support::Env;

fn debugee() -> PathBuf {
    support::javascript_fixture("debugee")
}

/// The line of `src` holding `@marker`.
fn marker_line(src: &str, marker: &str) -> u64 {
    let tag = format!("@{marker}");
    src.lines()
        .position(|l| l.ends_with(&tag))
        .unwrap_or_else(|| panic!("no marker {marker}")) as u64
        + 1
}

/// The line of `stepper.js` holding `@marker`.
fn line_of(marker: &str) -> u64 {
    marker_line(
        include_str!("fixtures/javascript/debugee/stepper.js"),
        marker,
    )
}

fn has_local(p: &Value, name: &str) -> bool {
    p["locals"]
        .as_array()
        .is_some_and(|l| l.iter().any(|v| v["name"] == name))
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_breakpoints_pause_the_main_thread_and_step_over_into_and_out() {
    let env = Env::new();
    let c = env.client().await;
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("stop");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": ["stepper.js", stop], "projectRoot": debugee(),
                   "cwd": debugee()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.wait_stdout(&id).await;

    // A condition that does not parse: V8's message, nothing set.
    let e = c
        .reply(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"file": "stepper.js", "line": line_of("compute-body"),
                   "condition": "x >"}]}),
        )
        .await;
    assert!(e.is_error, "{}", e.text);
    assert!(
        e.error_text().contains("does not parse") && e.error_text().contains("SyntaxError"),
        "{}",
        e.error_text()
    );
    // A TypeScript source the program does not have.
    let e = c
        .reply(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"file": "stepper.ts", "line": 3}]}),
        )
        .await;
    assert!(
        e.error_text().contains("no TypeScript source"),
        "{}",
        e.error_text()
    );

    // A logpoint in the timer callback, and a conditional breakpoint.
    let v = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [
                {"file": "stepper.js", "line": line_of("main-call"), "message": "tick {ticks} i={i}"},
                {"file": "stepper.js", "line": line_of("main-call"), "message": "bad {nope.x}"},
                {"file": "stepper.js", "line": line_of("compute-body"), "condition": "x % 3 == 2"}]}),
        )
        .await;
    let bps = v["breakpoints"].as_array().unwrap();
    let lps: Vec<Value> = bps
        .iter()
        .filter(|b| b["kind"] == "logpoint")
        .map(|b| b["id"].clone())
        .collect();
    let bp = bps.iter().find(|b| b["kind"] == "breakpoint").unwrap();
    assert_eq!(bp["function"], "stepper.Stepper.compute", "{v}");
    let bp_id = bp["id"].as_str().unwrap().to_string();

    let p = c.wait_paused(&id).await;
    assert_eq!(p["breakpointId"], bp_id.as_str(), "{p}");
    assert_eq!(p["address"], "javascript", "{p}");
    assert_eq!(p["function"], "stepper.Stepper.compute", "{p}");
    assert_eq!(p["line"], line_of("compute-body"), "{p}");
    let x = support::local(&p, "x");
    assert_eq!(x["type"], "number", "{p}");
    let x = x["value"].as_i64().unwrap();
    assert_eq!(x % 3, 2, "the condition held: {p}");
    assert!(!has_local(&p, "__sc"), "not the probe's locals: {p}");
    // A const not reached yet reads as undefined (V8 does not tell it apart).
    assert_eq!(support::local(&p, "doubled")["type"], "undefined", "{p}");
    let frames: Vec<&str> = p["backtrace"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["function"].as_str())
        .collect();
    assert_eq!(frames[0], "compute", "{p}");
    assert!(
        !p["backtrace"].to_string().contains("preload.cjs"),
        "Strobe's runtime is not a frame of the program: {p}"
    );
    // The logpoints fired before the pause (never pausing), with the values
    // of their time; a part that throws shows the error in the message and
    // is noted once on its logpoint.
    let logs = c.events(&id, Some("logpoint")).await;
    let bad = logs
        .iter()
        .map(Value::to_string)
        .find(|l| l.contains("bad "))
        .unwrap_or_default();
    assert!(bad.contains("<error: ReferenceError"), "{logs:?}");
    let listed = c.status(&id).await;
    assert!(
        listed.to_string().contains("threw ReferenceError"),
        "{listed}"
    );
    let logs: Vec<Value> = logs
        .into_iter()
        .filter(|l| !l.to_string().contains("bad "))
        .collect();
    let last = logs.last().map(Value::to_string).unwrap_or_default();
    assert!(last.contains(&format!("i={x}")), "{logs:?}");
    assert!(last.contains("tick "), "{logs:?}");

    // Memory: a paused local (from the pause's copy), the module's binding
    // the frame sees, a path from `this`, a getter (never run) and a name
    // nobody has.
    let r = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"variable": "x"}, {"variable": "ticks"},
                   {"variable": "this.base"}, {"variable": "globalThis.stepperLazy"}, {"variable": "nope"}]}),
        )
        .await;
    let r = r["results"].as_array().unwrap();
    assert_eq!(r[0]["value"], x, "{r:?}");
    assert_eq!(r[0]["local"], true, "{r:?}");
    assert_eq!(r[1]["type"], "number", "{r:?}");
    assert!(r[1]["value"].as_i64().unwrap() > x, "{r:?}");
    assert_eq!(r[2]["value"], 7, "{r:?}");
    assert!(r[3]["error"].as_str().unwrap().contains("getter"), "{r:?}");
    assert!(
        r[4]["error"].as_str().unwrap().contains("not defined"),
        "{r:?}"
    );
    // A local set in the paused frame; the next line computes with it.
    let w = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "action": "write", "targets": [{"variable": "x", "value": 21}]}),
        )
        .await;
    assert_eq!(w["results"][0]["newValue"], 21, "{w}");
    assert_eq!(w["results"][0]["previousValue"], x, "{w}");
    let x = 21;

    // Stepping: over, into the callee (past the probe at its entry), out
    // to the caller's next line, and over the return into the callback's
    // next line.
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "remove": [bp_id, lps[0], lps[1]]}),
    )
    .await;
    let v = c.step(&id, "step-over").await;
    assert_eq!(v["line"], line_of("compute-call"), "{v}");
    assert_eq!(
        support::local(&v, "doubled")["value"],
        x * 2,
        "computed from the x written: {v}"
    );
    let v = c.step(&id, "step-into").await;
    assert_eq!(v["function"], "stepper.square", "{v}");
    assert_eq!(v["line"], line_of("square-body"), "{v}");
    assert_eq!(support::local(&v, "n")["value"], x * 2, "{v}");
    let v = c.step(&id, "step-out").await;
    assert_eq!(v["function"], "stepper.Stepper.compute", "{v}");
    assert_eq!(
        v["line"],
        line_of("compute-return"),
        "the caller's next line: {v}"
    );
    assert_eq!(support::local(&v, "sq")["value"], 4 * x * x, "{v}");
    let v = c.step(&id, "step-over").await;
    assert_eq!(v["line"], line_of("main-print"), "over the return: {v}");
    assert_eq!(support::local(&v, "out")["value"], 4 * x * x + 7, "{v}");

    // A function breakpoint with a hit count: from its second hit on.
    c.ok("debug_continue", json!({"sessionId": id, "timeoutMs": 50}))
        .await;
    let v = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"function": "stepper.square", "hitCount": 2}]}),
        )
        .await;
    let fn_bp = v["breakpoints"][0]["id"].as_str().unwrap().to_string();
    let p = c.wait_paused(&id).await;
    assert_eq!(p["function"], "stepper.square", "{p}");
    assert_eq!(p["line"], line_of("square-body"), "{p}");
    let s = c.status(&id).await;
    let listed = s["breakpoints"].to_string();
    assert!(listed.contains(&fn_bp), "{s}");

    // Removed and continued: it runs on, unpaused, to the end.
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "remove": [fn_bp]}),
    )
    .await;
    c.ok("debug_continue", json!({"sessionId": id, "timeoutMs": 50}))
        .await;
    // Running: its globals and its modules' top-level bindings (named by
    // module, as patterns name functions) are read and set; a bare
    // binding's name says which module has it; a const is not set.
    let r = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"variable": "stepperRuns"}, {"variable": "stepper.ticks"},
                   {"variable": "ticks"}, {"variable": "stepper.Stepper"}]}),
        )
        .await;
    let r = r["results"].as_array().unwrap();
    assert!(r[0]["value"].as_i64().unwrap() > 0, "{r:?}");
    assert_eq!(r[1]["type"], "number", "{r:?}");
    assert!(r[1]["value"].as_i64().unwrap() > 0, "{r:?}");
    assert!(
        r[2]["error"].as_str().unwrap().contains("stepper.ticks"),
        "{r:?}"
    );
    assert!(r[3].get("error").is_none(), "a class is read: {r:?}");
    let w = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "action": "write", "targets": [{"variable": "stepper.ticks", "value": 1000},
                   {"variable": "stepper.fs", "value": 1}]}),
        )
        .await;
    let w = w["results"].as_array().unwrap();
    assert_eq!(w[0]["newValue"], 1000, "{w:?}");
    assert!(w[0]["previousValue"].as_i64().unwrap() > 0, "{w:?}");
    assert!(
        w[1]["error"].as_str().unwrap().contains("cannot be set"),
        "{w:?}"
    );
    // The program's next tick counts on from the value written.
    let mut runs = 0;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let r = c
            .ok(
                "debug_memory",
                json!({"sessionId": id, "targets": [{"variable": "stepperRuns"}]}),
            )
            .await;
        runs = r["results"][0]["value"].as_i64().unwrap();
        if runs > 1000 {
            break;
        }
    }
    assert!(runs > 1000, "{runs}");
    std::fs::write(&stop, "").unwrap();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "ran to its end, unpaused: {st}");
}

/// Launched with STROBE_JS_DEBUGGER=0, a program has no debugger worker:
/// a breakpoint is refused with the reason and the way back.
#[tokio::test(flavor = "multi_thread")]
async fn without_the_debugger_worker_a_breakpoint_says_why() {
    let env = Env::new();
    let c = env.client().await;
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("stop");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": ["stepper.js", stop], "projectRoot": debugee(),
                   "cwd": debugee(), "env": {"STROBE_JS_DEBUGGER": "0"}}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.wait_stdout(&id).await;
    let e = c
        .reply(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"file": "stepper.js", "line": line_of("compute-body")}]}),
        )
        .await;
    assert!(e.is_error, "{}", e.text);
    assert!(
        e.error_text().contains("no Strobe debugger")
            && e.error_text().contains("STROBE_JS_DEBUGGER=0"),
        "{}",
        e.error_text()
    );
    std::fs::write(&stop, "").unwrap();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
}

/// The line of the TypeScript debugee's `stepper.ts` holding `@marker`.
fn ts_line_of(marker: &str) -> u64 {
    marker_line(
        include_str!("fixtures/javascript/debugee-ts/src/stepper.ts"),
        marker,
    )
}

/// TypeScript compiled by the real tsc with source maps: a breakpoint on a
/// TypeScript line (and on a function by its TypeScript name) is set on
/// the compiled JavaScript Node runs, and the pause is reported at the
/// TypeScript line, the compiled one kept beside it.
#[tokio::test(flavor = "multi_thread")]
async fn typescript_lines_take_breakpoints_through_source_maps() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().canonicalize().unwrap();
    support::build_typescript("debugee-ts", &["tsconfig.json", "src/stepper.ts"], &root);
    let js = std::fs::read_to_string(root.join("dist/stepper.js")).unwrap();
    let js_line = js
        .lines()
        .position(|l| l.contains("@compute-body"))
        .unwrap() as u64
        + 1;
    assert_ne!(js_line, ts_line_of("compute-body"), "the lines differ");

    let env = Env::new();
    let c = env.client().await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": ["dist/stepper.js"], "projectRoot": root, "cwd": root}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.wait_stdout(&id).await;

    let v = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"file": "src/stepper.ts", "line": ts_line_of("compute-body"),
                   "condition": "x > 2"}]}),
        )
        .await;
    let bp = &v["breakpoints"][0];
    assert_eq!(bp["line"], ts_line_of("compute-body"), "{v}");
    assert!(
        bp["file"].as_str().unwrap().ends_with("src/stepper.ts"),
        "{v}"
    );
    assert_eq!(bp["function"], "stepper.compute", "{v}");
    assert!(
        bp["addresses"][0]
            .as_str()
            .unwrap()
            .ends_with(&format!("dist/stepper.js:{js_line}")),
        "set on the compiled line: {v}"
    );
    let p = c.wait_paused(&id).await;
    assert_eq!(p["function"], "stepper.compute", "{p}");
    assert_eq!(p["line"], ts_line_of("compute-body"), "{p}");
    assert!(
        p["file"].as_str().unwrap().ends_with("src/stepper.ts"),
        "{p}"
    );
    assert_eq!(
        p["backtrace"][0]["generated"]["line"], js_line,
        "the compiled place beside it: {p}"
    );
    assert!(
        support::local(&p, "x")["value"].as_i64().unwrap() > 2,
        "{p}"
    );

    // A function by its TypeScript name stops at its first statement.
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "remove": [bp["id"]], "add": [{"function": "stepper.square"}]}),
    )
    .await;
    c.ok("debug_continue", json!({"sessionId": id, "timeoutMs": 50}))
        .await;
    let p = c.wait_paused(&id).await;
    assert_eq!(p["function"], "stepper.square", "{p}");
    assert_eq!(p["line"], ts_line_of("square-body"), "{p}");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

/// A script that ends at once: a breakpoint staged before the launch, and
/// `stopOnEntry`, are set before its first line runs (the runtime waits for
/// the worker), so both stop it.
#[tokio::test(flavor = "multi_thread")]
async fn staged_breakpoints_and_stop_on_entry_stop_a_script_that_ends_at_once() {
    let quick = |marker| marker_line(include_str!("fixtures/javascript/debugee/quick.js"), marker);
    let env = Env::new();
    let c = env.client().await;
    let v = c
        .ok(
            "debug_breakpoint",
            json!({"add": [{"file": "quick.js", "line": quick("total-add"), "condition": "n === 3"}]}),
        )
        .await;
    assert_eq!(v["mode"], "staged", "{v}");
    let r = c
        .reply(
            "debug_launch",
            json!({"command": "node", "args": ["quick.js"], "projectRoot": debugee(), "cwd": debugee(),
                   "stopOnEntry": true}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text);
    let v = &r.value;
    assert_eq!(v["pendingBreakpointsApplied"], 1, "{v}");
    assert_eq!(
        v["paused"]["line"],
        quick("quick-first"),
        "its first statement that runs, not a function's body above it: {v}"
    );
    let id = v["sessionId"].as_str().unwrap().to_string();
    assert!(c.stdout_lines(&id).await.is_empty(), "nothing ran yet");
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "remove": [v["paused"]["breakpointId"]]}),
    )
    .await;
    // On: the staged breakpoint, where its condition holds.
    let v = c.ok("debug_continue", json!({"sessionId": id})).await;
    assert_eq!(v["status"], "paused", "{v}");
    assert_eq!(v["line"], quick("total-add"), "{v}");
    assert_eq!(support::local(&v, "n")["value"], 3, "{v}");
    assert_eq!(support::local(&v, "sum")["value"], 3, "{v}");
    c.ok("debug_continue", json!({"sessionId": id, "timeoutMs": 50}))
        .await;
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    assert_eq!(c.stdout_lines(&id).await, ["total 10"]);
}

/// A program run with `--disallow-code-generation-from-strings` (no
/// `eval`, no `new Function`): Strobe checks conditions and compiles watches
/// through Node's vm, which the flag allows, so both work there.
#[tokio::test(flavor = "multi_thread")]
async fn conditions_and_watches_work_without_code_generation_from_strings() {
    let env = Env::new();
    let c = env.client().await;
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("stop");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node",
                   "args": ["--disallow-code-generation-from-strings", "stepper.js", &stop],
                   "projectRoot": debugee(), "cwd": debugee()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.wait_stdout(&id).await;
    c.ok(
        "debug_trace",
        json!({"sessionId": id, "add": ["stepper.square"], "watches": {"add": [
            {"expr": "n * 10", "label": "tens", "on": ["stepper.square"]}]}}),
    )
    .await;
    let v = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"file": "stepper.js", "line": line_of("compute-body"),
                   "condition": "x >= 3"}]}),
        )
        .await;
    let bp = v["breakpoints"][0]["id"].as_str().unwrap().to_string();
    let p = c.wait_paused(&id).await;
    assert_eq!(p["breakpointId"], bp.as_str(), "{p}");
    assert!(
        support::local(&p, "x")["value"].as_i64().unwrap() >= 3,
        "{p}"
    );
    c.ok("debug_breakpoint", json!({"sessionId": id, "remove": [bp]}))
        .await;
    c.ok("debug_continue", json!({"sessionId": id})).await;
    let enters = c.calls_of(&id, "function_enter", "stepper.square").await;
    let watched = enters
        .iter()
        .find_map(|e| {
            e["watchValues"]["tens"]
                .as_i64()
                .map(|t| (t, &e["arguments"][0]["value"]))
        })
        .unwrap_or_else(|| panic!("the watch's value: {enters:?}"));
    assert_eq!(
        json!(watched.0),
        json!(watched.1.as_i64().unwrap() * 10),
        "{enters:?}"
    );
    std::fs::write(&stop, "").unwrap();
    c.wait_ended(&id).await;
}
