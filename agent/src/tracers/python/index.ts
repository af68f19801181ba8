// The Python tracer. How Python calls reach its C side (cmodule.ts) is the
// version's mechanism: in CPython 3.11 every frame is evaluated through the
// eval stub, a frame evaluation function the embedder may install (PEP
// 523; eval_frame.ts), and from 3.12 sys.monitoring calls the C side's
// callbacks (monitoring.ts), which disable themselves on code nothing
// traces. Either way a code object is classified once (cached in its
// co_extra slot), and a traced function's enter and exit (typed arguments,
// return value or exception) go into the native runtime's ring as records
// with a Python payload, shipped by the native drain on the same clock as
// native calls. With nothing traced the mechanism is off and Python runs at
// full speed.
//
// A target is [function id, source file, co_qualname], as the daemon's
// Python resolver names it (crates/strobe-symbols/src/resolvers/python/);
// code created at run time with the same file and qualname (a function
// defined again, a nested function per call) matches too, and code with no
// source file (exec, generated methods) is matched by the run-time patterns
// (setRuntimeMatch). The tracer also reports an exception nothing caught
// (watchUncaught) and, for a crash report, the crashing thread's Python
// frames (crashContext). Beside tracing: exceptions raised in traced
// functions (raised_c.ts), expression watches (watches.ts, watches_c.ts),
// and the debugger's breakpoints, pauses, steps and names in memory
// (debugger.ts, pause.ts, debug_c.ts), reached through Tracer.debug.
import { CrashContext, DaemonMessageOf, PyRuntimeMatch, PyTarget, ScriptFrame, send_ } from "../../protocol.js";
import { installPendingBreakpoints, pythonMemory as memoryOf, setPausedLocal, stopDebugging, updatePythonBreakpoints } from "./debugger.js";
import { noteTracedIds, PAYLOAD_MAX, sharedRing } from "../ring.js";
import { DebugRequest, HookRequest, SyncRequest, Tracer } from "../tracer.js";
import { CFG, LAYOUT, pyCModuleSource, TABLE_SLOT, THREAD_SLOTS } from "./cmodule.js";
import { utf8 } from "../../native/memory.js";
import { CPython, cpython, unsupported } from "./cpython.js";
import { pauseCallbacks, setLocalWriter } from "./pause.js";
import { STEPPER_SLOTS } from "./debug_c.js";
import { compilePendingWatches, syncWatches } from "./watches.js";
import { evalFrameMechanism } from "./eval_frame.js";
import { monitoringMechanism } from "./monitoring.js";
import { MON_DEFS_BYTES, MON_ERROR_BYTES } from "./monitoring_c.js";

/** Value limits of the payloads (see CFG): depth, items, string bytes. */
const LIMITS = { depth: 3, items: 20, strBytes: 256 };

export interface PyRuntime {
    py: CPython;
    /** Kept referenced: a collected CModule frees its code. */
    module: CModule;
    /** The C side's configuration page (CFG indexes its words). */
    cfg: NativePointer;
    mechanism: Mechanism;
    mainInterpreter: NativeFunction<NativePointer, []>;
    isInitialized: NativeFunction<number, []>;
}

/** How Python calls reach the C side: one per kind of interpreter. */
export interface Mechanism {
    /** Once, when the runtime is made. */
    prepare(r: PyRuntime): void;
    /** Puts the hooks in (restart: the targets grew, so code the hooks
     *  left alone is looked at again). False when the interpreter is not
     *  up yet; throws when it refuses. */
    on(r: PyRuntime, restart: boolean): boolean;
    /** Nothing is traced and no breakpoint is set: the hooks out. */
    off(r: PyRuntime): void;
    /** Detach: nothing of the tracer's left in the interpreter. */
    release(r: PyRuntime): void;
}

let rt: PyRuntime | null = null;
/** Traced functions: id → [file, qualname]. */
const targets = new Map<number, [string, string]>();
/** Tables and strings the C side may still be reading: never freed. */
const retired: NativePointer[] = [];
/** Waiting for the interpreter to run its first code before the hooks go in. */
let installWhenReady: InvocationListener | null = null;
/** The listener on PyTraceBack_Here reporting exceptions raised in traced
 *  functions (raised_c.ts); attached while functions are traced. */
let raisedListener: InvocationListener | null = null;

function createRuntime(py: CPython): PyRuntime {
    const shared = sharedRing();
    const cfg = Memory.alloc(Process.pageSize);
    cfg.add(CFG.extraIndex * 8).writeS64(-1);
    cfg.add(CFG.depth * 8).writeU64(LIMITS.depth);
    cfg.add(CFG.items * 8).writeU64(LIMITS.items);
    cfg.add(CFG.strBytes * 8).writeU64(LIMITS.strBytes);
    // Kept referenced (in `retired`): Frida frees what Memory.alloc gave
    // once the pointer is collected, and the C side holds only the address.
    const scratch = Memory.alloc(PAYLOAD_MAX + 64);
    const threads = Memory.alloc(THREAD_SLOTS * 4);
    const steppers = Memory.alloc(STEPPER_SLOTS * 24);
    const monDefs = Memory.alloc(MON_DEFS_BYTES);
    const monError = Memory.alloc(MON_ERROR_BYTES);
    retired.push(cfg, scratch, threads, steppers, monDefs, monError);
    cfg.add(CFG.monDefs * 8).writePointer(monDefs);
    cfg.add(CFG.monError * 8).writePointer(monError);
    cfg.add(CFG.monTool * 8).writeS64(-1);
    cfg.add(CFG.steppers * 8).writePointer(steppers);
    cfg.add(CFG.scratch * 8).writePointer(scratch);
    cfg.add(CFG.threads * 8).writePointer(threads);
    const libc = (name: string) => Module.findGlobalExportByName(name)!;
    const symbols: Record<string, NativePointer> = {
        ring: shared.ring, drops: shared.drops, config: shared.config, pycfg: cfg,
        getpid: libc("getpid"), clock_gettime: libc("clock_gettime"), sched_yield: libc("sched_yield"), usleep: libc("usleep"),
        malloc: libc("malloc"), free: libc("free"), realpath: libc("realpath"),
        ...pauseCallbacks(),
    };
    for (const name of [
        "_PyEval_RequestCodeExtraIndex", "_PyCode_SetExtra", "PyUnicode_AsUTF8AndSize",
        "PyLong_AsLongLongAndOverflow", "_PyLong_NumBits", "_PyLong_Sign", "PyFloat_AsDouble", "PyDict_Next",
        "_PySet_NextEntry", "PySet_Size", "PyDict_Size", "PyErr_Fetch", "PyErr_Restore", "PyErr_Clear",
        "_Py_NoneStruct", "_Py_TrueStruct", "_Py_FalseStruct", "PyLong_Type", "PyBool_Type", "PyFloat_Type",
        "PyUnicode_Type", "PyBytes_Type", "PyByteArray_Type", "PyList_Type", "PyTuple_Type", "PyDict_Type",
        "PySet_Type", "PyFrozenSet_Type", "PyFunction_Type", "PyErr_NormalizeException",
        "PyErr_GivenExceptionMatches", "PyExc_SystemExit", "PyFrame_GetCode", "PyFrame_GetLocals", "Py_DecRef",
        "PyImport_GetModuleDict", "PyDict_GetItemString", "PyModule_GetDict", "PyLong_FromUnsignedLong",
        "PyDict_GetItem", "PyThread_get_thread_ident", "PyCode_Addr2Line",
        "PyThreadState_Get", "PyFrame_GetLineNumber", "PyFrame_GetGlobals", "PyEval_EvalCode", "PyObject_IsTrue",
        "PyObject_Str", "PyEval_SaveThread", "PyEval_RestoreThread", "Py_IncRef", "PyInterpreterState_Main",
        "PyInterpreterState_ThreadHead", "PyThreadState_Next", "PyCode_Type", "PyModule_Type",
        "PyDict_SetItemString", "PyDict_New", "PyDict_SetItem", "PyUnicode_FromString", "PyCell_Type",
        "PyDict_Merge",
        ...(py.monitoring ? [
            "PyImport_ImportModule", "PyObject_GetAttrString", "PyObject_Call", "PyTuple_New", "PyTuple_SetItem",
            "PyLong_FromLong", "PyCFunction_NewEx", "PyEval_GetFrame", "PyList_New", "PyList_Append",
        ] : []),
    ]) symbols[name] = py.fn(name);
    const module = new CModule(pyCModuleSource(py.layout, py.minor), symbols);
    setLocalWriter((frame, write) => setPausedLocal(rt!, frame, write));
    const runtime: PyRuntime = {
        py,
        module,
        cfg,
        mechanism: py.monitoring ? monitoringMechanism : evalFrameMechanism,
        mainInterpreter: new NativeFunction(py.fn("PyInterpreterState_Main"), "pointer", []),
        isInitialized: new NativeFunction(py.fn("Py_IsInitialized"), "int", []),
    };
    runtime.mechanism.prepare(runtime);
    return runtime;
}

/** The runtime for the interpreter in this process, created on first use. */
function pythonRuntime(py: CPython): PyRuntime {
    rt ??= createRuntime(py);
    return rt;
}

/** Breakpoints set now (debugger.ts keeps it): the hooks stay in while any. */
let breakpointCount = 0;

/** The hooks in while anything needs them (traced functions, run-time
 *  patterns, breakpoints), out otherwise; restart: the targets grew. */
function syncHooks(r: PyRuntime, breakpoints?: number, restart = false): void {
    if (breakpoints !== undefined) breakpointCount = breakpoints;
    const tracing = targets.size > 0 || runtimePatterns > 0;
    r.cfg.add(CFG.monTrace * 8).writeU64(tracing ? 1 : 0);
    if (tracing || breakpointCount > 0) hooksOn(r, restart);
    else hooksOff(r);
    if (tracing && raisedListener === null) {
        raisedListener = Interceptor.attach(r.py.fn("PyTraceBack_Here"), { onEnter: r.module.py_traceback_here });
    } else if (!tracing && raisedListener !== null) {
        raisedListener.detach();
        raisedListener = null;
    }
}

/** Patterns matched at run time now (see setRuntimeMatch). */
let runtimePatterns = 0;

/** Gives the C side the patterns code without a source file is matched
 *  against (runtime_match() in cmodule.ts), the main module's name and,
 *  the first time, the id range; the caller publishes (a new generation). */
function setRuntimeMatch(r: PyRuntime, m: PyRuntimeMatch): void {
    const strings = m.patterns.map(p => Memory.allocUtf8String(p));
    const array = Memory.alloc(Math.max(1, strings.length) * Process.pointerSize);
    strings.forEach((p, i) => array.add(i * Process.pointerSize).writePointer(p));
    const main = Memory.allocUtf8String(m.mainModule);
    retired.push(array, main, ...strings);
    const word = (i: number) => r.cfg.add(i * 8);
    word(CFG.patternCount).writeU64(0);
    word(CFG.patterns).writePointer(array);
    word(CFG.mainModule).writePointer(main);
    if (word(CFG.nextId).readU64().equals(0)) {
        word(CFG.nextId).writeU64(m.firstId);
        word(CFG.idLimit).writeU64(m.firstId + m.maxIds);
    }
    word(CFG.patternCount).writeU64(strings.length);
    runtimePatterns = strings.length;
}

/** Writes the target table the C side looks code objects up in (open
 *  addressing on the qualname's hash; see lookup() in cmodule.ts) and
 *  makes every cached classification stale. */
function publishTargets(r: PyRuntime): void {
    let slots = 16;
    while (slots < targets.size * 2) slots *= 2;
    const table = Memory.alloc((slots + 1) * TABLE_SLOT);
    table.writeU64(slots - 1);
    for (const [id, [file, qualname]] of targets) {
        const q = Memory.allocUtf8String(qualname);
        const f = Memory.allocUtf8String(file);
        retired.push(q, f);
        const h = fnv(qualname);
        let i = Number(h & BigInt(slots - 1));
        while (!table.add((i + 1) * TABLE_SLOT).readU64().equals(0)) i = (i + 1) % slots;
        const slot = table.add((i + 1) * TABLE_SLOT);
        slot.add(8).writeU64(id);
        slot.add(16).writePointer(q);
        slot.add(24).writePointer(f);
        slot.writeU64(uint64("0x" + h.toString(16)));
    }
    retired.push(table);
    r.cfg.add(CFG.table * 8).writePointer(table);
    const gen = r.cfg.add(CFG.generation * 8);
    gen.writeU64(gen.readU64().add(1));
}

/** FNV-1a over the UTF-8 bytes, low bit set (0 marks an empty slot): the
 *  same hash as fnv() in cmodule.ts. */
function fnv(s: string): bigint {
    let h = 1469598103934665603n;
    const mask = (1n << 64n) - 1n;
    for (const b of utf8(s)) {
        h ^= BigInt(b);
        h = (h * 1099511628211n) & mask;
    }
    return h | 1n;
}

/** Puts the hooks in, now if the interpreter is up, else as soon as it
 *  runs its first code (then watches and breakpoints staged before go in
 *  too). */
function hooksOn(r: PyRuntime, restart: boolean): void {
    if (installWhenReady !== null) return;
    if (r.isInitialized() !== 0 && r.mechanism.on(r, restart)) return;
    installWhenReady = Interceptor.attach(r.py.fn("PyEval_EvalCode"), {
        onEnter() {
            if (installWhenReady === null || !r.mechanism.on(r, true)) return;
            installWhenReady.detach();
            installWhenReady = null;
            compilePendingWatches(r);
            breakpointCount = installPendingBreakpoints(r);
        },
    });
}

function hooksOff(r: PyRuntime): void {
    installWhenReady?.detach();
    installWhenReady = null;
    r.mechanism.off(r);
}

function answer(req: HookRequest, started: number, installed: number[], failed: Array<[number, string]>): void {
    send_({ type: "hooks_updated", id: req.id, installed, failed, activeCount: targets.size, ms: Date.now() - started });
}

function install(req: HookRequest): void {
    const started = Date.now();
    const functions = req.functions as PyTarget[];
    const py = cpython();
    if (py === null) {
        answer(req, started, [], functions.map(([id]) => [id, unsupported ?? "no CPython interpreter in this process"]));
        return;
    }
    rt ??= createRuntime(py);
    for (const [id, file, qualname] of functions) targets.set(id, [file, qualname]);
    noteTracedIds(functions.map(([id]) => id));
    if (req.runtime !== undefined) setRuntimeMatch(rt, req.runtime);
    publishTargets(rt);
    rt.cfg.add(CFG.enabled * 8).writeU64(1);
    try {
        syncHooks(rt, undefined, true);
    } catch (e) {
        answer(req, started, [], functions.map(([id]) => [id, (e as Error).message]));
        return;
    }
    answer(req, started, functions.map(([id]) => id), []);
}

function remove(req: HookRequest): void {
    const started = Date.now();
    for (const id of req.functions as number[]) targets.delete(id);
    if (rt !== null) {
        publishTargets(rt);
        syncHooks(rt);
    }
    answer(req, started, [], []);
}

function sync(req: SyncRequest): void {
    const py = cpython();
    syncWatches(py === null ? null : pythonRuntime(py), req, py === null ? unsupported : null);
}

/** Reports an exception nothing caught, as the interpreter is about to
 *  print it (PyErr_PrintEx, on the thread it ended, holding the GIL): its
 *  type, args and traceback with each frame's locals. The daemon makes it
 *  the session's crash if the process then exits unsuccessfully. The C side
 *  is compiled here, on first use, so programs that trace nothing and never
 *  fail pay nothing for it. */
function watchUncaught(): void {
    const py = cpython();
    if (py === null) return;
    const printEx = py.module.findExportByName("PyErr_PrintEx");
    if (printEx === null) return;
    Interceptor.attach(printEx, {
        onEnter() {
            try {
                rt ??= createRuntime(py);
                const uncaught = new NativeFunction(rt.module.py_uncaught, "uint32", []);
                const n = uncaught() as number;
                if (n === 0) return;
                const scratch = rt.cfg.add(CFG.scratch * 8).readPointer();
                send_({ type: "python_uncaught", tid: Process.getCurrentThreadId(),
                    payload: Array.from(new Uint8Array(scratch.readByteArray(n)!)) });
            } catch (e) {
                // Reported as a script error (the daemon logs those); the
                // interpreter goes on printing it either way.
                throw new Error(`the uncaught Python exception could not be read: ${e}`);
            }
        },
    });
}

/** Most Python frames a crash report lists. */
const MAX_CRASH_FRAMES = 64;

/** The crashing thread's Python frames (a segfault in a C extension):
 *  walked from its thread state's current frame by memory reads and two
 *  interpreter calls that only read (a string's UTF-8, a line number). */
function crashContext(): CrashContext {
    const py = cpython();
    if (py === null) return {};
    const L = (k: keyof typeof LAYOUT) => py.layout[LAYOUT[k]];
    const tstate = new NativeFunction(py.fn("PyGILState_GetThisThreadState"), "pointer", [])() as NativePointer;
    if (tstate.isNull()) return {};
    const utf8 = new NativeFunction(py.fn("PyUnicode_AsUTF8AndSize"), "pointer", ["pointer", "pointer"]);
    const lineOf = new NativeFunction(py.fn("PyCode_Addr2Line"), "int", ["pointer", "int"]);
    const text = (o: NativePointer) => {
        const p = utf8(o, NULL) as NativePointer;
        return p.isNull() ? "?" : p.readUtf8String() ?? "?";
    };
    const frames: ScriptFrame[] = [];
    let frame = L("tstateFrame") >= 0 ? tstate.add(L("tstateFrame")).readPointer()
        : tstate.add(L("tstateCframe")).readPointer().add(L("cframeCurrent")).readPointer();
    // 3.12's frames owned by the C stack are the interpreter's entry shims.
    const shim = (f: NativePointer) => py.minor >= 12 && f.add(L("frameOwner")).readU8() === 3;
    while (!frame.isNull() && frames.length < MAX_CRASH_FRAMES) {
        if (shim(frame)) {
            frame = frame.add(L("framePrevious")).readPointer();
            continue;
        }
        const code = frame.add(L("frameCode")).readPointer();
        const at = frame.add(L("framePrevInstr")).readPointer().sub(code.add(L("codeAdaptive")));
        frames.push({
            function: text(code.add(L("codeQualname")).readPointer()),
            file: text(code.add(L("codeFilename")).readPointer()),
            line: lineOf(code, at.toInt32()) as number,
        });
        frame = frame.add(L("framePrevious")).readPointer();
    }
    return frames.length > 0 ? { pythonBacktrace: frames } : {};
}

/** Sets and removes Python breakpoints (debugger.ts); the hooks go in
 *  first, so frames that start meanwhile are classified too. */
function pythonBreakpoints(msg: DaemonMessageOf<"python-breakpoints">): void {
    const py = cpython();
    if (py === null) {
        const why = unsupported ?? "no CPython interpreter in this process";
        send_({ type: "breakpoints_updated", id: msg.id, installed: [], failed: msg.set.map(s => [s.id, why]) });
        return;
    }
    const r = pythonRuntime(py);
    try {
        if (msg.set.length > 0) syncHooks(r, breakpointCount + msg.set.length);
        const { installed, failed, count } = updatePythonBreakpoints(r, msg.set, msg.remove);
        syncHooks(r, count);
        send_({ type: "breakpoints_updated", id: msg.id, installed, failed });
    } catch (e) {
        const why = (e as Error).message;
        send_({ type: "breakpoints_updated", id: msg.id, installed: [], failed: msg.set.map(s => [s.id, why]) });
    }
}

/** Reads and sets module globals (debugger.ts). */
function pythonMemory(msg: DaemonMessageOf<"python-memory">): void {
    const py = cpython();
    const results: Array<[number[] | null, number[] | null, string | null]> = py === null
        ? msg.targets.map(() => [null, null, unsupported ?? "no CPython interpreter in this process"])
        : memoryOf(pythonRuntime(py), msg.targets);
    send_({ type: "python_memory", id: msg.id, results });
}

/** Unloading from a process that lives on: no frame calls into the C side
 *  from now on, and the interpreter gets its evaluation function back. */
function detach(): void {
    if (rt === null) return;
    stopDebugging(rt);
    // A thread let go from a pause (the daemon resumes every paused thread
    // before it detaches) still runs the C side until it has the GIL back;
    // the line events its code has are taken away only once it left.
    const inPause = rt.cfg.add(CFG.inPause * 8);
    for (let waited = 0; !inPause.readU64().equals(0) && waited < 200; waited++) Thread.sleep(0.01);
    rt.cfg.add(CFG.enabled * 8).writeU64(0);
    raisedListener?.detach();
    raisedListener = null;
    installWhenReady?.detach();
    installWhenReady = null;
    rt.mechanism.release(rt);
    // A thread that was already inside py_enter or py_leave (a few µs of
    // work; the ring was drained before this) leaves them before the
    // script, and their code, go away.
    Thread.sleep(0.05);
}

/** Python functions, traced through the interpreter's frame evaluation. */
export const pythonTracer: Tracer = {
    name: "python",
    start: watchUncaught,
    install,
    remove,
    sync,
    // Its records are in the native ring, which the native tracer drains.
    drain: () => { /* see above */ },
    ack: () => { /* acknowledgements go to the native tracer */ },
    detach,
    crashContext,
    debug(req: DebugRequest) {
        if (req.type === "python-breakpoints") pythonBreakpoints(req);
        else pythonMemory(req);
    },
};
