//! SQLite's C API traced underneath rusqlite: tests/fixtures/real_sqlite,
//! built with cargo's debug profile, so the amalgamation that
//! libsqlite3-sys's build script compiles gets `-g` (the cc crate follows
//! the profile's debug info).

use crate::cache::{self, step};
use crate::fixture_dir;
use crate::support::Env;
use serde_json::{Value, json};
use std::path::PathBuf;

/// The fixture's executable, built (or found up to date) in the cache. The
/// versions are pinned by the fixture's Cargo.lock; cargo's own lock on the
/// target directory serializes parallel builds.
fn real_sqlite() -> PathBuf {
    let target = cache::root().join("real_sqlite-target");
    step(
        "building tests/fixtures/real_sqlite (rusqlite 0.37.0, bundled SQLite)",
        "crates.io",
        cache::cargo()
            .args(["build", "--quiet", "--locked", "--manifest-path"])
            .arg(fixture_dir("real_sqlite").join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target),
    );
    target.join("debug/real_sqlite")
}

fn argument<'a>(event: &'a Value, name: &str) -> &'a Value {
    event["arguments"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["name"] == name))
        .unwrap_or_else(|| panic!("no argument {name}: {event}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_c_api_shows_sql_text_and_return_codes() {
    let exe = real_sqlite();
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("fruit.db");
    c.ok(
        "debug_trace",
        json!({"add": ["sqlite3_open_v2", "sqlite3_prepare_v2", "sqlite3_prepare_v3"]}),
    )
    .await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": [db], "projectRoot": work.path()}),
        )
        .await;
    assert_eq!(v["pendingPatternsApplied"], 3, "{v}");
    let id = v["sessionId"].as_str().unwrap().to_string();
    let ended = c.wait_ended(&id).await;
    assert_eq!(ended["exitCode"], 0, "{ended}");
    let out: Vec<String> = c.stdout_lines(&id).await;
    assert_eq!(
        out,
        ["banana,cherry", "error: no such table: no_such_table"],
        "{out:?}"
    );

    let calls = |kind: &'static str, f: &'static str| {
        let c = &c;
        let id = &id;
        async move {
            let mut all = Vec::new();
            loop {
                let page = c
                    .ok(
                        "debug_query",
                        json!({"sessionId": id, "eventType": kind, "function": {"equals": f},
                               "verbose": true, "limit": 500, "offset": all.len()}),
                    )
                    .await;
                all.extend(page["events"].as_array().unwrap().iter().cloned());
                if page["hasMore"] != true {
                    return all;
                }
            }
        }
    };

    // The file name rusqlite passes as a C string, typed from SQLite's DWARF.
    let opens = calls("function_enter", "sqlite3_open_v2").await;
    assert_eq!(opens.len(), 1, "{opens:?}");
    assert_eq!(
        argument(&opens[0], "filename")["value"],
        db.to_str().unwrap(),
        "{}",
        opens[0]
    );

    // zSql (`const char *`, after `sqlite3 *db` and its large struct
    // graph) shows the statement's text. rusqlite prepares with
    // sqlite3_prepare_v3 (its `bundled` feature), passing the text of a
    // Rust &str with its length (nBytes), not NUL-terminated: what follows
    // the statement in memory may be read too.
    let prepares = calls("function_enter", "sqlite3_prepare_v3").await;
    let statements = [
        "CREATE TABLE fruit (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
        "INSERT INTO fruit (name) VALUES (?1)",
        "INSERT INTO fruit (name) VALUES (?1)",
        "INSERT INTO fruit (name) VALUES (?1)",
        "SELECT name FROM fruit WHERE id > ?1 ORDER BY id",
        "SELECT * FROM no_such_table",
    ];
    let sql: Vec<&str> = prepares
        .iter()
        .map(|e| {
            let v = &argument(e, "zSql")["value"];
            v.as_str()
                .unwrap_or_else(|| panic!("zSql is a string: {e}"))
        })
        .collect();
    assert_eq!(sql.len(), statements.len(), "{sql:?}");
    for ((text, statement), e) in sql.iter().zip(statements).zip(&prepares) {
        assert!(text.starts_with(statement), "{text:?} is {statement:?}");
        assert_eq!(argument(e, "nBytes")["value"], statement.len(), "{e}");
    }
    // SQLite's own statements (sqlite3_prepare_v2 from inside: the schema
    // read) show their text too, NUL-terminated.
    let internal = calls("function_enter", "sqlite3_prepare_v2").await;
    assert!(!internal.is_empty());
    for e in &internal {
        let text = argument(e, "zSql")["value"].as_str().unwrap_or_default();
        assert!(text.starts_with("SELECT"), "{e}");
    }

    // Return codes: SQLITE_OK, and SQLITE_ERROR for the missing table.
    let exits = calls("function_exit", "sqlite3_prepare_v3").await;
    let codes: Vec<&Value> = exits.iter().map(|e| &e["returnValue"]).collect();
    assert_eq!(codes, [0, 0, 0, 0, 0, 1], "{exits:?}");
    // The text reads the failing call with its SQL and its result.
    let q = c
        .reply(
            "debug_query",
            json!({"sessionId": id, "eventType": "function_exit",
                   "function": {"equals": "sqlite3_prepare_v3"}}),
        )
        .await;
    assert!(
        q.text.lines().any(|l| l.contains("sqlite3_prepare_v3(")
            && l.contains("zSql=\"SELECT * FROM no_such_table")
            && l.contains(") -> 1 (")),
        "{}",
        q.text
    );
}
