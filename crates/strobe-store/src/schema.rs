//! Database schema and connection set-up.

use rusqlite::Connection;
use std::path::Path;
use std::time::Duration;

/// Bumped when the on-disk layout changes incompatibly.
pub const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    key            INTEGER PRIMARY KEY,
    id             TEXT NOT NULL UNIQUE,
    binary_path    TEXT NOT NULL,
    project_root   TEXT NOT NULL,
    launch_json    TEXT NOT NULL,
    pid            INTEGER,
    started_at     INTEGER NOT NULL,
    ended_at       INTEGER,
    status         TEXT NOT NULL,
    exit_code      INTEGER,
    exit_signal    TEXT,
    end_reason     TEXT,
    retained       INTEGER NOT NULL DEFAULT 0,
    event_count    INTEGER NOT NULL DEFAULT 0,
    next_seq       INTEGER NOT NULL DEFAULT 1,
    evicted        INTEGER NOT NULL DEFAULT 0,
    dropped        INTEGER NOT NULL DEFAULT 0,
    stored_bytes   INTEGER NOT NULL DEFAULT 0,
    pids           TEXT NOT NULL DEFAULT '',
    evicted_output INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS chunks (
    id           INTEGER PRIMARY KEY,
    session      INTEGER NOT NULL,
    first_seq    INTEGER NOT NULL,
    count        INTEGER NOT NULL,
    ts_min       INTEGER NOT NULL,
    ts_max       INTEGER NOT NULL,
    kind_mask    INTEGER NOT NULL,
    kind_counts  BLOB NOT NULL,
    pid_min      INTEGER NOT NULL,
    pid_max      INTEGER NOT NULL,
    func_counts  BLOB NOT NULL,
    data         BLOB NOT NULL
);
-- Kept apart from `chunks` so that reading an index does not walk the
-- overflow pages of the chunk's data. Chunks stored before indexes existed
-- have no row (never ruled out).
CREATE TABLE IF NOT EXISTS chunk_indexes (
    id       INTEGER PRIMARY KEY,
    content  BLOB NOT NULL
);
-- Calls and returns per function of each chunk (func_stats.rs), apart for
-- the same reason. A chunk without a row is decoded instead.
CREATE TABLE IF NOT EXISTS chunk_func_stats (
    id     INTEGER PRIMARY KEY,
    stats  BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_session ON chunks(session, first_seq);
CREATE TABLE IF NOT EXISTS functions (
    session   INTEGER NOT NULL,
    func_id   INTEGER NOT NULL,
    name      TEXT NOT NULL,
    name_raw  TEXT,
    file      TEXT,
    line      INTEGER,
    PRIMARY KEY (session, func_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS captures (
    session   INTEGER NOT NULL,
    kind      INTEGER NOT NULL,
    id        INTEGER NOT NULL,
    sub       INTEGER NOT NULL,
    body      BLOB NOT NULL,
    PRIMARY KEY (session, kind, id, sub)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS threads (
    session   INTEGER NOT NULL,
    pid       INTEGER NOT NULL,
    tid       INTEGER NOT NULL,
    name      TEXT NOT NULL,
    PRIMARY KEY (session, pid, tid)
) WITHOUT ROWID;
-- Each test's recent durations (test_history.rs keeps the last ten).
CREATE TABLE IF NOT EXISTS test_durations (
    project_root  TEXT NOT NULL,
    framework     TEXT NOT NULL,
    name          TEXT NOT NULL,
    finished_at   INTEGER NOT NULL,
    duration_ms   REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS test_durations_by_test
    ON test_durations(project_root, framework, name, finished_at);
-- The last passing traced run of each test and patterns (traced_passes.rs).
CREATE TABLE IF NOT EXISTS traced_passes (
    project_root  TEXT NOT NULL,
    test          TEXT NOT NULL,
    patterns      TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    finished_at   INTEGER NOT NULL,
    PRIMARY KEY (project_root, test, patterns)
);
-- Every MCP tool call an agent made on a session (agent_calls.rs).
CREATE TABLE IF NOT EXISTS agent_calls (
    seq             INTEGER PRIMARY KEY,
    session         INTEGER NOT NULL,
    started_us      INTEGER NOT NULL,
    duration_us     INTEGER NOT NULL,
    tool            TEXT NOT NULL,
    args            TEXT NOT NULL,
    response_bytes  INTEGER NOT NULL,
    is_error        INTEGER NOT NULL,
    summary         TEXT NOT NULL,
    client          TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS agent_calls_by_session ON agent_calls(session, seq);
-- Every session id the store ever issued, deleted sessions' included: a
-- new session never takes an old id, so an agent holding the id of a
-- deleted session is told it is gone instead of reading another
-- program's data. Filled by a trigger on `sessions` (TRIGGERS).
CREATE TABLE IF NOT EXISTS issued_session_ids (id TEXT PRIMARY KEY) WITHOUT ROWID;
-- How to set widgets with no native route, learned by debug_ui_action
-- (motor_plans.rs).
CREATE TABLE IF NOT EXISTS motor_plans (
    app         TEXT NOT NULL,
    role        TEXT NOT NULL,
    signature   TEXT NOT NULL,
    plan        TEXT NOT NULL,
    uses        INTEGER NOT NULL DEFAULT 0,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (app, role, signature)
);
"#;

/// How much of the database file a connection maps (address space, not
/// memory: the pages are the kernel's page cache either way).
const MMAP_BYTES: i64 = 4 << 30;

/// The page size of a new database. Chunks are blobs of up to a few
/// hundred KB stored across overflow pages, and every page is a WAL frame
/// (one write call, a checksum) then a checkpoint copy: 16 KB pages took
/// ingest from 6.3–7.3 to 10.2–10.3 M trace events/s against 4 KB
/// (`cargo bench -p strobe-store --bench ingest`, 2026-11-29; 64 KB pages
/// varied 7.4–11.1, and make every small row update write 64 KB).
const PAGE_BYTES: i64 = 16 * 1024;

/// Opens a connection with the pragmas every connection needs.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    // Only a new database takes it (before its first table and before WAL);
    // an existing one keeps the size it was made with.
    conn.pragma_update(None, "page_size", PAGE_BYTES)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

/// Opens a connection for queries: as [`open`], reading the database
/// through a memory map. A query at 10 M events touches ~10 MB of pages
/// (every chunk's summary and its first overflow page), which through
/// read() calls cost more than the rest of the query. The writer does not
/// map: its file grows all the time, and each growth remaps.
pub fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let conn = open(path)?;
    conn.pragma_update(None, "mmap_size", MMAP_BYTES)?;
    Ok(conn)
}

/// Columns added after a table was first released: (table, column, definition).
/// A database made before one of them gets it on open.
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("sessions", "evicted_output", "INTEGER NOT NULL DEFAULT 0"),
    ("agent_calls", "client", "TEXT NOT NULL DEFAULT ''"),
    // Chunk rows of the session deleted so far (summary_cache.rs).
    ("sessions", "chunk_deletes", "INTEGER NOT NULL DEFAULT 0"),
];

/// Counts deleted chunks per session, so cached chunk lists know they are
/// stale (summary_cache.rs); created once the column exists. Remembers
/// every session id created (`issued_session_ids`).
const TRIGGERS: &str = "
CREATE TRIGGER IF NOT EXISTS chunk_deleted AFTER DELETE ON chunks BEGIN
    UPDATE sessions SET chunk_deletes = chunk_deletes + 1 WHERE key = OLD.session;
END;
CREATE TRIGGER IF NOT EXISTS session_id_issued AFTER INSERT ON sessions BEGIN
    INSERT OR IGNORE INTO issued_session_ids(id) VALUES (NEW.id);
END;";

/// Creates the schema if it is missing and adds columns older databases lack.
pub fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA)?;
    for (table, column, definition) in ADDED_COLUMNS {
        let present: bool = conn.query_row(
            &format!("SELECT COUNT(*) FROM pragma_table_info('{table}') WHERE name = ?1"),
            [column],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )?;
        if !present {
            conn.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN {column} {definition}"
            ))?;
        }
    }
    conn.execute_batch(TRIGGERS)?;
    // A database from before `issued_session_ids` remembers the ids it
    // still holds (those deleted before are beyond recall).
    conn.execute_batch("INSERT OR IGNORE INTO issued_session_ids(id) SELECT id FROM sessions")?;
    conn.execute(
        "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?1)",
        [SCHEMA_VERSION.to_string()],
    )?;
    Ok(())
}
