//! Newline-delimited JSON-RPC framing shared by the proxy and the daemon:
//! a bounded line reader that takes any bytes (non-UTF-8 included) and never
//! holds more than [`MAX_LINE`] of one line, the id of a message that cannot
//! be parsed when it can still be read, and JSON-RPC error lines.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// The longest message accepted, newline excluded: 16 MiB, as rmcp's own
/// stdio transport and its HTTP client cap a message.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// How much of an over-long line is kept to look for its id.
const HEAD: usize = 64 * 1024;

/// JSON-RPC 2.0: the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0: JSON, but not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC 2.0: the method's parameters do not fit it.
pub const INVALID_PARAMS: i64 = -32602;

/// One unit read off the stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A whole line, without its `\n` (or `\r\n`). May be any bytes.
    Line(Vec<u8>),
    /// A line longer than [`MAX_LINE`]: dropped while read; this is its start.
    TooLong(Vec<u8>),
    /// The stream ended.
    End,
}

/// Reads [`Frame`]s with bounded memory. Cancel-safe: the state of a line
/// half read lives here, so a `select!` may drop `next` at any await.
pub struct LineReader<R> {
    inner: BufReader<R>,
    line: Vec<u8>,
    /// The current line passed [`MAX_LINE`]: the rest is dropped up to its end.
    oversized: bool,
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader enforcing [`MAX_LINE`].
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_LINE)
    }

    /// A reader with another limit (tests).
    pub fn with_limit(inner: R, max: usize) -> Self {
        Self {
            inner: BufReader::with_capacity(64 * 1024, inner),
            line: Vec::new(),
            oversized: false,
            max,
        }
    }

    /// The next line, over-long line or the end. A last line without a
    /// newline still counts as a line.
    pub async fn next(&mut self) -> std::io::Result<Frame> {
        loop {
            let chunk = self.inner.fill_buf().await?;
            if chunk.is_empty() {
                let line = std::mem::take(&mut self.line);
                return Ok(if std::mem::take(&mut self.oversized) {
                    Frame::TooLong(line)
                } else if line.is_empty() {
                    Frame::End
                } else {
                    Frame::Line(without_cr(line))
                });
            }
            let newline = memchr::memchr(b'\n', chunk);
            let data = &chunk[..newline.unwrap_or(chunk.len())];
            if !self.oversized {
                if self.line.len() + data.len() > self.max {
                    // Keep only the start (the id is usually there) and
                    // give the rest of the line's memory back.
                    let keep = HEAD.saturating_sub(self.line.len()).min(data.len());
                    self.line.extend_from_slice(&data[..keep]);
                    self.line.truncate(HEAD);
                    self.line.shrink_to(HEAD);
                    self.oversized = true;
                } else {
                    self.line.extend_from_slice(data);
                }
            }
            let used = newline.map_or(chunk.len(), |i| i + 1);
            self.inner.consume(used);
            if newline.is_some() {
                let line = std::mem::take(&mut self.line);
                return Ok(if std::mem::take(&mut self.oversized) {
                    Frame::TooLong(line)
                } else {
                    Frame::Line(without_cr(line))
                });
            }
        }
    }
}

fn without_cr(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line
}

/// A JSON-RPC error response line (no newline). `id` is the request's when
/// it could be read, else null, as JSON-RPC 2.0 asks.
pub fn error_line(id: Option<Value>, code: i64, message: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": {"code": code, "message": message},
    })
    .to_string()
}

/// The answer to a line over [`MAX_LINE`], given its first bytes.
pub fn too_long_line(head: &[u8]) -> String {
    error_line(
        read_id(head),
        INVALID_REQUEST,
        &format!(
            "Invalid Request: the message is over the {} MiB limit and was dropped unread; \
             send large data as a file path instead",
            MAX_LINE >> 20
        ),
    )
}

/// A valid JSON-RPC id (a string or an integer) as JSON, else None.
pub fn valid_id(v: &Value) -> Option<Value> {
    match v {
        Value::String(_) => Some(v.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(v.clone()),
        _ => None,
    }
}

/// The top-level `"id"` of a message that may not parse as a whole (bad
/// bytes, a bad number, too deep, cut off): scans the outer object's keys,
/// skipping other values without parsing them, and returns the id when it
/// is a well-formed string or integer. Iterative, so depth costs nothing.
pub fn read_id(bytes: &[u8]) -> Option<Value> {
    let mut s = Scan { b: bytes, i: 0 };
    s.ws();
    if s.b[s.i..].starts_with(b"\xEF\xBB\xBF") {
        s.i += 3;
        s.ws();
    }
    s.eat(b'{')?;
    loop {
        s.ws();
        let key = s.string()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        if key == b"\"id\"" {
            let start = s.i;
            match *s.b.get(s.i)? {
                b'"' => {
                    s.string()?;
                }
                b'-' | b'0'..=b'9' => {
                    while s.b.get(s.i).is_some_and(|c| {
                        matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                    }) {
                        s.i += 1;
                    }
                    // A number must end where the value ends, not be cut off.
                    s.b.get(s.i)?;
                }
                _ => return None,
            }
            let v: Value = serde_json::from_slice(&s.b[start..s.i]).ok()?;
            return valid_id(&v);
        }
        s.skip_value()?;
        s.ws();
        match *s.b.get(s.i)? {
            b',' => s.i += 1,
            _ => return None,
        }
    }
}

/// A byte cursor for [`read_id`]; every method returns None past the end.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn ws(&mut self) {
        while self.b.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (*self.b.get(self.i)? == c).then(|| self.i += 1)
    }

    /// A string with its quotes, as raw bytes.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        self.eat(b'"')?;
        loop {
            match *self.b.get(self.i)? {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return Some(&self.b[start..self.i]);
                }
                _ => self.i += 1,
            }
        }
    }

    /// Skips one value of any depth by counting brackets outside strings.
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    self.string()?;
                    if depth == 0 {
                        return Some(());
                    }
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth == 0 => return Some(()),
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        self.i += 1;
                        return Some(());
                    }
                }
                b',' if depth == 0 => return Some(()),
                _ => {}
            }
            self.i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut r = LineReader::with_limit(input, max);
        let mut out = Vec::new();
        loop {
            let f = r.next().await.unwrap();
            let end = f == Frame::End;
            out.push(f);
            if end {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn lines_of_any_bytes_and_bounded_long_ones() {
        let got = frames(b"a\r\n\xff\xfe\n\nlong-line-here\nlast", 8).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"a".to_vec()),
                Frame::Line(b"\xff\xfe".to_vec()),
                Frame::Line(Vec::new()),
                Frame::TooLong(b"long-line-here".to_vec()),
                Frame::Line(b"last".to_vec()),
                Frame::End,
            ]
        );
        // Exactly the limit is fine; one more byte is not.
        assert_eq!(
            frames(b"12345678\n", 8).await[0],
            Frame::Line(b"12345678".to_vec())
        );
        assert!(matches!(
            frames(b"123456789\n", 8).await[0],
            Frame::TooLong(_)
        ));
    }

    #[tokio::test]
    async fn an_over_long_line_keeps_only_its_head() {
        // 20 MiB without a newline, read through a small limit: the frame
        // holds the first HEAD bytes, and the next line is intact.
        let mut input = vec![b'x'; 20 << 20];
        input.extend_from_slice(b"\nnext\n");
        let mut r = LineReader::with_limit(&input[..], 1 << 20);
        match r.next().await.unwrap() {
            Frame::TooLong(head) => assert_eq!(head.len(), HEAD),
            f => panic!("{f:?}"),
        }
        assert!(r.line.capacity() <= 2 * HEAD);
        assert_eq!(r.next().await.unwrap(), Frame::Line(b"next".to_vec()));
    }

    #[test]
    fn ids_are_read_from_broken_messages() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","params":{{"a":{}{}}},"id":"deep","x":1e400"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        for (line, id) in [
            (
                &br#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":1e400}}"#[..],
                json!(7),
            ),
            (br#" { "id" : "a\"b" , "#, json!("a\"b")),
            (b"{\"method\":\"\xff\",\"id\":-3}", json!(-3)),
            (br#"{"a":{"id":1},"b":[1,{"id":2}],"id":3}"#, json!(3)),
            (deep.as_bytes(), json!("deep")),
        ] {
            assert_eq!(read_id(line), Some(id), "{}", String::from_utf8_lossy(line));
        }
        for line in [
            &br#"{"id":1.5}"#[..],
            br#"{"id":true}"#,
            br#"{"id":{"a":1}}"#,
            br#"{"id":[1]}"#,
            br#"{"id":null}"#,
            br#"{"id":12"#,
            br#"{"id":"\ud800"}"#,
            br#"[{"id":1}]"#,
            br#"{"a":1}"#,
            b"\xff",
            b"",
        ] {
            assert_eq!(read_id(line), None, "{}", String::from_utf8_lossy(line));
        }
    }
}
