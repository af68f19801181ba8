//! The store's single writer thread: the only code that writes SQLite. It
//! batches appends into chunks and commits them (with eviction,
//! `eviction.rs`) at least every 20 ms; the handle (`store.rs`) talks to it
//! through [`Msg`].

use crate::agent_calls::{self, AgentCall};
use crate::batch_pool::BatchPool;
use crate::calltree::CallTree;
use crate::checkpointer::Checkpointer;
use crate::codec::{ChunkBuilder, ChunkSummary, MAX_CHUNK_EVENTS};
use crate::error::StoreError;
use crate::eviction::{ChunkRec, Counts, evict, insert_chunk};
use crate::sessions::{
    self, CaptureBlob, EventCaps, FunctionRow, NewSession, SessionStats, SessionUpdate,
};
use crate::test_history::{self, TestDurations};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use rusqlite::{Connection, params};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
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
pub(crate) const QUEUE_BATCHES: usize = 256;

pub(crate) type Reply<T> = Sender<Result<T, StoreError>>;

/// What the store handle asks of the writer thread.
pub(crate) enum Msg {
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
    MotorPlan(crate::MotorPlan, Reply<()>),
    TracedPass(crate::TracedPass, Reply<()>),
    AgentCalls(String, Vec<AgentCall>),
    Shutdown(Reply<()>),
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct PurgeParams {
    pub(crate) now_ms: i64,
    pub(crate) retention_ms: i64,
    pub(crate) max_total_bytes: u64,
}

/// What a purge removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// Sessions removed because they were older than the retention period.
    pub expired: Vec<String>,
    /// Sessions removed to get under the total size cap.
    pub over_size: Vec<String>,
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

pub(crate) struct Writer {
    conn: Connection,
    sessions: HashMap<i64, SessionState>,
    /// Consumed batches go back here (see [`Store::batch`](crate::Store::batch)).
    spare: Arc<BatchPool>,
    /// Told of each commit; the writer's connection never checkpoints.
    checkpoints: Checkpointer,
}

impl Writer {
    pub(crate) fn new(conn: Connection, spare: Arc<BatchPool>, checkpoints: Checkpointer) -> Self {
        Self {
            conn,
            sessions: HashMap::new(),
            spare,
            checkpoints,
        }
    }

    pub(crate) fn run(mut self, rx: Receiver<Msg>) {
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
            Msg::MotorPlan(p, reply) => {
                let _ = reply.send(crate::motor_plans::put(&self.conn, &p).map_err(Into::into));
            }
            Msg::TracedPass(p, reply) => {
                let _ =
                    reply.send(crate::traced_passes::record(&self.conn, &p).map_err(Into::into));
            }
            Msg::Shutdown(reply) => {
                let _ = reply.send(self.commit(true));
                return true;
            }
        }
        false
    }

    fn create(&mut self, s: NewSession) -> Result<(i64, Arc<SessionStats>), StoreError> {
        // Never an id issued before, even if its session was deleted.
        let exists: bool = self
            .conn
            .query_row(
                "SELECT 1 FROM issued_session_ids WHERE id = ?1",
                [&s.id],
                |_| Ok(()),
            )
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
        // Ids start at 1: nothing is below it yet.
        stats.committed_seq.store(1, Ordering::Release);
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
        let mut last_pid = None;
        for h in &batch.headers {
            // A batch is nearly always one process's: one set lookup.
            if last_pid != Some(h.pid) && s.pids.insert(h.pid) {
                s.pids_dirty = true;
            }
            last_pid = Some(h.pid);
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
        self.spare.give(batch);
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
        self.checkpoints.committed();
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
            // Everything before the pending chunk (or all) is now visible.
            let committed = s
                .pending
                .as_ref()
                .map_or(s.next_seq, |(b, _)| b.first_seq());
            // Only a commit that made events visible wakes waiters.
            if s.stats.committed_seq.swap(committed, Ordering::AcqRel) != committed {
                s.stats.commits.ring();
            }
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
        tx.execute(
            "DELETE FROM chunk_func_stats WHERE id IN (SELECT id FROM chunks WHERE session = ?1)",
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
