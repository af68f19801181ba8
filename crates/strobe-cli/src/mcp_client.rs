//! A line-delimited JSON-RPC (MCP) client on the daemon's socket, for the
//! commands that drive the daemon as an agent would (`strobe scenarios`,
//! `strobe dap`).

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

/// An MCP session on the daemon of `home` (started when none runs), named
/// `client`; the error says which step failed.
pub(crate) async fn connect(home: &strobe_core::StrobeHome, client: &str) -> Result<Mcp, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find my own executable to start the daemon: {e}"))?;
    let stream = strobe_daemon::proxy::connect_or_start(home, &exe)
        .await
        .map_err(|e| format!("cannot reach the daemon: {e}"))?;
    Mcp::open(stream, client)
        .await
        .map_err(|e| format!("the daemon did not answer MCP's initialize: {e}"))
}

/// A line-delimited JSON-RPC (MCP) client on the daemon's socket.
pub(crate) struct Mcp {
    reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    writer: tokio::net::unix::OwnedWriteHalf,
    next: u64,
}

impl Mcp {
    /// Opens an MCP session on `stream`, naming itself `client`.
    pub(crate) async fn open(stream: UnixStream, client: &str) -> std::io::Result<Mcp> {
        let (r, w) = stream.into_split();
        let mut m = Mcp {
            reader: BufReader::new(r),
            writer: w,
            next: 1,
        };
        m.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": client, "version": env!("CARGO_PKG_VERSION")}}),
        )
        .await?;
        m.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(m)
    }

    async fn send(&mut self, msg: &Value) -> std::io::Result<()> {
        let mut line = msg.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await
    }

    async fn request(&mut self, method: &str, params: Value) -> std::io::Result<Value> {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.reader.read_line(&mut line).await? == 0 {
                return Err(std::io::Error::other("the daemon closed the connection"));
            }
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if v["id"] == json!(id) {
                if let Some(e) = v.get("error") {
                    return Err(std::io::Error::other(e.to_string()));
                }
                return Ok(v["result"].clone());
            }
        }
    }

    /// A tool call: its structured content, or its error text.
    pub(crate) async fn tool(
        &mut self,
        name: &str,
        args: Value,
    ) -> std::io::Result<Result<Value, String>> {
        let r = self
            .request("tools/call", json!({"name": name, "arguments": args}))
            .await?;
        let text = r["content"][0]["text"].as_str().unwrap_or("").to_string();
        Ok(if r["isError"] == true {
            Err(text)
        } else {
            Ok(r["structuredContent"].clone())
        })
    }
}
