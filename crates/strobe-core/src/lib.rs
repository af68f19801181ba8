//! Shared vocabulary of Strobe.
//!
//! Every other crate depends on this one and it depends on none of them: it
//! holds the types that cross layer boundaries (events, error codes), the
//! layout of `$STROBE_HOME`, the settings hierarchy and the one clock every
//! event is stamped with.

pub mod caller;
pub mod clock;
pub mod error;
pub mod event;
pub mod fast_hash;
pub mod files;
pub mod home;
pub mod session_id;
pub mod settings;

pub use error::{ErrorCode, ToolError};
pub use event::{Event, EventKind};
pub use home::StrobeHome;
pub use settings::{Settings, SettingsWarning};
