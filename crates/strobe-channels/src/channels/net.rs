//! `net:<port>` or `net:tcp://127.0.0.1:8080`, `net:udp://…`,
//! `net:http://…`: requests and payloads from the daemon to the program,
//! on loopback only, and the answers. Bare `net` sends nothing: while any
//! net channel is open the session records the program's own socket I/O
//! (from agent hooks, not here).

use super::clip;
use crate::{ChannelError, ChannelKind, ChannelSpec, InputChannel, OpenChannel, SessionTarget};
use serde_json::{Map, Value, json};
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes of an answer kept (the rest is counted).
const MAX_ANSWER: usize = 64 * 1024;
/// Characters of a body in a reply and in the answer's event.
const BODY_SHOWN: usize = 4096;
/// How long a request waits for its answer by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a raw payload waits for answer bytes to stop coming.
const DEFAULT_READ: Duration = Duration::from_millis(500);

/// What a net stimulus may hold.
const FIELDS: [&str; 8] = [
    "method",
    "path",
    "headers",
    "body",
    "data",
    "hex",
    "readMs",
    "timeoutMs",
];

/// The `net` kind.
pub struct Net;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Proto {
    Tcp,
    Udp,
}

struct NetChannel {
    name: String,
    proto: Proto,
    addr: SocketAddr,
}

impl ChannelKind for Net {
    fn kind(&self) -> &'static str {
        "net"
    }

    fn stimulus_fields(&self) -> &'static [&'static str] {
        &FIELDS
    }

    fn describe(&self) -> &'static str {
        "net:<port> | tcp://|udp://|http://127.0.0.1:<port> (loopback only): send {method?, path, headers?, body?} (HTTP) or {data | hex, readMs?}; each answer is an event. Any net channel (bare `net` only observes) also records the program's own socket I/O"
    }

    fn watches_program_sockets(&self) -> bool {
        true
    }

    fn open(&self, spec: &ChannelSpec, _: &SessionTarget) -> Result<OpenChannel, ChannelError> {
        let Some(target) = spec.target.clone() else {
            // Bare `net`: the program's socket I/O only.
            return Ok(OpenChannel {
                input: None,
                output: None,
                ..Default::default()
            });
        };
        let (proto, addr) = parse_target(&target).map_err(|why| ChannelError::Unavailable {
            channel: format!("net:{target}"),
            why,
        })?;
        let ch = Arc::new(NetChannel {
            name: format!("net:{target}"),
            proto,
            addr,
        });
        Ok(OpenChannel {
            input: Some(Box::new(ch)),
            output: None,
            ..Default::default()
        })
    }
}

/// `8080`, `tcp://127.0.0.1:8080`, `udp://[::1]:9000`, `http://localhost:80`.
fn parse_target(target: &str) -> Result<(Proto, SocketAddr), String> {
    if target.is_empty() {
        return Err(
            "say where: net:<port> (TCP on 127.0.0.1), or net:tcp://127.0.0.1:<port>, net:udp://…, net:http://…"
                .into(),
        );
    }
    let (proto, rest) = match target.split_once("://") {
        Some(("tcp" | "http", r)) => (Proto::Tcp, r),
        Some(("udp", r)) => (Proto::Udp, r),
        Some((other, _)) => {
            return Err(format!("scheme {other:?} is not tcp, udp or http"));
        }
        None => (Proto::Tcp, target),
    };
    let rest = rest.trim_end_matches('/');
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) => (h, p),
        None => ("127.0.0.1", rest),
    };
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| format!("{port:?} is not a port (1-65535)"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = match host {
        "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        h => h.parse().map_err(|_| {
            format!("{h:?} is not a loopback address: net channels reach 127.0.0.0/8 and ::1 only (write an address, not a name)")
        })?,
    };
    if !ip.is_loopback() {
        return Err(format!(
            "{ip} is not loopback: net channels only reach this machine (127.0.0.0/8, ::1), so a scenario can never touch another host"
        ));
    }
    Ok((proto, SocketAddr::new(ip, port)))
}

impl NetChannel {
    fn bad(&self, why: impl Into<String>) -> ChannelError {
        ChannelError::BadAction {
            channel: self.name.clone(),
            why: why.into(),
        }
    }

    fn unavailable(&self, why: String) -> ChannelError {
        ChannelError::Unavailable {
            channel: self.name.clone(),
            why,
        }
    }

    fn http(&self, obj: &Map<String, Value>, timeout: Duration) -> Result<Value, ChannelError> {
        if self.proto == Proto::Udp {
            return Err(self.bad("HTTP goes over TCP: this channel is UDP; send {data} or {hex}"));
        }
        let method = match obj.get("method") {
            None => "GET".to_string(),
            Some(Value::String(m))
                if !m.is_empty() && m.bytes().all(|b| b.is_ascii_uppercase()) =>
            {
                m.clone()
            }
            Some(_) => return Err(self.bad("'method' is an upper-case HTTP method (GET, POST, …)")),
        };
        let path = match obj.get("path") {
            None => "/".to_string(),
            Some(Value::String(p)) if p.starts_with('/') && !p.contains(['\r', '\n', ' ']) => {
                p.clone()
            }
            Some(_) => {
                return Err(self.bad("'path' starts with '/' and has no spaces or line breaks"));
            }
        };
        let body = match obj.get("body") {
            None => String::new(),
            Some(Value::String(b)) => b.clone(),
            Some(v @ (Value::Object(_) | Value::Array(_))) => v.to_string(),
            Some(_) => {
                return Err(self.bad("'body' is a string, or JSON (sent as application/json)"));
            }
        };
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nUser-Agent: strobe\r\n",
            self.addr
        );
        let mut has_type = false;
        if let Some(h) = obj.get("headers") {
            let h = h
                .as_object()
                .ok_or_else(|| self.bad("'headers' is an object of strings"))?;
            for (k, v) in h {
                let v = v
                    .as_str()
                    .ok_or_else(|| self.bad(format!("header {k:?} is not a string")))?;
                if k.contains([':', '\r', '\n']) || v.contains(['\r', '\n']) {
                    return Err(self.bad(format!("header {k:?} has a ':' or a line break")));
                }
                has_type |= k.eq_ignore_ascii_case("content-type");
                head.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        if !body.is_empty() {
            if !has_type && matches!(obj.get("body"), Some(Value::Object(_) | Value::Array(_))) {
                head.push_str("Content-Type: application/json\r\n");
            }
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let request = format!("{method} {path}");
        let started = Instant::now();
        let raw = self.exchange(format!("{head}{body}").as_bytes(), timeout, None)?;
        let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
        let answer = parse_http(&raw).map_err(|why| {
            self.unavailable(format!(
                "{request}: the answer is not HTTP ({why}): {:?}",
                clip(&String::from_utf8_lossy(&raw), 80)
            ))
        })?;
        let text = String::from_utf8_lossy(&answer.body).into_owned();
        let summary = format!(
            "{request} → {} {} in {elapsed_ms:.1} ms ({} bytes){}",
            answer.status,
            answer.reason,
            answer.body.len(),
            if text.is_empty() {
                String::new()
            } else {
                format!(": {:?}", clip(&text, 60))
            }
        );
        let result = json!({
            "request": request,
            "status": answer.status,
            "reason": answer.reason,
            "headers": answer.headers,
            "body": clip(&text, BODY_SHOWN),
            "bytes": answer.body.len(),
            "elapsedMs": (elapsed_ms * 10.0).round() / 10.0,
            "summary": summary,
        });
        Ok(result)
    }

    /// Sends `payload` and reads the answer: until EOF (HTTP), or until no
    /// byte came for `idle` (raw payloads).
    fn exchange(
        &self,
        payload: &[u8],
        timeout: Duration,
        idle: Option<Duration>,
    ) -> Result<Vec<u8>, ChannelError> {
        let refused = |e: std::io::Error| {
            self.unavailable(format!(
                "{} {}: {e} — is the program listening there yet? (wait for its \"listening\" output first)",
                if self.proto == Proto::Udp { "sending to" } else { "connecting to" },
                self.addr
            ))
        };
        let mut out = Vec::new();
        match self.proto {
            Proto::Tcp => {
                let mut s = TcpStream::connect_timeout(&self.addr, timeout).map_err(refused)?;
                s.set_write_timeout(Some(timeout)).map_err(refused)?;
                s.write_all(payload).map_err(refused)?;
                let deadline = Instant::now() + timeout;
                let mut buf = [0u8; 8192];
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    let wait = idle.map_or(left, |i| i.min(left));
                    s.set_read_timeout(Some(wait)).map_err(refused)?;
                    match s.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            let keep = n.min(MAX_ANSWER.saturating_sub(out.len()));
                            out.extend_from_slice(&buf[..keep]);
                            // A server that keeps the connection open despite
                            // `Connection: close`: its answer ends with its body.
                            if idle.is_none() && http_complete(&out) {
                                break;
                            }
                        }
                        Err(e)
                            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                        {
                            if idle.is_some() {
                                break;
                            }
                            return Err(self.unavailable(format!(
                                "no complete answer from {} within {} ms ({} bytes came)",
                                self.addr,
                                timeout.as_millis(),
                                out.len()
                            )));
                        }
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
                        Err(e) => return Err(refused(e)),
                    }
                }
            }
            Proto::Udp => {
                let bind: SocketAddr = if self.addr.is_ipv4() {
                    "127.0.0.1:0".parse().expect("an address")
                } else {
                    "[::1]:0".parse().expect("an address")
                };
                let s = UdpSocket::bind(bind).map_err(refused)?;
                s.send_to(payload, self.addr).map_err(refused)?;
                s.set_read_timeout(Some(idle.unwrap_or(DEFAULT_READ)))
                    .map_err(refused)?;
                let mut buf = vec![0u8; 65536];
                if let Ok((n, _)) = s.recv_from(&mut buf) {
                    out.extend_from_slice(&buf[..n]);
                }
            }
        }
        Ok(out)
    }
}

impl InputChannel for Arc<NetChannel> {
    fn name(&self) -> &str {
        &self.name
    }

    fn preview(&self, action: &Value) -> String {
        let field = |k: &str| action.get(k).and_then(Value::as_str);
        match (field("data"), field("hex")) {
            (Some(d), _) => format!("{} bytes to {}: {:?}", d.len(), self.addr, clip(d, 60)),
            (None, Some(h)) => format!("{} bytes to {}", h.len() / 2, self.addr),
            (None, None) => format!(
                "{} {} to {}",
                field("method").unwrap_or("GET"),
                field("path").unwrap_or("/"),
                self.addr
            ),
        }
    }

    fn answers(&self) -> bool {
        true
    }

    fn send(&self, action: &Value) -> Result<Value, ChannelError> {
        let obj = action.as_object().ok_or_else(|| {
            self.bad("send an object: {method?, path, headers?, body?} or {data | hex, readMs?}")
        })?;
        for key in obj.keys() {
            if !FIELDS.contains(&key.as_str()) {
                return Err(self.bad(format!(
                    "unknown field {key:?}: net takes {}",
                    FIELDS.join(", ")
                )));
            }
        }
        let ms = |k: &str, default: Duration| match obj.get(k) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=60_000).contains(n))
                .map(Duration::from_millis)
                .ok_or_else(|| self.bad(format!("'{k}' is 1 to 60000 (ms)"))),
        };
        let timeout = ms("timeoutMs", DEFAULT_TIMEOUT)?;
        let is_http = ["method", "path", "headers", "body"]
            .iter()
            .any(|k| obj.contains_key(*k));
        let is_raw = obj.contains_key("data") || obj.contains_key("hex");
        match (is_http, is_raw) {
            (true, true) => Err(self.bad("an HTTP request (method, path, headers, body) or a raw payload (data, hex), not both")),
            (false, false) => Err(self.bad("nothing to send: give path (HTTP) or data / hex (raw bytes)")),
            (true, false) => self.http(obj, timeout),
            (false, true) => {
                let payload = match (obj.get("data"), obj.get("hex")) {
                    (Some(Value::String(d)), None) => d.as_bytes().to_vec(),
                    (None, Some(Value::String(h))) => decode_hex(h).ok_or_else(|| self.bad("'hex' is pairs of hex digits"))?,
                    (Some(_), Some(_)) => return Err(self.bad("give data or hex, not both")),
                    _ => return Err(self.bad("data and hex are strings")),
                };
                let idle = ms("readMs", DEFAULT_READ)?;
                let started = Instant::now();
                let answer = self.exchange(&payload, timeout, Some(idle))?;
                let text = String::from_utf8_lossy(&answer).into_owned();
                let printable = std::str::from_utf8(&answer).is_ok();
                let shown = if printable { format!("{:?}", clip(&text, 60)) } else { format!("{} bytes (binary)", answer.len()) };
                let summary = format!("sent {} bytes to {} → {} bytes back{}", payload.len(), self.addr, answer.len(),
                    if answer.is_empty() { String::new() } else { format!(": {shown}") });
                Ok(json!({
                    "sent": payload.len(),
                    "answer": if printable { json!(clip(&text, BODY_SHOWN)) } else { json!(encode_hex(&answer[..answer.len().min(BODY_SHOWN / 2)])) },
                    "bytes": answer.len(),
                    "elapsedMs": (started.elapsed().as_secs_f64() * 1e4).round() / 10.0,
                    "summary": summary,
                }))
            }
        }
    }
}

/// An HTTP/1.x answer.
struct HttpAnswer {
    status: u16,
    reason: String,
    headers: Map<String, Value>,
    body: Vec<u8>,
}

/// Parses a whole HTTP/1.x answer (read to EOF), de-chunking its body.
fn parse_http(raw: &[u8]) -> Result<HttpAnswer, String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no end of headers")?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    if !parts.next().unwrap_or("").starts_with("HTTP/1.") {
        return Err(format!("status line {status_line:?}"));
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("status line {status_line:?}"))?;
    let reason = parts.next().unwrap_or("").to_string();
    let mut headers = Map::new();
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), json!(v.trim()));
        }
    }
    let mut body = raw[end + 4..].to_vec();
    if headers.get("transfer-encoding").and_then(Value::as_str) == Some("chunked") {
        body = dechunk(&body).ok_or("a malformed chunked body")?;
    } else if let Some(n) = headers
        .get("content-length")
        .and_then(|v| v.as_str()?.parse::<usize>().ok())
    {
        body.truncate(n);
    }
    Ok(HttpAnswer {
        status,
        reason,
        headers,
        body,
    })
}

/// Whether `raw` holds a whole HTTP answer: headers, then a body as long
/// as its Content-Length, or a chunked body's last chunk.
fn http_complete(raw: &[u8]) -> bool {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let body = &raw[end + 4..];
    if head.contains("transfer-encoding: chunked") {
        return body.ends_with(b"0\r\n\r\n");
    }
    head.lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse::<usize>().ok())
        .is_some_and(|n| body.len() >= n)
}

fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = b.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&b[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        b = &b[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(..size)?);
        b = b.get(size + 2..).unwrap_or(&[]);
    }
}

fn decode_hex(h: &str) -> Option<Vec<u8>> {
    let h: String = h.chars().filter(|c| !c.is_whitespace()).collect();
    if !h.len().is_multiple_of(2) {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).ok())
        .collect()
}

fn encode_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn an_answer_is_complete_at_its_length_or_last_chunk() {
        assert!(!http_complete(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel"
        ));
        assert!(http_complete(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
        ));
        assert!(!http_complete(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
        ));
        assert!(http_complete(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        ));
        assert!(
            !http_complete(b"HTTP/1.1 200 OK\r\n\r\nuntil close"),
            "no length: read to EOF"
        );
    }

    #[test]
    fn targets_are_loopback_only() {
        assert_eq!(
            parse_target("8080").unwrap(),
            (Proto::Tcp, "127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(
            parse_target("udp://[::1]:9").unwrap(),
            (Proto::Udp, "[::1]:9".parse().unwrap())
        );
        assert_eq!(
            parse_target("http://localhost:80").unwrap().1,
            "127.0.0.1:80".parse().unwrap()
        );
        let e = parse_target("tcp://10.0.0.1:80").unwrap_err();
        assert!(e.contains("not loopback"), "{e}");
        let e = parse_target("tcp://example.com:80").unwrap_err();
        assert!(e.contains("not a loopback address"), "{e}");
        assert!(parse_target("tcp://127.0.0.1:0").is_err());
        assert!(
            parse_target("ftp://127.0.0.1:21")
                .unwrap_err()
                .contains("not tcp, udp or http")
        );
    }

    #[test]
    fn an_http_request_gets_its_answer_dechunked() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 1024];
            let n = s.read(&mut buf).unwrap();
            let req = String::from_utf8_lossy(&buf[..n]).into_owned();
            s.write_all(b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n").unwrap();
            req
        });
        let spec = ChannelSpec::parse(&format!("net:{port}")).unwrap();
        let session = SessionTarget::for_tests("/", vec![]);
        let ch = Net.open(&spec, &session).unwrap();
        let r = ch
            .input
            .unwrap()
            .send(&json!({"method": "POST", "path": "/items", "body": {"a": 1}}))
            .unwrap();
        let req = server.join().unwrap();
        assert!(
            req.starts_with("POST /items HTTP/1.1\r\n")
                && req.contains("Content-Type: application/json")
                && req.ends_with("{\"a\":1}"),
            "{req}"
        );
        assert_eq!(r["status"], 500);
        assert_eq!(r["body"], "hello world");
        assert!(
            r["summary"]
                .as_str()
                .unwrap()
                .starts_with("POST /items → 500 Oops"),
            "{r}"
        );
    }

    #[test]
    fn a_closed_port_says_what_to_check() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let spec = ChannelSpec::parse(&format!("net:{port}")).unwrap();
        let session = SessionTarget::for_tests("/", vec![]);
        let e = Net
            .open(&spec, &session)
            .unwrap()
            .input
            .unwrap()
            .send(&json!({"path": "/"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is the program listening"), "{e}");
        let e = Net
            .open(&spec, &session)
            .unwrap()
            .input
            .unwrap()
            .send(&json!({"path": "/", "data": "x"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not both"), "{e}");
    }
}
