//! The MCP surface of Strobe.
//!
//! [`StrobeServer`] is an rmcp `ServerHandler` whose tools deserialize and
//! validate arguments ([`params`]), call the session layer, and render the
//! result as `structuredContent` plus a short text (events through the
//! query service, `strobe_query`, which the web API shares). One
//! `StrobeServer` is created per client connection; they all share one
//! `SessionManager`, so sessions outlive connections.

mod args;
mod audit;
mod channel;
mod connection;
mod instructions;
mod malformed;
pub mod params;
mod progress;
pub mod render;
mod reply;
mod scenario;
pub mod schema;
mod server;
mod test_tool;
#[cfg(test)]
mod tool_budget;
mod ui;
mod ui_action;
mod waits;

pub use server::{INSTRUCTIONS, StrobeServer};
