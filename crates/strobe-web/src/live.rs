//! `/api/sessions/{id}/live`: a WebSocket that streams what is new in a
//! session while the page is open: its status when it changes, new
//! stdout/stderr lines, a note that new events exist (the page refetches
//! the views it shows), and the agent's new tool calls.
//!
//! The stream polls the store every [`PERIOD`] rather than hooking the
//! ingest path: the event flood never waits on a slow browser, and a page
//! that falls behind gets `skipped` counts instead of an unbounded queue.
//! Open streams are counted as the daemon's viewers, so a daemon watched
//! in a browser does not idle out. A stream stays open after its session
//! ends (one `ended` message), because the agent may go on querying the
//! finished session and those calls still stream in.

use crate::routes::State;
use axum::extract::ws::{Message, WebSocket};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use strobe_core::event::EventKind;
use strobe_session::SessionState;
use strobe_store::{EventFilter, QueryPage};

/// How often the stream looks for news.
pub const PERIOD: Duration = Duration::from_millis(250);
/// Output lines sent per period at most; more are counted as skipped.
pub const MAX_LINES: usize = 500;
/// Output lines sent when the stream opens (the recent past).
pub const BACKLOG_LINES: u64 = 200;
/// Characters of an output line sent.
const LINE_CHARS: usize = 1000;

/// Counts a viewer while it lives.
struct Viewer(Arc<State>);

impl Drop for Viewer {
    fn drop(&mut self) {
        self.0.viewers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Where a stream has got to.
#[derive(Default)]
struct Cursor {
    status: Option<Value>,
    /// `ended` was sent.
    ended: bool,
    stored: u64,
    /// Last output event id sent.
    output_seq: Option<u64>,
    /// Last agent call sent.
    agent_seq: i64,
}

/// Serves one stream until the page goes away or the session ends.
pub async fn serve(mut socket: WebSocket, state: Arc<State>, id: String) {
    state.viewers.fetch_add(1, Ordering::SeqCst);
    let _viewer = Viewer(state.clone());
    let mut cursor = Cursor::default();
    let mut tick = tokio::time::interval(PERIOD);
    loop {
        tokio::select! {
            incoming = socket.recv() => match incoming {
                // The page sends nothing we act on; a close or an error ends it.
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
            _ = tick.tick() => {
                let st = state.clone();
                let sid = id.clone();
                let moved = std::mem::take(&mut cursor);
                let polled = tokio::task::spawn_blocking(move || {
                    let mut c = moved;
                    let news = poll(&st, &sid, &mut c);
                    (c, news)
                })
                .await;
                let Ok((c, news)) = polled else { return };
                cursor = c;
                // A session that cannot be read (deleted) ends the stream.
                let (messages, gone) = match news {
                    Ok(messages) => (messages, false),
                    Err(message) => (vec![json!({"type": "error", "message": message})], true),
                };
                for m in messages {
                    if socket.send(Message::Text(m.to_string().into())).await.is_err() {
                        return;
                    }
                }
                if gone {
                    let _ = socket.send(Message::Close(None)).await;
                    return;
                }
            }
        }
    }
}

/// What is new since `c`; an error when the session cannot be read.
fn poll(state: &State, id: &str, c: &mut Cursor) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let status = state.mgr.status(id).map_err(|e| e.message())?;
    let running = matches!(status.state, SessionState::Running | SessionState::Starting);
    let status_json = serde_json::to_value(&status).map_err(|e| e.to_string())?;
    let changed = c.status.as_ref() != Some(&status_json);

    // Output lines first, so a page that sees `ended` has every line before it.
    let kinds = EventKind::Stdout.bit() | EventKind::Stderr.bit();
    let from = match c.output_seq {
        Some(seq) => seq + 1,
        None => {
            // The recent past: the last BACKLOG_LINES lines.
            let all = EventFilter {
                kinds: Some(kinds),
                ..Default::default()
            };
            let total = state
                .mgr
                .query(
                    id,
                    &all,
                    QueryPage {
                        offset: 0,
                        limit: 0,
                    },
                )
                .map_err(|e| e.message())?
                .total_count;
            let skip = total.saturating_sub(BACKLOG_LINES);
            let first = state
                .mgr
                .query(
                    id,
                    &all,
                    QueryPage {
                        offset: skip,
                        limit: 1,
                    },
                )
                .map_err(|e| e.message())?;
            first.events.first().map_or(0, |e| e.seq)
        }
    };
    let page = state
        .mgr
        .query(
            id,
            &EventFilter {
                kinds: Some(kinds),
                seq_from: Some(from),
                ..Default::default()
            },
            QueryPage {
                offset: 0,
                limit: MAX_LINES,
            },
        )
        .map_err(|e| e.message())?;
    if let Some(last) = page.events.last() {
        c.output_seq = Some(last.seq);
        // Lines beyond this period's share are skipped, not queued: the
        // table still has them.
        let skipped = page.total_count - page.events.len() as u64;
        if skipped > 0 {
            let rest = state
                .mgr
                .query(
                    id,
                    &EventFilter {
                        kinds: Some(kinds),
                        seq_from: Some(last.seq + 1),
                        ..Default::default()
                    },
                    QueryPage {
                        offset: skipped - 1,
                        limit: 1,
                    },
                )
                .map_err(|e| e.message())?;
            if let Some(e) = rest.events.first() {
                c.output_seq = Some(e.seq);
            }
        }
        let items: Vec<strobe_view::timeline::Item> = page
            .events
            .iter()
            .filter_map(|e| Some(strobe_view::timeline::Item::of(e, e.kind()?, LINE_CHARS)))
            .collect();
        out.push(json!({"type": "output", "items": items, "skipped": skipped}));
    } else if c.output_seq.is_none() {
        c.output_seq = Some(from.saturating_sub(1));
    }

    if status.events.stored != c.stored || changed {
        c.stored = status.events.stored;
        let end_ns = state.mgr.latest_ts(id).unwrap_or(0);
        out.push(json!({"type": "events", "stored": status.events.stored, "endNs": end_ns}));
    }

    let started_ms = status.started_at;
    loop {
        let calls = state
            .store
            .agent_calls(id, c.agent_seq, 200)
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let more = calls.len() == 200;
        for call in calls {
            c.agent_seq = call.seq;
            out.push(
                json!({"type": "agent", "call": crate::routes::agent_call_json(&call, started_ms)}),
            );
        }
        if !more {
            break;
        }
    }

    if changed {
        c.status = Some(status_json.clone());
        if running {
            out.push(json!({"type": "status", "status": status_json}));
        }
    }
    if !running && !c.ended {
        c.ended = true;
        out.push(json!({"type": "ended", "status": status_json}));
    }
    Ok(out)
}
