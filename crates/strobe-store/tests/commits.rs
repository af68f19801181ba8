//! The commit signal: what lets `debug_query {waitMs}` wake when events
//! become visible instead of polling.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use strobe_core::event::{EventBatch, EventHeader, EventKind};
use strobe_store::{EventFilter, NewSession, QueryPage, Store};

fn session(store: &Store) -> (i64, std::sync::Arc<strobe_store::SessionStats>) {
    store
        .create_session(NewSession {
            id: "w".into(),
            binary_path: "/bin/x".into(),
            project_root: "/p".into(),
            launch_json: "{}".into(),
            started_at: 1_000,
            caps: strobe_store::EventCaps::both(1_000_000),
        })
        .unwrap()
}

fn line(i: u64) -> EventBatch {
    let mut b = EventBatch::default();
    b.push(
        EventHeader {
            ts_ns: i,
            kind: EventKind::Stdout as u8,
            pid: 1,
            ..Default::default()
        },
        format!("line {i}").as_bytes(),
    );
    b
}

#[test]
fn a_waiter_wakes_on_the_commit_that_makes_events_visible_without_a_flush() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    let (key, stats) = session(&store);
    assert_eq!(
        stats.committed_seq.load(Ordering::Acquire),
        1,
        "ids start at 1"
    );
    let seen = stats.commits.generation();

    // Nothing committed: the wait times out with the generation unchanged.
    assert_eq!(
        stats.commits.wait_past(seen, Duration::from_millis(30)),
        seen
    );

    let waiter = {
        let stats = stats.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let g = stats.commits.wait_past(seen, Duration::from_secs(10));
            (
                g,
                start.elapsed(),
                stats.committed_seq.load(Ordering::Acquire),
            )
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    // No flush: the writer's own commit (a partial chunk's age) rings it.
    store.append(key, line(1)).unwrap();
    let (g, waited, committed) = waiter.join().unwrap();
    assert!(g > seen, "woken by a commit");
    assert!(waited < Duration::from_secs(10), "not by the timeout");
    assert_eq!(committed, 2, "the one event's id (1) is below the frontier");
    let visible = store
        .query(
            key,
            &EventFilter {
                seq_from: Some(1),
                seq_to: Some(committed - 1),
                ..Default::default()
            },
            QueryPage {
                offset: 0,
                limit: 10,
            },
        )
        .unwrap();
    assert_eq!(
        visible.events.len(),
        1,
        "what the frontier says is there is"
    );

    // Ringing by hand (a session's end) wakes waiters too.
    let seen = stats.commits.generation();
    let waiter = {
        let stats = stats.clone();
        std::thread::spawn(move || stats.commits.wait_past(seen, Duration::from_secs(10)))
    };
    std::thread::sleep(Duration::from_millis(20));
    stats.commits.ring();
    assert!(waiter.join().unwrap() > seen);
}
