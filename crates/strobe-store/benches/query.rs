//! Query latency (p50/p95) of every `debug_query` filter shape on 1 M and
//! 10 M event sessions, three ways in one run: Strobe as `debug_query`
//! answers (the count estimated, with exact bounds, once 6 ms are spent
//! past the page), Strobe with `exactCount`, and the baseline of one
//! SQLite row per event with an index on every filtered column.
//!
//! Run: `cargo bench -p strobe-store --bench query`. Sessions are synthetic
//! traces of 200 functions on 4 threads with stdout interleaved (1 in 50),
//! one rare line, return value, thread and long call mid-session.
//! `STROBE_BENCH_SIZES=1000000` limits the sizes; `STROBE_BENCH_BASELINE=0`
//! skips the SQLite baseline; `STROBE_BENCH_ONLY=aggregate` runs only the
//! rows whose name contains that text. The last rows are `aggregate:
//! "function"` (per-function statistics).

use rusqlite::{Connection, params};
use std::collections::HashSet;
use std::time::{Duration, Instant};
use strobe_core::event::{EventBatch, EventHeader, EventKind};
use strobe_store::{Counting, EventFilter, NewSession, QueryPage, ReturnValueFilter, Store};

const RUNS: usize = 15;
/// What `debug_query` gives its count (strobe_query::COUNT_BUDGET).
const BUDGET: Duration = Duration::from_millis(6);

/// Event `i` of a session of `total`: (header, payload). Every 50th event
/// is an output line; the others are calls, each enter followed by its
/// exit on the same thread, timed so the store (which times a call from
/// its enter) sees the same durations as the baseline.
fn event(i: u64, total: u64) -> (EventHeader, &'static [u8]) {
    let mid = total / 2;
    if i % 50 == 49 {
        let text: &[u8] = if i == mid + 49 {
            b"fatal: checksum mismatch"
        } else {
            b"progress line from the program"
        };
        let h = EventHeader {
            ts_ns: i * 100,
            kind: EventKind::Stdout as u8,
            pid: 1,
            ..Default::default()
        };
        return (h, text);
    }
    // n: this call event's rank among call events; pairs are (even, odd).
    let n = i - i / 50;
    let rare = (mid - mid / 50) & !1;
    let exit = n % 2 == 1;
    let duration_ns = match (exit, n) {
        (false, _) => 0,
        (true, n) if n == rare + 3 => 9_000_000,
        (true, n) if n % 1000 == 1 => 60_000,
        _ => 100,
    };
    let enter_i = if (i - 1) % 50 == 49 { i - 2 } else { i - 1 };
    let h = EventHeader {
        ts_ns: if exit {
            enter_i * 100 + duration_ns
        } else {
            i * 100
        },
        kind: if exit {
            EventKind::FunctionExit
        } else {
            EventKind::FunctionEnter
        } as u8,
        pid: 1,
        tid: if n / 2 == rare / 2 {
            77
        } else {
            (n / 1000 % 4) as u32 + 1
        },
        func_id: (n / 2 % 200) as u32 + 1,
        value: if n == rare + 1 { 4242 } else { i % 7 },
        duration_ns,
        ..Default::default()
    };
    (h, b"")
}

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
        for _ in 0..4096.min(total - i) {
            let (h, payload) = event(i, total);
            b.push(h, payload);
            i += 1;
        }
        store.append(key, b).unwrap();
    }
    store.flush().unwrap();
    key
}

/// The baseline: one row per event, every filtered column indexed.
fn fill_rows(path: &std::path::Path, total: u64) -> Connection {
    let c = Connection::open(path).unwrap();
    c.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;
         CREATE TABLE ev (seq INTEGER PRIMARY KEY, ts INTEGER, kind INTEGER, pid INTEGER,
                          tid INTEGER, func INTEGER, value INTEGER, dur INTEGER, payload BLOB);",
    )
    .unwrap();
    let mut i = 0u64;
    while i < total {
        let tx = c.unchecked_transaction().unwrap();
        {
            let mut st = tx
                .prepare_cached("INSERT INTO ev VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
                .unwrap();
            for _ in 0..100_000.min(total - i) {
                let (h, p) = event(i, total);
                st.execute(params![
                    i as i64 + 1,
                    h.ts_ns as i64,
                    h.kind,
                    h.pid,
                    h.tid,
                    h.func_id,
                    h.value as i64,
                    h.duration_ns as i64,
                    p
                ])
                .unwrap();
                i += 1;
            }
        }
        tx.commit().unwrap();
    }
    c.execute_batch(
        "CREATE INDEX ev_kind ON ev(kind, seq); CREATE INDEX ev_ts ON ev(ts);
         CREATE INDEX ev_func ON ev(func, seq); CREATE INDEX ev_tid ON ev(tid, seq);
         CREATE INDEX ev_value ON ev(kind, value, seq); CREATE INDEX ev_dur ON ev(dur);",
    )
    .unwrap();
    c
}

/// The baseline's (p50, p95) beside Strobe's p95, or nothing without one.
fn baseline_text(base: Option<(f64, f64)>, p95: f64) -> String {
    base.map_or(String::new(), |(b50, b95)| {
        format!(
            "  sqlite rows {b50:.2}/{b95:.2} ms (p95 {:.1}x Strobe's)",
            b95 / p95
        )
    })
}

/// `STROBE_BENCH_ONLY=<text>` runs only the rows whose name contains it.
fn selected(name: &str) -> bool {
    std::env::var("STROBE_BENCH_ONLY").map_or(true, |only| name.contains(only.as_str()))
}

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// (p50, p95) in ms of `f` over [`RUNS`] runs, after one not counted (the
/// pages it maps in are the previous row's cost, not this one's).
fn time(f: impl FnMut()) -> (f64, f64) {
    time_runs(RUNS, f)
}

/// (p50, p95) in ms of `f` over `runs` runs, after one not counted.
fn time_runs(runs: usize, mut f: impl FnMut()) -> (f64, f64) {
    f();
    let times: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    (pct(times.clone(), 0.5), pct(times, 0.95))
}

/// Four threads querying a session (a mix of filters, `debug_query`'s
/// counting) for `secs` while, if `ingest`, another thread appends to it at
/// full rate: (p50, p95, max) in ms and the events appended per second.
fn under_ingest(store: &Store, id: &str, ingest: bool, secs: u64) -> (f64, f64, f64, f64) {
    let (key, _) = store
        .create_session(NewSession {
            id: id.into(),
            binary_path: "/bin/bench".into(),
            project_root: "/".into(),
            launch_json: "{}".into(),
            started_at: 0,
            caps: strobe_store::EventCaps::both(200_000_000),
        })
        .unwrap();
    // A session already a million events long, as a traced program's is.
    let total = 1_000_000;
    let mut i = 0;
    while i < total {
        let mut b = EventBatch::with_capacity(4096, 4096);
        for _ in 0..4096 {
            let (h, p) = event(i, total);
            b.push(h, p);
            i += 1;
        }
        store.append(key, b).unwrap();
    }
    store.flush().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let appended = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = ingest.then(|| {
        let (store, stop, appended) = (store.clone(), stop.clone(), appended.clone());
        std::thread::spawn(move || {
            let mut i = total;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let mut b = EventBatch::with_capacity(4096, 4096);
                for _ in 0..4096 {
                    let (h, p) = event(i, u64::MAX);
                    b.push(h, p);
                    i += 1;
                }
                store.append(key, b).unwrap();
                appended.fetch_add(4096, std::sync::atomic::Ordering::Relaxed);
            }
        })
    });
    let filters = [
        EventFilter::default(),
        EventFilter {
            kinds: Some(EventKind::Stdout.bit()),
            ..Default::default()
        },
        EventFilter {
            payload_contains: Some(b"checksum".to_vec()),
            ..Default::default()
        },
        EventFilter {
            func_ids: Some(HashSet::from([17])),
            ..Default::default()
        },
        EventFilter {
            tids: Some(HashSet::from([2])),
            ..Default::default()
        },
    ];
    let started = Instant::now();
    let readers: Vec<_> = (0..4)
        .map(|r| {
            let (store, filters) = (store.clone(), filters.clone());
            std::thread::spawn(move || {
                let mut times = Vec::new();
                let mut k = r;
                while started.elapsed() < Duration::from_secs(secs) {
                    let t = Instant::now();
                    store
                        .query_counting(
                            key,
                            &filters[k % filters.len()],
                            QueryPage {
                                offset: 0,
                                limit: 50,
                            },
                            Counting::Within(BUDGET),
                        )
                        .unwrap();
                    times.push(t.elapsed().as_secs_f64() * 1e3);
                    k += 1;
                }
                times
            })
        })
        .collect();
    let times: Vec<f64> = readers
        .into_iter()
        .flat_map(|r| r.join().unwrap())
        .collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(w) = writer {
        w.join().unwrap();
    }
    let rate = appended.load(std::sync::atomic::Ordering::Relaxed) as f64
        / started.elapsed().as_secs_f64();
    let max = times.iter().cloned().fold(0.0, f64::max);
    (pct(times.clone(), 0.5), pct(times, 0.95), max, rate)
}

/// `aggregate: "function"` over the whole session and over half of it:
/// from the chunks' stored statistics (default), with every chunk decoded
/// (what it did before them: `minDurationNs: 0` matches every event but no
/// summary can answer it), and the baseline's `GROUP BY`.
fn aggregate_rows(store: &Store, key: i64, rows: Option<&Connection>, total: u64) {
    let (enter, exit) = (
        EventKind::FunctionEnter as u8,
        EventKind::FunctionExit as u8,
    );
    let half = (total / 4 * 100, total * 3 / 4 * 100);
    for (name, filter, sql) in [
        (
            "aggregate by function",
            EventFilter::default(),
            "1".to_string(),
        ),
        (
            "aggregate by function, half the time",
            EventFilter {
                time_from: Some(half.0),
                time_to: Some(half.1),
                ..Default::default()
            },
            format!("ts BETWEEN {} AND {}", half.0, half.1),
        ),
    ] {
        if !selected(name) {
            continue;
        }
        let mut stats = Vec::new();
        let (p50, p95) = time(|| stats = store.aggregate_functions(key, &filter).unwrap());
        let decoded_filter = EventFilter {
            min_duration_ns: Some(0),
            ..filter.clone()
        };
        let mut decoded = Vec::new();
        let (d50, d95) =
            time(|| decoded = store.aggregate_functions(key, &decoded_filter).unwrap());
        assert_eq!(
            stats, decoded,
            "{name}: the statistics give what decoding gives"
        );
        let base = rows.map(|c| {
            let mut n = 0usize;
            // Three runs, not fifteen: one takes seconds.
            let times = time_runs(3, || {
                let mut st = c
                    .prepare_cached(&format!(
                        "SELECT func, SUM(kind = {enter}), SUM(kind = {exit}), SUM(dur), MAX(dur)
                         FROM ev WHERE func != 0 AND {sql} GROUP BY func"
                    ))
                    .unwrap();
                n = st.query([]).unwrap().mapped(|r| r.get::<_, i64>(0)).count();
            });
            assert_eq!(
                n,
                stats.len(),
                "{name}: the baseline finds the same functions"
            );
            times
        });
        let base_text = baseline_text(base, p95);
        println!(
            "  {name:<40} p50 {p50:>8.2} ms  p95 {p95:>8.2} ms  ({} functions)  every chunk decoded {d50:.2}/{d95:.2} ms (p95 {:.1}x){base_text}",
            stats.len(),
            d95 / p95
        );
    }
}

fn main() {
    let sizes: Vec<u64> = std::env::var("STROBE_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000_000, 10_000_000]);
    let baseline = std::env::var("STROBE_BENCH_BASELINE").as_deref() != Ok("0");
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("q.db")).unwrap();
    let exit = EventKind::FunctionExit;
    let rv = |v: u64| ReturnValueFilter {
        equals_json: None,
        typed: None,
        equals: Some(v),
        is_null: None,
    };
    for total in sizes {
        let t = Instant::now();
        let key = fill(&store, &format!("s{total}"), total);
        println!(
            "session of {total} events (filled in {:.1} s)",
            t.elapsed().as_secs_f64()
        );
        let rows = baseline.then(|| {
            let t = Instant::now();
            let c = fill_rows(&dir.path().join(format!("rows{total}.db")), total);
            println!(
                "  (baseline: {total} rows with 6 indexes, filled in {:.1} s)",
                t.elapsed().as_secs_f64()
            );
            c
        });
        let last_ts = (total - 1) * 100;
        let stdout = EventKind::Stdout as u8;
        let (enter_k, exit_k) = (EventKind::FunctionEnter as u8, exit as u8);
        let text_sql = format!("kind NOT IN ({enter_k}, {exit_k}) AND instr(payload, ?1) > 0");
        // (name, filter, offset, SQL condition, its text parameter)
        let cases: Vec<(&str, EventFilter, u64, String, Option<&str>)> = vec![
            (
                "first page, no filter",
                EventFilter::default(),
                0,
                "1".into(),
                None,
            ),
            (
                "last page, no filter",
                EventFilter::default(),
                total - 50,
                "1".into(),
                None,
            ),
            (
                "eventType=stdout",
                EventFilter {
                    kinds: Some(EventKind::Stdout.bit()),
                    ..Default::default()
                },
                0,
                format!("kind = {stdout}"),
                None,
            ),
            (
                "timeFrom=-1ms (relative)",
                EventFilter {
                    time_from: Some(last_ts.saturating_sub(1_000_000)),
                    ..Default::default()
                },
                0,
                format!("ts >= {}", last_ts.saturating_sub(1_000_000)),
                None,
            ),
            (
                "function equals (1 of 200)",
                EventFilter {
                    func_ids: Some(HashSet::from([17])),
                    ..Default::default()
                },
                0,
                "func = 17".into(),
                None,
            ),
            (
                "function equals (the last of 200)",
                EventFilter {
                    func_ids: Some(HashSet::from([200])),
                    ..Default::default()
                },
                0,
                "func = 200".into(),
                None,
            ),
            (
                "pid",
                EventFilter {
                    pid: Some(1),
                    ..Default::default()
                },
                0,
                "pid = 1".into(),
                None,
            ),
            (
                "eventIdFrom (last 10 %)",
                EventFilter {
                    seq_from: Some(total - total / 10),
                    ..Default::default()
                },
                0,
                format!("seq >= {}", total - total / 10),
                None,
            ),
            (
                "threadName (1 of 4 threads)",
                EventFilter {
                    tids: Some(HashSet::from([2])),
                    ..Default::default()
                },
                0,
                "tid = 2".into(),
                None,
            ),
            (
                "threadName (1 call)",
                EventFilter {
                    tids: Some(HashSet::from([77])),
                    ..Default::default()
                },
                0,
                "tid = 77".into(),
                None,
            ),
            (
                "minDurationNs (1 in 1000 exits)",
                EventFilter {
                    min_duration_ns: Some(50_000),
                    ..Default::default()
                },
                0,
                "dur >= 50000".into(),
                None,
            ),
            (
                "minDurationNs (1 match)",
                EventFilter {
                    min_duration_ns: Some(5_000_000),
                    ..Default::default()
                },
                0,
                "dur >= 5000000".into(),
                None,
            ),
            (
                "function_exit + returnValue=3",
                EventFilter {
                    kinds: Some(exit.bit()),
                    return_value: Some(rv(3)),
                    ..Default::default()
                },
                0,
                format!("kind = {exit_k} AND value = 3"),
                None,
            ),
            (
                "textContains",
                EventFilter {
                    payload_contains: Some(b"progress".to_vec()),
                    ..Default::default()
                },
                0,
                text_sql.clone(),
                Some("progress"),
            ),
            (
                "function_exit + returnValue (1 match)",
                EventFilter {
                    kinds: Some(exit.bit()),
                    return_value: Some(rv(4242)),
                    ..Default::default()
                },
                0,
                format!("kind = {exit_k} AND value = 4242"),
                None,
            ),
            (
                "textContains (1 match)",
                EventFilter {
                    payload_contains: Some(b"checksum mismatch".to_vec()),
                    ..Default::default()
                },
                0,
                text_sql.clone(),
                Some("checksum mismatch"),
            ),
        ];
        for (name, filter, offset, sql, text) in cases {
            if !selected(name) {
                continue;
            }
            let page = QueryPage { offset, limit: 50 };
            let mut shown = String::new();
            let (p50, p95) = time(|| {
                let r = store
                    .query_counting(key, &filter, page, Counting::Within(BUDGET))
                    .unwrap();
                shown = match r.count_bounds {
                    Some((lo, hi)) => format!("~{} in {lo}..{hi}", r.total_count),
                    None => r.total_count.to_string(),
                };
            });
            let mut exact_count = 0;
            let (e50, e95) = time(|| {
                exact_count = store.query(key, &filter, page).unwrap().total_count;
            });
            let base = rows.as_ref().map(|c| {
                let mut n = 0i64;
                let times = time(|| {
                    let bind = |st: &mut rusqlite::CachedStatement<'_>| match text {
                        Some(t) => st.query(params![t.as_bytes()]).unwrap().mapped(|r| r.get::<_, i64>(0)).count(),
                        None => st.query([]).unwrap().mapped(|r| r.get::<_, i64>(0)).count(),
                    };
                    let mut page_st = c
                        .prepare_cached(&format!(
                            "SELECT seq, ts, kind, tid, func, value, dur, payload FROM ev WHERE {sql} ORDER BY seq LIMIT 50 OFFSET {offset}"
                        ))
                        .unwrap();
                    bind(&mut page_st);
                    let mut count = c.prepare_cached(&format!("SELECT COUNT(*) FROM ev WHERE {sql}")).unwrap();
                    n = match text {
                        Some(t) => count.query_row(params![t.as_bytes()], |r| r.get(0)).unwrap(),
                        None => count.query_row([], |r| r.get(0)).unwrap(),
                    };
                });
                assert_eq!(n as u64, exact_count, "{name}: the baseline counts the same");
                times
            });
            let base_text = baseline_text(base, p95);
            println!(
                "  {name:<40} p50 {p50:>8.2} ms  p95 {p95:>8.2} ms  (totalCount {shown})  exactCount {e50:.2}/{e95:.2} ms (totalCount {exact_count}){base_text}"
            );
        }
        aggregate_rows(&store, key, rows.as_ref(), total);
    }
    if std::env::var("STROBE_BENCH_INGEST").as_deref() != Ok("0") {
        println!(
            "queries by 4 threads, alone and during full-rate ingest into the session (5 s each):"
        );
        let (a50, a95, amax, _) = under_ingest(&store, "quiet", false, 5);
        let (b50, b95, bmax, rate) = under_ingest(&store, "busy", true, 5);
        println!(
            "  alone                                    p50 {a50:>8.2} ms  p95 {a95:>8.2} ms  max {amax:.1} ms"
        );
        println!(
            "  during ingest ({:.1} M events/s appended)  p50 {b50:>8.2} ms  p95 {b95:>8.2} ms  max {bmax:.1} ms  (p95 {:.1}x alone)",
            rate / 1e6,
            b95 / a95
        );
    }
}
