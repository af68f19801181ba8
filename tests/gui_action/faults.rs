//! debug_ui_action when parts fail or collide: a daemon killed in the
//! middle of an action (the next daemon ends the virtual display's
//! processes, and nothing else), actions sent at once (one at a time,
//! each with its own evidence), text that cannot be typed, a program or
//! an X server gone under an action.

use super::{Client, Env, act, flatten, id_of, launch};
use crate::support;
use serde_json::{Value, json};
use std::os::unix::process::CommandExt;
use std::time::Duration;

/// A process as the kernel knows it: (pid, start time), so that a pid
/// reused by another process is never mistaken for the one seen.
type Proc = (u32, u64);

fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(
        s[s.rfind(')')? + 1..]
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    )
}

/// `pid` as it runs now (a zombie has ended).
fn proc_of(pid: u32) -> Option<Proc> {
    let f = stat_fields(pid)?;
    (f[0] != "Z" && f[0] != "X").then(|| (pid, f[19].parse().unwrap()))
}

fn still_runs(p: Proc) -> bool {
    proc_of(p.0) == Some(p)
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}

fn environ_has(pid: u32, var: &str) -> bool {
    let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    env.split(|b| *b == 0).any(|e| e == var.as_bytes())
}

/// The value of `key` in `pid`'s environment.
fn environ_value(pid: u32, key: &str) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|b| *b == 0).find_map(|e| {
        let e = String::from_utf8_lossy(e);
        e.strip_prefix(&format!("{key}=")).map(str::to_string)
    })
}

/// Every process of the session's virtual display, found without asking
/// Strobe: the daemon's Xvfb child, and every process whose environment
/// names the display's private runtime directory (the session bus, the
/// accessibility bus launcher, its bus, the registry, the program).
fn display_processes(daemon: u32, runtime_dir: &str) -> Vec<(Proc, String)> {
    let xdg = format!("XDG_RUNTIME_DIR={runtime_dir}");
    all_pids()
        .into_iter()
        .filter(|&pid| {
            let child_xvfb =
                comm(pid) == "Xvfb" && stat_fields(pid).is_some_and(|f| f[1] == daemon.to_string());
            child_xvfb || environ_has(pid, &xdg)
        })
        .filter_map(|pid| Some((proc_of(pid)?, comm(pid))))
        .collect()
}

/// The target's pid, from the launch's status.
async fn target_pid(c: &Client, id: &str) -> u32 {
    c.status(id).await["pid"]
        .as_u64()
        .expect("the target's pid") as u32
}

#[tokio::test(flavor = "multi_thread")]
async fn a_daemon_killed_mid_action_has_its_display_ended_by_the_next_one_and_nothing_else() {
    let env = Env::new();
    let c = env.client().await;
    let id = launch(&c, &[]).await;
    let ui = c.ok("debug_ui", json!({"sessionId": id})).await;
    let play = id_of(&ui, "push button", "Play");
    let daemon = env.daemon_pid().expect("the daemon's pid");
    let target = target_pid(&c, &id).await;
    let runtime_dir = environ_value(target, "XDG_RUNTIME_DIR").expect("a private runtime dir");
    let display = environ_value(target, "DISPLAY").expect("a display");
    // A process of the test's own that looks like one of the display's
    // (same display, same runtime directory) but that Strobe never started.
    let mut bystander = support::Spawned::start(
        std::process::Command::new("sleep")
            .arg("120")
            .env("DISPLAY", &display)
            .env("XDG_RUNTIME_DIR", &runtime_dir)
            .process_group(0),
    );
    let bystander_proc = proc_of(bystander.id()).unwrap();

    // An action that waits for a call that never comes (a pattern that is
    // pending matches nothing yet), killed while it waits.
    c.ok(
        "debug_trace",
        json!({"sessionId": id, "add": ["gtk_demo.never_called"]}),
    )
    .await;
    let action = c.raw(
        "debug_ui_action",
        json!({"sessionId": id, "action": {"type": "click", "id": play}, "verify": {"function": "never_called"}, "timeoutMs": 30000}),
    );
    let mut helpers = Vec::new();
    let kill = async {
        // The action has begun once its snapshot before is on the timeline.
        for _ in 0..200 {
            let snaps = c.events(&id, Some("ui_snapshot")).await;
            if snaps.iter().any(|s| s["byAction"] == true) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        helpers = display_processes(daemon, &runtime_dir);
        support::signal(daemon, libc::SIGKILL);
    };
    let (answer, ()) = tokio::join!(action, kill);
    assert!(
        answer.is_err() || answer.as_ref().is_ok_and(|r| r.is_error == Some(true)),
        "the action outlived its daemon: {answer:?}"
    );
    assert!(env.wait_daemon_gone(daemon, Duration::from_secs(10)));
    let names: Vec<&str> = helpers.iter().map(|(_, n)| n.as_str()).collect();
    for wanted in ["Xvfb", "dbus-daemon", "at-spi-bus-laun", "at-spi2-registr"] {
        assert!(
            names.contains(&wanted),
            "no {wanted} among the display's processes {names:?}"
        );
    }
    let helpers: Vec<Proc> = helpers
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.0 != bystander_proc.0)
        .collect();

    // Any call starts the next daemon, which ends what the last one left.
    c.ok_after_daemon_restart("debug_session", json!({"action": "list"}))
        .await;
    let left = || helpers.iter().filter(|p| still_runs(**p)).count();
    assert!(
        support::wait_until(Duration::from_secs(20), || left() == 0),
        "still running: {:?}",
        helpers
            .iter()
            .filter(|p| still_runs(**p))
            .map(|p| (p.0, comm(p.0)))
            .collect::<Vec<_>>()
    );
    assert!(
        still_runs(bystander_proc),
        "the test's own process was ended"
    );
    assert!(
        !std::path::Path::new(&runtime_dir).exists(),
        "{runtime_dir} is left behind"
    );
    let _ = bystander.kill();
}

/// Whether two snapshot intervals of actions overlap.
fn overlap(a: &Value, b: &Value) -> bool {
    let (a0, a1) = (a["snapshotBefore"].as_u64(), a["snapshotAfter"].as_u64());
    let (b0, b1) = (b["snapshotBefore"].as_u64(), b["snapshotAfter"].as_u64());
    a0 < b1 && b0 < a1
}

#[tokio::test(flavor = "multi_thread")]
async fn actions_sent_at_once_run_one_at_a_time_each_with_its_own_evidence() {
    let env = Env::new();
    let c = env.client().await;
    let id = launch(&c, &[]).await;
    let ui = c.ok("debug_ui", json!({"sessionId": id})).await;
    let play = id_of(&ui, "push button", "Play");
    let volume = id_of(&ui, "slider", "Volume");
    let check = id_of(&ui, "check box", "Loop");
    let pad = flatten(&ui["nodes"])
        .into_iter()
        .find(|n| n["name"] == "Pad")
        .expect("the pad");
    let (x, y) = (
        pad["bounds"]["x"].as_i64().unwrap() + 100,
        pad["bounds"]["y"].as_i64().unwrap() + 30,
    );
    let (click, set, drag, toggle) = tokio::join!(
        act(&c, &id, json!({"type": "click", "id": play})),
        act(
            &c,
            &id,
            json!({"type": "set_value", "id": volume, "value": 0.2})
        ),
        act(
            &c,
            &id,
            json!({"type": "drag", "from": pad["id"], "to": {"x": x, "y": y}})
        ),
        act(&c, &id, json!({"type": "click", "id": check})),
    );
    let all = [&click, &set, &drag, &toggle];
    // One at a time: no action's snapshots straddle another's.
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert!(!overlap(a, b), "overlapping actions:\n{a:#}\n{b:#}");
        }
    }
    // Each one's evidence is its own.
    let seen = click["observed"].as_str().unwrap();
    assert!(seen.contains("play clicked"), "{click:#}");
    assert!(
        !["volume", "dragged", "loop"]
            .iter()
            .any(|w| seen.contains(w)),
        "{click:#}"
    );
    assert_eq!(
        (set["method"].as_str(), set["verified"].as_bool()),
        (Some("value interface"), Some(true)),
        "{set:#}"
    );
    assert_eq!(set["after"]["value"], "0.2", "{set:#}");
    assert!(
        drag["observed"].as_str().unwrap().contains("dragged"),
        "{drag:#}"
    );
    assert_eq!(toggle["verified"], true, "{toggle:#}");
    for other in [&click, &drag, &toggle] {
        let changed = other["changes"]["changed"].to_string();
        assert!(
            !changed.contains(&volume),
            "the slider's change is in another action's diff: {other:#}"
        );
    }
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn text_with_a_nul_is_refused_and_the_tree_stays_whole() {
    let env = Env::new();
    let c = env.client().await;
    let id = launch(&c, &[]).await;
    let ui = c.ok("debug_ui", json!({"sessionId": id})).await;
    let title = id_of(&ui, "text", "Title");
    let nodes = flatten(&ui["nodes"]).len();
    let r = c
        .reply(
            "debug_ui_action",
            json!({"sessionId": id, "action": {"type": "type", "id": title, "text": "a\u{0}b", "replace": true}}),
        )
        .await;
    let e = r.error_text();
    assert!(e.contains("U+0000 (NUL)"), "{e}");
    // The accessibility bus still answers: the same tree, the text as it was.
    let after = c.ok("debug_ui", json!({"sessionId": id})).await;
    assert_eq!(flatten(&after["nodes"]).len(), nodes, "{after:#}");
    let t = flatten(&after["nodes"])
        .into_iter()
        .find(|n| n["id"] == title.as_str())
        .unwrap_or_else(|| panic!("{title} is gone: {after:#}"));
    assert_eq!(t["value"], "hello", "{t:#}");
    let r = act(&c, &id, json!({"type": "type", "id": title, "text": "ok"})).await;
    assert_eq!(r["method"], "text interface", "{r:#}");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

/// Starts typing 3000 characters into the demo's entry, runs `end` once
/// keys are being typed, and returns the action's answer. (Text longer
/// than a node's value reads back, 200 characters, is inserted natively,
/// not seen, and typed again by input, key by key, for seconds.)
async fn end_while_typing(
    c: &Client,
    id: &str,
    end: impl std::future::Future<Output = ()>,
) -> support::Reply {
    let ui = c.ok("debug_ui", json!({"sessionId": id})).await;
    let title = id_of(&ui, "text", "Title");
    let action = c.reply(
        "debug_ui_action",
        json!({"sessionId": id, "action": {"type": "type", "id": title, "text": "x".repeat(3000)}, "timeoutMs": 1}),
    );
    let ender = async {
        // The native insert prints one line; typing by input, one a key.
        for _ in 0..400 {
            let lines = c.stdout_lines(id).await;
            if lines.iter().filter(|l| l.starts_with("title ")).count() >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        end.await;
    };
    tokio::join!(action, ender).0
}

#[tokio::test(flavor = "multi_thread")]
async fn an_action_whose_program_died_or_was_stopped_says_so() {
    let env = Env::new();
    let c = env.client().await;

    // The program killed under the action.
    let id = launch(&c, &[]).await;
    let target = target_pid(&c, &id).await;
    let r = end_while_typing(&c, &id, async { support::signal(target, libc::SIGKILL) }).await;
    let e = r.error_text();
    assert!(e.starts_with("PROCESS_EXITED"), "{e}");
    assert!(e.contains("has exited") || e.contains("has ended"), "{e}");
    assert!(!e.contains("Broken pipe") && !e.contains("os error"), "{e}");
    // And after: the same answer, at once.
    let r = c
        .reply(
            "debug_ui_action",
            json!({"sessionId": id, "action": {"type": "key", "key": "a"}}),
        )
        .await;
    let e = r.error_text();
    assert!(e.starts_with("PROCESS_EXITED"), "{e}");

    // The session stopped under the action.
    let id = launch(&c, &[]).await;
    let stop = async {
        c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
            .await;
    };
    let r = end_while_typing(&c, &id, stop).await;
    let e = r.error_text();
    assert!(e.starts_with("PROCESS_EXITED"), "{e}");
    assert!(e.contains("was stopped"), "{e}");
    assert!(!e.contains("Broken pipe") && !e.contains("os error"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_whose_xvfb_died_is_told_so_and_what_to_do() {
    let env = Env::new();
    let c = env.client().await;
    // A program that does not die with its display (a GUI one would).
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "/bin/sleep", "args": ["120"], "projectRoot": "/tmp", "display": "virtual"}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let daemon = env.daemon_pid().expect("the daemon's pid");
    let xvfb = all_pids()
        .into_iter()
        .find(|&p| {
            comm(p) == "Xvfb"
                && stat_fields(p).is_some_and(|f| f[1] == daemon.to_string())
                && environ_value(p, "STROBE_HOME").as_deref() == env.path().to_str()
        })
        .expect("the session's Xvfb");
    support::signal(xvfb, libc::SIGKILL);
    assert!(support::wait_until(Duration::from_secs(10), || proc_of(
        xvfb
    )
    .is_none()));
    let r = c.reply("debug_ui", json!({"sessionId": id})).await;
    let e = r.error_text();
    assert!(e.contains(&format!("Xvfb (pid {xvfb}) ended")), "{e}");
    assert!(e.contains("launch it again"), "{e}");
    assert!(!e.contains("display: \\\"virtual\\\""), "{e}");
    let r = c
        .reply(
            "debug_ui_action",
            json!({"sessionId": id, "action": {"type": "key", "key": "a"}}),
        )
        .await;
    assert!(
        r.error_text().contains(&format!("Xvfb (pid {xvfb}) ended")),
        "{}",
        r.text
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}
