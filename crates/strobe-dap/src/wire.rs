//! DAP's framing: each message is `Content-Length: N\r\n\r\n` and N bytes
//! of JSON.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest message accepted (a client sending more is broken or hostile).
const MAX_MESSAGE: usize = 16 << 20;

/// Why a message could not be read.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The client closed the stream.
    #[error("the client closed the connection")]
    Closed,
    /// A header or body that is not DAP.
    #[error("not a DAP message: {0}")]
    Malformed(String),
    /// Reading failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads one message.
pub async fn read_message<R: AsyncBufRead + Unpin>(r: &mut R) -> Result<Value, WireError> {
    let mut length = None;
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).await? == 0 {
            return Err(WireError::Closed);
        }
        let header = line.trim_end();
        if header.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some(v) = header.strip_prefix("Content-Length:") {
            length = Some(
                v.trim()
                    .parse::<usize>()
                    .map_err(|_| WireError::Malformed(header.to_string()))?,
            );
        }
    }
    let n = length.expect("set before the blank line");
    if n > MAX_MESSAGE {
        return Err(WireError::Malformed(format!(
            "{n} bytes is more than {MAX_MESSAGE}"
        )));
    }
    let mut body = vec![0u8; n];
    r.read_exact(&mut body).await?;
    serde_json::from_slice(&body).map_err(|e| WireError::Malformed(e.to_string()))
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
        let bad = b"Content-Length: x\r\n\r\n{}";
        let mut r = tokio::io::BufReader::new(&bad[..]);
        assert!(matches!(
            read_message(&mut r).await,
            Err(WireError::Malformed(_))
        ));
    }
}
