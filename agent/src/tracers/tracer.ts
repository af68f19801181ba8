// The tracer extension point. A tracer records calls in the target (native
// code today; Python and JavaScript next) and ships them to the daemon. The
// agent's entry point (index.ts) reaches tracers only through this interface
// and the registry (tracers/index.ts), so a new tracer is one new module
// implementing `Tracer` plus one line in the registry.
//
import { CrashContext, DaemonMessageOf, PyRuntimeMatch } from "../protocol.js";

// Each request below names its tracer in an optional `tracer` field; the
// daemon leaves it out for the native tracer (every request today).

/** A daemon request addressed to a tracer. */
export interface TracerRequest {
    /** The tracer the request is for (Tracer.name); absent: "native". */
    tracer?: string;
}

/** "hooks": functions to trace (action "add") or to stop tracing ("remove"). */
export interface HookRequest extends TracerRequest {
    id: number;
    action: "add" | "remove";
    /** The image the functions are in (a path; absent: the main program). */
    module?: string;
    /** "add": what to hook, in the tracer's own terms (the native tracer's:
     *  [id, entry offset, capture plan, stack bytes, code bytes]);
     *  "remove": function ids. */
    functions: unknown[];
    /** True while patterns are active: libraries loaded later must then be
     *  checked (and hooked) before their code runs. */
    watchLibraries?: boolean;
    /** Python only: code without a source file is matched at run time by
     *  these patterns, its ids taken from the range given. */
    runtime?: PyRuntimeMatch;
    /** Hot-function sampling on/off, and the rate above which it starts. */
    sampling?: boolean;
    hotCallsPerSecond?: number;
    /** Most ms a thread loading a library waits for its hooks. */
    libraryWaitMs?: number;
    /** JavaScript only: how many levels deep values are previewed
     *  (serializationDepth; absent: unchanged). */
    depth?: number;
}

/** "plans": replaces the capture plans of hooked functions (watches changed). */
export interface PlansRequest extends TracerRequest {
    type: "plans";
    id: number;
    /** (function id, plan bytes in the tracer's format or null: name and
     *  timing only). The native format: crates/strobe-values/src/wire.rs. */
    plans: Array<[number, number[] | null]>;
}

/** "exprs": replaces the set of expression watches, as (id, label, source). */
export interface ExprsRequest extends TracerRequest {
    type: "exprs";
    id: number;
    exprs: Array<[number, string, string]>;
}

/** What `Tracer.sync` brings up to date. */
export type SyncRequest = PlansRequest | ExprsRequest;

/** Requests of an interpreter's debugger (Tracer.debug): its breakpoints
 *  and its names in memory, answered like the native ones. */
export type DebugRequest = DaemonMessageOf<"python-breakpoints"> | DaemonMessageOf<"python-memory">;

/**
 * One way of recording calls. Its requests arrive in order on the agent's
 * message thread; its hooks run on the program's threads, and the records
 * they leave are shipped by `drain`.
 */
export interface Tracer {
    /** The name requests use to address it (`TracerRequest.tracer`). */
    readonly name: string;

    /**
     * Called once as the agent loads, before any request. The daemon expects
     * whatever the tracer reports unasked; the native tracer sends the loaded
     * images (`modules`) and then each newly loaded one (`module_loaded`),
     * holding the loading thread, while patterns are active, until the
     * daemon's `module-hooks` have been installed.
     */
    start(): void;

    /**
     * "hooks" with action "add": traces `req.functions`. A function already
     * traced is reported installed again (its plan replaced). The daemon
     * waits for exactly one `hooks_updated` {id, installed: ids, failed:
     * [id, reason][], activeCount, ms}: a function that cannot be traced is
     * a `failed` entry with a reason for the user, never an exception.
     */
    install(req: HookRequest): void;

    /**
     * "hooks" with action "remove": stops tracing the functions (ids);
     * records already made are still shipped. Answered like `install` (one
     * `hooks_updated`; ids not traced are ignored).
     */
    remove(req: HookRequest): void;

    /**
     * "plans" / "exprs": replaces what calls of traced functions capture,
     * without hooking anything. The daemon waits for `plans_updated` {id,
     * count} or `exprs_updated` {id, errors: [label, message][]} (watches
     * that do not compile).
     */
    sync(req: SyncRequest): void;

    /**
     * Ships recorded calls as `trace` messages: {type: "trace", count} with
     * `count` records as binary data (layout: tracers/native/layout.ts),
     * plus `trace_drops` and `sampling` reports. The tracer drains itself
     * periodically; `final` is set before an exit or crash is reported, at
     * the fork barrier and when the agent unloads: everything recorded must
     * then be sent, whatever the flow control says, before it returns.
     */
    drain(final: boolean): void;

    /**
     * "trace-ack": the daemon stored `chunks` more of this tracer's `trace`
     * messages. A tracer keeps few enough unacknowledged to bound the
     * memory a slow daemon costs (the native tracer then lets its ring
     * fill, which slows the traced threads).
     */
    ack(chunks: number): void;

    /**
     * Called on the crashing thread, while it is held, before the crash is
     * reported: where that thread was in the code this tracer traces (the
     * Python tracer: its Python frames), merged into the report. Reads
     * memory only; must not take locks the crashed thread may hold.
     */
    crashContext?(): CrashContext;

    /**
     * An interpreter's own debugging requests (the Python tracer: its
     * breakpoints and its module globals): each is answered with exactly
     * one message (`breakpoints_updated`, `python_memory`).
     */
    debug?(req: DebugRequest): void;

    /**
     * "load-runtime": an attached process gets the tracer's runtime (the
     * JavaScript tracer's: agent/node/preload.cjs, from `dir`), which a
     * launch would have loaded at start. Answered with `runtime_loaded`.
     */
    loadRuntime?(req: { id: number; dir: string }): void;

    /** Whether this tracer's `debug` serves this process (a Node.js
     *  program's source-level breakpoints, which travel as Python's). */
    handlesDebug?(): boolean;

    /**
     * The agent unloads from a process that lives on (the session stops
     * after an attach). After a final drain, the journalled code patches are
     * put back (native/patch.ts), then this: nothing may call into the
     * script any more (calls in flight return through memory the teardown
     * leaves mapped).
     */
    detach(): void;
}
