//! Shared helpers for the end-to-end tests: a private STROBE_HOME per test,
//! C fixtures built with `gcc -g`, an rmcp client talking to a real
//! `strobe mcp` over pipes, and clean-up of the daemon by PID.
#![allow(dead_code)]

use rmcp::model::{CallToolRequestParams, CallToolResult, ProgressNotificationParam};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub mod pyenv;

/// The `strobe` binary under test.
pub const STROBE: &str = env!("CARGO_BIN_EXE_strobe");

/// The interpreter of CPython `minor` ("3.12") from this machine's pyenv.
/// Its tests are ignored where the build found none (the `strobe_cpython_*`
/// cfgs of crates/strobe-cli/build.rs), so one gone since is a failure, not
/// a silent pass.
pub fn pyenv_python(minor: &str) -> PathBuf {
    pyenv::python(minor).unwrap_or_else(|| {
        panic!(
            "no CPython {minor} under {}/versions, though the build found one: \
             `pyenv install {minor}`, or rebuild the tests (cargo reprobes when pyenv's shims change)",
            pyenv::root().unwrap_or_default().display()
        )
    })
}

/// The Python fixture package the tracing and crash tests run
/// (tests/fixtures/python/shop), as an absolute path.
pub fn python_shop() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/python/shop")
        .canonicalize()
        .unwrap()
}

/// The venv with the pinned frida; `./dev test` sets STROBE_VENV.
pub fn venv() -> PathBuf {
    let v = std::env::var_os("STROBE_VENV").map(PathBuf::from).expect(
        "STROBE_VENV must name a venv with the pinned frida: run the suite with `./dev test`",
    );
    assert!(
        v.join("bin/python").is_file(),
        "STROBE_VENV={} has no bin/python; run `./dev test`",
        v.display()
    );
    v
}

/// `tests/fixtures/javascript/<name>`, canonical (the Node fixtures'
/// project roots).
pub fn javascript_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/javascript")
        .join(name)
        .canonicalize()
        .unwrap()
}

/// The line (1-based) of the fixture source `src` holding `@marker`.
pub fn marker_line(src: &str, marker: &str) -> u64 {
    let tag = format!("@{marker} ");
    src.lines()
        .position(|l| l.contains(&tag))
        .unwrap_or_else(|| panic!("no marker {marker}")) as u64
        + 1
}

/// Builds `tests/fixtures/<name>.c` with `gcc -g -O0` once per content and
/// returns the executable.
pub fn fixture(name: &str) -> PathBuf {
    fixture_with(name, &[])
}

/// Like [`fixture`], with extra compiler flags (e.g. `-fsanitize=address`).
pub fn fixture_with(name: &str, flags: &[&str]) -> PathBuf {
    let mut all = vec!["-g", "-O0"];
    all.extend_from_slice(flags);
    compile_with(&format!("{name}.c"), "gcc", &all)
}

/// `trace_dl.c` linked against `libtracelib.so` (found by rpath), and the
/// plugin it dlopens: (program, plugin, the directory both are in).
pub fn dl_fixture() -> (PathBuf, PathBuf, PathBuf) {
    let lib = compile_with("libtracelib.c", "gcc", &["-g", "-shared", "-fPIC"]);
    let plugin = compile_with("libtraceplugin.c", "gcc", &["-g", "-shared", "-fPIC"]);
    let dir = lib.parent().unwrap().to_path_buf();
    let linked = dir.join("libtracelib.so");
    if !linked.exists() {
        std::fs::copy(&lib, &linked).unwrap();
    }
    let d = dir.to_str().unwrap();
    let exe = compile_with(
        "trace_dl.c",
        "gcc",
        &[
            "-g",
            "-O0",
            "-L",
            d,
            "-Wl,-rpath",
            d,
            "--",
            "-ltracelib",
            "-ldl",
        ],
    );
    (exe, plugin, dir)
}

/// Builds `tests/fixtures/<file>` with `compiler` (gcc, g++, rustc) and `flags`,
/// once per content and flags. Flags after a `"--"` go after the source file
/// (libraries to link).
pub fn compile_with(file: &str, compiler: &str, flags: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(file);
    let text = std::fs::read(&src).unwrap_or_else(|e| panic!("fixture {}: {e}", src.display()));
    // The source path is part of the key: debug info records it, and
    // @usercode / file filters must see this checkout's path even when the
    // target dir is shared (CI caches it across clones).
    let hash = text
        .iter()
        .chain(src.as_os_str().as_encoded_bytes())
        .chain(compiler.as_bytes())
        .chain(flags.join(" ").as_bytes())
        .fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ *b as u64).wrapping_mul(0x100000001b3)
        });
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixtures");
    std::fs::create_dir_all(&dir).unwrap();
    let stem = file.split('.').next().unwrap();
    let out = dir.join(format!("{stem}-{hash:016x}"));
    if !out.is_file() {
        let tmp = dir.join(format!(
            "{stem}.{}.{:?}.tmp",
            std::process::id(),
            std::thread::current().id()
        ));
        let split = flags.iter().position(|f| *f == "--").unwrap_or(flags.len());
        let st = Command::new(compiler)
            .args(&flags[..split])
            .arg("-o")
            .arg(&tmp)
            .arg(&src)
            .args(flags.get(split + 1..).unwrap_or_default())
            .status()
            .expect("compiler runs");
        assert!(st.success(), "{compiler} failed for {}", src.display());
        // Never over an existing build: another test that compiled it at
        // the same time may already run it, and replacing the file left
        // that process's /proc/PID/exe "(deleted)" (its symbols unreadable).
        match std::fs::hard_link(&tmp, &out) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => panic!("{}: {e}", out.display()),
        }
        std::fs::remove_file(&tmp).unwrap();
    }
    out
}

/// A private STROBE_HOME; kills the daemon it started when dropped.
pub struct Env {
    pub home: tempfile::TempDir,
    pub venv: PathBuf,
}

impl Env {
    pub fn new() -> Env {
        Self::with_settings(json!({}))
    }

    /// A home whose global settings.json holds `settings`.
    pub fn with_settings(settings: Value) -> Env {
        let home = tempfile::Builder::new()
            .prefix("strobe-home-")
            .tempdir()
            .unwrap();
        std::fs::write(home.path().join("settings.json"), settings.to_string()).unwrap();
        Env { home, venv: venv() }
    }

    pub fn path(&self) -> &Path {
        self.home.path()
    }

    /// `strobe <args>` with this home's environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(STROBE);
        c.args(args)
            .env("STROBE_HOME", self.path())
            .env("STROBE_VENV", &self.venv)
            .env_remove("CARGO_TARGET_DIR");
        c
    }

    /// Starts `strobe mcp` and initializes an rmcp client over its stdio.
    pub async fn client(&self) -> Client {
        let mut cmd = tokio::process::Command::new(STROBE);
        // CI points CARGO_TARGET_DIR at Strobe's own build directory, which
        // the `cargo test` running this suite keeps locked: a daemon that
        // inherited it would wait forever to build a debug_test project.
        cmd.arg("mcp")
            .env("STROBE_HOME", self.path())
            .env("STROBE_VENV", &self.venv)
            .env_remove("CARGO_TARGET_DIR");
        let transport = TokioChildProcess::new(cmd).expect("spawn strobe mcp");
        let proxy_pid = transport.id();
        let progress = Recorder::default();
        let service = progress
            .clone()
            .serve(transport)
            .await
            .expect("MCP initialize");
        Client {
            service,
            proxy_pid,
            progress,
        }
    }

    /// The web UI's loopback port and token, from `strobe ui` (which
    /// starts the daemon's endpoint if need be).
    pub fn ui_endpoint(&self) -> (u16, String) {
        let out = self.command(&["ui"]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
        let (port, token) = rest.split_once("/?token=").unwrap();
        (port.parse().unwrap(), token.to_string())
    }

    /// The daemon's pid as written in its pid file.
    pub fn daemon_pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.path().join("strobe.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// True when `pid` is a live strobe daemon of THIS home (so it is ours to signal).
    pub fn is_our_daemon(&self, pid: u32) -> bool {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let want = format!("STROBE_HOME={}", self.path().display());
        running(pid)
            && cmdline.split(|b| *b == 0).any(|a| a == b"daemon")
            && environ.split(|b| *b == 0).any(|e| e == want.as_bytes())
    }

    /// Waits until no daemon of this home is alive.
    pub fn wait_daemon_gone(&self, pid: u32, timeout: Duration) -> bool {
        wait_until(timeout, || !self.is_our_daemon(pid))
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        // A `strobe mcp` proxy of this test that is still shutting down
        // restarts a daemon it sees die (as it should for a real agent), so
        // look again shortly after each stop: that one is ours too.
        for _ in 0..3 {
            let Some(pid) = self.daemon_pid().filter(|pid| self.is_our_daemon(*pid)) else {
                break;
            };
            // SAFETY: kill(2) of the daemon this test started (checked above).
            unsafe { libc_kill(pid as i32, 15) };
            if !self.wait_daemon_gone(pid, Duration::from_secs(10)) {
                unsafe { libc_kill(pid as i32, 9) };
            }
            std::thread::sleep(Duration::from_millis(150));
        }
        // Nothing of this home may outlive it: a daemon still winding down
        // (its pid file already gone), its bridges, a proxy. One that ran on
        // after the home was removed made parts of it again (a bridge's
        // directory), which the suite's leak check found left in TMPDIR.
        if !wait_until(Duration::from_secs(5), || self.processes().is_empty()) {
            for pid in self.processes() {
                // SAFETY: kill(2) of a process started with this test's
                // own STROBE_HOME in its environment.
                unsafe { libc_kill(pid as i32, 9) };
            }
            wait_until(Duration::from_secs(5), || self.processes().is_empty());
        }
    }
}

impl Env {
    /// Live processes (other than this test's) with this home's
    /// STROBE_HOME in their environment: its daemon, bridges, proxies and
    /// the targets they launched.
    fn processes(&self) -> Vec<u32> {
        let want = format!("STROBE_HOME={}", self.path().display());
        let me = std::process::id();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        procs
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| *pid != me && running(*pid))
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|e| e == want.as_bytes()))
            })
            .collect()
    }
}

/// A target process the test started itself (an attach target), killed by
/// its pid when the test ends, passing or failing, unless it has already
/// exited. One left behind (a failed Frida attach can leave it spinning)
/// would hold the test runner's stderr open and hang the whole run.
pub struct Spawned(pub std::process::Child);

impl Spawned {
    /// Starts `cmd`; panics when it cannot be started.
    pub fn start(cmd: &mut std::process::Command) -> Spawned {
        Spawned(cmd.spawn().unwrap_or_else(|e| panic!("{cmd:?}: {e}")))
    }
}

impl std::ops::Deref for Spawned {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Spawned {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        // try_wait reaps it if it has exited, so the pid cannot have been
        // reused when kill(2) goes to it.
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Copies `files` of `tests/fixtures/javascript/<fixture>` into `root` and
/// compiles them with the real tsc (the agent's, `./dev test` installs it).
pub fn build_typescript(fixture: &str, files: &[&str], root: &Path) {
    let tsc = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../agent/node_modules/.bin/tsc");
    assert!(
        tsc.exists(),
        "{} is missing: `./dev test` installs the agent's npm packages (typescript among them)",
        tsc.display()
    );
    let from = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/javascript")
        .join(fixture);
    for f in files {
        let to = root.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from.join(f), to).unwrap();
    }
    let built = Command::new(&tsc).arg("-p").arg(root).output().unwrap();
    assert!(built.status.success(), "tsc: {built:?}");
}

/// The local `name` of a paused thread (`{name, type, value}`).
pub fn local<'a>(paused: &'a Value, name: &str) -> &'a Value {
    paused["locals"]
        .as_array()
        .and_then(|l| l.iter().find(|v| v["name"] == name))
        .unwrap_or_else(|| panic!("no local {name}: {paused}"))
}

unsafe extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// Every node of a `debug_ui` answer's structured tree, depth first.
pub fn ui_nodes(nodes: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for n in nodes.as_array().into_iter().flatten() {
        out.push(n.clone());
        out.extend(ui_nodes(&n["children"]));
    }
    out
}

/// Whether `pid` is a process that has not ended (a zombie has, and a
/// pid with no process).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// Sends `sig` to `pid` (only ever used on processes the test started).
pub fn signal(pid: u32, sig: i32) {
    // SAFETY: plain kill(2).
    unsafe { libc_kill(pid as i32, sig) };
}

/// Sends `sig` to the process group `pgid` (one the test started with
/// `process_group(0)`, so its id is its leader's pid).
/// Waits for a script started in its own process group; past `timeout`
/// kills the group (the script and what it started, a browser, an
/// adapter) and fails the test naming `what`.
pub async fn wait_script(
    child: &mut std::process::Child,
    timeout: Duration,
    what: &str,
) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if started.elapsed() > timeout {
            signal_group(child.id(), 9);
            let _ = child.wait();
            panic!("{what} ran past {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn signal_group(pgid: u32, sig: i32) {
    // SAFETY: plain kill(2) on a negative pid: the group.
    unsafe { libc_kill(-(pgid as i32), sig) };
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The client's handler: keeps every progress notification it receives.
#[derive(Clone, Default)]
pub struct Recorder {
    pub notes: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl rmcp::ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.notes.lock().unwrap().push(params);
    }
}

/// An MCP client connected through a real `strobe mcp` proxy.
pub struct Client {
    pub service: RunningService<RoleClient, Recorder>,
    pub proxy_pid: Option<u32>,
    /// Progress notifications received so far.
    pub progress: Recorder,
}

/// A tool result: structured content, whether it is an error, and the text.
#[derive(Debug)]
pub struct Reply {
    pub value: Value,
    pub is_error: bool,
    pub text: String,
}

impl Reply {
    /// The error's text; panics when the call succeeded.
    pub fn error_text(&self) -> &str {
        assert!(self.is_error, "expected an error, got {}", self.value);
        &self.text
    }
}

impl Client {
    pub async fn raw(&self, tool: &str, args: Value) -> Result<CallToolResult, rmcp::ServiceError> {
        let Value::Object(map) = args else {
            panic!("arguments must be an object")
        };
        self.service
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(map))
            .await
    }

    /// The progress notifications received so far, and forgets them.
    /// (The rmcp client gives every request a progress token of its own.)
    pub fn take_progress(&self) -> Vec<ProgressNotificationParam> {
        std::mem::take(&mut *self.progress.notes.lock().unwrap())
    }

    pub async fn reply(&self, tool: &str, args: Value) -> Reply {
        let r = self.raw(tool, args).await.expect("tool call transport");
        let text = r
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n");
        Reply {
            value: r.structured_content.clone().unwrap_or(Value::Null),
            is_error: r.is_error == Some(true),
            text,
        }
    }

    /// Calls a tool that must succeed; returns its structured content.
    pub async fn ok(&self, tool: &str, args: Value) -> Value {
        let r = self.reply(tool, args).await;
        assert!(!r.is_error, "{tool} failed: {}", r.text);
        r.value
    }

    pub async fn launch(&self, exe: &Path, args: &[&str]) -> (String, u32) {
        let root = exe.parent().unwrap().to_str().unwrap();
        let v = self
            .ok(
                "debug_launch",
                json!({ "command": exe, "args": args, "projectRoot": root }),
            )
            .await;
        (
            v["sessionId"].as_str().unwrap().to_string(),
            v["pid"].as_u64().unwrap() as u32,
        )
    }

    /// Like [`Client::ok`], but a call that was in flight while the daemon died
    /// (the proxy answers it with an error by design) is retried once the
    /// proxy has brought a new daemon up.
    pub async fn ok_after_daemon_restart(&self, tool: &str, args: Value) -> Value {
        for _ in 0..50 {
            match self.raw(tool, args.clone()).await {
                Ok(r) if r.is_error != Some(true) => {
                    return r.structured_content.unwrap_or(Value::Null);
                }
                Ok(r) => panic!("{tool} failed: {:?}", r.content),
                Err(e) => {
                    assert!(
                        e.to_string().contains("daemon exited"),
                        "unexpected transport error: {e}"
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        panic!("{tool} kept failing after the daemon restart");
    }

    pub async fn status(&self, id: &str) -> Value {
        self.ok(
            "debug_session",
            json!({ "action": "status", "sessionId": id }),
        )
        .await
    }

    /// Waits (up to 30 s) until a thread of the session is paused; returns it.
    pub async fn wait_paused(&self, id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let s = self.status(id).await;
            if let Some(p) = s["pausedThreads"].as_array().and_then(|a| a.first()) {
                return p.clone();
            }
            assert!(Instant::now() < deadline, "no paused thread: {s}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// `debug_continue` with a step `action`, which must end paused.
    pub async fn step(&self, id: &str, action: &str) -> Value {
        let v = self
            .ok("debug_continue", json!({"sessionId": id, "action": action}))
            .await;
        assert_eq!(v["status"], "paused", "{action}: {v}");
        v
    }

    /// Waits until the session is no longer running; returns its status.
    pub async fn wait_ended(&self, id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let s = self.status(id).await;
            if s["state"] != "running" && s["state"] != "starting" {
                return s;
            }
            assert!(Instant::now() < deadline, "session {id} did not end: {s}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// All events of a session (optionally of one type), via paging.
    pub async fn events(&self, id: &str, event_type: Option<&str>) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let mut args = json!({ "sessionId": id, "limit": 500, "offset": out.len() });
            if let Some(t) = event_type {
                args["eventType"] = json!(t);
            }
            let v = self.ok("debug_query", args).await;
            let page = v["events"].as_array().unwrap().clone();
            out.extend(page);
            if v["hasMore"] != true {
                return out;
            }
        }
    }

    /// Every event of `kind` (`function_enter`, `function_exit`) of the
    /// function named `name`, verbose, in order.
    pub async fn calls_of(&self, id: &str, kind: &str, name: &str) -> Vec<Value> {
        self.query_all(id, json!({"eventType": kind, "function": {"equals": name}}))
            .await
    }

    /// Every event matching `filter` (debug_query's arguments without the
    /// session and paging), verbose, via paging.
    pub async fn query_all(&self, id: &str, filter: Value) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let mut args = filter.clone();
            args["sessionId"] = json!(id);
            args["limit"] = json!(500);
            args["offset"] = json!(out.len());
            args["verbose"] = json!(true);
            let v = self.ok("debug_query", args).await;
            out.extend(v["events"].as_array().unwrap().iter().cloned());
            if v["hasMore"] != true {
                return out;
            }
        }
    }

    /// Waits (up to 30 s) until the session has printed a stdout line.
    pub async fn wait_stdout(&self, id: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.stdout_lines(id).await.is_empty() {
            assert!(Instant::now() < deadline, "session {id} never printed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The text of every stdout line of a session, in order.
    pub async fn stdout_lines(&self, id: &str) -> Vec<String> {
        self.events(id, Some("stdout"))
            .await
            .iter()
            .map(|e| e["text"].as_str().unwrap().to_string())
            .collect()
    }

    /// Starts a debug_test run with `args` and waits for its result (each
    /// status call waits up to 15 s; at most `minutes` in all).
    pub async fn test_run(&self, args: Value, minutes: u32) -> Value {
        self.test_run_reply(args, minutes).await.value
    }

    /// Like [`Client::test_run`], with the final answer's text.
    pub async fn test_run_reply(&self, args: Value, minutes: u32) -> Reply {
        let started = self.ok("debug_test", args).await;
        assert_eq!(started["status"], "running", "{started}");
        let id = started["testRunId"].as_str().unwrap().to_string();
        for _ in 0..minutes * 4 {
            let s = self
                .reply("debug_test", json!({"action": "status", "testRunId": id}))
                .await;
            assert!(!s.is_error, "debug_test failed: {}", s.text);
            if s.value["status"] == "completed" {
                return s;
            }
            assert_eq!(s.value["status"], "running", "{}", s.value);
        }
        panic!("test run {id} did not finish in {minutes} minutes");
    }
}
