//! DAP's framing: each message is `Content-Length: N\r\n\r\n` and N bytes
//! of JSON.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest message accepted (a client sending more is broken or hostile).
pub const MAX_MESSAGE: usize = 16 << 20;
/// Longest header line accepted. DAP's headers are `Content-Length` and
/// perhaps `Content-Type`; a longer line is not DAP, and reading it whole
/// would let a client fill the adapter's memory.
pub const MAX_HEADER_LINE: usize = 8 << 10;

/// Why a message could not be read.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The client closed the stream.
    #[error("the client closed the connection")]
    Closed,
    /// A header or body that is not DAP. `request` is what could be read of
    /// the request it carried (a JSON object sent without its header), so
    /// that it can still be answered.
    #[error("not a DAP message: {why}")]
    Malformed {
        /// What is wrong, in words.
        why: String,
        /// The request, when one could be identified.
        request: Option<Value>,
    },
    /// Reading failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl WireError {
    fn malformed(why: impl Into<String>) -> WireError {
        WireError::Malformed {
            why: why.into(),
            request: None,
        }
    }
}

/// Reads one message of at most [`MAX_MESSAGE`] bytes.
pub async fn read_message<R: AsyncBufRead + Unpin>(r: &mut R) -> Result<Value, WireError> {
    read_message_within(r, MAX_MESSAGE).await
}

/// Reads one message whose body is at most `max_body` bytes. Header names
/// are matched without regard to case (as LSP's framing, which DAP's is,
/// is read in practice).
pub async fn read_message_within<R: AsyncBufRead + Unpin>(
    r: &mut R,
    max_body: usize,
) -> Result<Value, WireError> {
    let mut length = None;
    let mut in_headers = false;
    let mut line = Vec::new();
    loop {
        read_header_line(r, &mut line, in_headers).await?;
        let text = String::from_utf8_lossy(&line);
        let header = text.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            match (length, in_headers) {
                (Some(_), _) => break,
                (None, true) => {
                    return Err(WireError::malformed(format!(
                        "its headers ended without Content-Length. {FRAMING}"
                    )));
                }
                // Blank lines between messages are tolerated.
                (None, false) => continue,
            }
        }
        let header_name = header
            .split_once(':')
            .map(|(name, value)| (name.trim(), value))
            .filter(|(name, _)| is_token(name));
        let Some((name, value)) = header_name else {
            return Err(headerless(header.as_bytes()));
        };
        in_headers = true;
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.trim().parse::<usize>().map_err(|_| {
                WireError::malformed(format!(
                    "the Content-Length header says {:?}, not a number of bytes",
                    excerpt(value.trim())
                ))
            })?);
        }
        // Other headers (Content-Type) say nothing the adapter needs.
    }
    let n = length.expect("set before the blank line");
    if n > max_body {
        return Err(WireError::malformed(format!(
            "a {n}-byte message is more than the {max_body} bytes accepted here"
        )));
    }
    let mut body = vec![0u8; n];
    r.read_exact(&mut body).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            WireError::malformed(format!("the connection closed inside a {n}-byte message"))
        } else {
            WireError::Io(e)
        }
    })?;
    serde_json::from_slice(&body)
        .map_err(|e| WireError::malformed(format!("its body is not JSON: {e}")))
}

/// How DAP frames a message, for the errors.
const FRAMING: &str = "DAP frames each message as `Content-Length: N` and a blank line (\\r\\n\\r\\n), then N bytes of JSON";

/// Reads one header line into `line` (its end included), refusing one
/// longer than [`MAX_HEADER_LINE`]. A JSON object sent with no header and
/// no newline is returned as the error [`headerless`] makes of it once it
/// is complete, so that it is answered rather than waited on.
async fn read_header_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    line: &mut Vec<u8>,
    in_headers: bool,
) -> Result<(), WireError> {
    line.clear();
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Err(if line.is_empty() && !in_headers {
                WireError::Closed
            } else if line.is_empty() {
                WireError::malformed("the connection closed inside a message's headers")
            } else {
                headerless(line)
            });
        }
        let (take, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if line.len() + take > MAX_HEADER_LINE {
            return Err(WireError::malformed(format!(
                "a header line longer than {MAX_HEADER_LINE} bytes. {FRAMING}"
            )));
        }
        line.extend_from_slice(&buf[..take]);
        r.consume(take);
        if done {
            return Ok(());
        }
        if line.first() == Some(&b'{')
            && serde_json::from_slice::<Value>(line).is_ok_and(|v| v.is_object())
        {
            return Err(headerless(line));
        }
    }
}

/// The error for a line that is no header: when it is a JSON object (a
/// message sent without its header), the request it carries.
fn headerless(line: &[u8]) -> WireError {
    match serde_json::from_slice::<Value>(line)
        .ok()
        .filter(Value::is_object)
    {
        Some(v) => WireError::Malformed {
            why: format!("a JSON message came without its Content-Length header. {FRAMING}"),
            request: Some(v),
        },
        None => WireError::malformed(format!(
            "{:?} is not a header line. {FRAMING}",
            excerpt(&String::from_utf8_lossy(line))
        )),
    }
}

/// Whether `name` can be a header's name (an HTTP token).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.!#$%&'*+^`|~".contains(&b))
}

/// At most 80 characters of `s`, for an error that must not echo a flood.
fn excerpt(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Writes one message.
pub async fn write_message<W: AsyncWrite + Unpin>(w: &mut W, msg: &Value) -> std::io::Result<()> {
    let body = msg.to_string();
    w.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes())
        .await?;
    w.write_all(body.as_bytes()).await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    async fn read(bytes: &[u8]) -> Result<Value, WireError> {
        read_message(&mut tokio::io::BufReader::new(bytes)).await
    }

    fn why(r: Result<Value, WireError>) -> (String, Option<Value>) {
        match r {
            Err(WireError::Malformed { why, request }) => (why, request),
            other => panic!("not refused as malformed: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_message_round_trips_and_garbage_is_refused() {
        let mut buf = Vec::new();
        write_message(
            &mut buf,
            &json!({"seq": 1, "type": "request", "command": "threads"}),
        )
        .await
        .unwrap();
        let mut r = tokio::io::BufReader::new(&buf[..]);
        let v = read_message(&mut r).await.unwrap();
        assert_eq!(v["command"], "threads");
        assert!(matches!(read_message(&mut r).await, Err(WireError::Closed)));
        let (w, _) = why(read(b"Content-Length: x\r\n\r\n{}").await);
        assert!(w.contains("not a number"), "{w}");
    }

    #[tokio::test]
    async fn header_names_are_read_whatever_their_case() {
        let v = read(b"content-length: 2\r\ncontent-type: application/json\r\n\r\n{}")
            .await
            .unwrap();
        assert_eq!(v, json!({}));
        let v = read(b"CONTENT-LENGTH:2\r\n\r\n[]").await.unwrap();
        assert_eq!(v, json!([]));
    }

    #[tokio::test]
    async fn a_message_without_content_length_is_refused_naming_its_request() {
        // Headers, then the blank line, but no length.
        let (w, req) = why(read(b"Content-Type: application/json\r\n\r\n{}").await);
        assert!(w.contains("without Content-Length"), "{w}");
        assert!(req.is_none());
        // A bare JSON request, with or without a newline after it.
        for raw in [
            &b"{\"seq\": 4, \"type\": \"request\", \"command\": \"threads\"}\r\n"[..],
            &b"{\"seq\": 4, \"type\": \"request\", \"command\": \"threads\"}"[..],
        ] {
            let (w, req) = why(read(raw).await);
            assert!(w.contains("without its Content-Length"), "{w}");
            assert_eq!(req.unwrap()["seq"], 4);
        }
        let (w, _) = why(read(b"hello\r\n").await);
        assert!(w.contains("not a header line"), "{w}");
    }

    #[tokio::test]
    async fn a_header_line_past_the_cap_is_refused_before_it_is_all_read() {
        let flood = vec![b'A'; MAX_HEADER_LINE * 4];
        let (w, _) = why(read(&flood).await);
        assert!(w.contains("longer than"), "{w}");
        let (w, _) = why(read_message_within(
            &mut tokio::io::BufReader::new(&b"Content-Length: 100\r\n\r\n"[..]),
            10,
        )
        .await);
        assert!(w.contains("more than the 10 bytes"), "{w}");
    }
}
