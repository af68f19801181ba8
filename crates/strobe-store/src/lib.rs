//! The event store.
//!
//! Events are not stored one row each: a row-per-event table tops out far
//! below the rates Frida delivers (ENGINEERING.md: ~285 k rows/s with two
//! indexes). Instead the single writer thread packs each session's events
//! into *chunks* of up to [`codec::MAX_CHUNK_EVENTS`] varint-encoded records;
//! each chunk row carries a summary (sequence range, time range, kind mask,
//! per-kind counts, pid range) that lets the query engine skip or count whole
//! chunks without decoding them.
//!
//! Invariants:
//! - Exactly one thread writes ([`writer`]); everything else reads through
//!   its own connection. Appends block when the writer is behind (bounded
//!   channel): back-pressure, never a silent drop.
//! - Sequence numbers are dense per session and never reused, so an evicted
//!   range is visible as a gap and counted in `evicted`.
//! - A committed transaction survives a `kill -9` of the daemon (WAL).

mod agent_calls;
mod batch_pool;
mod calltree;
mod checkpointer;
pub mod codec;
mod content_index;
mod error;
mod eviction;
mod func_counts;
pub mod func_stats;
mod motor_plans;
pub mod query;
mod schema;
mod sessions;
mod store;
mod summary_cache;
mod test_history;
mod traced_passes;
mod writer;

pub use agent_calls::{AgentCall, AgentCallRow, MAX_ARGS_CHARS, SUMMARY_CHARS, clip};
pub use error::StoreError;
pub use func_stats::FunctionStats;
pub use motor_plans::MotorPlan;
pub use query::{Counting, EventFilter, QueryPage, QueryResult, ReturnValueFilter};
pub use sessions::{
    CaptureBlob, CommitSignal, EventCaps, FunctionRow, NewSession, SessionRow, SessionStats,
    SessionUpdate,
};
pub use store::Store;
pub use test_history::{RUNS_KEPT, TestBaseline, TestDurations};
pub use traced_passes::TracedPass;
pub use writer::PurgeReport;
