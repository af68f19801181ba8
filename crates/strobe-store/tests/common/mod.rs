//! Helpers the store's integration tests share.

use strobe_store::{EventCaps, NewSession, Store};

/// A new session `id` with `caps`; its key.
pub fn session(store: &Store, id: &str, caps: EventCaps) -> i64 {
    store
        .create_session(NewSession {
            id: id.into(),
            binary_path: "/bin/x".into(),
            project_root: "/".into(),
            launch_json: "{}".into(),
            started_at: 0,
            caps,
        })
        .unwrap()
        .0
}
