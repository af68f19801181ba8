//! A session's life after launch: its event thread, the events it stores,
//! how it ends (exit, crash, a kill from outside, a failed or hung bridge),
//! the watchdog, and stop and delete.

use super::*;

impl SessionManager {
    pub(super) fn event_loop(
        &self,
        live: &Arc<Live>,
        events: crossbeam_channel::Receiver<BridgeEvent>,
    ) {
        while let Ok(ev) = events.recv() {
            match ev {
                BridgeEvent::AgentMessage { pid, text, data } => {
                    let image = self.image(live, pid);
                    self.on_agent_message(&image, &text, &data)
                }
                BridgeEvent::Detached { pid, reason, crash } => {
                    self.on_detached(live, pid, &reason, crash)
                }
                BridgeEvent::Child {
                    pid,
                    parent_pid,
                    origin,
                    path,
                    ..
                } => {
                    // Adopting waits on the bridge and the new agent: never
                    // in the event loop.
                    if let Some(me) = self.me.upgrade() {
                        let l = live.clone();
                        std::thread::spawn(move || {
                            me.follow_child(&l, pid, parent_pid, &origin, path.as_deref())
                        });
                    }
                }
                BridgeEvent::Gone { reason } => {
                    if !live.life.lock().expect("lifecycle lock").ended {
                        self.fail_session(live, format!("the Frida bridge died: {reason}"));
                    }
                    break;
                }
            }
        }
    }

    pub(super) fn now_ts(live: &Live) -> u64 {
        monotonic_ns().saturating_sub(live.origin_ns)
    }

    /// Records a structured event (crash, process exit) stamped now.
    pub(super) fn append_json_event(
        &self,
        live: &Live,
        kind: EventKind,
        pid: u32,
        tid: u32,
        doc: &Value,
    ) {
        self.append_json_event_at(live, kind, Self::now_ts(live), pid, tid, doc);
    }

    /// Records a structured event at session time `ts_ns`.
    pub(super) fn append_json_event_at(
        &self,
        live: &Live,
        kind: EventKind,
        ts_ns: u64,
        pid: u32,
        tid: u32,
        doc: &Value,
    ) {
        let mut batch = EventBatch::default();
        batch.push(
            EventHeader {
                ts_ns,
                kind: kind as u8,
                flags: FLAG_JSON,
                pid,
                tid,
                ..Default::default()
            },
            doc.to_string().as_bytes(),
        );
        let _ = self.store.append(live.key, batch);
    }

    /// The target is gone: drain its output, then record how it ended.
    pub(super) fn finalize(&self, live: &Arc<Live>, frida_reason: &str, crash: Option<Value>) {
        // Followed children still running hold the output pipes open: their
        // output keeps being recorded until the last of them ends.
        if self.running_children(live).is_empty()
            && let Some(c) = live.capture.lock().expect("capture lock").take()
        {
            c.finish(OUTPUT_GRACE);
        }
        self.postmortem_crash(live);
        let ended = self.how_it_ended(live);
        let mut life = live.life.lock().expect("lifecycle lock");
        if life.ended {
            return;
        }
        let mut killed = ended_by_signal(&mut life, ended);
        if let Some(sig) = killed.filter(|&sig| is_fault(sig))
            && !life.crash_seen
            && !life.stopping
        {
            // A fault signal no exception handler reported: not "from
            // outside" (the program's own faults are reported).
            drop(life);
            self.unreported_fault(live, sig);
            life = live.life.lock().expect("lifecycle lock");
            if life.ended {
                return;
            }
            killed = None;
        }
        let (state, reason) = if life.crash_seen {
            (SessionState::Crashed, life.crash_summary.clone())
        } else if let Some(code) = life.exit_code {
            (
                SessionState::Exited,
                if life.stopping {
                    Some(format!("exited with {code} while being stopped"))
                } else {
                    None
                },
            )
        } else if life.stopping && live.origin == processes::Origin::Attach {
            (
                SessionState::Stopped,
                Some(
                    "detached by debug_session stop; the process keeps running, its hooks and breakpoints removed"
                        .to_string(),
                ),
            )
        } else if life.stopping {
            (
                SessionState::Stopped,
                Some("killed by debug_session stop".to_string()),
            )
        } else if let Some(sig) = killed {
            (
                SessionState::Exited,
                Some(format!(
                    "killed by {} (signal {sig}), sent from outside Strobe",
                    crate::exit_watch::signal_name(sig)
                )),
            )
        } else {
            (
                SessionState::Exited,
                Some(format!(
                    "the process ended without going through libc's _exit ({frida_reason}): either a raw \
                     exit_group system call (sanitizers such as ASan exit this way, usually with code 1; \
                     check stderr) or a signal from outside such as SIGKILL; the exit code is unknown{}",
                    crash
                        .as_ref()
                        .map(|c| format!("; Frida crash report: {c}"))
                        .unwrap_or_default()
                )),
            )
        };
        life.state = Some(state);
        life.reason = reason.clone();
        life.ended = true;
        life.ended_at = Some(unix_millis());
        let info = json!({
            "state": state.as_str(), "exitCode": life.exit_code, "signal": life.signal, "reason": reason,
        });
        self.append_json_event(live, EventKind::ProcessExit, live.pid, 0, &info);
        let _ = self.store.update_session(
            live.key,
            SessionUpdate {
                status: Some(state.as_str().into()),
                ended_at: life.ended_at,
                end_reason: reason,
                ..Default::default()
            },
        );
        let _ = self.store.flush();
        drop(life);
        if live.root.is_none() && self.running_children(live).is_empty() {
            Self::release_display(live);
            // Its channels go with it (a private JACK server too); what
            // they recorded stays queryable.
            Self::close_channels(live);
        }
        live.ended.notify_all();
        live.debug_changed.notify_all();
        // Query waiters learn that no more events will come.
        live.stats.commits.ring();
    }

    /// Stops the session's virtual display, if it has one (only the root
    /// holds it): its program is gone, nothing is left to show on it. While
    /// followed children still run the root's end keeps it; `stop` always
    /// releases it.
    pub(super) fn release_display(live: &Live) {
        let vd = live.ui.lock().expect("ui lock").virtual_display.take();
        drop(vd);
    }

    /// How `live`'s process ended, read from the kernel when neither the
    /// agent (`_exit`, a crash) nor a stop said it: a signal from outside or
    /// a raw `exit_group`. Waits briefly, since Frida may not have reaped it.
    pub(super) fn how_it_ended(&self, live: &Live) -> Option<crate::exit_watch::Ended> {
        // Asked once, at the end: the descriptor goes whatever the answer.
        let watch = live.exit_watch.lock().expect("exit watch lock").take();
        let known = {
            let life = live.life.lock().expect("lifecycle lock");
            life.ended || life.stopping || life.exit_code.is_some() || life.signal.is_some()
        };
        if known {
            return None;
        }
        watch?.wait_ended(Duration::from_millis(250))
    }

    pub(super) fn fail_session(&self, live: &Arc<Live>, reason: String) {
        // Claim the end first: the first reported cause (a hung bridge, say)
        // is the one kept, not the consequences of cleaning it up.
        {
            let mut life = live.life.lock().expect("lifecycle lock");
            if life.ended {
                return;
            }
            life.state = Some(SessionState::Failed);
            life.reason = Some(reason.clone());
            life.ended = true;
            life.ended_at = Some(unix_millis());
            let _ = self.store.update_session(
                live.key,
                SessionUpdate {
                    status: Some("failed".into()),
                    ended_at: life.ended_at,
                    end_reason: Some(reason.clone()),
                    ..Default::default()
                },
            );
        }
        tracing::warn!("session {} failed: {reason}", live.id);
        // The bridge is dead or hung: the target it launched must not run on
        // unobserved. Only signal it while it is provably the same process
        // (same pid and start time), never a recycled pid.
        // An attached process was not started here: it is only detached from.
        if live.origin == processes::Origin::Launch
            && live.start_time.is_some()
            && proc_start_time(live.pid) == live.start_time
        {
            // SAFETY: plain kill(2) of the process Strobe launched.
            unsafe { libc::kill(live.pid as i32, libc::SIGKILL) };
        }
        live.bridge.terminate();
        // The rings outlive the bridge: what they hold is still stored.
        Self::finish_ring(live);
        for child in self.running_children(live) {
            Self::finish_ring(&child);
        }
        if let Some(c) = live.capture.lock().expect("capture lock").take() {
            c.finish(OUTPUT_GRACE);
        }
        let _ = self.store.flush();
        Self::release_display(live);
        live.ended.notify_all();
        live.debug_changed.notify_all();
        // Query waiters learn that no more events will come.
        live.stats.commits.ring();
    }

    pub(super) fn watchdog(&self, live: &Arc<Live>, timeout: Duration) {
        loop {
            {
                let life = live.life.lock().expect("lifecycle lock");
                let (life, _) = live
                    .ended
                    .wait_timeout(life, WATCHDOG_PERIOD)
                    .expect("lifecycle lock");
                if life.ended {
                    return;
                }
            }
            match live.bridge.request("ping", json!({}), timeout) {
                Ok(_) => {}
                Err(BridgeError::Timeout { .. }) => {
                    self.fail_session(
                        live,
                        format!(
                            "the Frida bridge stopped answering (no reply to a ping within {} ms)",
                            timeout.as_millis()
                        ),
                    );
                    return;
                }
                // A gone bridge is reported through the event loop.
                Err(_) => return,
            }
        }
    }

    /// Stops a session: kills the target Strobe launched, then keeps the data
    /// (`retain`) or deletes it.
    pub fn stop(&self, id: &str, retain: bool) -> Result<StopResponse, SessionError> {
        let Some(live) = self.live(id) else {
            let row = self
                .store
                .session(id)
                .map_err(store_err)?
                .ok_or_else(|| SessionError::session_not_found(id))?;
            let collected = row.event_count + row.evicted;
            let state = SessionState::parse(&row.status);
            if !retain {
                self.store.delete_session(row.key).map_err(store_err)?;
            }
            return Ok(StopResponse {
                success: true,
                events_collected: collected,
                retained: retain,
                state,
            });
        };
        let already_ended = {
            let mut life = live.life.lock().expect("lifecycle lock");
            life.stopping = true;
            life.ended
        };
        if !already_ended {
            self.release_paused(&live);
            if let Err(e) = live
                .bridge
                .request("kill", json!({}), Duration::from_secs(3))
            {
                self.fail_session(
                    &live,
                    format!("stopped, but the bridge could not kill the target cleanly: {e}"),
                );
            }
            let life = live.life.lock().expect("lifecycle lock");
            let (life, _) = live
                .ended
                .wait_timeout_while(life, STOP_WAIT, |l| !l.ended)
                .expect("lifecycle lock");
            let ended = life.ended;
            drop(life);
            if !ended {
                self.fail_session(
                    &live,
                    "the target did not end within 5 s of being killed".into(),
                );
            }
        }
        live.bridge.terminate();
        if live.origin == processes::Origin::Attach {
            // Frida may still be freeing its agent in the process under
            // ptrace: the process is left alone only once that is done,
            // so an attach right after this one finds it free.
            let _ = crate::procfs::wait_untraced(live.pid, STOP_WAIT);
        }
        if let Some(c) = live.capture.lock().expect("capture lock").take() {
            c.finish(OUTPUT_GRACE);
        }
        Self::release_display(&live);
        Self::close_channels(&live);
        self.store.flush().map_err(store_err)?;
        let collected = SessionStats::get(&live.stats.received);
        let state = live.state();
        self.live.lock().expect("live lock").remove(id);
        if retain {
            self.store
                .update_session(
                    live.key,
                    SessionUpdate {
                        retained: Some(true),
                        ..Default::default()
                    },
                )
                .map_err(store_err)?;
            self.store.flush().map_err(store_err)?;
        } else {
            self.store.delete_session(live.key).map_err(store_err)?;
        }
        Ok(StopResponse {
            success: true,
            events_collected: collected,
            retained: retain,
            state,
        })
    }

    /// Deletes a retained session.
    pub fn delete(&self, id: &str) -> Result<(), SessionError> {
        if self.live(id).is_some() {
            return Err(SessionError::validation(format!(
                "session '{id}' is live; stop it first with debug_session {{action: \"stop\", sessionId: \"{id}\"}} (without retain it is deleted then)"
            )));
        }
        let row = self
            .store
            .session(id)
            .map_err(store_err)?
            .ok_or_else(|| SessionError::session_not_found(id))?;
        self.captures.lock().expect("captures lock").remove(id);
        self.store.delete_session(row.key).map_err(store_err)
    }
}

/// Start time of `pid` (clock ticks since boot, /proc/PID/stat field 22):
/// with the pid, it identifies a process uniquely.
pub(super) fn proc_start_time(pid: u32) -> Option<u64> {
    crate::procfs::Stat::of(pid)?.start_time()
}

/// Records in `life` an end the kernel reported ([`SessionManager::how_it_ended`]):
/// an exit code, or the signal that killed the process, which it returns.
/// Signals a process raises itself by faulting, as opposed to one sent by
/// another process (SIGABRT is left out: abort() is reported by its hook,
/// and an unreported one was most likely sent).
fn is_fault(sig: i32) -> bool {
    [
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
        libc::SIGTRAP,
        libc::SIGSYS,
    ]
    .contains(&sig)
}

impl SessionManager {
    /// The process died of a fault signal and no crash report came: the
    /// agent's exception handler reports every fault it is called for, so
    /// none could run. On a thread without a signal stack, a stack overflow
    /// leaves the handler no stack to run on; the agent gives one to the
    /// main thread of a launched program and to every thread pthread_create
    /// starts, so the rest are threads already running when Strobe attached
    /// or started another way, and faults in Strobe's own code. Recorded as
    /// a crash that says so, with the process's last events, never as a
    /// signal "sent from outside Strobe".
    fn unreported_fault(&self, live: &Live, sig: i32) {
        let name = crate::exit_watch::signal_name(sig);
        let headline = format!(
            "died of {name} (signal {sig}) with no crash report: no handler could run for the \
             fault. Most likely a stack overflow in a thread Strobe could not give a signal stack \
             (one running before Strobe attached, or not started by pthread_create): look for deep \
             recursion in the last calls (debug_query {{eventType: \"function_enter\"}}). \
             Otherwise a fault in Strobe's own code in the process: please report it with the \
             daemon log ({})",
            self.home().logs_dir().join("daemon.log").display()
        );
        let event = json!({
            "type": "crash",
            "pid": live.pid,
            "signal": name,
            "kind": "unreported",
            "reason": headline,
            "backtrace": null,
            "precedingEvents": self.preceding_events(live, live.pid),
        });
        self.append_json_event(live, EventKind::Crash, live.pid, 0, &event);
        let mut life = live.life.lock().expect("lifecycle lock");
        life.crash_seen = true;
        life.crash_summary = Some(headline);
    }
}

pub(super) fn ended_by_signal(
    life: &mut Lifecycle,
    ended: Option<crate::exit_watch::Ended>,
) -> Option<i32> {
    match ended? {
        crate::exit_watch::Ended::Code(code) => {
            life.exit_code = Some(code);
            None
        }
        crate::exit_watch::Ended::Signal(sig) => {
            life.signal = Some(crate::exit_watch::signal_name(sig));
            Some(sig)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_fault;

    #[test]
    fn fault_signals_are_told_from_signals_another_process_sends() {
        for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE] {
            assert!(is_fault(sig), "{sig}");
        }
        for sig in [libc::SIGKILL, libc::SIGTERM, libc::SIGINT, libc::SIGABRT] {
            assert!(!is_fault(sig), "{sig}");
        }
    }
}
