//! JACK is optional: the `strobe` binary does not link JACK's client
//! library, the daemon never loads it to launch and trace a program, and on
//! a machine without it the tool call that needed JACK (a midi channel,
//! `debug_launch {jack: "auto"}`) says which package to install while
//! everything else works.
//!
//! This machine has JACK (the channel tests need it), so the test of a
//! machine without it hides the library from one `strobe mcp` and the
//! daemon it starts: a mount namespace of their own where every libjack
//! file is an empty one (the loader refuses it, as it would not find it).
//! That needs root: built as another user the test is ignored saying so;
//! built as root where namespaces are refused (a container without
//! CAP_SYS_ADMIN), it fails saying so. It never passes untested.

mod support;

use object::read::elf::{Dyn, ElfFile64};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::{Client, Env, Recorder, STROBE, fixture, running, wait_until};

/// What a reply that needed JACK must name: the library and its packages.
const TOLD: [&str; 3] = [
    "libjack.so.0",
    "apt install libjack-jackd2-0",
    "pipewire-jack",
];

/// The `DT_NEEDED` names of the ELF file at `path`.
fn needed(path: &str) -> Vec<String> {
    let data = std::fs::read(path).unwrap();
    let elf = ElfFile64::<object::Endianness>::parse(&*data).expect("an ELF64 file");
    let endian = elf.endian();
    let sections = elf.elf_section_table();
    let (entries, link) = sections
        .dynamic(endian, &*data)
        .unwrap()
        .expect("a dynamically linked binary");
    let strings = sections.strings(endian, &*data, link).unwrap();
    entries
        .iter()
        .filter(|d| d.tag32(endian) == Some(object::elf::DT_NEEDED))
        .map(|d| String::from_utf8_lossy(d.string(endian, strings).unwrap()).into_owned())
        .collect()
}

#[test]
fn the_strobe_binary_does_not_link_libjack() {
    let libs = needed(STROBE);
    // The check reads what it should: the C library is always there.
    assert!(libs.iter().any(|l| l.starts_with("libc.so")), "{libs:?}");
    assert!(
        !libs.iter().any(|l| l.contains("jack")),
        "strobe links {libs:?}: a machine without JACK could not start it"
    );
}

/// The files the loader would open for `libjack.so.0` here (from its
/// cache), links resolved.
fn libjack_files() -> Vec<PathBuf> {
    let out = Command::new("ldconfig")
        .arg("-p")
        .output()
        .expect("ldconfig -p");
    let mut files: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.trim_start().starts_with("libjack.so.0 "))
        .filter_map(|l| l.rsplit_once(" => ").map(|(_, p)| PathBuf::from(p.trim())))
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    files.sort();
    files.dedup();
    files
}

/// Starts `strobe mcp` in a mount namespace of its own (private: nothing
/// leaks to the machine's) with `empty` mounted over each of `hide`.
async fn client_without(env: &Env, empty: &Path, hide: &[PathBuf]) -> Client {
    let probe = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "--", "true"])
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        other => panic!(
            "this test hides libjack in a mount namespace of its own, which needs root with \
             CAP_SYS_ADMIN and util-linux's unshare (a container may refuse namespaces even to \
             root). unshare: {other:?}"
        ),
    }
    let mut cmd = tokio::process::Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "--", "sh", "-c"])
        .arg(r#"for f; do mount --bind "$EMPTY" "$f" || exit 1; done; exec "$STROBE_EXE" mcp"#)
        .arg("sh")
        .args(hide)
        .env("EMPTY", empty)
        .env("STROBE_EXE", STROBE)
        .env("STROBE_HOME", env.path())
        .env("STROBE_VENV", &env.venv)
        .env_remove("CARGO_TARGET_DIR");
    let transport = rmcp::transport::TokioChildProcess::new(cmd).expect("spawn unshare");
    let proxy_pid = transport.id();
    let progress = Recorder::default();
    let service = rmcp::ServiceExt::serve(progress.clone(), transport)
        .await
        .expect("MCP initialize through unshare");
    Client {
        service,
        proxy_pid,
        progress,
    }
}

/// Waits (up to 30 s) until the session has recorded a call of `name`.
async fn wait_call(c: &Client, id: &str, name: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n = c.calls_of(id, "function_enter", name).await.len();
        if n > 0 {
            return n;
        }
        assert!(Instant::now() < deadline, "no call of {name} traced");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Processes whose command line has `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(needle)
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_root),
    ignore = "needs root, to hide libjack from a daemon in a mount namespace of its own (run the tests as root): not root when the tests were built"
)]
async fn without_libjack_programs_are_traced_and_a_jack_request_says_what_to_install() {
    let hide = libjack_files();
    let scratch = tempfile::Builder::new()
        .prefix("strobe-nojack-")
        .tempdir()
        .unwrap();
    let empty = scratch.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    let env = Env::new();
    let c = client_without(&env, &empty, &hide).await;
    let exe = fixture("ticker");

    // Launch, trace, query, stop: all as on any machine.
    c.ok("debug_trace", json!({"add": ["tick_work"]})).await;
    let (id, pid) = c.launch(&exe, &[]).await;
    let daemon = env.daemon_pid().expect("the daemon's pid");
    for f in &hide {
        // The daemon really is without it (its view of the file is empty).
        let seen = std::fs::metadata(format!("/proc/{daemon}/root{}", f.display())).unwrap();
        assert_eq!(
            seen.len(),
            0,
            "{} is not hidden from the daemon",
            f.display()
        );
        assert!(
            std::fs::metadata(f).unwrap().len() > 0,
            "hidden outside too"
        );
    }
    assert!(wait_call(&c, &id, "tick_work").await > 0);
    assert!(!c.stdout_lines(&id).await.is_empty());

    // A midi channel needs JACK: the reply says what to install.
    let r = c
        .reply(
            "debug_channel",
            json!({"sessionId": id, "action": "add", "channel": "midi"}),
        )
        .await;
    eprintln!("debug_channel add midi: {}", r.text);
    assert!(r.is_error, "{}", r.text);
    for want in TOLD {
        assert!(r.text.contains(want), "{want:?} not in {:?}", r.text);
    }
    // The session goes on, and stops.
    let before = c.calls_of(&id, "function_enter", "tick_work").await.len();
    let deadline = Instant::now() + Duration::from_secs(30);
    while c.calls_of(&id, "function_enter", "tick_work").await.len() == before {
        assert!(
            Instant::now() < deadline,
            "tracing stopped after the refusal"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    assert!(
        wait_until(Duration::from_secs(10), || !running(pid)),
        "the program outlived its stopped session"
    );

    // A private server needs it too: refused before any jackd is started.
    let r = c
        .reply(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap(), "jack": "auto"}),
        )
        .await;
    eprintln!("debug_launch jack auto: {}", r.text);
    assert!(r.is_error, "{}", r.text);
    for want in TOLD {
        assert!(r.text.contains(want), "{want:?} not in {:?}", r.text);
    }
    let servers = processes_with(&format!("jackd -n strobe-{daemon}-"));
    assert!(servers.is_empty(), "jackd started: {servers:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tracing_a_program_never_loads_libjack() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("ticker");
    c.ok("debug_trace", json!({"add": ["tick_work"]})).await;
    let (id, _pid) = c.launch(&exe, &[]).await;
    wait_call(&c, &id, "tick_work").await;
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    let daemon = env.daemon_pid().expect("the daemon's pid");
    let maps = std::fs::read_to_string(format!("/proc/{daemon}/maps")).unwrap();
    // The check reads what it should: the daemon's own C library is mapped.
    assert!(maps.contains("libc.so"), "no libc in the daemon's maps");
    let jack: Vec<&str> = maps.lines().filter(|l| l.contains("libjack")).collect();
    assert!(jack.is_empty(), "the daemon loaded JACK: {jack:?}");
}
