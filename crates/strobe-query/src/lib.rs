//! The query service: what `debug_query` answers and what the web API's
//! `…/query` and `…/events/{id}` routes answer, from one implementation.
//!
//! It reads a session's events through [`strobe_session::SessionManager`]
//! (which owns the store and the capture plans that type function
//! arguments), applies `debug_query`'s filters, pages, aggregates by
//! function, and renders each page as `structuredContent` plus a short
//! text that says what the page left out and how to get it.
//!
//! Invariants: it never writes (no store appends, no session changes), and
//! it depends on no transport — neither rmcp nor axum — so MCP and the web
//! give the same answer to the same arguments.

pub mod diff;
mod exit_calls;
pub mod params;
pub mod render;
mod service;
pub mod timespec;
pub mod wait;

pub use params::QueryParams;
pub use service::{MAX_LIMIT, event, query, run_query};
