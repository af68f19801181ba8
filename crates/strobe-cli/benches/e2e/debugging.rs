//! Breakpoints and memory reads: latency against gdb-style and Frida RPC baselines.

use super::*;
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::fixture;

/// Breakpoints: (1) hit → paused thread visible to the agent, from the
/// agent's trap timestamp to the daemon registering the pause, and the MCP
/// round trip of debug_continue from one pause to the next (back-to-back
/// recursive hits); (2) the cost of a hit whose condition is false (trap,
/// condition evaluated in the target, displaced resume) per call, against
/// gdb with the same conditional breakpoint and an uninstrumented run.
pub async fn breakpoint_latency(c: &support::Client) {
    let exe = support::fixture_with("debugee", &["-pthread"]);
    let (id, _) = c.launch(&exe, &[]).await;
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "add": [{"function": "fact"}]}),
    )
    .await;
    loop {
        let s = c.status(&id).await;
        if s["pausedThreads"].as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut round_trip = Vec::new();
    let mut visible = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let v = c
            .ok(
                "debug_continue",
                json!({"sessionId": id, "action": "continue", "timeoutMs": 5000}),
            )
            .await;
        let el = t.elapsed().as_secs_f64();
        visible.push(v["hitToVisibleUs"].as_f64().unwrap_or(f64::NAN));
        // fact(4) → fact(3) … hit back to back; the 4th waits for the program's next round.
        if el < 0.010 {
            round_trip.push(el * 1e6);
        }
    }
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    println!("breakpoint hit -> paused thread visible (200 hits)");
    println!(
        "  trap -> pause registered in the daemon: p50 {:>7.0} us, p95 {:>7.0} us",
        percentile(visible.clone(), 0.5),
        percentile(visible, 0.95)
    );
    println!(
        "  debug_continue -> next hit, MCP round trip ({} back-to-back hits): p50 {:>7.0} us, p95 {:>7.0} us",
        round_trip.len(),
        percentile(round_trip.clone(), 0.5),
        percentile(round_trip, 0.95)
    );

    let n = 20_000;
    let lp = fixture("bp_loop");
    let loop_ns = |out: &str| -> f64 {
        out.lines()
            .find_map(|l| l.strip_prefix("loop_ns "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(f64::NAN)
    };
    let bare = std::process::Command::new(&lp)
        .args([n.to_string(), "0".into()])
        .output()
        .unwrap();
    let bare_ns = loop_ns(&String::from_utf8_lossy(&bare.stdout));
    let (id, _) = c.launch(&lp, &[&n.to_string(), "1500"]).await;
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "add": [{"function": "bp_target", "condition": "n < 0"}]}),
    )
    .await;
    c.wait_ended(&id).await;
    let out = c.events(&id, Some("stdout")).await;
    let strobe_ns = out
        .iter()
        .map(|e| loop_ns(e["text"].as_str().unwrap_or("")))
        .find(|v| v.is_finite())
        .unwrap_or(f64::NAN);
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    let gdb = std::process::Command::new("gdb")
        .args([
            "-batch",
            "-nx",
            "-ex",
            "break bp_target if n < 0",
            "-ex",
            "run",
            "--args",
        ])
        .arg(&lp)
        .args([n.to_string(), "0".into()])
        .output();
    let gdb_ns = gdb
        .ok()
        .map(|o| loop_ns(&String::from_utf8_lossy(&o.stdout)))
        .unwrap_or(f64::NAN);
    println!("conditional breakpoint that never holds, {n} hits (per call)");
    println!(
        "  uninstrumented:                 {:>10.3} us",
        bare_ns / n as f64 / 1e3
    );
    println!(
        "  strobe (condition in target):   {:>10.3} us",
        strobe_ns / n as f64 / 1e3
    );
    println!(
        "  gdb (break if, same condition): {:>10.3} us",
        gdb_ns / n as f64 / 1e3
    );
    println!(
        "  ratio gdb/strobe:               {:>10.1}x",
        gdb_ns / strobe_ns
    );
}

/// debug_memory latency: MCP round trip of a one-target read, against the
/// bare `/proc/PID/mem` read it wraps (measured here when this process may
/// read the target, i.e. as root).
/// What reading a global through the agent would cost: a Frida RPC
/// (`rpc.exports`) from Python to another running copy of `exe`, p50/p95
/// in µs over 1,000 calls.
fn frida_rpc_read(exe: &std::path::Path) -> Option<(f64, f64)> {
    const SCRIPT: &str = r#"
import frida, sys, time
pid = int(sys.argv[1])
session = frida.attach(pid)
script = session.create_script("""
const g = Process.mainModule.findSymbolByName("g_counter");
rpc.exports = { read() { return g.readU32(); } };
""")
script.load()
read = script.exports_sync.read
for _ in range(50):
    read()
times = []
for _ in range(1000):
    t = time.perf_counter()
    read()
    times.append((time.perf_counter() - t) * 1e6)
times.sort()
print(times[500], times[950])
session.detach()
"#;
    let mut target = Command::new(exe)
        .args(["0", "60"])
        .stdout(Stdio::null())
        .spawn()
        .ok()?;
    std::thread::sleep(Duration::from_millis(200));
    let out = Command::new(support::venv().join("bin/python"))
        .args(["-c", SCRIPT, &target.id().to_string()])
        .output();
    let _ = target.kill();
    let _ = target.wait();
    let out = out.ok()?;
    if !out.status.success() {
        eprintln!(
            "frida rpc read failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut nums = text
        .split_whitespace()
        .filter_map(|n| n.parse::<f64>().ok());
    Some((nums.next()?, nums.next()?))
}

pub async fn memory_read_latency(c: &support::Client) {
    let exe = fixture("typed");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": ["0", "60"], "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let pid = v["pid"].as_u64().unwrap() as u32;
    let args = json!({"sessionId": id, "targets": [{"variable": "g_counter"}]});
    let first = c.ok("debug_memory", args.clone()).await;
    let addr = u64::from_str_radix(
        first["results"][0]["address"]
            .as_str()
            .unwrap()
            .trim_start_matches("0x"),
        16,
    )
    .unwrap();
    let mut mcp = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        c.ok("debug_memory", args.clone()).await;
        mcp.push(t.elapsed().as_secs_f64());
    }
    let direct = std::fs::File::open(format!("/proc/{pid}/mem"))
        .ok()
        .map(|f| {
            use std::os::unix::fs::FileExt;
            let mut buf = [0u8; 4];
            let t = Instant::now();
            for _ in 0..10_000 {
                f.read_at(&mut buf, addr).unwrap();
            }
            t.elapsed().as_secs_f64() / 10_000.0
        });
    let rpc = frida_rpc_read(&exe);
    // Poll jitter: 50 ms for 3 s; deviation of each gap from 50 ms.
    c.ok(
        "debug_memory",
        json!({"sessionId": id, "targets": [{"variable": "g_counter"}], "poll": {"intervalMs": 50, "durationMs": 3000}}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(3300)).await;
    let snaps = c.events(&id, Some("variable_snapshot")).await;
    let ts: Vec<f64> = snaps
        .iter()
        .map(|e| e["timestampNs"].as_u64().unwrap() as f64 / 1e6)
        .collect();
    let mut dev: Vec<f64> = ts.windows(2).map(|w| (w[1] - w[0] - 50.0).abs()).collect();
    dev.sort_by(|a, b| a.partial_cmp(b).unwrap());
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    mcp.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("memory read (one global, 200 reads)");
    println!(
        "  debug_memory over MCP (resolve, read, render): p50 {:.3} ms  p95 {:.3} ms",
        mcp[100] * 1e3,
        mcp[190] * 1e3
    );
    match direct {
        Some(d) => println!(
            "  bare /proc/PID/mem read (4 bytes):            {:.2} µs",
            d * 1e6
        ),
        None => println!(
            "  bare /proc/PID/mem read: not measured (this process may not read the target)"
        ),
    }
    match (rpc, direct) {
        (Some((p50, p95)), Some(d)) => println!(
            "  Frida RPC read (exports.read, 1000 calls):    p50 {p50:.1} µs  p95 {p95:.1} µs  ({:.0}x the /proc read)",
            p50 / (d * 1e6)
        ),
        (Some((p50, p95)), None) => {
            println!(
                "  Frida RPC read (exports.read, 1000 calls):    p50 {p50:.1} µs  p95 {p95:.1} µs"
            )
        }
        (None, _) => println!("  Frida RPC read: not measured (see the script's output above)"),
    }
    if !dev.is_empty() {
        println!(
            "poll jitter (50 ms for 3 s, {} samples): |gap - 50 ms| p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms",
            ts.len(),
            dev[dev.len() / 2],
            dev[dev.len() * 95 / 100],
            dev[dev.len() - 1]
        );
    }
}
