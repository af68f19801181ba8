//! What the tray shows: sessions and test runs, read from the daemon's web
//! API over loopback every couple of seconds.
//!
//! The API (not the daemon's internals) is the source so that an attached
//! app sees another process's daemon exactly as an owned one. Requests are
//! one plain HTTP/1.1 GET each, with the URL's token as a Bearer header.

use serde_json::Value;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// How many sessions the tray's "Recent sessions" lists.
pub const RECENT: usize = 8;

/// Where the API is and the token that opens it, from the UI's URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Api {
    port: u16,
    token: String,
}

impl Api {
    /// Parses `http://127.0.0.1:PORT/?token=HEX` (what the daemon hands out).
    pub fn from_ui_url(url: &str) -> Option<Api> {
        let rest = url.strip_prefix("http://127.0.0.1:")?;
        let (port, rest) = rest.split_once('/')?;
        let token = rest
            .trim_start_matches('?')
            .split(['&', '#'])
            .find_map(|kv| kv.strip_prefix("token="))?;
        Some(Api {
            port: port.parse().ok()?,
            token: token.to_string(),
        })
    }

    /// `GET path` → the JSON body of a 200 answer.
    pub fn get(&self, path: &str) -> io::Result<Value> {
        let timeout = Some(Duration::from_secs(3));
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        s.set_read_timeout(timeout)?;
        s.set_write_timeout(timeout)?;
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\
             Accept: application/json\r\nConnection: close\r\n\r\n",
            self.port, self.token
        );
        s.write_all(request.as_bytes())?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw)?;
        let (status, body) = parse_response(&raw)?;
        if status != 200 {
            return Err(io::Error::other(format!(
                "GET {path}: HTTP {status}: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        serde_json::from_slice(&body).map_err(|e| io::Error::other(format!("GET {path}: {e}")))
    }
}

/// Splits an HTTP/1.1 response into its status and (de-chunked) body.
fn parse_response(raw: &[u8]) -> io::Result<(u16, Vec<u8>)> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no HTTP response head"))?;
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("no HTTP status"))?;
    let body = &raw[split + 4..];
    if !head.contains("transfer-encoding: chunked") {
        return Ok((status, body.to_vec()));
    }
    let mut out = Vec::new();
    let mut rest = body;
    loop {
        let eol = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| bad("truncated chunk"))?;
        let size = std::str::from_utf8(&rest[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok())
            .ok_or_else(|| bad("bad chunk size"))?;
        if size == 0 {
            return Ok((status, out));
        }
        let data = rest
            .get(eol + 2..eol + 2 + size)
            .ok_or_else(|| bad("truncated chunk"))?;
        out.extend_from_slice(data);
        rest = rest.get(eol + 4 + size..).unwrap_or_default();
    }
}

/// A session for the tray's menu.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recent {
    /// The session id (for `#/session/<id>`).
    pub id: String,
    /// What the menu item says.
    pub label: String,
}

/// One reading of the daemon's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Sessions still running (or starting).
    pub running_sessions: usize,
    /// Test runs still running.
    pub running_tests: usize,
    /// The most recent crash: "program (SIGNAL), N min ago".
    pub last_crash: Option<String>,
    /// Newest sessions first.
    pub recent: Vec<Recent>,
}

impl Snapshot {
    /// Reads the API now (`now_ms`: wall clock, for "N min ago").
    pub fn fetch(api: &Api, now_ms: i64) -> io::Result<Snapshot> {
        let sessions = api.get("/api/sessions")?;
        let tests = api.get("/api/tests")?;
        Ok(Snapshot::from_api(&sessions, &tests, now_ms))
    }

    /// Summarizes `GET /api/sessions` and `GET /api/tests`.
    pub fn from_api(sessions: &Value, tests: &Value, now_ms: i64) -> Snapshot {
        let mut list: Vec<&Value> = sessions
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        list.sort_by_key(|s| std::cmp::Reverse(s["startedAt"].as_i64().unwrap_or(0)));
        let running = |s: &&&Value| matches!(s["state"].as_str(), Some("running" | "starting"));
        let last_crash = list.iter().find(|s| s["state"] == "crashed").map(|s| {
            let when = s["endedAt"]
                .as_i64()
                .or(s["startedAt"].as_i64())
                .unwrap_or(now_ms);
            let signal = s["signal"]
                .as_str()
                .map(|sig| format!(" ({sig})"))
                .unwrap_or_default();
            format!("{}{signal}, {}", program(s), ago(now_ms - when))
        });
        let running_tests = tests["runs"]
            .as_array()
            .map(|runs| runs.iter().filter(|r| r["status"] == "running").count())
            .unwrap_or(0);
        Snapshot {
            running_sessions: list.iter().filter(running).count(),
            running_tests,
            last_crash,
            recent: list
                .iter()
                .take(RECENT)
                .filter_map(|s| {
                    Some(Recent {
                        id: s["sessionId"].as_str()?.to_string(),
                        label: recent_label(s, now_ms),
                    })
                })
                .collect(),
        }
    }

    /// What runs now: "N sessions running, M test runs running".
    pub fn running(&self) -> String {
        format!(
            "{} running, {} running",
            plural(self.running_sessions, "session"),
            plural(self.running_tests, "test run")
        )
    }

    /// One line: what runs now and the last crash.
    pub fn summary(&self) -> String {
        let mut line = self.running();
        if let Some(crash) = &self.last_crash {
            line.push_str(&format!("; last crash: {crash}"));
        }
        line
    }

    /// The short label next to the icon (where the tray shows one): only
    /// while something runs, so an idle tray stays quiet.
    pub fn title(&self) -> String {
        match (self.running_sessions, self.running_tests) {
            (0, 0) => String::new(),
            (s, 0) => format!("{s} running"),
            (0, t) => format!("{t} testing"),
            (s, t) => format!("{s} running · {t} testing"),
        }
    }
}

/// The executable's file name.
fn program(s: &Value) -> String {
    let path = s["binaryPath"].as_str().unwrap_or("?");
    path.rsplit('/').next().unwrap_or(path).to_string()
}

fn recent_label(s: &Value, now_ms: i64) -> String {
    let state = s["state"].as_str().unwrap_or("?");
    let outcome = match (s["exitCode"].as_i64(), s["signal"].as_str()) {
        (_, Some(sig)) => format!("{state} ({sig})"),
        (Some(code), None) => format!("{state} ({code})"),
        (None, None) => state.to_string(),
    };
    let started = s["startedAt"].as_i64().unwrap_or(now_ms);
    format!("{} — {outcome}, {}", program(s), ago(now_ms - started))
}

/// "just now", "5 min ago", "3 h ago", "2 d ago".
fn ago(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => "just now".into(),
        60..3600 => format!("{} min ago", s / 60),
        3600..86_400 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_the_daemons_ui_url() {
        let api = Api::from_ui_url("http://127.0.0.1:40123/?token=abcd").unwrap();
        assert_eq!(api.port, 40123);
        assert_eq!(api.token, "abcd");
        assert_eq!(Api::from_ui_url("http://example.com/?token=abcd"), None);
        assert_eq!(Api::from_ui_url("http://127.0.0.1:1/"), None);
    }

    #[test]
    fn summarizes_sessions_and_tests() {
        let now = 10_000_000;
        let sessions = json!([
            {"sessionId": "a", "state": "exited", "exitCode": 0, "binaryPath": "/x/old", "startedAt": now - 7_200_000},
            {"sessionId": "b", "state": "crashed", "signal": "SIGSEGV", "binaryPath": "/x/crashy",
             "startedAt": now - 400_000, "endedAt": now - 300_000},
            {"sessionId": "c", "state": "running", "binaryPath": "/x/server", "startedAt": now - 1_000},
        ]);
        let tests = json!({"runs": [{"testRunId": "t1", "status": "running"}, {"testRunId": "t0", "status": "completed"}]});
        let s = Snapshot::from_api(&sessions, &tests, now);
        assert_eq!(s.running_sessions, 1);
        assert_eq!(s.running_tests, 1);
        assert_eq!(s.last_crash.as_deref(), Some("crashy (SIGSEGV), 5 min ago"));
        let ids: Vec<&str> = s.recent.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["c", "b", "a"]);
        assert_eq!(s.recent[0].label, "server — running, just now");
        assert_eq!(s.recent[2].label, "old — exited (0), 2 h ago");
        assert_eq!(
            s.summary(),
            "1 session running, 1 test run running; last crash: crashy (SIGSEGV), 5 min ago"
        );
        assert_eq!(s.title(), "1 running · 1 testing");
        let idle = Snapshot::from_api(&json!([]), &json!({"runs": []}), now);
        assert_eq!(idle.summary(), "0 sessions running, 0 test runs running");
        assert_eq!(idle.title(), "");
    }

    #[test]
    fn reads_chunked_and_plain_bodies() {
        let plain = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n[]";
        assert_eq!(parse_response(plain).unwrap(), (200, b"[]".to_vec()));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n[1,\r\n2\r\n2]\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked).unwrap(), (200, b"[1,2]".to_vec()));
        assert!(parse_response(b"garbage").is_err());
    }
}
