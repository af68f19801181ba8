//! Query latency (p50/p95) of typical filters on 1 M and 10 M event sessions.
//! Run: `cargo bench -p strobe-store --bench query`. Sessions are synthetic
//! traces of 200 functions on 4 threads with stdout interleaved (1 in 50).

use std::collections::HashSet;
use std::time::Instant;
use strobe_core::event::{EventBatch, EventHeader, EventKind};
use strobe_store::{EventFilter, NewSession, QueryPage, ReturnValueFilter, Store};

fn fill(store: &Store, id: &str, total: u64) -> i64 {
    let (key, _) = store
        .create_session(NewSession {
            id: id.into(),
            binary_path: "/bin/bench".into(),
            project_root: "/".into(),
            launch_json: "{}".into(),
            started_at: 0,
            caps: strobe_store::EventCaps::both(total * 2),
        })
        .unwrap();
    let mut i = 0u64;
    while i < total {
        let mut b = EventBatch::with_capacity(4096, 4096);
        for _ in 0..4096 {
            let func = (i / 2 % 200) as u32 + 1;
            // One rare line and one rare return value mid-session: what an
            // agent usually searches for.
            let (kind, payload): (EventKind, &[u8]) = if i == total / 2 + 49 {
                (EventKind::Stdout, b"fatal: checksum mismatch")
            } else if i % 50 == 49 {
                (EventKind::Stdout, b"progress line from the program")
            } else if i.is_multiple_of(2) {
                (EventKind::FunctionEnter, b"")
            } else {
                (EventKind::FunctionExit, b"")
            };
            b.push(
                EventHeader {
                    ts_ns: i * 100,
                    kind: kind as u8,
                    pid: 1,
                    tid: (i / 1000 % 4) as u32 + 1,
                    func_id: if kind == EventKind::Stdout { 0 } else { func },
                    value: if i == total / 2 + 1 { 4242 } else { i % 7 },
                    ..Default::default()
                },
                payload,
            );
            i += 1;
        }
        store.append(key, b).unwrap();
    }
    store.flush().unwrap();
    key
}

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("q.db")).unwrap();
    for total in [1_000_000u64, 10_000_000] {
        let t = Instant::now();
        let key = fill(&store, &format!("s{total}"), total);
        println!(
            "session of {total} events (filled in {:.1} s)",
            t.elapsed().as_secs_f64()
        );
        let last_ts = (total - 1) * 100;
        let cases: Vec<(&str, EventFilter, u64)> = vec![
            ("first page, no filter", EventFilter::default(), 0),
            ("last page, no filter", EventFilter::default(), total - 50),
            (
                "eventType=stdout",
                EventFilter {
                    kinds: Some(EventKind::Stdout.bit()),
                    ..Default::default()
                },
                0,
            ),
            (
                "timeFrom=-1ms (relative)",
                EventFilter {
                    time_from: Some(last_ts.saturating_sub(1_000_000)),
                    ..Default::default()
                },
                0,
            ),
            (
                "function equals (1 of 200)",
                EventFilter {
                    func_ids: Some(HashSet::from([17])),
                    ..Default::default()
                },
                0,
            ),
            (
                "function_exit + returnValue=3",
                EventFilter {
                    kinds: Some(EventKind::FunctionExit.bit()),
                    return_value: Some(ReturnValueFilter {
                        equals_json: None,
                        typed: None,
                        equals: Some(3),
                        is_null: None,
                    }),
                    ..Default::default()
                },
                0,
            ),
            (
                "textContains",
                EventFilter {
                    payload_contains: Some(b"progress".to_vec()),
                    ..Default::default()
                },
                0,
            ),
            (
                "function_exit + returnValue (1 match)",
                EventFilter {
                    kinds: Some(EventKind::FunctionExit.bit()),
                    return_value: Some(ReturnValueFilter {
                        equals_json: None,
                        typed: None,
                        equals: Some(4242),
                        is_null: None,
                    }),
                    ..Default::default()
                },
                0,
            ),
            (
                "textContains (1 match)",
                EventFilter {
                    payload_contains: Some(b"checksum mismatch".to_vec()),
                    ..Default::default()
                },
                0,
            ),
        ];
        for (name, filter, offset) in cases {
            let mut times = Vec::new();
            let mut total_count = 0;
            for _ in 0..15 {
                let t = Instant::now();
                let r = store
                    .query(key, &filter, QueryPage { offset, limit: 50 })
                    .unwrap();
                times.push(t.elapsed().as_secs_f64() * 1e3);
                total_count = r.total_count;
            }
            println!(
                "  {name:<40} p50 {:>8.2} ms  p95 {:>8.2} ms  (totalCount {total_count})",
                pct(times.clone(), 0.5),
                pct(times, 0.95)
            );
        }
    }
}
