//! Test runs (`debug_test`): a framework's command started in the
//! background and parsed as it runs (`runs.rs`), failures made whole after
//! a stop (`details.rs`), the stuck detector's loop per run (`watch.rs`) and
//! its judgement (`stuck/`) over stack samples (`stacks/`: the
//! `StackSampler` extension point), and instrumented reruns as debug
//! sessions (`instrumented.rs`).
//!
//! It sits on top of `strobe-testing` (adapters: commands and parsers,
//! which run nothing) and `strobe-session` (instrumented runs are sessions);
//! the session layer knows nothing of test runs.

mod compare;
mod details;
mod instrumented;
mod runs;
pub mod stacks;
pub mod stuck;
mod watch;

pub use details::completed_text;
pub use instrumented::TestRunner;
pub use runs::{STATUS_WAIT, TestRunRequest, TestRuns};
