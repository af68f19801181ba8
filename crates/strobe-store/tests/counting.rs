//! Bounded counting: a query past its budget estimates `totalCount` with
//! exact bounds, and the content index rules out chunks by thread and by
//! duration, against the exact answers over the same real store.

use std::collections::HashSet;
use std::time::Duration;
use strobe_core::event::{EventBatch, EventHeader, EventKind};
use strobe_store::{Counting, EventFilter, NewSession, QueryPage, Store};

const TOTAL: u64 = 300_000;
/// The one event on thread 99, and the one long call.
const RARE: u64 = TOTAL / 2 + 1;

fn fill(store: &Store) -> i64 {
    let (key, _) = store
        .create_session(NewSession {
            id: "c".into(),
            binary_path: "/bin/x".into(),
            project_root: "/".into(),
            launch_json: "{}".into(),
            started_at: 0,
            caps: strobe_store::EventCaps::both(TOTAL * 2),
        })
        .unwrap();
    let mut b = EventBatch::default();
    for i in 0..TOTAL {
        let (kind, payload): (EventKind, &[u8]) = if i % 10 == 9 {
            (
                EventKind::Stdout,
                if i % 30 == 29 {
                    b"tick progress"
                } else {
                    b"other line"
                },
            )
        } else if i % 2 == 0 {
            (EventKind::FunctionEnter, b"")
        } else {
            (EventKind::FunctionExit, b"")
        };
        b.push(
            EventHeader {
                ts_ns: i * 100,
                kind: kind as u8,
                pid: 1,
                tid: if i == RARE {
                    99
                } else {
                    (i / 1000 % 4) as u32 + 1
                },
                func_id: if kind == EventKind::Stdout { 0 } else { 1 },
                duration_ns: if kind == EventKind::FunctionExit {
                    if i == RARE { 5_000_000 } else { 100 }
                } else {
                    0
                },
                ..Default::default()
            },
            payload,
        );
        if b.len() == 10_000 {
            store.append(key, std::mem::take(&mut b)).unwrap();
        }
    }
    store.append(key, b).unwrap();
    store.flush().unwrap();
    key
}

const PAGE: QueryPage = QueryPage {
    offset: 0,
    limit: 50,
};

#[test]
fn an_estimate_has_exact_bounds_around_the_exact_count_and_the_same_page() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let key = fill(&store);
    let wide = EventFilter {
        payload_contains: Some(b"progress".to_vec()),
        ..Default::default()
    };
    let exact = store.query(key, &wide, PAGE).unwrap();
    assert_eq!(exact.total_count, TOTAL / 30);
    assert!(exact.count_bounds.is_none());

    // No time at all past the page: an estimate, bounded exactly.
    let est = store
        .query_counting(key, &wide, PAGE, Counting::Within(Duration::ZERO))
        .unwrap();
    let (low, high) = est.count_bounds.expect("an estimate");
    assert!(
        low <= exact.total_count && exact.total_count <= high,
        "{low}..{high}"
    );
    assert!(low <= est.total_count && est.total_count <= high);
    assert!(est.chunks_decoded < exact.chunks_decoded);
    let ids = |r: &strobe_store::QueryResult| r.events.iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(ids(&est), ids(&exact), "the page itself is exact");
    assert!(est.has_more);
    // Matches are spread evenly here, so the estimate lands close.
    let off = est.total_count.abs_diff(exact.total_count) as f64 / exact.total_count as f64;
    assert!(
        off < 0.05,
        "estimate {} vs {}",
        est.total_count,
        exact.total_count
    );

    // Time enough for everything: exact, and no bounds.
    let all = store
        .query_counting(key, &wide, PAGE, Counting::Within(Duration::from_secs(60)))
        .unwrap();
    assert_eq!(all.total_count, exact.total_count);
    assert!(all.count_bounds.is_none());

    // A filter the summaries count is exact whatever the budget.
    let stdout = EventFilter {
        kinds: Some(EventKind::Stdout.bit()),
        ..Default::default()
    };
    let r = store
        .query_counting(key, &stdout, PAGE, Counting::Within(Duration::ZERO))
        .unwrap();
    assert_eq!(r.total_count, TOTAL / 10);
    assert!(r.count_bounds.is_none());
}

#[test]
fn the_index_rules_out_chunks_by_thread_and_by_duration() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let key = fill(&store);
    let rare_thread = EventFilter {
        tids: Some(HashSet::from([99])),
        ..Default::default()
    };
    let r = store.query(key, &rare_thread, PAGE).unwrap();
    assert_eq!(r.total_count, 1);
    assert_eq!(r.events[0].seq, RARE + 1, "ids start at 1");
    assert!(r.chunks_decoded <= 3, "decoded {} chunks", r.chunks_decoded);

    let long = EventFilter {
        min_duration_ns: Some(1_000_000),
        ..Default::default()
    };
    let r = store.query(key, &long, PAGE).unwrap();
    assert_eq!(r.total_count, 1);
    assert_eq!(r.events[0].header.duration_ns, 5_000_000);
    assert!(r.chunks_decoded <= 3, "decoded {} chunks", r.chunks_decoded);

    // Nothing is lost to the index: a common thread's count is exact.
    let common = EventFilter {
        tids: Some(HashSet::from([1])),
        ..Default::default()
    };
    let want = (0..TOTAL)
        .filter(|i| *i != RARE && i / 1000 % 4 == 0)
        .count() as u64;
    assert_eq!(store.query(key, &common, PAGE).unwrap().total_count, want);
}
