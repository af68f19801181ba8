//! The daemon behind the window: this process's own, or one already running.
//!
//! The app tries to *be* the daemon (the same `run_daemon_with` as `strobe
//! daemon`, on a runtime of its own), so while it is open `strobe mcp` from
//! an agent reaches it over the usual socket and store. When another daemon
//! already owns the home (say a headless `strobe daemon`) the app attaches
//! to that one instead, watches it, and becomes the daemon itself when it
//! goes away. Either way the window shows the web UI at the URL the serving
//! daemon hands out (`{"strobeControl": "ui"}`).

use serde_json::json;
use std::time::{Duration, Instant};
use strobe_core::StrobeHome;
use strobe_daemon::{DaemonError, DaemonOptions};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// How often an attached app checks that the other daemon still answers.
const ATTACHED_PROBE: Duration = Duration::from_secs(1);

/// Consecutive failed probes before an attached app takes over: one miss
/// can be a daemon restarting under `strobe mcp`'s supervision.
const ATTACHED_MISSES: u32 = 2;

/// Longest pause between attempts while no daemon can be started or reached.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Which daemon the window shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The daemon runs in this process and stops when the app quits.
    Own,
    /// Another process's daemon (its pid, from the pid file, when known).
    Attached(Option<u32>),
}

impl Mode {
    /// A short word for logs and `app.json`.
    pub fn describe(&self) -> String {
        match self {
            Mode::Own => format!("own (pid {})", std::process::id()),
            Mode::Attached(Some(pid)) => format!("attached to daemon pid {pid}"),
            Mode::Attached(None) => "attached".into(),
        }
    }
}

/// What the app knows about its daemon, published to the window and tray.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostState {
    /// Becoming or finding the daemon.
    Starting,
    /// The web UI's URL (token included) and who serves it.
    Ready { url: String, mode: Mode },
    /// Neither could be done; the text says why. The host keeps trying.
    Unavailable(String),
}

/// Owns the runtime the daemon (or the watch on another daemon) runs on.
pub struct DaemonHost {
    runtime: tokio::runtime::Runtime,
    quit: watch::Sender<bool>,
    supervisor: Option<JoinHandle<()>>,
    state: watch::Receiver<HostState>,
}

impl DaemonHost {
    /// Starts becoming (or finding) the daemon for `home` in the background.
    pub fn start(home: StrobeHome) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .thread_name("strobe-daemon")
            .enable_all()
            .build()?;
        let (state_tx, state) = watch::channel(HostState::Starting);
        let (quit, quit_rx) = watch::channel(false);
        let supervisor = runtime.spawn(supervise(home, state_tx, quit_rx));
        Ok(Self {
            runtime,
            quit,
            supervisor: Some(supervisor),
            state,
        })
    }

    /// Follows the host's state.
    pub fn state(&self) -> watch::Receiver<HostState> {
        self.state.clone()
    }

    /// The runtime, for the app's other background tasks.
    pub fn handle(&self) -> tokio::runtime::Handle {
        self.runtime.handle().clone()
    }

    /// Stops an own daemon gracefully — live sessions are stopped and the
    /// store closed before this returns — or just stops watching another.
    /// Gives up after `timeout` rather than hang the app's exit.
    pub fn shutdown(mut self, timeout: Duration) {
        let _ = self.quit.send(true);
        if let Some(supervisor) = self.supervisor.take() {
            // The timer must be made inside the runtime.
            let finished = self
                .runtime
                .block_on(async { tokio::time::timeout(timeout, supervisor).await });
            if finished.is_err() {
                tracing::warn!(
                    "the daemon did not stop within {} s; exiting anyway",
                    timeout.as_secs()
                );
            }
        }
        self.runtime.shutdown_timeout(Duration::from_secs(2));
    }
}

/// How one attempt at running the daemon turned out.
enum Attempt {
    /// The pid file names this process: the daemon is ours and serving.
    Own,
    /// `run_daemon_with` returned before that.
    Ended(Result<Result<bool, DaemonError>, tokio::task::JoinError>),
    /// The app is quitting.
    Quit,
}

/// Becomes or attaches to the daemon, again whenever the attached one goes
/// away, until `quit` says so.
async fn supervise(
    home: StrobeHome,
    state: watch::Sender<HostState>,
    mut quit: watch::Receiver<bool>,
) {
    let me = std::process::id();
    let mut backoff = Backoff::default();
    loop {
        if *quit.borrow() {
            return;
        }
        let (stop, stop_rx) = oneshot::channel();
        let options = DaemonOptions {
            stop: Some(stop_rx),
            // The app is the user's daemon while it is open: it never idles
            // out, and SIGTERM/SIGINT are the app's to handle (it then stops
            // the daemon through `stop`).
            idle_shutdown: false,
            handle_signals: false,
        };
        let mut daemon = tokio::spawn(strobe_daemon::run_daemon_with(home.clone(), options));
        let attempt = tokio::select! {
            r = &mut daemon => Attempt::Ended(r),
            () = pid_file_names(&home, me) => Attempt::Own,
            () = quitting(&mut quit) => Attempt::Quit,
        };
        match attempt {
            Attempt::Quit => {
                let _ = stop.send(());
                let _ = daemon.await;
                return;
            }
            Attempt::Own => {
                tracing::info!(
                    "daemon: serving {} in this process (pid {me}); agents reach it with `strobe mcp`",
                    home.root().display()
                );
                match ui_url(&home).await {
                    Ok(url) => {
                        backoff.reset();
                        state.send_replace(HostState::Ready {
                            url,
                            mode: Mode::Own,
                        });
                    }
                    Err(e) => {
                        tracing::warn!("the daemon runs but its web UI does not: {e}");
                        state.send_replace(HostState::Unavailable(e));
                    }
                }
                tokio::select! {
                    () = quitting(&mut quit) => {
                        tracing::info!("stopping the daemon");
                        let _ = stop.send(());
                        match daemon.await {
                            Ok(Ok(_)) => tracing::info!("daemon stopped"),
                            Ok(Err(e)) => tracing::warn!("daemon stopped with an error: {e}"),
                            Err(e) => tracing::warn!("daemon task failed: {e}"),
                        }
                        return;
                    }
                    r = &mut daemon => {
                        let why = describe_end(r);
                        tracing::warn!("the in-process daemon ended on its own ({why}); restarting it");
                        state.send_replace(HostState::Unavailable(format!("the daemon ended: {why}")));
                    }
                }
            }
            Attempt::Ended(Ok(Ok(false))) => {
                if !attach(&home, &state, &mut quit, &mut backoff).await {
                    return;
                }
                continue;
            }
            Attempt::Ended(r) => {
                let why = describe_end(r);
                tracing::warn!("cannot run the daemon: {why}");
                state.send_replace(HostState::Unavailable(format!(
                    "cannot run the daemon for {}: {why}",
                    home.root().display()
                )));
            }
        }
        if !backoff.sleep(&mut quit).await {
            return;
        }
    }
}

/// Attached mode: shows the other daemon's UI and watches it. Returns when
/// it stops answering (false: the app is quitting instead).
async fn attach(
    home: &StrobeHome,
    state: &watch::Sender<HostState>,
    quit: &mut watch::Receiver<bool>,
    backoff: &mut Backoff,
) -> bool {
    let pid = read_pid(home);
    let url = match ui_url(home).await {
        Ok(url) => url,
        Err(e) => {
            // Starting up or just gone: try again (maybe as the daemon).
            tracing::debug!("the other daemon's UI is not reachable yet: {e}");
            if backoff.failing_for() > Duration::from_secs(10) {
                state.send_replace(HostState::Unavailable(format!(
                    "another daemon holds {} but does not answer: {e}",
                    home.root().display()
                )));
            }
            return backoff.sleep(quit).await;
        }
    };
    backoff.reset();
    let mode = Mode::Attached(pid);
    tracing::info!(
        "daemon: {} serving {}",
        mode.describe(),
        home.root().display()
    );
    state.send_replace(HostState::Ready { url, mode });
    let mut misses = 0;
    loop {
        tokio::select! {
            () = quitting(quit) => return false,
            () = tokio::time::sleep(ATTACHED_PROBE) => {}
        }
        // A connection closed before any line is a clean no-op for the daemon.
        let answers = tokio::net::UnixStream::connect(home.socket()).await.is_ok();
        if answers && read_pid(home) == pid {
            misses = 0;
            continue;
        }
        misses += 1;
        if misses >= ATTACHED_MISSES {
            tracing::info!("daemon: the attached daemon went away; taking over");
            state.send_replace(HostState::Starting);
            return true;
        }
    }
}

/// Asks the serving daemon for its web UI's URL (starting the endpoint).
async fn ui_url(home: &StrobeHome) -> Result<String, String> {
    let reply = strobe_daemon::proxy::control_running(home, json!({"strobeControl": "ui"}))
        .await
        .map_err(|e| e.to_string())?;
    match (reply["url"].as_str(), reply["error"].as_str()) {
        (Some(url), _) => Ok(url.to_string()),
        (None, Some(e)) => Err(format!("the daemon cannot start its web UI: {e}")),
        (None, None) => Err(format!("unexpected reply from the daemon: {reply}")),
    }
}

/// Resolves once the daemon's pid file names `pid`: `run_daemon_with`
/// writes it after taking the lock and binding the socket, so from then on
/// connections queue until the daemon accepts them.
async fn pid_file_names(home: &StrobeHome, pid: u32) {
    while read_pid(home) != Some(pid) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The pid in `$STROBE_HOME/strobe.pid`, if any.
fn read_pid(home: &StrobeHome) -> Option<u32> {
    std::fs::read_to_string(home.pid_file())
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Resolves when the app quits (or the host is dropped).
async fn quitting(quit: &mut watch::Receiver<bool>) {
    let _ = quit.wait_for(|q| *q).await;
}

fn describe_end(r: Result<Result<bool, DaemonError>, tokio::task::JoinError>) -> String {
    match r {
        Ok(Ok(true)) => "it stopped".into(),
        Ok(Ok(false)) => "another daemon serves this home".into(),
        Ok(Err(e)) => e.to_string(),
        Err(e) => format!("it panicked: {e}"),
    }
}

/// Pauses between failed attempts, growing to [`MAX_BACKOFF`].
#[derive(Default)]
struct Backoff {
    delay: Duration,
    since: Option<Instant>,
}

impl Backoff {
    fn reset(&mut self) {
        *self = Self::default();
    }

    /// How long attempts have been failing.
    fn failing_for(&self) -> Duration {
        self.since.map_or(Duration::ZERO, |s| s.elapsed())
    }

    /// Waits before the next attempt; false when the app quits meanwhile.
    async fn sleep(&mut self, quit: &mut watch::Receiver<bool>) -> bool {
        self.since.get_or_insert_with(Instant::now);
        self.delay = (self.delay * 2).clamp(Duration::from_millis(100), MAX_BACKOFF);
        tokio::select! {
            () = quitting(quit) => false,
            () = tokio::time::sleep(self.delay) => true,
        }
    }
}
