//! Settings for a session that already runs: re-read from disk with its
//! project's file applied, so an edited `.strobe/settings.json` takes effect
//! on the next call, not the next launch.

use crate::SessionError;
use crate::manager::SessionManager;
use crate::trace::{TraceOptions, TraceResponse};
use std::path::Path;
use strobe_core::Settings;

impl SessionManager {
    /// The settings for session `id` (its project's file applied, if the
    /// session is known), handed to the session; with their warnings.
    pub fn session_settings(&self, id: &str) -> (Settings, Vec<String>) {
        let root = self.status(id).ok().map(|s| s.project_root);
        let (s, w) = Settings::load(&self.home().settings_file(), root.as_deref().map(Path::new));
        self.apply_settings(id, &s);
        (s, w.into_iter().map(|w| w.to_string()).collect())
    }

    /// Adds and removes trace patterns on a live session, as `debug_trace`
    /// with `sessionId` does (the session's project settings apply), for
    /// callers beside MCP (the web UI).
    pub fn trace_live(
        &self,
        session_id: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<TraceResponse, SessionError> {
        self.status(session_id)?;
        let (settings, warnings) = self.session_settings(session_id);
        let mut resp = self.trace(
            Some(session_id),
            add,
            remove,
            &TraceOptions::default(),
            &settings,
        )?;
        resp.warnings.extend(warnings);
        Ok(resp)
    }
}
