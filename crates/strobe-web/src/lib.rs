//! The daemon's loopback HTTP endpoint: the web UI's files and the JSON API
//! it reads, so a browser or an editor's webview shows what the agent sees.
//!
//! Off unless the `ui.http` setting or `strobe ui` turns it on. It binds
//! 127.0.0.1 only, and every request passes [`guard::Guard`]: the Host must
//! be the endpoint's loopback address, a browser's Origin must be its own
//! (or the desktop app's), and the per-daemon token must be presented.
//!
//! The API goes through the same layers as MCP: session status from
//! the [`SessionManager`], events through `strobe_query::query` (the very
//! filters and rendering of `debug_query`), timeline and export through
//! `strobe-view`.

pub mod guard;
mod live;
mod routes;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use strobe_session::SessionManager;
use strobe_store::Store;

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// Binding the port failed.
    #[error(
        "cannot listen on 127.0.0.1:{port}: {source} (set `ui.port` to another port, or 0 for any free one)"
    )]
    Bind {
        /// The port asked for.
        port: u16,
        /// The OS error.
        source: std::io::Error,
    },
    /// No randomness for the token.
    #[error("cannot make a token: {0}")]
    Token(std::io::Error),
}

/// A running endpoint. Dropping it stops it.
pub struct WebEndpoint {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    /// The secret every request must present.
    pub token: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl WebEndpoint {
    /// The URL to open: the UI, with the token.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/?token={}", self.port, self.token)
    }
}

impl Drop for WebEndpoint {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// What the endpoint serves.
pub struct WebConfig {
    /// Port on 127.0.0.1 (0: any free port).
    pub port: u16,
    /// The built web UI (`ui/dist`); `None` serves the API and a page
    /// saying how to build the UI.
    pub ui_dir: Option<PathBuf>,
    /// The host's count of clients, which each open live stream adds to
    /// (a daemon watched in a browser does not idle out).
    pub viewers: Arc<AtomicUsize>,
}

/// Starts the endpoint on the current tokio runtime.
pub async fn start(
    mgr: Arc<SessionManager>,
    tests: Arc<strobe_testrun::TestRunner>,
    store: Store,
    config: WebConfig,
) -> Result<WebEndpoint, WebError> {
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, config.port)))
            .await
            .map_err(|source| WebError::Bind {
                port: config.port,
                source,
            })?;
    let port = listener
        .local_addr()
        .map_err(|source| WebError::Bind {
            port: config.port,
            source,
        })?
        .port();
    let token = guard::new_token().map_err(WebError::Token)?;
    let state = Arc::new(routes::State {
        mgr,
        tests,
        store,
        guard: guard::Guard::new(port, token.clone()),
        ui_dir: config.ui_dir,
        viewers: config.viewers,
    });
    let app = routes::router(state);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
        if let Err(e) = served {
            tracing::warn!("the web endpoint stopped: {e}");
        }
    });
    tracing::info!("web UI on http://127.0.0.1:{port}/ (token required)");
    Ok(WebEndpoint {
        port,
        token,
        stop: Some(stop),
    })
}

/// Where the built web UI is: `STROBE_UI_DIR`, else `share/strobe/ui`
/// beside the executable's directory, else the source tree's `ui/dist`
/// (a development build).
pub fn find_ui_dir() -> Option<PathBuf> {
    let has_index = |p: &PathBuf| p.join("index.html").is_file();
    if let Some(dir) = std::env::var_os("STROBE_UI_DIR").map(PathBuf::from) {
        return has_index(&dir).then_some(dir);
    }
    let beside_exe = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent()?.parent().map(|p| p.join("share/strobe/ui")));
    let source_tree = Some(PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../ui/dist"
    )));
    [beside_exe, source_tree]
        .into_iter()
        .flatten()
        .find(has_index)
}
