//! The scenario runner: a scenario is a flat list of steps run in order
//! against a live session — `do` sends a stimulus to a channel, `wait`
//! waits a time or until a condition over the session's events holds
//! (checked here, so the agent does not poll), `assert` checks calls,
//! output, answers and files. The first failure stops the run with the
//! step, what was expected and found, and the events around it; the
//! program stays alive for the agent to investigate.
//!
//! Windows: a check looks at what happened since the previous `do` step
//! (before the first one, and with `since: "start"`, since the session
//! started). Before a check
//! is read the session is settled (every agent ships the calls it holds,
//! the store commits), so a call made before the check is in it. A
//! positive check may take `withinMs` (default 1 s) to come true; a
//! negative one (`called: false`, `present: false`) is read once, since
//! waiting cannot prove an absence: wait first if the program needs time.
//!
//! Invariants: reads the session only through `strobe-session`'s public
//! API and `strobe-query`; every step is a `scenario_step` event.
//! Never depends on: mcp, store internals.

mod checks;
mod compare;
mod eval;
mod files;
mod run;
mod spec;
mod waits;

pub use compare::{Compare, Op};
pub use eval::Outcome;
pub use run::{Failure, REPLY_CHARS, Report, StepResult, render, run, run_document};
pub use spec::{Check, Kinds, MAX_STEPS, On, Scenario, SpecError, Step, StepKind, parse};

/// How `ui.*` steps reach the program's GUI: the MCP layer gives the runner
/// one that does what `debug_ui_action` does (the same checks, the same
/// verification), so a scenario and a tool call act alike.
pub trait UiDriver: Send + Sync {
    /// Whether `action` (`{type: "set_value", id, value}`) is well formed;
    /// nothing is done.
    fn check(&self, action: &serde_json::Value) -> Result<(), String>;
    /// Does `action` in session `session`; a line saying what was done and
    /// seen, or why it failed or was not seen to take effect.
    fn act(&self, session: &str, action: &serde_json::Value) -> Result<String, String>;
    /// The node `id` as `debug_ui` shows it (`value`, `name`, `states`…),
    /// `None` when the tree has no such node.
    fn node(&self, session: &str, id: &str) -> Result<Option<serde_json::Value>, String>;
}

/// Why a scenario could not run (a failing step is a [`Report`], not this).
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The scenario is malformed: nothing ran.
    #[error("{0}")]
    Spec(#[from] SpecError),
    /// The session refused (no such session, a channel that cannot open):
    /// its own error, so the caller answers with its code
    /// (`SESSION_NOT_FOUND` for an unknown id).
    #[error("{0}")]
    Session(#[from] strobe_session::SessionError),
    /// A check could not be evaluated (a query that failed).
    #[error("{0}")]
    Check(String),
}

/// The first `max` characters of `text`, with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let mut s: String = text.chars().take(max).collect();
    if text.chars().count() > max {
        s.push('…');
    }
    s
}
