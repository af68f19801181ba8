//! Session ids are never reused within a store: an agent holding the id of
//! a deleted session must not read another program's data under it.

use strobe_store::{NewSession, Store, StoreError};

fn session(id: &str) -> NewSession {
    NewSession {
        id: id.into(),
        binary_path: "/bin/x".into(),
        project_root: "/p".into(),
        launch_json: "{}".into(),
        started_at: 1_000,
        caps: strobe_store::EventCaps::both(1_000),
    }
}

#[test]
fn a_deleted_sessions_id_is_never_issued_again_even_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    {
        let store = Store::open(&path).unwrap();
        let (key, _) = store.create_session(session("app-1")).unwrap();
        store.delete_session(key).unwrap();
        assert!(store.session("app-1").unwrap().is_none());
        assert!(store.issued_session_ids().unwrap().contains("app-1"));
        assert!(matches!(
            store.create_session(session("app-1")),
            Err(StoreError::DuplicateSession(id)) if id == "app-1"
        ));
        store.close().unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert!(store.issued_session_ids().unwrap().contains("app-1"));
    assert!(store.create_session(session("app-1")).is_err());
    store.create_session(session("app-2")).unwrap();
}

/// A database made before ids were remembered keeps working, and the ids
/// it still holds count as issued.
#[test]
fn an_older_database_remembers_the_ids_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let store = Store::open(&path).unwrap();
        store.create_session(session("old-1")).unwrap();
        store.close().unwrap();
    }
    {
        // What a database of the release before looks like.
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("DROP TRIGGER session_id_issued; DROP TABLE issued_session_ids;")
            .unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert!(store.issued_session_ids().unwrap().contains("old-1"));
    assert!(store.session("old-1").unwrap().is_some());
    store.create_session(session("old-2")).unwrap();
    assert!(store.issued_session_ids().unwrap().contains("old-2"));
}
