//! Tracing: overhead per call and sustained delivery against frida-trace, and hook installation.

use super::*;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::Env;

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
    let v = c
        .ok("debug_launch", json!({"command": exe, "projectRoot": exe.parent().unwrap(), "env": {"HOT_LOOP_N": n.to_string()}}))
        .await;
    // From the program running (launch answered: injected, hooked) to its
    // session's end, when every record is committed (the agent's exit
    // waits for the daemon to take them; the status that sees the end
    // counts committed events). Launch time, which varies by ±100 ms here,
    // is left out.
    let t = Instant::now();
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

/// Per-call cost of tracing a tiny function: Strobe vs frida-trace vs none.
pub async fn trace_overhead(c: &support::Client) {
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
pub async fn hook_installation(c: &support::Client) {
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

/// Sustained lossless delivery, the daemon draining the shared ring beside
/// the agent shipping it in messages through the Frida bridge
/// (`trace.sharedRing: false`) and the shared ring into a database with the
/// 4 KB pages stores had before 2026-11-29, interleaved run by run on the same build of
/// hot_loop (`STROBE_BENCH_ONLY=delivery`; `STROBE_BENCH_CALLS`, default
/// 2,000,000 calls = 4 M events, and `STROBE_BENCH_RUNS`). Two rates: the
/// loop's (records taken out of the ring as fast as the traced thread made
/// them, timed by the target), and into queryable rows (launch to the
/// session's end, when every event is committed, minus the same for one
/// call: the writer's queue holds up to a million events after the loop).
pub async fn delivery(c: &support::Client, runs: usize) {
    let n: u64 = std::env::var("STROBE_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000);
    let plain = support::compile_with("hot_loop.c", "gcc", &["-g0", "-O0", "-rdynamic"]);
    let messages_env = Env::with_settings(json!({
        "events.maxPerSession": 10_000_000,
        "trace.sharedRing": false
    }));
    let m = messages_env.client().await;
    // The shared ring into a database made with 4 KB pages, as every store
    // was before 2026-11-29 (an existing database keeps its page size).
    let old_pages_env = Env::with_settings(json!({"events.maxPerSession": 10_000_000}));
    {
        let db = rusqlite::Connection::open(old_pages_env.path().join("strobe.db")).unwrap();
        db.pragma_update(None, "page_size", 4096).unwrap();
        db.pragma_update(None, "journal_mode", "WAL").unwrap();
        db.execute_batch("CREATE TABLE made_before (x INTEGER)")
            .unwrap();
    }
    let old_pages = old_pages_env.client().await;
    // Per mode: (loop ns per call, traced thread's CPU ns per call, stored ns per call).
    let mut rows: [Vec<[f64; 3]>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..runs {
        for (i, client) in [c, &m, &old_pages].into_iter().enumerate() {
            let one = strobe_run(client, &plain, 1, true).await;
            let run = strobe_run(client, &plain, n, true).await;
            assert_eq!(run.stored, 2 * n + 2, "every call stored");
            rows[i].push([
                run.loop_ns / n as f64,
                run.cpu_ns / n as f64,
                // Launch and end cost about the same for one call as for
                // n, but not exactly, and nothing is stored faster than the
                // loop made it: the loop's time bounds this from below.
                ((run.wall - one.wall) * 1e9 / n as f64).max(run.loop_ns / n as f64),
            ]);
        }
    }
    let med = |v: &[[f64; 3]], k: usize| median(v.iter().map(|r| r[k]).collect());
    println!(
        "sustained delivery: {n} calls of a traced function ({} events), lossless, {runs} runs interleaved (median)",
        2 * n
    );
    let shared = med(&rows[0], 2);
    for (label, row) in [
        ("shared ring (daemon drains)", &rows[0]),
        ("messages (bridge relays)", &rows[1]),
        ("shared ring, 4 KB pages", &rows[2]),
    ] {
        let (lp, stored) = (med(row, 0), med(row, 2));
        println!(
            "  {label:<28} loop {lp:>4.0} ns per call ({:>5.2} M events/s out of the ring), into queryable rows {stored:>4.0} ns per call ({:>5.2} M events/s, {:.2}x the shared ring's time); traced thread's CPU {:>4.0} ns per call",
            2.0 / lp * 1e3,
            2.0 / stored * 1e3,
            stored / shared,
            med(row, 1),
        );
    }
}
