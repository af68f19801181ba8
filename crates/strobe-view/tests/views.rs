//! Export and timeline over a real store (SQLite in a temporary directory)
//! holding a session written the way the session layer writes one.

use serde_json::Value;
use strobe_core::event::{EventBatch, EventHeader, EventKind, FLAG_JSON};
use strobe_store::{FunctionRow, NewSession, Store};
use strobe_view::{export, timeline};

const MS: u64 = 1_000_000;

fn header(kind: EventKind, ts_ns: u64, tid: u32, func_id: u32, duration_ns: u64) -> EventHeader {
    EventHeader {
        ts_ns,
        kind: kind as u8,
        pid: 100,
        tid,
        func_id,
        duration_ns,
        ..EventHeader::default()
    }
}

/// Thread 1: main [0, 100 ms] ⊃ parse [10, 40] ⊃ lex [12, 20]; then
/// 1000 tiny `hot` calls of 1 µs; thread 2 (named "worker"): work [50, 90]
/// and a call to `stuck` entered at 95 ms that never returns. Output on
/// the way and a crash at 99 ms.
fn session(store: &Store) -> String {
    let id = "demo-2026-11-22-10h00".to_string();
    let (key, _) = store
        .create_session(NewSession {
            id: id.clone(),
            binary_path: "/tmp/demo".into(),
            project_root: "/tmp".into(),
            launch_json: "{}".into(),
            started_at: 0,
            caps: strobe_store::EventCaps::both(1_000_000),
        })
        .unwrap();
    let f = |func_id: u32, name: &str| FunctionRow {
        func_id,
        name: name.into(),
        name_raw: None,
        file: Some("demo.c".into()),
        line: Some(func_id * 10),
    };
    store
        .register_functions(
            key,
            vec![
                f(1, "main"),
                f(2, "parse"),
                f(3, "lex"),
                f(4, "hot"),
                f(5, "work"),
                f(6, "stuck"),
            ],
        )
        .unwrap();
    store
        .register_threads(key, 100, vec![(2, "worker".into())])
        .unwrap();
    let mut b = EventBatch::default();
    use EventKind::*;
    b.push(header(FunctionEnter, 0, 1, 1, 0), b"");
    b.push(header(Stdout, MS, 0, 0, 0), b"starting");
    b.push(header(FunctionEnter, 10 * MS, 1, 2, 0), b"");
    b.push(header(FunctionEnter, 12 * MS, 1, 3, 0), b"");
    b.push(header(FunctionExit, 20 * MS, 1, 3, 8 * MS), b"");
    b.push(header(FunctionExit, 40 * MS, 1, 2, 30 * MS), b"");
    // The hot calls are main's children: main's enter is event 1, and a
    // parent link is the parent's sequence number plus one.
    let in_main = |mut h: EventHeader| {
        h.parent = 2;
        h
    };
    for i in 0..1000u64 {
        let t = 41 * MS + i * 5_000;
        b.push(in_main(header(FunctionEnter, t, 1, 4, 0)), b"");
        b.push(in_main(header(FunctionExit, t + 1_000, 1, 4, 1_000)), b"");
    }
    b.push(header(FunctionEnter, 50 * MS, 2, 5, 0), b"");
    b.push(header(Stderr, 60 * MS, 0, 0, 0), b"warning: slow");
    b.push(header(FunctionExit, 90 * MS, 2, 5, 40 * MS), b"");
    b.push(header(FunctionEnter, 95 * MS, 2, 6, 0), b"");
    let mut crash = header(Crash, 99 * MS, 2, 0, 0);
    crash.flags = FLAG_JSON;
    b.push(crash, br#"{"signal":"SIGSEGV"}"#);
    b.push(header(FunctionExit, 100 * MS, 1, 1, 100 * MS), b"");
    // A request sent through a net channel, the program reading it, and a
    // scenario step: channel events, on lanes of their own.
    for (kind, ts, body) in [
        (Net, 30 * MS, r#"{"dir":"sent","summary":"GET /items/0"}"#),
        (
            Net,
            31 * MS,
            r#"{"dir":"program","summary":"program received 18 B on fd 7"}"#,
        ),
        (
            ScenarioStep,
            32 * MS,
            r#"{"step":1,"ok":true,"summary":"step 1 passed"}"#,
        ),
    ] {
        let mut h = header(kind, ts, 0, 0, 0);
        h.flags = FLAG_JSON;
        b.push(h, body.as_bytes());
    }
    store.append(key, b).unwrap();
    store.flush().unwrap();
    id
}

fn open_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db.sqlite")).unwrap();
    (dir, store)
}

#[test]
fn the_export_is_trace_event_json_with_calls_nested_per_thread() {
    let (_dir, store) = open_store();
    let id = session(&store);
    let mut out = Vec::new();
    let summary = export::chrome_trace(&store, &id, &mut out).unwrap();
    assert_eq!(summary.spans, 1005, "{summary:?}");
    assert_eq!(summary.unfinished, 1);
    let doc: Value = serde_json::from_slice(&out).expect("valid JSON");
    let events = doc["traceEvents"].as_array().unwrap();
    let span = |name: &str| {
        events
            .iter()
            .find(|e| e["ph"] == "X" && e["name"] == name)
            .unwrap_or_else(|| panic!("no span {name}"))
            .clone()
    };
    let (main, parse, lex) = (span("main"), span("parse"), span("lex"));
    let range = |e: &Value| {
        let ts = e["ts"].as_f64().unwrap();
        (ts, ts + e["dur"].as_f64().unwrap())
    };
    let inside = |inner: &Value, outer: &Value| {
        let (a, b) = range(inner);
        let (c, d) = range(outer);
        inner["tid"] == outer["tid"] && c <= a && b <= d
    };
    assert!(inside(&lex, &parse) && inside(&parse, &main));
    assert_eq!(range(&parse), (10_000.0, 40_000.0), "microseconds");
    assert_eq!(parse["args"]["source"], "demo.c:20");
    let stuck = span("stuck");
    assert_eq!(stuck["args"]["unfinished"], true);
    assert_eq!(
        range(&stuck).1,
        100_000.0,
        "open calls last to the last event"
    );
    let crash = events.iter().find(|e| e["name"] == "crash").unwrap();
    assert_eq!(
        (crash["ph"].as_str(), crash["s"].as_str()),
        (Some("i"), Some("t"))
    );
    assert_eq!(crash["args"]["signal"], "SIGSEGV");
    let out_line = events.iter().find(|e| e["name"] == "stdout").unwrap();
    assert_eq!(out_line["args"]["text"], "starting");
    let worker = events
        .iter()
        .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == 2)
        .unwrap();
    assert_eq!(worker["args"]["name"], "worker (2)");
    assert_eq!(doc["otherData"]["sessionId"], id.as_str());
}

#[test]
fn an_unknown_session_is_a_clear_error() {
    let (_dir, store) = open_store();
    let e = export::chrome_trace(&store, "nope", &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("no session 'nope'"), "{e}");
}

#[test]
fn the_timeline_ships_wide_calls_as_spans_and_counts_the_rest() {
    let (_dir, store) = open_store();
    let id = session(&store);
    let whole = timeline::build(
        &store,
        &id,
        timeline::Window {
            from_ns: 0,
            to_ns: None,
            columns: 1000,
        },
    )
    .unwrap();
    assert_eq!(whole.end_ns, 100 * MS);
    let t1 = whole.lanes.iter().find(|l| l.tid == 1).unwrap();
    let names: Vec<&str> = t1
        .spans
        .iter()
        .map(|s| whole.functions[&s.func].as_str())
        .collect();
    assert_eq!(
        names,
        ["main", "parse", "lex"],
        "1 µs calls are narrower than a column (100 µs)"
    );
    assert_eq!(
        t1.spans.iter().map(|s| s.depth).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert_eq!(
        t1.counts.iter().sum::<u32>(),
        1000,
        "the hot calls are counted"
    );
    let t2 = whole.lanes.iter().find(|l| l.tid == 2).unwrap();
    assert_eq!(t2.name.as_deref(), Some("worker"));
    assert!(
        t2.spans
            .iter()
            .any(|s| s.open && whole.functions[&s.func] == "stuck")
    );
    assert_eq!(whole.output.len(), 2);
    assert_eq!(whole.markers[0].kind, "crash");
    assert_eq!(whole.markers.len(), 1, "channel events are not markers");
    let lanes: Vec<&str> = whole.channels.iter().map(|c| c.channel).collect();
    assert_eq!(
        lanes,
        ["net", "scenario"],
        "only channels with events, in order"
    );
    let net = &whole.channels[0];
    assert_eq!(
        net.items
            .iter()
            .map(|i| i.text.as_str())
            .collect::<Vec<_>>(),
        ["GET /items/0", "program received 18 B on fd 7"],
        "each item says its summary"
    );
    assert_eq!(net.counts.iter().sum::<u32>(), 2);
    assert_eq!(whole.channels[1].items[0].kind, "scenario_step");

    // Zoomed into the hot calls, each is wide enough to draw.
    let zoom = timeline::build(
        &store,
        &id,
        timeline::Window {
            from_ns: 41 * MS,
            to_ns: Some(41 * MS + 100_000),
            columns: 1000,
        },
    )
    .unwrap();
    let z1 = zoom.lanes.iter().find(|l| l.tid == 1).unwrap();
    assert_eq!(z1.spans.len(), 21, "{:?}", z1.spans);
    // main encloses the whole window: neither its enter nor its exit is in
    // it, yet it is drawn across it, under the hot calls.
    let main = &z1.spans[0];
    assert_eq!(zoom.functions[&main.func], "main");
    assert_eq!(
        (main.start_ns, main.dur_ns, main.depth),
        (41 * MS, 100_000, 0)
    );
    assert!(main.open);
    assert!(
        z1.spans[1..]
            .iter()
            .all(|s| zoom.functions[&s.func] == "hot" && s.depth == 1)
    );
    assert!(
        zoom.events_read < 100,
        "only the window is read: {}",
        zoom.events_read
    );
}
