//! Store behaviour against a real SQLite file.

use std::time::Duration;
use strobe_core::event::{EventBatch, EventHeader, EventKind};
use strobe_store::{EventFilter, NewSession, QueryPage, SessionUpdate, Store};

fn new_session(store: &Store, id: &str, cap: u64) -> i64 {
    store
        .create_session(NewSession {
            id: id.into(),
            binary_path: "/bin/x".into(),
            project_root: "/p".into(),
            launch_json: "{}".into(),
            started_at: 1_000,
            caps: strobe_store::EventCaps::both(cap),
        })
        .unwrap()
        .0
}

fn lines(start: u64, n: u64, kind: EventKind) -> EventBatch {
    let mut b = EventBatch::default();
    for i in start..start + n {
        b.push(
            EventHeader {
                ts_ns: i * 10,
                kind: kind as u8,
                pid: 100 + (i % 2) as u32,
                ..Default::default()
            },
            format!("line {i}").as_bytes(),
        );
    }
    b
}

const ALL: QueryPage = QueryPage {
    offset: 0,
    limit: 1_000_000,
};

#[test]
fn appended_events_are_queryable_after_flush_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let key = new_session(&store, "a", 1_000_000);
    store
        .append(key, lines(0, 10_000, EventKind::Stdout))
        .unwrap();
    store
        .append(key, lines(10_000, 5, EventKind::Stderr))
        .unwrap();
    store.flush().unwrap();
    let all = store.query(key, &EventFilter::default(), ALL).unwrap();
    assert_eq!(all.total_count, 10_005);
    assert!(all.events.windows(2).all(|w| w[0].seq + 1 == w[1].seq));
    assert_eq!(all.events[9_999].payload, b"line 9999");

    let stderr = EventFilter {
        kinds: Some(EventKind::Stderr.bit()),
        ..Default::default()
    };
    let r = store
        .query(
            key,
            &stderr,
            QueryPage {
                offset: 1,
                limit: 2,
            },
        )
        .unwrap();
    assert_eq!(r.total_count, 5);
    assert_eq!(r.events.len(), 2);
    assert_eq!(r.events[0].payload, b"line 10001");
    assert!(r.has_more);

    let time = EventFilter {
        time_from: Some(50),
        time_to: Some(80),
        ..Default::default()
    };
    let r = store.query(key, &time, ALL).unwrap();
    assert_eq!(
        r.events.iter().map(|e| e.header.ts_ns).collect::<Vec<_>>(),
        vec![50, 60, 70, 80]
    );

    let pid = EventFilter {
        pid: Some(101),
        ..Default::default()
    };
    assert_eq!(store.query(key, &pid, ALL).unwrap().total_count, 5_002);

    let text = EventFilter {
        payload_contains: Some(b"line 777".to_vec()),
        ..Default::default()
    };
    let r = store.query(key, &text, ALL).unwrap();
    assert_eq!(r.total_count, 11, "777 and 7770..7779");

    // An id range, across a chunk boundary, and one id alone.
    let first = all.events[4095].seq;
    let ids = EventFilter {
        seq_from: Some(first),
        seq_to: Some(first + 2),
        ..Default::default()
    };
    let r = store.query(key, &ids, ALL).unwrap();
    assert_eq!(
        r.events
            .iter()
            .map(|e| e.payload.as_slice())
            .collect::<Vec<_>>(),
        [&b"line 4095"[..], b"line 4096", b"line 4097"]
    );
    let one = EventFilter {
        seq_from: Some(all.events[10_003].seq),
        seq_to: Some(all.events[10_003].seq),
        kinds: Some(EventKind::Stderr.bit()),
        ..Default::default()
    };
    let r = store.query(key, &one, ALL).unwrap();
    assert_eq!(r.total_count, 1);
    assert_eq!(r.events[0].payload, b"line 10003");
}

#[test]
fn counts_come_from_summaries_outside_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let key = new_session(&store, "a", 1_000_000);
    for i in 0..20 {
        store
            .append(key, lines(i * 4096, 4096, EventKind::Stdout))
            .unwrap();
    }
    store.flush().unwrap();
    let r = store
        .query(
            key,
            &EventFilter::default(),
            QueryPage {
                offset: 0,
                limit: 50,
            },
        )
        .unwrap();
    assert_eq!(r.total_count, 20 * 4096);
    assert_eq!(
        r.chunks_decoded, 1,
        "only the chunk holding the page is decoded"
    );
    assert!(r.chunks_counted >= 19);
}

#[test]
fn cap_evicts_oldest_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let key = new_session(&store, "a", 1_000);
    store
        .append(key, lines(0, 5_000, EventKind::Stdout))
        .unwrap();
    store.flush().unwrap();
    let row = store.session("a").unwrap().unwrap();
    assert!(
        row.event_count <= 1_000 && row.event_count >= 875,
        "{}",
        row.event_count
    );
    assert_eq!(
        row.event_count + row.evicted,
        5_000,
        "nothing vanishes uncounted"
    );
    let r = store.query(key, &EventFilter::default(), ALL).unwrap();
    assert_eq!(r.total_count, row.event_count);
    assert_eq!(
        r.events.last().unwrap().payload,
        b"line 4999",
        "newest kept"
    );
}

/// A traced program's calls interleaved with its output: one stdout line
/// every `every` calls (enter + exit), appended in batches as the daemon does.
fn traced_run(store: &Store, key: i64, calls: u64, every: u64) {
    let mut b = EventBatch::default();
    for i in 0..calls {
        for kind in [EventKind::FunctionEnter, EventKind::FunctionExit] {
            b.push(
                EventHeader {
                    ts_ns: i * 10,
                    kind: kind as u8,
                    func_id: 1,
                    pid: 1,
                    tid: 1,
                    ..Default::default()
                },
                &[],
            );
        }
        if i.is_multiple_of(every) {
            b.push(
                EventHeader {
                    ts_ns: i * 10 + 5,
                    kind: EventKind::Stdout as u8,
                    pid: 1,
                    ..Default::default()
                },
                format!("output {i}").as_bytes(),
            );
        }
        if b.len() >= 10_000 {
            store.append(key, std::mem::take(&mut b)).unwrap();
        }
    }
    store.append(key, b).unwrap();
}

#[test]
fn trace_load_never_evicts_the_programs_output() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let key = new_session(&store, "t", 2_000);
    // 200,000 calls (400,000 events) and 400 lines of output.
    traced_run(&store, key, 200_000, 500);
    store.flush().unwrap();

    let stdout = EventFilter {
        kinds: Some(EventKind::Stdout.bit()),
        ..Default::default()
    };
    let out = store.query(key, &stdout, ALL).unwrap();
    assert_eq!(out.total_count, 400, "every line of output is kept");
    assert_eq!(out.events[0].payload, b"output 0");
    assert_eq!(out.events[399].payload, b"output 199500");
    assert!(out.events.windows(2).all(|w| w[0].seq < w[1].seq));

    let row = store.session("t").unwrap().unwrap();
    assert_eq!(row.evicted_output, 0);
    assert_eq!(
        row.event_count + row.evicted,
        400_400,
        "nothing vanishes uncounted"
    );
    let calls = EventFilter {
        kinds: Some(EventKind::FunctionEnter.bit() | EventKind::FunctionExit.bit()),
        ..Default::default()
    };
    let kept_calls = store.query(key, &calls, ALL).unwrap();
    assert!(
        kept_calls.total_count <= 2_000 && kept_calls.total_count >= 1_500,
        "the newest calls are kept up to the cap: {}",
        kept_calls.total_count
    );
    assert_eq!(kept_calls.total_count + row.evicted, 400_000);
    let all = store.query(key, &EventFilter::default(), ALL).unwrap();
    assert_eq!(all.total_count, row.event_count);

    // Output keeps its event id: the line printed after call 100,000 comes
    // after that call's two events, the 100,000 calls before it (two events
    // each) and their 200 lines; an id range finds it in a rewritten chunk.
    let id = 100_001 * 2 + 100_000 / 500 + 1;
    let by_id = EventFilter {
        seq_from: Some(id),
        seq_to: Some(id),
        ..Default::default()
    };
    let r = store.query(key, &by_id, ALL).unwrap();
    assert_eq!(r.events.len(), 1);
    assert_eq!(r.events[0].payload, b"output 100000");
    assert_eq!(r.events[0].seq, id);
    // Text filters still find output in rewritten chunks (content index).
    let text = EventFilter {
        payload_contains: Some(b"output 123000".to_vec()),
        ..Default::default()
    };
    assert_eq!(store.query(key, &text, ALL).unwrap().total_count, 1);
}

#[test]
fn chunks_rewritten_by_eviction_stay_within_a_chunks_limits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    let key = store
        .create_session(NewSession {
            id: "r".into(),
            binary_path: "/bin/x".into(),
            project_root: "/p".into(),
            launch_json: "{}".into(),
            started_at: 1_000,
            caps: strobe_store::EventCaps {
                trace: 1_000,
                output: 10_000_000,
            },
        })
        .unwrap()
        .0;
    // A line of output after every call: chunks are a third output, and
    // every evicted one leaves ~1,365 lines to keep.
    traced_run(&store, key, 60_000, 1);
    store.flush().unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mut stmt = conn
        .prepare("SELECT kind_counts, length(data) FROM chunks WHERE session = ?1")
        .unwrap();
    let sizes: Vec<(u64, usize)> = stmt
        .query_map([key], |r| {
            let counts: Vec<u8> = r.get(0)?;
            let n = strobe_store::codec::ChunkSummary::parse_kind_counts(&counts)
                .iter()
                .map(|c| u64::from(*c))
                .sum();
            Ok((n, r.get(1)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(sizes.len() > 10, "{sizes:?}");
    for (events, bytes) in &sizes {
        assert!(*events <= 4096, "a chunk of {events} events: {sizes:?}");
        assert!(*bytes <= 1 << 20, "a chunk of {bytes} bytes");
    }
    let out = EventFilter {
        kinds: Some(EventKind::Stdout.bit()),
        ..Default::default()
    };
    assert_eq!(store.query(key, &out, ALL).unwrap().total_count, 60_000);
}

#[test]
fn output_over_its_own_cap_evicts_oldest_output_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let key = store
        .create_session(NewSession {
            id: "o".into(),
            binary_path: "/bin/x".into(),
            project_root: "/p".into(),
            launch_json: "{}".into(),
            started_at: 1_000,
            caps: strobe_store::EventCaps {
                trace: 100_000,
                output: 1_000,
            },
        })
        .unwrap()
        .0;
    traced_run(&store, key, 20_000, 2);
    store.flush().unwrap();
    let row = store.session("o").unwrap().unwrap();
    assert!(row.evicted_output >= 9_000, "{}", row.evicted_output);
    assert_eq!(row.event_count + row.evicted, 50_000);
    let stdout = EventFilter {
        kinds: Some(EventKind::Stdout.bit()),
        ..Default::default()
    };
    let out = store.query(key, &stdout, ALL).unwrap();
    assert!(
        out.total_count <= 1_000 && out.total_count >= 800,
        "{}",
        out.total_count
    );
    assert_eq!(
        out.events.last().unwrap().payload,
        b"output 19998",
        "newest kept"
    );
}

#[test]
fn sessions_update_delete_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    {
        let store = Store::open(&path).unwrap();
        let key = new_session(&store, "keep", 100);
        let gone = new_session(&store, "gone", 100);
        assert!(
            store
                .create_session(NewSession {
                    id: "keep".into(),
                    binary_path: String::new(),
                    project_root: String::new(),
                    launch_json: String::new(),
                    started_at: 0,
                    caps: strobe_store::EventCaps::both(1)
                })
                .is_err()
        );
        store.append(key, lines(0, 3, EventKind::Stdout)).unwrap();
        store
            .update_session(
                key,
                SessionUpdate {
                    status: Some("exited".into()),
                    exit_code: Some(3),
                    retained: Some(true),
                    ..Default::default()
                },
            )
            .unwrap();
        store.delete_session(gone).unwrap();
        store.close().unwrap();
    }
    let store = Store::open(&path).unwrap();
    let rows = store.sessions().unwrap();
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(
        (row.status.as_str(), row.exit_code, row.retained),
        ("exited", Some(3), true)
    );
    assert_eq!(row.event_count, 3);
    assert_eq!(row.pids, vec![100, 101]);
    let r = store.query(row.key, &EventFilter::default(), ALL).unwrap();
    assert_eq!(r.total_count, 3);
}

#[test]
fn purge_removes_expired_then_oldest_over_size() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let day = 86_400_000i64;
    let mk = |id: &str, started: i64, retained: bool| {
        let (key, _) = store
            .create_session(NewSession {
                id: id.into(),
                binary_path: "/b".into(),
                project_root: "/p".into(),
                launch_json: "{}".into(),
                started_at: started,
                caps: strobe_store::EventCaps::both(1_000_000),
            })
            .unwrap();
        store
            .append(key, lines(0, 1000, EventKind::Stdout))
            .unwrap();
        store
            .update_session(
                key,
                SessionUpdate {
                    retained: Some(retained),
                    ended_at: Some(started),
                    ..Default::default()
                },
            )
            .unwrap();
    };
    let now = 100 * day;
    mk("ancient", now - 30 * day, true);
    mk("old", now - 2 * day, true);
    mk("new", now - day, true);
    mk("live", now - 40 * day, false);
    let report = store
        .purge(now, Duration::from_millis(7 * day as u64), u64::MAX)
        .unwrap();
    assert_eq!(report.expired, vec!["ancient"]);
    let per = store.session("old").unwrap().unwrap().stored_bytes;
    let report = store
        .purge(now, Duration::from_millis(7 * day as u64), 2 * per + 1)
        .unwrap();
    assert_eq!(report.over_size, vec!["old"]);
    let ids: Vec<_> = store
        .sessions()
        .unwrap()
        .into_iter()
        .map(|s| s.session_id)
        .collect();
    assert_eq!(
        ids,
        vec!["live", "new"],
        "a non-retained (live) session is never purged"
    );
}

#[test]
fn partial_chunks_become_visible_without_flush() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let key = new_session(&store, "a", 1000);
    store.append(key, lines(0, 1, EventKind::Stdout)).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        if store
            .query(key, &EventFilter::default(), ALL)
            .unwrap()
            .total_count
            == 1
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "partial chunk never committed"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn function_filters_count_from_summaries_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let key = new_session(&store, "f", 10_000_000);
    let mut b = EventBatch::default();
    for i in 0..30_000u64 {
        let kind = if i % 2 == 0 {
            EventKind::FunctionEnter
        } else {
            EventKind::FunctionExit
        };
        b.push(
            EventHeader {
                ts_ns: i,
                kind: kind as u8,
                func_id: (i / 2 % 7) as u32 + 1,
                pid: 1,
                tid: 1,
                ..Default::default()
            },
            &[],
        );
    }
    store.append(key, b).unwrap();
    store.flush().unwrap();
    let funcs = std::collections::HashSet::from([3u32, 5]);
    let filter = EventFilter {
        kinds: Some(EventKind::FunctionExit.bit()),
        func_ids: Some(funcs.clone()),
        ..Default::default()
    };
    let r = store
        .query(
            key,
            &filter,
            QueryPage {
                offset: 0,
                limit: 10,
            },
        )
        .unwrap();
    let expected = (0..30_000u64)
        .filter(|i| i % 2 == 1 && funcs.contains(&((i / 2 % 7) as u32 + 1)))
        .count() as u64;
    assert_eq!(r.total_count, expected);
    assert!(
        r.chunks_counted > 0,
        "chunks outside the page were counted from their summaries"
    );
    assert!(r.events.iter().all(
        |e| e.header.kind == EventKind::FunctionExit as u8 && funcs.contains(&e.header.func_id)
    ));
    // The call tree linked each exit to its enter's parent and gave it a duration.
    assert!(r.events.iter().all(|e| e.header.duration_ns == 1));
}

#[test]
fn capture_blobs_are_replaced_by_key_read_back_and_deleted_with_the_session() {
    use strobe_store::CaptureBlob;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let a = new_session(&store, "a", 1000);
    let b = new_session(&store, "b", 1000);
    let blob = |kind, id, sub, body: &str| CaptureBlob {
        kind,
        id,
        sub,
        body: body.as_bytes().to_vec(),
    };
    store
        .put_captures(
            a,
            vec![blob(1, 0, 0, "types v1"), blob(2, 7, 1, "plan 7.1")],
        )
        .unwrap();
    store.put_captures(b, vec![blob(2, 7, 1, "other")]).unwrap();
    // The same (kind, id, sub) replaces: a type table that grew.
    store
        .put_captures(
            a,
            vec![blob(1, 0, 0, "types v2"), blob(2, 7, 2, "plan 7.2")],
        )
        .unwrap();
    store.flush().unwrap();
    let got = store.captures(a).unwrap();
    assert_eq!(
        got,
        vec![
            blob(1, 0, 0, "types v2"),
            blob(2, 7, 1, "plan 7.1"),
            blob(2, 7, 2, "plan 7.2")
        ]
    );
    store.delete_session(a).unwrap();
    assert!(store.captures(a).unwrap().is_empty());
    assert_eq!(store.captures(b).unwrap().len(), 1);
}

#[test]
fn content_indexes_skip_chunks_without_the_text_or_return_value_and_lose_nothing() {
    use strobe_core::event::{FLAG_CAPTURE, FLAG_VALUE_TYPED};
    use strobe_store::ReturnValueFilter;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    let key = new_session(&store, "idx", 1_000_000);
    // Four full chunks: output lines, then function exits returning 1..=4
    // per chunk (raw, typed, typed, and typed without an index key).
    let n = 4096u64;
    for chunk in 0..4u64 {
        let mut b = EventBatch::default();
        for i in 0..n {
            let ts = chunk * n + i;
            if i % 2 == 0 {
                let text = if chunk == 2 && i == 100 {
                    "needle in chunk two".to_string()
                } else {
                    format!("line {ts}")
                };
                b.push(
                    EventHeader {
                        ts_ns: ts,
                        kind: EventKind::Stdout as u8,
                        pid: 1,
                        ..Default::default()
                    },
                    text.as_bytes(),
                );
            } else {
                let flags = match chunk {
                    0 => 0,
                    3 => FLAG_CAPTURE,
                    _ => FLAG_CAPTURE | FLAG_VALUE_TYPED,
                };
                b.push(
                    EventHeader {
                        ts_ns: ts,
                        kind: EventKind::FunctionExit as u8,
                        flags,
                        pid: 1,
                        func_id: 1,
                        value: chunk + 1,
                        ..Default::default()
                    },
                    if flags & FLAG_CAPTURE != 0 {
                        &[0u8; 8]
                    } else {
                        &[]
                    },
                );
            }
        }
        store.append(key, b).unwrap();
    }
    store.flush().unwrap();

    let text = EventFilter {
        payload_contains: Some(b"needle".to_vec()),
        ..Default::default()
    };
    let r = store.query(key, &text, ALL).unwrap();
    assert_eq!(r.total_count, 1);
    assert_eq!(r.chunks_decoded, 1, "only chunk two holds those trigrams");

    let returning = |v: u64| EventFilter {
        kinds: Some(EventKind::FunctionExit.bit()),
        return_value: Some(ReturnValueFilter {
            equals: Some(v),
            equals_json: Some(serde_json::json!(v)),
            ..Default::default()
        }),
        ..Default::default()
    };
    // Raw values (chunk 0) and typed values with a key (chunks 1, 2) are
    // indexed; chunk 3's typed values are not, so it is always decoded.
    let r = store.query(key, &returning(2), ALL).unwrap();
    assert_eq!(r.total_count, n / 2);
    assert_eq!(r.chunks_decoded, 2, "chunk 1 and the unindexed chunk 3");
    let r = store.query(key, &returning(99), ALL).unwrap();
    assert_eq!((r.total_count, r.chunks_decoded), (0, 1));

    // Chunks written before indexes existed (no index row) are never ruled out.
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("DELETE FROM chunk_indexes", []).unwrap();
    drop(conn);
    let store = Store::open(&path).unwrap();
    let r = store.query(key, &text, ALL).unwrap();
    assert_eq!((r.total_count, r.chunks_decoded), (1, 4));
}

#[test]
fn events_the_writer_can_no_longer_take_are_counted_as_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let (key, stats) = store
        .create_session(NewSession {
            id: "gone".into(),
            binary_path: "/bin/x".into(),
            project_root: "/p".into(),
            launch_json: "{}".into(),
            started_at: 1_000,
            caps: strobe_store::EventCaps::both(1_000),
        })
        .unwrap();
    store.close().unwrap();
    assert!(store.append(key, lines(0, 25, EventKind::Stdout)).is_err());
    assert_eq!(
        strobe_store::SessionStats::get(&stats.dropped),
        25,
        "nothing lost without a count"
    );
}

#[test]
fn motor_plans_are_found_exactly_or_by_role_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let plan = |sig: &str, plan: &str, at: i64| strobe_store::MotorPlan {
        app: "synth".into(),
        role: "knob".into(),
        signature: sig.into(),
        plan: plan.into(),
        uses: 0,
        updated_at: at,
    };
    {
        let store = Store::open(&path).unwrap();
        assert!(store.motor_plan("synth", "knob", "Gain").unwrap().is_none());
        store.put_motor_plan(plan("Gain", "{\"a\":1}", 1)).unwrap();
        store.put_motor_plan(plan("Pan", "{\"b\":1}", 2)).unwrap();
        // Learned again: replaced, not added.
        store
            .put_motor_plan(strobe_store::MotorPlan {
                uses: 3,
                ..plan("Gain", "{\"a\":2}", 3)
            })
            .unwrap();
        store.close().unwrap();
    }
    let store = Store::open(&path).unwrap();
    let (p, exact) = store.motor_plan("synth", "knob", "Gain").unwrap().unwrap();
    assert!(exact);
    assert_eq!((p.plan.as_str(), p.uses), ("{\"a\":2}", 3));
    // A knob never learned gets the newest plan of a knob like it.
    let (p, exact) = store.motor_plan("synth", "knob", "Drive").unwrap().unwrap();
    assert!(!exact);
    assert_eq!(p.signature, "Gain");
    assert!(store.motor_plan("other", "knob", "Gain").unwrap().is_none());
}

/// A new database gets 16 KB pages (chunks span fewer overflow pages and
/// WAL frames); one made with another page size keeps it and still works.
#[test]
fn new_databases_get_16k_pages_and_older_ones_keep_theirs() {
    let page_size = |path: &std::path::Path| -> i64 {
        let c = rusqlite::Connection::open(path).unwrap();
        c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("fresh.db");
    drop(Store::open(&fresh).unwrap());
    assert_eq!(page_size(&fresh), 16384);

    let old = dir.path().join("old.db");
    {
        let c = rusqlite::Connection::open(&old).unwrap();
        c.pragma_update(None, "page_size", 4096).unwrap();
        c.pragma_update(None, "journal_mode", "WAL").unwrap();
        c.execute_batch("CREATE TABLE unrelated (x INTEGER)")
            .unwrap();
    }
    let store = Store::open(&old).unwrap();
    let key = new_session(&store, "s", 1_000_000);
    store.append(key, lines(0, 100, EventKind::Stdout)).unwrap();
    store.flush().unwrap();
    let page = store
        .query(
            key,
            &EventFilter::default(),
            QueryPage {
                offset: 0,
                limit: 10,
            },
        )
        .unwrap();
    assert_eq!((page.total_count, page.events.len()), (100, 10));
    drop(store);
    assert_eq!(page_size(&old), 4096);
}

/// The writer's connection never checkpoints; a thread of the store's own
/// does, so the committed pages reach the database file while the WAL
/// stops growing once it is copied.
#[test]
fn committed_pages_are_checkpointed_into_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    let key = new_session(&store, "s", 10_000_000);
    for i in 0..20 {
        store
            .append(key, lines(i * 10_000, 10_000, EventKind::Stdout))
            .unwrap();
        store.flush().unwrap();
    }
    let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let wal = dir.path().join("s.db-wal");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while size(&path) < size(&wal) / 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing was checkpointed: database {} bytes, WAL {} bytes",
            size(&path),
            size(&wal)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(size(&path) > 1 << 20, "database {} bytes", size(&path));
}
