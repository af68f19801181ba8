//! What the agents say. Every message an agent sends is decoded once, into
//! the protocol's [`AgentMessage`] (strobe-frida's `agent_protocol`), and
//! dispatched here on the session's event thread.
//!
//! That thread never waits on a bridge request nor on the tracer lock
//! (see the bridge consumer rule in docs/ARCHITECTURE.md): what needs either
//! goes to a thread of its own. A message that does not fit the protocol is
//! rejected — logged with the session, counted, never read with made-up
//! defaults — and an agent thread blocked on it is still released.

use super::{Live, SessionManager, fork_gate, hooks::hook_outcome};
use crate::trace;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use strobe_core::event::EventBatch;
use strobe_frida::agent_protocol::{self as protocol, AgentMessage, DaemonMessage, Incoming};
use strobe_store::SessionUpdate;

/// How much of a rejected message the log shows.
const REJECTED_SHOWN: usize = 300;

/// The agent messages a session rejected.
#[derive(Debug, Default)]
pub(super) struct RejectedMessages(AtomicU64);

impl RejectedMessages {
    /// Counts one; returns the line to log, naming the session and process.
    fn record(
        &self,
        session: &str,
        pid: u32,
        text: &[u8],
        rejected: &protocol::Rejected,
    ) -> String {
        let count = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        let shown = String::from_utf8_lossy(&text[..text.len().min(REJECTED_SHOWN)]);
        format!(
            "session {session} (pid {pid}): agent message rejected ({count} so far): {}; message: {shown}{}",
            rejected.reason,
            if text.len() > REJECTED_SHOWN {
                "…"
            } else {
                ""
            }
        )
    }

    /// How many so far.
    pub(super) fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl SessionManager {
    pub(super) fn on_agent_message(&self, live: &Arc<Live>, text: &[u8], data: &[u8]) {
        let msg = match protocol::decode(text) {
            Ok(Incoming::Message(m)) => m,
            Ok(Incoming::Log { level, text }) => {
                tracing::debug!("session {}: agent log ({level}): {text}", live.id);
                return;
            }
            Ok(Incoming::ScriptError { description, stack }) => {
                tracing::warn!(
                    "session {}: agent script error: {description} {stack}",
                    live.id
                );
                return;
            }
            Err(rejected) => return self.on_rejected(live, text, data, rejected),
        };
        match msg {
            AgentMessage::AgentLoaded(m) => {
                *live.journal.lock().expect("journal lock") = Some(m.journal);
            }
            AgentMessage::Exit(m) => self.on_exit(live, m.code),
            AgentMessage::Crash(report) => {
                for image in
                    std::iter::once(live.clone()).chain(live.root().filter(|r| r.pid == live.pid))
                {
                    let mut life = image.life.lock().expect("lifecycle lock");
                    life.crash_seen = true;
                    life.signal = Some(report.signal.clone());
                }
                // Reading the crashing frame needs the tracer: never in the
                // event loop (the thread stays blocked until the ack).
                if let Some(me) = self.me.upgrade() {
                    let l = live.clone();
                    std::thread::spawn(move || me.on_crash(&l, report));
                }
            }
            AgentMessage::Trace(_) => self.on_trace(live, data),
            AgentMessage::Ring(offer) => self.on_ring_offer(live, &offer),
            AgentMessage::TraceDrops(m) => {
                let deltas: HashMap<u32, u64> = m.drops.into_iter().collect();
                let lost = live
                    .trace_stats
                    .lock()
                    .expect("stats lock")
                    .add_drops(&deltas);
                let _ = self.store.record_dropped(live.key, lost);
            }
            AgentMessage::ForkBarrier(_) => {
                // Everything the agent sent before has arrived: let it fork
                // once the requests sent to it are answered too, and send it
                // no new one until the fork returned (`fork_gate`). Their
                // answers come through this loop: never wait for them here.
                if !live.fork_gate.close() {
                    let _ = live.post(&DaemonMessage::ForkBarrierAck);
                } else {
                    let l = live.clone();
                    std::thread::spawn(move || {
                        l.fork_gate.await_answers(fork_gate::ANSWERS_WAIT);
                        let _ = l.post(&DaemonMessage::ForkBarrierAck);
                    });
                }
            }
            AgentMessage::ForkDone(m) => {
                tracing::debug!("process {} forked {}", m.pid, m.child);
                live.fork_gate.open();
            }
            // Hooks installed for a library loaded later (no request waits).
            // Queued: this thread must never wait for the tracer; the next
            // tracer user merges it, in order, before planning anything.
            AgentMessage::HooksUpdated(m) if m.id == 0 => {
                live.late_hooks
                    .lock()
                    .expect("late hooks lock")
                    .push(hook_outcome(&m));
            }
            answer @ (AgentMessage::PlansUpdated(_)
            | AgentMessage::ModuleBase(_)
            | AgentMessage::ExprsUpdated(_)
            | AgentMessage::Inherited(_)
            | AgentMessage::Flushed(_)
            | AgentMessage::SocketsWatched(_)
            | AgentMessage::PauseArmed(_)
            | AgentMessage::OwnThreads(_)
            | AgentMessage::RuntimeLoaded(_)
            | AgentMessage::ForksGuarded(_)
            | AgentMessage::OutputOwned(_)
            | AgentMessage::FdsClosed(_)
            | AgentMessage::HooksUpdated(_)
            | AgentMessage::BreakpointsUpdated(_)
            | AgentMessage::PythonMemory(_)) => {
                if let Some(id) = answer.reply_id()
                    && let Some(tx) = live.replies.lock().expect("replies lock").remove(&id)
                {
                    let _ = tx.send(answer);
                }
            }
            AgentMessage::Sampling(m) => {
                live.trace_stats
                    .lock()
                    .expect("stats lock")
                    .set_sampling(&m.changes);
            }
            AgentMessage::Modules(m) => {
                live.modules.lock().expect("modules lock").extend(m.paths);
            }
            AgentMessage::ModuleLoaded(m) => {
                if m.wait {
                    // Resolving may take a while: never in the event loop.
                    if let Some(me) = self.me.upgrade() {
                        let l = live.clone();
                        std::thread::spawn(move || me.on_library_loaded(&l, &m.path));
                    }
                } else {
                    live.modules.lock().expect("modules lock").push(m.path);
                }
            }
            AgentMessage::Paused(p) => {
                // Resolving the location needs the tracer: never in the event loop.
                if let Some(me) = self.me.upgrade() {
                    let l = live.clone();
                    std::thread::spawn(move || me.on_paused(&l, &p));
                }
            }
            AgentMessage::StepCall(c) => {
                if let Some(me) = self.me.upgrade() {
                    let l = live.clone();
                    std::thread::spawn(move || me.on_step_call(&l, &c));
                }
            }
            AgentMessage::Logpoint(m) => self.on_logpoint(live, &m),
            AgentMessage::BreakpointError(m) => self.on_breakpoint_error(live, &m),
            AgentMessage::StepFailed(m) => {
                tracing::warn!("session {}: step stops not set: {:?}", live.id, m.failed)
            }
            AgentMessage::PythonPaused(p) => {
                // Naming the function needs the tracer: never in the event loop.
                if let Some(me) = self.me.upgrade() {
                    let l = live.clone();
                    std::thread::spawn(move || me.on_python_paused(&l, &p));
                }
            }
            AgentMessage::LibraryWaitExpired(m) => {
                tracing::warn!(
                    "session {}: {} loaded before its hooks came (waited {} ms)",
                    live.id,
                    m.path,
                    m.waited_ms
                );
                live.trace_stats
                    .lock()
                    .expect("stats lock")
                    .add_late_library(m.path, m.waited_ms);
            }
            AgentMessage::PythonUncaught(m) => {
                live.life.lock().expect("lifecycle lock").python_uncaught =
                    Some((m.tid, m.payload));
            }
        }
    }

    /// Logs and counts a message that does not fit the protocol, and lets
    /// an agent thread that waits on it go on.
    fn on_rejected(
        &self,
        live: &Arc<Live>,
        text: &[u8],
        data: &[u8],
        rejected: protocol::Rejected,
    ) {
        // Counted per session: a followed child's count goes to its root.
        let root = live.root();
        let counter = &root.as_deref().unwrap_or(live).rejected_messages;
        tracing::warn!("{}", counter.record(&live.id, live.pid, text, &rejected));
        if rejected.type_name.as_deref() == Some("trace") && !data.is_empty() {
            // The records of a trace chunk whose header does not fit are
            // not read (nothing vouches for them), but they are counted
            // as dropped: one per record slot, the most they can be.
            let slots = (data.len() / trace::RECORD_SIZE) as u64;
            let _ = self.store.record_dropped(live.key, slots);
        }
        if let Some(release) = rejected.release {
            let _ = live.post(&release);
        }
    }

    /// `_exit` was called with `code`; the exiting thread waits for the ack.
    fn on_exit(&self, live: &Arc<Live>, code: i32) {
        live.life.lock().expect("lifecycle lock").exit_code = Some(code);
        if let Some(root) = live.root() {
            // A followed process: its exit is its own event, and an
            // exec'd image of the session's main pid ends the session.
            if root.pid == live.pid {
                root.life.lock().expect("lifecycle lock").exit_code = Some(code);
            } else {
                let _ = self.store.flush();
                let _ = live.post(&DaemonMessage::ExitAck);
                return;
            }
        }
        let _ = self.store.update_session(
            live.key,
            SessionUpdate {
                exit_code: Some(code),
                ..Default::default()
            },
        );
        let _ = self.store.flush();
        let _ = live.post(&DaemonMessage::ExitAck);
    }

    /// A chunk of trace records: decoded, stored, acknowledged.
    fn on_trace(&self, live: &Live, data: &[u8]) {
        self.store_records(live, data);
        // Flow control: the agent keeps a bounded number of chunks in flight.
        let _ = live.post(&DaemonMessage::TraceAck { tracer: None });
    }

    /// Decodes and stores trace records (a message's chunk, or slots read
    /// from a shared ring), with the functions and threads they name.
    pub(super) fn store_records(&self, live: &Live, data: &[u8]) {
        let mut batch = self.store.batch(data.len() / trace::RECORD_SIZE, 0);
        let decoded = {
            let decoders = live.decoders.read().expect("decoders lock");
            trace::decode_records(data, live.origin_ns, live.pid, Some(&decoders), &mut batch)
        };
        // Functions the Python tracer matched at run time, named before
        // the events that carry their ids are stored.
        if decoded.side_records {
            let defined = trace::defined_functions(data);
            if !defined.is_empty() {
                let _ = self.store.register_functions(live.key, defined);
            }
        }
        self.name_new_threads(live, &batch);
        // Names a runtime gave its threads (Python's threading) win over the OS's.
        if decoded.side_records {
            let named = trace::thread_names(data);
            if !named.is_empty() {
                let _ = self.store.register_threads(live.key, live.pid, named);
            }
        }
        let _ = self.store.append(live.key, batch);
    }

    /// Records the names of threads seen for the first time (from /proc, so
    /// the target is not disturbed).
    fn name_new_threads(&self, live: &Live, batch: &EventBatch) {
        let mut known = live.known_threads.lock().expect("threads lock");
        let mut named = Vec::new();
        let mut last = 0;
        for h in &batch.headers {
            // Runs of one thread's records: one set lookup per run.
            if h.tid == last {
                continue;
            }
            last = h.tid;
            if h.tid != 0 && known.insert(h.tid) {
                let comm =
                    std::fs::read_to_string(format!("/proc/{}/task/{}/comm", live.pid, h.tid));
                if let Ok(name) = comm {
                    named.push((h.tid, name.trim_end().to_string()));
                }
            }
        }
        if !named.is_empty() {
            let _ = self.store.register_threads(live.key, live.pid, named);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejected_message_is_counted_and_logged_with_its_session() {
        let rejected = RejectedMessages::default();
        // An exit without a code: never recorded as exit code 0.
        let text = br#"{"type":"send","payload":{"type":"exit","pid":7}}"#;
        let why = protocol::decode(text).expect_err("no code");
        let line = rejected.record("app-2026-01-01-00-00-00-abcd", 7, text, &why);
        assert!(
            line.starts_with(
                "session app-2026-01-01-00-00-00-abcd (pid 7): agent message rejected (1 so far)"
            ),
            "{line}"
        );
        assert!(line.contains("missing field `code`"), "{line}");
        assert!(
            line.ends_with(r#"message: {"type":"send","payload":{"type":"exit","pid":7}}"#),
            "{line}"
        );
        assert_eq!(rejected.count(), 1);

        let long = format!(
            r#"{{"type":"send","payload":{{"type":"nonsense","padding":"{}"}}}}"#,
            "x".repeat(1000)
        );
        let why = protocol::decode(long.as_bytes()).expect_err("unknown type");
        let line = rejected.record("s", 8, long.as_bytes(), &why);
        assert!(
            line.contains("(2 so far)") && line.contains("\"nonsense\""),
            "{line}"
        );
        assert!(
            line.ends_with("xx…"),
            "only the start of a long message is logged: {line}"
        );
        assert_eq!(rejected.count(), 2);
    }
}
