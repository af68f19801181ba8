//! A session as a Perfetto trace: protobuf `Trace` of `TracePacket`s with
//! `TrackEvent`s, which ui.perfetto.dev and trace processor open natively.
//!
//! - One track per process and one per thread (a child of its process's),
//!   named as the Chrome export names them; one track for the agent's MCP
//!   tool calls.
//! - Every traced call is a slice on its thread: `SLICE_BEGIN` at the
//!   enter, with the arguments as debug annotations, `SLICE_END` at the
//!   exit with the return value. A call that never returned ends at the
//!   session's last event (or where an outer call returned) and is
//!   annotated `unfinished`.
//! - Output, crashes, snapshots, logpoints, UI and channel events and
//!   scenario steps are instants (output on the process track, the rest
//!   on their thread's when they have one), their JSON as annotations.
//! - The agent's tool calls are slices on the agent track, and a flow
//!   goes from a call to each event it caused where that is known: the
//!   `ui_action` of `debug_ui_action`, the `ui_snapshot` of `debug_ui`, the
//!   channel events of `debug_channel`, the steps of `debug_test_scenario`,
//!   stored during the call.
//!
//! The encoding is written by hand (`proto.rs`), with the field numbers of
//! Perfetto's published `protos/perfetto/trace/perfetto_trace.proto`.

mod proto;

use crate::calls::{OpenCall, OpenCalls, for_each_page};
use crate::export::ExportSummary;
use crate::{Names, ViewError};
use proto::Msg;
use serde_json::Value;
use std::collections::HashSet;
use std::io::Write;
use strobe_core::event::{Event, EventHeader, EventKind, FLAG_JSON, FLAG_SAMPLED};
use strobe_store::{AgentCallRow, EventFilter, Store};

/// Types a traced call's arguments or return value from its event (the
/// session's capture plans); `None` leaves the raw register.
pub type TypedValues<'a> = dyn Fn(&EventHeader, &[u8]) -> Option<Value> + Sync + 'a;

// Field numbers (perfetto_trace.proto).
const TRACE_PACKET: u32 = 1;
const PKT_TIMESTAMP: u32 = 8;
const PKT_SEQUENCE_ID: u32 = 10;
const PKT_TRACK_EVENT: u32 = 11;
const PKT_SEQUENCE_FLAGS: u32 = 13;
const PKT_TRACK_DESCRIPTOR: u32 = 60;
const TD_UUID: u32 = 1;
const TD_NAME: u32 = 2;
const TD_PROCESS: u32 = 3;
const TD_THREAD: u32 = 4;
const TD_PARENT: u32 = 5;
const PD_PID: u32 = 1;
const PD_NAME: u32 = 6;
const THD_PID: u32 = 1;
const THD_TID: u32 = 2;
const THD_NAME: u32 = 5;
const TE_ANNOTATION: u32 = 4;
const TE_TYPE: u32 = 9;
const TE_TRACK: u32 = 11;
const TE_CATEGORY: u32 = 22;
const TE_NAME: u32 = 23;
const TE_FLOW: u32 = 47;
const TE_TERMINATING_FLOW: u32 = 48;
const DA_BOOL: u32 = 2;
const DA_UINT: u32 = 3;
const DA_INT: u32 = 4;
const DA_DOUBLE: u32 = 5;
const DA_STRING: u32 = 6;
const DA_NAME: u32 = 10;
const SLICE_BEGIN: u64 = 1;
const SLICE_END: u64 = 2;
const INSTANT: u64 = 3;
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;

/// Longest annotation text (JSON of objects and arrays included).
const MAX_TEXT: usize = 2_000;
/// Slack around an agent call's window when matching the events it caused
/// (its start is known to the microsecond, the session's to the millisecond).
const FLOW_SLACK_NS: u64 = 5_000_000;

fn process_track(pid: u32) -> u64 {
    0x1000_0000_0000_0000 | u64::from(pid)
}

fn thread_track(pid: u32, tid: u32) -> u64 {
    (u64::from(pid) << 32) | u64::from(tid)
}

const AGENT_TRACK: u64 = 0x2000_0000_0000_0000;

/// The event kinds a tool's call causes, for flows.
fn caused_by(tool: &str) -> &'static [EventKind] {
    match tool {
        "debug_ui_action" => &[EventKind::UiAction],
        "debug_ui" => &[EventKind::UiSnapshot],
        "debug_channel" => &[
            EventKind::Stdin,
            EventKind::File,
            EventKind::Net,
            EventKind::Midi,
            EventKind::Audio,
        ],
        "debug_test_scenario" => &[EventKind::ScenarioStep],
        _ => &[],
    }
}

/// An agent call on the session clock, and the flows it starts.
struct AgentCall {
    row: AgentCallRow,
    start_ns: u64,
    end_ns: u64,
    flows: Vec<u64>,
}

struct Writer<'w> {
    out: std::io::BufWriter<&'w mut dyn Write>,
    packet: Msg,
    event: Msg,
    summary: ExportSummary,
    first: bool,
}

impl Writer<'_> {
    /// Writes `packet` (with `timestamp` and the sequence id) as one
    /// `Trace.packet`.
    fn emit(
        &mut self,
        body_field: u32,
        body: &Msg,
        timestamp: Option<u64>,
    ) -> Result<(), ViewError> {
        let p = &mut self.packet;
        p.clear();
        if let Some(ts) = timestamp {
            p.varint(PKT_TIMESTAMP, ts);
        }
        p.varint(PKT_SEQUENCE_ID, 1);
        if self.first {
            p.varint(PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
            self.first = false;
        }
        p.message(body_field, body);
        let mut head = Msg::new();
        head.bytes(TRACE_PACKET, p.as_bytes());
        self.out.write_all(head.as_bytes())?;
        Ok(())
    }

    /// Writes the track event built in `self.event` at `ts`.
    fn track_event(&mut self, ts: u64) -> Result<(), ViewError> {
        let e = std::mem::take(&mut self.event);
        self.emit(PKT_TRACK_EVENT, &e, Some(ts))?;
        self.event = e;
        self.event.clear();
        Ok(())
    }
}

/// Adds a debug annotation `name` = `v` to a track event.
fn annotate(ev: &mut Msg, name: &str, v: &Value) {
    let mut a = Msg::new();
    a.string(DA_NAME, name);
    match v {
        Value::Bool(b) => {
            a.varint(DA_BOOL, u64::from(*b));
        }
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                a.varint(DA_UINT, u);
            } else if let Some(i) = n.as_i64() {
                a.varint(DA_INT, i as u64);
            } else {
                a.double(DA_DOUBLE, n.as_f64().unwrap_or(0.0));
            }
        }
        Value::String(s) => {
            a.string(DA_STRING, &clip(s));
        }
        other => {
            a.string(DA_STRING, &clip(&other.to_string()));
        }
    }
    ev.message(TE_ANNOTATION, &a);
}

fn clip(s: &str) -> String {
    if s.len() <= MAX_TEXT {
        return s.to_string();
    }
    let mut end = MAX_TEXT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The payload's top-level fields as annotations (its text when not JSON).
fn payload_annotations(ev: &mut Msg, e: &Event) {
    annotate(ev, "seq", &Value::from(e.seq));
    let parsed = (e.header.flags & FLAG_JSON != 0)
        .then(|| serde_json::from_slice::<Value>(&e.payload).ok())
        .flatten();
    match parsed {
        Some(Value::Object(m)) => {
            for (k, v) in m.iter().take(32) {
                annotate(ev, k, v);
            }
        }
        Some(v) => annotate(ev, "value", &v),
        None => annotate(
            ev,
            "text",
            &Value::from(String::from_utf8_lossy(&e.payload)),
        ),
    }
}

/// Writes session `session_id` as a Perfetto protobuf trace to `out`;
/// `typed` (the session's capture plans) gives calls typed arguments and
/// return values, else they carry the raw registers.
pub fn perfetto_trace(
    store: &Store,
    session_id: &str,
    out: &mut dyn Write,
    typed: Option<&TypedValues<'_>>,
) -> Result<ExportSummary, ViewError> {
    let session = store
        .session(session_id)?
        .ok_or_else(|| ViewError::NoSession(session_id.to_string()))?;
    let mut names = Names::new(store, session.key);
    let mut w = Writer {
        out: std::io::BufWriter::with_capacity(1 << 20, out),
        packet: Msg::new(),
        event: Msg::new(),
        summary: ExportSummary::default(),
        first: true,
    };
    let exe = std::path::Path::new(&session.binary_path)
        .file_name()
        .map_or_else(
            || session.binary_path.clone(),
            |n| n.to_string_lossy().into_owned(),
        );
    let origin_us = session.started_at.saturating_mul(1000);
    let mut calls: Vec<AgentCall> = store
        .agent_calls(session_id, 0, 100_000)?
        .unwrap_or_default()
        .into_iter()
        .map(|row| {
            let start_ns = (row.started_us.saturating_sub(origin_us)).max(0) as u64 * 1000;
            let end_ns = start_ns + row.duration_us.max(0) as u64 * 1000;
            AgentCall {
                row,
                start_ns,
                end_ns,
                flows: Vec::new(),
            }
        })
        .collect();

    let mut processes: HashSet<u32> = HashSet::new();
    let mut threads: HashSet<(u32, u32)> = HashSet::new();
    let mut open = OpenCalls::default();
    let mut last_ts = 0u64;
    for_each_page(store, session.key, &EventFilter::default(), |events| {
        names.prefetch(events.iter().map(|e| e.header.func_id))?;
        for e in events {
            w.summary.events += 1;
            let h = &e.header;
            last_ts = last_ts.max(h.ts_ns);
            if processes.insert(h.pid) {
                describe_process(&mut w, h.pid, &exe)?;
            }
            if h.tid != 0 && threads.insert((h.pid, h.tid)) {
                let name = names.thread(h.tid)?.map(str::to_string);
                describe_thread(&mut w, h.pid, h.tid, name)?;
            }
            let Some(kind) = e.kind() else { continue };
            match kind {
                EventKind::FunctionEnter => {
                    open.enter(h, e.seq);
                    let name = names.function(h.func_id)?.name.clone();
                    begin_call(&mut w, e, &name, typed)?;
                }
                EventKind::FunctionExit => {
                    match open.exit_matched(h) {
                        Some(above) => {
                            for o in above.iter().rev() {
                                end_unfinished(&mut w, h.pid, h.tid, o, h.ts_ns)?;
                            }
                        }
                        None => {
                            // Its enter was not stored (evicted): the slice
                            // starts where the exit says it did.
                            let name = names.function(h.func_id)?.name.clone();
                            let mut begin = e.clone();
                            begin.header.ts_ns = h.ts_ns.saturating_sub(h.duration_ns);
                            begin.header.kind = EventKind::FunctionEnter as u8;
                            begin.payload.clear();
                            begin_call(&mut w, &begin, &name, None)?;
                        }
                    }
                    end_call(&mut w, e, typed)?;
                }
                EventKind::Stdout | EventKind::Stderr => {
                    instant(&mut w, e, kind, process_track(h.pid), &[])?;
                }
                _ => {
                    let track = if h.tid == 0 {
                        process_track(h.pid)
                    } else {
                        thread_track(h.pid, h.tid)
                    };
                    let mut flows = Vec::new();
                    for (i, c) in calls.iter_mut().enumerate() {
                        if caused_by(&c.row.tool).contains(&kind)
                            && h.ts_ns + FLOW_SLACK_NS >= c.start_ns
                            && h.ts_ns <= c.end_ns + FLOW_SLACK_NS
                        {
                            let id = ((i as u64 + 1) << 24) | (c.flows.len() as u64 + 1);
                            c.flows.push(id);
                            flows.push(id);
                            break;
                        }
                    }
                    w.summary.flows += flows.len() as u64;
                    instant(&mut w, e, kind, track, &flows)?;
                }
            }
        }
        Ok(())
    })?;
    for ((pid, tid), stack) in open.into_open() {
        for o in stack.iter().rev() {
            end_unfinished(&mut w, pid, tid, o, last_ts)?;
        }
    }
    if !calls.is_empty() {
        let mut d = Msg::new();
        d.varint(TD_UUID, AGENT_TRACK)
            .string(TD_NAME, "agent (MCP tool calls)");
        w.emit(PKT_TRACK_DESCRIPTOR, &d, None)?;
    }
    for c in &calls {
        w.event
            .varint(TE_TYPE, SLICE_BEGIN)
            .varint(TE_TRACK, AGENT_TRACK);
        w.event
            .string(TE_NAME, &c.row.tool)
            .string(TE_CATEGORY, "agent");
        annotate(&mut w.event, "arguments", &Value::from(c.row.args.as_str()));
        annotate(&mut w.event, "client", &Value::from(c.row.client.as_str()));
        annotate(
            &mut w.event,
            "summary",
            &Value::from(c.row.summary.as_str()),
        );
        annotate(&mut w.event, "isError", &Value::from(c.row.is_error));
        annotate(
            &mut w.event,
            "responseBytes",
            &Value::from(c.row.response_bytes),
        );
        for f in &c.flows {
            w.event.fixed64(TE_FLOW, *f);
        }
        w.track_event(c.start_ns)?;
        w.event
            .varint(TE_TYPE, SLICE_END)
            .varint(TE_TRACK, AGENT_TRACK);
        w.track_event(c.end_ns.max(c.start_ns))?;
    }
    w.out.flush()?;
    Ok(w.summary)
}

fn describe_process(w: &mut Writer, pid: u32, exe: &str) -> Result<(), ViewError> {
    let mut p = Msg::new();
    p.varint(PD_PID, u64::from(pid)).string(PD_NAME, exe);
    let mut d = Msg::new();
    d.varint(TD_UUID, process_track(pid))
        .message(TD_PROCESS, &p);
    w.emit(PKT_TRACK_DESCRIPTOR, &d, None)
}

fn describe_thread(
    w: &mut Writer,
    pid: u32,
    tid: u32,
    name: Option<String>,
) -> Result<(), ViewError> {
    let mut t = Msg::new();
    t.varint(THD_PID, u64::from(pid))
        .varint(THD_TID, u64::from(tid));
    t.string(THD_NAME, &name.unwrap_or_else(|| format!("thread {tid}")));
    let mut d = Msg::new();
    d.varint(TD_UUID, thread_track(pid, tid))
        .varint(TD_PARENT, process_track(pid))
        .message(TD_THREAD, &t);
    w.emit(PKT_TRACK_DESCRIPTOR, &d, None)
}

/// The typed values of a call's event, when its capture plan is known.
fn values(e: &Event, typed: Option<&TypedValues<'_>>) -> Option<Value> {
    typed.and_then(|t| t(&e.header, &e.payload))
}

fn begin_call(
    w: &mut Writer,
    e: &Event,
    name: &str,
    typed: Option<&TypedValues<'_>>,
) -> Result<(), ViewError> {
    let h = &e.header;
    w.event
        .varint(TE_TYPE, SLICE_BEGIN)
        .varint(TE_TRACK, thread_track(h.pid, h.tid));
    w.event.string(TE_NAME, name).string(TE_CATEGORY, "call");
    annotate(&mut w.event, "seq", &Value::from(e.seq));
    match values(e, typed).as_ref().and_then(|v| v.get("arguments")) {
        Some(Value::Array(args)) => {
            for (i, a) in args.iter().enumerate() {
                let key = a["name"]
                    .as_str()
                    .map_or_else(|| format!("arg{i}"), |n| format!("args.{n}"));
                annotate(&mut w.event, &key, a.get("value").unwrap_or(a));
            }
        }
        Some(other) => annotate(&mut w.event, "arguments", other),
        None if !e.payload.is_empty() || h.value != 0 => {
            annotate(
                &mut w.event,
                "firstArgumentRaw",
                &Value::from(format!("{:#x}", h.value)),
            );
        }
        None => {}
    }
    if h.flags & FLAG_SAMPLED != 0 {
        annotate(&mut w.event, "sampled", &Value::from(true));
    }
    w.track_event(h.ts_ns)
}

fn end_call(w: &mut Writer, e: &Event, typed: Option<&TypedValues<'_>>) -> Result<(), ViewError> {
    let h = &e.header;
    w.event
        .varint(TE_TYPE, SLICE_END)
        .varint(TE_TRACK, thread_track(h.pid, h.tid));
    let v = values(e, typed);
    match v.as_ref() {
        Some(v) if v.get("exception").is_some() => {
            annotate(&mut w.event, "exception", &v["exception"])
        }
        Some(v) if v.get("returnValue").is_some() => {
            annotate(&mut w.event, "returnValue", &v["returnValue"])
        }
        _ => annotate(
            &mut w.event,
            "returnValueRaw",
            &Value::from(format!("{:#x}", h.value)),
        ),
    }
    w.summary.spans += 1;
    w.track_event(h.ts_ns)
}

fn end_unfinished(
    w: &mut Writer,
    pid: u32,
    tid: u32,
    o: &OpenCall,
    end_ns: u64,
) -> Result<(), ViewError> {
    w.event
        .varint(TE_TYPE, SLICE_END)
        .varint(TE_TRACK, thread_track(pid, tid));
    annotate(&mut w.event, "unfinished", &Value::from(true));
    w.summary.spans += 1;
    w.summary.unfinished += 1;
    w.track_event(end_ns.max(o.ts_ns))
}

fn instant(
    w: &mut Writer,
    e: &Event,
    kind: EventKind,
    track: u64,
    flows: &[u64],
) -> Result<(), ViewError> {
    w.event.varint(TE_TYPE, INSTANT).varint(TE_TRACK, track);
    w.event
        .string(TE_NAME, kind.name())
        .string(TE_CATEGORY, kind.name());
    payload_annotations(&mut w.event, e);
    for f in flows {
        w.event.fixed64(TE_TERMINATING_FLOW, *f);
    }
    w.summary.instants += 1;
    w.track_event(e.header.ts_ns)
}
