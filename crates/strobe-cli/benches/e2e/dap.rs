//! `strobe dap` (issue 24) side by side, in the same run and driven the
//! same way, with `lldb-vscode-16` (the DAP adapter of Debian's lldb-16,
//! which `./dev bench` installs) on the same program: launch → stopped at a
//! function breakpoint on `main`, and, stopped 21 frames deep at a line
//! breakpoint, `stackTrace` + `scopes` + `variables`. The same work over
//! MCP directly (one `debug_session status` carries the backtrace and
//! arguments) shows the adapter's own cost.

use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Instant;
use strobe_dap::wire::{read_message, write_message};
use tokio::io::BufReader;
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::{median, percentile, support};

/// A DAP client on a `strobe dap` child.
struct Dap {
    child: Child,
    tx: ChildStdin,
    rx: BufReader<ChildStdout>,
    seq: i64,
}

impl Dap {
    fn start(std_cmd: std::process::Command) -> Dap {
        let mut cmd = tokio::process::Command::new(std_cmd.get_program());
        cmd.args(std_cmd.get_args());
        for (k, v) in std_cmd.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("strobe dap");
        let tx = child.stdin.take().unwrap();
        let rx = BufReader::new(child.stdout.take().unwrap());
        Dap {
            child,
            tx,
            rx,
            seq: 0,
        }
    }

    async fn send(&mut self, command: &str, arguments: Value) -> i64 {
        self.seq += 1;
        let msg =
            json!({"seq": self.seq, "type": "request", "command": command, "arguments": arguments});
        write_message(&mut self.tx, &msg).await.unwrap();
        self.seq
    }

    /// Reads until `pred` holds for a message; returns it.
    async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let m = read_message(&mut self.rx)
                .await
                .expect("strobe dap answered");
            if pred(&m) {
                return m;
            }
        }
    }

    async fn request(&mut self, command: &str, arguments: Value) -> Value {
        let seq = self.send(command, arguments).await;
        let r = self
            .until(|m| m["type"] == "response" && m["request_seq"] == seq)
            .await;
        assert_eq!(r["success"], true, "{command}: {r}");
        r["body"].clone()
    }

    async fn event(&mut self, name: &str) -> Value {
        self.until(|m| m["type"] == "event" && m["event"] == name)
            .await
    }
}

fn line_of(src: &str, marker: &str) -> u64 {
    let tag = format!("@{marker} ");
    src.lines().position(|l| l.contains(&tag)).unwrap() as u64 + 1
}

/// The adapters compared: `strobe dap`, and lldb-vscode-16 where installed.
fn adapters(env: &support::Env) -> Vec<(&'static str, std::process::Command)> {
    let mut out = vec![("strobe dap", env.command(&["dap"]))];
    match which("lldb-vscode-16") {
        Some(p) => out.push(("lldb-vscode-16", std::process::Command::new(p))),
        None => println!(
            "  lldb-vscode-16 is not installed (`./dev bench` installs lldb-16): not compared"
        ),
    }
    out
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// One debug session on `adapter`: (launch → stopped at a breakpoint on
/// main, stack + scopes + variables at the bottom) in ms, and the frames.
async fn one_session(
    adapter: std::process::Command,
    exe: &std::path::Path,
    source: &std::path::Path,
    bottom: u64,
) -> (f64, f64, usize) {
    let mut d = Dap::start(adapter);
    d.request(
        "initialize",
        json!({"adapterID": "bench", "linesStartAt1": true, "pathFormat": "path"}),
    )
    .await;
    let t = Instant::now();
    d.request(
        "launch",
        json!({"program": exe, "cwd": exe.parent().unwrap(), "stopOnEntry": false}),
    )
    .await;
    d.event("initialized").await;
    d.request(
        "setFunctionBreakpoints",
        json!({"breakpoints": [{"name": "main"}]}),
    )
    .await;
    d.send("configurationDone", json!({})).await;
    let stopped = d.event("stopped").await;
    let launch = t.elapsed().as_secs_f64() * 1e3;
    let tid = stopped["body"]["threadId"].clone();
    d.request("setFunctionBreakpoints", json!({"breakpoints": []}))
        .await;
    d.request(
        "setBreakpoints",
        json!({"source": {"path": source}, "breakpoints": [{"line": bottom}]}),
    )
    .await;
    d.send("continue", json!({"threadId": tid})).await;
    let stopped = d.event("stopped").await;
    let tid = stopped["body"]["threadId"].clone();
    let t = Instant::now();
    let st = d.request("stackTrace", json!({"threadId": tid})).await;
    let top = st["stackFrames"][0]["id"].clone();
    let scopes = d.request("scopes", json!({"frameId": top})).await;
    let r = scopes["scopes"][0]["variablesReference"].clone();
    let vars = d
        .request("variables", json!({"variablesReference": r}))
        .await;
    let inspect = t.elapsed().as_secs_f64() * 1e3;
    let frames = st["stackFrames"].as_array().unwrap().len();
    assert!(
        vars["variables"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["name"] == "depth"),
        "{vars}"
    );
    d.send("disconnect", json!({"terminateDebuggee": true}))
        .await;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), d.child.wait()).await;
    let _ = d.child.kill().await;
    (launch, inspect, frames)
}

pub async fn dap(env: &support::Env, c: &support::Client, runs: usize) {
    let exe = support::fixture("deep");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/deep.c")
        .canonicalize()
        .unwrap();
    let bottom = line_of(&std::fs::read_to_string(&source).unwrap(), "bottom");
    let names: Vec<&str> = adapters(env).iter().map(|(n, _)| *n).collect();
    let mut launch = vec![Vec::new(); names.len()];
    let mut inspect = vec![Vec::new(); names.len()];
    let mut frames = vec![0; names.len()];
    let (mut launch_mcp, mut inspect_mcp) = (vec![], vec![]);
    for _ in 0..runs {
        // Each adapter in turn, then MCP directly, in every run.
        for (i, (_, cmd)) in adapters(env).into_iter().enumerate() {
            let (l, s, f) = one_session(cmd, &exe, &source, bottom).await;
            launch[i].push(l);
            inspect[i].push(s);
            frames[i] = f;
        }
        // The same over MCP.
        let t = Instant::now();
        let v = c
            .ok(
                "debug_launch",
                json!({"command": exe, "projectRoot": exe.parent().unwrap(), "stopOnEntry": true}),
            )
            .await;
        launch_mcp.push(t.elapsed().as_secs_f64() * 1e3);
        let id = v["sessionId"].as_str().unwrap().to_string();
        c.ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"file": source, "line": bottom}]}),
        )
        .await;
        c.ok(
            "debug_continue",
            json!({"sessionId": id, "action": "continue"}),
        )
        .await;
        let t = Instant::now();
        let s = c.status(&id).await;
        inspect_mcp.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(
            s["pausedThreads"].as_array().is_some_and(|p| !p.is_empty()),
            "{s}"
        );
        c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
            .await;
    }
    println!("DAP adapters ({runs} runs each, interleaved; median / p95, ms)");
    let cell = |v: &[f64]| {
        format!(
            "{:.1} / {:.1}",
            median(v.to_vec()),
            percentile(v.to_vec(), 0.95)
        )
    };
    for (what, per, mcp) in [
        (
            "launch -> stopped at a breakpoint on main",
            &launch,
            &launch_mcp,
        ),
        (
            "stackTrace + scopes + variables at the bottom",
            &inspect,
            &inspect_mcp,
        ),
    ] {
        println!("  {what}:");
        for (i, name) in names.iter().enumerate() {
            let ratio = median(per[i].clone()) / median(per[0].clone());
            println!(
                "    {name:<16} {}  ({} frames; {ratio:.2}x strobe dap)",
                cell(&per[i]),
                frames[i]
            );
        }
        println!(
            "    {:<16} {}  (MCP directly: launch stopOnEntry / one debug_session status)",
            "strobe over MCP",
            cell(mcp)
        );
    }
}
