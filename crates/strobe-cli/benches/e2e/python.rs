//! Python tracing: the cost per traced call beside cProfile and viztracer
//! on the same workload and interpreter, the cost of untraced code while a
//! pattern is active elsewhere, a conditional breakpoint in the hot function
//! beside pdb's, and launch → first output of a script.
//! `STROBE_BENCH_ONLY=python` runs only this. The baselines' interpreter is
//! `STROBE_BENCH_PYTHON` (`./dev bench` makes a venv with viztracer).

use super::*;
use std::path::{Path, PathBuf};

/// What work.py printed: calls, loop wall ns, loop CPU ns of its thread.
#[derive(Debug, Clone, Copy)]
struct Loop {
    wall_ns: f64,
    cpu_ns: f64,
}

fn parse_loop(line: &str) -> Loop {
    let f: Vec<f64> = line
        .split_whitespace()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("work.py printed {line:?}"))
        })
        .collect();
    Loop {
        wall_ns: f[1],
        cpu_ns: f[2],
    }
}

fn workload() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/python/bench/work.py")
        .canonicalize()
        .unwrap()
}

/// Runs `python args… work.py kind n` and reads its loop line.
fn direct(python: &Path, pre: &[&str], kind: &str, n: u64) -> Loop {
    let out = Command::new(python)
        .args(pre)
        .arg(workload())
        .arg(kind)
        .arg(n.to_string())
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.split_whitespace().count() == 3 && l.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no loop line from {python:?} {pre:?}: {text}"));
    parse_loop(line)
}

/// Runs work.py under Strobe with `patterns` staged; returns its loop and
/// the events stored.
async fn traced(
    c: &support::Client,
    python: &Path,
    patterns: &[&str],
    kind: &str,
    n: u64,
) -> (Loop, u64) {
    if !patterns.is_empty() {
        c.ok("debug_trace", json!({"add": patterns, "sampling": false}))
            .await;
    }
    let v = c
        .ok(
            "debug_launch",
            json!({"command": python, "args": [workload(), kind, n.to_string()],
                   "projectRoot": workload().parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    if !patterns.is_empty() {
        c.ok("debug_trace", json!({"remove": patterns})).await;
    }
    assert_eq!(st["events"]["dropped"], 0, "lossless: {st}");
    let out = c.events(&id, Some("stdout")).await;
    let line = out[0]["text"].as_str().unwrap().to_string();
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    (parse_loop(&line), st["events"]["stored"].as_u64().unwrap())
}

/// The line of `leaf`'s body in work.py.
fn leaf_line() -> usize {
    std::fs::read_to_string(workload())
        .unwrap()
        .lines()
        .position(|l| l.trim() == "return a + b")
        .expect("leaf's body")
        + 1
}

/// Runs work.py's leaf loop under Strobe with a breakpoint on leaf's body
/// whose condition never holds (set before the loop starts).
async fn breakpointed(c: &support::Client, python: &Path, n: u64) -> Loop {
    let go = std::env::temp_dir().join(format!("strobe-bench-go-{}", std::process::id()));
    let _ = std::fs::remove_file(&go);
    let v = c
        .ok(
            "debug_launch",
            json!({"command": python, "args": [workload(), "leaf", n.to_string(), go],
                   "projectRoot": workload().parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "add": [{"file": workload(), "line": leaf_line(), "condition": "a < 0"}]}),
    )
    .await;
    std::fs::write(&go, "").unwrap();
    c.wait_ended(&id).await;
    let _ = std::fs::remove_file(&go);
    let out = c.events(&id, Some("stdout")).await;
    let line = out[0]["text"].as_str().unwrap().to_string();
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    parse_loop(&line)
}

fn median_loop(v: Vec<Loop>) -> Loop {
    Loop {
        wall_ns: median(v.iter().map(|l| l.wall_ns).collect()),
        cpu_ns: median(v.iter().map(|l| l.cpu_ns).collect()),
    }
}

/// The benchmark.
pub async fn python_tracing(c: &support::Client, runs: usize) {
    let python = std::env::var_os("STROBE_BENCH_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/python3.11"));
    let n: u64 = std::env::var("STROBE_BENCH_PY_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        // About 5 ring slots a traced call (enter and exit, each with its
        // payload): 40,000 calls fit the ring, so the traced thread's CPU
        // time is the tracer's own cost, never time spent waiting for room.
        .unwrap_or(40_000);
    let rounds = runs.clamp(1, 5);
    let mut base = Vec::new();
    let mut cprofile = Vec::new();
    let mut viz = Vec::new();
    let mut strobe = Vec::new();
    let mut elsewhere = Vec::new();
    let mut none = Vec::new();
    let (mut real_base, mut real_elsewhere) = (Vec::new(), Vec::new());
    let (mut bp, mut pdb) = (Vec::new(), Vec::new());
    let pdb_break = format!("break {}:{}, a < 0", workload().display(), leaf_line());
    let real_n = 5000;
    let has_viztracer = Command::new(&python)
        .args(["-c", "import viztracer"])
        .status()
        .is_ok_and(|s| s.success());
    let viz_out = std::env::temp_dir().join("strobe-bench-viztracer.json");
    let viz_out = viz_out.to_string_lossy().into_owned();
    // Interleaved rounds: each row sees the same machine load.
    for _ in 0..rounds {
        base.push(direct(&python, &[], "leaf", n));
        cprofile.push(direct(
            &python,
            &["-m", "cProfile", "-o", "/dev/null"],
            "leaf",
            n,
        ));
        if has_viztracer {
            viz.push(direct(
                &python,
                &["-m", "viztracer", "--quiet", "-o", &viz_out],
                "leaf",
                n,
            ));
        }
        let (l, stored) = traced(c, &python, &["work.leaf"], "leaf", n).await;
        assert!(stored >= 2 * n, "every call stored: {stored}");
        strobe.push(l);
        elsewhere.push(traced(c, &python, &["work.elsewhere"], "leaf", n).await.0);
        none.push(traced(c, &python, &[], "leaf", n).await.0);
        bp.push(breakpointed(c, &python, n).await);
        pdb.push(direct(
            &python,
            &["-m", "pdb", "-c", &pdb_break, "-c", "continue"],
            "leaf",
            n,
        ));
        real_base.push(direct(&python, &[], "difflib", real_n));
        real_elsewhere.push(
            traced(c, &python, &["work.elsewhere"], "difflib", real_n)
                .await
                .0,
        );
    }
    let (b, cp, s, e, z) = (
        median_loop(base),
        median_loop(cprofile),
        median_loop(strobe),
        median_loop(elsewhere),
        median_loop(none),
    );
    let (rb, re) = (median_loop(real_base), median_loop(real_elsewhere));
    let per = |l: Loop| (l.cpu_ns - b.cpu_ns) / n as f64;
    println!(
        "python tracing, {n} calls of leaf(a, b) ({rounds} interleaved rounds, median; {python:?})"
    );
    println!(
        "  uninstrumented loop:            {:>8.1} ns/call (thread CPU)",
        b.cpu_ns / n as f64
    );
    println!(
        "  cProfile:                       {:>8.1} ns/call added",
        per(cp)
    );
    if has_viztracer {
        let v = median_loop(viz);
        println!(
            "  viztracer (every call, to a file): {:>5.1} ns/call added",
            per(v)
        );
        println!(
            "  strobe, traced, typed, lossless: {:>7.1} ns/call added ({:.2}x viztracer)",
            per(s),
            per(s) / per(v)
        );
    } else {
        println!(
            "  viztracer: not measured (STROBE_BENCH_PYTHON has no viztracer; ./dev bench installs it)"
        );
        println!(
            "  strobe, traced, typed, lossless: {:>7.1} ns/call added",
            per(s)
        );
    }
    println!(
        "  untraced loop, a pattern on another function: {:.3}x uninstrumented (CPU), {:.3}x (wall)",
        e.cpu_ns / b.cpu_ns,
        e.wall_ns / b.wall_ns
    );
    println!(
        "  untraced loop, no pattern:                    {:.3}x uninstrumented (CPU), {:.3}x (wall)",
        z.cpu_ns / b.cpu_ns,
        z.wall_ns / b.wall_ns
    );
    println!(
        "  untraced difflib ({real_n} rounds), a pattern elsewhere: {:.3}x uninstrumented (CPU), {:.3}x (wall)",
        re.cpu_ns / rb.cpu_ns,
        re.wall_ns / rb.wall_ns
    );
    let (bpl, pdbl) = (median_loop(bp), median_loop(pdb));
    println!(
        "  breakpoint on leaf, condition never true: strobe {:.1} ns/call added, pdb {:.1} ns/call added ({:.2}x pdb)",
        per(bpl),
        per(pdbl),
        per(bpl) / per(pdbl)
    );

    // Launch → first stdout event of a script, beside the native fixture.
    let script = std::env::temp_dir().join("strobe-bench-hello.py");
    std::fs::write(&script, "print('hello', flush=True)\n").unwrap();
    let native = fixture("output");
    let mut py_times = Vec::new();
    let mut native_times = Vec::new();
    for _ in 0..runs {
        for (exe, args, out) in [
            (
                python.clone(),
                vec![script.display().to_string()],
                &mut py_times,
            ),
            (native.clone(), Vec::new(), &mut native_times),
        ] {
            let launch = json!({"command": exe, "args": args, "projectRoot": std::env::temp_dir()});
            out.push(launch_to_first_stdout(c, launch).await);
        }
    }
    let (p, nat) = (median(py_times), median(native_times));
    println!(
        "  launch -> first stdout event, python script: {:>6.1} ms",
        p * 1e3
    );
    println!(
        "  launch -> first stdout event, native binary: {:>6.1} ms",
        nat * 1e3
    );
    println!(
        "  ratio python/native:                         {:>6.2}x",
        p / nat
    );
}
