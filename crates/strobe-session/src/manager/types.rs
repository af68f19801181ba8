//! What the session manager's operations take and answer: launch requests
//! and responses, session states and statuses, event counts, stop answers.

use super::*;

/// `debug_launch` arguments after deserialization.
#[derive(Debug, Clone, Default)]
pub struct LaunchRequest {
    /// Executable (absolute, relative to `cwd`, or a name on PATH).
    pub command: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Working directory (absolute; default: `projectRoot`).
    pub cwd: Option<String>,
    /// Project root (absolute).
    pub project_root: String,
    /// Extra environment variables (on top of the daemon's environment).
    pub env: BTreeMap<String, String>,
    /// Follow forks and execs (the MCP tool defaults to true): children are
    /// instrumented with the session's patterns and watches before they run on.
    pub follow_children: bool,
    /// Attach to this running process instead of launching `command`.
    pub attach_pid: Option<u32>,
    /// Trace patterns hooked before the program runs (besides those staged
    /// with debug_trace without a session).
    pub trace_patterns: Vec<String>,
    /// Watches installed with them.
    pub watches: Vec<trace::WatchRequest>,
    /// Set the breakpoints staged with debug_breakpoint without a session
    /// (debug_launch does; instrumented test runs do not).
    pub staged_breakpoints: bool,
    /// Pause the main thread in `main` before its first line, and answer
    /// once it is paused there.
    pub stop_on_entry: bool,
    /// The display the program gets; `None`: the daemon's, or a virtual
    /// one for a GUI program when the daemon has none.
    pub display: Option<super::DisplayChoice>,
    /// Variables of the daemon's environment the program must not inherit
    /// (set by the launch itself: a virtual display removes `GTK_A11Y`).
    pub env_unset: Vec<String>,
    /// Give the program a pipe for stdin (the `stdio` channel writes to
    /// it); otherwise its stdin reads EOF at once.
    pub stdin_pipe: bool,
    /// Channels opened with the session (`"net:8080"`, `"file:*.ini"`),
    /// besides `stdio` and `trace`, which every session has.
    pub channels: Vec<String>,
    /// Start a private JACK server (dummy driver) for the program: its
    /// `JACK_DEFAULT_SERVER`, stopped with the session.
    pub jack_auto: bool,
}

/// `debug_launch` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LaunchResponse {
    /// The new session's id.
    pub session_id: String,
    /// The target's pid.
    pub pid: u32,
    /// Pending trace patterns installed before the target ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_patterns_applied: Option<u32>,
    /// Staged breakpoints and logpoints set before the target ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_breakpoints_applied: Option<u32>,
    /// With `stopOnEntry`: the thread paused in `main`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<breakpoints::PausedThread>,
    /// What to do next.
    pub next_steps: String,
    /// Problems worth knowing (e.g. pending patterns that matched nothing).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The private display the program runs on (`:12`), when it got one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virtual_display: Option<String>,
    /// The private JACK server the program runs on (`jack: "auto"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jack_server: Option<String>,
}

/// Lifecycle state of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionState {
    /// Being launched.
    Starting,
    /// The target is running.
    Running,
    /// The target exited (exit code known, or the reason says why not).
    Exited,
    /// The target died from a crash signal.
    Crashed,
    /// Stopped by `debug_session stop` (or daemon shutdown).
    Stopped,
    /// Instrumentation failed (bridge died or hung); the reason says how.
    Failed,
}

impl SessionState {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            SessionState::Starting => "starting",
            SessionState::Running => "running",
            SessionState::Exited => "exited",
            SessionState::Crashed => "crashed",
            SessionState::Stopped => "stopped",
            SessionState::Failed => "failed",
        }
    }

    pub(super) fn parse(s: &str) -> SessionState {
        match s {
            "running" => SessionState::Running,
            "exited" => SessionState::Exited,
            "crashed" => SessionState::Crashed,
            "failed" => SessionState::Failed,
            "starting" => SessionState::Starting,
            _ => SessionState::Stopped,
        }
    }
}

/// Event counters of a session.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EventCounts {
    /// Events currently stored (queryable).
    pub stored: u64,
    /// Events evicted, oldest first: function calls by `events.maxPerSession`,
    /// and output, crashes and exits by `events.maxOutputPerSession`.
    pub evicted: u64,
    /// Of `evicted`, the output, crash, exit, snapshot and logpoint events.
    pub evicted_output: u64,
    /// Events lost before reaching the store.
    pub dropped: u64,
}

/// What `debug_session status` and `list` report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatus {
    /// Session id.
    pub session_id: String,
    /// Target pid.
    pub pid: Option<u32>,
    /// Lifecycle state.
    pub state: SessionState,
    /// Set while a running process is stopped by a signal (SIGSTOP, SIGTSTP,
    /// …) or a debugger: what that means and how to continue it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Exit code, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Terminating signal, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// Why it ended as it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Executable.
    pub binary_path: String,
    /// Project root.
    pub project_root: String,
    /// Wall-clock start (ms since the epoch).
    pub started_at: i64,
    /// Wall-clock end (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<i64>,
    /// Event counters.
    pub events: EventCounts,
    /// Messages from the session's agents that did not fit the agent
    /// protocol and were rejected (each is logged with the session id);
    /// counted while the session is live.
    #[serde(skip_serializing_if = "is_zero")]
    pub rejected_agent_messages: u64,
    /// Kept after stop.
    pub retained: bool,
    /// Owned by this daemon run (can still be stopped/traced).
    pub live: bool,
    /// Every pid that produced events.
    pub pids: Vec<u32>,
    /// Tracing state of a live session (absent when nothing was ever traced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSummary>,
    /// Breakpoints and logpoints of a live session.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub breakpoints: Vec<breakpoints::BreakpointInfo>,
    /// Threads paused at a breakpoint or after a step.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paused_threads: Vec<breakpoints::PausedThread>,
    /// Every process of a live session that forked or exec'd (the first is
    /// the launched one); absent while only that one ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<processes::ProcessInfo>,
    /// A live session's threads, Frida's own left out (at most 64).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<threads::ThreadInfo>,
    /// Threads not listed in `threads`.
    #[serde(skip_serializing_if = "is_zero_usize")]
    pub threads_omitted: usize,
    /// Set when some listed threads may be Frida's, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads_note: Option<String>,
}

fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}

/// Tracing state shown by `debug_session status`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceSummary {
    /// Patterns now active.
    pub active_patterns: Vec<String>,
    /// Functions hooked now.
    pub hooked_functions: usize,
    /// Hot functions recorded by sampling.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sampled_functions: Vec<trace::SampledFunction>,
    /// Functions that lost events.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped_events: Vec<trace::FunctionDrops>,
    /// Libraries whose load went on before their hooks came
    /// (`trace.libraryWaitMs`): calls made before they went in are missing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub late_libraries: Vec<trace::LateLibrary>,
    /// How the records reach the daemon: "shared memory" (the daemon
    /// drains the ring) or "messages (why)"; absent until the ring exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<String>,
    /// Why every traced call takes the hook's slow path (1.5 to 2 times the
    /// cost per call); absent while the machine-code fast path is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_hook: Option<String>,
}

/// `debug_session stop` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StopResponse {
    /// True when the session is stopped (and deleted unless retained).
    pub success: bool,
    /// Events the session collected in all.
    pub events_collected: u64,
    /// Whether the data was kept.
    pub retained: bool,
    /// Final state.
    pub state: SessionState,
}
