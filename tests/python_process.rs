//! A traced Python program's process: the children it starts with
//! `subprocess` (followed through the fork guard) and the clock its records
//! are stamped with. Real CPython 3.11 under real Frida, through MCP.

mod support;

use serde_json::json;
use support::Env;

#[tokio::test(flavor = "multi_thread")]
async fn a_traced_program_that_runs_subprocesses_finishes() {
    let env = Env::new();
    let c = env.client().await;
    let dir = env.path().join("spawner");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("spawner.py"),
        "import subprocess, sys\n\n\ndef run_child(code):\n    \
         r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)\n    \
         return r.stdout or f'rc={r.returncode} err={r.stderr}'\n\n\
         print(run_child('print(6 * 7)').strip(), flush=True)\n",
    )
    .unwrap();
    c.ok("debug_trace", json!({"add": ["spawner.run_child"]}))
        .await;
    // The child is followed (the default). `_posixsubprocess` vforks, and
    // the fork guard must reach that module's import slot after the loader
    // relocated it: before, the slot went back to vfork, the guard never
    // ran, and the child died in Frida's fork handling (rc=-11) in 6 runs
    // of 10 once the parent had trace records to ship.
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "python3", "args": [dir.join("spawner.py")], "projectRoot": dir}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    let out = c.calls_of(&id, "function_exit", "spawner.run_child").await;
    assert_eq!(out[0]["returnValue"], "42\n", "{out:?}");
    let exits = c.events(&id, Some("process_exit")).await;
    assert!(
        exits
            .iter()
            .any(|e| e["origin"] == "exec" && e["exitCode"] == 0),
        "the followed child's exit: {exits:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn record_timestamps_follow_the_monotonic_clock() {
    // Records are stamped from the CPU's counter, converted to
    // CLOCK_MONOTONIC and re-anchored as the program runs (agent
    // src/tracers/clock.ts). Each call passes the interpreter's own
    // CLOCK_MONOTONIC reading (time.monotonic_ns) taken just before it: the
    // gap between that reading and the call's stored timestamp must stay
    // the same across 1.5 s of calls (a wrong rate or a bad anchor spreads
    // it by milliseconds; re-anchoring every 50 ms keeps a rate error of
    // 0.2 % within 100 µs), and every exit comes after its enter.
    let env = Env::new();
    let c = env.client().await;
    let dir = env.path().join("clocked");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("clocked.py"),
        "import time\n\n\ndef mark(t):\n    return t\n\n\n\
         for _ in range(75):\n    mark(time.monotonic_ns())\n    time.sleep(0.02)\n",
    )
    .unwrap();
    c.ok("debug_trace", json!({"add": ["clocked.mark"]})).await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "python3", "args": [dir.join("clocked.py")], "projectRoot": dir}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    let enters = c.calls_of(&id, "function_enter", "clocked.mark").await;
    let exits = c.calls_of(&id, "function_exit", "clocked.mark").await;
    assert_eq!((enters.len(), exits.len()), (75, 75));
    let gaps: Vec<i64> = enters
        .iter()
        .map(|e| {
            let stored = e["timestampNs"].as_i64().unwrap();
            let read = e["arguments"][0]["value"]
                .as_i64()
                .unwrap_or_else(|| panic!("{e}"));
            stored - read
        })
        .collect();
    // Against the median, so that a call the machine preempted between its
    // reading and its stamp (a larger gap, once in a while) does not count.
    let mut sorted = gaps.clone();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2];
    let off = gaps
        .iter()
        .filter(|g| (**g - median).abs() > 50_000)
        .count();
    assert!(
        off <= gaps.len() / 10,
        "{off} of {} stamps are more than 50 µs off CLOCK_MONOTONIC: {gaps:?}",
        gaps.len()
    );
    let mut last = 0;
    for (enter, exit) in enters.iter().zip(&exits) {
        let (a, b) = (
            enter["timestampNs"].as_i64().unwrap(),
            exit["timestampNs"].as_i64().unwrap(),
        );
        assert!(last <= a && a <= b, "enter {a} exit {b} after {last}");
        last = b;
    }
}
