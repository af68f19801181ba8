//! End-to-end benchmarks through the real MCP proxy, daemon, bridge and store,
//! each beside an uninstrumented baseline measured in the same run.
//! Run: `cargo bench -p strobe --bench e2e` (needs STROBE_VENV; `./dev bench` sets it).
//! `STROBE_BENCH_ONLY=hooks`, `=memory`, `=breakpoints`, `=forks` or `=tests` runs only that benchmark.

#[path = "../../../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{Env, fixture};

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

/// One run of hot_loop with `n` calls under Strobe.
struct Run {
    /// Launch to session end, seconds.
    wall: f64,
    /// Events stored.
    stored: u64,
    /// The loop's own time, as the target measured it (ns).
    loop_ns: f64,
    /// CPU time the looping thread used during the loop (ns): the hook's
    /// cost without the time the thread waited or was descheduled.
    cpu_ns: f64,
}

/// Runs hot_loop with `n` calls, traced or not.
async fn strobe_run(c: &support::Client, exe: &std::path::Path, n: u64, traced: bool) -> Run {
    if traced {
        c.ok("debug_trace", json!({"add": ["tiny"], "sampling": false}))
            .await;
    }
    let t = Instant::now();
    let v = c
        .ok("debug_launch", json!({"command": exe, "projectRoot": exe.parent().unwrap(), "env": {"HOT_LOOP_N": n.to_string()}}))
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    let secs = t.elapsed().as_secs_f64();
    if traced {
        c.ok("debug_trace", json!({"remove": ["tiny"]})).await;
    }
    let stored = st["events"]["stored"].as_u64().unwrap();
    assert_eq!(st["events"]["dropped"], 0, "lossless: {st}");
    let out = c.events(&id, Some("stdout")).await;
    let line = out[0]["text"].as_str().unwrap_or_default().to_string();
    let field = |i: usize| -> f64 {
        line.split_whitespace()
            .nth(i)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("hot_loop printed {line:?}"))
    };
    let (loop_ns, cpu_ns) = (field(1), field(2));
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    Run {
        wall: secs,
        stored,
        loop_ns,
        cpu_ns,
    }
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

/// Per-call cost of tracing a tiny function: Strobe vs frida-trace vs none.
async fn trace_overhead(c: &support::Client) {
    let n: u64 = std::env::var("STROBE_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let exe = support::compile_with("hot_loop.c", "gcc", &["-g", "-O0", "-rdynamic"]);
    // Name-and-timing rows use a build without DWARF: `tiny` is then traced
    // without a capture plan from its first call (with DWARF, its first
    // 100 ms window captures typed values before the hot-function switch,
    // and those larger records fill the ring of a burst).
    let plain = support::compile_with("hot_loop.c", "gcc", &["-g0", "-O0", "-rdynamic"]);
    let bare = |calls: u64| timed(Command::new(&exe).env("HOT_LOOP_N", calls.to_string()));
    // The bare loop is ~2 ns a call: run it 50x longer to measure it at all.
    let base = (bare(50 * n) - bare(1)).max(0.0) / (50 * n) as f64;

    // Sustained: far more records than the ring holds, so the traced
    // thread runs at the pace the daemon stores events (lossless).
    let run = strobe_run(c, &plain, n, true).await;
    assert_eq!(
        run.stored,
        2 * n + 2,
        "every call stored (enter + exit), plus the output line and the exit event"
    );
    let strobe = run.loop_ns / n as f64 * 1e-9;
    let stored = run.stored;
    // Burst: records of 100k calls fit in the agent's ring, so the traced
    // thread never waits; its CPU time is the hook's own cost (on two cores
    // the daemon ingesting meanwhile deschedules it, so not wall time).
    let burst_n = 100_000;
    let burst = strobe_run(c, &plain, burst_n, true).await;
    assert_eq!(burst.stored, 2 * burst_n + 2, "every burst call stored");
    let in_target = burst.cpu_ns / burst_n as f64 * 1e-9;
    let frida_wall = {
        let one = strobe_run(c, &plain, 1, true).await;
        (run.wall - one.wall) / n as f64
    };

    // Typed capture on every call: with sampling off, calls above
    // trace.hotCallsPerSecond are recorded without typed values, so this
    // home raises the threshold above the traced loop's rate.
    let typed_env = Env::with_settings(json!({
        "events.maxPerSession": 10_000_000,
        "trace.hotCallsPerSecond": 100_000_000
    }));
    let tc = typed_env.client().await;
    let typed_run = strobe_run(&tc, &exe, n, true).await;
    assert_eq!(typed_run.stored, 2 * n + 2, "every typed call stored");
    let typed = typed_run.loop_ns / n as f64 * 1e-9;
    // A typed call takes 7 ring slots (enter: head + 120 bytes of registers;
    // exit: head + 40 bytes): 30k calls fit.
    let typed_burst_n = 30_000;
    let typed_burst = strobe_run(&tc, &exe, typed_burst_n, true).await;
    let typed_in_target = typed_burst.cpu_ns / typed_burst_n as f64 * 1e-9;
    // And the values really were typed (checked on a short run).
    tc.ok("debug_trace", json!({"add": ["tiny"], "sampling": false}))
        .await;
    let v = tc
        .ok("debug_launch", json!({"command": exe, "projectRoot": exe.parent().unwrap(), "env": {"HOT_LOOP_N": "3"}}))
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    tc.wait_ended(&id).await;
    let q = tc
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "function_enter", "verbose": true, "limit": 1}),
        )
        .await;
    assert_eq!(q["events"][0]["arguments"][0]["name"], "x", "{q}");

    let venv = support::venv();
    let ft = venv.join("bin/frida-trace");
    let ft_n = (n / 10).max(1000);
    let ft_line = if ft.is_file() {
        let out = tempfile::NamedTempFile::new().unwrap();
        let run = |calls: u64| {
            timed(
                Command::new(&ft)
                    // frida-trace writes its handler stubs to ./__handlers__.
                    .current_dir(exe.parent().unwrap())
                    .args(["-f"])
                    .arg(&exe)
                    .args(["-i", "tiny", "-o"])
                    .arg(out.path())
                    .env("HOT_LOOP_N", calls.to_string()),
            )
        };
        let per = (run(ft_n) - run(1)) / ft_n as f64;
        format!(
            "{:>9.0} ns  ({}x strobe sustained, launch-to-exit wall time; {ft_n} calls, JS handler per call)",
            per * 1e9,
            (per / frida_wall).round()
        )
    } else {
        "not measured: pip install frida-tools into STROBE_VENV (./dev bench does)".to_string()
    };
    println!(
        "per-call cost of tracing a tiny function (enter + exit, lossless; loop time measured by the target)"
    );
    println!("  uninstrumented:                  {:>7.1} ns", base * 1e9);
    println!(
        "  strobe, in the target ({burst_n} calls): {:>5.0} ns  (traced thread's CPU time; ring never full)",
        in_target * 1e9
    );
    println!(
        "  strobe, sustained ({n} calls): {:>6.0} ns  ({stored} events stored, 0 dropped; paced by the daemon)",
        strobe * 1e9
    );
    println!(
        "  strobe typed, in the target ({typed_burst_n}): {:>4.0} ns  (arguments + return value every call)",
        typed_in_target * 1e9
    );
    println!("  strobe typed, sustained ({n}):  {:>6.0} ns", typed * 1e9);
    println!(
        "  strobe, launch-to-exit wall time: {:>6.0} ns per call (compare with frida-trace)",
        frida_wall * 1e9
    );
    println!("  frida-trace:     {ft_line}");
}

/// A C program with `n` small functions `f_0 … f_{n-1}`: main calls each
/// once, prints "ready", then keeps calling them every 100 ms.
fn many_functions(n: usize) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("strobe-bench-many-{n}"));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("many");
    if exe.is_file() {
        return exe;
    }
    let mut src = String::from("#include <stdio.h>\n#include <unistd.h>\n");
    for i in 0..n {
        src.push_str(&format!(
            "__attribute__((noinline)) int f_{i}(int x) {{ return x * 3 + {i}; }}\n"
        ));
    }
    src.push_str("static void all(int *acc) {\n");
    for i in 0..n {
        src.push_str(&format!("  *acc = f_{i}(*acc);\n"));
    }
    src.push_str(
        "}\nint main(void) { int acc = 0; all(&acc); printf(\"ready %d\\n\", acc); fflush(stdout);\n\
         for (;;) { usleep(100000); all(&acc); } }\n",
    );
    let c = dir.join("many.c");
    std::fs::write(&c, src).unwrap();
    let ok = Command::new("gcc")
        .args(["-g", "-O0", "-o"])
        .arg(&exe)
        .arg(&c)
        .status()
        .unwrap()
        .success();
    assert!(ok, "compiling {}", c.display());
    exe
}

/// Time from spawn until a line starting with "ready" is read from `cmd`'s stdout.
fn time_to_ready(mut cmd: Command) -> f64 {
    let t = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while let Some(Ok(l)) = lines.next() {
        if l.contains("ready") {
            break;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let _ = child.kill();
    let _ = child.wait();
    secs
}

/// Installing hooks on many functions: pending (before main) and live.
async fn hook_installation(c: &support::Client) {
    println!("hook installation, n functions matched by one pattern (f_*)");
    let ft = support::venv().join("bin/frida-trace");
    for n in [1_000usize, 4_000, 20_000] {
        let exe = many_functions(n);
        let root = exe.parent().unwrap();
        let bare = time_to_ready(Command::new(&exe));
        // Pending: hooked before main; time until the program's first line.
        c.ok("debug_trace", json!({"add": ["f_*"]})).await;
        let t = Instant::now();
        let v = c
            .ok("debug_launch", json!({"command": exe, "projectRoot": root}))
            .await;
        let id = v["sessionId"].as_str().unwrap().to_string();
        while c.events(&id, Some("stdout")).await.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let pending = t.elapsed().as_secs_f64();
        let st = c.status(&id).await;
        let hooked = st["trace"]["hookedFunctions"].as_u64().unwrap_or(0);
        c.ok("debug_trace", json!({"remove": ["f_*"]})).await;
        // Live: remove, then add again on the running program.
        let t = Instant::now();
        c.ok("debug_trace", json!({"sessionId": id, "remove": ["f_*"]}))
            .await;
        let unhook = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let r = c
            .ok("debug_trace", json!({"sessionId": id, "add": ["f_*"]}))
            .await;
        let live = t.elapsed().as_secs_f64();
        assert_eq!(r["hookedFunctions"], n as u64, "{r}");
        c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
            .await;
        let ft_line = if ft.is_file() && n <= 1_000 {
            let mut cmd = Command::new(&ft);
            cmd.arg("-f")
                .arg(&exe)
                .args(["-i", "f_*"])
                .current_dir(root);
            format!("{:.2} s", time_to_ready(cmd))
        } else {
            "not measured".into()
        };
        println!(
            "  n = {n:>6}: strobe launch→first line {pending:.2} s ({hooked} hooked; bare run {:.3} s), \
             live add {live:.2} s, live remove {unhook:.2} s; frida-trace -f launch→first line {ft_line}",
            bare
        );
    }
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Breakpoints: (1) hit → paused thread visible to the agent, from the
/// agent's trap timestamp to the daemon registering the pause, and the MCP
/// round trip of debug_continue from one pause to the next (back-to-back
/// recursive hits); (2) the cost of a hit whose condition is false (trap,
/// condition evaluated in the target, displaced resume) per call, against
/// gdb with the same conditional breakpoint and an uninstrumented run.
async fn breakpoint_latency(c: &support::Client) {
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

async fn memory_read_latency(c: &support::Client) {
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

/// What following forks costs: a program forking `FORKS` short workers one
/// after another (each calls a traced function), uninstrumented, under
/// Strobe not following, and following (Frida injection into each child,
/// patterns applied, fork guard round trip).
async fn fork_following(c: &support::Client) {
    const FORKS: usize = 20;
    let exe = fixture("fork_many");
    let n = FORKS.to_string();
    let base = median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                assert!(Command::new(&exe).arg(&n).status().unwrap().success());
                t.elapsed().as_secs_f64()
            })
            .collect(),
    );
    let mut unfollowed = Vec::new();
    let mut followed = Vec::new();
    for _ in 0..3 {
        unfollowed.push(fork_run(c, &exe, FORKS, false).await);
        followed.push(fork_run(c, &exe, FORKS, true).await);
    }
    let (u, f) = (median(unfollowed), median(followed));
    println!(
        "fork following: {FORKS} sequential forks, each child calls a traced function (3 runs, median)"
    );
    println!(
        "  uninstrumented run:                 {:>9.1} ms",
        base * 1e3
    );
    println!(
        "  strobe, children not followed:      {:>9.1} ms (launch to end)",
        u * 1e3
    );
    println!(
        "  strobe, children followed:          {:>9.1} ms (launch to end)",
        f * 1e3
    );
    println!(
        "  cost per followed fork:             {:>9.1} ms",
        (f - u) / FORKS as f64 * 1e3
    );
}

/// Launch to end of one fork_many run, seconds.
async fn fork_run(c: &support::Client, exe: &std::path::Path, forks: usize, follow: bool) -> f64 {
    c.ok("debug_trace", json!({"add": ["job"]})).await;
    let t = Instant::now();
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": [forks.to_string()], "projectRoot": exe.parent().unwrap(),
                   "followChildren": follow}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(st["exitCode"], 0, "{st}");
    if follow {
        let followed = st["processes"]
            .as_array()
            .map_or(0, |p| p.iter().filter(|p| p["origin"] == "fork").count());
        assert_eq!(followed, forks, "every child followed: {st}");
    }
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    secs
}

/// Copies a fixture project into a fresh directory.
fn copy_project(name: &str, files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name);
    for f in files {
        let to = dir.path().join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from.join(f), to).unwrap();
    }
    dir
}

/// Starts a debug_test run and polls it to the end; wall seconds and the result.
async fn debug_test_run(c: &support::Client, args: serde_json::Value) -> (f64, serde_json::Value) {
    let t = Instant::now();
    let id = c.ok("debug_test", args).await["testRunId"]
        .as_str()
        .unwrap()
        .to_string();
    loop {
        let s = c
            .ok("debug_test", json!({"action": "status", "testRunId": id}))
            .await;
        if s["status"] == "completed" {
            return (t.elapsed().as_secs_f64(), s);
        }
    }
}

/// debug_test beside running the framework directly (the cargo fixture,
/// already built; the unittest fixture), and how long a hanging test takes
/// to be judged stuck (a Rust deadlock, a busy loop, a Python deadlock).
async fn test_runs(c: &support::Client) {
    let cargo = copy_project(
        "cargo_project",
        &["Cargo.toml", "src/lib.rs", "tests/api.rs"],
    );
    let python = copy_project("unittest_project", &["calc.py", "test_calc.py"]);
    let direct = |program: &str, args: &[&str], dir: &std::path::Path| {
        let t = Instant::now();
        Command::new(program)
            .args(args)
            .current_dir(dir)
            .env_remove("CARGO_TARGET_DIR")
            .output()
            .unwrap();
        t.elapsed().as_secs_f64()
    };
    // Build once so both sides run the tests, not the compiler.
    direct("cargo", &["test", "--no-run"], cargo.path());
    let runs = 5;
    for (label, dir, program, args) in [
        (
            "cargo test (2 binaries, 4 tests)",
            cargo.path(),
            "cargo",
            &["test", "--no-fail-fast"][..],
        ),
        (
            "python3 -m unittest (4 tests)",
            python.path(),
            "python3",
            &["-m", "unittest", "-v"][..],
        ),
    ] {
        let mut d = Vec::new();
        let mut s = Vec::new();
        for _ in 0..runs {
            d.push(direct(program, args, dir));
            s.push(
                debug_test_run(
                    c,
                    json!({"action": "run", "projectRoot": dir.to_str().unwrap()}),
                )
                .await
                .0,
            );
        }
        let (d, s) = (median(d), median(s));
        println!("{label}, {runs} runs each, median:");
        println!("  directly:                  {:>9.1} ms", d * 1e3);
        println!(
            "  debug_test run→completed:  {:>9.1} ms (ratio {:.2}x)",
            s * 1e3,
            s / d
        );
    }
    let stuck = copy_project(
        "stuck_project",
        &["Cargo.toml", "src/lib.rs", "tests/after.rs"],
    );
    direct("cargo", &["test", "--no-run"], stuck.path());
    let py = copy_project("stuck_python", &["test_stuck.py"]);
    println!("hanging test → stuck verdict (silence from the test's last output to the verdict):");
    for (label, dir, framework, hang) in [
        ("rust deadlock", stuck.path(), "cargo", "deadlock"),
        ("rust busy loop", stuck.path(), "cargo", "spin"),
        ("python deadlock", py.path(), "unittest", "deadlock"),
    ] {
        let mut silences = Vec::new();
        for _ in 0..3 {
            let (_, r) = debug_test_run(
                c,
                json!({"action": "run", "projectRoot": dir.to_str().unwrap(), "framework": framework,
                       "env": {"STROBE_FIXTURE_HANG": hang}}),
            )
            .await;
            let s = &r["stuck"][0];
            assert!(s.is_object(), "{r}");
            silences.push(s["silentForMs"].as_f64().unwrap() / 1e3);
        }
        println!(
            "  {label:<16} verdict after {:.1} s of silence (median of 3; min {:.1}, max {:.1})",
            median(silences.clone()),
            silences.iter().cloned().fold(f64::MAX, f64::min),
            silences.iter().cloned().fold(0.0, f64::max)
        );
    }
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
        _ => {}
    }

    let mut strobe = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let (id, _) = c.launch(&output, &[]).await;
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
        strobe.push(t.elapsed().as_secs_f64());
        c.wait_ended(&id).await;
        c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
            .await;
        // Let the pool start its next warm bridge, as between an agent's launches.
        tokio::time::sleep(Duration::from_millis(400)).await;
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
    hook_installation(&c).await;
    memory_read_latency(&c).await;
    breakpoint_latency(&c).await;
    fork_following(&c).await;

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
