//! The daemon's MCP transport: rmcp's server over a connection, with every
//! line that is not a valid JSON-RPC message answered with the error it
//! deserves instead of dropped.
//!
//! rmcp's own stdio transport skips what it cannot parse (bad JSON, a lone
//! surrogate, too deep, `1e400`, over-long lines: the client then waits for
//! its own timeout) and answers other shape errors without the request's id.
//! Here a valid message costs what it did under rmcp — one parse straight
//! into rmcp's type — and only a line that fails is examined further.

use crate::framing::{
    self, Frame, INVALID_PARAMS, INVALID_REQUEST, LineReader, PARSE_ERROR, error_line, read_id,
    valid_id,
};
use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::Value;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{Mutex, mpsc};

/// How one line is handled.
#[derive(Debug)]
pub enum Checked {
    /// A message for rmcp.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing to do: a blank line, or a notification whose parameters do
    /// not fit (JSON-RPC never answers a notification).
    Skip,
    /// Answer with this error line.
    Reject(String),
}

/// The longest piece of a bad value an error quotes back.
const ECHO: usize = 40;

/// Classifies one line (without its newline).
pub fn check(line: &[u8]) -> Checked {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Checked::Skip;
    }
    // The fast path: what rmcp itself would have done with the line.
    let err = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(m) => return Checked::Message(Box::new(m)),
        Err(e) => e,
    };
    if let Err(bad) = std::str::from_utf8(line) {
        let at = bad.valid_up_to();
        return Checked::Reject(error_line(
            read_id(line),
            PARSE_ERROR,
            &format!(
                "Parse error: the message is not UTF-8 (byte 0x{:02x} at offset {at}); send JSON text encoded as UTF-8",
                line[at]
            ),
        ));
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            let hint = match e.to_string() {
                m if m.contains("recursion limit") => {
                    " (nested deeper than 128 levels, which is refused)"
                }
                m if m.contains("surrogate") || m.contains("hex escape") => {
                    " (a \\u escape takes 4 hex digits, and \\uD800-\\uDFFF only come as surrogate pairs)"
                }
                m if m.contains("number out of range") => " (a number must fit a 64-bit float)",
                _ => "",
            };
            return Checked::Reject(error_line(
                read_id(line),
                PARSE_ERROR,
                &format!("Parse error: {e}{hint}; send one JSON-RPC message per line"),
            ));
        }
    };
    envelope_error(&value, &err)
}

/// Why a JSON value that rmcp could not take is not a message, or what is
/// wrong inside a well-formed one.
fn envelope_error(value: &Value, err: &serde_json::Error) -> Checked {
    let invalid = |id: Option<Value>, why: String| {
        Checked::Reject(error_line(
            id,
            INVALID_REQUEST,
            &format!("Invalid Request: {why}"),
        ))
    };
    let obj = match value {
        Value::Object(o) => o,
        Value::Array(_) => {
            return invalid(
                None,
                "batches (JSON arrays) are not supported: MCP dropped JSON-RPC batching in \
                 2025-06-18; send each message on its own line"
                    .into(),
            );
        }
        other => {
            return invalid(
                None,
                format!("a JSON-RPC message is an object, not {}", kind(other)),
            );
        }
    };
    let raw_id = obj.get("id");
    let id = raw_id.and_then(valid_id);
    if let Some(bad) = raw_id.filter(|_| id.is_none()) {
        return invalid(
            None,
            format!("\"id\" must be a string or an integer, not {}", kind(bad)),
        );
    }
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        Some(other) => {
            return invalid(
                id,
                format!("\"jsonrpc\" must be \"2.0\", not {}", echo(other)),
            );
        }
        None => return invalid(id, "\"jsonrpc\": \"2.0\" is missing".into()),
    }
    let reason = cut(&err.to_string(), 200);
    match obj.get("method") {
        Some(Value::String(method)) => {
            if id.is_none() {
                tracing::debug!("ignoring notification {method:?} that does not fit: {reason}");
                return Checked::Skip;
            }
            Checked::Reject(error_line(
                id,
                INVALID_PARAMS,
                &format!("Invalid params for '{}': {reason}", cut(method, ECHO)),
            ))
        }
        Some(other) => invalid(
            id,
            format!("\"method\" must be a string, not {}", kind(other)),
        ),
        None if obj.contains_key("result") || obj.contains_key("error") => {
            invalid(id, format!("a response that does not fit: {reason}"))
        }
        None => invalid(
            id,
            "a message needs \"method\" (a request or notification), or \"result\" or \
             \"error\" (a response)"
                .into(),
        ),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a fractional or out-of-range number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value quoted back, capped so a huge bad value is not echoed whole.
fn echo(v: &Value) -> String {
    cut(&v.to_string(), ECHO)
}

fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// rmcp's server transport over one connection, with [`check`] in front.
pub struct CheckedTransport<R, W> {
    reader: LineReader<R>,
    /// A frame read before rmcp took over (the connection's first line).
    pending: Option<Frame>,
    writer: Arc<Mutex<Option<W>>>,
    /// Error lines, written in order by a task of their own, so a `receive`
    /// that rmcp drops mid-way never loses or cuts one.
    errors: mpsc::UnboundedSender<String>,
}

impl<R, W> CheckedTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Serves `reader`/`writer`, starting with `first` when a line was
    /// already read off the connection.
    pub fn new(reader: LineReader<R>, first: Option<Frame>, writer: W) -> Self {
        let writer = Arc::new(Mutex::new(Some(writer)));
        let (errors, mut rx) = mpsc::unbounded_channel::<String>();
        let out = writer.clone();
        tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                if write_line(&out, line.into_bytes()).await.is_err() {
                    break;
                }
            }
        });
        Self {
            reader,
            pending: first,
            writer,
            errors,
        }
    }
}

async fn write_line<W: AsyncWrite + Unpin>(
    out: &Mutex<Option<W>>,
    mut line: Vec<u8>,
) -> std::io::Result<()> {
    line.push(b'\n');
    let mut guard = out.lock().await;
    let w = guard.as_mut().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::NotConnected, "the connection is closed")
    })?;
    w.write_all(&line).await?;
    w.flush().await
}

impl<R, W> rmcp::transport::Transport<RoleServer> for CheckedTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.writer.clone();
        let line = serde_json::to_vec(&item).map_err(std::io::Error::other);
        async move { write_line(&out, line?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let frame = match self.pending.take() {
                Some(f) => f,
                None => match self.reader.next().await {
                    Ok(f) => f,
                    Err(e) => {
                        tracing::debug!("connection read failed: {e}");
                        return None;
                    }
                },
            };
            let answer = match frame {
                Frame::End => return None,
                Frame::TooLong(head) => framing::too_long_line(&head),
                Frame::Line(line) => match check(&line) {
                    Checked::Message(m) => return Some(*m),
                    Checked::Skip => continue,
                    Checked::Reject(answer) => answer,
                },
            };
            tracing::debug!("answered a malformed message: {answer}");
            if self.errors.send(answer).is_err() {
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(mut w) = self.writer.lock().await.take() {
            let _ = w.shutdown().await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reject(line: &[u8]) -> Value {
        match check(line) {
            Checked::Reject(s) => serde_json::from_str(&s).unwrap(),
            other => panic!(
                "{} should be refused, got {other:?}",
                String::from_utf8_lossy(line)
            ),
        }
    }

    fn code_and_id(line: &[u8]) -> (i64, Value) {
        let v = reject(line);
        (v["error"]["code"].as_i64().unwrap(), v["id"].clone())
    }

    #[test]
    fn valid_messages_pass() {
        for line in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#[..],
            br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{}}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","id":2,"method":"no/such/method"}"#,
            br#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}",
        ] {
            assert!(
                matches!(check(line), Checked::Message(_)),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        assert!(matches!(check(b"  \t"), Checked::Skip));
    }

    #[test]
    fn malformed_lines_get_the_error_they_deserve() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}{}}}"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let cases: Vec<(Vec<u8>, i64, Value)> = vec![
            (b"not json".to_vec(), PARSE_ERROR, Value::Null),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/list""#.to_vec(),
                PARSE_ERROR,
                1.into(),
            ),
            (
                br#"{"jsonrpc":"2.0","id":2,"method":"x","params":{"s":"\ud800"}}"#.to_vec(),
                PARSE_ERROR,
                2.into(),
            ),
            (
                br#"{"jsonrpc":"2.0","id":2,"method":"x","params":{"s":"\udc00\ud800"}}"#.to_vec(),
                PARSE_ERROR,
                2.into(),
            ),
            (deep.into_bytes(), PARSE_ERROR, 3.into()),
            (
                br#"{"jsonrpc":"2.0","id":4,"method":"x","params":{"n":1e400}}"#.to_vec(),
                PARSE_ERROR,
                4.into(),
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"\xff\"}".to_vec(),
                PARSE_ERROR,
                5.into(),
            ),
            (
                br#"[{"jsonrpc":"2.0","id":6,"method":"tools/list"}]"#.to_vec(),
                INVALID_REQUEST,
                Value::Null,
            ),
            (b"[]".to_vec(), INVALID_REQUEST, Value::Null),
            (b"42".to_vec(), INVALID_REQUEST, Value::Null),
            (
                br#"{"jsonrpc":"1.0","id":7,"method":"tools/list"}"#.to_vec(),
                INVALID_REQUEST,
                7.into(),
            ),
            (
                br#"{"id":"eight","method":"tools/list"}"#.to_vec(),
                INVALID_REQUEST,
                "eight".into(),
            ),
            (
                br#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#.to_vec(),
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":[9],"method":"tools/list"}"#.to_vec(),
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":true,"method":"tools/list"}"#.to_vec(),
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#.to_vec(),
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#.to_vec(),
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"2.0","id":10,"method":7}"#.to_vec(),
                INVALID_REQUEST,
                10.into(),
            ),
            (
                br#"{"jsonrpc":"2.0","id":11}"#.to_vec(),
                INVALID_REQUEST,
                11.into(),
            ),
            (
                br#"{"jsonrpc":"2.0","id":12,"method":"initialize","params":7}"#.to_vec(),
                INVALID_PARAMS,
                12.into(),
            ),
        ];
        for (line, code, id) in cases {
            assert_eq!(
                code_and_id(&line),
                (code, id),
                "{}",
                String::from_utf8_lossy(&line)
            );
        }
        let batch = reject(b"[{}]");
        assert!(
            batch["error"]["message"]
                .as_str()
                .unwrap()
                .contains("batches")
        );
        // A huge bad value is not echoed back whole.
        let big = format!(
            r#"{{"jsonrpc":"{}","id":1,"method":"x"}}"#,
            "v".repeat(1 << 20)
        );
        assert!(reject(big.as_bytes()).to_string().len() < 300);
    }

    #[test]
    fn a_notification_that_does_not_fit_is_not_answered() {
        let line = br#"{"jsonrpc":"2.0","method":"notifications/progress","params":7}"#;
        assert!(matches!(check(line), Checked::Skip), "{:?}", check(line));
    }
}
