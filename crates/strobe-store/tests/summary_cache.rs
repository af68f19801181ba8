//! Chunk summaries are kept in memory between queries (summary_cache.rs):
//! a store that queried before must answer exactly as a store that never
//! did, after chunks are added, after eviction deleted and rewrote some, and
//! after another session or this one is deleted.

use strobe_core::event::{EventBatch, EventHeader, EventKind};
use strobe_store::{EventCaps, EventFilter, FunctionStats, QueryPage, Store};

mod common;
use common::session;

/// `n` events from timestamp `from`: calls of 5 functions and output lines.
fn append(store: &Store, key: i64, from: u64, n: u64) {
    let mut b = EventBatch::default();
    for i in from..from + n {
        let kind = match i % 4 {
            0 => EventKind::FunctionEnter,
            1 => EventKind::FunctionExit,
            2 => EventKind::Stdout,
            _ => EventKind::FunctionEnter,
        };
        let h = EventHeader {
            ts_ns: i * 10,
            kind: kind as u8,
            func_id: if kind == EventKind::Stdout {
                0
            } else {
                (i % 5) as u32 + 1
            },
            pid: 9,
            tid: 1,
            duration_ns: i % 1000,
            ..Default::default()
        };
        let text = format!("line {i}");
        b.push(
            h,
            if kind == EventKind::Stdout {
                text.as_bytes()
            } else {
                b""
            },
        );
    }
    store.append(key, b).unwrap();
    store.flush().unwrap();
}

fn filters() -> Vec<(&'static str, EventFilter)> {
    vec![
        ("all", EventFilter::default()),
        (
            "one function",
            EventFilter {
                func_ids: Some([3].into()),
                ..Default::default()
            },
        ),
        (
            "text",
            EventFilter {
                payload_contains: Some(b"line 1".to_vec()),
                ..Default::default()
            },
        ),
        (
            "long calls",
            EventFilter {
                min_duration_ns: Some(990),
                ..Default::default()
            },
        ),
        (
            "a time range",
            EventFilter {
                time_from: Some(30_000),
                time_to: Some(90_000),
                ..Default::default()
            },
        ),
    ]
}

/// Every matching event's (seq, ts) and the total, and the aggregate.
fn answer(store: &Store, key: i64, f: &EventFilter) -> (u64, Vec<(u64, u64)>, Vec<FunctionStats>) {
    let r = store
        .query(
            key,
            f,
            QueryPage {
                offset: 0,
                limit: usize::MAX,
            },
        )
        .unwrap();
    let events = r.events.iter().map(|e| (e.seq, e.header.ts_ns)).collect();
    let mut functions = store.aggregate_functions(key, f).unwrap();
    functions.sort_by_key(|s| s.func_id);
    (r.total_count, events, functions)
}

/// The same questions to `cached` (which has answered before) and to a
/// store opened now on the same file (which has not).
fn same_as_fresh(cached: &Store, path: &std::path::Path, key: i64, when: &str) {
    let fresh = Store::open(path).unwrap();
    for (name, f) in filters() {
        let (want, got) = (answer(&fresh, key, &f), answer(cached, key, &f));
        assert_eq!(got, want, "{name}, {when}");
    }
    fresh.close().unwrap();
}

#[test]
fn a_store_that_queried_before_answers_as_one_that_never_did() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    // Uncapped: its chunks are full, and past 32 of them `aggregate` sums
    // blocks of chunk statistics.
    let other = session(&store, "other", EventCaps::both(10_000_000));
    // Keeps 30,000 calls and 30,000 output events: eviction starts once
    // the fourth batch is in.
    let key = session(
        &store,
        "s",
        EventCaps {
            trace: 30_000,
            output: 30_000,
        },
    );
    let mut from = 0;
    for batch in 0..6 {
        append(&store, key, from, 15_000);
        append(&store, other, from * 3, 45_000);
        from += 15_000;
        let (all, _, _) = answer(&store, key, &EventFilter::default());
        assert!(all > 0);
        same_as_fresh(&store, &path, key, &format!("after batch {batch}"));
        same_as_fresh(
            &store,
            &path,
            other,
            &format!("uncapped, after batch {batch}"),
        );
    }
    let row = store.session("s").unwrap().unwrap();
    assert!(row.evicted > 0, "eviction ran");

    // Another session going away changes nothing here.
    store.delete_session(other).unwrap();
    same_as_fresh(&store, &path, key, "after the other session was deleted");
    // This one going away leaves nothing to answer.
    store.delete_session(key).unwrap();
    let (n, events, functions) = answer(&store, key, &EventFilter::default());
    assert_eq!((n, events.len(), functions.len()), (0, 0, 0));
}

#[test]
fn a_database_made_before_deletions_were_counted_gets_the_count_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    let key = session(&store, "old", EventCaps::both(1_000_000));
    append(&store, key, 0, 10_000);
    store.close().unwrap();
    // What a database of the release before looks like.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TRIGGER chunk_deleted; ALTER TABLE sessions DROP COLUMN chunk_deletes;",
    )
    .unwrap();
    drop(conn);

    let store = Store::open(&path).unwrap();
    let (n, _, _) = answer(&store, key, &EventFilter::default());
    assert_eq!(n, 10_000);
    store.delete_session(key).unwrap();
    let (n, _, _) = answer(&store, key, &EventFilter::default());
    assert_eq!(n, 0);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let triggers: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'chunk_deleted'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(triggers, 1);
}

#[test]
fn chunks_given_the_ids_of_another_sessions_deleted_chunks_are_seen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    let low = session(&store, "low", EventCaps::both(10_000_000));
    let high = session(&store, "high", EventCaps::both(10_000_000));
    append(&store, low, 0, 20_000);
    append(&store, high, 0, 20_000);
    same_as_fresh(&store, &path, low, "before");
    // The table's largest ids were the other session's: once its chunks
    // are deleted, SQLite gives them again, to this session's new chunks.
    store.delete_session(high).unwrap();
    append(&store, low, 20_000, 20_000);
    same_as_fresh(&store, &path, low, "after ids were given again");
    let (n, _, _) = answer(&store, low, &EventFilter::default());
    assert_eq!(n, 40_000);
}

#[test]
fn a_session_given_a_deleted_sessions_key_is_not_mistaken_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    let first = session(&store, "first", EventCaps::both(10_000_000));
    append(&store, first, 0, 20_000);
    same_as_fresh(&store, &path, first, "the first session");
    store.delete_session(first).unwrap();
    // SQLite gives the largest key again once its row is gone.
    let second = session(&store, "second", EventCaps::both(10_000_000));
    assert_eq!(second, first, "the key is reused (what this test is about)");
    append(&store, second, 0, 5_000);
    same_as_fresh(&store, &path, second, "the second session, same key");
    let (n, _, _) = answer(&store, second, &EventFilter::default());
    assert_eq!(n, 5_000);
}
