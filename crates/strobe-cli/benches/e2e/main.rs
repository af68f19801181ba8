//! End-to-end benchmarks through the real MCP proxy, daemon, bridge and store,
//! each beside an uninstrumented baseline measured in the same run.
//! Run: `cargo bench -p strobe --bench e2e` (needs STROBE_VENV; `./dev bench` sets it).
//! `STROBE_BENCH_ONLY=hooks`, `=memory`, `=breakpoints`, `=forks`, `=tests`, `=python`, `=javascript`, `=javascript-launch`, `=javascript-logpoint`, `=gui` (debug_ui: tree, screenshot, vision), `=gui-action` (debug_ui_action: raw clicks beside xdotool, verified round trips, a learned and a cached knob), `=channels` (scenario steps, wait.until wake-up, MIDI → traced callback, xruns; needs jackd), `=sockets` (the program's socket I/O recorded by a net channel), `=dap` (strobe dap beside lldb-vscode-16 and MCP) `=overhead` (native tracing per call) or `=delivery` (sustained delivery: shared ring beside messages) runs only that benchmark.

#[path = "../../../../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{Env, fixture};

mod channels;
mod dap;
mod debugging;
mod gui;
mod gui_action;
use debugging::{breakpoint_latency, memory_read_latency};
mod javascript;
mod processes;
use processes::{fork_following, test_runs};
mod python;
mod sockets;
use python::python_tracing;
mod tracing;
use tracing::{hook_installation, trace_overhead};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn baseline_first_line(exe: &std::path::Path) -> f64 {
    let t = Instant::now();
    let mut child = Command::new(exe)
        .arg("1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    let _ = child.kill();
    let _ = child.wait();
    secs
}

fn baseline_flood(exe: &std::path::Path, mb: u64) -> f64 {
    let t = Instant::now();
    let mut child = Command::new(exe)
        .arg(mb.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    while out.read(&mut buf).unwrap() > 0 {}
    child.wait().unwrap();
    t.elapsed().as_secs_f64()
}

fn timed(cmd: &mut Command) -> f64 {
    let t = Instant::now();
    // frida-trace exits non-zero when its target ends ("Process terminated").
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    t.elapsed().as_secs_f64()
}

/// Seconds from `debug_launch` (with `launch` as its arguments) to the
/// first stdout event being queryable; the session is then waited for and
/// stopped, and the pool given time to warm its next bridge, as between an
/// agent's launches.
async fn launch_to_first_stdout(c: &support::Client, launch: serde_json::Value) -> f64 {
    let t = Instant::now();
    let v = c.ok("debug_launch", launch).await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    loop {
        let q = c
            .ok(
                "debug_query",
                json!({"sessionId": id, "eventType": "stdout", "limit": 1}),
            )
            .await;
        if q["totalCount"].as_u64().unwrap() > 0 {
            break;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    c.wait_ended(&id).await;
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    secs
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let runs: usize = std::env::var("STROBE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let mb: u64 = std::env::var("STROBE_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let env = Env::with_settings(json!({"events.maxPerSession": 10_000_000}));
    let c = env.client().await;
    let output = fixture("output");
    let flood = fixture("flood");

    // Warm-up: starts the daemon, compiles the agent, fills the bridge pool.
    let (id, _) = c.launch(&output, &[]).await;
    c.wait_ended(&id).await;
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    match std::env::var("STROBE_BENCH_ONLY").as_deref() {
        Ok("gui") => {
            gui::gui_observation(&c, runs).await;
            return;
        }
        Ok("gui-action") => {
            gui_action::gui_interaction(&c, runs).await;
            return;
        }
        Ok("sockets") => {
            sockets::sockets(&c, runs).await;
            return;
        }
        Ok("dap") => {
            dap::dap(&env, &c, runs).await;
            return;
        }
        Ok("channels") => {
            channels::channels(&c, runs).await;
            return;
        }
        Ok("hooks") => {
            hook_installation(&c).await;
            return;
        }
        Ok("memory") => {
            memory_read_latency(&c).await;
            return;
        }
        Ok("breakpoints") => {
            breakpoint_latency(&c).await;
            return;
        }
        Ok("forks") => {
            fork_following(&c).await;
            return;
        }
        Ok("tests") => {
            test_runs(&c).await;
            return;
        }
        Ok("python") => {
            python_tracing(&c, runs).await;
            return;
        }
        Ok("javascript") => {
            javascript::javascript_tracing(&c, runs).await;
            return;
        }
        Ok("javascript-logpoint") => {
            javascript::javascript_logpoint(&c, runs).await;
            return;
        }
        Ok("javascript-launch") => {
            javascript::javascript_launch(&c, runs).await;
            return;
        }
        Ok("overhead") => {
            trace_overhead(&c).await;
            return;
        }
        Ok("delivery") => {
            tracing::delivery(&c, runs).await;
            return;
        }
        _ => {}
    }

    let mut strobe = Vec::new();
    for _ in 0..runs {
        let launch = json!({"command": output, "projectRoot": output.parent().unwrap()});
        strobe.push(launch_to_first_stdout(&c, launch).await);
    }
    let base: Vec<f64> = (0..runs).map(|_| baseline_first_line(&output)).collect();
    let (s, b) = (median(strobe), median(base));
    println!("launch -> first stdout event queryable ({runs} runs, median, warm bridge)");
    println!(
        "  strobe (debug_launch + debug_query over MCP): {:>9.1} ms",
        s * 1e3
    );
    println!(
        "  baseline (spawn, read first line from pipe):  {:>9.3} ms",
        b * 1e3
    );
    println!(
        "  ratio:                                        {:>9.0}x",
        s / b
    );

    trace_overhead(&c).await;
    tracing::delivery(&c, runs.min(3)).await;
    hook_installation(&c).await;
    memory_read_latency(&c).await;
    breakpoint_latency(&c).await;
    fork_following(&c).await;
    python_tracing(&c, runs).await;
    javascript::javascript_tracing(&c, runs).await;
    gui::gui_observation(&c, runs).await;
    gui_action::gui_interaction(&c, runs).await;
    channels::channels(&c, runs).await;

    let t = Instant::now();
    let (id, _) = c.launch(&flood, &[&mb.to_string()]).await;
    let st = c.wait_ended(&id).await;
    let strobe_secs = t.elapsed().as_secs_f64();
    assert_eq!(
        st["events"]["stored"].as_u64().unwrap(),
        mb * 16_384 + 2,
        "every line stored: {st}"
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    let base_secs = baseline_flood(&flood, mb);
    println!(
        "output throughput, {mb} MiB of 64-byte lines ({} lines)",
        mb * 16_384
    );
    println!(
        "  strobe (captured, stored, queryable):  {:>8.1} MiB/s  {:>10.0} lines/s",
        mb as f64 / strobe_secs,
        (mb * 16_384) as f64 / strobe_secs
    );
    println!(
        "  baseline (pipe to a reader, discarded): {:>7.1} MiB/s  {:>10.0} lines/s",
        mb as f64 / base_secs,
        (mb * 16_384) as f64 / base_secs
    );
    println!(
        "  ratio baseline/strobe:                 {:>8.2}x",
        strobe_secs / base_secs
    );
}
