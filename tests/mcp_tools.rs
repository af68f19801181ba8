//! The MCP tools end to end: real `strobe mcp` proxy → real daemon → real
//! Frida bridge → C fixtures built with gcc -g; results read back through
//! rmcp from the real SQLite store.

mod support;

use serde_json::{Value, json};
use std::time::Duration;
use support::{Env, fixture};

fn texts(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            format!(
                "{}:{}",
                e["eventType"].as_str().unwrap(),
                e["text"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn stdout_stderr_interleave_and_exit_code_is_recorded() {
    let env = Env::new();
    let c = env.client().await;
    let (id, pid) = c.launch(&fixture("output"), &["5"]).await;
    assert!(pid > 0);
    let status = c.wait_ended(&id).await;
    assert_eq!(status["state"], "exited", "{status}");
    assert_eq!(status["exitCode"], 5);

    let all = c.events(&id, None).await;
    let output: Vec<&Value> = all
        .iter()
        .filter(|e| e["eventType"] != "process_exit")
        .collect();
    let t = texts(&output.iter().map(|v| (*v).clone()).collect::<Vec<_>>());
    assert_eq!(
        &t[..6],
        [
            "stdout:out 0",
            "stderr:err 0",
            "stdout:out 1",
            "stderr:err 1",
            "stdout:out 2",
            "stderr:err 2"
        ],
        "interleaving order of stdout and stderr is kept"
    );
    let bytes = output
        .iter()
        .find(|e| e["text"].as_str().unwrap_or("").starts_with("bytes"))
        .unwrap();
    assert_eq!(bytes["nonUtf8"], true, "{bytes}");
    assert_eq!(
        bytes["bytesBase64"], "Ynl0ZXMg//4gZW5k",
        "raw bytes preserved losslessly"
    );
    let last = output.last().unwrap();
    assert_eq!(last["text"], "no newline at exit");
    assert_eq!(last["partialLine"], true);
    let exit = all.last().unwrap();
    assert_eq!(exit["eventType"], "process_exit");
    assert_eq!(exit["exitCode"], 5);
    let ts: Vec<u64> = all
        .iter()
        .map(|e| e["timestampNs"].as_u64().unwrap())
        .collect();
    assert!(
        ts.windows(2).all(|w| w[0] <= w[1]),
        "one monotonic clock: {ts:?}"
    );

    let only_err = c.events(&id, Some("stderr")).await;
    assert_eq!(
        texts(&only_err),
        ["stderr:err 0", "stderr:err 1", "stderr:err 2"]
    );
    let q = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "textContains": "err 1", "verbose": true}),
        )
        .await;
    assert_eq!(q["totalCount"], 1);
    assert_eq!(q["events"][0]["pid"], pid);
}

#[tokio::test(flavor = "multi_thread")]
async fn crashes_record_their_signal() {
    let env = Env::new();
    let c = env.client().await;
    for (mode, signal) in [
        ("segv", "SIGSEGV"),
        ("abort", "SIGABRT"),
        ("bus", "SIGBUS"),
        ("fpe", "SIGFPE"),
        ("ill", "SIGILL"),
    ] {
        let (id, _) = c.launch(&fixture("crash"), &[mode]).await;
        let status = c.wait_ended(&id).await;
        assert_eq!(status["state"], "crashed", "{status}");
        assert_eq!(status["signal"], signal);
        let crash = c.events(&id, Some("crash")).await;
        assert_eq!(crash.len(), 1);
        assert_eq!(crash[0]["signal"], signal);
        assert!(
            crash[0]["backtrace"]
                .as_array()
                .is_some_and(|b| !b.is_empty())
        );
        let err = c.events(&id, Some("stderr")).await;
        assert_eq!(err[0]["text"], format!("about to crash: {mode}"));
        // The crashing frame's locals, read through DWARF: the faulting
        // function for a segfault, the caller of abort() (past libc) for an abort.
        let frame = &crash[0]["frame"];
        let local = |name: &str| {
            frame["locals"]
                .as_array()
                .unwrap_or_else(|| panic!("no locals: {}", crash[0]))
                .iter()
                .find(|l| l["name"] == name)
                .unwrap_or_else(|| panic!("no local {name}: {frame}"))["value"]
                .clone()
        };
        // The calls that led here are listed with their ids.
        let preceding = crash[0]["precedingEvents"].as_array().unwrap();
        assert!(
            preceding
                .iter()
                .any(|e| e["kind"] == "stderr" && e["text"] == err[0]["text"]),
            "{preceding:?}"
        );
        assert!(preceding.iter().all(|e| e["id"].as_u64().is_some()));
        let memory = &crash[0]["memory"];
        match mode {
            "segv" => {
                assert_eq!(frame["function"], "write_through", "{frame}");
                assert_eq!(frame["frameIndex"], 0);
                assert_eq!(local("value"), 21);
                assert_eq!(local("doubled"), 42);
                assert_eq!(local("p"), Value::Null, "a NULL pointer: {frame}");
                assert_eq!(memory["operation"], "write");
                assert_eq!(memory["address"], "0x0");
                assert!(memory["cause"].as_str().unwrap().contains("null pointer"));
            }
            "abort" => {
                assert_eq!(frame["function"], "check_limit", "{frame}");
                assert!(frame["frameIndex"].as_u64().unwrap() > 0, "{frame}");
                assert_eq!(local("limit"), 5);
                assert_eq!(local("over"), 2);
            }
            "bus" => {
                // Frida reports SIGBUS as an access violation: the mapping
                // (a file shorter than the page) tells them apart.
                assert_eq!(frame["function"], "read_mapped", "{frame}");
                assert_eq!(memory["operation"], "read");
                assert!(
                    memory["cause"]
                        .as_str()
                        .unwrap()
                        .contains("past the end of the file"),
                    "{memory}"
                );
            }
            "fpe" => {
                assert_eq!(frame["function"], "divide", "{frame}");
                assert_eq!(frame["frameIndex"], 0);
                assert_eq!(local("total"), 84);
                assert_eq!(local("parts"), 0);
                assert_eq!(crash[0]["kind"], "arithmetic");
            }
            _ => {
                assert_eq!(frame["function"], "unreachable_state", "{frame}");
                assert_eq!(local("state"), 3);
                assert_eq!(crash[0]["kind"], "illegal-instruction");
            }
        }
    }
}

/// A stack overflow leaves the kernel no stack to run a signal handler on:
/// without the signal stacks the agent gives the program's threads, the
/// process died unreported. On the main thread and on a thread of its own,
/// it is a crash named as an overflow, with the recursing frames.
#[tokio::test(flavor = "multi_thread")]
async fn a_stack_overflow_is_a_crash_with_the_recursing_frames() {
    let env = Env::new();
    let c = env.client().await;
    for mode in ["overflow", "thread-overflow"] {
        let (id, pid) = c.launch(&fixture("crash"), &[mode]).await;
        let status = c.wait_ended(&id).await;
        assert_eq!(status["state"], "crashed", "{mode}: {status}");
        let crash = c.events(&id, Some("crash")).await;
        assert_eq!(crash.len(), 1, "{mode}: {crash:?}");
        let crash = &crash[0];
        assert_eq!(crash["kind"], "access-violation", "{mode}: {crash}");
        assert_eq!(crash["stackOverflow"], true, "{mode}: {crash}");
        assert!(
            crash["memory"]["cause"]
                .as_str()
                .is_some_and(|c| c.starts_with("stack overflow")),
            "{mode}: {crash}"
        );
        let main_thread = crash["tid"] == pid;
        assert_eq!(main_thread, mode == "overflow", "{mode}: {crash}");
        // The recursion is one frame standing for the run of them.
        let frames = crash["backtrace"].as_array().unwrap();
        assert_eq!(frames[0]["name"], "descend", "{mode}: {crash}");
        let run = frames
            .iter()
            .find(|f| f["repeated"].as_u64().is_some_and(|n| n > 10))
            .unwrap_or_else(|| panic!("{mode}: no run of repeated frames: {crash}"));
        assert_eq!(run["name"], "descend", "{mode}: {run}");
        let exit = c.events(&id, Some("process_exit")).await;
        assert!(
            exit[0]["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("stack overflow in descend (crash.c:")),
            "{mode}: {exit:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn classic_executables_get_crash_frames_memory_and_breakpoints() {
    // A non-PIE executable's symbols count from 0x400000, a PIE's from 0:
    // image bases must come out right for both (and for lld's layout,
    // covered by the Rust panic test).
    let env = Env::new();
    let c = env.client().await;
    let crash = support::fixture_with("crash", &["-no-pie"]);
    let (id, _) = c.launch(&crash, &["fpe"]).await;
    let s = c.wait_ended(&id).await;
    assert_eq!(s["signal"], "SIGFPE", "{s}");
    let event = c.events(&id, Some("crash")).await;
    let frame = &event[0]["frame"];
    assert_eq!(frame["function"], "divide", "{}", event[0]);
    let parts = frame["locals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "parts")
        .unwrap();
    assert_eq!(parts["value"], 0);

    let typed = support::fixture_with("typed", &["-no-pie"]);
    let (id, pid) = c.launch(&typed, &["0", "60"]).await;
    let r = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"variable": "g_ratio"}]}),
        )
        .await;
    assert_eq!(r["results"][0]["value"], 0.5, "{r}");
    let b = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"function": "main"}]}),
        )
        .await;
    let address = b["breakpoints"][0]["addresses"][0].as_str().unwrap();
    assert!(address.starts_with("0x40"), "{b}");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    assert!(support::wait_until(Duration::from_secs(10), || {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    }));
}

#[tokio::test(flavor = "multi_thread")]
async fn uncaught_cpp_exceptions_name_their_type() {
    let env = Env::new();
    let c = env.client().await;
    let exe = support::compile_with("uncaught.cpp", "g++", &["-g", "-O0"]);
    for mode in ["std", "int"] {
        let (id, _) = c.launch(&exe, &[mode]).await;
        let s = c.wait_ended(&id).await;
        assert_eq!(s["state"], "crashed", "{s}");
        assert_eq!(s["signal"], "SIGABRT");
        let crash = c.events(&id, Some("crash")).await;
        assert_eq!(crash.len(), 1, "{crash:?}");
        let exception = &crash[0]["exception"];
        let stderr = c.events(&id, Some("stderr")).await;
        let linked: Vec<u64> = exception["stderrEventIds"]
            .as_array()
            .unwrap_or_else(|| panic!("no stderr link: {exception}"))
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert!(
            linked
                .iter()
                .all(|id| stderr.iter().any(|e| e["id"].as_u64() == Some(*id))),
            "{linked:?} {stderr:?}"
        );
        if mode == "std" {
            assert_eq!(exception["type"], "std::runtime_error", "{exception}");
            assert_eq!(exception["what"], "config file missing: app.toml");
            assert_eq!(
                s["reason"],
                "uncaught exception std::runtime_error: config file missing: app.toml"
            );
            // The frame that threw, past libstdc++ and libc.
            let frame = &crash[0]["frame"];
            assert_eq!(frame["function"], "load_config", "{frame}");
            let attempts = frame["locals"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["name"] == "attempts")
                .unwrap_or_else(|| panic!("{frame}"));
            assert_eq!(attempts["value"], 3);
        } else {
            assert_eq!(exception["type"], "int", "{exception}");
            assert_eq!(exception["what"], Value::Null, "an int has no what()");
            let frame = &crash[0]["frame"];
            assert_eq!(frame["function"], "fail_with_code", "{frame}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rust_panics_are_crashes_with_message_and_location() {
    let env = Env::new();
    let c = env.client().await;
    let unwind = support::compile_with("panic.rs", "rustc", &["-g", "--edition", "2021"]);
    let abort = support::compile_with(
        "panic.rs",
        "rustc",
        &["-g", "--edition", "2021", "-C", "panic=abort"],
    );
    for (exe, aborts) in [(unwind, false), (abort, true)] {
        let (id, _) = c.launch(&exe, &[]).await;
        let s = c.wait_ended(&id).await;
        assert_eq!(s["state"], "crashed", "{s}");
        let crash = c.events(&id, Some("crash")).await;
        assert_eq!(crash.len(), 1, "{crash:?}");
        let panic = &crash[0]["panic"];
        assert_eq!(panic["message"], "cannot split 84 into 0 parts", "{panic}");
        assert_eq!(panic["thread"], "main");
        assert!(
            panic["file"]
                .as_str()
                .unwrap()
                .ends_with("tests/fixtures/panic.rs"),
            "{panic}"
        );
        assert_eq!(panic["line"], 7);
        assert!(s["reason"].as_str().unwrap().contains("panicked at"), "{s}");
        if aborts {
            assert_eq!(s["signal"], "SIGABRT");
            // The panicking function's frame, past the panic machinery.
            let frame = &crash[0]["frame"];
            assert_eq!(frame["function"], "panic::divide", "{frame}");
            let local = |n: &str| {
                frame["locals"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|l| l["name"] == n)
                    .unwrap_or_else(|| panic!("{frame}"))["value"]
                    .clone()
            };
            assert_eq!(local("total"), 84);
            assert_eq!(local("parts"), 0);
            // Rust's std has no frame pointers: the backtrace comes from the
            // daemon's CFI walk, through the panic machinery to main.
            let bt = crash[0]["backtrace"].as_array().unwrap();
            let at = |name: &str| {
                bt.iter()
                    .position(|f| f["name"] == name)
                    .unwrap_or_else(|| panic!("{name} not in {bt:?}"))
            };
            let divide = at("panic::divide");
            assert_eq!(at("panic::main"), divide + 1, "{bt:?}");
            assert_eq!(bt[divide]["line"], 7);
            assert_eq!(bt[divide + 1]["line"], 15);
            assert!(at("core::panicking::panic_fmt") < divide);
        } else {
            // Unwound out of main: a normal exit with 101, no signal.
            assert_eq!(s["exitCode"], 101, "{s}");
            assert_eq!(crash[0]["kind"], "panic");
            assert_eq!(crash[0]["signal"], Value::Null);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_retain_list_and_delete() {
    let env = Env::new();
    let c = env.client().await;
    let sleeper = fixture("sleeper");
    // Ids carry the minute: if the two launches straddle a minute boundary
    // there is no collision to see, so start over.
    let mut attempt = 0;
    let ((kept, kept_pid), (gone, gone_pid)) = loop {
        let a = c.launch(&sleeper, &["10"]).await;
        let b = c.launch(&sleeper, &["10"]).await;
        attempt += 1;
        if b.0 == format!("{}-2", a.0) || attempt == 3 {
            break (a, b);
        }
        for id in [&a.0, &b.0] {
            c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
                .await;
        }
    };
    assert_eq!(gone, format!("{kept}-2"), "collisions get a numeric suffix");
    assert!(support::wait_until(Duration::from_secs(10), || {
        std::path::Path::new(&format!("/proc/{kept_pid}")).exists()
    }));
    let s = c.status(&kept).await;
    assert_eq!(s["state"], "running");
    assert_eq!(s["live"], true);

    let r = c
        .ok(
            "debug_session",
            json!({"action": "stop", "sessionId": kept, "retain": true}),
        )
        .await;
    assert_eq!(r["success"], true);
    assert_eq!(r["retained"], true);
    assert!(r["eventsCollected"].as_u64().unwrap() >= 1);
    let r = c
        .ok(
            "debug_session",
            json!({"action": "stop", "sessionId": gone}),
        )
        .await;
    assert_eq!(r["retained"], false);
    for pid in [kept_pid, gone_pid] {
        assert!(
            support::wait_until(Duration::from_secs(10), || !std::path::Path::new(&format!(
                "/proc/{pid}"
            ))
            .exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z"))),
            "target {pid} still running after stop"
        );
    }

    let list = c.ok("debug_session", json!({"action": "list"})).await;
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [kept.as_str()], "the non-retained session is deleted");
    let s = c.status(&kept).await;
    assert_eq!(s["state"], "stopped");
    assert_eq!(s["retained"], true);
    let events = c.events(&kept, Some("stdout")).await;
    assert_eq!(
        events[0]["text"], "ready",
        "retained data is still queryable"
    );

    let gone_q = c.reply("debug_query", json!({"sessionId": gone})).await;
    assert!(gone_q.error_text().contains("SESSION_NOT_FOUND"));
    c.ok(
        "debug_session",
        json!({"action": "delete", "sessionId": kept}),
    )
    .await;
    let list = c.ok("debug_session", json!({"action": "list"})).await;
    assert_eq!(list["sessions"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn server_teaches_the_workflow_and_describes_every_field() {
    let env = Env::new();
    let c = env.client().await;
    let info = c.service.peer_info().expect("initialized");
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains("debug_launch") && instructions.contains("stderr"),
        "{instructions}"
    );
    let tools = c.service.list_all_tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    for want in ["debug_launch", "debug_session", "debug_query"] {
        assert!(names.contains(&want.to_string()), "{names:?}");
    }
    for t in &tools {
        assert!(
            t.description.as_ref().is_some_and(|d| d.len() > 40),
            "{} lacks a description",
            t.name
        );
        let schema = Value::Object((*t.input_schema).clone());
        // A field goes undescribed only when its name and schema say it all
        // (the tool list is held to a size budget: strobe-mcp's tool_budget).
        let self_described = ["sessionId", "args", "env", "pid"];
        for (field, prop) in schema["properties"].as_object().unwrap() {
            assert!(
                prop.get("description").is_some()
                    || prop.get("enum").is_some()
                    || self_described.contains(&field.as_str()),
                "{}.{field} has no description: {prop}",
                t.name
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn event_cap_evicts_oldest_and_reports_it() {
    // flood prints output only: its cap is events.maxOutputPerSession.
    let env = Env::with_settings(json!({"events.maxOutputPerSession": 1000}));
    let c = env.client().await;
    let (id, _) = c.launch(&fixture("flood"), &["1"]).await;
    let s = c.wait_ended(&id).await;
    assert_eq!(s["exitCode"], 0);
    let stored = s["events"]["stored"].as_u64().unwrap();
    let evicted = s["events"]["evicted"].as_u64().unwrap();
    assert!(stored <= 1000 && stored > 0, "{s}");
    // 1 MiB of 64-byte lines, "done" on stderr, and the exit event: all accounted for.
    assert_eq!(stored + evicted, 16_384 + 2, "{s}");
    let q = c
        .ok("debug_query", json!({"sessionId": id, "limit": 1}))
        .await;
    assert_eq!(q["eventsEvicted"], evicted);
    assert_eq!(
        s["events"]["evictedOutput"], evicted,
        "all of it output: {s}"
    );
    let err = c.events(&id, Some("stderr")).await;
    assert_eq!(
        err[0]["text"], "done",
        "the newest events are the ones kept"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn output_flood_is_captured_losslessly() {
    let env = Env::with_settings(json!({"events.maxOutputPerSession": 10_000_000}));
    let c = env.client().await;
    let (id, _) = c.launch(&fixture("flood"), &["32"]).await;
    let s = c.wait_ended(&id).await;
    assert_eq!(s["exitCode"], 0, "{s}");
    assert_eq!(s["events"]["stored"], 32 * 16_384 + 2, "{s}");
    assert_eq!(s["events"]["dropped"], 0);
    let q = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "stdout", "offset": 32 * 16_384 - 1}),
        )
        .await;
    assert_eq!(q["events"][0]["text"].as_str().unwrap().len(), 63);
    assert_eq!(q["hasMore"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn settings_problems_come_back_as_warnings() {
    let env = Env::with_settings(json!({"events.maxPerSession": -5, "no.such.key": true}));
    let c = env.client().await;
    let exe = fixture("output");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let w = v["warnings"].as_array().expect("warnings present");
    let w: Vec<&str> = w.iter().map(|w| w.as_str().unwrap()).collect();
    assert!(
        w.iter()
            .any(|w| w.contains("events.maxPerSession") && w.contains("default")),
        "{w:?}"
    );
    assert!(w.iter().any(|w| w.contains("no.such.key")), "{w:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sanitizer_reports_are_captured() {
    let env = Env::new();
    let c = env.client().await;
    let (id, _) = c
        .launch(
            &support::fixture_with("asan_overflow", &["-fsanitize=address"]),
            &[],
        )
        .await;
    let s = c.wait_ended(&id).await;
    // Strobe sets abort_on_error=1: the error stops the process in place.
    assert_eq!(s["state"], "crashed", "{s}");
    assert_eq!(s["signal"], "SIGABRT");
    assert!(
        s["reason"]
            .as_str()
            .unwrap_or("")
            .starts_with("AddressSanitizer: heap-buffer-overflow"),
        "{s}"
    );
    let crash = c.events(&id, Some("crash")).await;
    assert_eq!(crash.len(), 1, "{crash:?}");
    let report = &crash[0]["sanitizer"];
    assert_eq!(report["tool"], "AddressSanitizer", "{report}");
    assert!(
        report["summary"]
            .as_str()
            .unwrap()
            .contains("heap-buffer-overflow")
    );
    let first = report["firstEventId"].as_u64().unwrap();
    let last = report["lastEventId"].as_u64().unwrap();
    assert!(first < last, "{report}");
    // The frame that overflowed, with its locals.
    assert_eq!(crash[0]["frame"]["function"], "main", "{}", crash[0]);
    let out = c.events(&id, Some("stdout")).await;
    assert_eq!(out[0]["text"], "before overflow");
    let err: Vec<String> = c
        .events(&id, Some("stderr"))
        .await
        .iter()
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    assert!(
        err.iter()
            .any(|l| l.contains("ERROR: AddressSanitizer: heap-buffer-overflow")),
        "{err:?}"
    );
    assert!(
        err.iter()
            .any(|l| l.starts_with("SUMMARY: AddressSanitizer")),
        "the whole report is kept"
    );

    // Told not to abort, ASan leaves through exit_group(1): still a crash,
    // named by its report.
    let exe = support::fixture_with("asan_overflow", &["-fsanitize=address"]);
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap(),
                   "env": {"ASAN_OPTIONS": "abort_on_error=0"}}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap();
    let s = c.wait_ended(id).await;
    assert_eq!(s["state"], "crashed", "{s}");
    assert_eq!(s["signal"], Value::Null);
    let crash = c.events(id, Some("crash")).await;
    assert_eq!(crash.len(), 1, "{crash:?}");
    assert_eq!(crash[0]["kind"], "sanitizer");
    assert_eq!(crash[0]["sanitizer"]["tool"], "AddressSanitizer");
}

/// The pid of the bridge that launched `target` (its parent).
fn bridge_of(target: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{target}/stat")).unwrap();
    stat.rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dying_bridge_fails_its_session_and_the_daemon_lives_on() {
    let env = Env::new();
    let c = env.client().await;
    let (id, target) = c.launch(&fixture("sleeper"), &["10"]).await;
    let bridge = bridge_of(target);
    let cmdline = std::fs::read_to_string(format!("/proc/{bridge}/cmdline")).unwrap();
    assert!(cmdline.contains("bridge-"), "{cmdline}");
    support::signal(bridge, 9);
    let s = c.wait_ended(&id).await;
    assert_eq!(s["state"], "failed", "{s}");
    assert!(s["reason"].as_str().unwrap().contains("bridge"), "{s}");
    assert!(
        support::wait_until(Duration::from_secs(10), || std::fs::read_to_string(
            format!("/proc/{target}/stat")
        )
        .map_or(true, |st| st.contains(") Z"))),
        "the orphaned target was stopped"
    );
    // The daemon keeps serving, and can launch again.
    let (id2, _) = c.launch(&fixture("output"), &[]).await;
    assert_eq!(c.wait_ended(&id2).await["state"], "exited");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hung_bridge_is_detected() {
    let env = Env::with_settings(json!({"bridge.requestTimeoutMs": 500}));
    let c = env.client().await;
    let (id, target) = c.launch(&fixture("sleeper"), &["10"]).await;
    let bridge = bridge_of(target);
    support::signal(bridge, 19); // SIGSTOP: alive but silent
    let s = c.wait_ended(&id).await;
    assert_eq!(s["state"], "failed", "{s}");
    assert!(
        s["reason"].as_str().unwrap().contains("stopped answering"),
        "{s}"
    );
    support::signal(bridge, 9);
}
