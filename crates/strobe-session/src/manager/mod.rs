//! The session manager and the per-session lifecycle.

use crate::capture::{self, Capture};
use crate::pool::BridgePool;
use crate::trace::{self, Tracer};
use crate::validate;

pub mod breakpoints;
mod crash;
pub(crate) mod hooks;
pub mod memory;
mod messages;
mod processes;
pub mod staged;
use crate::SessionError;
use hooks::HookOutcome;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use strobe_core::clock::{monotonic_ns, unix_millis};
use strobe_core::event::{EventBatch, EventHeader, EventKind, FLAG_JSON};
use strobe_core::session_id::make_session_id;
use strobe_core::{Settings, StrobeHome};
use strobe_frida::agent_protocol::{AgentMessage, DaemonMessage};
use strobe_frida::{Bridge, BridgeError, BridgeEvent, FridaPython, SpawnRequest};
use strobe_store::{
    EventFilter, NewSession, QueryPage, QueryResult, SessionStats, SessionUpdate, Store,
};
use strobe_symbols::resolvers::{self, Image, ImageKind};

/// How long `stop` waits for the target to die after asking Frida to kill it.
const STOP_WAIT: Duration = Duration::from_secs(5);
/// How long output capture may keep draining after the target ended.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);
/// Least time a launch step (agent compile, spawn, resume) is given, whatever
/// `bridge.requestTimeoutMs` says (that setting is for hang detection).
const LAUNCH_STEP_TIMEOUT: Duration = Duration::from_secs(60);
/// How often a live session's bridge is pinged to detect hangs.
const WATCHDOG_PERIOD: Duration = Duration::from_secs(5);

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
    fn as_str(self) -> &'static str {
        match self {
            SessionState::Starting => "starting",
            SessionState::Running => "running",
            SessionState::Exited => "exited",
            SessionState::Crashed => "crashed",
            SessionState::Stopped => "stopped",
            SessionState::Failed => "failed",
        }
    }

    fn parse(s: &str) -> SessionState {
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

#[derive(Debug, Default)]
struct Lifecycle {
    state: Option<SessionState>,
    exit_code: Option<i32>,
    signal: Option<String>,
    reason: Option<String>,
    crash_seen: bool,
    /// What the runtime said about the crash (see `diagnosis`), for the end reason.
    crash_summary: Option<String>,
    stopping: bool,
    ended: bool,
    ended_at: Option<i64>,
}

struct Live {
    key: i64,
    id: String,
    pid: u32,
    origin_ns: u64,
    /// The target's start time, to recognise it before signalling it.
    start_time: Option<u64>,
    binary_path: String,
    project_root: String,
    started_at: i64,
    stats: Arc<SessionStats>,
    life: Mutex<Lifecycle>,
    ended: Condvar,
    bridge: Arc<Bridge>,
    capture: Mutex<Option<Capture>>,
    /// Inodes of the pipes the session's captures read (root only): a
    /// followed child whose stdout/stderr is one of them gets pipes of its own.
    captured_pipes: Mutex<std::collections::HashSet<u64>>,
    /// Tracing state, created on the first debug_trace (or pending patterns).
    tracer: Mutex<Option<Tracer>>,
    /// Requests to the agent waiting for their answer, by request id.
    replies: Mutex<HashMap<u64, crossbeam_channel::Sender<AgentMessage>>>,
    next_request: AtomicU64,
    /// Threads whose names were looked up.
    known_threads: Mutex<std::collections::HashSet<u32>>,
    /// Images (executable and libraries) the agent reported as loaded.
    modules: Mutex<Vec<String>>,
    /// Drops and sampling reported by the agent (see [`trace::TraceStats`]).
    trace_stats: Mutex<trace::TraceStats>,
    /// Hooks the agent installed on its own (libraries loaded later), not yet
    /// recorded in the tracer.
    late_hooks: Mutex<Vec<HookOutcome>>,
    /// Capture plans by (function, plan id), read by queries to render
    /// typed values (shared with [`SessionManager::captures`]).
    decoders: Arc<std::sync::RwLock<trace::Decoders>>,
    /// What of the capture plans is not stored yet (see `hooks::save_captures`).
    unsaved: Mutex<UnsavedCaptures>,
    /// Breakpoints, logpoints and paused threads.
    debug: Mutex<breakpoints::DebugState>,
    /// Signalled when a thread pauses or the process ends.
    debug_changed: Condvar,
    /// The session's first process; `None` for that process itself.
    root: Option<std::sync::Weak<Live>>,
    /// Root only: every followed process image by pid (for a pid that
    /// exec'd, its newest image; the root's own pid after an exec too).
    children: Mutex<HashMap<u32, Arc<Live>>>,
    /// Root only: processes followed so far (each gets its own id range).
    followed: AtomicU32,
    /// Root only: the patterns, watches and options every followed process
    /// gets before it runs on.
    desired: Mutex<processes::Desired>,
    /// Root only: the settings the session was launched with.
    settings: Settings,
    /// How this image joined the session.
    origin: processes::Origin,
    /// The process this one forked from (or, for exec, its earlier image).
    parent_pid: Option<u32>,
    /// Address of the agent's patch journal (original bytes of every code
    /// patch), which a forked child's agent uses to undo what it inherited.
    journal: Mutex<Option<String>>,
    /// Frida detached from this image (it exited, or exec replaced it).
    gone: AtomicBool,
    /// The image was replaced by exec (the pid lives on in a new image).
    replaced: AtomicBool,
    /// Where this image's function ids start (see `processes`).
    id_base: u32,
    /// A pidfd on the process, to learn how it really ended (Frida reaps it
    /// and reports no wait status); `None` where pidfds are not supported,
    /// and once the end was read (a session following thousands of short
    /// children must not keep a descriptor for each).
    exit_watch: Mutex<Option<crate::exit_watch::ExitWatch>>,
    /// Root only: agent messages of the session's processes that did not
    /// fit the protocol and were rejected.
    rejected_messages: messages::RejectedMessages,
}

/// Plans registered since they were last stored, and the length of each
/// image's type table when it was last stored.
#[derive(Default)]
struct UnsavedCaptures {
    plans: Vec<(u32, Arc<trace::Decoder>)>,
    table_lens: HashMap<u32, usize>,
}

impl Live {
    /// Posts a message to this process's agent.
    fn post(&self, msg: &DaemonMessage) -> Result<(), BridgeError> {
        self.bridge.post_to(self.pid, &msg.to_json(), &[])
    }

    fn state(&self) -> SessionState {
        self.life
            .lock()
            .expect("lifecycle lock")
            .state
            .unwrap_or(SessionState::Starting)
    }
}

/// Owns every live session of the daemon.
pub struct SessionManager {
    home: StrobeHome,
    store: Store,
    pool: BridgePool,
    live: Mutex<HashMap<String, Arc<Live>>>,
    launch_lock: Mutex<()>,
    /// Patterns staged by debug_trace without a session, for the next launch.
    pending: Mutex<Vec<strobe_symbols::Pattern>>,
    /// Options (sampling, depth, watches) staged with them.
    pending_options: Mutex<trace::TraceOptions>,
    /// Breakpoints staged for the next launches (debug_breakpoint without a session).
    staged: Mutex<staged::Staged>,
    /// Capture plans of every session of this daemon's life, by session id,
    /// so typed values of ended sessions still render.
    captures: Mutex<HashMap<String, Arc<std::sync::RwLock<trace::Decoders>>>>,
    /// Itself, for work handed to other threads.
    me: std::sync::Weak<SessionManager>,
}

/// A bridge failure as the tool error the agent sees.
fn bridge_error(e: BridgeError) -> SessionError {
    match e {
        BridgeError::Unavailable(m) => SessionError::frida_unavailable(m),
        other => SessionError::attach(other.to_string()),
    }
}

fn store_err(e: strobe_store::StoreError) -> SessionError {
    SessionError::internal(format!("event store: {e}"))
}

impl SessionManager {
    /// Creates the manager. Sessions left `running` by a daemon that died are
    /// marked stopped and retained, so their data is not lost.
    pub fn new(home: StrobeHome, store: Store) -> Result<Arc<Self>, SessionError> {
        for row in store.sessions().map_err(store_err)? {
            if row.status == "running" || row.status == "starting" {
                store
                    .update_session(
                        row.key,
                        SessionUpdate {
                            status: Some("stopped".into()),
                            end_reason: Some(
                                "the daemon ended while this session was live; its data was kept"
                                    .into(),
                            ),
                            ended_at: Some(unix_millis()),
                            retained: Some(true),
                            ..Default::default()
                        },
                    )
                    .map_err(store_err)?;
            }
        }
        let pool = BridgePool::new(home.root().join("bridge"), home.logs_dir());
        Ok(Arc::new_cyclic(|me| Self {
            home,
            store,
            pool,
            live: Mutex::new(HashMap::new()),
            pending: Mutex::new(Vec::new()),
            pending_options: Mutex::new(trace::TraceOptions::default()),
            staged: Mutex::new(staged::Staged::default()),
            captures: Mutex::new(HashMap::new()),
            me: me.clone(),
            launch_lock: Mutex::new(()),
        }))
    }

    /// Starts a warm bridge in the background if Frida is installed.
    pub fn prewarm(&self, settings: &Settings) {
        let py = FridaPython::locate(settings.frida_venv.as_deref(), &self.home.default_venv());
        if let Ok(python) = py.check() {
            self.pool.refill(&python);
        }
    }

    /// Number of sessions whose target is still running.
    pub fn running_count(&self) -> usize {
        self.live
            .lock()
            .expect("live lock")
            .values()
            .filter(|l| matches!(l.state(), SessionState::Running | SessionState::Starting))
            .count()
    }

    /// Applies settings that matter to a live session (its event caps).
    pub fn apply_settings(&self, id: &str, settings: &Settings) {
        if let Some(l) = self.live.lock().expect("live lock").get(id) {
            let _ = self.store.set_event_caps(l.key, event_caps(settings));
        }
    }

    /// Launches a target under Frida.
    pub fn launch(
        self: &Arc<Self>,
        req: LaunchRequest,
        settings: &Settings,
    ) -> Result<LaunchResponse, SessionError> {
        let project_root = validate::project_root(&req.project_root)?;
        let cwd = validate::cwd(req.cwd.as_deref(), &project_root)?;
        let launch_patterns = hooks::parse_patterns(&req.trace_patterns)?;
        if req.stop_on_entry && req.attach_pid.is_some() {
            return Err(SessionError::validation(
                "stopOnEntry is for launches: an attached process is already past main; set a breakpoint with \
                 debug_breakpoint instead",
            ));
        }
        let binary = match req.attach_pid {
            Some(_) if !req.command.trim().is_empty() || !req.args.is_empty() => {
                return Err(SessionError::validation(
                    "give either 'command' (to launch a program) or 'attachPid' (to attach to a running one), not both",
                ));
            }
            Some(pid) => validate::attach_target(pid)?,
            None if req.command.trim().is_empty() => {
                return Err(SessionError::validation(
                    "give 'command' (the executable to launch, e.g. \"/abs/path/to/app\") or 'attachPid' (the pid \
                     of a running process to attach to)",
                ));
            }
            None => validate::resolve_command(&req.command, &cwd)?,
        };
        validate::args(&req.args)?;
        for (k, v) in &req.env {
            validate::env_key(k, v)?;
        }
        let python = FridaPython::locate(settings.frida_venv.as_deref(), &self.home.default_venv())
            .check()
            .map_err(SessionError::frida_unavailable)?;
        let timeout = Duration::from_millis(settings.bridge_request_timeout_ms);
        // Compiling the agent (first launch after an upgrade) and spawning are
        // legitimately slower than the hang-detection limit on a loaded machine.
        let launch_timeout = timeout.max(LAUNCH_STEP_TIMEOUT);

        let binary_name = binary
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let launch_json = json!({
            "command": binary, "args": req.args, "cwd": cwd,
            "envKeys": req.env.keys().collect::<Vec<_>>(),
        })
        .to_string();
        let (id, key, stats) = {
            // Id choice and row creation must not interleave between launches.
            let _guard = self.launch_lock.lock().expect("launch lock");
            let existing: std::collections::HashSet<String> = self
                .store
                .sessions()
                .map_err(store_err)?
                .into_iter()
                .map(|s| s.session_id)
                .collect();
            let id = make_session_id(&binary_name, chrono::Local::now(), |c| existing.contains(c));
            let (key, stats) = self
                .store
                .create_session(NewSession {
                    id: id.clone(),
                    binary_path: binary.display().to_string(),
                    project_root: project_root.display().to_string(),
                    launch_json,
                    started_at: unix_millis(),
                    caps: event_caps(settings),
                })
                .map_err(store_err)?;
            (id, key, stats)
        };

        let fail = |e: SessionError| {
            let _ = self.store.delete_session(key);
            e
        };
        let bridge = Arc::new(self.pool.take(&python).map_err(|e| fail(bridge_error(e)))?);
        let agent_js = bridge
            .ensure_agent(&self.home.agent_cache_dir(), launch_timeout)
            .map_err(|e| fail(bridge_error(e)))?;
        let output = bridge
            .take_output()
            .expect("a fresh bridge has its output pipes");
        let origin_ns = monotonic_ns();
        let (pid, output) = match req.attach_pid {
            Some(pid) => {
                bridge
                    .attach(pid, &agent_js, req.follow_children, launch_timeout)
                    .map_err(|e| {
                        bridge.terminate();
                        fail(match e {
                            BridgeError::Failed { message, .. } => SessionError::attach(format!(
                                    "Frida could not attach to pid {pid} ({}): {message}. Attaching needs \
                                     ptrace rights over the process: same user, and \
                                     /proc/sys/kernel/yama/ptrace_scope 0 (or the daemon as its parent).",
                                    binary.display()
                                ),
                            ),
                            other => bridge_error(other),
                        })
                    })?;
                // An attached process keeps its own stdout/stderr.
                (pid, None)
            }
            None => (
                self.spawn_target(&req, &binary, cwd, agent_js, &bridge, launch_timeout)
                    .map_err(fail)?,
                Some(output),
            ),
        };
        let attached = req.attach_pid.is_some();
        let _ = self.store.update_session(
            key,
            SessionUpdate {
                pid: Some(pid),
                ..Default::default()
            },
        );

        let live = Arc::new(Live {
            key,
            id: id.clone(),
            pid,
            origin_ns,
            start_time: proc_start_time(pid),
            binary_path: binary.display().to_string(),
            project_root: project_root.display().to_string(),
            started_at: unix_millis(),
            stats,
            life: Mutex::new(Lifecycle::default()),
            ended: Condvar::new(),
            bridge: bridge.clone(),
            captured_pipes: Mutex::new(
                output
                    .iter()
                    .flat_map(|o| {
                        [
                            capture::pipe_inode(&o.stdout),
                            capture::pipe_inode(&o.stderr),
                        ]
                    })
                    .flatten()
                    .collect(),
            ),
            capture: Mutex::new(output.map(|output| {
                Capture::start(
                    self.store.clone(),
                    key,
                    pid,
                    origin_ns,
                    Some(output.stdout),
                    Some(output.stderr),
                )
            })),
            tracer: Mutex::new(None),
            replies: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            known_threads: Mutex::new(std::collections::HashSet::new()),
            modules: Mutex::new(Vec::new()),
            trace_stats: Mutex::new(trace::TraceStats::default()),
            late_hooks: Mutex::new(Vec::new()),
            decoders: Arc::new(std::sync::RwLock::new(HashMap::new())),
            unsaved: Mutex::new(UnsavedCaptures::default()),
            debug: Mutex::new(breakpoints::DebugState::default()),
            debug_changed: Condvar::new(),
            root: None,
            children: Mutex::new(HashMap::new()),
            followed: AtomicU32::new(0),
            desired: Mutex::new(processes::Desired::default()),
            settings: settings.clone(),
            origin: if attached {
                processes::Origin::Attach
            } else {
                processes::Origin::Launch
            },
            parent_pid: None,
            journal: Mutex::new(None),
            gone: AtomicBool::new(false),
            replaced: AtomicBool::new(false),
            id_base: 0,
            exit_watch: Mutex::new(crate::exit_watch::ExitWatch::open(pid)),
            rejected_messages: messages::RejectedMessages::default(),
        });
        self.live
            .lock()
            .expect("live lock")
            .insert(id.clone(), live.clone());
        self.captures
            .lock()
            .expect("captures lock")
            .insert(id.clone(), live.decoders.clone());
        let events = bridge.events();
        let (mgr, l) = (self.clone(), live.clone());
        if let Err(e) = std::thread::Builder::new()
            .name(format!("strobe-session-{pid}"))
            .spawn(move || mgr.event_loop(&l, events))
        {
            return Err(self.abandon_launch(
                &live,
                SessionError::internal(format!("cannot start the session thread: {e}")),
            ));
        }

        // Pending patterns are hooked now, before the program's main runs.
        let mut pending: Vec<strobe_symbols::Pattern> =
            self.pending.lock().expect("pending lock").clone();
        pending.extend(launch_patterns);
        let mut pending_options = self.pending_options.lock().expect("pending lock").clone();
        pending_options
            .watch_add
            .extend(req.watches.iter().cloned());
        pending_options.lenient_watches = true;
        live.desired
            .lock()
            .expect("desired lock")
            .update(&pending, &[], &pending_options);
        let mut warnings = Vec::new();
        let pending_applied = if pending.is_empty() && pending_options.watch_add.is_empty() {
            // Index the binary in the background so a first debug_trace is quick.
            let (cache, bin) = (self.symbol_cache_dir(), binary.clone());
            let root = project_root.clone();
            std::thread::spawn(move || {
                let image = Image {
                    path: &bin,
                    kind: ImageKind::Program,
                    project_root: &root,
                };
                let _ = resolvers::open(&image, Some(&cache), None);
            });
            None
        } else {
            match self.apply_patterns(&live, &pending, &[], &pending_options, settings) {
                Ok(r) => {
                    warnings = r.warnings;
                    Some(pending.len() as u32)
                }
                Err(e) => {
                    return Err(self.abandon_launch(
                        &live,
                        e.map(|m| format!("could not install the pending patterns: {m}")),
                    ));
                }
            }
        };

        let entry = if req.staged_breakpoints || req.stop_on_entry {
            let e = self.set_entry_breakpoints(&id, req.stop_on_entry);
            warnings.extend(e.warnings.iter().cloned());
            e
        } else {
            staged::EntryOutcome::default()
        };
        if req.follow_children {
            self.guard_forks(&live, launch_timeout);
        }
        if !attached && let Err(e) = bridge.request("resume", json!({}), launch_timeout) {
            return Err(self.abandon_launch(
                &live,
                SessionError::attach(format!("could not resume the target: {e}")),
            ));
        }
        {
            // Under the lifecycle lock, and only if nothing ended the session
            // meanwhile: a fast exit must not be overwritten with "running".
            let mut life = live.life.lock().expect("lifecycle lock");
            if life.state.is_none() {
                life.state = Some(SessionState::Running);
                let _ = self.store.update_session(
                    key,
                    SessionUpdate {
                        status: Some("running".into()),
                        ..Default::default()
                    },
                );
            }
        }
        let (mgr, l) = (self.clone(), live.clone());
        std::thread::spawn(move || mgr.watchdog(&l, timeout));
        self.pool.refill(&python);
        let paused = if entry.entry_set {
            let p = self.wait_for_first_pause(&live, staged::ENTRY_WAIT);
            if p.is_none() {
                warnings.push(format!(
                    "stopOnEntry: no thread paused in main within {} s (it may have ended or not reached it)",
                    staged::ENTRY_WAIT.as_secs()
                ));
            }
            p
        } else {
            None
        };

        Ok(LaunchResponse {
            session_id: id.clone(),
            pid,
            pending_patterns_applied: pending_applied,
            pending_breakpoints_applied: entry.applied,
            next_steps: if let Some(p) = &paused {
                format!(
                    "Paused in {} at {}:{} (thread {}, {}) before its first line ran; its stdout/stderr are being \
                     recorded. Read locals and globals with debug_memory {{sessionId: \"{id}\", threadId: {}}}, step with \
                     debug_continue {{action: \"step-over\"}}, or run on with debug_continue.",
                    p.function.as_deref().unwrap_or("main"),
                    p.file
                        .as_deref()
                        .map_or("?", |f| f.rsplit('/').next().unwrap_or(f)),
                    p.line.map_or("?".to_string(), |l| l.to_string()),
                    p.thread_id,
                    p.breakpoint_id.as_deref().unwrap_or("breakpoint"),
                    p.thread_id
                )
            } else if attached {
                format!(
                    "Attached to pid {pid} ({}). Its stdout/stderr are NOT captured (they stay where the process \
                     writes them). Add trace patterns with debug_trace {{sessionId: \"{id}\", add: [...]}}, set \
                     breakpoints, read memory; debug_session {{action: \"stop\"}} detaches and leaves it running.",
                    binary.display()
                )
            } else {
                format!(
                    "The program is running and its stdout/stderr are being recorded. Read them first: \
                 debug_query {{sessionId: \"{id}\", eventType: \"stderr\"}} (then \"stdout\"). \
                 Check debug_session {{action: \"status\"}} for exit code or crash. Add trace patterns \
                 only if the output does not explain the problem."
                )
            },
            paused,
            warnings,
        })
    }

    /// Spawns `binary` suspended, with the agent loaded; returns its pid.
    fn spawn_target(
        &self,
        req: &LaunchRequest,
        binary: &std::path::Path,
        cwd: std::path::PathBuf,
        agent_js: std::path::PathBuf,
        bridge: &Bridge,
        timeout: Duration,
    ) -> Result<u32, SessionError> {
        let mut env: BTreeMap<String, String> = std::env::vars().collect();
        env.extend(req.env.clone());
        crash::sanitizers_abort_on_error(&mut env);
        let mut argv = vec![binary.display().to_string()];
        argv.extend(req.args.iter().cloned());
        bridge
            .spawn(
                &SpawnRequest {
                    argv,
                    env: env.into_iter().collect(),
                    cwd: Some(cwd),
                    agent_js,
                    follow_children: req.follow_children,
                },
                timeout,
            )
            .map_err(|e| {
                bridge.terminate();
                match e {
                    BridgeError::Failed { message, .. } => SessionError::attach(format!(
                        "Frida could not spawn {}: {message}",
                        binary.display()
                    )),
                    other => bridge_error(other),
                }
            })
    }

    /// A launch that failed after the target was spawned: kill it (never
    /// resumed), drop the bridge and the session, and say why.
    fn abandon_launch(&self, live: &Arc<Live>, cause: SessionError) -> SessionError {
        let reason = cause.message();
        self.fail_session(live, reason.clone());
        self.live.lock().expect("live lock").remove(&live.id);
        let _ = self.store.delete_session(live.key);
        cause.map(|_| format!("{reason}; the launch was abandoned and the process killed"))
    }

    fn event_loop(&self, live: &Arc<Live>, events: crossbeam_channel::Receiver<BridgeEvent>) {
        while let Ok(ev) = events.recv() {
            match ev {
                BridgeEvent::AgentMessage { pid, text, data } => {
                    let image = self.image(live, pid);
                    self.on_agent_message(&image, &text, &data)
                }
                BridgeEvent::Detached { pid, reason, crash } => {
                    self.on_detached(live, pid, &reason, crash)
                }
                BridgeEvent::Child {
                    pid,
                    parent_pid,
                    origin,
                    path,
                    ..
                } => {
                    // Adopting waits on the bridge and the new agent: never
                    // in the event loop.
                    if let Some(me) = self.me.upgrade() {
                        let l = live.clone();
                        std::thread::spawn(move || {
                            me.follow_child(&l, pid, parent_pid, &origin, path.as_deref())
                        });
                    }
                }
                BridgeEvent::Gone { reason } => {
                    if !live.life.lock().expect("lifecycle lock").ended {
                        self.fail_session(live, format!("the Frida bridge died: {reason}"));
                    }
                    break;
                }
            }
        }
    }

    fn now_ts(live: &Live) -> u64 {
        monotonic_ns().saturating_sub(live.origin_ns)
    }

    /// Records a structured event (crash, process exit) stamped now.
    fn append_json_event(&self, live: &Live, kind: EventKind, pid: u32, tid: u32, doc: &Value) {
        self.append_json_event_at(live, kind, Self::now_ts(live), pid, tid, doc);
    }

    /// Records a structured event at session time `ts_ns`.
    fn append_json_event_at(
        &self,
        live: &Live,
        kind: EventKind,
        ts_ns: u64,
        pid: u32,
        tid: u32,
        doc: &Value,
    ) {
        let mut batch = EventBatch::default();
        batch.push(
            EventHeader {
                ts_ns,
                kind: kind as u8,
                flags: FLAG_JSON,
                pid,
                tid,
                ..Default::default()
            },
            doc.to_string().as_bytes(),
        );
        let _ = self.store.append(live.key, batch);
    }

    /// The target is gone: drain its output, then record how it ended.
    fn finalize(&self, live: &Arc<Live>, frida_reason: &str, crash: Option<Value>) {
        // Followed children still running hold the output pipes open: their
        // output keeps being recorded until the last of them ends.
        if self.running_children(live).is_empty()
            && let Some(c) = live.capture.lock().expect("capture lock").take()
        {
            c.finish(OUTPUT_GRACE);
        }
        self.postmortem_crash(live);
        let ended = self.how_it_ended(live);
        let mut life = live.life.lock().expect("lifecycle lock");
        if life.ended {
            return;
        }
        let killed = ended_by_signal(&mut life, ended);
        let (state, reason) = if life.crash_seen {
            (SessionState::Crashed, life.crash_summary.clone())
        } else if let Some(code) = life.exit_code {
            (
                SessionState::Exited,
                if life.stopping {
                    Some(format!("exited with {code} while being stopped"))
                } else {
                    None
                },
            )
        } else if life.stopping && live.origin == processes::Origin::Attach {
            (
                SessionState::Stopped,
                Some(
                    "detached by debug_session stop; the process keeps running, its hooks and breakpoints removed"
                        .to_string(),
                ),
            )
        } else if life.stopping {
            (
                SessionState::Stopped,
                Some("killed by debug_session stop".to_string()),
            )
        } else if let Some(sig) = killed {
            (
                SessionState::Exited,
                Some(format!(
                    "killed by {} (signal {sig}), sent from outside Strobe",
                    crate::exit_watch::signal_name(sig)
                )),
            )
        } else {
            (
                SessionState::Exited,
                Some(format!(
                    "the process ended without going through libc's _exit ({frida_reason}): either a raw \
                     exit_group system call (sanitizers such as ASan exit this way, usually with code 1; \
                     check stderr) or a signal from outside such as SIGKILL; the exit code is unknown{}",
                    crash
                        .as_ref()
                        .map(|c| format!("; Frida crash report: {c}"))
                        .unwrap_or_default()
                )),
            )
        };
        life.state = Some(state);
        life.reason = reason.clone();
        life.ended = true;
        life.ended_at = Some(unix_millis());
        let info = json!({
            "state": state.as_str(), "exitCode": life.exit_code, "signal": life.signal, "reason": reason,
        });
        self.append_json_event(live, EventKind::ProcessExit, live.pid, 0, &info);
        let _ = self.store.update_session(
            live.key,
            SessionUpdate {
                status: Some(state.as_str().into()),
                ended_at: life.ended_at,
                end_reason: reason,
                ..Default::default()
            },
        );
        let _ = self.store.flush();
        drop(life);
        live.ended.notify_all();
        live.debug_changed.notify_all();
    }

    /// How `live`'s process ended, read from the kernel when neither the
    /// agent (`_exit`, a crash) nor a stop said it: a signal from outside or
    /// a raw `exit_group`. Waits briefly, since Frida may not have reaped it.
    fn how_it_ended(&self, live: &Live) -> Option<crate::exit_watch::Ended> {
        // Asked once, at the end: the descriptor goes whatever the answer.
        let watch = live.exit_watch.lock().expect("exit watch lock").take();
        let known = {
            let life = live.life.lock().expect("lifecycle lock");
            life.ended || life.stopping || life.exit_code.is_some() || life.signal.is_some()
        };
        if known {
            return None;
        }
        watch?.wait_ended(Duration::from_millis(250))
    }

    fn fail_session(&self, live: &Arc<Live>, reason: String) {
        // Claim the end first: the first reported cause (a hung bridge, say)
        // is the one kept, not the consequences of cleaning it up.
        {
            let mut life = live.life.lock().expect("lifecycle lock");
            if life.ended {
                return;
            }
            life.state = Some(SessionState::Failed);
            life.reason = Some(reason.clone());
            life.ended = true;
            life.ended_at = Some(unix_millis());
            let _ = self.store.update_session(
                live.key,
                SessionUpdate {
                    status: Some("failed".into()),
                    ended_at: life.ended_at,
                    end_reason: Some(reason.clone()),
                    ..Default::default()
                },
            );
        }
        tracing::warn!("session {} failed: {reason}", live.id);
        // The bridge is dead or hung: the target it launched must not run on
        // unobserved. Only signal it while it is provably the same process
        // (same pid and start time), never a recycled pid.
        // An attached process was not started here: it is only detached from.
        if live.origin == processes::Origin::Launch
            && live.start_time.is_some()
            && proc_start_time(live.pid) == live.start_time
        {
            // SAFETY: plain kill(2) of the process Strobe launched.
            unsafe { libc::kill(live.pid as i32, libc::SIGKILL) };
        }
        live.bridge.terminate();
        if let Some(c) = live.capture.lock().expect("capture lock").take() {
            c.finish(OUTPUT_GRACE);
        }
        let _ = self.store.flush();
        live.ended.notify_all();
        live.debug_changed.notify_all();
    }

    fn watchdog(&self, live: &Arc<Live>, timeout: Duration) {
        loop {
            {
                let life = live.life.lock().expect("lifecycle lock");
                let (life, _) = live
                    .ended
                    .wait_timeout(life, WATCHDOG_PERIOD)
                    .expect("lifecycle lock");
                if life.ended {
                    return;
                }
            }
            match live.bridge.request("ping", json!({}), timeout) {
                Ok(_) => {}
                Err(BridgeError::Timeout { .. }) => {
                    self.fail_session(
                        live,
                        format!(
                            "the Frida bridge stopped answering (no reply to a ping within {} ms)",
                            timeout.as_millis()
                        ),
                    );
                    return;
                }
                // A gone bridge is reported through the event loop.
                Err(_) => return,
            }
        }
    }

    fn live(&self, id: &str) -> Option<Arc<Live>> {
        self.live.lock().expect("live lock").get(id).cloned()
    }

    fn status_of_live(&self, l: &Live) -> SessionStatus {
        let dbg = {
            let st = l.debug.lock().expect("debug lock");
            st.summary()
        };
        let processes = self.processes(l);
        let life = l.life.lock().expect("lifecycle lock");
        let row = self.store.session(&l.id).ok().flatten();
        let state = life.state.unwrap_or(SessionState::Starting);
        let stopped = (state == SessionState::Running && crate::procfs::all_threads_stopped(l.pid)).then(|| {
            format!(
                "stopped by a signal (SIGSTOP, SIGTSTP, …) or a debugger: it runs nothing, and tracing, \
                 breakpoints and stepping wait, until `kill -CONT {}`",
                l.pid
            )
        });
        SessionStatus {
            session_id: l.id.clone(),
            pid: Some(l.pid),
            state,
            stopped,
            exit_code: life.exit_code,
            signal: life.signal.clone(),
            reason: life.reason.clone(),
            binary_path: l.binary_path.clone(),
            project_root: l.project_root.clone(),
            started_at: l.started_at,
            ended_at: life.ended_at,
            events: EventCounts {
                stored: SessionStats::get(&l.stats.stored),
                evicted: SessionStats::get(&l.stats.evicted),
                evicted_output: SessionStats::get(&l.stats.evicted_output),
                dropped: SessionStats::get(&l.stats.dropped),
            },
            rejected_agent_messages: l.rejected_messages.count(),
            retained: false,
            live: true,
            pids: row.map(|r| r.pids).unwrap_or_else(|| vec![l.pid]),
            trace: Self::trace_summary(l),
            breakpoints: dbg.0,
            paused_threads: dbg.1,
            processes,
        }
    }

    /// The tracer's state, unless it is busy with a debug_trace call right now.
    fn trace_summary(l: &Live) -> Option<TraceSummary> {
        let guard = l.tracer.try_lock().ok()?;
        let t = guard.as_ref()?;
        let stats = l.trace_stats.lock().expect("stats lock");
        Some(TraceSummary {
            active_patterns: t.patterns(),
            hooked_functions: t.hooked_count(),
            sampled_functions: t.sampled(&stats),
            dropped_events: t.drops(&stats),
        })
    }

    fn status_of_row(row: strobe_store::SessionRow) -> SessionStatus {
        SessionStatus {
            session_id: row.session_id,
            pid: row.pid,
            state: SessionState::parse(&row.status),
            stopped: None,
            exit_code: row.exit_code,
            signal: row.exit_signal,
            reason: row.end_reason,
            binary_path: row.binary_path,
            project_root: row.project_root,
            started_at: row.started_at,
            ended_at: row.ended_at,
            events: EventCounts {
                stored: row.event_count,
                evicted: row.evicted,
                evicted_output: row.evicted_output,
                dropped: row.dropped,
            },
            rejected_agent_messages: 0,
            retained: row.retained,
            live: false,
            pids: row.pids,
            trace: None,
            breakpoints: Vec::new(),
            paused_threads: Vec::new(),
            processes: Vec::new(),
        }
    }

    /// Status of a live or retained session.
    pub fn status(&self, id: &str) -> Result<SessionStatus, SessionError> {
        if let Some(l) = self.live(id) {
            let _ = self.store.flush();
            return Ok(self.status_of_live(&l));
        }
        match self.store.session(id).map_err(store_err)? {
            Some(row) => Ok(Self::status_of_row(row)),
            None => Err(SessionError::session_not_found(id)),
        }
    }

    /// Every live and retained session, oldest first.
    pub fn list(&self) -> Result<Vec<SessionStatus>, SessionError> {
        let _ = self.store.flush();
        let rows = self.store.sessions().map_err(store_err)?;
        Ok(rows
            .into_iter()
            .map(|row| match self.live(&row.session_id) {
                Some(l) => self.status_of_live(&l),
                None => Self::status_of_row(row),
            })
            .collect())
    }

    /// Stops a session: kills the target Strobe launched, then keeps the data
    /// (`retain`) or deletes it.
    pub fn stop(&self, id: &str, retain: bool) -> Result<StopResponse, SessionError> {
        let Some(live) = self.live(id) else {
            let row = self
                .store
                .session(id)
                .map_err(store_err)?
                .ok_or_else(|| SessionError::session_not_found(id))?;
            let collected = row.event_count + row.evicted;
            let state = SessionState::parse(&row.status);
            if !retain {
                self.store.delete_session(row.key).map_err(store_err)?;
            }
            return Ok(StopResponse {
                success: true,
                events_collected: collected,
                retained: retain,
                state,
            });
        };
        let already_ended = {
            let mut life = live.life.lock().expect("lifecycle lock");
            life.stopping = true;
            life.ended
        };
        if !already_ended {
            if let Err(e) = live
                .bridge
                .request("kill", json!({}), Duration::from_secs(3))
            {
                self.fail_session(
                    &live,
                    format!("stopped, but the bridge could not kill the target cleanly: {e}"),
                );
            }
            let life = live.life.lock().expect("lifecycle lock");
            let (life, _) = live
                .ended
                .wait_timeout_while(life, STOP_WAIT, |l| !l.ended)
                .expect("lifecycle lock");
            let ended = life.ended;
            drop(life);
            if !ended {
                self.fail_session(
                    &live,
                    "the target did not end within 5 s of being killed".into(),
                );
            }
        }
        live.bridge.terminate();
        if let Some(c) = live.capture.lock().expect("capture lock").take() {
            c.finish(OUTPUT_GRACE);
        }
        self.store.flush().map_err(store_err)?;
        let collected = SessionStats::get(&live.stats.received);
        let state = live.state();
        self.live.lock().expect("live lock").remove(id);
        if retain {
            self.store
                .update_session(
                    live.key,
                    SessionUpdate {
                        retained: Some(true),
                        ..Default::default()
                    },
                )
                .map_err(store_err)?;
            self.store.flush().map_err(store_err)?;
        } else {
            self.store.delete_session(live.key).map_err(store_err)?;
        }
        Ok(StopResponse {
            success: true,
            events_collected: collected,
            retained: retain,
            state,
        })
    }

    /// Deletes a retained session.
    pub fn delete(&self, id: &str) -> Result<(), SessionError> {
        if self.live(id).is_some() {
            return Err(SessionError::validation(format!(
                "session '{id}' is live; stop it first with debug_session {{action: \"stop\", sessionId: \"{id}\"}} (without retain it is deleted then)"
            )));
        }
        let row = self
            .store
            .session(id)
            .map_err(store_err)?
            .ok_or_else(|| SessionError::session_not_found(id))?;
        self.captures.lock().expect("captures lock").remove(id);
        self.store.delete_session(row.key).map_err(store_err)
    }

    /// The capture plans of a session (typed values of its events): those
    /// in memory, else those stored with it (a session an earlier daemon
    /// recorded), loaded once.
    pub fn captures(&self, id: &str) -> Option<Arc<std::sync::RwLock<trace::Decoders>>> {
        if let Some(c) = self.captures.lock().expect("captures lock").get(id) {
            return Some(c.clone());
        }
        let key = self.store.session(id).ok()??.key;
        let blobs = match self.store.captures(key) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!("reading the capture plans of {id}: {e}");
                return None;
            }
        };
        let decoders = trace::decoders_from_blobs(&blobs);
        if decoders.is_empty() {
            return None;
        }
        let shared = Arc::new(std::sync::RwLock::new(decoders));
        self.captures
            .lock()
            .expect("captures lock")
            .insert(id.to_string(), shared.clone());
        Some(shared)
    }

    fn key_of(&self, id: &str) -> Result<i64, SessionError> {
        match self.live(id) {
            Some(l) => Ok(l.key),
            None => Ok(self
                .store
                .session(id)
                .map_err(store_err)?
                .ok_or_else(|| SessionError::session_not_found(id))?
                .key),
        }
    }

    /// Runs a query over everything the session recorded so far.
    pub fn query(
        &self,
        id: &str,
        filter: &EventFilter,
        page: QueryPage,
    ) -> Result<QueryResult, SessionError> {
        let key = self.key_of(id)?;
        self.store.flush().map_err(store_err)?;
        self.store.query(key, filter, page).map_err(store_err)
    }

    /// Names, files and lines of a session's functions by id (for rendering).
    pub fn function_rows(
        &self,
        id: &str,
        ids: &[u32],
    ) -> Result<Vec<strobe_store::FunctionRow>, SessionError> {
        let key = self.key_of(id)?;
        self.store.functions(key, ids).map_err(store_err)
    }

    /// Names of a session's threads by id (for rendering).
    pub fn thread_names(&self, id: &str, tids: &[u32]) -> Result<Vec<(u32, String)>, SessionError> {
        let key = self.key_of(id)?;
        self.store.thread_names(key, tids).map_err(store_err)
    }

    /// Function ids of a session matching `pred(name, raw name, file)`.
    pub fn function_ids(
        &self,
        id: &str,
        pred: impl Fn(&str, Option<&str>, Option<&str>) -> bool,
    ) -> Result<std::collections::HashSet<u32>, SessionError> {
        let key = self.key_of(id)?;
        self.store.function_ids(key, pred).map_err(store_err)
    }

    /// Thread ids of a session whose name matches `pred`.
    pub fn thread_ids(
        &self,
        id: &str,
        pred: impl Fn(&str) -> bool,
    ) -> Result<std::collections::HashSet<u32>, SessionError> {
        let key = self.key_of(id)?;
        self.store.thread_ids(key, pred).map_err(store_err)
    }

    /// Per-function statistics of a session (aggregate queries).
    pub fn aggregate_functions(
        &self,
        id: &str,
        filter: &EventFilter,
    ) -> Result<Vec<strobe_store::FunctionStats>, SessionError> {
        let key = self.key_of(id)?;
        self.store.flush().map_err(store_err)?;
        self.store
            .aggregate_functions(key, filter)
            .map_err(store_err)
    }

    /// Timestamp of the newest stored event of a session (0 if none); the
    /// reference point of relative times such as `"-5s"`.
    pub fn latest_ts(&self, id: &str) -> Result<u64, SessionError> {
        let key = self.key_of(id)?;
        self.store.flush().map_err(store_err)?;
        self.store.latest_ts(key).map_err(store_err)
    }

    /// Stops every live session, keeping their data (daemon shutdown).
    pub fn shutdown(&self) {
        let ids: Vec<String> = self
            .live
            .lock()
            .expect("live lock")
            .keys()
            .cloned()
            .collect();
        for id in ids {
            if let Err(e) = self.stop(&id, true) {
                tracing::warn!("stopping {id} at shutdown: {e}");
            }
        }
        self.pool.drain();
        let _ = self.store.flush();
    }

    /// The daemon's home (settings, logs).
    pub fn home(&self) -> &StrobeHome {
        &self.home
    }

    /// The event store every session writes to (for readers beside MCP:
    /// the web views and the agent-call audit).
    pub fn store(&self) -> &Store {
        &self.store
    }
}

/// Start time of `pid` (clock ticks since boot, /proc/PID/stat field 22):
/// with the pid, it identifies a process uniquely.
fn proc_start_time(pid: u32) -> Option<u64> {
    crate::procfs::Stat::of(pid)?.start_time()
}

/// The exit code an agent's `exit` message carries, if it carries a valid one.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The store's eviction budgets from the settings in force.
fn event_caps(settings: &Settings) -> strobe_store::EventCaps {
    strobe_store::EventCaps {
        trace: settings.max_events_per_session,
        output: settings.max_output_events_per_session,
    }
}

/// Records in `life` an end the kernel reported ([`SessionManager::how_it_ended`]):
/// an exit code, or the signal that killed the process, which it returns.
fn ended_by_signal(life: &mut Lifecycle, ended: Option<crate::exit_watch::Ended>) -> Option<i32> {
    match ended? {
        crate::exit_watch::Ended::Code(code) => {
            life.exit_code = Some(code);
            None
        }
        crate::exit_watch::Ended::Signal(sig) => {
            life.signal = Some(crate::exit_watch::signal_name(sig));
            Some(sig)
        }
    }
}
