//! What the scenario runner (strobe-scenario) needs of a session: its
//! clock, a point where everything the program did so far is stored, and
//! its `scenario_step` events.

use super::*;
use strobe_frida::agent_protocol::Flushed;

/// How long a settle waits for each process's agent.
const SETTLE_WAIT: Duration = Duration::from_secs(2);

impl SessionManager {
    /// The session's clock now (ns since it started), which event
    /// timestamps and `timeFrom` use.
    pub fn session_now_ns(&self, id: &str) -> Result<u64, SessionError> {
        let live = self
            .live(id)
            .ok_or_else(|| SessionError::session_not_found(id))?;
        Ok(Self::now_ts(&live))
    }

    /// The session's project root, while it is live.
    pub fn project_root_of(&self, id: &str) -> Option<std::path::PathBuf> {
        self.live(id).map(|l| l.project_root.clone().into())
    }

    /// Makes everything the program did so far queryable: each process's
    /// agent ships the calls it holds (answering once sent, so they are
    /// appended before its answer is read), then the store commits.
    /// Returns what could not be settled (a stopped or ended process).
    pub fn settle(&self, id: &str) -> Result<Vec<String>, SessionError> {
        let live = self
            .live(id)
            .ok_or_else(|| SessionError::session_not_found(id))?;
        let mut warnings = Vec::new();
        let ended = live.life.lock().expect("lifecycle lock").ended;
        if !ended {
            let mut procs = vec![live.clone()];
            procs.extend(self.running_children(&live));
            for p in procs {
                if p.gone.load(std::sync::atomic::Ordering::SeqCst) {
                    continue;
                }
                let r: Result<Flushed, SessionError> =
                    self.agent_request(&p, |id| DaemonMessage::Flush { id }, SETTLE_WAIT);
                if let Err(e) = r {
                    warnings.push(format!(
                        "process {}'s latest calls may not be stored yet: {}",
                        p.pid,
                        e.message()
                    ));
                }
            }
        }
        self.store.flush().map_err(store_err)?;
        Ok(warnings)
    }

    /// Records one scenario step (`doc` holds its number, text, outcome and
    /// `summary`) on the session's timeline.
    pub fn record_scenario_step(&self, id: &str, doc: &Value) -> Result<(), SessionError> {
        let live = self
            .live(id)
            .ok_or_else(|| SessionError::session_not_found(id))?;
        self.append_json_event(&live, EventKind::ScenarioStep, live.pid, 0, doc);
        Ok(())
    }
}
