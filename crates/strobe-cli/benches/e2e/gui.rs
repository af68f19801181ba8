//! debug_ui through MCP on a real GTK3 window (tests/fixtures/gui/gtk_demo.py
//! on a virtual display), beside the baseline people use today: a pyatspi
//! dump of the same window's tree (the same fields) and a GDK screenshot
//! saved as PNG, in the same run (tests/fixtures/gui/pyatspi_dump.py).
//! Then vision on an 800x600 window: the first call (sidecar start and
//! model load) and warm calls.

use serde_json::{Value, json};
use std::path::Path;
use std::time::Instant;

use crate::{median, support};

pub(crate) fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/gui")
        .join(name)
}

/// The environment variables `pid` was started with.
pub(crate) fn environ(pid: u32) -> Vec<(String, String)> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

pub(crate) async fn launch(c: &support::Client, args: &[&str]) -> (String, u32) {
    let mut argv = vec![json!(fixture("gtk_demo.py"))];
    argv.extend(args.iter().map(|a| json!(a)));
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "/usr/bin/python3", "args": argv, "projectRoot": fixture(""), "display": "virtual"}),
        )
        .await;
    (
        v["sessionId"].as_str().unwrap().to_string(),
        v["pid"].as_u64().unwrap() as u32,
    )
}

/// Milliseconds of each of `runs` debug_ui calls with `args`, and the last
/// reply's text length.
async fn timed_ui(c: &support::Client, args: Value, runs: usize) -> (Vec<f64>, usize, Value) {
    let mut ms = Vec::new();
    let mut last = (0, Value::Null);
    for _ in 0..runs {
        let t = Instant::now();
        let r = c.reply("debug_ui", args.clone()).await;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(!r.is_error, "{}", r.text);
        last = (r.text.len(), r.value);
    }
    (ms, last.0, last.1)
}

/// The pyatspi baseline against `pid`: (tree ms, nodes, screenshot ms);
/// with `all`, hidden subtrees read too.
fn baseline(pid: u32, runs: usize, all: bool) -> (f64, u64, f64) {
    let out = std::env::temp_dir().join(format!("strobe-bench-shot-{pid}.png"));
    let mut cmd = std::process::Command::new("/usr/bin/python3");
    cmd.arg(fixture("pyatspi_dump.py"))
        .arg(pid.to_string())
        .arg(runs.to_string())
        .arg(&out)
        .args(all.then_some("all"));
    for (k, v) in environ(pid) {
        if [
            "DISPLAY",
            "DBUS_SESSION_BUS_ADDRESS",
            "XDG_RUNTIME_DIR",
            "XAUTHORITY",
        ]
        .contains(&k.as_str())
        {
            cmd.env(k, v);
        }
    }
    let o = cmd.output().unwrap();
    let _ = std::fs::remove_file(&out);
    assert!(
        o.status.success(),
        "pyatspi baseline: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    (
        v["treeMs"].as_f64().unwrap(),
        v["nodes"].as_u64().unwrap(),
        v["screenshotMs"].as_f64().unwrap(),
    )
}

pub async fn gui_observation(c: &support::Client, runs: usize) {
    let runs = runs.max(10);
    // The big window's list is mostly scrolled out of view (hidden): both
    // sides read hidden subtrees there (`all`), so ~500 nodes are read.
    for (label, rows, all) in [("~50-node", "15", false), ("~500-node", "240", true)] {
        let (id, pid) = launch(c, &["--rows", rows]).await;
        // The first call waits for the window to register.
        c.ok("debug_ui", json!({"sessionId": id})).await;
        let (tree, chars, v) = timed_ui(
            c,
            json!({"sessionId": id, "maxNodes": 5000, "all": all}),
            runs,
        )
        .await;
        let nodes = v["shown"].as_u64().unwrap();
        let (_, default_chars, _) = timed_ui(c, json!({"sessionId": id}), 1).await;
        let (shot, _, _) = timed_ui(c, json!({"sessionId": id, "mode": "screenshot"}), runs).await;
        let (py_tree, py_nodes, py_shot) = baseline(pid, runs, all);
        let (t, s) = (median(tree), median(shot));
        println!(
            "debug_ui tree, {label} GTK window ({nodes} nodes shown; pyatspi read {py_nodes}): p50 {t:.1} ms through MCP vs pyatspi dump {py_tree:.1} ms ({:.2}x); reply text {chars} chars with every node, {default_chars} with the default cap",
            t / py_tree
        );
        println!(
            "debug_ui screenshot, {label} window: p50 {s:.1} ms through MCP (PNG saved and returned) vs GDK pixbuf + PNG save in Python {py_shot:.1} ms ({:.2}x)",
            s / py_shot
        );
        c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
            .await;
    }

    // Vision on an 800x600 window with the painted knob and label.
    let (id, _) = launch(c, &["--knob", "--size", "800x600"]).await;
    c.ok("debug_ui", json!({"sessionId": id})).await;
    let (first, _, v) = timed_ui(c, json!({"sessionId": id, "vision": true}), 1).await;
    assert!(v.get("warnings").is_none(), "vision: {}", v["warnings"]);
    let (warm, _, v) = timed_ui(c, json!({"sessionId": id, "vision": true}), 5).await;
    let (plain, _, _) = timed_ui(c, json!({"sessionId": id, "mode": "both"}), 5).await;
    println!(
        "debug_ui vision, 800x600 window ({} things found, {} new nodes): first call {:.0} ms (sidecar start + model load), warm p50 {:.0} ms vs the same call without vision (tree + screenshot) {:.0} ms",
        v["vision"]["found"],
        v["vision"]["added"],
        first[0],
        median(warm),
        median(plain)
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}
