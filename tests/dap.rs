//! `strobe dap` end to end: a real DAP client (@vscode/debugadapter-testsupport's
//! DebugClient, from npm, run by node on tests/dap/dap.mjs) drives `strobe dap`,
//! which drives a real daemon over MCP against real programs under Frida:
//! launch, a line breakpoint, the stop, stack, arguments, hover, next/stepIn/
//! stepOut, readable refusals, output events, the exit code, the program's
//! threads as they come and go. The sessions
//! the editor made are then seen by an agent over MCP.

mod support;

use serde_json::json;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::{Duration, Instant};
use support::{Env, fixture, fixture_with};

/// The script's whole run (two debug sessions).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(240);

/// The line of `tests/fixtures/debugee.c` holding `@marker`.
fn line_of(marker: &str) -> usize {
    let src = include_str!("fixtures/debugee.c");
    let tag = format!("@{marker} ");
    src.lines().position(|l| l.contains(&tag)).unwrap() + 1
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dap_client_launches_stops_steps_and_sees_the_end() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let env = Env::new();
    let c = env.client().await;
    let debugee = fixture_with("debugee", &["-pthread"]);
    let output = fixture("output");
    let source = repo
        .join("tests/fixtures/debugee.c")
        .canonicalize()
        .unwrap();

    let strobe = env.command(&["dap"]);
    let mut script = std::process::Command::new("node");
    script
        .arg(repo.join("tests/dap/dap.mjs"))
        .env("STROBE_BIN", strobe.get_program())
        .env("DEBUGEE", &debugee)
        .env("DEBUGEE_SOURCE", &source)
        .env("OUTPUT_FIXTURE", &output)
        .env("CRASH_FIXTURE", fixture("crash"))
        .env("THREADS_FIXTURE", fixture_with("threads", &["-pthread"]))
        .env(
            "LINE_CRASH",
            (include_str!("fixtures/crash.c")
                .lines()
                .position(|l| l.contains("*p = doubled;"))
                .unwrap()
                + 1)
            .to_string(),
        )
        .process_group(0);
    for (k, v) in strobe.get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    for m in ["compute-body", "compute-call", "main-compute"] {
        script.env(
            format!("LINE_{}", m.to_uppercase().replace('-', "_")),
            line_of(m).to_string(),
        );
    }
    let mut child = script
        .spawn()
        .expect("node is missing: `./dev test` installs it");
    let status = support::wait_script(&mut child, SCRIPT_TIMEOUT, "the DAP script").await;
    assert!(
        status.success(),
        "the DAP checks failed ({status}); see the output above"
    );

    // The editor's sessions are Strobe sessions the agent sees (the
    // debugee's was stopped by the disconnect, which drops an unretained
    // session; the one that exited is still there).
    let list = c.ok("debug_session", json!({"action": "list"})).await;
    let output_name = output.file_name().unwrap().to_string_lossy().into_owned();
    let seen = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["binaryPath"]
                .as_str()
                .is_some_and(|b| b.ends_with(&output_name))
        })
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(
        (seen["state"].clone(), seen["exitCode"].clone()),
        (json!("exited"), json!(3)),
        "{seen}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_editor_attaches_to_the_agents_session_and_both_see_the_same_stop() {
    use std::io::{BufRead, Write};
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let env = Env::new();
    let c = env.client().await;
    let debugee = fixture_with("debugee", &["-pthread"]);
    let source = repo
        .join("tests/fixtures/debugee.c")
        .canonicalize()
        .unwrap();
    let (id, _) = c.launch(&debugee, &[]).await;

    let strobe = env.command(&["dap"]);
    let mut script = std::process::Command::new("node");
    script
        .arg(repo.join("tests/dap/attach.mjs"))
        .env("STROBE_BIN", strobe.get_program())
        .env("SESSION", &id)
        .env("LINE", line_of("compute-body").to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .process_group(0);
    for (k, v) in strobe.get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    let mut child = script
        .spawn()
        .expect("node is missing: `./dev test` installs it");
    let pgid = child.id();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let next_line = |rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(l) = rx.try_recv() {
                return l;
            }
            if Instant::now() > deadline {
                support::signal_group(pgid, 9);
                panic!("the attach script said nothing for 60 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    assert_eq!(next_line(&mut rx), "READY");
    // The agent sets a breakpoint; the editor is told, and stops at it.
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "add": [{"file": source, "line": line_of("compute-body")}]}),
    )
    .await;
    let stopped = next_line(&mut rx);
    let tid: u64 = stopped.strip_prefix("STOPPED ").unwrap().parse().unwrap();
    // The same stop is the agent's paused thread.
    let status = c.status(&id).await;
    assert!(paused_in(&status, tid, "breakpoint"), "{status}");
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "remove": ["bp-1"]}),
    )
    .await;
    c.ok(
        "debug_continue",
        json!({"sessionId": id, "threadId": tid, "timeoutMs": 1}),
    )
    .await;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    // The editor pauses main: the agent sees it paused, reason pause.
    let paused = next_line(&mut rx);
    let main: u64 = paused.strip_prefix("PAUSED ").unwrap().parse().unwrap();
    let status = c.status(&id).await;
    assert!(paused_in(&status, main, "pause"), "{status}");
    stdin.write_all(b"go\n").unwrap();
    let status_code = support::wait_script(&mut child, SCRIPT_TIMEOUT, "the attach script").await;
    assert!(
        status_code.success(),
        "the attach checks failed ({status_code})"
    );
    // The editor left; the agent's session runs on.
    assert_eq!(c.status(&id).await["state"], "running");
    // The audit lane tells the two apart: the agent's calls and the
    // editor's (strobe dap's), each with its client's name.
    let calls = agent_calls(&env, &id);
    let side_of = |tool: &str, side: &str| {
        calls.iter().any(|c| {
            c["tool"] == tool
                && c["side"] == side
                && (side != "editor" || c["client"] == "strobe-dap")
        })
    };
    assert!(side_of("debug_breakpoint", "agent"), "{calls:?}");
    assert!(
        side_of("debug_continue", "editor"),
        "the editor's pause: {calls:?}"
    );
    assert!(side_of("debug_session", "editor"), "{calls:?}");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn on_a_loopback_port_a_client_needs_the_daemons_token() {
    use std::io::BufRead;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let env = Env::new();
    let _c = env.client().await;
    let output = fixture("output");
    let ui = env.command(&["ui"]).output().unwrap();
    let url = String::from_utf8(ui.stdout).unwrap();
    let token = url.trim().split_once("token=").unwrap().1.to_string();

    let mut dap = env.command(&["dap", "--port", "0"]);
    dap.stdout(std::process::Stdio::piped()).process_group(0);
    let mut server = dap.spawn().unwrap();
    let server_pid = server.id();
    let mut first = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port = first
        .trim()
        .strip_prefix("listening on 127.0.0.1:")
        .unwrap_or_else(|| panic!("{first:?}"))
        .to_string();

    let mut script = std::process::Command::new("node");
    script
        .arg(repo.join("tests/dap/port.mjs"))
        .env("PORT", &port)
        .env("TOKEN", &token)
        .env("OUTPUT_FIXTURE", &output)
        .process_group(0);
    let mut child = script.spawn().expect("node");
    let status = support::wait_script(&mut child, SCRIPT_TIMEOUT, "the port script").await;
    support::signal_group(server_pid, 9);
    let _ = server.wait();
    assert!(status.success(), "the port checks failed ({status})");
}

/// Whether `status` lists thread `tid` paused for `reason`.
fn paused_in(status: &serde_json::Value, tid: u64, reason: &str) -> bool {
    status["pausedThreads"].as_array().is_some_and(|p| {
        p.iter()
            .any(|p| p["threadId"] == tid && p["reason"] == reason)
    })
}

/// The session's audit (`/api/sessions/ID/agent` of the web endpoint
/// `strobe ui` starts), as the UI reads it.
fn agent_calls(env: &Env, id: &str) -> Vec<serde_json::Value> {
    use std::io::{Read, Write};
    let out = env.command(&["ui"]).output().unwrap();
    let url = String::from_utf8(out.stdout).unwrap();
    let (port, token) = url
        .trim()
        .strip_prefix("http://127.0.0.1:")
        .and_then(|r| r.split_once("/?token="))
        .unwrap_or_else(|| panic!("{url}"));
    let mut s = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    write!(
        s,
        "GET /api/sessions/{id}/agent HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = String::new();
        let mut rest = body;
        while let Some((n, tail)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(n.trim(), 16).unwrap();
            if n == 0 {
                break;
            }
            out.push_str(&tail[..n]);
            rest = &tail[n + 2..];
        }
        out
    } else {
        body.to_string()
    };
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["calls"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn python_and_node_programs_go_through_the_same_adapter() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let env = Env::new();
    let _c = env.client().await;
    for (program, script) in [
        ("python3", "tests/fixtures/python/debugee/stepper.py"),
        ("node", "tests/fixtures/javascript/debugee/stepper.js"),
    ] {
        let script = repo.join(script).canonicalize().unwrap();
        let src = std::fs::read_to_string(&script).unwrap();
        let line = |marker: &str| {
            (src.lines()
                .position(|l| l.ends_with(&format!("@{marker}")))
                .unwrap()
                + 1)
            .to_string()
        };
        let strobe = env.command(&["dap"]);
        let mut cmd = std::process::Command::new("node");
        cmd.arg(repo.join("tests/dap/script.mjs"))
            .env("STROBE_BIN", strobe.get_program())
            .env("PROGRAM", program)
            .env("SCRIPT", &script)
            .env("STOP_FILE", env.path().join(format!("stop-{program}")))
            .env("LINE_COMPUTE_BODY", line("compute-body"))
            .env("LINE_COMPUTE_CALL", line("compute-call"))
            .process_group(0);
        for (k, v) in strobe.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let mut child = cmd.spawn().expect("node");
        let status =
            support::wait_script(&mut child, SCRIPT_TIMEOUT, "the script DAP checks").await;
        assert!(
            status.success(),
            "the {program} DAP checks failed ({status})"
        );
    }
}
