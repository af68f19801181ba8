//! The calls of a page's function_exit events: each exit's arguments,
//! found from its enter with a few batched time-window queries, so an exit
//! line reads as the call it ends.

use serde_json::Value;
use std::collections::HashMap;
use strobe_core::ToolError;
use strobe_core::event::{Event, EventKind};
use strobe_store::{EventFilter, QueryPage};

use crate::render::call_args;

/// Most queries spent finding the calls of one page's exits.
const CALL_QUERIES: usize = 16;
/// Events one such query is meant to span (about two chunks).
const CALL_WINDOW_EVENTS: f64 = 8192.0;
/// Most enters one such query returns.
const CALL_QUERY_LIMIT: usize = 65_536;

/// Runs one store query (the events of a page).
pub type EventQuery<'a> = dyn FnMut(&EventFilter, QueryPage) -> Result<Vec<Event>, ToolError> + 'a;

/// The argument list of each function_exit's call on a page (by the exit's
/// id), from its enter: the event of the same process, thread and function
/// at the exit's time less its duration (the store's call tree measured the
/// duration from that enter). Batched: exits whose calls began close
/// together (within about two chunks of events, at the page's density)
/// share one time-window query; at most [`CALL_QUERIES`] queries, exits
/// past them (or whose enter was evicted) go without.
pub fn exit_calls(
    events: &[Event],
    query: &mut EventQuery<'_>,
    typed: &dyn Fn(&Event) -> Option<Value>,
) -> HashMap<u64, String> {
    let mut out = HashMap::new();
    // (call start, exit index)
    let mut starts: Vec<(u64, usize)> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind() == Some(EventKind::FunctionExit) && e.header.duration_ns > 0)
        .map(|(i, e)| (e.header.ts_ns.saturating_sub(e.header.duration_ns), i))
        .collect();
    if starts.is_empty() {
        return out;
    }
    starts.sort_unstable();
    let (seq_lo, seq_hi) = events
        .iter()
        .fold((u64::MAX, 0), |(a, b), e| (a.min(e.seq), b.max(e.seq)));
    let (ts_lo, ts_hi) = events.iter().fold((u64::MAX, 0), |(a, b), e| {
        (a.min(e.header.ts_ns), b.max(e.header.ts_ns))
    });
    let per_ns = (seq_hi - seq_lo + 1) as f64 / (ts_hi - ts_lo).max(1) as f64;
    let span = (CALL_WINDOW_EVENTS / per_ns) as u64;
    let mut rest = &starts[..];
    for _ in 0..CALL_QUERIES {
        let Some(&(first, _)) = rest.first() else {
            break;
        };
        let n = rest.partition_point(|(t, _)| *t <= first.saturating_add(span));
        let (group, next) = rest.split_at(n);
        rest = next;
        let exits: Vec<&Event> = group.iter().map(|(_, i)| &events[*i]).collect();
        let filter = EventFilter {
            kinds: Some(EventKind::FunctionEnter.bit()),
            time_from: Some(first),
            time_to: Some(group[n - 1].0),
            func_ids: Some(exits.iter().map(|e| e.header.func_id).collect()),
            tids: Some(exits.iter().map(|e| e.header.tid).collect()),
            seq_to: exits.iter().map(|e| e.seq).max(),
            ..Default::default()
        };
        let page = QueryPage {
            offset: 0,
            limit: CALL_QUERY_LIMIT,
        };
        let enters = match query(&filter, page) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!("finding the calls of exits: {}", e.message);
                break;
            }
        };
        let by_call: HashMap<(u32, u32, u32, u64), &Event> = enters
            .iter()
            .map(|e| {
                let h = &e.header;
                ((h.pid, h.tid, h.func_id, h.ts_ns), e)
            })
            .collect();
        for (start, i) in group {
            let h = &events[*i].header;
            if let Some(enter) = by_call.get(&(h.pid, h.tid, h.func_id, *start)) {
                out.insert(events[*i].seq, call_args(enter, typed(enter).as_ref()));
            }
        }
    }
    out
}
