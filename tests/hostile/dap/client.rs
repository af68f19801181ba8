//! A raw DAP client for hostile cases: it writes whatever bytes a case
//! needs (no framing of its own imposed) and reads the adapter's messages
//! on a thread, so every wait has a bound.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long an answer may take (a launch under Frida on a loaded machine).
pub const REPLY: Duration = Duration::from_secs(60);

/// One DAP connection: bytes out, messages in.
pub struct Conn {
    out: Option<Box<dyn Write + Send>>,
    rx: mpsc::Receiver<Value>,
    /// Messages read and not yet looked at.
    seen: Vec<Value>,
    seq: i64,
    closed: bool,
}

/// One framed message from `r`; None at the end of the stream (or on
/// anything that is not a frame: the adapter writes only frames).
fn read_frame(r: &mut impl BufRead) -> Option<Value> {
    let mut len = None;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end();
        if l.is_empty() {
            if len.is_some() {
                break;
            }
            continue;
        }
        if let Some(v) = l.strip_prefix("Content-Length:") {
            len = v.trim().parse().ok();
        }
    }
    let mut body = vec![0; len?];
    r.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// `msg` framed as DAP frames it.
pub fn frame(msg: &Value) -> Vec<u8> {
    let body = msg.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

impl Conn {
    /// A connection writing to `out` and reading from `input`.
    pub fn new(out: impl Write + Send + 'static, input: impl Read + Send + 'static) -> Conn {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(input);
            while let Some(m) = read_frame(&mut r) {
                if tx.send(m).is_err() {
                    break;
                }
            }
        });
        Conn {
            out: Some(Box::new(out)),
            rx,
            seen: Vec::new(),
            seq: 0,
            closed: false,
        }
    }

    /// Writes `bytes` as they are; false when the adapter no longer reads.
    pub fn raw(&mut self, bytes: &[u8]) -> bool {
        let Some(out) = self.out.as_mut() else {
            return false;
        };
        out.write_all(bytes).and_then(|()| out.flush()).is_ok()
    }

    /// Ends the stream to the adapter (stdin's EOF).
    pub fn close_input(&mut self) {
        self.out = None;
    }

    /// Sends request `command`; its seq.
    pub fn send(&mut self, command: &str, arguments: Value) -> i64 {
        self.seq += 1;
        let seq = self.seq;
        let msg =
            json!({"seq": seq, "type": "request", "command": command, "arguments": arguments});
        assert!(self.raw(&frame(&msg)), "the adapter stopped reading");
        seq
    }

    /// Waits (at most `within`) for the first message that `pred` accepts.
    pub fn wait_for(&mut self, within: Duration, pred: impl Fn(&Value) -> bool) -> Option<Value> {
        if let Some(i) = self.seen.iter().position(&pred) {
            return Some(self.seen.remove(i));
        }
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(m) if pred(&m) => return Some(m),
                Ok(m) => self.seen.push(m),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    self.closed = true;
                    return None;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => return None,
            }
        }
    }

    /// The response to request `seq`; panics past [`REPLY`].
    pub fn response(&mut self, seq: i64) -> Value {
        self.wait_for(REPLY, |m| {
            m["type"] == "response" && m["request_seq"] == seq
        })
        .unwrap_or_else(|| panic!("no response to request {seq}; got {:?}", self.seen))
    }

    /// Sends `command` and waits for its response.
    pub fn call(&mut self, command: &str, arguments: Value) -> Value {
        let seq = self.send(command, arguments);
        self.response(seq)
    }

    /// Event `name`; panics past [`REPLY`].
    pub fn event(&mut self, name: &str) -> Value {
        self.wait_for(REPLY, |m| m["type"] == "event" && m["event"] == name)
            .unwrap_or_else(|| panic!("no {name} event; got {:?}", self.seen))
    }

    /// Whether the adapter closed its side within `within`; everything it
    /// said is kept for [`Conn::said`].
    pub fn closes_within(&mut self, within: Duration) -> bool {
        if self.closed {
            return true;
        }
        self.wait_for(within, |_| false);
        self.closed
    }

    /// The text of every `output` event read so far.
    pub fn said(&self) -> String {
        self.seen
            .iter()
            .filter(|m| m["event"] == "output")
            .map(|m| m["body"]["output"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// initialize, then launch `program` with `args`, then
    /// configurationDone: the pid of the program it started.
    pub fn launch(&mut self, program: &std::path::Path, args: &[&str]) -> u32 {
        assert_eq!(
            self.call("initialize", json!({"adapterID": "strobe"}))["success"],
            true
        );
        let r = self.call("launch", json!({"program": program, "args": args}));
        assert_eq!(r["success"], true, "{r}");
        let pid = self.event("process")["body"]["systemProcessId"]
            .as_u64()
            .expect("the process event names its pid") as u32;
        assert_eq!(self.call("configurationDone", json!({}))["success"], true);
        pid
    }
}
