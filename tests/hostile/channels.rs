//! File channels against a hostile project tree: a committed
//! `conf/link.ini` that links to a canary outside the tree, a FIFO that no
//! process reads, and specs that aim outside (`../x.txt`, `/etc/passwd`,
//! a canary's absolute path), through `debug_channel`, `debug_launch
//! {channels}` and a scenario, against a real program under Frida. Nothing
//! outside the tree may change or be echoed, and no call may hang.

use crate::canary::Canaries;
use crate::support::{self, Client, Env, fixture};
use serde_json::{Value, json};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The canary the committed link points at.
const LINKED: &str = "link-target.ini";
/// A canary named by its absolute path.
const VICTIM: &str = "victim.txt";

/// A project at `<base>/project`, so `../x.txt` lands in `base`:
/// `conf/app.ini`, `conf/link.ini -> <canary>`, the FIFO `conf/pipe.ini`.
struct Tree {
    base: tempfile::TempDir,
    canaries: Canaries,
}

impl Tree {
    fn new() -> Tree {
        let canaries = Canaries::new(&[LINKED, VICTIM]);
        let base = tempfile::Builder::new()
            .prefix("strobe-hostile-channels-")
            .tempdir()
            .unwrap();
        let conf = base.path().join("project/conf");
        std::fs::create_dir_all(&conf).unwrap();
        std::fs::write(conf.join("app.ini"), "rate=44100\n").unwrap();
        std::os::unix::fs::symlink(canaries.path(LINKED), conf.join("link.ini")).unwrap();
        let fifo = CString::new(conf.join("pipe.ini").as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        Tree { base, canaries }
    }

    fn root(&self) -> PathBuf {
        self.base.path().join("project")
    }

    /// Nothing outside the tree changed: the canaries, and `../x.txt`.
    fn assert_untouched(&self) {
        self.canaries.assert_untouched();
        let beside: Vec<_> = std::fs::read_dir(self.base.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(beside, ["project"], "a file appeared beside the project");
    }
}

/// Launches the sleeper in `root`: (session, pid).
async fn launch(c: &Client, root: &Path) -> (String, u32) {
    let v = c
        .ok(
            "debug_launch",
            json!({"command": fixture("sleeper"), "projectRoot": root}),
        )
        .await;
    (
        v["sessionId"].as_str().unwrap().to_string(),
        v["pid"].as_u64().unwrap() as u32,
    )
}

/// Stops the session and checks its program is gone.
async fn stop(c: &Client, id: &str, pid: u32) {
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    assert!(
        support::wait_until(Duration::from_secs(10), || !support::running(pid)),
        "pid {pid} outlived its session"
    );
}

/// `debug_channel` in session `id`; the reply, bounded so a hang fails the
/// test instead of stalling it.
async fn channel(c: &Client, id: &str, mut args: Value) -> support::Reply {
    args["sessionId"] = json!(id);
    tokio::time::timeout(
        Duration::from_secs(30),
        c.reply("debug_channel", args.clone()),
    )
    .await
    .unwrap_or_else(|_| panic!("debug_channel {args} did not answer within 30 s"))
}

#[tokio::test(flavor = "multi_thread")]
async fn file_channels_stay_inside_the_project_unless_the_agent_opts_in() {
    let tree = Tree::new();
    let env = Env::new();
    let c = env.client().await;
    let (id, pid) = launch(&c, &tree.root()).await;
    let victim = format!("file:{}", tree.canaries.path(VICTIM).display());

    // Out of the project, each spec is refused naming the opt-in; a send
    // to it (the delete that removed /tmp/x.txt) finds no channel.
    for (spec, op) in [
        (victim.as_str(), "delete"),
        ("file:../x.txt", "write"),
        ("file:/etc/passwd", "append"),
        ("file:conf/link.ini", "write"),
    ] {
        let e = channel(&c, &id, json!({"action": "add", "channel": spec})).await;
        let says = e.error_text();
        assert!(says.contains("allowOutsideProject: true"), "{spec}: {says}");
        let e = channel(
            &c,
            &id,
            json!({"action": "send", "channel": spec, "data": {"op": op, "text": "pwned"}}),
        )
        .await;
        assert!(e.error_text().contains("is not open"), "{spec}: {}", e.text);
    }

    // A glob inside the project: the link in it is never written through,
    // nor read for an excerpt; the link itself can be deleted.
    channel(
        &c,
        &id,
        json!({"action": "add", "channel": "file:conf/*.ini"}),
    )
    .await;
    for data in [
        json!({"op": "write", "path": "link.ini", "text": "pwned"}),
        json!({"op": "append", "path": "link.ini", "text": "pwned"}),
        json!({"op": "truncate", "path": "link.ini"}),
        json!({"op": "touch", "path": "link.ini"}),
    ] {
        let e = channel(
            &c,
            &id,
            json!({"action": "send", "channel": "file:conf/*.ini", "data": data}),
        )
        .await;
        assert!(
            e.error_text().contains("never works through a link"),
            "{data}: {}",
            e.text
        );
    }
    // The program (here the test) makes another link; the watcher sees it
    // without reading what it points to.
    std::os::unix::fs::symlink(tree.canaries.path(VICTIM), tree.root().join("conf/new.ini"))
        .unwrap();
    let r = channel(
        &c,
        &id,
        json!({"action": "send", "channel": "file:conf/*.ini", "data": {"op": "write", "path": "app.ini", "text": "rate=48000\n"}}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text);
    let seen = Value::from(wait_seen(&c, &id, &["new.ini", "app.ini"]).await);
    assert!(
        !seen.to_string().contains("must never change"),
        "a canary's content was echoed: {seen}"
    );
    let r = channel(
        &c,
        &id,
        json!({"action": "send", "channel": "file:conf/*.ini", "data": {"op": "delete", "path": "link.ini"}}),
    )
    .await;
    assert!(r.text.contains("not what it points to"), "{}", r.text);
    assert!(tree.canaries.path(LINKED).exists());

    // The opt-in is the agent's: on `add` only, and the answer says so.
    let e = channel(
        &c,
        &id,
        json!({"action": "send", "channel": "stdio", "data": {"text": ""}, "allowOutsideProject": true}),
    )
    .await;
    assert!(
        e.error_text()
            .contains("'send' takes no 'allowOutsideProject'"),
        "{}",
        e.text
    );
    // Asked for on a channel opened without it, it is not silently lost.
    let e = channel(
        &c,
        &id,
        json!({"action": "add", "channel": "file:conf/*.ini", "allowOutsideProject": true}),
    )
    .await;
    assert!(
        e.error_text()
            .contains("open already, without allowOutsideProject"),
        "{}",
        e.text
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let spec = format!("file:{}/out.txt", elsewhere.path().display());
    let r = channel(
        &c,
        &id,
        json!({"action": "add", "channel": spec, "allowOutsideProject": true}),
    )
    .await;
    assert!(r.text.contains("outside the project root"), "{}", r.text);
    assert_eq!(r.value["channel"]["outsideProject"], true, "{}", r.value);
    let r = channel(
        &c,
        &id,
        json!({"action": "send", "channel": spec, "data": {"op": "write", "text": "ok"}}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text);
    assert_eq!(
        std::fs::read_to_string(elsewhere.path().join("out.txt")).unwrap(),
        "ok"
    );
    stop(&c, &id, pid).await;
    tree.assert_untouched();
}

/// Waits (up to 30 s) until the file channel has seen each of `names`;
/// every file event.
async fn wait_seen(c: &Client, id: &str, names: &[&str]) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let events = c.events(id, Some("file")).await;
        let seen = |n: &str| {
            events
                .iter()
                .any(|e| e["dir"] == "seen" && e["path"].as_str().unwrap_or("").ends_with(n))
        };
        if names.iter().all(|n| seen(n)) {
            return events;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not all of {names:?} seen: {events:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn launch_and_scenario_channels_cannot_opt_out_of_the_project() {
    let tree = Tree::new();
    let env = Env::new();
    let c = env.client().await;
    for spec in ["file:/etc/shadow", "file:../x.txt"] {
        let e = c
            .reply(
                "debug_launch",
                json!({"command": fixture("sleeper"), "projectRoot": tree.root(), "channels": [spec]}),
            )
            .await;
        let says = e.error_text();
        assert!(
            says.contains("outside the project root") && says.contains("allowOutsideProject"),
            "{spec}: {says}"
        );
    }
    let (id, pid) = launch(&c, &tree.root()).await;
    let e = c
        .reply(
            "debug_test_scenario",
            json!({"sessionId": id, "scenario": {"channels": ["file:../x.txt"], "steps": [
                {"do": "file:../x.txt.send", "op": "write", "text": "pwned"},
            ]}}),
        )
        .await;
    let says = if e.is_error {
        e.text.clone()
    } else {
        e.value.to_string()
    };
    assert!(e.value["passed"] != true, "{says}");
    assert!(says.contains("outside the project root"), "{says}");
    stop(&c, &id, pid).await;
    tree.assert_untouched();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_into_a_fifo_that_nobody_reads_answers_at_once() {
    let tree = Tree::new();
    let env = Env::new();
    let c = env.client().await;
    let (id, pid) = launch(&c, &tree.root()).await;
    let pipe = tree.root().join("conf/pipe.ini");
    channel(
        &c,
        &id,
        json!({"action": "add", "channel": "file:conf/pipe.ini"}),
    )
    .await;
    let send = |data: Value| {
        channel(
            &c,
            &id,
            json!({"action": "send", "channel": "file:conf/pipe.ini", "data": data}),
        )
    };
    for op in ["write", "append"] {
        let e = send(json!({"op": op, "text": "x=1\n"})).await;
        assert!(
            e.error_text()
                .contains("no process has the FIFO open for reading"),
            "{op}: {}",
            e.text
        );
    }
    let e = send(json!({"op": "truncate"})).await;
    assert!(
        e.error_text().contains("a FIFO, not a regular file"),
        "{}",
        e.text
    );
    // With a reader, the text goes into the FIFO, which stays a FIFO.
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&pipe)
        .unwrap();
    let r = send(json!({"op": "write", "text": "x=1\n"})).await;
    assert!(r.text.contains("into the FIFO"), "{}", r.text);
    let mut got = String::new();
    std::io::Read::read_to_string(&mut reader, &mut got).ok();
    assert_eq!(got, "x=1\n");
    assert!(
        std::fs::symlink_metadata(&pipe)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    // The daemon still answers at once: no worker is left in openat.
    let listed = channel(&c, &id, json!({"action": "list"})).await;
    assert!(
        listed.text.contains("file:conf/pipe.ini"),
        "{}",
        listed.text
    );
    stop(&c, &id, pid).await;
    tree.assert_untouched();
}
