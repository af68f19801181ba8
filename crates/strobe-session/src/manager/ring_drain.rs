//! Draining a target's record ring straight from shared memory. As it
//! creates its ring the agent offers the memfd behind it (`ring`); the
//! daemon maps it (trace/shared_ring.rs) and a thread per process takes the
//! committed records out, decodes and stores them exactly as it does a
//! chunk that came in a `trace` message, and gives the slots back. Records
//! no longer go through the agent's script, Frida's message channel or the
//! Python bridge: on two cores those hops took the core the store needs.
//!
//! Guarantees kept: back-pressure (the thread blocks on the store's bounded
//! queue, the ring fills, writers wait), drops counted (a corrupt ring's
//! slots, and at the end those reserved but never written), order (records
//! are released only once queued in the store, and the agent's exit, crash,
//! fork and flush wait for the ring to be empty before they are reported).
//! The mapping outlives the process: after an exit, a crash or a `kill -9`
//! the final pass reads everything that was committed.

use super::{Live, SessionManager};
use crate::trace::SharedRing;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use strobe_frida::agent_protocol::{DaemonMessage, RingOffer};

/// Most slots read (and stored as one batch) at a time: a `trace`
/// message's chunk.
const READ_SLOTS: u32 = 4096;
/// An empty ring is polled again after this, doubling up to IDLE_MAX while
/// it stays empty (the agent's own drain ran every 2 ms).
const IDLE_MIN: Duration = Duration::from_micros(50);
const IDLE_MAX: Duration = Duration::from_millis(1);

/// How a process's records reach the daemon.
#[derive(Default)]
pub(super) enum RingState {
    /// No ring offered (nothing traced yet, or an agent that cannot share it).
    #[default]
    NotOffered,
    /// This thread drains the shared ring.
    Draining {
        /// Set when the process is gone: one last pass, then the thread ends.
        stop: Arc<AtomicBool>,
        thread: std::thread::JoinHandle<()>,
    },
    /// The daemon drained it until the process ended.
    Finished,
    /// The offer was refused (why): records come in messages.
    Refused(String),
}

impl RingState {
    /// For `debug_session status`: how records are delivered, once known.
    pub(super) fn delivery(&self) -> Option<String> {
        match self {
            RingState::NotOffered => None,
            RingState::Draining { .. } | RingState::Finished => Some("shared memory".into()),
            RingState::Refused(why) => Some(format!("messages ({why})")),
        }
    }
}

impl SessionManager {
    /// The agent offers its ring: map it and drain it here, or say why not
    /// (the agent then ships it in messages).
    pub(super) fn on_ring_offer(&self, live: &Arc<Live>, offer: &RingOffer) {
        if let Some(why) = &offer.slow_hook {
            tracing::info!(
                "session {} (pid {}): traced calls take the hook's slow path: {why}",
                live.id,
                live.pid
            );
        }
        *live.slow_hook.lock().expect("slow hook lock") = offer.slow_hook.clone();
        let answer = match self.attach_ring(live, offer) {
            Ok(()) => DaemonMessage::RingAttached {
                ok: true,
                reason: None,
            },
            Err(reason) => {
                let mut state = live.ring.lock().expect("ring lock");
                if !matches!(*state, RingState::Draining { .. }) {
                    *state = RingState::Refused(reason.clone());
                }
                tracing::info!(
                    "session {} (pid {}): records come in messages: {reason}",
                    live.id,
                    live.pid
                );
                DaemonMessage::RingAttached {
                    ok: false,
                    reason: Some(reason),
                }
            }
        };
        let _ = live.post(&answer);
    }

    fn attach_ring(&self, live: &Arc<Live>, offer: &RingOffer) -> Result<(), String> {
        let enabled = live
            .root()
            .map_or(live.settings.shared_ring, |r| r.settings.shared_ring);
        if !enabled {
            return Err("trace.sharedRing is off".into());
        }
        let mut slot = live.ring.lock().expect("ring lock");
        if matches!(*slot, RingState::Draining { .. }) {
            return Err("this process's ring is drained already".into());
        }
        let ring = SharedRing::open(
            live.pid,
            offer.fd,
            offer.bytes,
            offer.stage_bytes,
            offer.stage_records,
        )
        .map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let (me, image, flag) = (self.me.clone(), live.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name(format!("ring-{}", live.pid))
            .spawn(move || drain(me, image, ring, flag))
            .map_err(|e| format!("no thread to drain it: {e}"))?;
        *slot = RingState::Draining { stop, thread };
        Ok(())
    }

    /// The process is gone, replaced by exec, or left: its drain takes what
    /// was committed and ends. Every end of a process calls this.
    pub(super) fn finish_ring(live: &Live) {
        let drain = {
            let mut state = live.ring.lock().expect("ring lock");
            if !matches!(*state, RingState::Draining { .. }) {
                return;
            }
            std::mem::replace(&mut *state, RingState::Finished)
        };
        if let RingState::Draining { stop, thread } = drain {
            stop.store(true, Ordering::Release);
            if thread.join().is_err() {
                tracing::error!("session {}: the ring drain panicked", live.id);
            }
        }
    }
}

/// The drain thread: reads, stores and releases until told to stop, then
/// takes what was reserved before the stop (never more: a process that
/// lives on, detached, must not keep the drain going) and counts what of it
/// was never written.
fn drain(me: Weak<SessionManager>, live: Arc<Live>, ring: SharedRing, stop: Arc<AtomicBool>) {
    let mut idle = IDLE_MIN;
    // The head when the stop was seen: the last pass ends there.
    let mut end: Option<u64> = None;
    loop {
        if end.is_none() && stop.load(Ordering::Acquire) {
            end = Some(ring.head());
        }
        let Some(manager) = me.upgrade() else { return };
        let limit = match end {
            Some(end) => end.saturating_sub(ring.tail()).min(u64::from(READ_SLOTS)) as u32,
            None => READ_SLOTS,
        };
        let read = if limit == 0 {
            Ok(0)
        } else {
            ring.committed(limit)
        };
        match read {
            Ok(0) => {}
            Ok(n) => {
                manager.store_records(&live, ring.records(n));
                ring.release(n);
                idle = IDLE_MIN;
                continue;
            }
            Err(e) => {
                let lost = ring.discard_reserved();
                tracing::warn!(
                    "session {} (pid {}): {e}: {lost} ring slots thrown away (counted as dropped)",
                    live.id,
                    live.pid
                );
                let _ = manager.store.record_dropped(live.key, lost);
                continue;
            }
        }
        if let Some(end) = end {
            let lost = end.saturating_sub(ring.tail());
            if lost > 0 {
                tracing::warn!(
                    "session {} (pid {}): {lost} ring slots reserved and never written \
                     (a thread died writing them); counted as dropped",
                    live.id,
                    live.pid
                );
                let _ = manager.store.record_dropped(live.key, lost);
            }
            // What threads staged and never moved into the ring (a crash,
            // an exec, a kill -9 between two of the agent's drains).
            let staged = ring.staged();
            if !staged.records.is_empty() {
                manager.store_records(&live, &staged.records);
            }
            if staged.unsure > 0 {
                tracing::warn!(
                    "session {} (pid {}): {} staged records were being moved into the ring \
                     when the process ended; counted as dropped",
                    live.id,
                    live.pid,
                    staged.unsure
                );
                let _ = manager.store.record_dropped(live.key, staged.unsure);
            }
            return;
        }
        drop(manager);
        std::thread::sleep(idle);
        idle = (idle * 2).min(IDLE_MAX);
    }
}
