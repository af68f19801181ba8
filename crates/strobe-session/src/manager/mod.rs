//! The session manager and the per-session lifecycle.

use crate::capture::{self, Capture};
use crate::pool::BridgePool;
use crate::trace::{self, Tracer};
use crate::validate;

mod agent_requests;
pub mod breakpoints;
mod cfi;
mod channels;
mod crash;
mod display;
mod fork_gate;
pub(crate) mod hooks;
mod javascript_hooks;
mod launch;
mod libraries;
mod lifecycle;
pub mod memory;
mod messages;
mod processes;
mod python_hooks;
mod python_memory;
mod ring_drain;
mod scenario_support;
mod stack_overflow;
pub mod staged;
mod status;
pub mod threads;
mod trace_args;
mod types;
mod ui;
mod ui_action;
mod ui_motor;
mod ui_readout;
mod ui_tree;
mod ui_verify;
mod waits;

use crate::SessionError;
pub use channels::{ChannelInfo, ChannelKindInfo, ChannelSent};
pub use display::DisplayChoice;
use hooks::HookOutcome;
use lifecycle::{ended_by_signal, proc_start_time};
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
pub use trace_args::parse_patterns;
use trace_args::watch_target;
pub use types::*;
pub use ui::{UiChanges, UiMode, UiRequest, UiResponse, UiScreenshot, UiWindow};
pub use ui_action::{NodeState, UiActionRequest, UiActionResponse, UiVerify};
pub use waits::{EventFrontier, StateWait, StateWaitOutcome};

/// How long `stop` waits for the target to die after asking Frida to kill it.
const STOP_WAIT: Duration = Duration::from_secs(5);
/// How long output capture may keep draining after the target ended.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);
/// Least time a launch step (agent compile, spawn, resume) is given, whatever
/// `bridge.requestTimeoutMs` says (that setting is for hang detection).
const LAUNCH_STEP_TIMEOUT: Duration = Duration::from_secs(60);
/// How often a live session's bridge is pinged to detect hangs.
const WATCHDOG_PERIOD: Duration = Duration::from_secs(5);

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
    /// A Python exception nothing caught (thread, the agent's payload):
    /// the crash, if the process then exits unsuccessfully.
    python_uncaught: Option<(u32, Vec<u8>)>,
}

struct Live {
    key: i64,
    id: String,
    pid: u32,
    origin_ns: u64,
    /// The target's start time, to recognise it before signalling it.
    start_time: Option<u64>,
    binary_path: String,
    /// The program's arguments (after crate::language rewrote them: a
    /// Python script's path comes first) and the environment the launch
    /// added: source-level resolvers find the program's code with them.
    program_args: Vec<String>,
    program_env: Vec<(String, String)>,
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
    /// Holds requests to the agent while the process forks (`fork_gate`).
    fork_gate: fork_gate::ForkGate,
    next_request: AtomicU64,
    /// Threads whose names were looked up.
    known_threads: Mutex<std::collections::HashSet<u32>>,
    /// Which of its threads are Frida's (see `threads`).
    thread_owners: Mutex<threads::ThreadOwners>,
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
    /// Set up and running on its own: the launched image from the start
    /// (its set-up is inside the launch), a followed one once resumed.
    /// Until then nothing but its set-up talks to its agent.
    set_up: AtomicBool,
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
    /// A Node.js program's probed sources (the session's: every process
    /// shares them); `None` for any other program.
    probed: Option<Arc<Mutex<strobe_symbols::resolvers::javascript::probes::ProbedProgram>>>,
    /// Root only: the session's display (a virtual one it owns, stopped
    /// with it) and what debug_ui remembers between calls.
    ui: Mutex<ui::UiState>,
    /// Root only: the session's I/O channels and the program's stdin.
    channels: Mutex<channels::Channels>,
    /// The thread draining this process's shared record ring, once the
    /// agent offered it (`ring_drain`).
    ring: Mutex<ring_drain::RingState>,
    /// Why every traced call of this process takes the hook's slow path
    /// (its agent said so with its ring offer); `None` while the fast one is on.
    slow_hook: Mutex<Option<String>>,
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
    /// debug_ui's vision sidecar, started by its first use (one per daemon).
    vision: Mutex<Option<strobe_ui::vision::sidecar::Sidecar>>,
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
        // What a killed predecessor's virtual displays left running.
        display::reap_left_over(&home);
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
            vision: Mutex::new(None),
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

    fn live(&self, id: &str) -> Option<Arc<Live>> {
        self.live.lock().expect("live lock").get(id).cloned()
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

/// For serde's `skip_serializing_if`: counts that are zero are left out.
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
