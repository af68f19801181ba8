//! The daemon's lifecycle: lazy start, sharing, idle shutdown, crash
//! recovery by the proxy, permissions, start-up races, stale files, SIGTERM
//! and kill -9 durability. Every test has its own STROBE_HOME and cleans up
//! the daemon it started by PID.

mod support;

use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use support::{Env, fixture, signal, wait_until};

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z"))
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_starts_the_daemon_with_owner_only_files() {
    let env = Env::new();
    assert!(env.daemon_pid().is_none());
    let c = env.client().await;
    c.ok("debug_session", json!({"action": "list"})).await;
    let pid = env.daemon_pid().expect("pid file written");
    assert!(env.is_our_daemon(pid));
    assert_eq!(mode(env.path()), 0o700);
    assert_eq!(mode(&env.path().join("strobe.sock")), 0o600);
    assert_eq!(mode(&env.path().join("strobe.db")), 0o600);
    assert_eq!(mode(&env.path().join("strobe.pid")) & 0o077, 0);
    assert_eq!(mode(&env.path().join("logs")), 0o700);
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_belong_to_the_daemon_not_the_connection() {
    let env = Env::new();
    let a = env.client().await;
    let (id, _) = a.launch(&fixture("sleeper"), &["20"]).await;
    let first = env.daemon_pid();
    let b = env.client().await;
    let list = b.ok("debug_session", json!({"action": "list"})).await;
    assert_eq!(
        env.daemon_pid(),
        first,
        "the second client reached the same daemon"
    );
    assert_eq!(list["sessions"][0]["sessionId"], id.as_str());
    drop(a);
    // The session outlives the first connection and keeps recording.
    let mut out = Vec::new();
    for _ in 0..200 {
        out = b.events(&id, Some("stdout")).await;
        if out.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(out[0]["text"], "ready");
    assert_eq!(
        out[1]["text"], "tick 0",
        "still recording after the first client left"
    );
    b.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_daemon_shuts_down_but_not_while_a_session_runs() {
    let env = Env::with_settings(json!({"daemon.idleTimeoutMs": 300}));
    let c = env.client().await;
    let (id, target) = c.launch(&fixture("sleeper"), &["20"]).await;
    let pid = env.daemon_pid().unwrap();
    drop(c);
    std::thread::sleep(Duration::from_millis(1200));
    assert!(env.is_our_daemon(pid), "a live session keeps the daemon up");
    let c = env.client().await;
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    assert!(!alive(target) || wait_until(Duration::from_secs(5), || !alive(target)));
    c.service.cancel().await.unwrap();
    assert!(
        env.wait_daemon_gone(pid, Duration::from_secs(10)),
        "idle daemon exits"
    );
    assert!(!env.path().join("strobe.sock").exists(), "socket removed");
    assert!(!env.path().join("strobe.pid").exists(), "pid file removed");
}

#[tokio::test(flavor = "multi_thread")]
async fn proxy_restarts_a_killed_daemon_and_fails_calls_in_flight() {
    let mut env = Env::new();
    // A Python that takes 3 s to start makes debug_launch reliably in flight.
    let slow = env.path().join("slow-venv/bin");
    std::fs::create_dir_all(&slow).unwrap();
    std::fs::write(
        slow.join("python"),
        format!(
            "#!/bin/sh\nsleep 3\nexec {}/bin/python \"$@\"\n",
            env.venv.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(slow.join("python"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let slow_venv = env.path().join("slow-venv");
    let real_venv = std::mem::replace(&mut env.venv, slow_venv);
    let c = env.client().await;
    c.ok("debug_session", json!({"action": "list"})).await;
    let first = env.daemon_pid().unwrap();
    let exe = fixture("sleeper");
    let call = c.raw(
        "debug_launch",
        json!({"command": exe, "projectRoot": exe.parent().unwrap()}),
    );
    let killer = async {
        tokio::time::sleep(Duration::from_millis(700)).await;
        signal(first, 9);
    };
    let (result, ()) = tokio::join!(call, killer);
    let err = result
        .expect_err("the in-flight call gets an error")
        .to_string();
    assert!(
        err.contains("daemon exited") && err.contains("retry"),
        "{err}"
    );
    // The next call reaches a fresh daemon transparently.
    let list = c
        .ok_after_daemon_restart("debug_session", json!({"action": "list"}))
        .await;
    assert!(list["sessions"].is_array());
    let second = env.daemon_pid().unwrap();
    assert_ne!(first, second);
    assert!(env.is_our_daemon(second));
    env.venv = real_venv;
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_daemon_takes_its_targets_down_and_keeps_their_data() {
    let env = Env::new();
    let c = env.client().await;
    let (id, target) = c.launch(&fixture("sleeper"), &["10"]).await;
    while c.events(&id, Some("stdout")).await.is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    signal(env.daemon_pid().unwrap(), 9);
    assert!(
        wait_until(Duration::from_secs(10), || !alive(target)),
        "orphaned target {target} was not stopped"
    );
    let s = c
        .ok_after_daemon_restart(
            "debug_session",
            json!({"action": "status", "sessionId": id}),
        )
        .await;
    assert_eq!(s["state"], "stopped");
    assert_eq!(s["retained"], true);
    assert!(s["reason"].as_str().unwrap().contains("daemon ended"));
    let out = c.events(&id, Some("stdout")).await;
    assert_eq!(out[0]["text"], "ready");
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_starters_leave_exactly_one_daemon() {
    let env = Env::new();
    let mut kids: Vec<_> = (0..4)
        .map(|_| {
            env.command(&["daemon"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    assert!(wait_until(Duration::from_secs(10), || env
        .path()
        .join("strobe.sock")
        .exists()));
    std::thread::sleep(Duration::from_millis(500));
    let mut running = 0;
    for k in kids.iter_mut() {
        match k.try_wait().unwrap() {
            Some(status) => assert!(status.success(), "a losing starter exits cleanly"),
            None => running += 1,
        }
    }
    assert_eq!(running, 1, "exactly one daemon keeps running");
    let idx = (0..kids.len())
        .find(|&i| matches!(kids[i].try_wait(), Ok(None)))
        .unwrap();
    let winner = &mut kids[idx];
    assert_eq!(env.daemon_pid(), Some(winner.id()));
    let c = env.client().await;
    c.ok("debug_session", json!({"action": "list"})).await;
    drop(c);
    signal(winner.id(), 15);
    assert!(winner.wait().unwrap().success());
}

#[tokio::test(flavor = "multi_thread")]
async fn stale_socket_and_pid_file_are_replaced() {
    let env = Env::new();
    {
        // A socket file left by a dead daemon, and a pid file naming nobody.
        let _l = std::os::unix::net::UnixListener::bind(env.path().join("strobe.sock")).unwrap();
    }
    std::fs::write(env.path().join("strobe.pid"), "999999\n").unwrap();
    let c = env.client().await;
    c.ok("debug_session", json!({"action": "list"})).await;
    let pid = env.daemon_pid().unwrap();
    assert_ne!(pid, 999_999);
    assert!(env.is_our_daemon(pid));
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_sessions_and_flushes() {
    let env = Env::new();
    let c = env.client().await;
    let (id, target) = c.launch(&fixture("sleeper"), &["5"]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = env.daemon_pid().unwrap();
    signal(pid, 15);
    assert!(
        env.wait_daemon_gone(pid, Duration::from_secs(15)),
        "daemon exits on SIGTERM"
    );
    assert!(!alive(target), "its target was stopped");
    // The connected proxy brings up a fresh daemon, which sees the old session.
    let s = c
        .ok_after_daemon_restart(
            "debug_session",
            json!({"action": "status", "sessionId": id}),
        )
        .await;
    assert_ne!(env.daemon_pid(), Some(pid));
    assert_eq!(s["state"], "stopped");
    assert_eq!(s["retained"], true);
    let ticks = c.events(&id, Some("stdout")).await;
    assert!(
        ticks.len() >= 10,
        "events up to the shutdown were flushed: {}",
        ticks.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_mid_write_leaves_a_database_that_opens() {
    let env = Env::with_settings(json!({"events.maxPerSession": 10_000_000}));
    let c = env.client().await;
    let (id, _) = c.launch(&fixture("flood"), &["2000"]).await;
    let committed = || {
        rusqlite::Connection::open(env.path().join("strobe.db"))
            .and_then(|db| db.query_row("SELECT COUNT(*) FROM chunks", [], |r| r.get::<_, i64>(0)))
            .unwrap_or(0)
    };
    assert!(
        wait_until(Duration::from_secs(20), || committed() > 20),
        "the flood is being committed"
    );
    signal(env.daemon_pid().unwrap(), 9);
    std::thread::sleep(Duration::from_millis(300));
    {
        let db = rusqlite::Connection::open(env.path().join("strobe.db")).unwrap();
        let ok: String = db
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        let chunks: i64 = db
            .query_row("SELECT COUNT(*) FROM chunks", [], |r| r.get(0))
            .unwrap();
        assert!(chunks > 0, "committed chunks survive");
    }
    let s = c
        .ok_after_daemon_restart(
            "debug_session",
            json!({"action": "status", "sessionId": id}),
        )
        .await;
    assert_eq!(s["retained"], true);
    let q = c
        .ok("debug_query", json!({"sessionId": id, "limit": 1}))
        .await;
    assert!(q["totalCount"].as_u64().unwrap() > 10_000, "{q}");
}

/// A daemon started from under `flock` (as `./dev` wraps builds) must not
/// keep the lock: it drops what its starter had open at exec.
#[test]
fn a_started_daemon_does_not_keep_its_starters_descriptors() {
    let env = Env::new();
    let lock = env.path().join("build.lock");
    let ui = std::process::Command::new("flock")
        .arg(&lock)
        .arg(env!("CARGO_BIN_EXE_strobe"))
        .arg("ui")
        .env("STROBE_HOME", env.path())
        .env("STROBE_VENV", &env.venv)
        .output()
        .expect("flock (util-linux) runs");
    assert!(
        ui.status.success(),
        "{}",
        String::from_utf8_lossy(&ui.stderr)
    );
    assert!(env.daemon_pid().is_some(), "strobe ui started a daemon");
    let free = std::process::Command::new("flock")
        .args(["-n"])
        .arg(&lock)
        .arg("true")
        .status()
        .unwrap();
    assert!(free.success(), "the daemon still holds its starter's lock");
}
