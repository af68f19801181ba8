//! Opening a big session in the web UI: the server-side timeline of the
//! whole session (what the UI asks for first) and of a zoomed window, against
//! the baseline of shipping every event to the client as JSON.
//!
//! `cargo bench -p strobe-view --bench timeline` (1,000,000 events;
//! `STROBE_BENCH_EVENTS` changes it). Medians of 5 runs each, alternating.

use std::time::{Duration, Instant};
use strobe_store::{EventFilter, QueryPage, Store};
use strobe_view::timeline::{self, Window};

const RUNS: usize = 5;

/// The baseline: every event of the window read and shipped as JSON.
fn ship_everything(store: &Store, id: &str) -> usize {
    let key = store.session(id).unwrap().unwrap().key;
    let mut bytes = 0;
    let mut offset = 0;
    loop {
        let page = store
            .query(
                key,
                &EventFilter::default(),
                QueryPage {
                    offset,
                    limit: 20_000,
                },
            )
            .unwrap();
        offset += page.events.len() as u64;
        let rows: Vec<_> = page
            .events
            .iter()
            .map(|e| {
                serde_json::json!({"seq": e.seq, "ts": e.header.ts_ns, "kind": e.header.kind,
                    "tid": e.header.tid, "func": e.header.func_id, "dur": e.header.duration_ns})
            })
            .collect();
        bytes += serde_json::to_vec(&rows).unwrap().len();
        if !page.has_more || page.events.is_empty() {
            return bytes;
        }
    }
}

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
    let id = strobe_view::synthetic::fill(&store, "bench-2026-11-22-00h00", events).unwrap();
    let end = store
        .latest_ts(store.session(&id).unwrap().unwrap().key)
        .unwrap();
    let whole = Window {
        from_ns: 0,
        to_ns: None,
        columns: 1600,
    };
    let zoom = Window {
        from_ns: end / 2,
        to_ns: Some(end / 2 + end / 100),
        columns: 1600,
    };
    let (mut t_whole, mut t_zoom, mut t_base) = (Vec::new(), Vec::new(), Vec::new());
    let (mut b_whole, mut b_zoom, mut b_base) = (0, 0, 0);
    for _ in 0..RUNS {
        let t = Instant::now();
        let tl = timeline::build(&store, &id, whole).unwrap();
        b_whole = serde_json::to_vec(&tl).unwrap().len();
        t_whole.push(t.elapsed());
        let t = Instant::now();
        let tl = timeline::build(&store, &id, zoom).unwrap();
        b_zoom = serde_json::to_vec(&tl).unwrap().len();
        t_zoom.push(t.elapsed());
        let t = Instant::now();
        b_base = ship_everything(&store, &id);
        t_base.push(t.elapsed());
    }
    let (w, z, b) = (median(t_whole), median(t_zoom), median(t_base));
    println!("timeline, whole session ({events} events, 1600 columns): {w:.1?}, {b_whole} bytes");
    println!("timeline, 1% window zoomed: {z:.1?}, {b_zoom} bytes");
    println!("baseline, every event as JSON: {b:.1?}, {b_base} bytes");
    println!(
        "ratios: time {:.2}× of the baseline, bytes 1/{:.0} of the baseline",
        w.as_secs_f64() / b.as_secs_f64(),
        b_base as f64 / b_whole as f64
    );
}
