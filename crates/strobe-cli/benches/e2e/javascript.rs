//! JavaScript tracing: the cost per traced call beside a hand-written
//! wrapper (the floor for a tracer in JavaScript) and inspector logpoints
//! (the easy route) on the same loop and Node, the cost of untraced code
//! with the probes loaded, launch → first output of a script, and a
//! logpoint's cost per hit.
//! `STROBE_BENCH_ONLY=javascript` runs only this. Node is `STROBE_BENCH_NODE`
//! (default: `node` on PATH).

use super::*;
use std::path::{Path, PathBuf};

fn workload() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/javascript/bench/work.js")
        .canonicalize()
        .unwrap()
}

/// Field `n` of work.js's `calls loop_ns cpu_ns` line.
fn loop_field(text: &str, n: usize) -> f64 {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().count() == 3 && l.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no loop line from work.js: {text}"));
    line.split_whitespace().nth(n).unwrap().parse().unwrap()
}

/// The loop's thread CPU ns (the machine's other work, the daemon's among
/// it, is not counted against the loop).
fn loop_ns(text: &str) -> f64 {
    loop_field(text, 2)
}

/// The loop's wall ns (a logpoint's cost is partly the loop's thread
/// waiting, which CPU time does not count).
fn loop_wall_ns(text: &str) -> f64 {
    loop_field(text, 1)
}

/// Runs `node work.js kind n` without Strobe; its whole output.
fn direct_output(node: &Path, kind: &str, n: u64) -> String {
    let out = Command::new(node)
        .arg(workload())
        .arg(kind)
        .arg(n.to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Per logpoint hit, wall time (`STROBE_BENCH_ONLY=javascript-logpoint`):
/// Strobe's logpoint on `leaf`'s body (its condition makes the message on
/// the thread that hit it, no pause; every hit stored) beside an inspector
/// logpoint in the same process (a condition that records the arguments
/// and is false), on the same loop.
pub async fn javascript_logpoint(c: &support::Client, runs: usize) {
    let node = std::env::var_os("STROBE_BENCH_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("node"));
    let n: u64 = 2_000;
    let work = workload();
    let body = std::fs::read_to_string(&work)
        .unwrap()
        .lines()
        .position(|l| l.trim() == "return a + b;")
        .unwrap() as u64
        + 1;
    let dir = work.parent().unwrap().to_path_buf();
    let (mut base, mut inspector, mut strobe) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs.clamp(1, 5) {
        base.push(loop_wall_ns(&direct_output(&node, "leaf", n)));
        inspector.push(loop_wall_ns(&direct_output(&node, "logpoint", n)));
        // Staged, so it is set before the loop runs.
        let staged = c
            .ok(
                "debug_breakpoint",
                json!({"add": [{"file": work, "line": body, "message": "a={a} b={b}"}]}),
            )
            .await;
        let staged_id = staged["staged"][0]["id"].clone();
        let v = c
            .ok(
                "debug_launch",
                json!({"command": node, "args": [work, "leaf", n.to_string()],
                       "projectRoot": dir, "cwd": dir}),
            )
            .await;
        let id = v["sessionId"].as_str().unwrap().to_string();
        c.wait_ended(&id).await;
        c.ok("debug_breakpoint", json!({"remove": [staged_id]}))
            .await;
        let logged = c.events(&id, Some("logpoint")).await.len() as u64;
        assert_eq!(logged, n, "every hit logged");
        let out = c.events(&id, Some("stdout")).await;
        strobe.push(loop_wall_ns(out[0]["text"].as_str().unwrap()));
        c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
            .await;
    }
    let b = median(base);
    let per = |t: f64| (t - b) / n as f64;
    let (i, s) = (per(median(inspector)), per(median(strobe)));
    println!("javascript logpoints, {n} hits in leaf(a, b) (wall time, median)");
    println!(
        "  uninstrumented loop:                 {:>9.1} ns/call",
        b / n as f64
    );
    println!("  inspector logpoint in the process:   {i:>9.1} ns/hit added (no pause)");
    println!(
        "  strobe logpoint (made where hit, every hit stored): {s:>9.1} ns/hit added ({:.1}x the inspector's)",
        s / i
    );
}

/// Runs `node work.js kind n` without Strobe: the loop's CPU ns.
fn direct(node: &Path, kind: &str, n: u64) -> f64 {
    loop_ns(&direct_output(node, kind, n))
}

/// Runs work.js under Strobe with `patterns` staged; returns its loop ns
/// and the events stored.
async fn traced(
    c: &support::Client,
    node: &Path,
    patterns: &[&str],
    kind: &str,
    n: u64,
) -> (f64, u64) {
    if !patterns.is_empty() {
        c.ok("debug_trace", json!({"add": patterns})).await;
    }
    let dir = workload().parent().unwrap().to_path_buf();
    let v = c
        .ok(
            "debug_launch",
            json!({"command": node, "args": [workload(), kind, n.to_string()],
                   "projectRoot": dir, "cwd": dir}),
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
    (loop_ns(&line), st["events"]["stored"].as_u64().unwrap())
}

/// The benchmark.
pub async fn javascript_tracing(c: &support::Client, runs: usize) {
    let node = std::env::var_os("STROBE_BENCH_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("node"));
    let n: u64 = std::env::var("STROBE_BENCH_JS_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        // About 5 ring slots a traced call: 40,000 calls fit the runtime's
        // ring and the agent's, so this is the tracer's cost, not waiting.
        .unwrap_or(40_000);
    // Untraced code is measured where the JIT has settled (a 40,000-call
    // loop is mostly warm-up, and a probed function's bigger body tiers up
    // later): 5 million calls, and router rounds.
    let long_n: u64 = 5_000_000;
    let router_n = 50_000;
    let rounds = runs.clamp(1, 5);
    let (mut base, mut wrapped, mut logpoint, mut strobe) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut long_base, mut none, mut elsewhere) = (Vec::new(), Vec::new(), Vec::new());
    let (mut router_base, mut router_none, mut router_elsewhere) =
        (Vec::new(), Vec::new(), Vec::new());
    // Interleaved rounds: each row sees the same machine load.
    for _ in 0..rounds {
        base.push(direct(&node, "leaf", n));
        wrapped.push(direct(&node, "wrapped", n));
        logpoint.push(direct(&node, "logpoint", n));
        let (l, stored) = traced(c, &node, &["work.leaf"], "leaf", n).await;
        assert!(stored >= 2 * n, "every call stored: {stored}");
        strobe.push(l);
        long_base.push(direct(&node, "leaf", long_n));
        none.push(traced(c, &node, &[], "leaf", long_n).await.0);
        elsewhere.push(
            traced(c, &node, &["work.elsewhere"], "leaf", long_n)
                .await
                .0,
        );
        router_base.push(direct(&node, "router", router_n));
        router_none.push(traced(c, &node, &[], "router", router_n).await.0);
        router_elsewhere.push(
            traced(c, &node, &["work.elsewhere"], "router", router_n)
                .await
                .0,
        );
    }
    let (b, w, lp, s) = (
        median(base),
        median(wrapped),
        median(logpoint),
        median(strobe),
    );
    let per = |t: f64| (t - b) / n as f64;
    println!(
        "javascript tracing, {n} calls of leaf(a, b) ({rounds} interleaved rounds, median; {node:?})"
    );
    println!(
        "  uninstrumented loop:                 {:>9.1} ns/call (thread CPU)",
        b / n as f64
    );
    println!(
        "  hand-written wrapper (the floor):    {:>9.1} ns/call added",
        per(w)
    );
    println!(
        "  inspector logpoint (the easy route): {:>9.1} ns/call added",
        per(lp)
    );
    println!(
        "  strobe, traced, typed, lossless:     {:>9.1} ns/call added ({:.2}x the wrapper, {:.4}x the logpoint)",
        per(s),
        per(s) / per(w),
        per(s) / per(lp)
    );
    let lb = median(long_base);
    println!(
        "  untraced leaf loop ({long_n} calls), probes loaded, no pattern: {:.3}x uninstrumented; a pattern elsewhere: {:.3}x",
        median(none) / lb,
        median(elsewhere) / lb
    );
    let rb = median(router_base);
    println!(
        "  untraced router ({router_n} rounds of ordinary code): no pattern {:.3}x, a pattern elsewhere {:.3}x uninstrumented",
        median(router_none) / rb,
        median(router_elsewhere) / rb
    );

    javascript_launch(c, runs).await;
    javascript_logpoint(c, runs).await;
}

/// Launch → first stdout event of a script, beside the native fixture
/// (`STROBE_BENCH_ONLY=javascript-launch` runs only this). The script is
/// alone in its project directory, as a program's sources are: Strobe
/// probes the project's sources as it launches.
pub async fn javascript_launch(c: &support::Client, runs: usize) {
    let node = std::env::var_os("STROBE_BENCH_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("node"));
    let project = std::env::temp_dir().join(format!("strobe-bench-hello-{}", std::process::id()));
    std::fs::create_dir_all(&project).unwrap();
    let script = project.join("hello.js");
    std::fs::write(&script, "console.log('hello');\n").unwrap();
    let native = fixture("output");
    let (mut js_times, mut bare_times, mut native_times) = (Vec::new(), Vec::new(), Vec::new());
    // The node script with and without the debugger worker
    // (STROBE_JS_DEBUGGER=0), and the native binary, interleaved.
    let no_debugger = json!({"STROBE_JS_DEBUGGER": "0"});
    for _ in 0..runs {
        for (exe, args, env, out) in [
            (
                node.clone(),
                vec![script.display().to_string()],
                json!({}),
                &mut js_times,
            ),
            (
                node.clone(),
                vec![script.display().to_string()],
                no_debugger.clone(),
                &mut bare_times,
            ),
            (native.clone(), Vec::new(), json!({}), &mut native_times),
        ] {
            let launch = json!({"command": exe, "args": args, "projectRoot": project, "env": env});
            out.push(launch_to_first_stdout(c, launch).await);
        }
    }
    let (j, b, nat) = (median(js_times), median(bare_times), median(native_times));
    println!(
        "  launch -> first stdout event, node script:   {:>6.1} ms",
        j * 1e3
    );
    println!(
        "    the same without the debugger worker:      {:>6.1} ms",
        b * 1e3
    );
    println!(
        "  launch -> first stdout event, native binary: {:>6.1} ms",
        nat * 1e3
    );
    println!(
        "  ratio node/native:                           {:>6.2}x",
        j / nat
    );
    // What Frida alone costs (spawn, attach, an empty script, resume, first
    // output), the floor under both rows above.
    let (fj, fnat) = (
        frida_alone(
            &[
                on_path(&node).display().to_string(),
                script.display().to_string(),
            ],
            runs,
        ),
        frida_alone(&[fixture("output").display().to_string()], runs),
    );
    println!(
        "  frida alone (spawn, attach, empty script, resume -> first output): node {:.1} ms, native {:.1} ms ({:.2}x)",
        fj * 1e3,
        fnat * 1e3,
        fj / fnat
    );
    let _ = std::fs::remove_dir_all(&project);
}

/// Median seconds from Frida's spawn of `argv` to its first output, with an
/// empty script loaded (the pinned frida, in STROBE_VENV's Python).
fn frida_alone(argv: &[String], runs: usize) -> f64 {
    const SCRIPT: &str = r#"
import frida, json, sys, time
argv, runs = json.loads(sys.argv[1]), int(sys.argv[2])
dev = frida.get_local_device()
out = []
while len(out) < runs:
    got = []
    dev.on("output", lambda pid, fd, data: got.append(time.monotonic()))
    try:
        t = time.monotonic()
        pid = dev.spawn(argv, stdio="pipe")
        session = dev.attach(pid)
        session.create_script("1;").load()
        dev.resume(pid)
        while not got:
            time.sleep(0.0005)
        out.append(got[0] - t)
    except frida.NotSupportedError:
        pass  # the machine's process table raced the spawn: again
    time.sleep(0.3)
out.sort()
print(out[len(out) // 2])
"#;
    let python = support::venv().join("bin/python");
    let out = Command::new(python)
        .args([
            "-c",
            SCRIPT,
            &serde_json::to_string(argv).unwrap(),
            &runs.to_string(),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("frida baseline: {}", String::from_utf8_lossy(&out.stderr)))
}

/// `exe` as a path (a bare name is looked up on PATH, as a launch does).
fn on_path(exe: &Path) -> PathBuf {
    if exe.components().count() > 1 {
        return exe.to_path_buf();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(exe))
        .find(|p| p.is_file())
        .unwrap_or_else(|| exe.to_path_buf())
}
