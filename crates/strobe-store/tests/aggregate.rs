//! `aggregate` (per-function statistics) answers chunks a filter covers whole
//! from their stored statistics and decodes the rest: every filter shape
//! must give exactly what counting the decoded events gives, over a real
//! store, including chunks stored before the statistics existed and chunks
//! rewritten by eviction.

use std::collections::{BTreeMap, HashSet};
use strobe_core::event::{EventBatch, EventHeader, EventKind};
use strobe_store::{EventCaps, EventFilter, FunctionStats, QueryPage, Store};

mod common;
use common::session;

/// Past 32 chunks of 4,096 (74 chunks), so `aggregate` also merges blocks
/// of summed chunk statistics.
const TOTAL: u64 = 300_000;

/// Calls of 7 functions on 3 threads of 2 processes, with durations and
/// return values (0, -1 as 32 and 64 bits, others) varying, and output
/// lines between them.
fn fill(store: &Store, key: i64) {
    let mut b = EventBatch::default();
    let mut open: Vec<(u32, u64)> = Vec::new();
    for i in 0..TOTAL {
        let base = EventHeader {
            ts_ns: i * 50,
            pid: if i % 3 == 0 { 7 } else { 8 },
            tid: (i % 3) as u32 + 1,
            ..Default::default()
        };
        let h = if i % 11 == 10 {
            EventHeader {
                kind: EventKind::Stdout as u8,
                ..base
            }
        } else if open.len() < 3 && (i % 5 != 4 || open.is_empty()) {
            let func = (i % 13 % 7) as u32 + 1;
            open.push((func, i));
            EventHeader {
                kind: EventKind::FunctionEnter as u8,
                func_id: func,
                ..base
            }
        } else {
            let (func, began) = open.pop().unwrap();
            EventHeader {
                kind: EventKind::FunctionExit as u8,
                func_id: func,
                duration_ns: (i - began) * 50 + i % 97,
                value: match i % 6 {
                    0 => 0,
                    1 => u64::MAX,
                    2 => u64::from(u32::MAX),
                    _ => i,
                },
                ..base
            }
        };
        let payload: &[u8] = if h.kind == EventKind::Stdout as u8 {
            b"line"
        } else {
            b""
        };
        b.push(h, payload);
        if b.len() == 7_000 {
            store.append(key, std::mem::take(&mut b)).unwrap();
        }
    }
    store.append(key, b).unwrap();
    store.flush().unwrap();
}

/// What the filter's matching events add up to, counted one by one.
fn counted(store: &Store, key: i64, filter: &EventFilter) -> Vec<FunctionStats> {
    let all = store
        .query(
            key,
            filter,
            QueryPage {
                offset: 0,
                limit: usize::MAX,
            },
        )
        .unwrap();
    let mut by: BTreeMap<u32, FunctionStats> = BTreeMap::new();
    for e in &all.events {
        let h = &e.header;
        if h.func_id == 0
            || (h.kind != EventKind::FunctionEnter as u8 && h.kind != EventKind::FunctionExit as u8)
        {
            continue;
        }
        by.entry(h.func_id)
            .or_insert_with(|| FunctionStats {
                func_id: h.func_id,
                ..Default::default()
            })
            .add_event(h.kind, h.duration_ns, h.value);
    }
    by.into_values().collect()
}

fn aggregated(store: &Store, key: i64, filter: &EventFilter) -> Vec<FunctionStats> {
    let mut v = store.aggregate_functions(key, filter).unwrap();
    v.sort_by_key(|s| s.func_id);
    v
}

fn shapes() -> Vec<(&'static str, EventFilter)> {
    let mid = TOTAL * 50 / 2;
    vec![
        ("no filter", EventFilter::default()),
        (
            "a time range cutting chunks",
            EventFilter {
                time_from: Some(mid - 123_457),
                time_to: Some(mid + 250_001),
                ..Default::default()
            },
        ),
        (
            "two functions",
            EventFilter {
                func_ids: Some(HashSet::from([2, 5])),
                ..Default::default()
            },
        ),
        (
            "enters only",
            EventFilter {
                kinds: Some(EventKind::FunctionEnter.bit()),
                ..Default::default()
            },
        ),
        (
            "exits only",
            EventFilter {
                kinds: Some(EventKind::FunctionExit.bit()),
                ..Default::default()
            },
        ),
        (
            "a process",
            EventFilter {
                pid: Some(7),
                ..Default::default()
            },
        ),
        (
            "a thread",
            EventFilter {
                tids: Some(HashSet::from([2])),
                ..Default::default()
            },
        ),
        (
            "long calls",
            EventFilter {
                min_duration_ns: Some(200),
                ..Default::default()
            },
        ),
        (
            "an id range",
            EventFilter {
                seq_from: Some(10_001),
                seq_to: Some(70_000),
                ..Default::default()
            },
        ),
    ]
}

#[test]
fn every_filter_shape_aggregates_exactly_what_its_events_add_up_to() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let store = Store::open(&db).unwrap();
    let key = session(&store, "a", EventCaps::both(TOTAL * 2));
    fill(&store, key);
    for (name, filter) in shapes() {
        let want = counted(&store, key, &filter);
        assert!(!want.is_empty(), "{name}: the fixture has matches");
        assert_eq!(aggregated(&store, key, &filter), want, "{name}");
    }
    let all = aggregated(&store, key, &EventFilter::default());
    assert!(
        all.iter()
            .all(|s| s.returned_zero > 0 && s.returned_minus_one > 0)
    );
    let total: u64 = all.iter().map(|s| s.calls + s.returns).sum();
    assert!(total > TOTAL * 8 / 10, "{total}");

    // Chunks stored before their statistics existed are decoded instead.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let stored: i64 = conn
        .query_row("SELECT COUNT(*) FROM chunk_func_stats", [], |r| r.get(0))
        .unwrap();
    assert!(stored > 10, "{stored} chunks with statistics");
    conn.execute(
        "DELETE FROM chunk_func_stats WHERE id IN (SELECT id FROM chunk_func_stats WHERE id % 2 = 0)",
        [],
    )
    .unwrap();
    // A store opened now: the one above keeps the summaries it read.
    store.close().unwrap();
    let store = Store::open(&db).unwrap();
    for (name, filter) in shapes() {
        assert_eq!(
            aggregated(&store, key, &filter),
            counted(&store, key, &filter),
            "{name}, half the statistics missing"
        );
    }

    // And a session's statistics go with it.
    store.delete_session(key).unwrap();
    let left: i64 = conn
        .query_row("SELECT COUNT(*) FROM chunk_func_stats", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0);
}

#[test]
fn chunks_rewritten_by_eviction_aggregate_only_what_they_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    // Keep the last third of the calls, and all the output.
    let key = session(
        &store,
        "e",
        EventCaps {
            trace: TOTAL / 3,
            output: TOTAL,
        },
    );
    fill(&store, key);
    let row = store.session("e").unwrap().unwrap();
    assert!(row.evicted > 0, "eviction ran");
    for (name, filter) in shapes() {
        assert_eq!(
            aggregated(&store, key, &filter),
            counted(&store, key, &filter),
            "{name}, after eviction"
        );
    }
}
