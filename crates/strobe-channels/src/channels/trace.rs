//! `trace`: the program's function calls. They are captured by the session
//! (`debug_trace` adds patterns) as `function_enter`/`function_exit`
//! events, so the channel has no halves of its own; scenarios assert on it.

use crate::{ChannelError, ChannelKind, ChannelSpec, OpenChannel, SessionTarget};

/// The `trace` kind.
pub struct Trace;

impl ChannelKind for Trace {
    fn kind(&self) -> &'static str {
        "trace"
    }

    fn describe(&self) -> &'static str {
        "function calls (debug_trace adds patterns): nothing to send; scenarios assert on it"
    }

    fn event_type(&self) -> &'static str {
        "function_enter"
    }

    fn always_present(&self) -> bool {
        true
    }

    fn open(&self, spec: &ChannelSpec, _: &SessionTarget) -> Result<OpenChannel, ChannelError> {
        if let Some(t) = &spec.target {
            return Err(ChannelError::BadSpec(format!("trace:{t}")));
        }
        Ok(OpenChannel::default())
    }
}
