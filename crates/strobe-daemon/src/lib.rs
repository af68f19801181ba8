//! The daemon and the proxy.
//!
//! - [`daemon::run`]: one per user and `$STROBE_HOME`. Holds an exclusive
//!   `flock` on `strobe.lock` for its whole life — that lock, not the pid
//!   file, decides who the daemon is, so racing starters end with exactly one
//!   and a dead daemon's socket or pid file is simply replaced. Serves MCP
//!   (rmcp) on every connection to `strobe.sock` (0600, in a 0700 dir).
//! - [`proxy::run`]: `strobe mcp`. Relays newline-delimited JSON-RPC between
//!   stdio and the socket, starting the daemon when needed; if the daemon
//!   dies it fails the calls in flight with a clear error, restarts it,
//!   replays the client's `initialize`, and carries on.
//! - [`framing`] and [`transport`]: lines of any bytes, at most 16 MiB, and
//!   a JSON-RPC error for every line that is not a valid message, so a
//!   malformed message is answered instead of dropped.

pub mod daemon;
pub mod framing;
pub mod lock;
pub mod proxy;
pub mod transport;

pub use daemon::{DaemonError, DaemonOptions, run as run_daemon, run_with as run_daemon_with};
pub use proxy::run as run_proxy;

/// Logs to stderr at the level `STROBE_LOG` names (default info), in colour
/// only on a terminal: the same for the CLI, the daemon and the desktop app.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STROBE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
