//! Daemon → agent: every message the daemon posts to an agent. Mirrored by
//! `DaemonMessage` in agent/src/protocol.ts.
//!
//! Most are taken by the agent's `listen()` (agent/src/index.ts); the
//! acknowledgements and answers a blocked agent thread waits for are taken
//! by that thread's own `recv(type)`: `exit-ack`, `crash-ack`,
//! `fork-barrier-ack`, `module-hooks`, `resume-<tid>` and `callee-<tid>`.

use super::wire::{Hex, OrderedMap, nullable};
use serde::{Deserialize, Serialize};

/// One message to an agent, tagged by its `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum DaemonMessage {
    /// Install or remove hooks; answered by `hooks_updated`.
    #[serde(rename = "hooks")]
    Hooks(HooksRequest),
    /// Hooks for a library the agent reported with `module_loaded {wait: true}`
    /// (possibly none); lets the loading thread go on.
    #[serde(rename = "module-hooks")]
    ModuleHooks(ModuleHooks),
    /// Replace capture plans of hooked functions; answered by `plans_updated`.
    #[serde(rename = "plans")]
    Plans {
        /// Request id.
        id: u64,
        /// The tracer it is for (absent: native).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tracer: Option<String>,
        /// Per function: its new plan, or none.
        plans: Vec<FunctionPlan>,
    },
    /// Replace the expression watches; answered by `exprs_updated`.
    #[serde(rename = "exprs")]
    Exprs {
        /// Request id.
        id: u64,
        /// The tracer it is for (absent: native).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tracer: Option<String>,
        /// `[expression id, label, JavaScript source]`.
        exprs: Vec<(u16, String, String)>,
    },
    /// Set and remove breakpoints; answered by `breakpoints_updated`.
    #[serde(rename = "breakpoints")]
    Breakpoints(BreakpointsRequest),
    /// Set and remove Python breakpoints; answered by `breakpoints_updated`.
    #[serde(rename = "python-breakpoints")]
    PythonBreakpoints(PyBreakpointsRequest),
    /// Read or write Python module globals; answered by `python_memory`.
    #[serde(rename = "python-memory")]
    PythonMemory(PyMemoryRequest),
    /// Where an image is loaded; answered by `module_base`.
    #[serde(rename = "module-base")]
    ModuleBase {
        /// Request id.
        id: u64,
        /// The image's path.
        path: String,
    },
    /// A trace chunk was stored (flow control).
    #[serde(rename = "trace-ack")]
    TraceAck {
        /// The tracer that sent the chunk (absent: native).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tracer: Option<String>,
    },
    /// Give a forked child pipes of its own on these fds; answered by `output_owned`.
    #[serde(rename = "own-output")]
    OwnOutput {
        /// Request id.
        id: u64,
        /// Descriptors (1, 2) that share the session's captured pipes.
        fds: Vec<i32>,
    },
    /// Close descriptors the daemon has its own copies of; answered by `fds_closed`.
    #[serde(rename = "close-fds")]
    CloseFds {
        /// Request id.
        id: u64,
        /// The descriptors.
        fds: Vec<i32>,
    },
    /// Put the fork guard in front of `fork()`; answered by `forks_guarded`.
    #[serde(rename = "guard-forks")]
    GuardForks {
        /// Request id.
        id: u64,
    },
    /// Ship every record the tracers hold now; answered by `flushed` once
    /// they are sent (so a daemon that has the answer has the records).
    #[serde(rename = "flush")]
    Flush {
        /// Request id.
        id: u64,
    },
    /// Record (`on`) or stop recording the program's own socket I/O (its
    /// inet sockets' connects, accepts, sends and receives); answered by
    /// `sockets_watched`.
    #[serde(rename = "watch-sockets")]
    WatchSockets {
        /// Request id.
        id: u64,
        /// Hooks on or off.
        on: bool,
    },
    /// Pause running thread `tid` at the first of `stops` it reaches (the
    /// return addresses of its frames in the program's own code); answered
    /// by `pause_armed`. The pause is reported as a step's stop.
    #[serde(rename = "pause-thread")]
    PauseThread {
        /// Request id.
        id: u64,
        /// The thread to pause.
        tid: u32,
        /// Where it may stop.
        stops: Vec<StepStop>,
    },
    /// Which of `tids` (the process's threads as `/proc` lists them) are
    /// Frida's own, not the program's; answered by `own_threads`.
    #[serde(rename = "own-threads")]
    OwnThreads {
        /// Request id.
        id: u64,
        /// The threads to tell apart.
        tids: Vec<u32>,
    },
    /// Undo the patches a forked child inherited; answered by `inherited`.
    #[serde(rename = "inherit")]
    Inherit {
        /// Request id.
        id: u64,
        /// The parent agent's patch journal (`agent_loaded`'s `journal`).
        journal: String,
    },
    /// Load a tracer's runtime into this attached process (the JavaScript
    /// tracer's: Strobe's Node.js runtime from `dir`); answered by
    /// `runtime_loaded`.
    #[serde(rename = "load-runtime")]
    LoadRuntime {
        /// Request id.
        id: u64,
        /// The tracer whose runtime it is.
        tracer: String,
        /// The directory the runtime's files are in.
        dir: String,
    },
    /// The exit is stored: the exiting thread may go on.
    #[serde(rename = "exit-ack")]
    ExitAck,
    /// The crash is stored: the crashing thread may go on dying.
    #[serde(rename = "crash-ack")]
    CrashAck,
    /// Everything sent before the fork has arrived: the thread may fork.
    #[serde(rename = "fork-barrier-ack")]
    ForkBarrierAck,
    /// Answers [`super::AgentMessage::Ring`]: the daemon drains the shared
    /// ring from now on (`ok`), or the agent ships it again, for `reason`.
    #[serde(rename = "ring-attached")]
    RingAttached {
        /// The daemon mapped the ring and drains it.
        ok: bool,
        /// Why not, when not.
        reason: Option<String>,
    },
    /// How a paused thread goes on (`type` is `resume-<tid>`).
    #[serde(untagged)]
    Resume(Resume),
    /// Where a callee's body starts, for a step into (`type` is `callee-<tid>`).
    #[serde(untagged)]
    Callee(Callee),
}

/// `python-memory`: per target a dotted name (`module.NAME`, then
/// attributes) read to `depth`, or when `write` set to `value` (a JSON
/// scalar: int, float, string, bool or null for None).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PyMemoryRequest {
    /// Request id.
    pub id: u64,
    /// `[dotted name, depth, write, value]`.
    pub targets: Vec<(String, u32, bool, serde_json::Value)>,
}

/// `python-breakpoints`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PyBreakpointsRequest {
    /// Request id.
    pub id: u64,
    /// Breakpoints to add.
    pub set: Vec<PyBreakpointSpec>,
    /// Agent ids to remove.
    pub remove: Vec<String>,
}

/// A Python breakpoint or logpoint: a line of a source file, in one code
/// object when `qualname` is given (a function breakpoint). The condition
/// and the message's `{expression}`s are Python, compiled by the agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PyBreakpointSpec {
    /// Agent id (`bp-N@0`).
    pub id: String,
    /// Source file (absolute, symlinks resolved).
    pub file: String,
    /// Line.
    pub line: u32,
    /// `co_qualname` of the only code object it applies to.
    #[serde(deserialize_with = "nullable")]
    pub qualname: Option<String>,
    /// Python condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Pause from the Nth hit on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_count: Option<u32>,
    /// Logpoint message with `{expression}` parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `hooks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HooksRequest {
    /// Request id.
    pub id: u64,
    /// The tracer it is for (agent/src/tracers/index.ts); absent: the
    /// native tracer, which every request is for today.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracer: Option<String>,
    /// What to hook or unhook.
    #[serde(flatten)]
    pub change: HookChange,
    /// True while patterns are active: libraries loaded later must then be
    /// checked (and hooked) before their code runs.
    #[serde(rename = "watchLibraries")]
    pub watch_libraries: bool,
}

/// A `hooks` request's `action` and what it acts on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum HookChange {
    /// Hook these functions of one image.
    Add {
        /// The functions, in the terms of the tracer the request is for.
        functions: HookFunctions,
        /// The image (absent: the main executable).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        module: Option<String>,
        /// Hot-function sampling on.
        sampling: bool,
        /// Calls per second above which a function is sampled.
        #[serde(rename = "hotCallsPerSecond")]
        hot_calls_per_second: u64,
        /// Most ms a thread loading a library waits for its hooks.
        #[serde(rename = "libraryWaitMs")]
        library_wait_ms: u64,
        /// Python only: the patterns code without a source file is matched
        /// against at run time (absent: unchanged).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        runtime: Option<PyRuntimeMatch>,
        /// JavaScript only: how many levels deep values are previewed
        /// (`serializationDepth`; absent: unchanged).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        depth: Option<u32>,
    },
    /// Unhook these function ids.
    Remove {
        /// The function ids.
        functions: Vec<u32>,
    },
}

/// One function to hook: `[id, entry offset in its image, capture plan
/// (bytes, see strobe-values' wire.rs) or null, stack bytes a call
/// passes at most, code bytes from the entry to the end of its range (0: unknown)]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookTarget(pub u32, pub u64, pub Option<Vec<u8>>, pub u32, pub u64);

/// The functions of a `hooks` add, in the terms of the tracer it is for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HookFunctions {
    /// The native tracer's: functions by address.
    Native(Vec<HookTarget>),
    /// The Python tracer's: functions by source file and qualified name.
    Python(Vec<PyTarget>),
    /// The JavaScript tracer's: functions by probe index.
    JavaScript(Vec<JsTarget>),
}

/// One JavaScript function to trace (agent/src/tracers/javascript/): `[id,
/// probe index, late]`, the probe the daemon wrote into its source as Node
/// loaded it (strobe_symbols::resolvers::javascript::instrument). `late`:
/// its file was probed after the program started (a package a pattern
/// named while it ran), so Node may have loaded it without the probe and
/// the agent makes it live first, as in an attached program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsTarget(pub u32, pub u32, pub bool);

/// One Python function to trace (agent/src/tracers/python/): `[id, source
/// file, co_qualname]`. The agent traces every code object with that file
/// and qualname (a function defined again, or nested and made per call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PyTarget(pub u32, pub String, pub String);

/// What the Python tracer matches at run time: code `exec` made or a
/// library generated has no source file for the resolver, so it is named
/// by its function object (`__module__` + `__qualname__`) when it first
/// runs, and a match gets an id from `[first_id, first_id + max_ids)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PyRuntimeMatch {
    /// Every active Python glob pattern (dotted names).
    pub patterns: Vec<String>,
    /// The main script's module name (`__main__` is named by it).
    #[serde(rename = "mainModule")]
    pub main_module: String,
    /// First id of the run-time range.
    #[serde(rename = "firstId")]
    pub first_id: u32,
    /// Ids in the range.
    #[serde(rename = "maxIds")]
    pub max_ids: u32,
}

/// `[function id, capture plan bytes or null]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionPlan(pub u32, pub Option<Vec<u8>>);

/// `module-hooks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleHooks {
    /// The library's path.
    pub module: String,
    /// The functions to hook in it.
    pub functions: Vec<HookTarget>,
}

/// `breakpoints`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakpointsRequest {
    /// Request id.
    pub id: u64,
    /// Breakpoints to add or replace (by id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<Vec<BreakpointSpec>>,
    /// Agent ids to remove.
    pub remove: Vec<String>,
}

/// One breakpoint or logpoint address, as agent/src/breakpoints.ts reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakpointSpec {
    /// Agent id: `<breakpoint id>@<address index>`.
    pub id: String,
    /// The address.
    pub address: Hex,
    /// The CFA rule there: `[DWARF register, offset]`.
    pub cfa: Option<(u16, i64)>,
    /// The variables the condition and message name.
    pub vars: Vec<VarDesc>,
    /// JavaScript condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Logpoint message template (absent for a breakpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Pause only from this hit on.
    #[serde(rename = "hitCount", default, skip_serializing_if = "Option::is_none")]
    pub hit_count: Option<u32>,
}

/// A variable a breakpoint's condition or message reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VarDesc {
    /// Its name in the expression.
    pub name: String,
    /// A parameter (also bound in `args`).
    pub param: bool,
    /// Where it is.
    pub loc: VarLocation,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: TypeDesc,
}

/// Where a variable is at a breakpoint address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "lowercase")]
pub enum VarLocation {
    /// In memory.
    Mem(MemLocation),
    /// The value is in a register (DWARF number).
    Reg {
        /// DWARF register number.
        reg: u16,
    },
    /// A constant the compiler propagated.
    Const {
        /// The value.
        v: i64,
    },
    /// Not readable here, and why.
    #[serde(rename = "none")]
    Unavailable {
        /// Why (completes "`name` is …").
        why: String,
    },
}

/// A memory place, by what its offset is relative to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "base", rename_all = "lowercase")]
pub enum MemLocation {
    /// The frame's CFA plus `off`.
    Cfa {
        /// Offset.
        off: i64,
    },
    /// A register's value plus `off`.
    Reg {
        /// DWARF register number.
        reg: u16,
        /// Offset.
        off: i64,
    },
    /// A fixed address.
    Abs {
        /// The address.
        off: Hex,
    },
}

/// A value's type, as far as conditions and messages need it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "lowercase")]
pub enum TypeDesc {
    /// An integer.
    Int {
        /// Bytes.
        size: u8,
        /// Signed.
        signed: bool,
    },
    /// A floating-point number.
    Float {
        /// Bytes.
        size: u8,
    },
    /// A boolean.
    Bool {
        /// Bytes.
        size: u8,
    },
    /// An enumeration.
    Enum {
        /// Bytes.
        size: u8,
        /// Signed.
        signed: bool,
        /// Variant names by value (as a decimal string).
        names: OrderedMap<String>,
    },
    /// A pointer.
    Ptr {
        /// To `char`: read as a C string.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        str: bool,
        /// To a struct: read as that struct.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<Box<TypeDesc>>,
    },
    /// A struct: `[name, byte offset, type]` of its members (bitfields left out).
    Struct {
        /// The members.
        fields: Vec<(String, u64, TypeDesc)>,
    },
    /// Anything else (read as an address).
    Opaque,
}

/// `resume-<tid>`: one `recv` per paused thread, so each thread takes its own order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resume {
    /// The paused thread.
    #[serde(rename = "type", with = "resume_tag")]
    pub tid: u32,
    /// How it goes on.
    #[serde(flatten)]
    pub order: ResumeOrder,
}

/// How a paused thread goes on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum ResumeOrder {
    /// Run on.
    Continue,
    /// Run to the first of these stops.
    Step {
        /// The step's temporary stops.
        stops: Vec<StepStop>,
        /// Step into: `[from, to)` of the current line, whose calls get stops too.
        scan: Option<(Hex, Hex)>,
        /// The frame check of those call stops.
        #[serde(rename = "scanFrame")]
        scan_frame: Option<FrameCheck>,
    },
    /// A paused Python thread steps (`over`, `into` or `out`).
    #[serde(rename = "py-step")]
    PyStep {
        /// `over`, `into` or `out`.
        mode: PyStepMode,
    },
    /// A paused Python thread sets a local of its frame and stays paused;
    /// answered by `python_memory` (one result) with this id.
    #[serde(rename = "py-set")]
    PySet {
        /// Request id.
        id: u64,
        /// The local's name.
        name: String,
        /// Its new value (a JSON scalar; null is None).
        value: serde_json::Value,
    },
}

/// How a Python thread steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PyStepMode {
    /// To the next line of this frame, or of a caller once it returned.
    Over,
    /// To the next line anywhere.
    Into,
    /// To the next line of a caller.
    Out,
}

/// `[address, frame check or null, is a call site of the line stepped into]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepStop(pub Hex, pub Option<FrameCheck>, pub bool);

/// `[DWARF register, offset, value]`: a stop counts only when the
/// register plus the offset equals the value (the CFA the step began in).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameCheck(pub u16, pub i64, pub Hex);

/// `callee-<tid>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Callee {
    /// The stepping thread.
    #[serde(rename = "type", with = "callee_tag")]
    pub tid: u32,
    /// Where the callee's body starts; `None` when it has no line info.
    pub address: Option<Hex>,
}

/// A `type` that names a thread: `<prefix><tid>`.
macro_rules! thread_tag {
    ($module:ident, $prefix:literal) => {
        mod $module {
            use serde::{Deserialize, Deserializer, Serializer, de};

            pub fn serialize<S: Serializer>(tid: &u32, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(&format_args!(concat!($prefix, "{}"), tid))
            }

            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                text.strip_prefix($prefix)
                    .and_then(|t| t.parse().ok())
                    .ok_or_else(|| {
                        de::Error::custom(format!(concat!("{:?} is not ", $prefix, "<tid>"), text))
                    })
            }
        }
    };
}

thread_tag!(resume_tag, "resume-");
thread_tag!(callee_tag, "callee-");

impl DaemonMessage {
    /// The `type` on the wire (`resume-<tid>` and `callee-<tid>` by their prefix).
    pub fn type_name(&self) -> &'static str {
        match self {
            DaemonMessage::Hooks(_) => "hooks",
            DaemonMessage::ModuleHooks(_) => "module-hooks",
            DaemonMessage::Plans { .. } => "plans",
            DaemonMessage::Exprs { .. } => "exprs",
            DaemonMessage::Breakpoints(_) => "breakpoints",
            DaemonMessage::PythonBreakpoints(_) => "python-breakpoints",
            DaemonMessage::PythonMemory(_) => "python-memory",
            DaemonMessage::ModuleBase { .. } => "module-base",
            DaemonMessage::TraceAck { .. } => "trace-ack",
            DaemonMessage::OwnOutput { .. } => "own-output",
            DaemonMessage::CloseFds { .. } => "close-fds",
            DaemonMessage::GuardForks { .. } => "guard-forks",
            DaemonMessage::Flush { .. } => "flush",
            DaemonMessage::WatchSockets { .. } => "watch-sockets",
            DaemonMessage::PauseThread { .. } => "pause-thread",
            DaemonMessage::OwnThreads { .. } => "own-threads",
            DaemonMessage::Inherit { .. } => "inherit",
            DaemonMessage::LoadRuntime { .. } => "load-runtime",
            DaemonMessage::ExitAck => "exit-ack",
            DaemonMessage::CrashAck => "crash-ack",
            DaemonMessage::ForkBarrierAck => "fork-barrier-ack",
            DaemonMessage::RingAttached { .. } => "ring-attached",
            DaemonMessage::Resume(_) => "resume-",
            DaemonMessage::Callee(_) => "callee-",
        }
    }

    /// The message as the JSON text the agent receives.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("daemon messages always serialize")
    }
}
