//! A session as Chrome trace-event JSON (the "JSON Object Format" that
//! Perfetto UI, `chrome://tracing` and speedscope read).
//!
//! - Every traced call is one complete event (`"ph": "X"`) on its thread,
//!   starting at its enter and lasting its measured duration, so calls nest
//!   by time within each thread. A call whose exit was never recorded (the
//!   process died inside it) lasts until the session's last event and is
//!   marked `unfinished`.
//! - stdout and stderr lines are process-scoped instant events; crashes,
//!   logpoints and variable snapshots are thread-scoped instants carrying
//!   their JSON; the process's end is a process-scoped instant.
//! - Metadata events name each process after its executable and each
//!   thread after the name the target gave it.
//!
//! Timestamps are microseconds since the session started (the store keeps
//! nanoseconds; fractions are kept).

use crate::calls::{OpenCall, OpenCalls, Thread, for_each_page};
use crate::{Names, ViewError};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::Write;
use strobe_core::event::{EventKind, FLAG_JSON, FLAG_SAMPLED};
use strobe_store::{EventFilter, SessionRow, Store};

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// Complete call spans written.
    pub spans: u64,
    /// Of those, calls still open when the session ended.
    pub unfinished: u64,
    /// Instant events written (output, crashes, snapshots, logpoints, exits).
    pub instants: u64,
    /// Stored events read.
    pub events: u64,
    /// Flows from the agent's calls to events they caused (Perfetto only).
    pub flows: u64,
}

/// Writes session `session_id` as trace-event JSON to `out`.
pub fn chrome_trace(
    store: &Store,
    session_id: &str,
    out: &mut dyn Write,
) -> Result<ExportSummary, ViewError> {
    let session = store
        .session(session_id)?
        .ok_or_else(|| ViewError::NoSession(session_id.to_string()))?;
    let mut names = Names::new(store, session.key);
    let mut w = Writer {
        out,
        first: true,
        summary: ExportSummary::default(),
    };
    write!(
        w.out,
        "{{\"displayTimeUnit\":\"ms\",\"otherData\":{},\"traceEvents\":[",
        json!({
            "producer": format!("strobe {}", env!("CARGO_PKG_VERSION")),
            "sessionId": session.session_id,
            "binaryPath": session.binary_path,
            "startedAtUnixMs": session.started_at,
            "status": session.status,
            "eventsEvicted": session.evicted,
            "eventsDropped": session.dropped,
        })
    )?;
    let mut open = OpenCalls::default();
    let mut threads: BTreeSet<Thread> = BTreeSet::new();
    let mut pids: BTreeSet<u32> = session.pids.iter().copied().collect();
    let mut last_ts = 0u64;
    for_each_page(store, session.key, &EventFilter::default(), |events| {
        names.prefetch(events.iter().map(|e| e.header.func_id))?;
        for e in events {
            w.summary.events += 1;
            let h = &e.header;
            last_ts = last_ts.max(h.ts_ns);
            pids.insert(h.pid);
            let Some(kind) = e.kind() else { continue };
            match kind {
                EventKind::FunctionEnter => {
                    threads.insert((h.pid, h.tid));
                    open.enter(h, e.seq);
                }
                EventKind::FunctionExit => {
                    threads.insert((h.pid, h.tid));
                    let start = h.ts_ns.saturating_sub(h.duration_ns);
                    // Calls above this one that never returned end where it ends.
                    for o in open.exit(h) {
                        w.unfinished(&mut names, h.pid, h.tid, &o, h.ts_ns)?;
                    }
                    let f = names.function(h.func_id)?;
                    let mut args = json!({"seq": e.seq});
                    if let Some(file) = &f.file {
                        args["source"] = json!(match f.line {
                            Some(l) => format!("{file}:{l}"),
                            None => file.clone(),
                        });
                    }
                    if h.flags & FLAG_SAMPLED != 0 {
                        args["sampled"] = json!(true);
                    }
                    let name = f.name.clone();
                    w.event(json!({
                        "name": name, "cat": "call", "ph": "X",
                        "ts": micros(start), "dur": micros(h.duration_ns),
                        "pid": h.pid, "tid": h.tid, "args": args,
                    }))?;
                    w.summary.spans += 1;
                }
                EventKind::Stdout | EventKind::Stderr => {
                    let text = String::from_utf8_lossy(&e.payload);
                    w.instant(
                        kind.name(),
                        "output",
                        "p",
                        h,
                        json!({"seq": e.seq, "text": text}),
                    )?;
                }
                EventKind::ProcessExit => {
                    w.instant("process exit", "lifecycle", "p", h, payload_args(e))?;
                }
                EventKind::Crash
                | EventKind::Logpoint
                | EventKind::VariableSnapshot
                | EventKind::Exception
                | EventKind::UiSnapshot
                | EventKind::UiAction
                | EventKind::Stdin
                | EventKind::File
                | EventKind::Net
                | EventKind::Midi
                | EventKind::Audio
                | EventKind::ScenarioStep => {
                    let scope = if h.tid == 0 { "p" } else { "t" };
                    w.instant(kind.name(), kind.name(), scope, h, payload_args(e))?;
                }
            }
        }
        Ok(())
    })?;
    for ((pid, tid), stack) in open.into_open() {
        for o in &stack {
            w.unfinished(&mut names, pid, tid, o, last_ts)?;
        }
    }
    let exe = exe_name(&session);
    for pid in &pids {
        w.event(
            json!({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"name": format!("{exe} ({pid})")}}),
        )?;
    }
    for (pid, tid) in &threads {
        let name = names
            .thread(*tid)?
            .map_or_else(|| format!("thread {tid}"), |n| format!("{n} ({tid})"));
        w.event(
            json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                       "args": {"name": name}}),
        )?;
    }
    w.out.write_all(b"]}\n")?;
    w.out.flush()?;
    Ok(w.summary)
}

struct Writer<'w> {
    out: &'w mut dyn Write,
    first: bool,
    summary: ExportSummary,
}

impl Writer<'_> {
    fn event(&mut self, v: Value) -> Result<(), ViewError> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut *self.out, &v).map_err(std::io::Error::from)?;
        Ok(())
    }

    fn instant(
        &mut self,
        name: &str,
        cat: &str,
        scope: &str,
        h: &strobe_core::event::EventHeader,
        args: Value,
    ) -> Result<(), ViewError> {
        self.event(json!({"name": name, "cat": cat, "ph": "i", "s": scope,
                          "ts": micros(h.ts_ns), "pid": h.pid, "tid": h.tid, "args": args}))?;
        self.summary.instants += 1;
        Ok(())
    }

    /// A call that has no recorded exit, ending at `end_ns`.
    fn unfinished(
        &mut self,
        names: &mut Names,
        pid: u32,
        tid: u32,
        o: &OpenCall,
        end_ns: u64,
    ) -> Result<(), ViewError> {
        let name = names.function(o.func_id)?.name.clone();
        self.event(json!({
            "name": name, "cat": "call", "ph": "X",
            "ts": micros(o.ts_ns), "dur": micros(end_ns.saturating_sub(o.ts_ns)),
            "pid": pid, "tid": tid, "args": {"seq": o.seq, "unfinished": true},
        }))?;
        self.summary.spans += 1;
        self.summary.unfinished += 1;
        Ok(())
    }
}

fn micros(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The payload as trace args: its JSON when it is JSON, else its text.
fn payload_args(e: &strobe_core::event::Event) -> Value {
    let parsed = (e.header.flags & FLAG_JSON != 0)
        .then(|| serde_json::from_slice::<Value>(&e.payload).ok())
        .flatten();
    match parsed {
        Some(Value::Object(mut m)) => {
            m.insert("seq".into(), json!(e.seq));
            Value::Object(m)
        }
        Some(v) => json!({"seq": e.seq, "value": v}),
        None => json!({"seq": e.seq, "text": String::from_utf8_lossy(&e.payload)}),
    }
}

fn exe_name(s: &SessionRow) -> String {
    std::path::Path::new(&s.binary_path)
        .file_name()
        .map_or_else(
            || s.binary_path.clone(),
            |n| n.to_string_lossy().into_owned(),
        )
}
