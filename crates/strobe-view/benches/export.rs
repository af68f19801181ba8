//! Exporting a big session: the Perfetto protobuf export beside the Chrome
//! trace-event JSON export, time and size, alternating runs.
//!
//! `cargo bench -p strobe-view --bench export` (1,000,000 events;
//! `STROBE_BENCH_EVENTS` changes it). Medians of 5 runs each.

use std::time::{Duration, Instant};
use strobe_store::Store;

const RUNS: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let events: u64 = std::env::var("STROBE_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("bench.db")).unwrap();
    let id = strobe_view::synthetic::fill(&store, "bench-2026-11-28-00h00", events).unwrap();
    let (mut chrome, mut perfetto) = (Vec::new(), Vec::new());
    let (mut chrome_bytes, mut perfetto_bytes) = (0, 0);
    for _ in 0..RUNS {
        let mut out = Vec::new();
        let t = Instant::now();
        let s = strobe_view::export::chrome_trace(&store, &id, &mut out).unwrap();
        chrome.push(t.elapsed());
        chrome_bytes = out.len();
        assert!(s.spans > 0);

        let mut out = Vec::new();
        let t = Instant::now();
        let s = strobe_view::perfetto::perfetto_trace(&store, &id, &mut out, None).unwrap();
        perfetto.push(t.elapsed());
        perfetto_bytes = out.len();
        assert!(s.spans > 0);
    }
    let (c, p) = (median(chrome), median(perfetto));
    println!("export of {events} events (median of {RUNS}, alternating):");
    println!(
        "  chrome JSON:     {:>8.1} ms  {:>6.1} MB",
        c.as_secs_f64() * 1e3,
        chrome_bytes as f64 / 1e6
    );
    println!(
        "  perfetto proto:  {:>8.1} ms  {:>6.1} MB   ({:.2}x the time, {:.2}x the size)",
        p.as_secs_f64() * 1e3,
        perfetto_bytes as f64 / 1e6,
        p.as_secs_f64() / c.as_secs_f64(),
        perfetto_bytes as f64 / chrome_bytes as f64
    );
}
