//! Store ingest benchmark: synthetic events into queryable rows.
//!
//! Compares, in one run, the chunked store against the naive baseline the
//! spec's anchor used (one SQLite row per event, two secondary indexes,
//! 65,536-row transactions). Run: `cargo bench -p strobe-store --bench ingest`.
//! Prints events/s for each and the ratio. No assertions: it measures.

use rusqlite::params;
use std::time::Instant;
use strobe_core::event::{EventBatch, EventHeader, EventKind};
use strobe_store::{EventFilter, NewSession, QueryPage, Store};

fn batch(start: u64, n: usize, payload: &[u8], kind: EventKind) -> EventBatch {
    let mut b = EventBatch::with_capacity(n, n * payload.len());
    for i in 0..n as u64 {
        b.push(
            EventHeader {
                ts_ns: (start + i) * 150,
                kind: kind as u8,
                pid: 4242,
                tid: 4242 + (i % 4) as u32,
                func_id: (i % 97) as u32 + 1,
                parent: if i % 2 == 1 { start + i } else { 0 },
                duration_ns: if kind == EventKind::FunctionExit {
                    150
                } else {
                    0
                },
                ..Default::default()
            },
            payload,
        );
    }
    b
}

/// A traced program that logs: exits with an output line every 1,000 events.
fn mixed(start: u64, n: usize, line: &[u8]) -> EventBatch {
    let b = batch(start, n, b"", EventKind::FunctionExit);
    let mut out = EventBatch::with_capacity(n, n / 1000 * line.len() + line.len());
    for (i, h) in b.headers.iter().enumerate() {
        let seq = start + i as u64;
        if seq.is_multiple_of(1000) {
            let mut o = *h;
            o.kind = EventKind::Stdout as u8;
            o.func_id = 0;
            out.push(o, line);
        } else {
            out.push(*h, b"");
        }
    }
    out
}

fn chunked(total: u64, payload: &[u8], kind: EventKind) -> f64 {
    chunked_with(total, total * 2, |start, n| batch(start, n, payload, kind))
}

/// As [`chunked`], into a database made with 4 KB pages, as every store
/// was before 2026-11-29 (an existing database keeps its page size).
fn chunked_4k_pages(total: u64, payload: &[u8], kind: EventKind) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.pragma_update(None, "page_size", 4096).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.execute_batch("CREATE TABLE made_before (x INTEGER)")
            .unwrap();
    }
    chunked_at(&path, total, total * 2, |start, n| {
        batch(start, n, payload, kind)
    })
}

/// Events/s into a session whose caps are `cap` each, fed by `make`.
fn chunked_with(total: u64, cap: u64, make: impl Fn(u64, usize) -> EventBatch) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    chunked_at(&dir.path().join("bench.db"), total, cap, make)
}

/// [`chunked_with`] into the store at `path`.
fn chunked_at(
    path: &std::path::Path,
    total: u64,
    cap: u64,
    make: impl Fn(u64, usize) -> EventBatch,
) -> f64 {
    let store = Store::open(path).unwrap();
    let (key, _) = store
        .create_session(NewSession {
            id: "bench".into(),
            binary_path: "/bin/bench".into(),
            project_root: "/".into(),
            launch_json: "{}".into(),
            started_at: 0,
            caps: strobe_store::EventCaps::both(cap),
        })
        .unwrap();
    let per = 4096;
    let t = Instant::now();
    let mut sent = 0;
    while sent < total {
        store.append(key, make(sent, per)).unwrap();
        sent += per as u64;
    }
    store.flush().unwrap();
    let secs = t.elapsed().as_secs_f64();
    // Prove the rows are queryable and counted: stored + evicted is
    // everything, and the last page reads.
    let row = store.session("bench").unwrap().unwrap();
    assert_eq!(row.event_count + row.evicted, sent);
    let q = store
        .query(
            key,
            &EventFilter::default(),
            QueryPage {
                offset: row.event_count - 10,
                limit: 10,
            },
        )
        .unwrap();
    assert_eq!(q.total_count, row.event_count);
    assert_eq!(q.events.len(), 10);
    store.close().unwrap();
    sent as f64 / secs
}

fn row_per_event(total: u64, payload: &[u8]) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("naive.db")).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    conn.execute_batch(
        "CREATE TABLE events (id INTEGER PRIMARY KEY, session INTEGER, ts INTEGER, kind INTEGER,
            pid INTEGER, tid INTEGER, func INTEGER, parent INTEGER, duration INTEGER, payload BLOB);
         CREATE INDEX e_ts ON events(session, ts);
         CREATE INDEX e_func ON events(session, func, ts);",
    )
    .unwrap();
    let t = Instant::now();
    let mut i = 0u64;
    while i < total {
        let tx = conn.unchecked_transaction().unwrap();
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT INTO events (session, ts, kind, pid, tid, func, parent, duration, payload)
                     VALUES (1, ?1, 1, 4242, ?2, ?3, ?4, 0, ?5)",
                )
                .unwrap();
            for _ in 0..65_536.min(total - i) {
                st.execute(params![
                    (i * 150) as i64,
                    (i % 4) as i64,
                    (i % 97) as i64,
                    i as i64,
                    payload
                ])
                .unwrap();
                i += 1;
            }
        }
        tx.commit().unwrap();
    }
    total as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let total: u64 = std::env::var("STROBE_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000);
    let line = b"frame 000123: processed 48 samples in 0.21 ms (ok)";
    println!("store ingest, {total} events per case");
    let trace = chunked(total, b"", EventKind::FunctionExit);
    println!(
        "  chunked store, trace-like (no payload):  {:>12.0} events/s",
        trace
    );
    let out = chunked(total, line, EventKind::Stdout);
    println!(
        "  chunked store, 51-byte output lines:     {:>12.0} events/s",
        out
    );
    // The same two into a database made with 4 KB pages (before 16 KB).
    let trace_4k = chunked_4k_pages(total, b"", EventKind::FunctionExit);
    let out_4k = chunked_4k_pages(total, line, EventKind::Stdout);
    println!(
        "  same in a 4 KB-page database: trace-like {:.0} events/s (16 KB pages {:.2}x), output lines {:.0} events/s ({:.2}x)",
        trace_4k,
        trace / trace_4k,
        out_4k,
        out / out_4k
    );
    let unevicted = chunked_with(total, total * 2, |s, n| mixed(s, n, line));
    let evicting = chunked_with(total, 200_000, |s, n| mixed(s, n, line));
    println!(
        "  trace + 1 line per 1,000, no eviction:   {:>12.0} events/s",
        unevicted
    );
    println!(
        "  same, caps 200,000 (calls evicted, output kept): {:>4.0} events/s ({:.2}x)",
        evicting,
        evicting / unevicted
    );
    let naive_total = total.min(1_000_000);
    let naive = row_per_event(naive_total, line);
    println!(
        "  baseline: row per event + 2 indexes:     {:>12.0} events/s",
        naive
    );
    println!(
        "  ratio chunked/baseline (output lines):   {:>12.1}x",
        out / naive
    );
    println!(
        "  ratio chunked/baseline (trace-like):     {:>12.1}x",
        trace / naive
    );
}
