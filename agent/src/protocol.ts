// The agent protocol: every message between the agent and the daemon. The
// bridge forwards them undecoded; the daemon's side is the Rust module
// crates/strobe-frida/src/agent_protocol/, which writes an example of every
// message into agent/test/protocol.fixtures.{agent,daemon}.ts, checked against these types
// by agent/test/protocol_check.ts (./dev test), so the two cannot drift.
// Field names are the wire's; 64-bit addresses travel as "0x…" strings and
// monotonic-clock nanoseconds as decimal strings.

/** One frame of a backtrace, symbolized by Frida. */
export interface Frame {
    address: string;
    module: string | null;
    name: string | null;
    file: string | null;
    line: number | null;
}

/** A function to hook: id, entry offset in its module, its capture plan
 *  (bytes, see crates/strobe-values/src/wire.rs; null: name and timing
 *  only), how many bytes of stack arguments a call passes at most, and
 *  the bytes of code from the entry to the end of its range (0: unknown). */
export type HookTarget = [number, number, number[] | null, number, number];
/** A Python function to trace: [id, source file, co_qualname]
 *  (crates/strobe-frida/src/agent_protocol/to_agent.rs, PyTarget). */
export type PyTarget = [number, string, string];
/** A JavaScript function to trace: [id, probe index, its file was probed
 *  after the program started] (crates/strobe-frida/src/agent_protocol/to_agent.rs, JsTarget). */
export type JsTarget = [number, number, boolean];

/** The Python tracer's run-time matching (to_agent.rs, PyRuntimeMatch). */
export interface PyRuntimeMatch { patterns: string[]; mainModule: string; firstId: number; maxIds: number }

/** Where a variable is at a breakpoint address (resolved by the daemon). */
export type VarLocation =
    | { k: "mem"; base: "cfa"; off: number }
    | { k: "mem"; base: "reg"; reg: number; off: number }
    | { k: "mem"; base: "abs"; off: string }
    | { k: "reg"; reg: number }
    | { k: "const"; v: number }
    | { k: "none"; why: string };

/** A value's type, as much as conditions and messages need. */
export type TypeDesc =
    | { k: "int"; size: number; signed: boolean }
    | { k: "float"; size: number }
    | { k: "bool"; size: number }
    | { k: "enum"; size: number; signed: boolean; names: Record<string, string> }
    | { k: "ptr"; str?: boolean; to?: TypeDesc }
    | { k: "struct"; fields: Array<[string, number, TypeDesc]> }
    | { k: "opaque" };

/** A variable a breakpoint's condition or message reads. */
export interface VarDesc { name: string; param: boolean; loc: VarLocation; type: TypeDesc }

/** A breakpoint or logpoint as the daemon sends it. */
export interface BreakpointSpec {
    id: string;
    address: string;
    /** Logpoint message template; absent for breakpoints. */
    message?: string;
    condition?: string;
    hitCount?: number;
    /** CFA rule at the address: [DWARF register, offset]. */
    cfa: [number, number] | null;
    vars: VarDesc[];
}

/** A Python breakpoint or logpoint (agent/src/tracers/python/debugger.ts):
 *  a line of a source file (realpath), in one code object when `qualname`
 *  is given (a function breakpoint); the condition and `{expression}`s of
 *  the message are Python. */
export interface PyBreakpointSpec {
    id: string;
    file: string;
    line: number;
    qualname: string | null;
    condition?: string;
    hitCount?: number;
    message?: string;
}

/** [DWARF register, offset, expected value]: a step stop counts only when reg + offset equals it. */
export type FrameCheck = [number, number, string];

/** A step stop: [address, frame check or null, is a call site of the line stepped into]. */
export type StepStop = [string, FrameCheck | null, boolean];

/** A frame of an interpreted language's stack (innermost first). */
export interface ScriptFrame { function: string; file: string; line: number }

/** What tracers add to a crash report (Tracer.crashContext): where the
 *  crashing thread was in the code they trace. */
export interface CrashContext {
    /** The crashing thread's Python frames, innermost first. */
    pythonBacktrace?: ScriptFrame[];
}

/** Agent → daemon. */
export type AgentMessage =
    | { type: "agent_loaded"; pid: number; arch: string; platform: string; journal: string }
    | { type: "exit"; pid: number; code: number }
    | { type: "crash"; pid: number; tid: number; signal: string; kind: string; address: string;
        memory?: { operation: string; address: string };
        registers: Record<string, string>; backtrace: Frame[];
        /** Mangled type name of the exception std::terminate was called for. */
        exceptionType?: string;
        /** The thread ran off the end of its stack. */
        stackOverflow?: boolean } & CrashContext
    /** `count` 32-byte records follow as the message's data. */
    | { type: "trace"; count: number }
    /** The ring's memory is the memfd `fd` (`bytes` long, then
     *  `stageBytes` of the threads' stages of `stageRecords` records each):
     *  the daemon may map it and drain the ring itself
     *  (tracers/native/shared_ring.ts, stage.ts). `slowHook`: why every
     *  traced call takes the hook's slow path (null: the fast one is on). */
    | { type: "ring"; fd: number; bytes: number; stageBytes: number; stageRecords: number; slowHook: string | null }
    | { type: "trace_drops"; drops: Record<string, number> }
    | { type: "fork_barrier"; pid: number }
    | { type: "fork_done"; pid: number; child: number }
    | { type: "plans_updated"; id: number; count: number }
    | { type: "module_base"; id: number; base: string | null }
    | { type: "exprs_updated"; id: number; errors: Array<[string, string]> }
    | { type: "inherited"; id: number; undone: number; error: string | null }
    /** Every record the tracers held was shipped before this. */
    | { type: "flushed"; id: number; error: string | null }
    /** How many socket functions are hooked now (0: off). */
    | { type: "sockets_watched"; id: number; hooked: number; error: string | null }
    /** The stops of a pause that could not be planted (`address: why`). */
    | { type: "pause_armed"; id: number; failed: string[]; error: string | null }
    | { type: "own_threads"; id: number; own: number[]; error: string | null }
    /** The language runtime loaded into an attached process (`how` it got
     *  in), or why it was not. */
    | { type: "runtime_loaded"; id: number; how: string | null; error: string | null }
    | { type: "forks_guarded"; id: number; slots: number; error: string | null }
    | { type: "output_owned"; id: number; readFds: Record<string, number>; error: string | null }
    | { type: "fds_closed"; id: number; closed: number; error: string | null }
    | { type: "hooks_updated"; id: number; installed: number[]; failed: Array<[number, string]>; activeCount: number; ms: number }
    | { type: "sampling"; changes: Array<[number, number]> }
    | { type: "modules"; paths: string[] }
    | { type: "module_loaded"; path: string; wait: boolean }
    /** The loading thread stopped waiting for the library's hooks. */
    | { type: "library_wait_expired"; path: string; waitedMs: number }
    | { type: "paused"; tid: number; pid: number; ts: string; reason: "breakpoint" | "step";
        breakpoint: string | null; hits: number; address: string;
        registers: Record<string, string>; backtrace: Frame[] }
    | { type: "step_call"; tid: number; target: string }
    | { type: "logpoint"; id: string; tid: number; pid: number; ts: string; message: string }
    | { type: "breakpoint_error"; id: string; error: string }
    | { type: "breakpoints_updated"; id: number; installed: string[]; failed: Array<[string, string]> }
    | { type: "step_failed"; tid: number; failed: string[] }
    /** A Python thread paused (GIL released) at a breakpoint or a step's
     *  end, or a Node.js main thread (the debugger worker reports it):
     *  the payload (`what` 6) holds its frames and locals. */
    | { type: "python_paused"; tid: number; pid: number; ts: string; reason: "breakpoint" | "step";
        breakpoint: string | null; hits: number; payload: number[] }
    /** Per python-memory target: [payload (`what` 7), previous payload, error]. */
    | { type: "python_memory"; id: number; results: Array<[number[] | null, number[] | null, string | null]> }
    /** An exception nothing caught: the Python tracer's payload (`what` 3). */
    | { type: "python_uncaught"; tid: number; payload: number[] };

/** How a paused thread goes on (`resume-<tid>`). */
export type ResumeOrder =
    | { action: "continue" }
    | { action: "step";
        stops: StepStop[];
        /** Step into: [from, to) of the current line, whose calls get stops too. */
        scan: [string, string] | null;
        /** The frame check of those call stops. */
        scanFrame: FrameCheck | null }
    /** A paused Python thread steps: to the next line anywhere (into), in
     *  this frame or a caller (over), or in a caller (out). */
    | { action: "py-step"; mode: "over" | "into" | "out" }
    /** A paused Python thread sets a local and stays paused (answered by
     *  python_memory with this id). */
    | { action: "py-set"; id: number; name: string; value: unknown };

/** Daemon → agent. `tracer` names the tracer a request is for
 *  (agent/src/tracers/index.ts); absent: "native", every request today. */
export type DaemonMessage =
    | { type: "hooks"; id: number; tracer?: string; action: "add"; functions: HookTarget[] | PyTarget[] | JsTarget[]; module?: string;
        /** Python only: run-time matching of code without a source file. */
        runtime?: PyRuntimeMatch;
        /** JavaScript only: how many levels deep values are previewed. */
        depth?: number;
        /** True while patterns are active: libraries loaded later must then
         *  be checked (and hooked) before their code runs. */
        watchLibraries: boolean;
        /** Hot-function sampling on/off, and the rate above which it starts. */
        sampling: boolean; hotCallsPerSecond: number;
        /** Most ms a thread loading a library waits for its hooks. */
        libraryWaitMs: number }
    | { type: "hooks"; id: number; tracer?: string; action: "remove"; functions: number[]; watchLibraries: boolean }
    /** The hooks of a library reported with `module_loaded {wait: true}`. */
    | { type: "module-hooks"; module: string; functions: HookTarget[] }
    | { type: "plans"; id: number; tracer?: string; plans: Array<[number, number[] | null]> }
    /** [expression id, label, JavaScript source]. */
    | { type: "exprs"; id: number; tracer?: string; exprs: Array<[number, string, string]> }
    | { type: "breakpoints"; id: number; set?: BreakpointSpec[]; remove: string[] }
    /** Answered with breakpoints_updated, like `breakpoints`. */
    | { type: "python-breakpoints"; id: number; set: PyBreakpointSpec[]; remove: string[] }
    /** [dotted name, depth, write, value]: module globals read or set. */
    | { type: "python-memory"; id: number; targets: Array<[string, number, boolean, unknown]> }
    | { type: "module-base"; id: number; path: string }
    | { type: "trace-ack"; tracer?: string }
    | { type: "own-output"; id: number; fds: number[] }
    | { type: "close-fds"; id: number; fds: number[] }
    | { type: "guard-forks"; id: number }
    | { type: "inherit"; id: number; journal: string }
    | { type: "flush"; id: number }
    /** Record (`on`) or stop recording the program's own socket I/O. */
    | { type: "watch-sockets"; id: number; on: boolean }
    /** Pause running thread `tid` at the first of `stops` it reaches. */
    | { type: "pause-thread"; id: number; tid: number; stops: StepStop[] }
    | { type: "own-threads"; id: number; tids: number[] }
    /** Load the language runtime in `dir` into this (attached) process. */
    | { type: "load-runtime"; id: number; tracer: string; dir: string }
    | { type: "exit-ack" }
    | { type: "crash-ack" }
    /** The answer to `ring`: the daemon drains the ring (`ok`), or the agent
     *  goes on shipping it, for `reason`. */
    | { type: "ring-attached"; ok: boolean; reason: string | null }
    | { type: "fork-barrier-ack" }
    | ({ type: `resume-${number}` } & ResumeOrder)
    | { type: `callee-${number}`; address: string | null };

/** The daemon message of type `T` (`resume-${number}` for any thread's). */
export type DaemonMessageOf<T extends DaemonMessage["type"]> = Extract<DaemonMessage, { type: T }>;

/** Sends a message to the daemon (with binary data for trace chunks). */
export function send_(msg: AgentMessage, data?: ArrayBuffer | null): void {
    send(msg, data);
}

/** Takes the next daemon message of type `type` (a one-shot `recv`). */
export function receive<T extends DaemonMessage["type"]>(
    type: T, callback: (msg: DaemonMessageOf<T>) => void,
): MessageRecvOperation {
    return recv(type, callback);
}

/** Sends `msg` and blocks this thread until the daemon answers `ackType`,
 *  so the daemon has stored the event before the process goes on (or dies). */
export function sendAndWait(msg: AgentMessage, ackType: "exit-ack" | "crash-ack"): void {
    // Register before sending so an early ack cannot be missed. wait() blocks
    // only this thread; if the bridge goes away the script is unloaded and
    // the wait ends with it.
    const op = receive(ackType, () => { /* the ack carries no data */ });
    send(msg);
    op.wait();
}
