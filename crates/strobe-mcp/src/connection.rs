//! Sessions whose life is tied to the MCP connection that launched them
//! (`debug_launch {endWithConnection: true}`, which `strobe dap` sends):
//! when the connection closes, however its client ended (a disconnect, a
//! crash, `kill -9`), what those sessions still run is stopped. An editor's
//! adapter that dies must not leave its programs running, paused or not.

use std::sync::{Arc, Mutex};
use strobe_session::{SessionManager, SessionState};

/// One connection's tied sessions; shared by every clone of the
/// connection's server, and acted on when the last clone is dropped (the
/// connection has closed and its calls have returned).
pub(crate) struct TiedSessions {
    mgr: Arc<SessionManager>,
    ids: Mutex<Vec<String>>,
}

impl TiedSessions {
    /// None yet, for a connection on `mgr`.
    pub(crate) fn new(mgr: Arc<SessionManager>) -> Self {
        TiedSessions {
            mgr,
            ids: Mutex::default(),
        }
    }

    /// Ties session `id` to this connection.
    pub(crate) fn tie(&self, id: String) {
        self.ids.lock().expect("tied sessions lock").push(id);
    }
}

impl Drop for TiedSessions {
    fn drop(&mut self) {
        let ids = std::mem::take(&mut *self.ids.lock().expect("tied sessions lock"));
        if ids.is_empty() {
            return;
        }
        let mgr = self.mgr.clone();
        // Stopping waits for the target's end (seconds at worst): not on
        // the runtime's thread that dropped the connection.
        std::thread::spawn(move || {
            for id in ids {
                // One that ended already, or that the client stopped, is
                // left as it is: like a disconnect, only what runs is ended.
                let live = mgr.status(&id).is_ok_and(|s| {
                    matches!(s.state, SessionState::Running | SessionState::Starting)
                });
                if live {
                    match mgr.stop(&id, false) {
                        Ok(_) => tracing::info!(
                            "session {id} stopped: the connection that launched it closed"
                        ),
                        Err(e) => tracing::warn!(
                            "session {id}: its connection closed, but stopping it failed: {e}"
                        ),
                    }
                }
            }
        });
    }
}
