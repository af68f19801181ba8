//! Python breakpoints, logpoints and stepping end to end, through MCP on
//! real CPython 3.11 under Frida: line and function breakpoints with
//! Python conditions and hit counts, a line without code moved to the next
//! one, a condition that does not compile, the paused frame's typed locals
//! and Python backtrace, one thread paused while another runs on (its
//! logpoint keeps firing), and step over / into / out.

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{Client, Env, pyenv_python};

fn debugee() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/python/debugee")
        .canonicalize()
        .unwrap()
}

/// The line of `stepper.py` holding `@marker`.
fn line_of(marker: &str) -> u64 {
    let src = include_str!("fixtures/python/debugee/stepper.py");
    let tag = format!("@{marker}");
    src.lines()
        .position(|l| l.ends_with(&tag))
        .unwrap_or_else(|| panic!("no marker {marker}")) as u64
        + 1
}

async fn logpoints(c: &Client, id: &str) -> Vec<Value> {
    c.events(id, Some("logpoint")).await
}

#[tokio::test(flavor = "multi_thread")]
async fn python_breakpoints_pause_one_thread_and_step_over_into_and_out() {
    breakpoints_and_steps("python3").await;
}

/// 3.12 and 3.13 get their line events from sys.monitoring: the same
/// breakpoints, conditions, logpoints, steps and thread-only pauses.
#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_312),
    ignore = "needs CPython 3.12 (pyenv install 3.12): not found when the tests were built"
)]
async fn breakpoints_and_steps_on_cpython_312() {
    breakpoints_and_steps(pyenv_python("3.12").to_str().unwrap()).await;
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_313),
    ignore = "needs CPython 3.13 (pyenv install 3.13): not found when the tests were built"
)]
async fn breakpoints_and_steps_on_cpython_313() {
    breakpoints_and_steps(pyenv_python("3.13").to_str().unwrap()).await;
}

async fn breakpoints_and_steps(python: &str) {
    let env = Env::new();
    let c = env.client().await;
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("stop");
    let script = debugee().join("stepper.py");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": python, "args": [script, stop], "projectRoot": debugee()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    // Running: the loop printed.
    let deadline = Instant::now() + Duration::from_secs(30);
    while c.stdout_lines(&id).await.is_empty() {
        assert!(Instant::now() < deadline, "the program never printed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A condition that does not compile: the compiler's message, nothing set.
    let e = c
        .reply(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"file": "stepper.py", "line": line_of("compute-body"),
                   "condition": "x >"}]}),
        )
        .await;
    assert!(e.is_error, "{}", e.text);
    assert!(
        e.error_text().contains("does not compile") && e.error_text().contains("SyntaxError"),
        "{}",
        e.error_text()
    );

    // A logpoint on the ticker thread, and a conditional breakpoint on a
    // comment line (moved to the next line with code).
    let v = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [
                {"file": "stepper.py", "line": line_of("tick"), "message": "tick {ticks}"},
                {"file": "stepper.py", "line": line_of("compute-comment"), "condition": "x % 3 == 0"}]}),
        )
        .await;
    let bps = v["breakpoints"].as_array().unwrap();
    let lp = bps.iter().find(|b| b["kind"] == "logpoint").unwrap();
    let bp = bps.iter().find(|b| b["kind"] == "breakpoint").unwrap();
    assert_eq!(bp["line"], line_of("compute-body"), "{v}");
    assert!(
        bp["note"].as_str().unwrap_or("").contains("moved to line"),
        "{v}"
    );
    assert_eq!(bp["function"], "stepper.compute", "{v}");
    let bp_id = bp["id"].as_str().unwrap().to_string();

    let p = c.wait_paused(&id).await;
    assert_eq!(p["breakpointId"], bp_id.as_str(), "{p}");
    assert_eq!(p["function"], "stepper.compute", "{p}");
    assert_eq!(p["line"], line_of("compute-body"), "{p}");
    let x = support::local(&p, "x");
    assert_eq!(x["type"], "int", "{p}");
    assert_eq!(
        x["value"].as_i64().unwrap() % 3,
        0,
        "the condition held: {p}"
    );
    let frames: Vec<&str> = p["backtrace"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["function"].as_str())
        .collect();
    assert_eq!(&frames[..3], ["compute", "main", "<module>"], "{p}");

    // Only the main thread is paused: the ticker's logpoint keeps firing.
    let before = logpoints(&c, &id).await.len();
    let deadline = Instant::now() + Duration::from_secs(30);
    while logpoints(&c, &id).await.len() < before + 5 {
        assert!(Instant::now() < deadline, "the ticker thread stopped too");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let s = c.status(&id).await;
    assert_eq!(
        s["pausedThreads"].as_array().unwrap().len(),
        1,
        "only the main thread: {s}"
    );
    let msg = logpoints(&c, &id).await[0].to_string();
    assert!(
        msg.contains("tick "),
        "the message with ticks' value: {msg}"
    );

    // Memory: the paused frame's locals, module globals by dotted name
    // (the script's own module is __main__), and a global set.
    let r = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"variable": "x"}, {"variable": "stepper.ticks"},
                   {"variable": "os.sep"}, {"variable": "stepper.nope"}]}),
        )
        .await;
    let r = r["results"].as_array().unwrap();
    assert_eq!(r[0]["value"], x["value"], "{r:?}");
    assert_eq!(r[0]["local"], true, "{r:?}");
    assert_eq!(r[1]["type"], "int", "{r:?}");
    assert_eq!(r[2]["value"], "/", "{r:?}");
    assert!(
        r[3]["error"].as_str().unwrap().contains("not a name"),
        "{r:?}"
    );
    let w = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "action": "write", "targets": [{"variable": "stepper.ticks", "value": 100000}]}),
        )
        .await;
    assert_eq!(w["results"][0]["newValue"], 100000, "{w}");
    assert!(w["results"][0]["previousValue"].is_i64(), "{w}");
    // A paused local is set by its own thread, which stays paused; the next
    // line computes with the new value.
    let w = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "action": "write", "targets": [{"variable": "x", "value": 21}]}),
        )
        .await;
    assert_eq!(w["results"][0]["newValue"], 21, "{w}");
    assert_eq!(w["results"][0]["previousValue"], x["value"], "{w}");
    let r = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"variable": "x"}]}),
        )
        .await;
    assert_eq!(
        r["results"][0]["value"], 21,
        "the pause's copy follows: {r}"
    );
    let e = c
        .reply(
            "debug_memory",
            json!({"sessionId": id, "action": "write", "targets": [{"variable": "x", "value": [1]}]}),
        )
        .await;
    assert!(e.error_text().contains("int, float"), "{}", e.error_text());

    // Stepping: over, into the callee, out to the caller's next line, and
    // over the return into main.
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "remove": [bp_id, lp["id"]]}),
    )
    .await;
    let v = c.step(&id, "step-over").await;
    assert_eq!(v["line"], line_of("compute-call"), "{v}");
    assert_eq!(
        support::local(&v, "doubled")["value"],
        42,
        "computed from the x written: {v}"
    );
    let v = c.step(&id, "step-into").await;
    assert_eq!(v["function"], "stepper.square", "{v}");
    assert_eq!(v["line"], line_of("square-body"), "{v}");
    let v = c.step(&id, "step-out").await;
    assert_eq!(v["function"], "stepper.compute", "{v}");
    assert_eq!(v["line"], line_of("compute-return"), "{v}");
    let v = c.step(&id, "step-over").await;
    assert_eq!(v["function"], "stepper.main", "{v}");
    assert_eq!(v["line"], line_of("main-print"), "{v}");

    // A function breakpoint with a hit count: the body's first line, from
    // its second hit on.
    c.ok("debug_continue", json!({"sessionId": id})).await;
    let v = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"function": "stepper.square", "hitCount": 2}]}),
        )
        .await;
    assert_eq!(v["breakpoints"][0]["line"], line_of("square-body"), "{v}");
    let p = c.wait_paused(&id).await;
    assert_eq!(p["function"], "stepper.square", "{p}");
    assert_eq!(p["line"], line_of("square-body"), "{p}");
    let s = c.status(&id).await;
    assert_eq!(s["breakpoints"][0]["hits"], 2, "{s}");

    // The ticker went on from the value written.
    let r = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"variable": "stepper.ticks"}]}),
        )
        .await;
    assert!(r["results"][0]["value"].as_i64().unwrap() > 100000, "{r}");

    // Live expression watches: one that does not compile is refused with
    // the compiler's message; one that does is read at each call.
    let e = c
        .reply(
            "debug_trace",
            json!({"sessionId": id, "watches": {"add": [{"expr": "n +", "label": "bad", "on": ["stepper.square"]}]}}),
        )
        .await;
    assert!(
        e.is_error && e.error_text().contains("SyntaxError"),
        "{}",
        e.text
    );
    c.ok(
        "debug_trace",
        json!({"sessionId": id, "add": ["stepper.square"],
               "watches": {"add": [{"expr": "n % 7", "label": "mod7", "on": ["stepper.square"]}]}}),
    )
    .await;

    // Removed and resumed, the program finishes normally.
    let bp = v["breakpoints"][0]["id"].clone();
    c.ok("debug_breakpoint", json!({"sessionId": id, "remove": [bp]}))
        .await;
    c.ok("debug_continue", json!({"sessionId": id})).await;
    // The watch list reaches the agent before the hook: the first call
    // has its value.
    let deadline = Instant::now() + Duration::from_secs(30);
    let call = loop {
        let calls = c.calls_of(&id, "function_enter", "stepper.square").await;
        if let Some(call) = calls.into_iter().next() {
            break call;
        }
        assert!(Instant::now() < deadline, "square is traced");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let n = call["arguments"][0]["value"].as_i64().unwrap();
    assert_eq!(call["watchValues"]["mod7"], n % 7, "{call}");
    std::fs::write(&stop, "").unwrap();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_attached_interpreter_paused_at_a_breakpoint_runs_on_after_detach() {
    paused_then_detached(Path::new("/usr/bin/python3.11")).await;
}

/// Code already running (the loop in main) gets its LINE events when the
/// breakpoint is set, and the detach lets the paused thread go.
#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_312),
    ignore = "needs CPython 3.12 (pyenv install 3.12): not found when the tests were built"
)]
async fn attach_pause_and_detach_on_cpython_312() {
    paused_then_detached(&pyenv_python("3.12")).await;
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_313),
    ignore = "needs CPython 3.13 (pyenv install 3.13): not found when the tests were built"
)]
async fn attach_pause_and_detach_on_cpython_313() {
    paused_then_detached(&pyenv_python("3.13")).await;
}

async fn paused_then_detached(python: &Path) {
    use std::io::{BufRead, BufReader};
    let env = Env::new();
    let c = env.client().await;
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("stop");
    let mut target = support::Spawned::start(
        std::process::Command::new(python)
            .arg(debugee().join("stepper.py"))
            .arg(&stop)
            .stdout(std::process::Stdio::piped()),
    );
    let mut lines = BufReader::new(target.stdout.take().unwrap()).lines();
    let mut next_line = move || lines.next().expect("the target still prints").unwrap();
    next_line();
    let v = c
        .ok(
            "debug_launch",
            json!({"attachPid": target.id(), "projectRoot": debugee()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    // A breakpoint in the loop that is already running.
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "add": [{"file": "stepper.py", "line": line_of("main-print")}]}),
    )
    .await;
    let p = c.wait_paused(&id).await;
    assert_eq!(p["function"], "stepper.main", "{p}");
    assert!(support::local(&p, "value")["value"].is_i64(), "{p}");
    // Detached while paused: the thread is let go and nothing stays installed.
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    let printed: Vec<String> = (0..5).map(|_| next_line()).collect();
    assert!(
        printed.iter().all(|l| l.starts_with("compute(")),
        "{printed:?}"
    );
    let early = target.try_wait().unwrap();
    assert!(early.is_none(), "still running: {early:?}");
    std::fs::write(&stop, "").unwrap();
    let status = target.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn staged_python_breakpoints_and_stop_on_entry_hold_before_any_python_runs() {
    staged_and_stop_on_entry("python3").await;
}

/// Staged breakpoints go in through sys.monitoring as the interpreter
/// starts.
#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_312),
    ignore = "needs CPython 3.12 (pyenv install 3.12): not found when the tests were built"
)]
async fn staged_breakpoints_and_stop_on_entry_on_cpython_312() {
    staged_and_stop_on_entry(pyenv_python("3.12").to_str().unwrap()).await;
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_313),
    ignore = "needs CPython 3.13 (pyenv install 3.13): not found when the tests were built"
)]
async fn staged_breakpoints_and_stop_on_entry_on_cpython_313() {
    staged_and_stop_on_entry(pyenv_python("3.13").to_str().unwrap()).await;
}

async fn staged_and_stop_on_entry(python: &str) {
    let env = Env::new();
    let c = env.client().await;
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("stop");
    // Staged before the launch: set while the interpreter starts, with a
    // condition compiled then.
    let v = c
        .ok(
            "debug_breakpoint",
            json!({"add": [{"file": "stepper.py", "line": line_of("square-body"), "condition": "n > 4"}]}),
        )
        .await;
    assert_eq!(v["mode"], "staged", "{v}");
    // stopOnEntry on a script: its first statement, before anything ran.
    let r = c
        .reply(
            "debug_launch",
            json!({"command": python, "args": [debugee().join("stepper.py"), &stop],
                   "projectRoot": debugee(), "stopOnEntry": true}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text);
    let v = &r.value;
    assert_eq!(v["pendingBreakpointsApplied"], 1, "{v}");
    assert_eq!(
        v["paused"]["line"], 1,
        "the module docstring's statement: {v}"
    );
    assert!(
        v["paused"]["file"]
            .as_str()
            .unwrap()
            .ends_with("stepper.py"),
        "{v}"
    );
    let id = v["sessionId"].as_str().unwrap().to_string();
    assert!(c.stdout_lines(&id).await.is_empty(), "nothing ran yet");
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "remove": [v["paused"]["breakpointId"]]}),
    )
    .await;
    // On: the staged breakpoint, from its first hit whose condition holds.
    let v = c.ok("debug_continue", json!({"sessionId": id})).await;
    assert_eq!(v["status"], "paused", "{v}");
    assert_eq!(v["line"], line_of("square-body"), "{v}");
    assert!(
        support::local(&v, "n")["value"].as_i64().unwrap() > 4,
        "{v}"
    );
    let s = c.status(&id).await;
    let bps: Vec<Value> = s["breakpoints"].as_array().unwrap().clone();
    let ids: Vec<Value> = bps.iter().map(|b| b["id"].clone()).collect();
    c.ok("debug_breakpoint", json!({"sessionId": id, "remove": ids}))
        .await;
    c.ok("debug_continue", json!({"sessionId": id})).await;
    std::fs::write(&stop, "").unwrap();
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);
}
