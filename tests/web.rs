//! The daemon's web endpoint over real loopback HTTP: `strobe ui` turns it
//! on, the API serves a real traced session (trace_c under Frida, launched
//! through MCP), and requests without the token, from a foreign Origin or
//! to a foreign Host are refused.

mod support;

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use support::{Env, fixture};

struct Http {
    status: u16,
    headers: String,
    body: Vec<u8>,
}

impl Http {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
}

/// One HTTP/1.1 request over a fresh loopback connection.
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Http {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let mut body = raw[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    Http {
        status,
        headers: head,
        body,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n").unwrap();
        let n = usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + n]);
        b = &b[eol + 2 + n + 2..];
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_web_api_serves_a_real_session_behind_its_token() {
    let env = Env::new();
    let c = env.client().await;
    c.ok(
        "debug_trace",
        json!({"add": ["fib", "process_point", "add"]}),
    )
    .await;
    let exe = fixture("trace_c");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);

    let out = env.command(&["ui"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .unwrap_or_else(|| panic!("{url}"));
    let (port, query) = rest.split_once("/?token=").unwrap();
    let port: u16 = port.parse().unwrap();
    let token = query.to_string();
    assert_eq!(token.len(), 64);
    let again = env.command(&["ui"]).output().unwrap();
    assert_eq!(
        String::from_utf8(again.stdout).unwrap().trim(),
        url,
        "one endpoint per daemon"
    );
    let info = env.path().join("ui.json");
    assert_eq!(
        std::fs::metadata(&info).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let auth = format!("Bearer {token}");
    let bearer = [("Authorization", auth.as_str())];

    // Refusals come before anything else.
    let none = http(port, "GET", "/api/sessions", &[], None);
    assert_eq!(none.status, 401);
    assert!(
        none.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("token")
    );
    let wrong = http(
        port,
        "GET",
        "/api/sessions",
        &[("Authorization", "Bearer nope")],
        None,
    );
    assert_eq!(wrong.status, 401);
    let foreign = http(
        port,
        "GET",
        "/api/sessions",
        &[bearer[0], ("Origin", "https://evil.example")],
        None,
    );
    assert_eq!(foreign.status, 403);
    let rebound = http(
        port,
        "GET",
        "/api/sessions",
        &[bearer[0], ("Host", &format!("evil.example:{port}"))],
        None,
    );
    assert_eq!(rebound.status, 403);

    // The UI's bundle (no data) loads without the token, so a page framed
    // by another site (an editor's webview, which gets no SameSite cookie)
    // can start; the Host and Origin checks still hold, and the API does
    // not open up.
    let ui_dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/dist");
    let assets = std::fs::read_dir(ui_dist.join("assets"))
        .expect("the web UI is built (./dev test builds it)")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".js"))
        .expect("a built script");
    let asset = format!("/assets/{assets}");
    let public = http(port, "GET", &asset, &[], None);
    assert_eq!(public.status, 200, "{}", public.headers);
    let rebound_asset = http(
        port,
        "GET",
        &asset,
        &[("Host", &format!("evil.example:{port}"))],
        None,
    );
    assert_eq!(rebound_asset.status, 403);
    let foreign_asset = http(
        port,
        "GET",
        &asset,
        &[("Origin", "https://evil.example")],
        None,
    );
    assert_eq!(foreign_asset.status, 403);
    assert_eq!(
        http(port, "GET", "/", &[], None).status,
        401,
        "the page itself needs the token"
    );
    assert_eq!(
        http(port, "GET", "/assets/../api/sessions", &[], None).status,
        400,
        "no way from /assets/ to the API"
    );

    // The session list and one session.
    let list = http(port, "GET", "/api/sessions", &bearer, None);
    assert_eq!(list.status, 200);
    let sessions = list.json();
    let row = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == id.as_str())
        .unwrap_or_else(|| panic!("{sessions}"));
    assert_eq!(row["exitCode"], 0, "{row}");
    let one = http(port, "GET", &format!("/api/sessions/{id}"), &bearer, None);
    assert_eq!(one.json()["sessionId"], id.as_str());
    let missing = http(port, "GET", "/api/sessions/nope", &bearer, None);
    assert_eq!(missing.status, 404);

    // The timeline. Over the whole session (mostly Frida's start-up) the
    // microsecond calls are only counted per column; zooming into the
    // columns that hold them, as a user would, brings them out as spans.
    let timeline = |from: u64, to: Option<u64>| {
        let range = to.map_or(format!("from={from}"), |to| format!("from={from}&to={to}"));
        let path = format!("/api/sessions/{id}/timeline?columns=800&{range}");
        let r = http(port, "GET", &path, &bearer, None);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        r.json()
    };
    let whole = timeline(0, None);
    assert!(
        whole["output"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["text"].as_str().unwrap().contains("hello world")),
        "{whole}"
    );
    assert_eq!(whole["markers"][0]["kind"], "process_exit");
    let mut t = whole;
    for _ in 0..6 {
        if !t["lanes"][0]["spans"].as_array().unwrap().is_empty() {
            break;
        }
        let counts = t["lanes"][0]["counts"].as_array().unwrap();
        let first = counts
            .iter()
            .position(|c| c.as_u64() > Some(0))
            .expect("calls are counted");
        let last = counts.iter().rposition(|c| c.as_u64() > Some(0)).unwrap();
        let (from, to) = (t["fromNs"].as_u64().unwrap(), t["toNs"].as_u64().unwrap());
        let per = (to - from) as f64 / 800.0;
        t = timeline(
            from + (first as f64 * per) as u64,
            Some(from + ((last + 1) as f64 * per) as u64 + 1),
        );
    }
    let lane = &t["lanes"][0];
    let names: std::collections::HashSet<&str> = lane["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| t["functions"][s["func"].to_string()].as_str().unwrap())
        .collect();
    assert!(names.contains("fib"), "{t}");
    assert!(
        lane["maxDepth"].as_u64().unwrap() >= 1,
        "recursive fib nests: {t}"
    );
    let bad = http(
        port,
        "GET",
        &format!("/api/sessions/{id}/timeline?columns=0"),
        &bearer,
        None,
    );
    assert_eq!(bad.status, 400);

    // The event table's query is debug_query's.
    let q = http(
        port,
        "POST",
        &format!("/api/sessions/{id}/query"),
        &bearer,
        Some(&json!({"eventType": "function_enter", "function": {"equals": "add"}})),
    );
    assert_eq!(q.status, 200, "{}", String::from_utf8_lossy(&q.body));
    assert_eq!(q.json()["events"].as_array().unwrap().len(), 3);
    let bad = http(
        port,
        "POST",
        &format!("/api/sessions/{id}/query"),
        &bearer,
        Some(&json!({"eventType": "nonsense"})),
    );
    assert_eq!(bad.status, 400);
    assert!(
        bad.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("eventType")
    );

    // Export, and the cookie the URL's token sets.
    let e = http(
        port,
        "GET",
        &format!("/api/sessions/{id}/export?token={token}"),
        &[],
        None,
    );
    assert_eq!(e.status, 200);
    assert!(e.headers.contains("strobe_token="), "{}", e.headers);
    assert!(e.headers.to_ascii_lowercase().contains("httponly"));
    let doc = e.json();
    assert!(
        doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["ph"] == "X" && e["name"] == "fib")
    );
    let cookie = format!("strobe_token={token}");
    let with_cookie = http(port, "GET", "/api/health", &[("Cookie", &cookie)], None);
    assert_eq!(with_cookie.status, 200);
}

/// A session's live stream, read as the page reads it.
struct Live {
    ws: tungstenite::WebSocket<std::net::TcpStream>,
    seen: Vec<Value>,
}

impl Live {
    fn open(port: u16, token: &str, id: &str) -> Live {
        let stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_millis(500)))
            .unwrap();
        let url = format!("ws://127.0.0.1:{port}/api/sessions/{id}/live?token={token}");
        let (ws, _) = tungstenite::client::client(url.as_str(), stream)
            .unwrap_or_else(|e| panic!("websocket handshake: {e}"));
        Live {
            ws,
            seen: Vec::new(),
        }
    }

    /// Reads messages until `done` holds for everything seen, or 30 s pass.
    fn until(&mut self, what: &str, done: impl Fn(&[Value]) -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !done(&self.seen) {
            assert!(
                std::time::Instant::now() < deadline,
                "no {what} on the live stream; seen: {:?}",
                self.seen
            );
            match self.ws.read() {
                Ok(tungstenite::Message::Text(t)) => {
                    self.seen.push(serde_json::from_str(&t).unwrap())
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!(
                    "live stream failed while waiting for {what}: {e}; seen: {:?}",
                    self.seen
                ),
            }
        }
    }

    fn of_type<'a>(seen: &'a [Value], t: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        seen.iter().filter(move |m| m["type"] == t)
    }
}

/// A running target seen live: output streams in, the agent's calls (the
/// pattern staged before the launch included) are recorded and stream in,
/// a pattern added from the page hooks the running target, a span's detail
/// carries its enter, and the end of the session is announced.
#[tokio::test(flavor = "multi_thread")]
async fn a_live_session_streams_output_agent_calls_and_takes_patterns_from_the_page() {
    let env = Env::new();
    let c = env.client().await;
    c.ok("debug_trace", json!({"add": ["tick_work"]})).await;
    let exe = fixture("ticker");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": ["-1", "100"], "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let (port, token) = env.ui_endpoint();
    let auth = format!("Bearer {token}");
    let bearer = [("Authorization", auth.as_str())];

    let mut live = Live::open(port, &token, &id);
    live.until("three tick lines", |seen| {
        Live::of_type(seen, "output")
            .flat_map(|m| m["items"].as_array().unwrap())
            .filter(|i| i["text"].as_str().unwrap().starts_with("tick "))
            .count()
            >= 3
    });
    live.until("a note of new events", |seen| {
        Live::of_type(seen, "events").next().is_some()
    });
    live.until("the staged pattern and the launch", |seen| {
        let tools: Vec<&str> = Live::of_type(seen, "agent")
            .map(|m| m["call"]["tool"].as_str().unwrap())
            .collect();
        tools.starts_with(&["debug_trace", "debug_launch"])
    });
    let first = Live::of_type(&live.seen, "agent").next().unwrap()["call"].clone();
    assert!(
        first["offsetNs"].as_i64().unwrap() < 0,
        "staged before the launch: {first}"
    );
    assert_eq!(first["args"]["add"][0], "tick_work");

    // A call the agent makes now streams in too.
    c.ok(
        "debug_query",
        json!({"sessionId": id, "eventType": "stdout", "limit": 2}),
    )
    .await;
    live.until("the agent's query", |seen| {
        Live::of_type(seen, "agent").any(|m| m["call"]["tool"] == "debug_query")
    });

    // A pattern added from the page hooks the running target.
    let added = http(
        port,
        "POST",
        &format!("/api/sessions/{id}/trace"),
        &bearer,
        Some(&json!({"add": ["tick_leaf"]})),
    );
    assert_eq!(
        added.status,
        200,
        "{}",
        String::from_utf8_lossy(&added.body)
    );
    let added = added.json();
    assert!(
        added["activePatterns"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "tick_leaf"),
        "{added}"
    );
    let leaf_calls = || {
        http(
            port,
            "POST",
            &format!("/api/sessions/{id}/query"),
            &bearer,
            Some(&json!({"eventType": "function_exit", "function": {"equals": "tick_leaf"}, "limit": 1})),
        )
        .json()["totalCount"]
            .as_u64()
            .unwrap()
    };
    assert!(
        support::wait_until(std::time::Duration::from_secs(20), || leaf_calls() > 0),
        "tick_leaf is traced after the page added it"
    );
    let empty = http(
        port,
        "POST",
        &format!("/api/sessions/{id}/trace"),
        &bearer,
        Some(&json!({})),
    );
    assert_eq!(empty.status, 400);
    assert!(
        empty.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("add")
    );

    // A span's detail: the exit, with its enter.
    let exits = http(
        port,
        "POST",
        &format!("/api/sessions/{id}/query"),
        &bearer,
        Some(
            &json!({"eventType": "function_exit", "function": {"equals": "tick_work"}, "limit": 1}),
        ),
    )
    .json();
    let exit_id = exits["events"][0]["id"].as_u64().unwrap();
    let detail = http(
        port,
        "GET",
        &format!("/api/sessions/{id}/events/{exit_id}"),
        &bearer,
        None,
    );
    assert_eq!(
        detail.status,
        200,
        "{}",
        String::from_utf8_lossy(&detail.body)
    );
    let detail = detail.json();
    assert_eq!(detail["event"]["id"], exit_id);
    assert_eq!(detail["event"]["function"], "tick_work");
    assert_eq!(detail["enter"]["eventType"], "function_enter", "{detail}");
    assert_eq!(detail["enter"]["function"], "tick_work");
    assert!(detail["enter"]["id"].as_u64().unwrap() < exit_id);
    assert_eq!(
        detail["enter"]["timestampNs"].as_u64().unwrap()
            + detail["event"]["durationNs"].as_u64().unwrap(),
        detail["event"]["timestampNs"].as_u64().unwrap()
    );
    let missing = http(
        port,
        "GET",
        &format!("/api/sessions/{id}/events/999999999"),
        &bearer,
        None,
    );
    assert_eq!(missing.status, 400);
    assert!(
        missing.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("999999999")
    );

    // The audit trail, whole.
    let calls = http(
        port,
        "GET",
        &format!("/api/sessions/{id}/agent"),
        &bearer,
        None,
    )
    .json();
    let calls = calls["calls"].as_array().unwrap();
    let tools: Vec<&str> = calls.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        ["debug_trace", "debug_launch", "debug_query"],
        "{calls:?}"
    );
    for call in calls {
        assert!(call["responseBytes"].as_u64().unwrap() > 0, "{call}");
        assert!(call["durationMs"].as_f64().unwrap() >= 0.0);
        assert_eq!(call["isError"], false);
    }

    // Stopping it is announced; the stream stays for later agent calls.
    c.ok(
        "debug_session",
        json!({"action": "stop", "sessionId": id, "retain": true}),
    )
    .await;
    live.until("the end", |seen| {
        Live::of_type(seen, "ended").next().is_some()
    });
    c.ok("debug_query", json!({"sessionId": id, "limit": 1}))
        .await;
    live.until("a call after the end", |seen| {
        Live::of_type(seen, "agent")
            .filter(|m| m["call"]["tool"] == "debug_query")
            .count()
            == 2
    });

    // Test runs (none in this daemon), and an unknown one.
    let runs = http(port, "GET", "/api/tests", &bearer, None).json();
    assert_eq!(runs["runs"], json!([]));
    let nope = http(port, "GET", "/api/tests/nope", &bearer, None);
    assert_eq!(nope.status, 404);
}

/// A page streaming a session counts as a client: the daemon does not
/// idle out under it, and does once it closes.
#[tokio::test(flavor = "multi_thread")]
async fn an_open_page_keeps_the_daemon_from_idling_out() {
    let env = Env::with_settings(json!({"daemon.idleTimeoutMs": 500}));
    let c = env.client().await;
    let exe = fixture("trace_c");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.wait_ended(&id).await;
    let (port, token) = env.ui_endpoint();
    let pid = env.daemon_pid().unwrap();
    let mut live = Live::open(port, &token, &id);
    live.until("the end", |seen| {
        Live::of_type(seen, "ended").next().is_some()
    });
    c.service.cancel().await.unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert!(env.is_our_daemon(pid), "an open page keeps the daemon up");
    live.ws.close(None).unwrap();
    let _ = live.ws.flush();
    drop(live);
    assert!(
        env.wait_daemon_gone(pid, std::time::Duration::from_secs(15)),
        "the daemon idles out once the page is gone"
    );
}
