//! Session rows and live counters.

use rusqlite::{Connection, OptionalExtension, Row};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the store needs to create a session.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// Human-readable id (`myapp-2026-02-05-14h32`).
    pub id: String,
    /// Absolute path of the launched executable.
    pub binary_path: String,
    /// The project root given at launch.
    pub project_root: String,
    /// The launch request (args, cwd, env keys) as JSON, for the record.
    pub launch_json: String,
    /// Wall-clock start, ms since the epoch.
    pub started_at: i64,
    /// How many events are kept before the oldest are evicted.
    pub caps: EventCaps,
}

/// The per-session eviction budgets. Function calls (the trace load) and the
/// program's own evidence (output, crashes, exits, snapshots, logpoints) are
/// counted apart, so a flood of traced calls never evicts the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventCaps {
    /// `events.maxPerSession`: function enter/exit events kept.
    pub trace: u64,
    /// `events.maxOutputPerSession`: every other event kept.
    pub output: u64,
}

impl EventCaps {
    /// The same budget for both.
    pub fn both(n: u64) -> EventCaps {
        EventCaps {
            trace: n,
            output: n,
        }
    }
}

/// Changes to a session's lifecycle columns; `None` leaves a column as it is.
#[derive(Debug, Clone, Default)]
pub struct SessionUpdate {
    /// Target pid once spawned.
    pub pid: Option<u32>,
    /// New status (`running`, `exited`, `crashed`, `stopped`, `failed`).
    pub status: Option<String>,
    /// Wall-clock end, ms since the epoch.
    pub ended_at: Option<i64>,
    /// Exit code, when the process exited normally.
    pub exit_code: Option<i32>,
    /// Terminating signal name (`SIGSEGV`, …).
    pub exit_signal: Option<String>,
    /// Human-readable reason for the end state (why a session failed, …).
    pub end_reason: Option<String>,
    /// Keep the data after stop.
    pub retained: Option<bool>,
    /// Wall-clock time of the session clock's zero (what event timestamps
    /// count from), ms since the epoch, once the program is started; the
    /// agent's tool calls, timed by the wall clock, line up with events by it.
    pub started_at: Option<i64>,
}

/// A session as stored.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionRow {
    /// Internal integer key.
    #[serde(skip)]
    pub key: i64,
    /// Human-readable id.
    pub session_id: String,
    /// Launched executable.
    pub binary_path: String,
    /// Project root.
    pub project_root: String,
    /// Target pid (None until spawned).
    pub pid: Option<u32>,
    /// Wall-clock start (ms since the epoch).
    pub started_at: i64,
    /// Wall-clock end (ms since the epoch).
    pub ended_at: Option<i64>,
    /// Lifecycle state.
    pub status: String,
    /// Exit code.
    pub exit_code: Option<i32>,
    /// Terminating signal.
    pub exit_signal: Option<String>,
    /// Why the session ended the way it did.
    pub end_reason: Option<String>,
    /// Data kept after stop.
    pub retained: bool,
    /// Events currently stored.
    pub event_count: u64,
    /// Events evicted by the per-session caps (function calls and output).
    pub evicted: u64,
    /// Of `evicted`, the output, crash, exit, snapshot and logpoint events
    /// (evicted only by `events.maxOutputPerSession`).
    pub evicted_output: u64,
    /// Events lost before reaching the store.
    pub dropped: u64,
    /// Encoded bytes stored.
    pub stored_bytes: u64,
    /// Every pid that produced events.
    pub pids: Vec<u32>,
}

const COLUMNS: &str = "key, id, binary_path, project_root, pid, started_at, ended_at, status, \
     exit_code, exit_signal, end_reason, retained, event_count, evicted, dropped, stored_bytes, pids, \
     evicted_output";

fn from_row(r: &Row<'_>) -> rusqlite::Result<SessionRow> {
    let pids: String = r.get(16)?;
    Ok(SessionRow {
        key: r.get(0)?,
        session_id: r.get(1)?,
        binary_path: r.get(2)?,
        project_root: r.get(3)?,
        pid: r.get(4)?,
        started_at: r.get(5)?,
        ended_at: r.get(6)?,
        status: r.get(7)?,
        exit_code: r.get(8)?,
        exit_signal: r.get(9)?,
        end_reason: r.get(10)?,
        retained: r.get::<_, i64>(11)? != 0,
        event_count: r.get::<_, i64>(12)? as u64,
        evicted: r.get::<_, i64>(13)? as u64,
        dropped: r.get::<_, i64>(14)? as u64,
        stored_bytes: r.get::<_, i64>(15)? as u64,
        pids: pids.split(',').filter_map(|p| p.parse().ok()).collect(),
        evicted_output: r.get::<_, i64>(17)? as u64,
    })
}

pub(crate) fn by_id(conn: &Connection, id: &str) -> rusqlite::Result<Option<SessionRow>> {
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1"),
        [id],
        from_row,
    )
    .optional()
}

pub(crate) fn all(conn: &Connection) -> rusqlite::Result<Vec<SessionRow>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM sessions ORDER BY started_at, key"
    ))?;
    let rows = stmt.query_map([], from_row)?;
    rows.collect()
}

pub(crate) fn apply_update(conn: &Connection, key: i64, u: &SessionUpdate) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE sessions SET
            pid = COALESCE(?2, pid),
            status = COALESCE(?3, status),
            ended_at = COALESCE(?4, ended_at),
            exit_code = COALESCE(?5, exit_code),
            exit_signal = COALESCE(?6, exit_signal),
            end_reason = COALESCE(?7, end_reason),
            retained = COALESCE(?8, retained),
            started_at = COALESCE(?9, started_at)
         WHERE key = ?1",
        rusqlite::params![
            key,
            u.pid,
            u.status,
            u.ended_at,
            u.exit_code,
            u.exit_signal,
            u.end_reason,
            u.retained.map(i64::from),
            u.started_at
        ],
    )?;
    Ok(())
}

/// Live counters of a session, updated by the writer and read by anyone
/// without touching the database.
#[derive(Debug, Default)]
pub struct SessionStats {
    /// Events handed to the store (appended), including not yet committed ones.
    pub received: AtomicU64,
    /// Events committed and currently stored.
    pub stored: AtomicU64,
    /// Events evicted by the per-session caps, oldest first.
    pub evicted: AtomicU64,
    /// Of `evicted`, the non-trace events (output, crashes, exits, …).
    pub evicted_output: AtomicU64,
    /// Events lost before reaching the store (reported by producers).
    pub dropped: AtomicU64,
    /// Event ids below this are committed: a query without a flush sees them.
    pub committed_seq: AtomicU64,
    /// Rung after each commit of this session's events (and by its owner at
    /// the session's end), so waiters learn of new events without polling.
    pub commits: CommitSignal,
}

impl SessionStats {
    /// Reads a counter.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// A generation counter and a condition variable: `ring` bumps the
/// generation and wakes every waiter; `wait_past` sleeps until the
/// generation moves past one the waiter saw (or a timeout).
#[derive(Debug, Default)]
pub struct CommitSignal {
    generation: std::sync::Mutex<u64>,
    rung: std::sync::Condvar,
}

impl CommitSignal {
    /// The current generation (what a waiter saw last).
    pub fn generation(&self) -> u64 {
        *self.generation.lock().expect("commit signal lock")
    }

    /// Wakes every waiter.
    pub fn ring(&self) {
        *self.generation.lock().expect("commit signal lock") += 1;
        self.rung.notify_all();
    }

    /// Waits until the generation is past `seen` or `timeout` passed; the
    /// generation then.
    pub fn wait_past(&self, seen: u64, timeout: std::time::Duration) -> u64 {
        let g = self.generation.lock().expect("commit signal lock");
        let (g, _) = self
            .rung
            .wait_timeout_while(g, timeout, |g| *g <= seen)
            .expect("commit signal lock");
        *g
    }
}

/// A traced function as the query engine names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionRow {
    /// Session-local function id (what events carry).
    pub func_id: u32,
    /// Qualified, demangled name.
    pub name: String,
    /// Linkage (mangled) name.
    pub name_raw: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Declaration line.
    pub line: Option<u32>,
}

/// One opaque record of how a session's captured values decode (the
/// session layer decides what `kind`, `id` and `sub` mean; a blob with the
/// same three replaces the earlier one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureBlob {
    /// What the blob is.
    pub kind: u32,
    /// First part of its key.
    pub id: u32,
    /// Second part of its key.
    pub sub: u32,
    /// The serialized content.
    pub body: Vec<u8>,
}
