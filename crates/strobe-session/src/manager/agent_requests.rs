//! Requests to a session's agent that wait for its answer, and what a
//! wait says when the process is stopped by a signal.

use super::{Live, SessionManager};
use crate::SessionError;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;
use strobe_frida::agent_protocol::{AgentMessage, DaemonMessage, ModuleBaseAnswer};

/// How often a wait for the agent checks whether the process was stopped.
const STOP_CHECK: Duration = Duration::from_millis(250);

/// What a request to a stopped process's agent answers.
fn stopped_error(live: &Live, while_waiting: bool) -> SessionError {
    let what = if while_waiting {
        "was stopped while Strobe waited for its agent; the request may take effect when it continues, \
         so check debug_session status before retrying"
    } else {
        "is stopped, so its agent cannot act (nothing was changed)"
    };
    SessionError::stopped(format!(
        "process {} of session '{}' {what}: it was stopped by a signal (SIGSTOP, SIGTSTP, …) or a debugger; \
             continue it with `kill -CONT {}` and retry",
        live.pid, live.id, live.pid
    ))
}

impl SessionManager {
    /// Sends a request (built around its id) to a session's agent and waits
    /// for its answer, of the kind `A` that answers it.
    pub(super) fn agent_request<A>(
        &self,
        live: &Live,
        request: impl FnOnce(u64) -> DaemonMessage,
        timeout: Duration,
    ) -> Result<A, SessionError>
    where
        A: TryFrom<AgentMessage, Error = AgentMessage>,
    {
        // A stopped process runs none of its threads, the agent's included:
        // say so now rather than after the request timeout, and send nothing,
        // so nothing takes effect behind the caller's back once it continues.
        if crate::procfs::all_threads_stopped(live.pid) {
            return Err(stopped_error(live, false));
        }
        // Not while the process forks; counted until answered or given up.
        let _in_flight = live.fork_gate.request();
        let id = live.next_request.fetch_add(1, Ordering::Relaxed);
        let msg = request(id);
        let (tx, rx) = crossbeam_channel::bounded(1);
        live.replies.lock().expect("replies lock").insert(id, tx);
        let sent = live.post(&msg);
        let mut answer = None;
        let mut stopped = false;
        if sent.is_ok() {
            let deadline = std::time::Instant::now() + timeout;
            while answer.is_none() {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                match rx.recv_timeout(left.min(STOP_CHECK)) {
                    Ok(v) => answer = Some(v),
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                        // Frida detached (the process ended or exec'd): no
                        // answer will come.
                        if live.gone.load(Ordering::SeqCst) {
                            break;
                        }
                        if crate::procfs::all_threads_stopped(live.pid) {
                            stopped = true;
                            break;
                        }
                    }
                }
            }
        }
        live.replies.lock().expect("replies lock").remove(&id);
        if stopped {
            return Err(stopped_error(live, true));
        }
        let answer = answer.ok_or_else(|| {
            if live.life.lock().expect("lifecycle lock").ended || live.gone.load(Ordering::SeqCst) {
                return SessionError::exited(format!(
                    "process {} of session '{}' ended before its agent could answer; its events can still be queried",
                    live.pid, live.id
                ));
            }
            SessionError::attach(format!(
                    "the agent in session {} did not answer within {} ms (the process may have exited or be stopped)",
                    live.id,
                    timeout.as_millis()
                ),
            )
        })?;
        A::try_from(answer).map_err(|other| {
            SessionError::internal(format!(
                "the agent in session {} answered a '{}' request with a '{}' message",
                live.id,
                msg.type_name(),
                other.type_name()
            ))
        })
    }

    /// Where image `path` is loaded in the session's process:
    /// /proc/PID/maps first (no round trip); the agent knows too, and answers
    /// when the daemon may not read the target's maps.
    pub(super) fn image_base(&self, live: &Live, path: &Path, timeout: Duration) -> Option<u64> {
        crate::images::module_base(live.pid, path).or_else(|| {
            let path = path.to_string_lossy().into_owned();
            let r: ModuleBaseAnswer = self
                .agent_request(live, |id| DaemonMessage::ModuleBase { id, path }, timeout)
                .ok()?;
            r.base.map(|b| b.0)
        })
    }
}
