//! What `debug_query` hands an agent from a 10 M-event session: latency
//! (p50/p95) and the size of each answer (the JSON and its text), for the
//! default page and the common filter shapes, through the query service
//! itself (rendering included). Goal: the default page's text under
//! 4,000 characters. Baseline beside it: the same page with
//! `verbose: true` (every field), what a tool without a compact rendering
//! would ship.
//!
//! Run: `cargo bench -p strobe-query --bench reply` (`STROBE_BENCH_EVENTS`
//! changes the 10 M).

use serde_json::{Value, json};
use std::time::Instant;
use strobe_core::event::{EventBatch, EventHeader, EventKind};
use strobe_store::{FunctionRow, NewSession, Store};

fn fill(store: &Store, id: &str, total: u64) {
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
    let funcs = (1..=200)
        .map(|i| FunctionRow {
            func_id: i,
            name: format!("app::module_{}::handler_{i}", i % 7),
            name_raw: None,
            file: Some(format!("src/module_{}.rs", i % 7)),
            line: Some(i * 3),
        })
        .collect();
    store.register_functions(key, funcs).unwrap();
    let mut i = 0u64;
    while i < total {
        let mut b = EventBatch::with_capacity(4096, 4096);
        for _ in 0..4096.min(total - i) {
            let n = i - i / 50;
            let exit = n % 2 == 1;
            let (kind, payload): (EventKind, &[u8]) = if i % 50 == 49 {
                (EventKind::Stdout, b"request 4711 served in 3 ms from cache")
            } else if exit {
                (EventKind::FunctionExit, b"")
            } else {
                (EventKind::FunctionEnter, b"")
            };
            let output = kind == EventKind::Stdout;
            b.push(
                EventHeader {
                    ts_ns: i * 100,
                    kind: kind as u8,
                    pid: 1,
                    tid: if output { 0 } else { (n / 1000 % 4) as u32 + 1 },
                    func_id: if output { 0 } else { (n / 2 % 200) as u32 + 1 },
                    value: i % 7,
                    ..Default::default()
                },
                payload,
            );
            i += 1;
        }
        store.append(key, b).unwrap();
    }
    store.flush().unwrap();
}

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let total: u64 = std::env::var("STROBE_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let dir = tempfile::tempdir().unwrap();
    let home = strobe_core::StrobeHome::at(dir.path());
    let store = Store::open(&dir.path().join("strobe.db")).unwrap();
    let id = "bench-2026-11-28-12h00";
    let t = Instant::now();
    fill(&store, id, total);
    println!(
        "session of {total} events (filled in {:.1} s)",
        t.elapsed().as_secs_f64()
    );
    let mgr = strobe_session::SessionManager::new(home, store).unwrap();
    let cases: Vec<(&str, Value)> = vec![
        ("default page (no filter)", json!({})),
        ("eventType=stdout", json!({"eventType": "stdout"})),
        (
            "function contains",
            json!({"function": {"contains": "handler_17"}}),
        ),
        (
            "function_exit + returnValue=3",
            json!({"eventType": "function_exit", "returnValue": {"equals": 3}}),
        ),
        ("textContains", json!({"textContains": "cache"})),
        ("aggregate: function", json!({"aggregate": "function"})),
        ("default page, verbose (baseline)", json!({"verbose": true})),
    ];
    for (name, mut args) in cases {
        args["sessionId"] = json!(id);
        let mut times = Vec::new();
        let (mut json_bytes, mut text_chars) = (0, 0);
        for _ in 0..15 {
            let p: strobe_query::QueryParams = serde_json::from_value(args.clone()).unwrap();
            let t = Instant::now();
            let (v, text) = strobe_query::run_query(&mgr, p).unwrap();
            times.push(t.elapsed().as_secs_f64() * 1e3);
            json_bytes = v.to_string().len();
            text_chars = text.chars().count();
        }
        println!(
            "  {name:<36} p50 {:>7.2} ms  p95 {:>7.2} ms  text {text_chars:>6} chars  json {json_bytes:>7} B",
            pct(times.clone(), 0.5),
            pct(times, 0.95)
        );
    }
}
