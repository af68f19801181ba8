//! `strobe dap` (issue 24), beside the same work done over MCP directly in
//! the same run (the adapter's own cost): launch → stopped in `main`
//! (`stopOnEntry`), and, stopped 21 frames deep, `stackTrace` + `scopes` +
//! `variables` against one `debug_session status` (which carries the same
//! backtrace and arguments). `lldb-vscode-16` (Debian's lldb-16) is not
//! installed here, so it is not in the comparison.

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
    fn start(env: &support::Env) -> Dap {
        let std_cmd = env.command(&["dap"]);
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

pub async fn dap(env: &support::Env, c: &support::Client, runs: usize) {
    let exe = support::fixture("deep");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/deep.c")
        .canonicalize()
        .unwrap();
    let bottom = line_of(&std::fs::read_to_string(&source).unwrap(), "bottom");
    let (mut launch_dap, mut inspect_dap, mut launch_mcp, mut inspect_mcp) =
        (vec![], vec![], vec![], vec![]);
    let mut frames = 0;
    for _ in 0..runs {
        // Over DAP.
        let mut d = Dap::start(env);
        d.request("initialize", json!({"adapterID": "strobe"}))
            .await;
        let t = Instant::now();
        d.request("launch", json!({"program": exe, "stopOnEntry": true}))
            .await;
        d.event("initialized").await;
        d.send("configurationDone", json!({})).await;
        let stopped = d.event("stopped").await;
        launch_dap.push(t.elapsed().as_secs_f64() * 1e3);
        let tid = stopped["body"]["threadId"].clone();
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
        inspect_dap.push(t.elapsed().as_secs_f64() * 1e3);
        frames = st["stackFrames"].as_array().unwrap().len();
        assert_eq!(vars["variables"][0]["name"], "depth", "{vars}");
        d.request("disconnect", json!({"terminateDebuggee": true}))
            .await;
        let _ = d.child.wait().await;

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
    println!("strobe dap ({runs} runs, median / p95, ms)");
    let row = |what: &str, d: &[f64], m: &[f64]| {
        println!(
            "  {what}: DAP {:.1} / {:.1} | MCP directly {:.1} / {:.1} | {:.2}x",
            median(d.to_vec()),
            percentile(d.to_vec(), 0.95),
            median(m.to_vec()),
            percentile(m.to_vec(), 0.95),
            median(d.to_vec()) / median(m.to_vec())
        );
    };
    row("launch -> stopped in main (warm)", &launch_dap, &launch_mcp);
    row(
        &format!(
            "stackTrace + scopes + variables, {frames} frames (MCP: one debug_session status)"
        ),
        &inspect_dap,
        &inspect_mcp,
    );
}
