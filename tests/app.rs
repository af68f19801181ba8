//! The desktop app (`src-tauri`, binary `strobe-app`) end to end, in its real
//! WebKitGTK webview: driven over WebDriver (`tauri-driver` in front of
//! `WebKitWebDriver`) on a private Xvfb display and D-Bus session bus.
//!
//! - It attaches to a daemon that already runs (a headless `strobe daemon`
//!   with a finished session), shows that session, keeps a tray, answers a
//!   second `strobe-app` by showing itself, and leaves the daemon running
//!   when it quits.
//! - With no daemon running it becomes the daemon: `strobe mcp` reaches it,
//!   a session launched through it appears in its window, and quitting stops
//!   the daemon cleanly.
//! - Without a display it is the headless daemon.
//!
//! The app is built outside the workspace (GTK never builds at the root), so
//! `./dev test` builds it and names it in `STROBE_APP`. Screenshots go to
//! `$STROBE_TEST_OUTPUT` or `target/test-output/app/`.

mod support;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{Env, fixture, signal, wait_until};

/// The built `strobe-app`, from `STROBE_APP`.
fn app_binary() -> PathBuf {
    let app = std::env::var_os("STROBE_APP").map(PathBuf::from).expect(
        "STROBE_APP is not set: it must name the built desktop app (src-tauri's strobe-app). \
         Run the suite with `./dev test`, which builds it and sets STROBE_APP",
    );
    assert!(
        app.is_absolute() && app.is_file(),
        "STROBE_APP={} is not an absolute path to a file; run `./dev test`",
        app.display()
    );
    app
}

/// `tauri-driver`, on PATH or where `cargo install` puts it.
fn tauri_driver() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("tauri-driver"));
    let cargo_bin =
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/bin/tauri-driver"));
    on_path
        .chain(cargo_bin)
        .find(|p| p.is_file())
        .expect("tauri-driver not found: `cargo install tauri-driver --version ^2 --locked` (./dev test does)")
}

/// Where screenshots and logs go.
fn output_dir() -> PathBuf {
    let dir = std::env::var_os("STROBE_TEST_OUTPUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_TARGET_TMPDIR"))
                .parent()
                .unwrap()
                .join("test-output/app")
        });
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether the web UI is built (else the daemon serves its "not built" page).
fn ui_built() -> bool {
    match std::env::var_os("STROBE_UI_DIR") {
        Some(d) => Path::new(&d).join("index.html").is_file(),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../ui/dist/index.html")
            .is_file(),
    }
}

// ---------------------------------------------------------------- processes

/// The parent of `pid` and whether it is a zombie, from /proc.
fn stat(pid: u32) -> Option<(u32, bool)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = s.rsplit_once(')')?.1.split_whitespace();
    let state = rest.next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((ppid, state == "Z"))
}

fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(_, zombie)| !zombie)
}

/// Every live descendant of `root`, deepest first.
fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?.0)))
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found.reverse();
    found.retain(|p| alive(*p));
    found
}

/// Stops a process this test started, and everything it started: leaves
/// first (politely, then not), then the child itself, which is reaped.
fn stop_tree(child: &mut Child) {
    let tree = descendants(child.id());
    for pid in &tree {
        signal(*pid, 15);
    }
    if !wait_until(Duration::from_secs(5), || tree.iter().all(|p| !alive(*p))) {
        for pid in tree.iter().filter(|p| alive(**p)) {
            signal(*pid, 9);
        }
    }
    signal(child.id(), 15);
    if wait_until(Duration::from_secs(5), || {
        matches!(child.try_wait(), Ok(Some(_)))
    }) {
        return;
    }
    let _ = child.kill();
    let _ = child.wait();
}

// ---------------------------------------------------------------- WebDriver

/// One HTTP/1.1 request with a JSON body; returns the status and JSON
/// reply, or None when the connection closed without an answer.
fn http_json(port: u16, method: &str, path: &str, body: Option<&Value>) -> Option<(u16, Value)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to WebDriver");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let mut body = raw[split + 4..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some((status, value))
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = b.windows(2).position(|w| w == b"\r\n") {
        let n = usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + n]);
        b = &b[eol + 2 + n + 2..];
    }
    out
}

/// [`wait_until`] at a pace that does not flood the WebDriver.
fn poll(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    wait_until(timeout, || {
        let ok = cond();
        if !ok {
            std::thread::sleep(Duration::from_millis(100));
        }
        ok
    })
}

/// Standard base64 (WebDriver screenshots).
fn base64_decode(text: &str) -> Vec<u8> {
    let digit = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let clean: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for quad in clean.chunks(4) {
        let mut v = 0u32;
        for (i, c) in quad.iter().enumerate() {
            v |= (digit(*c) as u32) << (18 - 6 * i);
        }
        out.extend_from_slice(&v.to_be_bytes()[1..quad.len()]);
    }
    out
}

/// A private X server and session bus with `tauri-driver` on them.
struct Desktop {
    xvfb: Child,
    display: String,
    runtime_dir: tempfile::TempDir,
    driver: Child,
    port: u16,
    log: PathBuf,
    session: Option<String>,
}

/// A free loopback port (bound and released; good enough for a test).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Desktop {
    /// Starts Xvfb (display number chosen by the server: `-displayfd`, so
    /// it never collides with another), a D-Bus session bus that starts no
    /// services (no portals or a11y daemons escaping the test), and
    /// `tauri-driver` with `env`'s STROBE_HOME, which the app inherits.
    fn start(env: &Env, name: &str) -> Desktop {
        let driver_bin = tauri_driver();
        let mut xvfb = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1280x860x24",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb (apt install xvfb)");
        let mut line = String::new();
        BufReader::new(xvfb.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        if line.trim().parse::<u32>().is_err() {
            stop_tree(&mut xvfb);
            panic!("Xvfb did not report its display: {line:?}");
        }
        let display = format!(":{}", line.trim());

        let runtime_dir = tempfile::Builder::new()
            .prefix("strobe-app-xdg-")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(runtime_dir.path(), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        let bus_conf = runtime_dir.path().join("bus.conf");
        std::fs::write(
            &bus_conf,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
                runtime_dir.path().display()
            ),
        )
        .unwrap();

        let port = free_port();
        let native = free_port();
        let log = output_dir().join(format!("{name}-driver.log"));
        let out = std::fs::File::create(&log).unwrap();
        let driver = Command::new("dbus-run-session")
            .arg(format!("--config-file={}", bus_conf.display()))
            .arg("--")
            .arg(driver_bin)
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &native.to_string(),
            ])
            .env("DISPLAY", &display)
            .env_remove("WAYLAND_DISPLAY")
            .env("XDG_RUNTIME_DIR", runtime_dir.path())
            .env("NO_AT_BRIDGE", "1")
            .env("STROBE_HOME", env.path())
            .env("STROBE_VENV", &env.venv)
            // The app's debug lines include what its tray shows.
            .env("STROBE_LOG", "info,strobe_app=debug")
            .env_remove("STROBE_NO_TRAY")
            .env_remove("CARGO_TARGET_DIR")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| {
                stop_tree(&mut xvfb);
                panic!("dbus-run-session (apt install dbus): {e}")
            });
        let desktop = Desktop {
            xvfb,
            display,
            runtime_dir,
            driver,
            port,
            log,
            session: None,
        };
        // tauri-driver fails a session asked for before WebKitWebDriver
        // (its native port) listens: wait for both.
        let up = wait_until(Duration::from_secs(20), || {
            [port, native]
                .iter()
                .all(|p| std::net::TcpStream::connect(("127.0.0.1", *p)).is_ok())
        });
        assert!(up, "tauri-driver did not listen: {}", desktop.log_text());
        desktop
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A WebDriver command on the current session; panics on an error reply.
    /// tauri-driver now and then drops a request it could not pass on to
    /// WebKitWebDriver (a pooled connection closed under it) without any
    /// answer: such a command is sent again (all of these are idempotent).
    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let sid = self.session.as_deref().expect("a WebDriver session");
        let path = format!("/session/{sid}{path}");
        for _ in 0..5 {
            if let Some((status, v)) = http_json(self.port, method, &path, body.as_ref()) {
                assert_eq!(status, 200, "{method} {path}: {v}");
                return v["value"].clone();
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "{method} {path}: no answer from tauri-driver\n{}",
            self.log_text()
        );
    }

    /// Starts the app under WebDriver.
    fn launch(&mut self, app: &Path) {
        let caps =
            json!({"capabilities": {"alwaysMatch": {"tauri:options": {"application": app}}}});
        let (status, v) = http_json(self.port, "POST", "/session", Some(&caps))
            .unwrap_or_else(|| panic!("no answer to the new session\n{}", self.log_text()));
        assert_eq!(status, 200, "new session: {v}\n{}", self.log_text());
        self.session = Some(v["value"]["sessionId"].as_str().unwrap().to_string());
    }

    /// Waits until the window shows the daemon's web UI; returns its URL.
    fn wait_for_daemon_ui(&self) -> String {
        let mut url = String::new();
        let ok = poll(Duration::from_secs(60), || {
            url = self
                .cmd("GET", "/url", None)
                .as_str()
                .unwrap_or("")
                .to_string();
            url.starts_with("http://127.0.0.1:")
        });
        assert!(
            ok,
            "the window never left the shell page (at {url})\n{}",
            self.log_text()
        );
        url
    }

    /// Elements matching a CSS selector now.
    fn count(&self, css: &str) -> usize {
        let v = self.cmd(
            "POST",
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        );
        v.as_array().map_or(0, Vec::len)
    }

    fn script(&self, js: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": js, "args": []})),
        )
    }

    /// Waits for the session's row in the sessions view, or, with no UI
    /// built, for the daemon's "not built" page (asking the API from the
    /// page that the session is there).
    fn wait_for_session(&self, id: &str) {
        if ui_built() {
            let css = format!("[data-testid=session-row][data-session-id=\"{id}\"]");
            let ok = poll(Duration::from_secs(30), || self.count(&css) > 0);
            assert!(
                ok,
                "no row for session {id}: {}",
                self.script("return document.body.innerText")
            );
        } else {
            let text = self.script("return document.body.innerText");
            assert!(text.as_str().unwrap().contains("not built"), "{text}");
            // The page's own origin (its cookie from the URL's token) reads the API.
            let js = "const done = arguments[arguments.length - 1];\
                      fetch('/api/sessions').then(r => r.text()).then(done, e => done('error: ' + e));";
            let ok = poll(Duration::from_secs(30), || {
                let v = self.cmd(
                    "POST",
                    "/execute/async",
                    Some(json!({"script": js, "args": []})),
                );
                v.as_str().is_some_and(|t| t.contains(id))
            });
            assert!(ok, "the page's /api/sessions never listed {id}");
        }
    }

    /// A PNG of the window, written to the output dir.
    fn screenshot(&self, name: &str) -> PathBuf {
        let png = base64_decode(self.cmd("GET", "/screenshot", None).as_str().unwrap());
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let path = output_dir().join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }

    /// The app's pid (from `app.json`), checked to be the process this
    /// test's driver started.
    fn app_pid(&self, env: &Env, app: &Path) -> u32 {
        let file = env.path().join("app.json");
        let mut pid = 0;
        let ok = wait_until(Duration::from_secs(30), || {
            pid = std::fs::read_to_string(&file)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .and_then(|v| v["pid"].as_u64())
                .unwrap_or(0) as u32;
            pid != 0
        });
        assert!(ok, "no {}\n{}", file.display(), self.log_text());
        assert!(
            descendants(self.driver.id()).contains(&pid),
            "app.json names {pid}, not a process of this test"
        );
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        assert_eq!(exe, app.canonicalize().unwrap());
        pid
    }

    /// Quits the app as SIGTERM does (the same path as the tray's Quit) and
    /// waits for it to exit.
    fn quit_app(&self, pid: u32) {
        assert!(descendants(self.driver.id()).contains(&pid));
        signal(pid, 15);
        let gone = wait_until(Duration::from_secs(40), || !alive(pid));
        assert!(gone, "the app did not quit on SIGTERM\n{}", self.log_text());
    }

    /// `strobe-app` started again on this display and home.
    fn second_instance(&self, env: &Env, app: &Path) -> std::process::Output {
        let mut child = Command::new(app)
            .env("DISPLAY", &self.display)
            .env("XDG_RUNTIME_DIR", self.runtime_dir.path())
            .env("STROBE_HOME", env.path())
            .env("STROBE_VENV", &env.venv)
            .env("NO_AT_BRIDGE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let done = wait_until(Duration::from_secs(20), || {
            matches!(child.try_wait(), Ok(Some(_)))
        });
        if !done {
            stop_tree(&mut child);
            panic!("a second strobe-app (pid {pid}) did not exit");
        }
        child.wait_with_output().unwrap()
    }
}

impl Drop for Desktop {
    fn drop(&mut self) {
        if let Some(sid) = self.session.take() {
            // Closes the webview; WebKitWebDriver ends the app if it still runs.
            let port = self.port;
            let _ = std::panic::catch_unwind(move || {
                http_json(port, "DELETE", &format!("/session/{sid}"), None)
            });
        }
        stop_tree(&mut self.driver);
        stop_tree(&mut self.xvfb);
    }
}

// ---------------------------------------------------------------- scenarios

/// A headless daemon (started by `strobe mcp`) holding a finished trace_c
/// session: its client, the session and the daemon's pid.
async fn headless_daemon_with_a_session(env: &Env) -> (support::Client, String, u32) {
    let c = env.client().await;
    let (id, _) = c.launch(&fixture("trace_c"), &[]).await;
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);
    let headless = env.daemon_pid().expect("the headless daemon's pid file");
    assert!(env.is_our_daemon(headless));
    (c, id, headless)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_app_attaches_to_a_running_daemon_and_shows_its_sessions() {
    let app = app_binary();
    let env = Env::new();
    let (c, id, headless) = headless_daemon_with_a_session(&env).await;

    let mut desktop = Desktop::start(&env, "attach");
    let started = Instant::now();
    desktop.launch(&app);
    let url = desktop.wait_for_daemon_ui();
    desktop.wait_for_session(&id);
    eprintln!(
        "attached UI with the session shown after {:?}",
        started.elapsed()
    );
    let shot = desktop.screenshot("attach");
    eprintln!("screenshot: {} (page {url})", shot.display());

    let pid = desktop.app_pid(&env, &app);
    let log = desktop.log_text();
    assert!(log.contains("tray: "), "the app logs its tray mode\n{log}");
    assert!(
        log.contains(&format!("attached to daemon pid {headless}")),
        "the app attached to the headless daemon\n{log}"
    );
    // Alive after the tray was made, and the headless daemon still serves.
    std::thread::sleep(Duration::from_secs(1));
    assert!(alive(pid), "the app died after creating its tray\n{log}");
    assert_eq!(env.daemon_pid(), Some(headless));
    assert!(env.is_our_daemon(headless));

    // A second app only asks this one to show itself.
    let second = desktop.second_instance(&env, &app);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(stderr.contains("already open"), "{stderr}");
    assert!(alive(pid));

    // Quitting an attached app leaves the daemon it did not start alone.
    desktop.quit_app(pid);
    assert!(
        env.is_our_daemon(headless),
        "quitting the app stopped the headless daemon"
    );
    assert_eq!(env.daemon_pid(), Some(headless));
    assert!(!env.path().join("app.json").exists());
    drop(desktop);
    drop(c);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_daemon_the_app_is_the_daemon_agents_reach() {
    let app = app_binary();
    let env = Env::new();
    let mut desktop = Desktop::start(&env, "own");
    desktop.launch(&app);
    desktop.wait_for_daemon_ui();
    let pid = desktop.app_pid(&env, &app);
    assert!(
        wait_until(Duration::from_secs(10), || env.daemon_pid() == Some(pid)),
        "the app's pid is not in strobe.pid: {:?}",
        env.daemon_pid()
    );

    // `strobe mcp` reaches the app's daemon; nothing else is started.
    let c = env.client().await;
    let exe = fixture("trace_c");
    let (id, _) = c.launch(&exe, &[]).await;
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);
    assert_eq!(env.daemon_pid(), Some(pid));
    desktop.wait_for_session(&id);
    eprintln!("screenshot: {}", desktop.screenshot("own").display());
    if ui_built() {
        // The tray's "Recent sessions" opens `<url>#/session/<id>`.
        desktop.script(&format!("location.hash = '#/session/{id}'; return null"));
        let css = format!("[data-testid=session-header][data-session-id=\"{id}\"]");
        assert!(
            poll(Duration::from_secs(20), || desktop.count(&css) > 0),
            "the session page did not open"
        );
        eprintln!(
            "screenshot: {}",
            desktop.screenshot("own-session").display()
        );
    }
    let log = desktop.log_text();
    assert!(
        log.contains(&format!("serving {} in this process", env.path().display())),
        "{log}"
    );
    assert!(log.contains("tray: "), "{log}");
    // The tray reads the same API: the session, ended, is its one recent one.
    let tray = "tray: Strobe: 0 sessions running, 0 test runs running (recent sessions: 1)";
    assert!(
        wait_until(Duration::from_secs(15), || desktop
            .log_text()
            .contains(tray)),
        "the tray never showed the session\n{}",
        desktop.log_text()
    );

    // Quit stops the daemon gracefully: the pid file is gone, and the proxy
    // (dropped first, so it starts no new daemon) reached nothing else.
    c.service.cancel().await.unwrap();
    desktop.quit_app(pid);
    let log = desktop.log_text();
    assert!(log.contains("daemon stopped"), "{log}");
    assert_eq!(
        env.daemon_pid(),
        None,
        "the daemon left its pid file behind"
    );
    assert!(!env.path().join("strobe.sock").exists());
    assert!(!env.path().join("app.json").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn when_the_attached_daemon_goes_away_the_app_takes_over() {
    let app = app_binary();
    let env = Env::new();
    let (c, id, headless) = headless_daemon_with_a_session(&env).await;

    let mut desktop = Desktop::start(&env, "takeover");
    desktop.launch(&app);
    let first = desktop.wait_for_daemon_ui();
    let pid = desktop.app_pid(&env, &app);
    assert_eq!(env.daemon_pid(), Some(headless));

    // The headless daemon stops (its proxy first, which would restart it).
    c.service.cancel().await.unwrap();
    assert!(env.is_our_daemon(headless));
    signal(headless, 15);
    assert!(env.wait_daemon_gone(headless, Duration::from_secs(20)));
    assert!(
        wait_until(Duration::from_secs(20), || env.daemon_pid() == Some(pid)),
        "the app did not become the daemon: {:?}\n{}",
        env.daemon_pid(),
        desktop.log_text()
    );
    // The window follows to the new daemon's UI, which has the same store.
    let mut url = String::new();
    let moved = poll(Duration::from_secs(30), || {
        url = desktop
            .cmd("GET", "/url", None)
            .as_str()
            .unwrap_or("")
            .to_string();
        url.starts_with("http://127.0.0.1:") && port_of(&url) != port_of(&first)
    });
    assert!(
        moved,
        "the window stayed on {url} (was {first})\n{}",
        desktop.log_text()
    );
    desktop.wait_for_session(&id);
    eprintln!("screenshot: {}", desktop.screenshot("takeover").display());
    assert!(desktop.log_text().contains("taking over"));
    desktop.quit_app(pid);
    assert_eq!(env.daemon_pid(), None);
}

/// The port of an `http://127.0.0.1:PORT/...` URL.
fn port_of(url: &str) -> &str {
    url.trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap_or("")
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_display_the_app_is_the_headless_daemon() {
    let app = app_binary();
    let env = Env::new();
    let mut child = Command::new(&app)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("STROBE_HOME", env.path())
        .env("STROBE_VENV", &env.venv)
        .env_remove("CARGO_TARGET_DIR")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let serving = wait_until(Duration::from_secs(30), || env.daemon_pid() == Some(pid));
    if serving {
        let c = env.client().await;
        let list = c.ok("debug_session", json!({"action": "list"})).await;
        assert!(list.is_object(), "{list}");
        assert_eq!(env.daemon_pid(), Some(pid));
        c.service.cancel().await.unwrap();
    }
    signal(pid, 15);
    let status = tokio::task::spawn_blocking(move || {
        let status = child.wait().unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status, err)
    })
    .await
    .unwrap();
    let (status, stderr) = status;
    assert!(serving, "the headless app never served: {stderr}");
    assert!(status.success(), "{status}: {stderr}");
    assert!(stderr.contains("no display"), "{stderr}");
    assert!(stderr.contains("strobe mcp"), "{stderr}");
}
