//! The daemon process.

use crate::framing::{Frame, LineReader};
use crate::lock;
use crate::transport::CheckedTransport;
use rmcp::ServiceExt;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use strobe_core::{Settings, StrobeHome};
use strobe_mcp::StrobeServer;
use strobe_session::SessionManager;
use strobe_store::Store;
use strobe_testrun::TestRunner;
use tokio::io::AsyncWriteExt;
use tokio::net::{UnixListener, UnixStream};
use tokio::signal::unix::{SignalKind, signal};

/// Why the daemon could not run.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// Setting up the home directory, lock or socket failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The store could not be opened.
    #[error("cannot open the event store: {0}")]
    Store(#[from] strobe_store::StoreError),
    /// The session layer could not start.
    #[error("{0}")]
    Session(#[from] strobe_session::SessionError),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> DaemonError {
    let what = what.into();
    move |source| DaemonError::Io { what, source }
}

/// How often retained sessions are checked against retention and size caps.
const PURGE_PERIOD: Duration = Duration::from_secs(3600);

/// How a daemon is embedded: the `strobe daemon` process uses the
/// defaults; the desktop app, which is the user's daemon while it is open,
/// stops it itself and never lets it idle out.
pub struct DaemonOptions {
    /// Resolving (or dropping the sender) stops the daemon.
    pub stop: Option<tokio::sync::oneshot::Receiver<()>>,
    /// Exit after `daemon.idleTimeoutMs` with no clients and no live sessions.
    pub idle_shutdown: bool,
    /// Stop on SIGTERM/SIGINT (a host process with its own handling says no).
    pub handle_signals: bool,
}

impl Default for DaemonOptions {
    fn default() -> Self {
        Self {
            stop: None,
            idle_shutdown: true,
            handle_signals: true,
        }
    }
}

/// Runs the daemon until SIGTERM/SIGINT or idle shutdown. Returns
/// `Ok(false)` at once when another daemon already owns this home.
pub async fn run(home: StrobeHome) -> Result<bool, DaemonError> {
    run_with(home, DaemonOptions::default()).await
}

/// [`run`], embedded as `options` say. Returns `Ok(false)` at once when
/// another daemon already owns this home (the caller attaches to it).
pub async fn run_with(home: StrobeHome, options: DaemonOptions) -> Result<bool, DaemonError> {
    home.ensure()
        .map_err(io_err(format!("cannot create {}", home.root().display())))?;
    let Some(_lock) =
        lock::try_lock(&home.lock_file()).map_err(io_err("cannot open the lock file"))?
    else {
        tracing::info!("another daemon already serves {}", home.root().display());
        return Ok(false);
    };
    // We hold the lock: any socket or pid file here is a dead daemon's.
    let socket = home.socket();
    let _ = std::fs::remove_file(&socket);
    let listener =
        UnixListener::bind(&socket).map_err(io_err(format!("cannot bind {}", socket.display())))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
        .map_err(io_err("cannot restrict the socket to its owner"))?;
    std::fs::write(home.pid_file(), format!("{}\n", std::process::id()))
        .map_err(io_err("cannot write the pid file"))?;
    std::fs::set_permissions(home.pid_file(), std::fs::Permissions::from_mode(0o600))
        .map_err(io_err("cannot restrict the pid file"))?;

    let store = Store::open(&home.database())?;
    std::fs::set_permissions(home.database(), std::fs::Permissions::from_mode(0o600))
        .map_err(io_err("cannot restrict the database"))?;
    let mgr = SessionManager::new(home.clone(), store.clone())?;
    let (settings, _) = Settings::load(&home.settings_file(), None);
    purge(&home, &store, &settings);
    mgr.prewarm(&settings);
    let tests = Arc::new(TestRunner::new(mgr.clone()));
    // MCP connections and pages streaming a session live: while any is
    // open the daemon is in use.
    let clients = Arc::new(AtomicUsize::new(0));
    let web = Arc::new(Web {
        endpoint: tokio::sync::Mutex::new(None),
        viewers: clients.clone(),
        mgr: mgr.clone(),
        tests: tests.clone(),
        store: store.clone(),
        home: home.clone(),
    });
    if settings.ui_http
        && let Err(e) = web.url(settings.ui_port as u16).await
    {
        tracing::warn!("web UI not started: {e}");
    }
    tracing::info!("daemon {} serving {}", std::process::id(), socket.display());

    let mut sigterm = options
        .handle_signals
        .then(|| signal(SignalKind::terminate()))
        .transpose()
        .map_err(io_err("cannot watch SIGTERM"))?;
    let mut sigint = options
        .handle_signals
        .then(|| signal(SignalKind::interrupt()))
        .transpose()
        .map_err(io_err("cannot watch SIGINT"))?;
    let mut stop = options.stop;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut idle_since = Instant::now();
    let mut last_purge = Instant::now();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let server = StrobeServer::new(mgr.clone(), tests.clone(), home.clone());
                let clients = clients.clone();
                let web = web.clone();
                clients.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    serve_connection(stream, server, &web).await;
                    clients.fetch_sub(1, Ordering::SeqCst);
                });
            }
            Some(_) = recv_signal(&mut sigterm) => { tracing::info!("SIGTERM: shutting down"); break; }
            Some(_) = recv_signal(&mut sigint) => { tracing::info!("SIGINT: shutting down"); break; }
            _ = stopped(&mut stop) => { tracing::info!("stopped by its host: shutting down"); break; }
            _ = tick.tick() => {
                let busy = clients.load(Ordering::SeqCst) > 0 || mgr.running_count() > 0;
                if busy || !options.idle_shutdown {
                    idle_since = Instant::now();
                    continue;
                }
                let (settings, _) = Settings::load(&home.settings_file(), None);
                if idle_since.elapsed() >= Duration::from_millis(settings.daemon_idle_timeout_ms) {
                    tracing::info!("idle for {} ms: shutting down", settings.daemon_idle_timeout_ms);
                    break;
                }
                if last_purge.elapsed() >= PURGE_PERIOD {
                    last_purge = Instant::now();
                    purge(&home, &store, &settings);
                }
            }
        }
    }
    // Stop accepting first, so no client reaches a half-shut daemon.
    drop(listener);
    web.stop().await;
    let _ = std::fs::remove_file(&socket);
    let m = mgr.clone();
    let _ = tokio::task::spawn_blocking(move || {
        tests.stop_all();
        m.shutdown()
    })
    .await;
    let _ = store.close();
    let _ = std::fs::remove_file(home.pid_file());
    tracing::info!("daemon stopped");
    Ok(true)
}

/// The next signal, or never when signals are not handled.
async fn recv_signal(s: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match s {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}

/// Resolves when the host asks the daemon to stop; never without a host.
async fn stopped(stop: &mut Option<tokio::sync::oneshot::Receiver<()>>) {
    match stop {
        Some(rx) => {
            let _ = rx.await;
        }
        None => std::future::pending().await,
    }
}

/// A connection: MCP, unless its first line is a control request
/// (`{"strobeControl": "ui"}` from `strobe ui` or the desktop app; an
/// optional `"port"` overrides the `ui.port` setting). MCP's first message is a
/// JSON-RPC object, so the two cannot be confused; the line read is handed
/// to the MCP transport as its first message.
async fn serve_connection(stream: UnixStream, server: StrobeServer, web: &Web) {
    let (read, mut write) = stream.into_split();
    let mut reader = LineReader::new(read);
    let first = match reader.next().await {
        // EOF before anything (a liveness probe) is a clean close.
        Ok(Frame::End) | Err(_) => return,
        Ok(f) => f,
    };
    if let Frame::Line(line) = &first
        && let Ok(control) = serde_json::from_slice::<serde_json::Value>(line)
        && let Some(what) = control.get("strobeControl")
    {
        let reply = match what.as_str() {
            Some("ui") => {
                // The `ui.port` setting unless the request names a port.
                let port = control["port"]
                    .as_u64()
                    .unwrap_or_else(|| Settings::load(&web.home.settings_file(), None).0.ui_port)
                    as u16;
                match web.url(port).await {
                    Ok(url) => serde_json::json!({"url": url}),
                    Err(e) => serde_json::json!({"error": e}),
                }
            }
            _ => serde_json::json!({"error": format!("unknown control request {what}")}),
        };
        let _ = write.write_all(format!("{reply}\n").as_bytes()).await;
        return;
    }
    let transport = CheckedTransport::new(reader, Some(first), write);
    match server.serve(transport).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(e) => tracing::debug!("connection closed before initialization: {e}"),
    }
}

/// The web endpoint, started on demand and kept for the daemon's life.
struct Web {
    endpoint: tokio::sync::Mutex<Option<strobe_web::WebEndpoint>>,
    /// The daemon's client count, which live pages add to.
    viewers: Arc<AtomicUsize>,
    mgr: Arc<SessionManager>,
    tests: Arc<TestRunner>,
    store: Store,
    home: StrobeHome,
}

impl Web {
    /// The UI's URL, starting the endpoint on `port` (0: any) if it is not
    /// running. The URL is also written to `ui.json` (owner-only) for the
    /// desktop app and editors.
    async fn url(&self, port: u16) -> Result<String, String> {
        let mut endpoint = self.endpoint.lock().await;
        if endpoint.is_none() {
            let started = strobe_web::start(
                self.mgr.clone(),
                self.tests.clone(),
                self.store.clone(),
                strobe_web::WebConfig {
                    port,
                    ui_dir: strobe_web::find_ui_dir(),
                    viewers: self.viewers.clone(),
                },
            )
            .await
            .map_err(|e| e.to_string())?;
            let info = serde_json::json!({"url": started.url(), "port": started.port, "pid": std::process::id()});
            let file = self.home.root().join("ui.json");
            strobe_core::files::write_atomically(&file, info.to_string().as_bytes())
                .and_then(|()| {
                    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
                })
                .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
            *endpoint = Some(started);
        }
        Ok(endpoint.as_ref().expect("started above").url())
    }

    async fn stop(&self) {
        if self.endpoint.lock().await.take().is_some() {
            let _ = std::fs::remove_file(self.home.root().join("ui.json"));
        }
    }
}

fn purge(home: &StrobeHome, store: &Store, settings: &Settings) {
    let retention = Duration::from_secs(settings.retention_days * 86_400);
    // Bridge and private jackd logs are kept as long as retained sessions,
    // then dropped.
    if let Ok(entries) = std::fs::read_dir(home.logs_dir()) {
        for e in entries.flatten() {
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > retention));
            let name = e.file_name().to_string_lossy().into_owned();
            if old && (name.starts_with("bridge-") || name.starts_with("jackd-")) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    match store.purge(
        strobe_core::clock::unix_millis(),
        retention,
        settings.max_total_bytes,
    ) {
        Ok(r) if !r.expired.is_empty() || !r.over_size.is_empty() => {
            tracing::info!(
                "purged retained sessions: expired {:?}, over size cap {:?}",
                r.expired,
                r.over_size
            )
        }
        Ok(_) => {}
        Err(e) => tracing::warn!("purge failed: {e}"),
    }
}
