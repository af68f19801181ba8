//! `strobe dap`: a Debug Adapter Protocol server for editors. Every DAP
//! session is a Strobe session: the adapter drives the daemon through the
//! same MCP tools an agent calls ([`Tools`]), so the agent sees what the
//! editor does and the other way round (`attach {sessionId}` joins a
//! session an agent started).
//!
//! `wire.rs` is the framing; `adapter.rs` the request loop,
//! configuration, resuming and stepping; `lifecycle.rs` launch, attach and
//! how a connection's program ends with it; `breakpoints.rs` the
//! editor's breakpoints and the agent's announced; `inspect.rs` a stopped
//! thread's stack, scopes, variables, evaluate and setVariable; `watch.rs`
//! the session's state polled every 50 ms while it runs into events;
//! `values.rs` turns typed values into DAP variables with lazily expanded,
//! paged children; `exceptions.rs` shows a crash as a post-mortem stop
//! with `exceptionInfo`; `memory.rs` serves `readMemory`/`writeMemory`.
//!
//! What `pause` does: Strobe has no all-stop (a breakpoint pauses only its
//! thread, the rest runs on) and never stops a thread from outside, so
//! `pause {threadId}` pauses that one thread where its current system call
//! returns into the program's own code (`debug_continue {action:
//! "pause"}`); a thread busy in user code is refused with the reason.

mod adapter;
mod breakpoints;
mod exceptions;
mod inspect;
mod lifecycle;
mod memory;
mod values;
mod watch;
pub mod wire;

pub use adapter::{AUTH_WAIT, MAX_MESSAGE_BEFORE_TOKEN, serve, serve_with_token};

use serde_json::Value;
use std::future::Future;

/// The daemon's MCP tools, as the adapter calls them.
pub trait Tools: Send {
    /// Calls `tool` with `args`: its structured result, or the error text
    /// the tool answered.
    fn call(
        &mut self,
        tool: &str,
        args: Value,
    ) -> impl Future<Output = Result<Value, String>> + Send;
}

#[cfg(test)]
mod tests;
