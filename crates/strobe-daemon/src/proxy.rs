//! `strobe mcp`: the stdio ↔ socket proxy.
//!
//! It forwards lines verbatim and parses them only to remember what a
//! reconnect needs: the client's `initialize` request and `initialized`
//! notification, and which request ids are still waiting for an answer.
//! Lines are bytes, not text: one that is not UTF-8 goes to the daemon,
//! which answers it with a parse error. A line over 16 MiB is dropped while
//! it is read and answered here.

use crate::framing::{self, Frame, LineReader};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use strobe_core::StrobeHome;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// How long the proxy keeps trying to reach a (re)started daemon.
const CONNECT_DEADLINE: Duration = Duration::from_secs(30);

/// Sends one control request (`{"strobeControl": …}`) to the daemon,
/// starting it if need be, and returns its one-line JSON reply.
pub async fn control(
    home: &StrobeHome,
    strobe_exe: &Path,
    request: Value,
) -> std::io::Result<Value> {
    let stream = connect_or_start(home, strobe_exe).await?;
    control_on(stream, request).await
}

/// Sends one control request to the daemon already serving `home`; fails
/// (NotFound / ConnectionRefused) when none does, starting nothing. For a
/// host that would rather be the daemon itself (the desktop app).
pub async fn control_running(home: &StrobeHome, request: Value) -> std::io::Result<Value> {
    let stream = UnixStream::connect(home.socket()).await?;
    control_on(stream, request).await
}

async fn control_on(stream: UnixStream, request: Value) -> std::io::Result<Value> {
    let (read, mut write) = stream.into_split();
    write.write_all(format!("{request}\n").as_bytes()).await?;
    let mut line = String::new();
    let mut reader = BufReader::new(read);
    match tokio::time::timeout(Duration::from_secs(30), reader.read_line(&mut line)).await {
        Ok(r) => {
            r?;
        }
        Err(_) => {
            return Err(std::io::Error::other(
                "the daemon did not answer within 30 s; see its log under $STROBE_HOME/logs",
            ));
        }
    }
    serde_json::from_str(&line).map_err(|e| {
        std::io::Error::other(format!(
            "the daemon's reply {line:?} is not JSON ({e}); is an older daemon running? stop it and retry"
        ))
    })
}

/// Connects to the daemon, starting it (detached) when nothing answers.
/// A starter that exits at once (it lost a start-up race, or the previous
/// daemon still held the lock while dying) is simply started again.
pub async fn connect_or_start(home: &StrobeHome, strobe_exe: &Path) -> std::io::Result<UnixStream> {
    if let Ok(s) = UnixStream::connect(home.socket()).await {
        return Ok(s);
    }
    home.ensure()?;
    let deadline = Instant::now() + CONNECT_DEADLINE;
    let mut delay = Duration::from_millis(5);
    let mut starter: Option<std::process::Child> = None;
    loop {
        let needs_start = match starter.as_mut() {
            None => true,
            Some(child) => matches!(child.try_wait(), Ok(Some(_))),
        };
        if needs_start {
            starter = Some(spawn_daemon(home, strobe_exe)?);
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(100));
        match UnixStream::connect(home.socket()).await {
            Ok(s) => {
                if let Some(mut child) = starter {
                    // Reap it whenever it ends; it may be the daemon itself.
                    std::thread::spawn(move || {
                        let _ = child.wait();
                    });
                }
                return Ok(s);
            }
            Err(e) if Instant::now() >= deadline => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!(
                        "the Strobe daemon did not come up within {}s ({e}); see {}",
                        CONNECT_DEADLINE.as_secs(),
                        home.logs_dir().join("daemon.log").display()
                    ),
                ));
            }
            Err(_) => {}
        }
    }
}

fn spawn_daemon(home: &StrobeHome, strobe_exe: &Path) -> std::io::Result<std::process::Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.logs_dir().join("daemon.log"))?;
    let mut cmd = std::process::Command::new(strobe_exe);
    cmd.arg("daemon")
        .env("STROBE_HOME", home.root())
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid and close_range are async-signal-safe syscalls. setsid
    // detaches the daemon from our session so it outlives this proxy and
    // its terminal. close_range marks every descriptor ≥ 3 close-on-exec,
    // so the daemon does not inherit what its starter had open without it
    // (a `flock` wrapper's lock, a build's pipes) and hold it for its whole
    // life; marking rather than closing keeps std's exec-error pipe working.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            Ok(())
        });
    }
    cmd.spawn()
}

#[derive(Default)]
struct Session {
    initialize: Option<String>,
    initialized: Option<String>,
    /// Request id (as JSON text) → method, for calls awaiting a response.
    in_flight: HashMap<String, String>,
}

impl Session {
    fn note_client_line(&mut self, line: &[u8]) {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let text = || String::from_utf8_lossy(line).into_owned();
        let method = v.get("method").and_then(Value::as_str);
        match (method, v.get("id")) {
            (Some("initialize"), Some(_)) => self.initialize = Some(text()),
            (Some("notifications/initialized"), None) => self.initialized = Some(text()),
            _ => {}
        }
        if let (Some(m), Some(id)) = (method, v.get("id")) {
            self.in_flight.insert(id.to_string(), m.to_string());
        }
    }

    fn note_server_line(&mut self, line: &str) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return;
        };
        if v.get("method").is_none()
            && let Some(id) = v.get("id")
        {
            self.in_flight.remove(&id.to_string());
        }
    }
}

async fn write_line(
    out: &mut (impl AsyncWriteExt + Unpin),
    line: impl AsRef<[u8]>,
) -> std::io::Result<()> {
    out.write_all(line.as_ref()).await?;
    out.write_all(b"\n").await?;
    out.flush().await
}

/// Replays the handshake on a fresh connection; swallows the daemon's reply.
async fn reinitialize(
    sess: &Session,
    reader: &mut tokio::io::Lines<BufReader<OwnedReadHalf>>,
    writer: &mut OwnedWriteHalf,
) -> std::io::Result<()> {
    let Some(init) = &sess.initialize else {
        return Ok(());
    };
    let mut req: Value = serde_json::from_str(init).map_err(std::io::Error::other)?;
    req["id"] = json!("strobe-proxy-reinitialize");
    write_line(writer, &req.to_string()).await?;
    let deadline = tokio::time::Instant::now() + CONNECT_DEADLINE;
    loop {
        let line = tokio::time::timeout_at(deadline, reader.next_line())
            .await
            .map_err(|_| std::io::Error::other("the restarted daemon did not answer initialize"))??
            .ok_or_else(|| std::io::Error::other("the restarted daemon closed the connection"))?;
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        if v.get("id") == Some(&json!("strobe-proxy-reinitialize")) {
            break;
        }
    }
    if let Some(n) = &sess.initialized {
        write_line(writer, n).await?;
    }
    Ok(())
}

/// Connects to a (re)started daemon and replays the handshake, retrying
/// while the old daemon's socket is still being torn down.
async fn reconnect(
    home: &StrobeHome,
    strobe_exe: &Path,
    sess: &Session,
) -> std::io::Result<(tokio::io::Lines<BufReader<OwnedReadHalf>>, OwnedWriteHalf)> {
    let deadline = Instant::now() + CONNECT_DEADLINE;
    loop {
        let attempt = async {
            let (r, mut w) = connect_or_start(home, strobe_exe).await?.into_split();
            let mut lines = BufReader::new(r).lines();
            reinitialize(sess, &mut lines, &mut w).await?;
            Ok::<_, std::io::Error>((lines, w))
        };
        match attempt.await {
            Ok(pair) => return Ok(pair),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Runs the proxy until stdin closes.
pub async fn run(home: StrobeHome, strobe_exe: &Path) -> std::io::Result<()> {
    let mut stdin = LineReader::new(tokio::io::stdin());
    let mut stdout = tokio::io::stdout();
    let mut sess = Session::default();
    let (r, mut writer) = connect_or_start(&home, strobe_exe).await?.into_split();
    let mut reader = BufReader::new(r).lines();
    loop {
        tokio::select! {
            frame = stdin.next() => {
                let line = match frame? {
                    Frame::Line(line) => line,
                    Frame::TooLong(head) => {
                        write_line(&mut stdout, framing::too_long_line(&head)).await?;
                        continue;
                    }
                    Frame::End => return Ok(()),
                };
                if line.iter().all(u8::is_ascii_whitespace) { continue; }
                sess.note_client_line(&line);
                if write_line(&mut writer, &line).await.is_err() {
                    // The daemon is gone; the read side notices and recovers,
                    // and this request is answered with an error there.
                }
            }
            line = reader.next_line() => {
                match line {
                    Ok(Some(line)) => {
                        sess.note_server_line(&line);
                        write_line(&mut stdout, &line).await?;
                    }
                    _ => {
                        // The daemon died: fail what was in flight, restart, replay.
                        for (id, method) in sess.in_flight.drain() {
                            let id: Value = serde_json::from_str(&id).unwrap_or(Value::Null);
                            let err = json!({
                                "jsonrpc": "2.0",
                                "id": id,
                                "error": {
                                    "code": -32000,
                                    "message": format!(
                                        "The Strobe daemon exited while '{method}' was running, so this call has no result. \
                                         The proxy restarted it: retry the call. Sessions that were live are stopped \
                                         (their data is kept); check debug_session {{action: \"list\"}}."
                                    ),
                                }
                            });
                            write_line(&mut stdout, &err.to_string()).await?;
                        }
                        (reader, writer) = reconnect(&home, strobe_exe, &sess).await?;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_handshake_and_in_flight_calls() {
        let mut s = Session::default();
        s.note_client_line(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#);
        s.note_server_line(r#"{"jsonrpc":"2.0","id":0,"result":{}}"#);
        s.note_client_line(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s.note_client_line(br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{}}"#);
        s.note_client_line(br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
        s.note_server_line(r#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
        assert!(s.initialize.is_some() && s.initialized.is_some());
        assert_eq!(s.in_flight.len(), 1);
        assert_eq!(
            s.in_flight.get("\"a\"").map(String::as_str),
            Some("tools/call")
        );
        s.note_client_line(b"not json");
        s.note_client_line(b"\xff");
    }
}
