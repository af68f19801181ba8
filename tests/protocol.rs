//! Raw JSON-RPC abuse through the real `strobe mcp`: every malformed line
//! gets the JSON-RPC error it deserves (-32700 parse error, -32600 invalid
//! request), with the request's id when it can be read, and the connection
//! keeps working — after a non-UTF-8 byte and a 17 MiB line too.

mod support;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use support::Env;

/// Generous: an answer comes in milliseconds; a dropped line never comes.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Raw {
    fn start(env: &Env) -> Raw {
        let mut child = env
            .command(&["mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn strobe mcp");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Raw {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next response (server requests and notifications are skipped).
    fn response(&self, after: &str) -> Value {
        loop {
            let line = self.lines.recv_timeout(ANSWER_TIMEOUT).unwrap_or_else(|_| {
                panic!("no answer within {ANSWER_TIMEOUT:?} to {after}: the line was dropped")
            });
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("strobe mcp wrote a non-JSON line ({e}): {line}"));
            if v.get("method").is_none() {
                return v;
            }
        }
    }

    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        let req = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(req.to_string().as_bytes());
        let v = self.response(method);
        assert_eq!(v["id"], id, "{v}");
        assert!(v.get("error").is_none(), "{method} failed: {v}");
        v["result"].clone()
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

fn short(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    match s.char_indices().nth(120) {
        Some((i, _)) => format!("{}… ({} bytes)", &s[..i], bytes.len()),
        None => s.into_owned(),
    }
}

#[test]
fn malformed_messages_are_answered_and_the_connection_survives() {
    let env = Env::new();
    let mut raw = Raw::start(&env);
    raw.call(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "protocol-test", "version": "0"}
        }),
    );
    raw.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":104,"method":"tools/call","params":{{"name":"debug_session","arguments":{{"action":{}{}}}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let mut huge = br#"{"jsonrpc":"2.0","id":199,"method":"tools/call","params":{"name":"debug_session","arguments":{"action":""#.to_vec();
    huge.resize(huge.len() + (17 << 20), b'a');
    huge.extend_from_slice(br#""}}}"#);

    // (line, code, id, a word the message must hold)
    let cases: Vec<(Vec<u8>, i64, Value, &str)> = vec![
        (b"this is not json".to_vec(), -32700, Value::Null, "Parse error"),
        (br#"{"jsonrpc":"2.0","id":101,"method":"tools/list""#.to_vec(), -32700, json!(101), "Parse error"),
        (
            br#"{"jsonrpc":"2.0","id":102,"method":"tools/call","params":{"name":"debug_session","arguments":{"action":"\ud800"}}}"#.to_vec(),
            -32700,
            json!(102),
            "surrogate",
        ),
        (
            br#"{"jsonrpc":"2.0","id":"s-103","method":"tools/call","params":{"name":"debug_session","arguments":{"action":"list","x":1e400}}}"#.to_vec(),
            -32700,
            json!("s-103"),
            "out of range",
        ),
        (deep.into_bytes(), -32700, json!(104), "128"),
        (format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(), -32700, Value::Null, "128"),
        (br#"[{"jsonrpc":"2.0","id":105,"method":"tools/list"}]"#.to_vec(), -32600, Value::Null, "batch"),
        (b"[]".to_vec(), -32600, Value::Null, "batch"),
        (br#"{"jsonrpc":"1.0","id":106,"method":"tools/list"}"#.to_vec(), -32600, json!(106), "jsonrpc"),
        (br#"{"id":107,"method":"tools/list"}"#.to_vec(), -32600, json!(107), "jsonrpc"),
        (br#"{"jsonrpc":"2.0","id":{"n":108},"method":"tools/list"}"#.to_vec(), -32600, Value::Null, "id"),
        (br#"{"jsonrpc":"2.0","id":[109],"method":"tools/list"}"#.to_vec(), -32600, Value::Null, "id"),
        (br#"{"jsonrpc":"2.0","id":true,"method":"tools/list"}"#.to_vec(), -32600, Value::Null, "id"),
        (br#"{"jsonrpc":"2.0","id":110,"method":42}"#.to_vec(), -32600, json!(110), "method"),
        (b"\xff".to_vec(), -32700, Value::Null, "UTF-8"),
        (b"{\"jsonrpc\":\"2.0\",\"id\":111,\"method\":\"tools/call\",\"params\":{\"name\":\"\xc3\x28\"}}".to_vec(), -32700, json!(111), "UTF-8"),
        (huge, -32600, json!(199), "16 MiB"),
    ];
    for (line, code, id, word) in cases {
        let what = short(&line);
        raw.send(&line);
        let v = raw.response(&what);
        assert_eq!(v["jsonrpc"], "2.0", "{what}: {v}");
        assert_eq!(v["error"]["code"], code, "{what}: {v}");
        assert_eq!(v["id"], id, "{what}: {v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(word),
            "{what}: {message:?} should say {word:?}"
        );
        assert!(message.len() < 400, "{what}: a long error: {message}");
    }

    // Still the same working connection.
    let tools = raw.call(2, "tools/list", json!({}));
    assert!(
        tools["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "{tools}"
    );
    let listed = raw.call(
        3,
        "tools/call",
        json!({"name": "debug_session", "arguments": {"action": "list"}}),
    );
    assert_ne!(listed["isError"], true, "{listed}");
    assert!(raw.child.try_wait().unwrap().is_none(), "strobe mcp exited");
}
