//! The bridge against real Frida: needs the venv (`./dev test` provides it
//! through STROBE_VENV).

use std::io::Read;
use std::time::Duration;
use strobe_frida::agent_protocol::{
    self, AgentMessage, DaemonMessage, HookChange, HooksRequest, Incoming,
};
use strobe_frida::{Bridge, BridgeEvent, FridaPython, SpawnRequest};

fn python() -> std::path::PathBuf {
    let venv = std::env::var_os("STROBE_VENV")
        .expect("STROBE_VENV must point at a venv with the pinned frida; run the tests through `./dev test`");
    FridaPython { venv: venv.into() }
        .check()
        .expect("venv usable")
}

const T: Duration = Duration::from_secs(30);

#[test]
fn spawn_capture_output_and_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let bridge = Bridge::start(&python(), tmp.path(), &tmp.path().join("bridge.log"), T).unwrap();
    assert_eq!(bridge.frida_version(), strobe_frida::PINNED_FRIDA_VERSION);
    let agent = bridge.ensure_agent(&tmp.path().join("cache"), T).unwrap();
    assert!(agent.is_file());
    let output = bridge.take_output().unwrap();
    let pid = bridge
        .spawn(
            &SpawnRequest {
                argv: vec![
                    "/bin/sh".into(),
                    "-c".into(),
                    "echo out; echo err >&2; exit 3".into(),
                ],
                env: vec![("PATH".into(), "/usr/bin:/bin".into())],
                cwd: None,
                agent_js: agent,
                follow_children: false,
            },
            T,
        )
        .unwrap();
    assert!(pid > 0);
    bridge.request("resume", serde_json::json!({}), T).unwrap();
    let events = bridge.events();
    let mut exit_code = None;
    let mut loaded = false;
    loop {
        match events.recv_timeout(T).expect("bridge event") {
            BridgeEvent::AgentMessage {
                pid: from, text, ..
            } => {
                assert_eq!(from, pid, "messages carry the process they come from");
                // Every message the real agent sends fits the typed protocol.
                let msg = match agent_protocol::decode(&text) {
                    Ok(Incoming::Message(m)) => m,
                    other => panic!("{other:?}: {}", String::from_utf8_lossy(&text)),
                };
                match msg {
                    AgentMessage::AgentLoaded(m) => {
                        assert_eq!(m.pid, pid);
                        loaded = true;
                    }
                    AgentMessage::Exit(m) => {
                        exit_code = Some(m.code);
                        bridge.post(&DaemonMessage::ExitAck.to_json(), &[]).unwrap();
                    }
                    _ => {}
                }
            }
            BridgeEvent::Detached { reason, .. } => {
                assert_eq!(reason, "process-terminated");
                break;
            }
            BridgeEvent::Gone { reason } => panic!("bridge gone: {reason}"),
            BridgeEvent::Child { .. } => panic!("children are not followed here"),
        }
    }
    assert!(loaded);
    assert_eq!(exit_code, Some(3));
    let (mut out, mut err) = (String::new(), String::new());
    let mut o = output;
    o.stdout.read_to_string(&mut out).unwrap();
    o.stderr.read_to_string(&mut err).unwrap();
    assert_eq!(out, "out\n");
    assert_eq!(err, "err\n");
    bridge.terminate();
}

/// The agent hands a tracer request to the tracer its `tracer` field names
/// (none: the native one) and refuses a name no tracer has rather than
/// letting another tracer answer it (agent/src/tracers/index.ts).
#[test]
fn tracer_requests_go_to_the_tracer_they_name() {
    let tmp = tempfile::tempdir().unwrap();
    let bridge = Bridge::start(&python(), tmp.path(), &tmp.path().join("bridge.log"), T).unwrap();
    let agent = bridge.ensure_agent(&tmp.path().join("cache"), T).unwrap();
    bridge
        .spawn(
            &SpawnRequest {
                argv: vec!["/bin/sleep".into(), "60".into()],
                env: vec![("PATH".into(), "/usr/bin:/bin".into())],
                cwd: None,
                agent_js: agent,
                follow_children: false,
            },
            T,
        )
        .unwrap();
    // The target stays suspended: the agent answers requests all the same.
    // Requests are handled in order, so the last answer comes after the
    // others. One for a tracer the agent does not have is answered too,
    // every function in it failed with the reason (the daemon's call
    // returns the error rather than waiting for an answer).
    let remove = |id, tracer: Option<&str>, functions: Vec<u32>| {
        DaemonMessage::Hooks(HooksRequest {
            id,
            tracer: tracer.map(str::to_string),
            change: HookChange::Remove { functions },
            watch_libraries: false,
        })
    };
    for request in [
        remove(1, None, vec![]),
        remove(2, Some("cobol"), vec![7]),
        DaemonMessage::Plans {
            id: 3,
            tracer: Some("native".into()),
            plans: vec![],
        },
        DaemonMessage::Exprs {
            id: 4,
            tracer: None,
            exprs: vec![],
        },
    ] {
        bridge.post(&request.to_json(), &[]).unwrap();
    }
    let events = bridge.events();
    let mut answers = Vec::new();
    let mut refusals: Vec<(u32, String)> = Vec::new();
    let mut errors = Vec::new();
    loop {
        match events.recv_timeout(T).expect("the agent answers") {
            BridgeEvent::AgentMessage { text, .. } => {
                let msg = match agent_protocol::decode(&text) {
                    Ok(Incoming::ScriptError { description, .. }) => {
                        errors.push(description);
                        continue;
                    }
                    Ok(Incoming::Message(m)) => m,
                    Ok(Incoming::Log { .. }) => continue,
                    Err(e) => panic!("{e}: {}", String::from_utf8_lossy(&text)),
                };
                let kind = msg.type_name();
                if kind.ends_with("_updated") {
                    answers.push((kind.to_string(), msg.reply_id().unwrap()));
                }
                if let AgentMessage::HooksUpdated(h) = &msg
                    && h.id == 2
                {
                    refusals.extend(h.failed.clone());
                }
                if kind == "exprs_updated" {
                    break;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let want = [
        ("hooks_updated", 1),
        ("hooks_updated", 2),
        ("plans_updated", 3),
        ("exprs_updated", 4),
    ]
    .map(|(k, id)| (k.to_string(), id));
    assert_eq!(answers, want, "every request is answered");
    assert!(errors.is_empty(), "no script error: {errors:?}");
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0].0, 7);
    assert!(
        refusals[0].1.contains(r#"no tracer named "cobol""#),
        "{refusals:?}"
    );
    bridge.terminate();
}

#[test]
fn missing_python_is_unavailable_with_a_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let e = Bridge::start(
        &tmp.path().join("nope/python"),
        tmp.path(),
        &tmp.path().join("l"),
        T,
    )
    .err()
    .unwrap();
    assert!(
        matches!(e, strobe_frida::BridgeError::Unavailable(_)),
        "{e}"
    );
}

#[test]
fn python_without_frida_says_how_to_fix() {
    let tmp = tempfile::tempdir().unwrap();
    // An interpreter that cannot see any site-packages, so `import frida` fails.
    let fake = tmp.path().join("python");
    std::fs::write(&fake, "#!/bin/sh\nexec python3 -S \"$@\"\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let e = Bridge::start(&fake, tmp.path(), &tmp.path().join("l"), T)
        .err()
        .unwrap();
    let msg = e.to_string();
    assert!(msg.contains("strobe setup"), "{msg}");
}

#[test]
fn dying_bridge_is_reported_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let bridge = Bridge::start(&python(), tmp.path(), &tmp.path().join("bridge.log"), T).unwrap();
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(bridge.process_id() as i32, libc::SIGKILL) };
    match bridge.events().recv_timeout(T).unwrap() {
        BridgeEvent::Gone { reason } => assert!(reason.contains("signal"), "{reason}"),
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        bridge.request("ping", serde_json::json!({}), T),
        Err(strobe_frida::BridgeError::Gone(_))
    ));
}

/// A second `terminate`, made while the first is still waiting for the
/// bridge to exit, returns only once it has: the session layer calls it
/// from two places (the session winding down, then a stop), and a stop
/// that returned early let the next attach meet the old bridge still
/// freeing its agent in the target under ptrace.
#[test]
fn every_terminate_returns_once_the_bridge_is_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let bridge = std::sync::Arc::new(
        Bridge::start(&python(), tmp.path(), &tmp.path().join("bridge.log"), T).unwrap(),
    );
    let pid = bridge.process_id();
    let first = {
        let b = bridge.clone();
        std::thread::spawn(move || b.terminate())
    };
    std::thread::sleep(Duration::from_millis(20));
    bridge.terminate();
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the bridge (pid {pid}) is gone when terminate returns"
    );
    first.join().unwrap();
}

/// Frida writes its helper and agent (about 10 MB) into a directory under
/// TMPDIR and removes it only when it shuts down cleanly: killed bridges
/// left `/tmp/frida-*` behind (3.3 GB over a few suite runs). A bridge's
/// TMPDIR is its own, under its work directory, and goes with the bridge.
#[test]
fn a_killed_bridges_frida_files_go_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    let bridge = Bridge::start(&python(), tmp.path(), &tmp.path().join("bridge.log"), T).unwrap();
    let agent = bridge.ensure_agent(&tmp.path().join("cache"), T).unwrap();
    let _output = bridge.take_output().unwrap();
    let target = bridge
        .spawn(
            &SpawnRequest {
                argv: vec!["/bin/sleep".into(), "30".into()],
                env: vec![("PATH".into(), "/usr/bin:/bin".into())],
                cwd: None,
                agent_js: agent,
                follow_children: false,
            },
            T,
        )
        .unwrap();
    let bridge_tmp: Vec<_> = std::fs::read_dir(tmp.path().join("tmp"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(bridge_tmp.len(), 1, "{bridge_tmp:?}");
    let frida_dirs = || {
        std::fs::read_dir(&bridge_tmp[0])
            .map(|d| d.flatten().count())
            .unwrap_or(0)
    };
    assert!(
        frida_dirs() > 0,
        "Frida wrote its files into the bridge's TMPDIR"
    );
    // SAFETY: signalling our own child process, then the target it spawned.
    unsafe { libc::kill(bridge.process_id() as i32, libc::SIGKILL) };
    // The agent's first messages may come before the news of its death.
    while !matches!(
        bridge.events().recv_timeout(T).expect("bridge event"),
        BridgeEvent::Gone { .. }
    ) {}
    unsafe { libc::kill(target as i32, libc::SIGKILL) };
    // Frida's idund detaches from the bridge and runs from its directory.
    let running_from_it = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read_link(e.path().join("exe"))
                    .is_ok_and(|x| x.starts_with(&bridge_tmp[0]))
            })
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    eprintln!("running from the bridge's TMPDIR: {:?}", running_from_it());
    drop(bridge);
    assert!(
        !bridge_tmp[0].exists(),
        "{} is removed with the bridge",
        bridge_tmp[0].display()
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        running_from_it(),
        Vec::<String>::new(),
        "nothing it started runs on"
    );
}
