//! The record of what the agent did: every tool call, with its arguments,
//! how long it took and how big its reply was, stored under the session it
//! concerned so the web UI can lay it beside the session's own timeline.
//!
//! A call concerns the session its `sessionId` argument names, or the one
//! its reply names (a `debug_launch`, an instrumented `debug_test`). Calls
//! that name none (staging trace patterns before a launch, listing
//! sessions) are held per connection and filed under the next session this
//! connection launches: they are how the agent prepared it.

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, JsonObject};
use serde_json::Value;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use strobe_store::{AgentCall, SUMMARY_CHARS, Store};

/// Session-less calls held for the next launch; older ones beyond it are
/// let go (and counted in the log), since they are preparation long past.
const PENDING_KEPT: usize = 64;

/// What the record keeps of a call's arguments: their JSON text and the
/// session they name.
pub(crate) struct CallArgs {
    json: String,
    session: Option<String>,
    /// Who called (the MCP client's name).
    client: String,
}

impl CallArgs {
    /// Taken from the request's arguments before the call consumes them.
    pub(crate) fn of(args: Option<&JsonObject>, client: String) -> CallArgs {
        CallArgs {
            client,
            json: args
                .and_then(|a| serde_json::to_string(a).ok())
                .unwrap_or_else(|| "{}".to_string()),
            // debug_diff names two: it is recorded on the candidate's.
            session: args
                .and_then(|a| a.get("sessionId").or_else(|| a.get("candidate")))
                .and_then(Value::as_str)
                .map(str::to_string),
        }
    }
}

/// Counts the bytes a serializer writes, keeping none of them.
#[derive(Default)]
struct ByteCount(u64);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The size of `value` as JSON, without building the text.
fn json_size(value: &impl serde::Serialize) -> u64 {
    let mut count = ByteCount::default();
    serde_json::to_writer(&mut count, value).map_or(0, |()| count.0)
}

/// One connection's audit trail.
#[derive(Default)]
pub(crate) struct Audit {
    pending: Mutex<Vec<AgentCall>>,
}

impl Audit {
    /// Records a finished call, given what [`CallArgs::of`] took from its
    /// request before the request was handed on.
    pub(crate) fn record(
        &self,
        store: &Store,
        tool: &str,
        args: CallArgs,
        started: SystemTime,
        took: Duration,
        reply: &Result<CallToolResponse, McpError>,
    ) {
        let (response_bytes, is_error, summary, reply_session) = describe(reply);
        let call = AgentCall {
            started_us: started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as i64),
            duration_us: took.as_micros() as i64,
            tool: tool.to_string(),
            args: args.json,
            response_bytes,
            is_error,
            summary,
            client: args.client,
        };
        let named = args.session;
        let mut pending = self.pending.lock().expect("audit lock");
        let Some(session) = named.clone().or(reply_session.clone()) else {
            if pending.len() >= PENDING_KEPT {
                pending.remove(0);
                tracing::debug!("audit: an old session-less call let go");
            }
            pending.push(call);
            return;
        };
        // The session this call created takes the calls that prepared it.
        let mut calls = Vec::new();
        if named.is_none() && reply_session.is_some() && tool == "debug_launch" {
            calls.append(&mut pending);
        }
        calls.push(call);
        drop(pending);
        // The store's queue is bounded (back-pressure during a flood): wait
        // for room on a blocking thread, never on the async runtime.
        let store = store.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = store.record_agent_calls(&session, calls) {
                tracing::warn!("audit: cannot record calls on {session}: {e}");
            }
        });
    }
}

/// A reply's size, error flag, text summary and the session it names.
fn describe(reply: &Result<CallToolResponse, McpError>) -> (u64, bool, String, Option<String>) {
    match reply {
        Ok(CallToolResponse::Complete(r)) => {
            let bytes = json_size(r);
            let text = r
                .content
                .iter()
                .find_map(|c| c.as_text())
                .map(|t| strobe_store::clip(&t.text, SUMMARY_CHARS))
                .unwrap_or_default();
            let session = r
                .structured_content
                .as_ref()
                .and_then(|v| v.get("sessionId"))
                .and_then(Value::as_str)
                .map(str::to_string);
            (bytes, r.is_error == Some(true), text, session)
        }
        // Strobe's tools always complete; other kinds carry no reply to size.
        Ok(_) => (0, false, String::new(), None),
        Err(e) => (
            json_size(e),
            true,
            strobe_store::clip(&e.message, SUMMARY_CHARS),
            None,
        ),
    }
}
