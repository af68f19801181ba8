//! What a session is now (status, list, trace summary) and reads of its
//! stored events, functions and threads through the store.

use super::*;

impl SessionManager {
    pub(super) fn status_of_live(&self, l: &Live) -> SessionStatus {
        let dbg = {
            let st = l.debug.lock().expect("debug lock");
            st.summary()
        };
        let processes = self.processes(l);
        let life = l.life.lock().expect("lifecycle lock");
        let row = self.store.session(&l.id).ok().flatten();
        let state = life.state.unwrap_or(SessionState::Starting);
        let stopped = (state == SessionState::Running && crate::procfs::all_threads_stopped(l.pid)).then(|| {
            format!(
                "stopped by a signal (SIGSTOP, SIGTSTP, …) or a debugger: it runs nothing, and tracing, \
                 breakpoints and stepping wait, until `kill -CONT {}`",
                l.pid
            )
        });
        SessionStatus {
            session_id: l.id.clone(),
            pid: Some(l.pid),
            state,
            stopped,
            exit_code: life.exit_code,
            signal: life.signal.clone(),
            reason: life.reason.clone(),
            binary_path: l.binary_path.clone(),
            project_root: l.project_root.clone(),
            started_at: l.started_at,
            ended_at: life.ended_at,
            events: EventCounts {
                stored: SessionStats::get(&l.stats.stored),
                evicted: SessionStats::get(&l.stats.evicted),
                evicted_output: SessionStats::get(&l.stats.evicted_output),
                dropped: SessionStats::get(&l.stats.dropped),
            },
            rejected_agent_messages: l.rejected_messages.count(),
            retained: false,
            live: true,
            pids: row.map(|r| r.pids).unwrap_or_else(|| vec![l.pid]),
            trace: Self::trace_summary(l),
            breakpoints: dbg.0,
            paused_threads: dbg.1,
            processes,
            threads: Vec::new(),
            threads_omitted: 0,
            threads_note: None,
        }
    }

    /// The tracer's state, unless it is busy with a debug_trace call right now.
    pub(super) fn trace_summary(l: &Live) -> Option<TraceSummary> {
        let guard = l.tracer.try_lock().ok()?;
        let t = guard.as_ref()?;
        let stats = l.trace_stats.lock().expect("stats lock");
        Some(TraceSummary {
            active_patterns: t.patterns(),
            hooked_functions: t.hooked_count(),
            sampled_functions: t.sampled(&stats),
            dropped_events: t.drops(&stats),
            late_libraries: stats.late_libraries().to_vec(),
            delivery: l.ring.lock().expect("ring lock").delivery(),
            slow_hook: l.slow_hook.lock().expect("slow hook lock").clone(),
        })
    }

    pub(super) fn status_of_row(row: strobe_store::SessionRow) -> SessionStatus {
        SessionStatus {
            session_id: row.session_id,
            pid: row.pid,
            state: SessionState::parse(&row.status),
            stopped: None,
            exit_code: row.exit_code,
            signal: row.exit_signal,
            reason: row.end_reason,
            binary_path: row.binary_path,
            project_root: row.project_root,
            started_at: row.started_at,
            ended_at: row.ended_at,
            events: EventCounts {
                stored: row.event_count,
                evicted: row.evicted,
                evicted_output: row.evicted_output,
                dropped: row.dropped,
            },
            rejected_agent_messages: 0,
            retained: row.retained,
            live: false,
            pids: row.pids,
            trace: None,
            breakpoints: Vec::new(),
            paused_threads: Vec::new(),
            processes: Vec::new(),
            threads: Vec::new(),
            threads_omitted: 0,
            threads_note: None,
        }
    }

    /// Status of a live or retained session.
    pub fn status(&self, id: &str) -> Result<SessionStatus, SessionError> {
        if let Some(l) = self.live(id) {
            let _ = self.store.flush();
            return Ok(self.status_of_live(&l));
        }
        match self.store.session(id).map_err(store_err)? {
            Some(row) => Ok(Self::status_of_row(row)),
            None => Err(SessionError::session_not_found(id)),
        }
    }

    /// [`SessionManager::status`] with a live session's thread list, which
    /// costs a look at `/proc` and, when threads started since the last
    /// look, a question to the agent: for the status an agent or editor
    /// asks for, not for the many made inside the daemon.
    pub fn status_with_threads(&self, id: &str) -> Result<SessionStatus, SessionError> {
        let mut status = self.status(id)?;
        if let Some(l) = self.live(id) {
            let list = self.live_threads(&l);
            status.threads = list.threads;
            status.threads_omitted = list.omitted;
            status.threads_note = list.note;
        }
        Ok(status)
    }

    /// Every live and retained session, oldest first.
    pub fn list(&self) -> Result<Vec<SessionStatus>, SessionError> {
        let _ = self.store.flush();
        let rows = self.store.sessions().map_err(store_err)?;
        Ok(rows
            .into_iter()
            .map(|row| match self.live(&row.session_id) {
                Some(l) => self.status_of_live(&l),
                None => Self::status_of_row(row),
            })
            .collect())
    }

    /// The capture plans of a session (typed values of its events): those
    /// in memory, else those stored with it (a session an earlier daemon
    /// recorded), loaded once.
    pub fn captures(&self, id: &str) -> Option<Arc<std::sync::RwLock<trace::Decoders>>> {
        if let Some(c) = self.captures.lock().expect("captures lock").get(id) {
            return Some(c.clone());
        }
        let key = self.store.session(id).ok()??.key;
        let blobs = match self.store.captures(key) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!("reading the capture plans of {id}: {e}");
                return None;
            }
        };
        let decoders = trace::decoders_from_blobs(&blobs);
        if decoders.is_empty() {
            return None;
        }
        let shared = Arc::new(std::sync::RwLock::new(decoders));
        self.captures
            .lock()
            .expect("captures lock")
            .insert(id.to_string(), shared.clone());
        Some(shared)
    }

    pub(super) fn key_of(&self, id: &str) -> Result<i64, SessionError> {
        match self.live(id) {
            Some(l) => Ok(l.key),
            None => Ok(self
                .store
                .session(id)
                .map_err(store_err)?
                .ok_or_else(|| SessionError::session_not_found(id))?
                .key),
        }
    }

    /// Runs a query over everything the session recorded so far.
    pub fn query(
        &self,
        id: &str,
        filter: &EventFilter,
        page: QueryPage,
    ) -> Result<QueryResult, SessionError> {
        let key = self.key_of(id)?;
        self.store.flush().map_err(store_err)?;
        self.store.query(key, filter, page).map_err(store_err)
    }

    /// Like [`SessionManager::query`], with the work on `totalCount`
    /// bounded as `counting` says.
    pub fn query_counting(
        &self,
        id: &str,
        filter: &EventFilter,
        page: QueryPage,
        counting: strobe_store::Counting,
    ) -> Result<QueryResult, SessionError> {
        let key = self.key_of(id)?;
        self.store.flush().map_err(store_err)?;
        self.store
            .query_counting(key, filter, page, counting)
            .map_err(store_err)
    }

    /// Names, files and lines of a session's functions by id (for rendering).
    pub fn function_rows(
        &self,
        id: &str,
        ids: &[u32],
    ) -> Result<Vec<strobe_store::FunctionRow>, SessionError> {
        let key = self.key_of(id)?;
        self.store.functions(key, ids).map_err(store_err)
    }

    /// Names of a session's threads by id (for rendering).
    pub fn thread_names(&self, id: &str, tids: &[u32]) -> Result<Vec<(u32, String)>, SessionError> {
        let key = self.key_of(id)?;
        self.store.thread_names(key, tids).map_err(store_err)
    }

    /// Function ids of a session matching `pred(name, raw name, file)`.
    pub fn function_ids(
        &self,
        id: &str,
        pred: impl Fn(&str, Option<&str>, Option<&str>) -> bool,
    ) -> Result<std::collections::HashSet<u32>, SessionError> {
        let key = self.key_of(id)?;
        self.store.function_ids(key, pred).map_err(store_err)
    }

    /// Thread ids of a session whose name matches `pred`.
    pub fn thread_ids(
        &self,
        id: &str,
        pred: impl Fn(&str) -> bool,
    ) -> Result<std::collections::HashSet<u32>, SessionError> {
        let key = self.key_of(id)?;
        self.store.thread_ids(key, pred).map_err(store_err)
    }

    /// Per-function statistics of a session (aggregate queries).
    pub fn aggregate_functions(
        &self,
        id: &str,
        filter: &EventFilter,
    ) -> Result<Vec<strobe_store::FunctionStats>, SessionError> {
        let key = self.key_of(id)?;
        self.store.flush().map_err(store_err)?;
        self.store
            .aggregate_functions(key, filter)
            .map_err(store_err)
    }

    /// Timestamp of the newest stored event of a session (0 if none); the
    /// reference point of relative times such as `"-5s"`.
    pub fn latest_ts(&self, id: &str) -> Result<u64, SessionError> {
        let key = self.key_of(id)?;
        self.store.flush().map_err(store_err)?;
        self.store.latest_ts(key).map_err(store_err)
    }
}
