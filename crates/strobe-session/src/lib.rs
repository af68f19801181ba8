//! Sessions: one launched (later: attached) target each.
//!
//! The [`SessionManager`] owns every live session. Launching takes a warm
//! Frida bridge ([`pool`]), spawns the target suspended with the agent
//! loaded, starts output [`capture`], and resumes it. A per-session event
//! thread turns the bridge's events (agent messages, detach, bridge death)
//! into lifecycle changes and timeline events. Data flows one way: this
//! crate calls into `strobe-frida` and `strobe-store`, never the reverse,
//! and knows nothing of MCP.

pub mod capture;
pub mod diagnosis;
pub mod error;
pub mod exit_watch;
pub mod frames;
pub mod hookable;
pub mod images;
pub mod language;
mod live_settings;
mod manager;
mod pool;
pub mod procfs;
pub mod trace;
pub mod validate;

pub use error::SessionError;
pub use images::image_at;
pub use manager::breakpoints::{BreakpointInfo, BreakpointRequest, ContinueResponse, PausedThread};
pub use manager::memory::{MemoryTarget, Poll};
pub use manager::parse_patterns;
pub use manager::staged::StagedBreakpoint;
pub use manager::{
    ChannelInfo, ChannelKindInfo, ChannelSent, DisplayChoice, EventCounts, LaunchRequest,
    LaunchResponse, NodeState, SessionManager, SessionState, SessionStatus, StopResponse,
    UiActionRequest, UiActionResponse, UiChanges, UiMode, UiRequest, UiResponse, UiScreenshot,
    UiVerify, UiWindow,
};
pub use manager::{EventFrontier, StateWait, StateWaitOutcome};
pub use trace::TraceResponse;
