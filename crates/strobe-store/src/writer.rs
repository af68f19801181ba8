//! The store handle and its single writer thread.

use crate::agent_calls::{self, AgentCall, AgentCallRow};
use crate::calltree::CallTree;
use crate::codec::{self, ChunkBuilder, ChunkSummary, MAX_CHUNK_EVENTS};
use crate::error::StoreError;
use crate::query::{self, EventFilter, QueryPage, QueryResult};
use crate::schema;
use crate::sessions::{
    self, CaptureBlob, EventCaps, FunctionRow, NewSession, SessionRow, SessionStats, SessionUpdate,
};
use crate::test_history::{self, TestBaseline, TestDurations};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};
use rusqlite::{Connection, params};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use strobe_core::event::EventBatch;

/// A partially filled chunk is committed at the latest this long after its
/// first event arrived, so output becomes queryable quickly even at low rates.
const PARTIAL_CHUNK_MAX_AGE: Duration = Duration::from_millis(10);
/// Longest a busy writer goes between commits.
const COMMIT_INTERVAL: Duration = Duration::from_millis(20);
/// Most sealed chunks one transaction carries.
const COMMIT_CHUNKS: usize = 64;
/// Batches that may wait in the writer's queue before appenders block.
const QUEUE_BATCHES: usize = 256;

type Reply<T> = Sender<Result<T, StoreError>>;

enum Msg {
    Create(NewSession, Reply<(i64, Arc<SessionStats>)>),
    Captures(i64, Vec<CaptureBlob>),
    Update(i64, SessionUpdate),
    SetCaps(i64, EventCaps),
    Append(i64, EventBatch),
    Functions(i64, Vec<FunctionRow>),
    Threads(i64, u32, Vec<(u32, String)>),
    Dropped(i64, u64),
    Flush(Reply<()>),
    Delete(i64, Reply<()>),
    Purge(PurgeParams, Reply<PurgeReport>),
    TestDurations(TestDurations, Reply<()>),
    AgentCalls(String, Vec<AgentCall>),
    Shutdown(Reply<()>),
}

#[derive(Debug, Clone, Copy)]
struct PurgeParams {
    now_ms: i64,
    retention_ms: i64,
    max_total_bytes: u64,
}

/// What a purge removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// Sessions removed because they were older than the retention period.
    pub expired: Vec<String>,
    /// Sessions removed to get under the total size cap.
    pub over_size: Vec<String>,
}

/// Handle to the event store. Cheap to clone; all clones share one writer.
#[derive(Clone)]
pub struct Store {
    tx: Sender<Msg>,
    path: PathBuf,
    readers: Arc<Mutex<Vec<Connection>>>,
    /// Each live session's counters, so that events the writer can no
    /// longer take (it is gone) are still counted as dropped.
    stats: Arc<Mutex<HashMap<i64, Arc<SessionStats>>>>,
    writer_thread: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl Store {
    /// Opens (creating if needed) the database at `path` and starts the writer.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let conn = schema::open(path)?;
        schema::migrate(&conn)?;
        let (tx, rx) = bounded(QUEUE_BATCHES);
        let handle = std::thread::Builder::new()
            .name("strobe-store-writer".into())
            .spawn(move || Writer::new(conn).run(rx))
            .map_err(|_| StoreError::WriterGone)?;
        Ok(Store {
            tx,
            path: path.to_path_buf(),
            readers: Arc::new(Mutex::new(Vec::new())),
            stats: Arc::new(Mutex::new(HashMap::new())),
            writer_thread: Arc::new(Mutex::new(Some(handle))),
        })
    }

    fn call<T>(&self, make: impl FnOnce(Reply<T>) -> Msg) -> Result<T, StoreError> {
        let (rtx, rrx) = bounded(1);
        self.tx
            .send(make(rtx))
            .map_err(|_| StoreError::WriterGone)?;
        rrx.recv().map_err(|_| StoreError::WriterGone)?
    }

    /// Creates a session; returns its key and its live counters.
    pub fn create_session(&self, s: NewSession) -> Result<(i64, Arc<SessionStats>), StoreError> {
        let (key, stats) = self.call(|r| Msg::Create(s, r))?;
        self.stats
            .lock()
            .expect("stats lock")
            .insert(key, stats.clone());
        Ok((key, stats))
    }

    /// Queues a lifecycle update (applied in order with appends).
    pub fn update_session(&self, key: i64, u: SessionUpdate) -> Result<(), StoreError> {
        self.tx
            .send(Msg::Update(key, u))
            .map_err(|_| StoreError::WriterGone)
    }

    /// Changes a session's event caps (settings are re-read on every tool call).
    pub fn set_event_caps(&self, key: i64, caps: EventCaps) -> Result<(), StoreError> {
        self.tx
            .send(Msg::SetCaps(key, caps))
            .map_err(|_| StoreError::WriterGone)
    }

    /// Appends events. Blocks while the writer is behind (back-pressure).
    ///
    /// # Errors
    /// [`StoreError::WriterGone`] when the writer has stopped; the batch's
    /// events are then counted as the session's `dropped`, so nothing is
    /// lost without a count whatever the caller does with the error.
    pub fn append(&self, key: i64, batch: EventBatch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.tx.send(Msg::Append(key, batch)).map_err(|e| {
            if let Msg::Append(_, batch) = e.0
                && let Some(stats) = self.stats.lock().expect("stats lock").get(&key)
            {
                stats
                    .dropped
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
                tracing::error!(
                    "store writer gone: {} events of session key {key} dropped (counted)",
                    batch.len()
                );
            }
            StoreError::WriterGone
        })
    }

    /// Registers functions (id → name, file, line) so events can be named
    /// and filtered by name. Queued in order with appends.
    pub fn register_functions(&self, key: i64, rows: Vec<FunctionRow>) -> Result<(), StoreError> {
        self.tx
            .send(Msg::Functions(key, rows))
            .map_err(|_| StoreError::WriterGone)
    }

    /// Stores (or replaces) opaque blobs describing how a session's captured
    /// values decode, so that a later daemon can still render them. The
    /// store does not look inside; see `strobe-session`'s capture plans.
    pub fn put_captures(&self, key: i64, blobs: Vec<CaptureBlob>) -> Result<(), StoreError> {
        self.tx
            .send(Msg::Captures(key, blobs))
            .map_err(|_| StoreError::WriterGone)
    }

    /// Every capture blob of a session.
    pub fn captures(&self, key: i64) -> Result<Vec<CaptureBlob>, StoreError> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT kind, id, sub, body FROM captures WHERE session = ?1 ORDER BY kind, id, sub",
            )?;
            let rows = stmt.query_map([key], |r| {
                Ok(CaptureBlob {
                    kind: r.get(0)?,
                    id: r.get(1)?,
                    sub: r.get(2)?,
                    body: r.get(3)?,
                })
            })?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    /// Records thread names of process `pid` (for `threadName` filters).
    pub fn register_threads(
        &self,
        key: i64,
        pid: u32,
        threads: Vec<(u32, String)>,
    ) -> Result<(), StoreError> {
        self.tx
            .send(Msg::Threads(key, pid, threads))
            .map_err(|_| StoreError::WriterGone)
    }

    /// Names of the given threads of a session: (tid, name).
    pub fn thread_names(&self, key: i64, tids: &[u32]) -> Result<Vec<(u32, String)>, StoreError> {
        self.with_reader(|c| {
            let mut stmt =
                c.prepare_cached("SELECT name FROM threads WHERE session = ?1 AND tid = ?2")?;
            let mut out = Vec::new();
            for tid in tids {
                let mut rows = stmt.query(params![key, tid])?;
                if let Some(r) = rows.next()? {
                    out.push((*tid, r.get(0)?));
                }
            }
            Ok(out)
        })
    }

    /// The registered functions of a session with the given ids.
    pub fn functions(&self, key: i64, ids: &[u32]) -> Result<Vec<FunctionRow>, StoreError> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT func_id, name, name_raw, file, line FROM functions WHERE session = ?1 AND func_id = ?2",
            )?;
            let mut out = Vec::new();
            for id in ids {
                let mut rows = stmt.query(params![key, id])?;
                if let Some(r) = rows.next()? {
                    out.push(FunctionRow {
                        func_id: r.get(0)?,
                        name: r.get(1)?,
                        name_raw: r.get(2)?,
                        file: r.get(3)?,
                        line: r.get(4)?,
                    });
                }
            }
            Ok(out)
        })
    }

    /// Records events a producer had to drop before they reached the store.
    pub fn record_dropped(&self, key: i64, n: u64) -> Result<(), StoreError> {
        self.tx
            .send(Msg::Dropped(key, n))
            .map_err(|_| StoreError::WriterGone)
    }

    /// Commits everything appended so far; afterwards queries see it.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.call(Msg::Flush)
    }

    /// Deletes a session and all its events.
    pub fn delete_session(&self, key: i64) -> Result<(), StoreError> {
        self.stats.lock().expect("stats lock").remove(&key);
        self.call(|r| Msg::Delete(key, r))
    }

    /// Removes retained sessions older than `retention` and then the oldest
    /// retained sessions until stored bytes are at most `max_total_bytes`.
    pub fn purge(
        &self,
        now_ms: i64,
        retention: Duration,
        max_total_bytes: u64,
    ) -> Result<PurgeReport, StoreError> {
        let p = PurgeParams {
            now_ms,
            retention_ms: retention.as_millis() as i64,
            max_total_bytes,
        };
        self.call(|r| Msg::Purge(p, r))
    }

    /// Records how long each test of a finished run took; the baselines
    /// read afterwards include it.
    pub fn record_test_durations(&self, d: TestDurations) -> Result<(), StoreError> {
        self.call(|r| Msg::TestDurations(d, r))
    }

    /// Records MCP tool calls an agent made on session `id`, without
    /// waiting (the agent's call must not wait on the store). Calls naming a
    /// session that is not stored are dropped with a debug log.
    pub fn record_agent_calls(&self, id: &str, calls: Vec<AgentCall>) -> Result<(), StoreError> {
        self.tx
            .send(Msg::AgentCalls(id.to_string(), calls))
            .map_err(|_| StoreError::WriterGone)
    }

    /// The agent's calls on session `id` after `after_seq` (0: from the
    /// first), oldest first, at most `limit`; `None` if no such session.
    pub fn agent_calls(
        &self,
        id: &str,
        after_seq: i64,
        limit: usize,
    ) -> Result<Option<Vec<AgentCallRow>>, StoreError> {
        self.with_reader(|c| {
            let Some(s) = sessions::by_id(c, id)? else {
                return Ok(None);
            };
            Ok(Some(agent_calls::list(c, s.key, after_seq, limit)?))
        })
    }

    /// A test's mean duration over its last [`crate::RUNS_KEPT`] runs;
    /// `None` when it never finished before.
    pub fn test_baseline(
        &self,
        project_root: &str,
        framework: &str,
        name: &str,
    ) -> Result<Option<TestBaseline>, StoreError> {
        self.with_reader(|c| Ok(test_history::baseline(c, project_root, framework, name)?))
    }

    /// Flushes and stops the writer. Other clones become unusable.
    pub fn close(&self) -> Result<(), StoreError> {
        let r = self.call(Msg::Shutdown);
        if let Some(h) = self
            .writer_thread
            .lock()
            .expect("writer handle lock")
            .take()
        {
            let _ = h.join();
        }
        r
    }

    fn with_reader<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let conn = self.readers.lock().expect("reader pool lock").pop();
        let conn = match conn {
            Some(c) => c,
            None => schema::open(&self.path)?,
        };
        let out = f(&conn);
        let mut pool = self.readers.lock().expect("reader pool lock");
        if pool.len() < 4 {
            pool.push(conn);
        }
        out
    }

    /// A session by id (committed state).
    pub fn session(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        self.with_reader(|c| Ok(sessions::by_id(c, id)?))
    }

    /// Every stored session, oldest first.
    pub fn sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        self.with_reader(|c| Ok(sessions::all(c)?))
    }

    /// Largest timestamp stored for a session (0 when it has no events).
    pub fn latest_ts(&self, key: i64) -> Result<u64, StoreError> {
        self.with_reader(|c| {
            let v: Option<i64> = c.query_row(
                "SELECT MAX(ts_max) FROM chunks WHERE session = ?1",
                [key],
                |r| r.get(0),
            )?;
            Ok(v.unwrap_or(0) as u64)
        })
    }

    /// Interned function ids of a session whose (name, raw name, file)
    /// satisfy `pred`; the query engine filters on ids, never on strings.
    pub fn function_ids(
        &self,
        key: i64,
        pred: impl Fn(&str, Option<&str>, Option<&str>) -> bool,
    ) -> Result<std::collections::HashSet<u32>, StoreError> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT func_id, name, name_raw, file FROM functions WHERE session = ?1",
            )?;
            let mut out = std::collections::HashSet::new();
            let mut rows = stmt.query([key])?;
            while let Some(r) = rows.next()? {
                let (name, raw, file): (String, Option<String>, Option<String>) =
                    (r.get(1)?, r.get(2)?, r.get(3)?);
                if pred(&name, raw.as_deref(), file.as_deref()) {
                    out.insert(r.get(0)?);
                }
            }
            Ok(out)
        })
    }

    /// Thread ids of a session whose name satisfies `pred`.
    pub fn thread_ids(
        &self,
        key: i64,
        pred: impl Fn(&str) -> bool,
    ) -> Result<std::collections::HashSet<u32>, StoreError> {
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached("SELECT tid, name FROM threads WHERE session = ?1")?;
            let mut out = std::collections::HashSet::new();
            let mut rows = stmt.query([key])?;
            while let Some(r) = rows.next()? {
                let name: String = r.get(1)?;
                if pred(&name) {
                    out.insert(r.get(0)?);
                }
            }
            Ok(out)
        })
    }

    /// Per-function call statistics of one session's committed events.
    pub fn aggregate_functions(
        &self,
        key: i64,
        filter: &EventFilter,
    ) -> Result<Vec<crate::FunctionStats>, StoreError> {
        self.with_reader(|c| query::aggregate(c, key, filter))
    }

    /// Runs a query over one session's committed events.
    pub fn query(
        &self,
        key: i64,
        filter: &EventFilter,
        page: QueryPage,
    ) -> Result<QueryResult, StoreError> {
        self.with_reader(|c| query::run(c, key, filter, page))
    }
}

/// A committed chunk as eviction sees it.
#[derive(Debug, Clone, Copy)]
struct ChunkRec {
    id: i64,
    first_seq: u64,
    /// Function enter/exit events in it.
    trace: u64,
    /// Every other event in it.
    output: u64,
    bytes: u64,
    /// Rewritten by eviction: its trace events are gone, its ids have gaps.
    stripped: bool,
}

/// A session's stored counts, as committed (or about to be).
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    trace: u64,
    output: u64,
    evicted: u64,
    evicted_output: u64,
    stored_bytes: u64,
}

struct SessionState {
    stats: Arc<SessionStats>,
    caps: EventCaps,
    next_seq: u64,
    counts: Counts,
    dropped: u64,
    pids: BTreeSet<u32>,
    pids_dirty: bool,
    /// Committed chunks, oldest first.
    chunks: VecDeque<ChunkRec>,
    pending: Option<(ChunkBuilder, Instant)>,
    sealed: Vec<(ChunkSummary, Vec<u8>)>,
    dirty: bool,
    calls: CallTree,
}

impl SessionState {
    fn chunk_events(&self) -> usize {
        // Small caps get small chunks so eviction stays close to the cap.
        (self.caps.trace.min(self.caps.output) as usize / 8).clamp(1, MAX_CHUNK_EVENTS)
    }
}

struct Writer {
    conn: Connection,
    sessions: HashMap<i64, SessionState>,
}

impl Writer {
    fn new(conn: Connection) -> Self {
        Self {
            conn,
            sessions: HashMap::new(),
        }
    }

    fn run(mut self, rx: Receiver<Msg>) {
        loop {
            let timeout = self
                .next_deadline()
                .map(|d| d.saturating_duration_since(Instant::now()));
            let msg = match timeout {
                Some(t) => rx.recv_timeout(t),
                None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match msg {
                Ok(m) => {
                    if self.handle(m) {
                        return;
                    }
                    // Drain what is already queued so one transaction covers it,
                    // but commit at least every COMMIT_INTERVAL / COMMIT_CHUNKS so a
                    // crash of the daemon loses little.
                    let started = Instant::now();
                    for _ in 0..QUEUE_BATCHES {
                        if started.elapsed() >= COMMIT_INTERVAL
                            || self.sealed_count() >= COMMIT_CHUNKS
                        {
                            break;
                        }
                        match rx.try_recv() {
                            Ok(m) => {
                                if self.handle(m) {
                                    return;
                                }
                            }
                            Err(_) => break,
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    let _ = self.commit(true);
                    return;
                }
            }
            self.seal_old_partials();
            if let Err(e) = self.commit(false) {
                tracing::error!("store commit failed: {e}");
            }
        }
    }

    fn sealed_count(&self) -> usize {
        self.sessions.values().map(|s| s.sealed.len()).sum()
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.sessions
            .values()
            .filter_map(|s| s.pending.as_ref().map(|(_, t)| *t + PARTIAL_CHUNK_MAX_AGE))
            .min()
    }

    /// Returns true when the writer must stop.
    fn handle(&mut self, msg: Msg) -> bool {
        match msg {
            Msg::Create(s, reply) => {
                let _ = reply.send(self.create(s));
            }
            Msg::Update(key, u) => {
                // Lifecycle changes land after the events that preceded them.
                let _ = self.commit(true);
                if let Err(e) = sessions::apply_update(&self.conn, key, &u) {
                    tracing::error!("session update failed: {e}");
                }
            }
            Msg::SetCaps(key, caps) => {
                if let Some(s) = self.sessions.get_mut(&key) {
                    s.caps = EventCaps {
                        trace: caps.trace.max(1),
                        output: caps.output.max(1),
                    };
                    s.dirty = true;
                }
            }
            Msg::Append(key, batch) => self.append(key, batch),
            Msg::Threads(key, pid, threads) => {
                let r = self.conn.execute_batch("BEGIN").and_then(|()| {
                    let mut stmt = self.conn.prepare_cached(
                        "INSERT OR REPLACE INTO threads (session, pid, tid, name) VALUES (?1, ?2, ?3, ?4)",
                    )?;
                    for (tid, name) in &threads {
                        stmt.execute(params![key, pid, tid, name])?;
                    }
                    self.conn.execute_batch("COMMIT")
                });
                if let Err(e) = r {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    tracing::error!("registering threads failed: {e}");
                }
            }
            Msg::Captures(key, blobs) => {
                if let Err(e) = self.insert_captures(key, &blobs) {
                    tracing::error!("storing capture plans failed: {e}");
                }
            }
            Msg::Functions(key, rows) => {
                if let Err(e) = self.insert_functions(key, &rows) {
                    tracing::error!("registering functions failed: {e}");
                }
            }
            Msg::Dropped(key, n) => {
                if let Some(s) = self.sessions.get_mut(&key) {
                    s.dropped += n;
                    s.stats.dropped.fetch_add(n, Ordering::Relaxed);
                    s.dirty = true;
                }
            }
            Msg::Flush(reply) => {
                let _ = reply.send(self.commit(true));
            }
            Msg::Delete(key, reply) => {
                let _ = reply.send(self.delete(key));
            }
            Msg::Purge(p, reply) => {
                let _ = reply.send(self.purge(p));
            }
            Msg::AgentCalls(id, calls) => match agent_calls::record(&mut self.conn, &id, &calls) {
                Ok(true) => {}
                Ok(false) => tracing::debug!("agent calls for unknown session {id} dropped"),
                Err(e) => tracing::warn!("storing agent calls of {id}: {e}"),
            },
            Msg::TestDurations(d, reply) => {
                let _ = reply.send(test_history::record(&mut self.conn, &d).map_err(Into::into));
            }
            Msg::Shutdown(reply) => {
                let _ = reply.send(self.commit(true));
                return true;
            }
        }
        false
    }

    fn create(&mut self, s: NewSession) -> Result<(i64, Arc<SessionStats>), StoreError> {
        let exists: bool = self
            .conn
            .query_row("SELECT 1 FROM sessions WHERE id = ?1", [&s.id], |_| Ok(()))
            .is_ok();
        if exists {
            return Err(StoreError::DuplicateSession(s.id));
        }
        self.conn.execute(
            "INSERT INTO sessions (id, binary_path, project_root, launch_json, started_at, status)
             VALUES (?1, ?2, ?3, ?4, ?5, 'starting')",
            params![
                s.id,
                s.binary_path,
                s.project_root,
                s.launch_json,
                s.started_at
            ],
        )?;
        let key = self.conn.last_insert_rowid();
        let stats = Arc::new(SessionStats::default());
        self.sessions.insert(
            key,
            SessionState {
                stats: stats.clone(),
                caps: EventCaps {
                    trace: s.caps.trace.max(1),
                    output: s.caps.output.max(1),
                },
                next_seq: 1,
                counts: Counts::default(),
                dropped: 0,
                pids: BTreeSet::new(),
                pids_dirty: false,
                chunks: VecDeque::new(),
                pending: None,
                sealed: Vec::new(),
                dirty: false,
                calls: CallTree::default(),
            },
        );
        Ok((key, stats))
    }

    fn insert_captures(&mut self, key: i64, blobs: &[CaptureBlob]) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO captures (session, kind, id, sub, body) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for b in blobs {
                stmt.execute(params![key, b.kind, b.id, b.sub, b.body])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn insert_functions(&mut self, key: i64, rows: &[FunctionRow]) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT OR REPLACE INTO functions (session, func_id, name, name_raw, file, line)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for r in rows {
                stmt.execute(params![key, r.func_id, r.name, r.name_raw, r.file, r.line])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn append(&mut self, key: i64, batch: EventBatch) {
        let Some(s) = self.sessions.get_mut(&key) else {
            tracing::warn!("events for unknown session key {key} discarded");
            return;
        };
        s.stats
            .received
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        let max = s.chunk_events();
        for h in &batch.headers {
            if s.pids.insert(h.pid) {
                s.pids_dirty = true;
            }
            let mut h = *h;
            s.calls.link(&mut h, s.next_seq);
            let (builder, _) = s
                .pending
                .get_or_insert_with(|| (ChunkBuilder::new(s.next_seq), Instant::now()));
            builder.push(&h, batch.payload_of(&h));
            s.next_seq += 1;
            if builder.is_full(max) {
                let (b, _) = s.pending.take().expect("pending chunk exists");
                s.sealed.push(b.finish());
            }
        }
        s.dirty = true;
    }

    fn seal_old_partials(&mut self) {
        let now = Instant::now();
        for s in self.sessions.values_mut() {
            if let Some((_, since)) = &s.pending
                && now.duration_since(*since) >= PARTIAL_CHUNK_MAX_AGE
            {
                let (b, _) = s.pending.take().expect("checked above");
                s.sealed.push(b.finish());
            }
        }
    }

    /// Writes sealed chunks (and, with `all`, pending partial ones) in one
    /// transaction, applies eviction and persists the counters.
    fn commit(&mut self, all: bool) -> Result<(), StoreError> {
        if all {
            for s in self.sessions.values_mut() {
                if let Some((b, _)) = s.pending.take() {
                    s.sealed.push(b.finish());
                }
            }
        }
        if !self.sessions.values().any(|s| s.dirty) {
            return Ok(());
        }
        // Two phases: write everything in one transaction from borrowed
        // state, and change the in-memory state only once it committed. A
        // failed commit (disk full, I/O) leaves the sealed chunks in place to
        // be retried, and the counters keep matching the database.
        struct Outcome {
            key: i64,
            chunks: VecDeque<ChunkRec>,
            counts: Counts,
        }
        let mut outcomes = Vec::new();
        let tx = self.conn.transaction()?;
        {
            let mut counters = tx.prepare_cached(
                "UPDATE sessions SET event_count = ?2, next_seq = ?3, evicted = ?4, dropped = ?5,
                        stored_bytes = ?6, evicted_output = ?7 WHERE key = ?1",
            )?;
            let mut pids = tx.prepare_cached("UPDATE sessions SET pids = ?2 WHERE key = ?1")?;
            for (&key, s) in self.sessions.iter().filter(|(_, s)| s.dirty) {
                let mut o = Outcome {
                    key,
                    chunks: s.chunks.clone(),
                    counts: s.counts,
                };
                for sealed in &s.sealed {
                    let rec = insert_chunk(&tx, key, sealed)?;
                    o.counts.trace += rec.trace;
                    o.counts.output += rec.output;
                    o.counts.stored_bytes += rec.bytes;
                    o.chunks.push_back(rec);
                }
                evict(&tx, key, s.caps, &mut o.chunks, &mut o.counts)?;
                counters.execute(params![
                    key,
                    (o.counts.trace + o.counts.output) as i64,
                    s.next_seq as i64,
                    o.counts.evicted as i64,
                    s.dropped as i64,
                    o.counts.stored_bytes as i64,
                    o.counts.evicted_output as i64,
                ])?;
                if s.pids_dirty {
                    let list: Vec<String> = s.pids.iter().map(|p| p.to_string()).collect();
                    pids.execute(params![key, list.join(",")])?;
                }
                outcomes.push(o);
            }
        }
        tx.commit()?;
        for o in outcomes {
            let s = self
                .sessions
                .get_mut(&o.key)
                .expect("outcomes are of known sessions");
            s.sealed.clear();
            s.chunks = o.chunks;
            s.counts = o.counts;
            s.pids_dirty = false;
            s.stats
                .stored
                .store(o.counts.trace + o.counts.output, Ordering::Relaxed);
            s.stats.evicted.store(o.counts.evicted, Ordering::Relaxed);
            s.stats
                .evicted_output
                .store(o.counts.evicted_output, Ordering::Relaxed);
            s.dirty = s.pending.is_some();
        }
        Ok(())
    }

    fn delete(&mut self, key: i64) -> Result<(), StoreError> {
        self.commit(true)?;
        self.sessions.remove(&key);
        let tx = self.conn.transaction()?;
        tx.execute(
            "DELETE FROM chunk_indexes WHERE id IN (SELECT id FROM chunks WHERE session = ?1)",
            [key],
        )?;
        tx.execute("DELETE FROM chunks WHERE session = ?1", [key])?;
        tx.execute("DELETE FROM functions WHERE session = ?1", [key])?;
        tx.execute("DELETE FROM threads WHERE session = ?1", [key])?;
        tx.execute("DELETE FROM captures WHERE session = ?1", [key])?;
        tx.execute("DELETE FROM agent_calls WHERE session = ?1", [key])?;
        tx.execute("DELETE FROM sessions WHERE key = ?1", [key])?;
        tx.commit()?;
        Ok(())
    }

    fn purge(&mut self, p: PurgeParams) -> Result<PurgeReport, StoreError> {
        self.commit(true)?;
        let mut report = PurgeReport::default();
        let cutoff = p.now_ms - p.retention_ms;
        let expired: Vec<(i64, String)> = {
            let mut stmt = self.conn.prepare(
                "SELECT key, id FROM sessions
                 WHERE retained = 1 AND COALESCE(ended_at, started_at) < ?1 ORDER BY started_at",
            )?;
            stmt.query_map([cutoff], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?
        };
        for (key, id) in expired {
            self.delete(key)?;
            report.expired.push(id);
        }
        loop {
            let total: i64 = self.conn.query_row(
                "SELECT COALESCE(SUM(stored_bytes), 0) FROM sessions",
                [],
                |r| r.get(0),
            )?;
            if total as u64 <= p.max_total_bytes {
                break;
            }
            let oldest: Option<(i64, String)> = self
                .conn
                .query_row(
                    "SELECT key, id FROM sessions WHERE retained = 1 ORDER BY started_at, key LIMIT 1",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .ok();
            let Some((key, id)) = oldest else { break };
            self.delete(key)?;
            report.over_size.push(id);
        }
        Ok(report)
    }
}

/// Inserts one sealed chunk and its content index.
fn insert_chunk(
    tx: &Connection,
    key: i64,
    (summary, data): &(ChunkSummary, Vec<u8>),
) -> Result<ChunkRec, StoreError> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO chunks (session, first_seq, count, ts_min, ts_max, kind_mask, kind_counts,
                             pid_min, pid_max, func_counts, data)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    let mut insert_index =
        tx.prepare_cached("INSERT INTO chunk_indexes (id, content) VALUES (?1, ?2)")?;
    let index = summary.index.to_blob();
    // The stored count is the span of ids, which range filters prune by.
    insert.execute(params![
        key,
        summary.first_seq as i64,
        summary.span as i64,
        summary.ts_min as i64,
        summary.ts_max as i64,
        summary.kind_mask,
        summary.kind_counts_blob(),
        summary.pid_min,
        summary.pid_max,
        summary.func_counts_blob(),
        data
    ])?;
    let id = tx.last_insert_rowid();
    insert_index.execute(params![id, index])?;
    let trace: u64 = summary
        .kind_counts
        .iter()
        .enumerate()
        .filter(|(kind, _)| codec::is_trace_kind(*kind as u8))
        .map(|(_, n)| u64::from(*n))
        .sum();
    Ok(ChunkRec {
        id,
        first_seq: summary.first_seq,
        trace,
        output: u64::from(summary.count) - trace,
        bytes: (data.len() + index.len()) as u64,
        stripped: false,
    })
}

fn delete_chunk(tx: &Connection, id: i64) -> Result<(), StoreError> {
    tx.prepare_cached("DELETE FROM chunks WHERE id = ?1")?
        .execute([id])?;
    tx.prepare_cached("DELETE FROM chunk_indexes WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Applies a session's caps, oldest first. Over `caps.trace`, the oldest
/// chunks holding function events lose them: a chunk holding nothing else is
/// deleted, the others are rewritten with only their other events (same ids),
/// consecutive ones into one chunk (joined to the rewritten chunk before them
/// while that stays under a chunk's size), so each evicted chunk is decoded
/// once. Over `caps.output`, the oldest chunk holding output goes whole.
fn evict(
    tx: &Connection,
    key: i64,
    caps: EventCaps,
    chunks: &mut VecDeque<ChunkRec>,
    counts: &mut Counts,
) -> Result<(), StoreError> {
    if counts.trace > caps.trace {
        let mut out = VecDeque::with_capacity(chunks.len());
        let mut run: Option<ChunkBuilder> = None;
        for c in chunks.drain(..) {
            if counts.trace <= caps.trace || c.trace == 0 {
                flush_kept(tx, key, &mut run, &mut out, counts)?;
                out.push_back(c);
                continue;
            }
            counts.trace -= c.trace;
            counts.evicted += c.trace;
            if c.output > 0 {
                // A rewritten chunk stays within a chunk's limits: what is
                // being built is stored first when this chunk's output would
                // take it past them (a source chunk alone never does).
                if run
                    .as_ref()
                    .is_some_and(|b| b.len() as u64 + c.output > MAX_CHUNK_EVENTS as u64)
                {
                    flush_kept(tx, key, &mut run, &mut out, counts)?;
                }
                if run.is_none()
                    && let Some(prev) = out.back().copied()
                    && prev.stripped
                    && prev.output + c.output <= MAX_CHUNK_EVENTS as u64
                {
                    out.pop_back();
                    keep_output(tx, prev, &mut run, counts)?;
                }
                keep_output(tx, c, &mut run, counts)?;
                if run.as_ref().is_some_and(|b| b.is_full(MAX_CHUNK_EVENTS)) {
                    flush_kept(tx, key, &mut run, &mut out, counts)?;
                }
            } else {
                delete_chunk(tx, c.id)?;
                counts.stored_bytes -= c.bytes;
            }
        }
        flush_kept(tx, key, &mut run, &mut out, counts)?;
        *chunks = out;
    }
    while counts.output > caps.output {
        let Some(i) = chunks.iter().position(|c| c.output > 0) else {
            break;
        };
        let c = chunks.remove(i).expect("position is in range");
        delete_chunk(tx, c.id)?;
        counts.trace -= c.trace;
        counts.output -= c.output;
        counts.evicted += c.trace + c.output;
        counts.evicted_output += c.output;
        counts.stored_bytes -= c.bytes;
    }
    Ok(())
}

/// Moves a chunk's non-trace events into the rewritten chunk being built
/// and deletes the chunk.
fn keep_output(
    tx: &Connection,
    c: ChunkRec,
    run: &mut Option<ChunkBuilder>,
    counts: &mut Counts,
) -> Result<(), StoreError> {
    let data: Vec<u8> = tx
        .prepare_cached("SELECT data FROM chunks WHERE id = ?1")?
        .query_row([c.id], |r| r.get(0))?;
    codec::decode(&data, c.first_seq, |seq, h, payload| {
        if !codec::is_trace_kind(h.kind) {
            run.get_or_insert_with(|| ChunkBuilder::new(seq))
                .push_at(seq, &h, payload);
        }
        true
    })
    .map_err(|reason| StoreError::Corrupt {
        chunk: c.id,
        reason,
    })?;
    delete_chunk(tx, c.id)?;
    counts.stored_bytes -= c.bytes;
    Ok(())
}

/// Stores the rewritten chunk being built, if any, at the end of `out`.
fn flush_kept(
    tx: &Connection,
    key: i64,
    run: &mut Option<ChunkBuilder>,
    out: &mut VecDeque<ChunkRec>,
    counts: &mut Counts,
) -> Result<(), StoreError> {
    if let Some(b) = run.take() {
        let mut rec = insert_chunk(tx, key, &b.finish())?;
        rec.stripped = true;
        counts.stored_bytes += rec.bytes;
        out.push_back(rec);
    }
    Ok(())
}
