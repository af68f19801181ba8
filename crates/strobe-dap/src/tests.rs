//! The adapter's answers to what a client sends, against a fake daemon
//! that records the tool calls (the real one: tests/dap.rs and
//! tests/hostile/dap.rs).

use crate::Tools;
use crate::wire::{WireError, read_message};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// Answers as the daemon would, and records each call.
#[derive(Clone, Default)]
struct Fake {
    calls: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Tools for Fake {
    async fn call(&mut self, tool: &str, args: Value) -> Result<Value, String> {
        self.calls
            .lock()
            .unwrap()
            .push((tool.to_string(), args.clone()));
        Ok(match (tool, args["action"].as_str()) {
            ("debug_launch", _) => json!({"sessionId": "s-1", "pid": 42,
                                          "paused": {"threadId": 42}}),
            ("debug_session", Some("status")) => json!({"state": "running", "pid": 7}),
            _ => json!({}),
        })
    }
}

fn frame(msg: &Value) -> Vec<u8> {
    let body = msg.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn request(seq: i64, command: &str, arguments: Value) -> Vec<u8> {
    frame(&json!({"seq": seq, "type": "request", "command": command, "arguments": arguments}))
}

struct Run {
    out: Vec<Value>,
    result: Result<(), WireError>,
    calls: Vec<(String, Value)>,
}

impl Run {
    /// The response to request `seq`.
    fn response(&self, seq: i64) -> &Value {
        self.out
            .iter()
            .find(|m| m["type"] == "response" && m["request_seq"] == seq)
            .unwrap_or_else(|| panic!("no response to {seq}: {:?}", self.out))
    }

    /// The text of the adapter's `output` events.
    fn said(&self) -> String {
        self.out
            .iter()
            .filter(|m| m["event"] == "output")
            .map(|m| m["body"]["output"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// The `debug_session stop` calls, as their `retain`.
    fn stops(&self) -> Vec<bool> {
        self.calls
            .iter()
            .filter(|(t, a)| t == "debug_session" && a["action"] == "stop")
            .map(|(_, a)| a["retain"] == true)
            .collect()
    }

    fn launches(&self) -> usize {
        self.calls
            .iter()
            .filter(|(t, _)| t == "debug_launch")
            .count()
    }
}

/// Serves `input` (then its end) and collects what the adapter wrote.
async fn serve(input: Vec<u8>) -> Run {
    let fake = Fake::default();
    let calls = fake.calls.clone();
    let (w, r) = tokio::io::duplex(1 << 20);
    let result = crate::serve(fake, std::io::Cursor::new(input), w).await;
    let mut r = tokio::io::BufReader::new(r);
    let mut out = Vec::new();
    while let Ok(m) = read_message(&mut r).await {
        out.push(m);
    }
    let calls = calls.lock().unwrap().clone();
    Run { out, result, calls }
}

fn concat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

#[tokio::test]
async fn a_launch_before_initialize_is_refused_and_launches_nothing() {
    let run = serve(request(1, "launch", json!({"program": "/bin/true"}))).await;
    let r = run.response(1);
    assert_eq!(r["success"], false, "{r}");
    assert!(
        r["message"].as_str().unwrap().contains("initialize first"),
        "{r}"
    );
    assert_eq!(run.launches(), 0);
}

#[tokio::test]
async fn a_second_launch_is_refused_and_the_first_program_ends_with_the_connection() {
    let run = serve(concat(&[
        request(1, "initialize", json!({})),
        request(2, "launch", json!({"program": "/bin/true"})),
        request(3, "launch", json!({"program": "/bin/true"})),
    ]))
    .await;
    assert_eq!(run.response(2)["success"], true);
    let second = run.response(3);
    assert_eq!(second["success"], false);
    assert!(
        second["message"]
            .as_str()
            .unwrap()
            .contains("already debugs session s-1"),
        "{second}"
    );
    assert_eq!(run.launches(), 1);
    let (_, launch) = run.calls.iter().find(|(t, _)| t == "debug_launch").unwrap();
    assert_eq!(launch["endWithConnection"], true, "{launch}");
    // The input ended with no disconnect: the program is stopped anyway.
    assert_eq!(run.stops(), vec![false]);
}

#[tokio::test]
async fn a_launched_program_ends_even_when_the_disconnect_asks_to_leave_it() {
    let run = serve(concat(&[
        request(1, "initialize", json!({})),
        request(2, "launch", json!({"program": "/bin/true"})),
        request(3, "disconnect", json!({"terminateDebuggee": false})),
    ]))
    .await;
    assert_eq!(run.response(3)["success"], true);
    assert_eq!(run.stops(), vec![false]);
}

#[tokio::test]
async fn an_attached_session_is_left_or_stopped_with_its_data_kept_never_deleted() {
    let attach = |terminate: Option<bool>| {
        let mut args = json!({});
        if let Some(t) = terminate {
            args["terminateDebuggee"] = json!(t);
        }
        concat(&[
            request(1, "initialize", json!({})),
            request(2, "attach", json!({"sessionId": "agent-1"})),
            request(3, "disconnect", args),
        ])
    };
    assert_eq!(serve(attach(None)).await.stops(), Vec::<bool>::new());
    assert_eq!(serve(attach(Some(false))).await.stops(), Vec::<bool>::new());
    // Stopped at the user's word: retained.
    assert_eq!(serve(attach(Some(true))).await.stops(), vec![true]);
    let run = serve(concat(&[
        request(1, "initialize", json!({})),
        request(2, "attach", json!({"sessionId": "agent-1"})),
        request(3, "terminate", json!({})),
    ]))
    .await;
    assert_eq!(run.stops(), vec![true]);
    // The stream's end leaves an attached session alone.
    let run = serve(concat(&[
        request(1, "initialize", json!({})),
        request(2, "attach", json!({"sessionId": "agent-1"})),
    ]))
    .await;
    assert_eq!(run.stops(), Vec::<bool>::new());
}

#[tokio::test]
async fn attach_says_what_it_needs_in_dap_terms() {
    let run = serve(concat(&[
        request(1, "initialize", json!({})),
        request(2, "attach", json!({})),
        request(3, "attach", json!({"pid": -4})),
    ]))
    .await;
    let why = run.response(2)["message"].as_str().unwrap().to_string();
    assert!(
        why.contains("'sessionId'") && why.contains("'pid'") && !why.contains("projectRoot"),
        "{why}"
    );
    let why = run.response(3)["message"].as_str().unwrap().to_string();
    assert!(why.contains("not a process id"), "{why}");
    assert_eq!(run.launches(), 0);
}

#[tokio::test]
async fn a_missing_program_is_named_as_the_launch_gave_it() {
    let run = serve(concat(&[
        request(1, "initialize", json!({})),
        request(2, "launch", json!({"program": "/nonexistent/prog"})),
    ]))
    .await;
    let why = run.response(2)["message"].as_str().unwrap().to_string();
    assert!(
        why.contains("'program' /nonexistent/prog does not exist") && !why.contains("projectRoot"),
        "{why}"
    );
    assert_eq!(run.launches(), 0);
}

#[tokio::test]
async fn a_request_without_a_command_or_not_a_request_gets_an_error_response() {
    let run = serve(concat(&[
        frame(&json!({"seq": 99, "type": "request"})),
        frame(&json!({"seq": 100, "type": "nonsense", "command": "threads"})),
        request(101, "initialize", json!({})),
    ]))
    .await;
    let r = run.response(99);
    assert_eq!(r["success"], false);
    assert_eq!(r["command"], "");
    assert!(r["message"].as_str().unwrap().contains("no \"command\""));
    assert!(
        run.response(100)["message"]
            .as_str()
            .unwrap()
            .contains("not a request")
    );
    // The connection goes on.
    assert_eq!(run.response(101)["success"], true);
}

#[tokio::test]
async fn an_array_or_string_body_is_refused_with_a_reason_and_a_close() {
    for body in [json!([1, 2]), json!("launch")] {
        let run = serve(concat(&[frame(&body), request(2, "initialize", json!({}))])).await;
        assert!(
            run.said().contains("must be a JSON object"),
            "{:?}",
            run.out
        );
        // Closed: nothing after it is answered.
        assert!(
            !run.out.iter().any(|m| m["request_seq"] == 2),
            "{:?}",
            run.out
        );
    }
}

#[tokio::test]
async fn a_message_without_its_header_is_answered_then_the_connection_closes() {
    let run = serve(concat(&[
        request(1, "initialize", json!({})),
        request(2, "launch", json!({"program": "/bin/true"})),
        br#"{"seq": 3, "type": "request", "command": "threads"}"#.to_vec(),
    ]))
    .await;
    let r = run.response(3);
    assert_eq!(r["success"], false);
    assert!(
        r["message"].as_str().unwrap().contains("Content-Length"),
        "{r}"
    );
    assert!(matches!(run.result, Err(WireError::Malformed { .. })));
    // What the connection launched ends with it.
    assert_eq!(run.stops(), vec![false]);
}

#[tokio::test]
async fn a_lowercase_content_length_is_read() {
    let body = json!({"seq": 1, "type": "request", "command": "initialize"}).to_string();
    let raw = format!("content-length: {}\r\n\r\n{body}", body.len());
    let run = serve(raw.into_bytes()).await;
    assert_eq!(run.response(1)["success"], true);
}
