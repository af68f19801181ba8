//! A synthetic session for benchmarks: many events shaped like a traced
//! multi-threaded program, written straight into a store.

use strobe_core::event::{EventBatch, EventHeader, EventKind};
use strobe_store::{FunctionRow, NewSession, SessionUpdate, Store, StoreError};

/// 4 threads making calls three deep (outer ⊃ middle ⊃ 2 leaves), one
/// output line per 100 calls: `events` events over about 2 s, stored as a
/// retained session that exited.
pub fn fill(store: &Store, id: &str, events: u64) -> Result<String, StoreError> {
    let id = id.to_string();
    // Now, so retention does not purge it when a daemon opens the store.
    let now = strobe_core::clock::unix_millis();
    let (key, _) = store.create_session(NewSession {
        id: id.clone(),
        binary_path: "/bench".into(),
        project_root: "/".into(),
        launch_json: "{}".into(),
        started_at: now,
        caps: strobe_store::EventCaps::both(events * 2),
    })?;
    let funcs = (1..=4)
        .map(|i| FunctionRow {
            func_id: i,
            name: ["outer", "middle", "leaf_a", "leaf_b"][i as usize - 1].into(),
            name_raw: None,
            file: Some("bench.c".into()),
            line: Some(i),
        })
        .collect();
    store.register_functions(key, funcs)?;
    let h = |kind: EventKind, ts_ns: u64, tid: u32, func_id: u32, duration_ns: u64| EventHeader {
        ts_ns,
        kind: kind as u8,
        pid: 1,
        tid,
        func_id,
        duration_ns,
        ..EventHeader::default()
    };
    // One outer call = 8 call events over 2 µs per thread step.
    let groups = events / 8 / 4;
    let mut batch = EventBatch::default();
    for g in 0..groups {
        for tid in 1..=4u32 {
            let t = g * 4_000 + tid as u64 * 500;
            use EventKind::*;
            batch.push(h(FunctionEnter, t, tid, 1, 0), b"");
            batch.push(h(FunctionEnter, t + 100, tid, 2, 0), b"");
            batch.push(h(FunctionEnter, t + 200, tid, 3, 0), b"");
            batch.push(h(FunctionExit, t + 600, tid, 3, 400), b"");
            batch.push(h(FunctionEnter, t + 700, tid, 4, 0), b"");
            batch.push(h(FunctionExit, t + 1_100, tid, 4, 400), b"");
            batch.push(h(FunctionExit, t + 1_200, tid, 2, 1_100), b"");
            batch.push(h(FunctionExit, t + 1_400, tid, 1, 1_400), b"");
        }
        if g % 25 == 0 {
            batch.push(
                h(EventKind::Stdout, g * 4_000, 0, 0, 0),
                b"progress line from the benchmark target",
            );
        }
        if batch.len() >= 50_000 {
            store.append(key, std::mem::take(&mut batch))?;
        }
    }
    store.append(key, batch)?;
    store.update_session(
        key,
        SessionUpdate {
            status: Some("exited".into()),
            exit_code: Some(0),
            ended_at: Some(now + 2_000),
            retained: Some(true),
            ..Default::default()
        },
    )?;
    store.flush()?;
    Ok(id)
}
