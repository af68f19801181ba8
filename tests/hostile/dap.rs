//! `strobe dap` against a hostile or broken client, for real: the binary
//! on pipes (or its loopback port), a real daemon, real targets under
//! Frida. What a connection launched ends with it however the connection
//! ends (checked by pid); malformed frames are answered or closed with a
//! reason; the port caps header lines, clients and the wait for the token;
//! an editor never deletes what an agent's session recorded, and a session
//! id is never reused.

mod client;

use crate::support::{self, Env, fixture};
use client::{Conn, REPLY, frame};
use serde_json::json;
use std::process::{Child, Stdio};
use std::time::Duration;

/// How long a target may take to end once its connection is gone.
const GONE: Duration = Duration::from_secs(30);

/// `strobe dap` on pipes, killed by its pid when the test ends.
struct Adapter {
    child: Child,
    conn: Conn,
}

impl Adapter {
    fn start(env: &Env) -> Adapter {
        let mut child = env
            .command(&["dap"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Its reasons are read from the output events it sends.
            .stderr(Stdio::null())
            .spawn()
            .expect("strobe dap");
        let conn = Conn::new(child.stdin.take().unwrap(), child.stdout.take().unwrap());
        Adapter { child, conn }
    }

    /// Whether the adapter exited within `within`.
    fn exits_within(&mut self, within: Duration) -> bool {
        support::wait_until(within, || matches!(self.child.try_wait(), Ok(Some(_))))
    }
}

impl Drop for Adapter {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Whether the process `pid` ended within [`GONE`].
fn gone(pid: u32) -> bool {
    support::wait_until(GONE, || !support::running(pid))
}

/// A second launch on one connection is refused; stdin's end then ends
/// the first program.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_launch_is_refused_and_stdins_end_ends_the_first() {
    let env = Env::new();
    let _c = env.client().await;
    let sleeper = fixture("sleeper");
    let mut a = Adapter::start(&env);
    let pid = a.conn.launch(&sleeper, &["50"]);
    let second = a.conn.call("launch", json!({"program": sleeper}));
    assert_eq!(second["success"], false, "{second}");
    assert!(
        second["message"]
            .as_str()
            .unwrap()
            .contains("already debugs session"),
        "{second}"
    );
    a.conn.close_input();
    assert!(gone(pid), "stdin's end left pid {pid} running");
    assert!(a.exits_within(REPLY), "the adapter outlived its stdin");
}

/// `kill -9` of the adapter: the daemon sees its MCP connection close and
/// ends what it launched.
#[tokio::test(flavor = "multi_thread")]
async fn kill_9_of_the_adapter_ends_its_program() {
    let env = Env::new();
    let _c = env.client().await;
    let mut a = Adapter::start(&env);
    let pid = a.conn.launch(&fixture("sleeper"), &["50"]);
    support::signal(a.child.id(), 9);
    let _ = a.child.wait();
    assert!(gone(pid), "kill -9 of strobe dap left pid {pid} running");
}

/// A malformed frame: the adapter says why, exits, and its program ends.
#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_frame_ends_the_connection_and_its_program() {
    let env = Env::new();
    let _c = env.client().await;
    let mut a = Adapter::start(&env);
    let pid = a.conn.launch(&fixture("sleeper"), &["50"]);
    assert!(a.conn.raw(b"Content-Type: text/plain\r\n\r\n{}"));
    assert!(
        a.conn.closes_within(REPLY),
        "no close after a malformed frame"
    );
    assert!(
        a.conn.said().contains("without Content-Length"),
        "{}",
        a.conn.said()
    );
    assert!(a.exits_within(REPLY));
    assert!(gone(pid), "a malformed frame left pid {pid} running");
}

/// A launch before initialize is refused and starts nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_launch_before_initialize_is_refused_and_starts_nothing() {
    let env = Env::new();
    let c = env.client().await;
    let mut a = Adapter::start(&env);
    let r = a
        .conn
        .call("launch", json!({"program": fixture("sleeper")}));
    assert_eq!(r["success"], false, "{r}");
    assert!(
        r["message"].as_str().unwrap().contains("initialize first"),
        "{r}"
    );
    a.conn.close_input();
    assert!(a.exits_within(REPLY));
    let list = c.ok("debug_session", json!({"action": "list"})).await;
    assert_eq!(list["sessions"], json!([]), "{list}");
}

/// An editor that attached to an agent's session may stop it when the
/// user says so, but what it recorded stays the agent's.
#[tokio::test(flavor = "multi_thread")]
async fn an_editor_stops_an_agents_session_but_never_deletes_its_data() {
    let env = Env::new();
    let c = env.client().await;
    let (id, pid) = c.launch(&fixture("sleeper"), &["20"]).await;
    c.wait_stdout(&id).await;

    let mut a = Adapter::start(&env);
    assert_eq!(a.conn.call("initialize", json!({}))["success"], true);
    let r = a.conn.call("attach", json!({"sessionId": id}));
    assert_eq!(r["success"], true, "{r}");
    let r = a
        .conn
        .call("disconnect", json!({"terminateDebuggee": true}));
    assert_eq!(r["success"], true, "{r}");
    assert!(gone(pid), "terminateDebuggee did not stop the program");
    // The agent still reads its session, and what it recorded.
    let status = c.status(&id).await;
    assert_eq!(status["state"], "stopped", "{status}");
    let lines = c.stdout_lines(&id).await;
    assert!(lines.iter().any(|l| l == "ready"), "{lines:?}");
}

/// A session deleted by its owner never lends its id to a later launch,
/// so an agent holding the old id cannot read another program's data.
#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_sessions_id_is_never_issued_again() {
    let env = Env::new();
    let c = env.client().await;
    let sleeper = fixture("sleeper");
    let (id, pid) = c.launch(&sleeper, &["20"]).await;
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    assert!(gone(pid));
    let (again, pid2) = c.launch(&sleeper, &["20"]).await;
    assert_ne!(again, id, "a deleted session's id came back");
    c.ok(
        "debug_session",
        json!({"action": "stop", "sessionId": again}),
    )
    .await;
    assert!(gone(pid2));
}

/// Each malformed frame gets an answer: an error response when the
/// request can be identified, else a reason and a close.
#[tokio::test(flavor = "multi_thread")]
async fn malformed_frames_are_answered_or_closed_with_a_reason() {
    let env = Env::new();
    let _c = env.client().await;

    // No command: an error response, and the connection goes on.
    let mut a = Adapter::start(&env);
    assert!(a.conn.raw(&frame(&json!({"seq": 99, "type": "request"}))));
    let r = a.conn.response(99);
    assert_eq!(r["success"], false, "{r}");
    assert!(
        r["message"].as_str().unwrap().contains("no \"command\""),
        "{r}"
    );
    assert_eq!(a.conn.call("initialize", json!({}))["success"], true);
    drop(a);

    // A lowercase content-length is read.
    let mut a = Adapter::start(&env);
    let body = json!({"seq": 1, "type": "request", "command": "initialize"}).to_string();
    assert!(
        a.conn
            .raw(format!("content-length: {}\r\n\r\n{body}", body.len()).as_bytes())
    );
    assert_eq!(a.conn.response(1)["success"], true);
    drop(a);

    // A request with no header at all: answered, then closed.
    let mut a = Adapter::start(&env);
    assert!(
        a.conn
            .raw(br#"{"seq": 7, "type": "request", "command": "initialize"}"#)
    );
    let r = a.conn.response(7);
    assert_eq!(r["success"], false, "{r}");
    assert!(
        r["message"].as_str().unwrap().contains("Content-Length"),
        "{r}"
    );
    assert!(a.conn.closes_within(REPLY));
    drop(a);

    // Bodies that are no object: a reason, then a close.
    for body in [&b"[1,2]"[..], &b"\"launch\""[..]] {
        let mut a = Adapter::start(&env);
        let framed = [
            format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(),
            body,
        ]
        .concat();
        assert!(a.conn.raw(&framed));
        assert!(a.conn.closes_within(REPLY), "no close after {body:?}");
        assert!(
            a.conn.said().contains("must be a JSON object"),
            "{}",
            a.conn.said()
        );
        assert!(a.exits_within(REPLY));
    }
}

/// In DAP's words: a missing `program`, and `attach {pid}`, which reaches
/// the process (and leaves it running when the editor leaves).
#[tokio::test(flavor = "multi_thread")]
async fn launch_and_attach_errors_speak_dap() {
    let env = Env::new();
    let _c = env.client().await;
    let mut a = Adapter::start(&env);
    assert_eq!(a.conn.call("initialize", json!({}))["success"], true);
    let r = a
        .conn
        .call("launch", json!({"program": "/nonexistent/prog"}));
    let why = r["message"].as_str().unwrap();
    assert!(
        why.contains("'program' /nonexistent/prog does not exist") && !why.contains("projectRoot"),
        "{why}"
    );
    let r = a.conn.call("attach", json!({}));
    let why = r["message"].as_str().unwrap();
    assert!(
        why.contains("'sessionId'") && why.contains("'pid'"),
        "{why}"
    );
    drop(a);

    let mut target = support::Spawned::start(
        std::process::Command::new(fixture("attachee")).stdout(Stdio::null()),
    );
    let mut a = Adapter::start(&env);
    assert_eq!(a.conn.call("initialize", json!({}))["success"], true);
    let r = a.conn.call("attach", json!({"pid": target.id()}));
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(a.conn.call("disconnect", json!({}))["success"], true);
    assert!(a.exits_within(REPLY));
    assert!(
        matches!(target.try_wait(), Ok(None)),
        "a process attached by pid was killed"
    );
}

/// `strobe dap --port 0`, killed when dropped, and its port.
fn port_server(env: &Env) -> (support::Spawned, u16) {
    use std::io::BufRead;
    let mut dap = env.command(&["dap", "--port", "0"]);
    dap.stdout(Stdio::piped()).stderr(Stdio::null());
    let mut server = support::Spawned::start(&mut dap);
    let mut first = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port = first
        .trim()
        .strip_prefix("listening on 127.0.0.1:")
        .unwrap_or_else(|| panic!("{first:?}"))
        .parse()
        .unwrap();
    (server, port)
}

/// A raw connection to the port.
fn connect(port: u16) -> Conn {
    let s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    Conn::new(s.try_clone().unwrap(), s)
}

/// A header line with no end, on a port: cut once past the cap, never
/// read whole (two such clients took the adapter from 8 to 133 MB).
#[tokio::test(flavor = "multi_thread")]
async fn a_port_cuts_a_header_line_past_the_cap() {
    let env = Env::new();
    let (_server, port) = port_server(&env);
    let mut flood = connect(port);
    let chunk = vec![b'A'; 64 << 10];
    let mut sent = 0usize;
    while sent < (64 << 20) && flood.raw(&chunk) {
        sent += chunk.len();
    }
    assert!(sent < (64 << 20), "64 MB of one header line were all taken");
    assert!(flood.closes_within(REPLY));
}

/// A client on a port that never sends the token is closed, saying why.
#[tokio::test(flavor = "multi_thread")]
async fn a_port_closes_a_client_that_never_sends_the_token() {
    let env = Env::new();
    let (_server, port) = port_server(&env);
    let mut idle = connect(port);
    assert_eq!(idle.call("initialize", json!({}))["success"], true);
    assert!(
        idle.closes_within(REPLY),
        "a client without the token was kept"
    );
    assert!(idle.said().contains("\"token\""), "{}", idle.said());
}

/// A port serves 16 clients at once: one more is told so and closed. Once
/// the 16 are gone (none sent the token), a new client is served again.
#[tokio::test(flavor = "multi_thread")]
async fn a_port_caps_its_clients() {
    let env = Env::new();
    let (_server, port) = port_server(&env);
    let mut held: Vec<Conn> = (0..16).map(|_| connect(port)).collect();
    for c in &mut held {
        assert_eq!(c.call("initialize", json!({}))["success"], true);
    }
    let mut extra = connect(port);
    assert!(extra.closes_within(REPLY), "a 17th client was kept");
    assert!(
        extra.said().contains("clients are connected already"),
        "{}",
        extra.said()
    );
    for c in &mut held {
        assert!(c.closes_within(REPLY));
    }
    let mut again = connect(port);
    assert_eq!(again.call("initialize", json!({}))["success"], true);
}
