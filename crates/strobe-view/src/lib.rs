//! Views of a stored session for humans, built from the store alone (no
//! live session needed, so they work for retained sessions and from the CLI
//! while the daemon runs):
//!
//! - [`export`]: the session as Chrome trace-event JSON, which Perfetto UI
//!   and `chrome://tracing` open: one complete ("X") span per traced call,
//!   nested per thread, and instant events for output, crashes, logpoints,
//!   variable snapshots and the process's end.
//! - [`perfetto`]: the same as a Perfetto protobuf trace (TrackEvent): call
//!   slices with arguments and return values, instants, a track per thread
//!   and process, the agent's calls with flows to the events they caused.
//! - [`timeline`]: what the web UI's timeline draws for one time window at
//!   one zoom level: spans wide enough to see, the rest folded into counts
//!   per pixel column, so a million-event session ships kilobytes.
//!
//! Invariant: every view reads events in sequence order through
//! [`strobe_store::Store::query`] pages, so memory stays bounded by a page
//! plus the calls still open on each thread.

mod calls;
pub mod export;
mod names;
pub mod perfetto;
#[doc(hidden)]
pub mod synthetic;
pub mod timeline;

use names::Names;

/// Why a view could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// No stored session has that id.
    #[error(
        "no session '{0}' in the store; debug_session {{action: \"list\"}} (or the web UI's session list) shows the stored ones"
    )]
    NoSession(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] strobe_store::StoreError),
    /// Writing the output failed.
    #[error("writing the export: {0}")]
    Io(#[from] std::io::Error),
}
