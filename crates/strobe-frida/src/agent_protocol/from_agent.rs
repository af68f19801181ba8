//! Agent → daemon: every message the agent `send()`s, as the daemon reads
//! it. Mirrored by `AgentMessage` in agent/src/protocol.ts.

use super::answers::*;
use super::wire::{Hex, OrderedMap, decimal, nullable, numeric_keys};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One message from an agent (the `payload` of Frida's `send` envelope),
/// tagged by its `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum AgentMessage {
    /// The agent is loaded and its hooks on `_exit`, `abort` and the
    /// exception handler are in place.
    #[serde(rename = "agent_loaded")]
    AgentLoaded(AgentLoaded),
    /// The process calls `_exit`; its thread waits for [`super::DaemonMessage::ExitAck`].
    #[serde(rename = "exit")]
    Exit(ExitReport),
    /// The process crashes; its thread waits for [`super::DaemonMessage::CrashAck`].
    #[serde(rename = "crash")]
    Crash(CrashReport),
    /// A chunk of trace records; the records are the message's binary data.
    #[serde(rename = "trace")]
    Trace(TraceChunk),
    /// The record ring is shared memory the daemon may map and drain
    /// itself; the agent ships nothing until [`super::DaemonMessage::RingAttached`].
    #[serde(rename = "ring")]
    Ring(RingOffer),
    /// Records dropped since the last report, per function.
    #[serde(rename = "trace_drops")]
    TraceDrops(TraceDrops),
    /// A fork is about to happen; the forking thread waits for
    /// [`super::DaemonMessage::ForkBarrierAck`].
    #[serde(rename = "fork_barrier")]
    ForkBarrier(ForkBarrier),
    /// The fork a [`AgentMessage::ForkBarrier`] announced returned in the
    /// parent (requests to the agent held since may go again).
    #[serde(rename = "fork_done")]
    ForkDone(ForkDone),
    /// Answer to [`super::DaemonMessage::Plans`].
    #[serde(rename = "plans_updated")]
    PlansUpdated(PlansUpdated),
    /// Answer to [`super::DaemonMessage::ModuleBase`].
    #[serde(rename = "module_base")]
    ModuleBase(ModuleBaseAnswer),
    /// Answer to [`super::DaemonMessage::Exprs`].
    #[serde(rename = "exprs_updated")]
    ExprsUpdated(ExprsUpdated),
    /// Answer to [`super::DaemonMessage::Inherit`].
    #[serde(rename = "inherited")]
    Inherited(Inherited),
    /// Answer to [`super::DaemonMessage::Flush`].
    #[serde(rename = "flushed")]
    Flushed(Flushed),
    /// Answers `watch-sockets`.
    #[serde(rename = "sockets_watched")]
    SocketsWatched(SocketsWatched),
    /// Answers `pause-thread`.
    #[serde(rename = "pause_armed")]
    PauseArmed(PauseArmed),
    /// Answers `own-threads`.
    #[serde(rename = "own_threads")]
    OwnThreads(OwnThreads),
    /// Answer to [`super::DaemonMessage::LoadRuntime`].
    #[serde(rename = "runtime_loaded")]
    RuntimeLoaded(RuntimeLoaded),
    /// Answer to [`super::DaemonMessage::GuardForks`].
    #[serde(rename = "forks_guarded")]
    ForksGuarded(ForksGuarded),
    /// Answer to [`super::DaemonMessage::OwnOutput`].
    #[serde(rename = "output_owned")]
    OutputOwned(OutputOwned),
    /// Answer to [`super::DaemonMessage::CloseFds`].
    #[serde(rename = "fds_closed")]
    FdsClosed(FdsClosed),
    /// Answer to [`super::DaemonMessage::Hooks`], or (id 0) what the agent
    /// hooked on its own for a library loaded later ([`super::DaemonMessage::ModuleHooks`]).
    #[serde(rename = "hooks_updated")]
    HooksUpdated(HooksUpdated),
    /// Functions whose sampling changed.
    #[serde(rename = "sampling")]
    Sampling(SamplingChanges),
    /// The images loaded when the agent started.
    #[serde(rename = "modules")]
    Modules(Modules),
    /// An image was loaded; with `wait` the loading thread waits for
    /// [`super::DaemonMessage::ModuleHooks`].
    #[serde(rename = "module_loaded")]
    ModuleLoaded(ModuleLoaded),
    /// A thread stopped at a breakpoint or step; it waits for
    /// [`super::DaemonMessage::Resume`].
    #[serde(rename = "paused")]
    Paused(Paused),
    /// A step into reached a call; the thread waits for [`super::DaemonMessage::Callee`].
    #[serde(rename = "step_call")]
    StepCall(StepCall),
    /// A logpoint's message.
    #[serde(rename = "logpoint")]
    Logpoint(Logpoint),
    /// A breakpoint's condition threw in the target.
    #[serde(rename = "breakpoint_error")]
    BreakpointError(BreakpointError),
    /// Answer to [`super::DaemonMessage::Breakpoints`].
    #[serde(rename = "breakpoints_updated")]
    BreakpointsUpdated(BreakpointsUpdated),
    /// Step stops that could not be planted.
    #[serde(rename = "step_failed")]
    StepFailed(StepFailed),
    /// A Python exception nothing caught, as the interpreter is about to
    /// print it.
    #[serde(rename = "python_uncaught")]
    PythonUncaught(PythonUncaught),
    /// A Python thread paused (its GIL released); it waits for
    /// [`super::DaemonMessage::Resume`].
    #[serde(rename = "python_paused")]
    PythonPaused(PythonPaused),
    /// Answer to [`super::DaemonMessage::PythonMemory`].
    #[serde(rename = "python_memory")]
    PythonMemory(PythonMemory),
    /// A thread loading a library stopped waiting for its hooks
    /// (`trace.libraryWaitMs`); they go in when they come.
    #[serde(rename = "library_wait_expired")]
    LibraryWaitExpired(LibraryWaitExpired),
}

/// `agent_loaded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentLoaded {
    /// The process.
    pub pid: u32,
    /// Frida's `Process.arch`.
    pub arch: String,
    /// Frida's `Process.platform`.
    pub platform: String,
    /// Address of the agent's patch journal, which a forked child's agent
    /// uses to undo what it inherited.
    pub journal: String,
}

/// `exit`: the code `_exit` was called with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExitReport {
    /// The process.
    pub pid: u32,
    /// The exit code; a message without a valid one is rejected, never
    /// taken for 0 (which would read as success).
    pub code: i32,
}

/// `crash`: what the agent saw of a crash. Stored as the crash event's
/// document (enriched by the daemon), so its shape is the event's too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashReport {
    /// The process.
    pub pid: u32,
    /// The crashing thread.
    pub tid: u32,
    /// Signal name (`SIGSEGV`, …) or Frida's exception type when unknown.
    pub signal: String,
    /// Frida's exception type (`access-violation`, `abort`, …).
    pub kind: String,
    /// Where it happened (`0x…`).
    pub address: String,
    /// The faulting access, for memory faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<CrashMemory>,
    /// Registers by name (`0x…`), in the agent's order.
    pub registers: OrderedMap<String>,
    /// The crashing thread's frames, innermost first.
    pub backtrace: Vec<Frame>,
    /// Mangled type name of the exception `std::terminate` was called for.
    #[serde(
        rename = "exceptionType",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub exception_type: Option<String>,
    /// The thread ran off the end of its stack (a fault next to the stack
    /// pointer, in memory that cannot be read): deep or endless recursion.
    #[serde(
        rename = "stackOverflow",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub stack_overflow: bool,
    /// The crashing thread's Python frames, innermost first (a segfault in
    /// a C extension called from Python).
    #[serde(
        rename = "pythonBacktrace",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub python_backtrace: Option<Vec<ScriptFrame>>,
}

/// A frame of an interpreted language's stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptFrame {
    /// The function (Python: its qualified name).
    pub function: String,
    /// Its source file.
    pub file: String,
    /// The line it was at.
    pub line: i64,
}

/// The memory access that faulted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashMemory {
    /// `read`, `write` or `execute`.
    pub operation: String,
    /// The address accessed (`0x…`).
    pub address: String,
}

/// One frame of a backtrace, symbolized by Frida (the daemon re-reads
/// file and line from the program's DWARF).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// The code address (`0x…`).
    pub address: String,
    /// The image's name.
    #[serde(deserialize_with = "nullable")]
    pub module: Option<String>,
    /// The symbol.
    #[serde(deserialize_with = "nullable")]
    pub name: Option<String>,
    /// Source file, when Frida knows it.
    #[serde(deserialize_with = "nullable")]
    pub file: Option<String>,
    /// Source line, when Frida knows it.
    #[serde(deserialize_with = "nullable")]
    pub line: Option<u32>,
}

/// `trace`: `count` 32-byte records follow as binary data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceChunk {
    /// Records in the data.
    pub count: u32,
}

/// `ring`: the record ring's memory is a memfd open in the target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RingOffer {
    /// The descriptor, in the target (`/proc/<pid>/fd/<fd>`).
    pub fd: i32,
    /// The ring's length: 64 bytes of head and tail, then the record slots.
    pub bytes: u64,
    /// The threads' stages that follow the ring in the memfd
    /// (agent/src/tracers/native/stage.ts): their bytes (0: none).
    #[serde(default, rename = "stageBytes")]
    pub stage_bytes: u64,
    /// Records one stage holds.
    #[serde(default, rename = "stageRecords")]
    pub stage_records: u32,
    /// Why every traced call takes the hook's slow path (the machine-code
    /// fast path could not find the thread's state); `None` while it is on.
    #[serde(default, rename = "slowHook")]
    pub slow_hook: Option<String>,
}

/// `trace_drops`: records dropped (the ring stayed full) since the last report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceDrops {
    /// By function id.
    #[serde(deserialize_with = "numeric_keys")]
    pub drops: BTreeMap<u32, u64>,
}

/// `fork_barrier`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkBarrier {
    /// The forking process.
    pub pid: u32,
}

/// `fork_done`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkDone {
    /// The process that forked.
    pub pid: u32,
    /// What fork() returned to it: the child's pid, or -1 when it failed.
    pub child: i64,
}

/// `sampling`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingChanges {
    /// `[function id, 1 in N calls recorded (0: every call)]`.
    pub changes: Vec<(u32, u64)>,
}

/// `modules`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Modules {
    /// Paths of the file-backed images.
    pub paths: Vec<String>,
}

/// `module_loaded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleLoaded {
    /// The image's path.
    pub path: String,
    /// The loading thread waits for the hooks of this image.
    pub wait: bool,
}

/// `library_wait_expired`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LibraryWaitExpired {
    /// The library's path.
    pub path: String,
    /// How long the loading thread waited.
    #[serde(rename = "waitedMs")]
    pub waited_ms: u64,
}

/// Why a thread paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PauseReason {
    /// It hit a breakpoint.
    Breakpoint,
    /// A step ended.
    Step,
}

impl PauseReason {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            PauseReason::Breakpoint => "breakpoint",
            PauseReason::Step => "step",
        }
    }
}

/// `paused`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paused {
    /// The paused thread.
    pub tid: u32,
    /// The process.
    pub pid: u32,
    /// When (`CLOCK_MONOTONIC` ns).
    #[serde(with = "decimal")]
    pub ts: u64,
    /// Why.
    pub reason: PauseReason,
    /// The agent's id of the breakpoint (`<id>@<n>`), for a breakpoint.
    #[serde(deserialize_with = "nullable")]
    pub breakpoint: Option<String>,
    /// The breakpoint's hits so far (0 for a step).
    pub hits: u64,
    /// The address stopped at.
    pub address: Hex,
    /// Registers by name (`0x…`).
    pub registers: OrderedMap<String>,
    /// The thread's frames, innermost first.
    pub backtrace: Vec<Frame>,
}

/// `step_call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepCall {
    /// The stepping thread.
    pub tid: u32,
    /// The callee's address.
    pub target: Hex,
}

/// `logpoint`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Logpoint {
    /// The agent's id of the logpoint (`<id>@<n>`).
    pub id: String,
    /// The thread that hit it.
    pub tid: u32,
    /// The process.
    pub pid: u32,
    /// When (`CLOCK_MONOTONIC` ns).
    #[serde(with = "decimal")]
    pub ts: u64,
    /// The rendered message.
    pub message: String,
}

/// `breakpoint_error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakpointError {
    /// The agent's id of the breakpoint (`<id>@<n>`).
    pub id: String,
    /// What the condition threw.
    pub error: String,
}

/// `breakpoints_updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakpointsUpdated {
    /// The request's id.
    pub id: u64,
    /// Agent ids set.
    pub installed: Vec<String>,
    /// `[agent id, why]` of those that could not be.
    pub failed: Vec<(String, String)>,
}

/// `step_failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepFailed {
    /// The stepping thread.
    pub tid: u32,
    /// `address: why` of each stop not planted.
    pub failed: Vec<String>,
}

/// `python_memory`: per target, the value read (after a write: the new
/// one, with the previous one) as a Python payload (`what` 7), or why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PythonMemory {
    /// Request id.
    pub id: u64,
    /// One per target.
    pub results: Vec<PyMemoryResult>,
}

/// `[payload, previous payload (after a write), error]`.
pub type PyMemoryResult = (Option<Vec<u8>>, Option<Vec<u8>>, Option<String>);

/// `python_paused`: a Python thread, or a Node.js program's main thread
/// (its debugger worker, agent/node/debugger.cjs, reports the same way).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PythonPaused {
    /// The paused thread.
    pub tid: u32,
    /// The process.
    pub pid: u32,
    /// When (`CLOCK_MONOTONIC` ns).
    #[serde(with = "decimal")]
    pub ts: u64,
    /// Why.
    pub reason: PauseReason,
    /// The agent's id of the breakpoint (`<id>@<n>`), for a breakpoint.
    #[serde(deserialize_with = "nullable")]
    pub breakpoint: Option<String>,
    /// The breakpoint's hits so far (0 for a step).
    pub hits: u64,
    /// Its frames (innermost first) and the paused frame's locals, in the
    /// Python tracer's payload format (strobe-values' python/, `what` 6).
    pub payload: Vec<u8>,
}

/// `python_uncaught`: an exception reached the top of a Python thread's
/// stack (the interpreter calls PyErr_PrintEx to print it); the process
/// usually exits unsuccessfully next. SystemExit is not reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PythonUncaught {
    /// The thread it ended.
    pub tid: u32,
    /// Its type, args and traceback (with each frame's locals), in the
    /// Python tracer's payload format (strobe-values' python/, `what` 3).
    pub payload: Vec<u8>,
}

impl AgentMessage {
    /// The `type` on the wire.
    pub fn type_name(&self) -> &'static str {
        match self {
            AgentMessage::AgentLoaded(_) => "agent_loaded",
            AgentMessage::Exit(_) => "exit",
            AgentMessage::Crash(_) => "crash",
            AgentMessage::Trace(_) => "trace",
            AgentMessage::Ring(_) => "ring",
            AgentMessage::TraceDrops(_) => "trace_drops",
            AgentMessage::ForkBarrier(_) => "fork_barrier",
            AgentMessage::ForkDone(_) => "fork_done",
            AgentMessage::PlansUpdated(_) => "plans_updated",
            AgentMessage::ModuleBase(_) => "module_base",
            AgentMessage::ExprsUpdated(_) => "exprs_updated",
            AgentMessage::Inherited(_) => "inherited",
            AgentMessage::Flushed(_) => "flushed",
            AgentMessage::SocketsWatched(_) => "sockets_watched",
            AgentMessage::PauseArmed(_) => "pause_armed",
            AgentMessage::OwnThreads(_) => "own_threads",
            AgentMessage::RuntimeLoaded(_) => "runtime_loaded",
            AgentMessage::ForksGuarded(_) => "forks_guarded",
            AgentMessage::OutputOwned(_) => "output_owned",
            AgentMessage::FdsClosed(_) => "fds_closed",
            AgentMessage::HooksUpdated(_) => "hooks_updated",
            AgentMessage::Sampling(_) => "sampling",
            AgentMessage::Modules(_) => "modules",
            AgentMessage::ModuleLoaded(_) => "module_loaded",
            AgentMessage::Paused(_) => "paused",
            AgentMessage::StepCall(_) => "step_call",
            AgentMessage::Logpoint(_) => "logpoint",
            AgentMessage::BreakpointError(_) => "breakpoint_error",
            AgentMessage::BreakpointsUpdated(_) => "breakpoints_updated",
            AgentMessage::StepFailed(_) => "step_failed",
            AgentMessage::PythonUncaught(_) => "python_uncaught",
            AgentMessage::PythonPaused(_) => "python_paused",
            AgentMessage::PythonMemory(_) => "python_memory",
            AgentMessage::LibraryWaitExpired(_) => "library_wait_expired",
        }
    }

    /// The id of the daemon request this message answers (`None` for
    /// messages the agent sends on its own, and for id 0: hooks of a
    /// library loaded later, which no request waits for).
    pub fn reply_id(&self) -> Option<u64> {
        let id = match self {
            AgentMessage::PlansUpdated(m) => m.id,
            AgentMessage::ModuleBase(m) => m.id,
            AgentMessage::ExprsUpdated(m) => m.id,
            AgentMessage::Inherited(m) => m.id,
            AgentMessage::Flushed(m) => m.id,
            AgentMessage::SocketsWatched(m) => m.id,
            AgentMessage::PauseArmed(m) => m.id,
            AgentMessage::OwnThreads(m) => m.id,
            AgentMessage::RuntimeLoaded(m) => m.id,
            AgentMessage::ForksGuarded(m) => m.id,
            AgentMessage::OutputOwned(m) => m.id,
            AgentMessage::FdsClosed(m) => m.id,
            AgentMessage::HooksUpdated(m) => m.id,
            AgentMessage::BreakpointsUpdated(m) => m.id,
            AgentMessage::PythonMemory(m) => m.id,
            AgentMessage::AgentLoaded(_)
            | AgentMessage::Exit(_)
            | AgentMessage::Crash(_)
            | AgentMessage::Trace(_)
            | AgentMessage::Ring(_)
            | AgentMessage::TraceDrops(_)
            | AgentMessage::ForkBarrier(_)
            | AgentMessage::ForkDone(_)
            | AgentMessage::Sampling(_)
            | AgentMessage::Modules(_)
            | AgentMessage::ModuleLoaded(_)
            | AgentMessage::Paused(_)
            | AgentMessage::StepCall(_)
            | AgentMessage::Logpoint(_)
            | AgentMessage::BreakpointError(_)
            | AgentMessage::StepFailed(_)
            | AgentMessage::PythonUncaught(_)
            | AgentMessage::PythonPaused(_)
            | AgentMessage::LibraryWaitExpired(_) => return None,
        };
        (id != 0).then_some(id)
    }
}
