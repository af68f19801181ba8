//! The store handle: what producers, queries and tools call. Writes go as
//! messages to the one writer thread (`writer.rs`); reads use connections
//! of their own from a small pool.

use crate::agent_calls::{self, AgentCall, AgentCallRow};
use crate::batch_pool::BatchPool;
use crate::error::StoreError;
use crate::motor_plans::MotorPlan;
use crate::query::{self, EventFilter, QueryPage, QueryResult};
use crate::schema;
use crate::sessions::{
    self, CaptureBlob, EventCaps, FunctionRow, NewSession, SessionRow, SessionStats, SessionUpdate,
};
use crate::test_history::{self, TestBaseline, TestDurations};
use crate::writer::{Msg, PurgeParams, PurgeReport, QUEUE_BATCHES, Reply, Writer};
use crossbeam_channel::{Sender, bounded};
use rusqlite::{Connection, params};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use strobe_core::event::EventBatch;

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
    /// Batches the writer consumed, for [`Store::batch`].
    spare: Arc<BatchPool>,
    /// Chunk summaries kept between queries.
    summaries: Arc<crate::summary_cache::SummaryCache>,
}

impl Store {
    /// Opens (creating if needed) the database at `path` and starts the writer.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let conn = schema::open(path)?;
        schema::migrate(&conn)?;
        // Checkpoints run on their own thread (checkpointer.rs).
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        let checkpoints = crate::checkpointer::Checkpointer::start(path)?;
        let (tx, rx) = bounded(QUEUE_BATCHES);
        let spare = Arc::new(BatchPool::default());
        let pool = spare.clone();
        let handle = std::thread::Builder::new()
            .name("strobe-store-writer".into())
            .spawn(move || Writer::new(conn, pool, checkpoints).run(rx))
            .map_err(|_| StoreError::WriterGone)?;
        Ok(Store {
            tx,
            path: path.to_path_buf(),
            readers: Arc::new(Mutex::new(Vec::new())),
            stats: Arc::new(Mutex::new(HashMap::new())),
            writer_thread: Arc::new(Mutex::new(Some(handle))),
            spare,
            summaries: Arc::default(),
        })
    }

    /// An empty batch to fill and [`Store::append`], with room for `events`
    /// events and `payload` bytes: one the writer already consumed when it
    /// has one (its memory is warm), else a new one.
    pub fn batch(&self, events: usize, payload: usize) -> EventBatch {
        self.spare.take(events, payload)
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

    /// Records a traced test run that passed as its test's newest (the
    /// baseline a later failing `rerun: "compare"` is diffed with).
    pub fn record_traced_pass(&self, p: crate::TracedPass) -> Result<(), StoreError> {
        self.call(|r| Msg::TracedPass(p, r))
    }

    /// The newest passing traced run of `test` in `project_root` with these
    /// trace patterns (in any order), kept across daemon restarts.
    pub fn traced_pass(
        &self,
        project_root: &str,
        test: Option<&str>,
        patterns: &[String],
    ) -> Result<Option<crate::TracedPass>, StoreError> {
        self.with_reader(|c| Ok(crate::traced_passes::find(c, project_root, test, patterns)?))
    }

    /// Stores a learned motor plan (replacing the one of the same widget).
    pub fn put_motor_plan(&self, p: MotorPlan) -> Result<(), StoreError> {
        self.call(|r| Msg::MotorPlan(p, r))
    }

    /// The plan learned for this widget (`true`), or failing that the
    /// newest for one of the same role in the same program (`false`).
    pub fn motor_plan(
        &self,
        app: &str,
        role: &str,
        signature: &str,
    ) -> Result<Option<(MotorPlan, bool)>, StoreError> {
        self.with_reader(|c| Ok(crate::motor_plans::find(c, app, role, signature)?))
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
            None => schema::open_reader(&self.path)?,
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

    /// Every session id this store ever issued, deleted sessions' included:
    /// a new session must take none of them.
    pub fn issued_session_ids(&self) -> Result<std::collections::HashSet<String>, StoreError> {
        self.with_reader(|c| {
            let mut stmt = c.prepare("SELECT id FROM issued_session_ids")?;
            let ids = stmt.query_map([], |r| r.get::<_, String>(0))?;
            Ok(ids.collect::<rusqlite::Result<_>>()?)
        })
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
        self.with_reader(|c| query::aggregate(c, &self.summaries, key, filter))
    }

    /// Runs a query over one session's committed events, counting every
    /// match.
    pub fn query(
        &self,
        key: i64,
        filter: &EventFilter,
        page: QueryPage,
    ) -> Result<QueryResult, StoreError> {
        self.query_counting(key, filter, page, query::Counting::Exact)
    }

    /// Like [`Store::query`], with the work on `total_count` bounded as
    /// `counting` says (an estimate with exact bounds past the budget).
    pub fn query_counting(
        &self,
        key: i64,
        filter: &EventFilter,
        page: QueryPage,
        counting: query::Counting,
    ) -> Result<QueryResult, StoreError> {
        self.with_reader(|c| query::run(c, &self.summaries, key, filter, page, counting))
    }
}
