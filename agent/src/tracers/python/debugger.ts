// Python breakpoints and logpoints as the daemon sets them: conditions and
// message expressions compiled by the interpreter (a syntax error is the
// answer for that breakpoint), and the table the C side (debug_c.ts) reads,
// published whole so a Python thread reads an old or a new table, never a
// torn one. Old tables and compiled code are never freed: a thread may
// still be reading them.
import { PyBreakpointSpec } from "../../protocol.js";
import { BP_ENTRY } from "./debug_c.js";
import type { PyRuntime } from "./index.js";
import { CFG, LAYOUT } from "./offsets.js";
import { breakpointIds, LocalWrite, pausedThreads } from "./pause.js";
import { send_ } from "../../protocol.js";

interface Installed {
    spec: PyBreakpointSpec;
    index: number;
    file: NativePointer;
    qualname: NativePointer;
    condition: NativePointer;
    parts: NativePointer;
    nparts: number;
}

const installed = new Map<string, Installed>();
const retired: NativePointer[] = [];
let nextIndex = 0;
/** The table the C side reads now (null: none yet). */
let table: NativePointer | null = null;

/** Py_eval_input. */
const EVAL_INPUT = 258;

export interface Gil {
    compile(source: string, name: string): NativePointer;
    str(s: string): NativePointer;
    /** A new reference to a JSON scalar as a Python object; NULL when it is not one. */
    scalar(v: unknown): NativePointer;
    decref(o: NativePointer): void;
    lastError(): string;
}

/** Runs `work` holding the GIL (taken from this, the agent's, thread). */
export function withGil<T>(r: PyRuntime, work: (gil: Gil) => T): T {
    const fn = (name: string, ret: NativeFunctionReturnType, args: NativeFunctionArgumentType[]) =>
        new NativeFunction(r.py.fn(name), ret, args) as unknown as (...a: unknown[]) => unknown;
    const ensure = fn("PyGILState_Ensure", "int", []);
    const release = fn("PyGILState_Release", "void", ["int"]);
    const compile = fn("Py_CompileStringExFlags", "pointer", ["pointer", "pointer", "int", "pointer", "int"]);
    const fromString = fn("PyUnicode_FromString", "pointer", ["pointer"]);
    const fetch = fn("PyErr_Fetch", "void", ["pointer", "pointer", "pointer"]);
    const normalize = fn("PyErr_NormalizeException", "void", ["pointer", "pointer", "pointer"]);
    const strOf = fn("PyObject_Str", "pointer", ["pointer"]);
    const utf8 = fn("PyUnicode_AsUTF8", "pointer", ["pointer"]);
    const clear = fn("PyErr_Clear", "void", []);
    const fromLong = fn("PyLong_FromLongLong", "pointer", ["int64"]);
    const fromDouble = fn("PyFloat_FromDouble", "pointer", ["double"]);
    const incref = fn("Py_IncRef", "void", ["pointer"]);
    const decref = fn("Py_DecRef", "void", ["pointer"]);
    const gil: Gil = {
        scalar(v) {
            const single = (name: string) => {
                const o = r.py.fn(name);
                incref(o);
                return o;
            };
            if (v === null) return single("_Py_NoneStruct");
            if (v === true) return single("_Py_TrueStruct");
            if (v === false) return single("_Py_FalseStruct");
            if (typeof v === "number") {
                return (Number.isSafeInteger(v) ? fromLong(int64(v)) : fromDouble(v)) as NativePointer;
            }
            if (typeof v === "string") return fromString(Memory.allocUtf8String(v)) as NativePointer;
            return NULL;
        },
        decref(o) {
            decref(o);
        },
        compile(source, name) {
            return compile(Memory.allocUtf8String(source), Memory.allocUtf8String(name), EVAL_INPUT, NULL, -1) as NativePointer;
        },
        str(s) {
            return fromString(Memory.allocUtf8String(s)) as NativePointer;
        },
        lastError() {
            const slots = Memory.alloc(24);
            fetch(slots, slots.add(8), slots.add(16));
            normalize(slots, slots.add(8), slots.add(16));
            const value = slots.add(8).readPointer();
            let message = "it does not compile";
            if (!value.isNull()) {
                const s = strOf(value) as NativePointer;
                const p = s.isNull() ? NULL : utf8(s) as NativePointer;
                if (!p.isNull()) message = p.readUtf8String() ?? message;
                const type = slots.readPointer();
                const name = type.isNull() ? null : type.add(r.py.layout[LAYOUT.typeName]).readPointer().readCString();
                if (name !== null) message = `${name}: ${message}`;
            }
            clear();
            return message;
        },
    };
    const state = ensure();
    try {
        return work(gil);
    } finally {
        release(state);
    }
}

/** A logpoint message: literal text and `{expression}` parts. */
function messageParts(message: string): Array<{ text: string } | { expr: string }> {
    const out: Array<{ text: string } | { expr: string }> = [];
    const re = /\{([^{}]+)\}/g;
    let last = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(message)) !== null) {
        if (m.index > last) out.push({ text: message.slice(last, m.index) });
        out.push({ expr: m[1] });
        last = m.index + m[0].length;
    }
    if (last < message.length) out.push({ text: message.slice(last) });
    return out;
}

function compileOne(gil: Gil, spec: PyBreakpointSpec): Installed {
    const compileExpr = (source: string, what: string) => {
        const code = gil.compile(source, `<${what}>`);
        if (code.isNull()) throw new Error(`the ${what} ${JSON.stringify(source)} does not compile: ${gil.lastError()}`);
        return code;
    };
    const condition = spec.condition !== undefined ? compileExpr(spec.condition, "condition") : NULL;
    const parts: NativePointer[] = [];
    for (const p of spec.message !== undefined ? messageParts(spec.message) : []) {
        const o = "expr" in p ? compileExpr(p.expr, "message expression") : gil.str(p.text);
        if (o.isNull()) throw new Error(`the message could not be stored: ${gil.lastError()}`);
        parts.push(o);
    }
    const array = Memory.alloc(Math.max(1, parts.length) * 8);
    parts.forEach((p, i) => array.add(i * 8).writePointer(p));
    const file = Memory.allocUtf8String(spec.file);
    const qualname = spec.qualname === null ? NULL : Memory.allocUtf8String(spec.qualname);
    retired.push(array, file, qualname);
    return { spec, index: nextIndex++, file, qualname, condition, parts: array, nparts: parts.length };
}

/** Writes the table (a count, then one BpEntry per breakpoint; hits carried
 *  over from the table it replaces) and makes cached classifications stale. */
function publish(r: PyRuntime): void {
    const old = new Map<number, UInt64>();
    if (table !== null) {
        const n = table.readU64().toNumber();
        for (let i = 0; i < n; i++) {
            const e = table.add(8 + i * BP_ENTRY);
            old.set(e.add(28).readS32(), e.add(32).readU64());
        }
    }
    const all = [...installed.values()];
    const t = Memory.alloc(8 + Math.max(1, all.length) * BP_ENTRY);
    t.writeU64(all.length);
    all.forEach((b, i) => {
        const e = t.add(8 + i * BP_ENTRY);
        e.writePointer(b.file);
        e.add(8).writePointer(b.qualname);
        e.add(16).writeU32(b.spec.line);
        e.add(20).writeU32(b.spec.message !== undefined ? 1 : 0);
        e.add(24).writeU32(b.spec.hitCount ?? 0);
        e.add(28).writeS32(b.index);
        e.add(32).writeU64(old.get(b.index) ?? 0);
        e.add(40).writePointer(b.condition);
        e.add(48).writePointer(b.parts);
        e.add(56).writeU64(b.nparts);
    });
    retired.push(t);
    table = t;
    const word = (i: number) => r.cfg.add(i * 8);
    word(CFG.bpTable).writePointer(t);
    word(CFG.bpCount).writeU64(all.length);
    word(CFG.enabled).writeU64(1);
    word(CFG.generation).writeU64(word(CFG.generation).readU64().add(1));
}

/** Whether a thread is paused or stepping: its frames keep their tracing
 *  (and the eval stub stays) even with no breakpoint left. */
function busy(r: PyRuntime): boolean {
    return pausedThreads.size > 0 || !r.cfg.add(CFG.stepping * 8).readU64().equals(0);
}

/** Breakpoints set before the interpreter ran (staged with the launch):
 *  set when it starts (installPendingBreakpoints). */
const pendingSpecs = new Map<string, PyBreakpointSpec>();

/** Sets and removes breakpoints; returns what went in and what failed
 *  (with why), and whether the debugger still needs the eval stub. Before
 *  the interpreter runs they wait for it (a condition that then does not
 *  compile is reported as a breakpoint_error). */
export function updatePythonBreakpoints(r: PyRuntime, set: PyBreakpointSpec[], remove: string[], running = false):
    { installed: string[]; failed: Array<[string, string]>; count: number } {
    const ok: string[] = [];
    const failed: Array<[string, string]> = [];
    if (!running && r.isInitialized() === 0) {
        for (const id of remove) pendingSpecs.delete(id);
        for (const spec of set) pendingSpecs.set(spec.id, spec);
        return { installed: set.map(s => s.id), failed: [], count: pendingSpecs.size };
    }
    withGil(r, gil => {
        for (const id of remove) {
            const b = installed.get(id);
            if (b === undefined) continue;
            installed.delete(id);
            breakpointIds.delete(b.index);
        }
        for (const spec of set) {
            try {
                const b = compileOne(gil, spec);
                installed.set(spec.id, b);
                breakpointIds.set(b.index, spec.id);
                ok.push(spec.id);
            } catch (e) {
                failed.push([spec.id, (e as Error).message]);
            }
        }
        publish(r);
        const call = (name: string) => new NativeFunction(r.module[name], "void", [])();
        if (installed.size > 0) call("py_arm_running");
        else if (!busy(r)) call("py_disarm");
    });
    return { installed: ok, failed, count: installed.size + (busy(r) ? 1 : 0) };
}

/** The interpreter runs its first code (holding the GIL): breakpoints set
 *  before go in now; one that fails says why on its breakpoint. */
export function installPendingBreakpoints(r: PyRuntime): number {
    if (pendingSpecs.size === 0) return installed.size;
    const specs = [...pendingSpecs.values()];
    pendingSpecs.clear();
    // (Py_IsInitialized may still say no: the first code run is often an
    // import during start-up, and the interpreter can compile by then.)
    const { failed, count } = updatePythonBreakpoints(r, specs, [], true);
    for (const [id, error] of failed) send_({ type: "breakpoint_error", id, error });
    return count;
}

/** Reads and sets module globals (py_read_global / py_set_global in
 *  debug_c.ts): per target its payload (`what` 7), the previous one after
 *  a write, or why not. */
export function pythonMemory(r: PyRuntime, targets: Array<[string, number, boolean, unknown]>):
    Array<[number[] | null, number[] | null, string | null]> {
    if (r.isInitialized() === 0) {
        return targets.map(() => [null, null, "the interpreter has not started yet"]);
    }
    const read = new NativeFunction(r.module.py_read_global, "uint32", ["pointer", "uint32"]);
    const set = new NativeFunction(r.module.py_set_global, "int32", ["pointer", "pointer"]);
    const scratch = r.cfg.add(CFG.scratch * 8).readPointer();
    return withGil(r, gil => targets.map(([name, depth, write, value]) => {
        const dotted = Memory.allocUtf8String(name);
        const payload = () => Array.from(new Uint8Array(scratch.readByteArray(read(dotted, depth) as number)!));
        const before = payload();
        if (!write) return [before, null, null];
        // Status byte after the 10-byte header: the name must exist first.
        if (before[10] !== 0) return [before, null, null];
        const o = gil.scalar(value);
        if (o.isNull()) return [null, null, `${name} can be set to an int, float, string, boolean or null (None) only`];
        const rc = set(dotted, o) as number;
        gil.decref(o);
        if (rc === 3) {
            return [null, null, `${name} is not kept in a dict (a module, or an attribute of an object without __dict__) and cannot be set`];
        }
        return [payload(), before, null];
    }));
}

/** Sets a local of a paused frame (on its thread, holding the GIL): in the
 *  frame's locals (a dict copied back into its fast locals up to 3.12, a
 *  proxy that writes through from 3.13); answers python_memory with the new
 *  and previous values. */
export function setPausedLocal(r: PyRuntime, frame: NativePointer, write: LocalWrite): void {
    const fn = (name: string, ret: NativeFunctionReturnType, args: NativeFunctionArgumentType[]) =>
        new NativeFunction(r.py.fn(name), ret, args) as unknown as (...a: unknown[]) => unknown;
    const getLocals = fn("PyFrame_GetLocals", "pointer", ["pointer"]);
    const decref = fn("Py_DecRef", "void", ["pointer"]);
    // By mapping calls (new references): 3.13's proxy is no dict.
    const getItemRef = fn("PyMapping_GetItemString", "pointer", ["pointer", "pointer"]);
    const getItem = (locals: NativePointer, key: NativePointer) => {
        const v = getItemRef(locals, key) as NativePointer;
        if (!v.isNull()) decref(v); // still held by the locals
        return v;
    };
    const setItem = fn("PyMapping_SetItemString", "int", ["pointer", "pointer", "pointer"]);
    const toFast = fn("PyFrame_LocalsToFast", "void", ["pointer", "int"]);
    const clear = fn("PyErr_Clear", "void", []);
    const encode = new NativeFunction(r.module.py_encode_named, "uint32", ["pointer", "pointer"]);
    const scratch = r.cfg.add(CFG.scratch * 8).readPointer();
    const label = Memory.allocUtf8String(write.name);
    const payload = (v: NativePointer) => Array.from(new Uint8Array(scratch.readByteArray(encode(label, v) as number)!));
    let result: [number[] | null, number[] | null, string | null];
    withGil(r, gil => {
        const locals = getLocals(frame) as NativePointer;
        if (locals.isNull()) {
            clear();
            result = [null, null, "the paused frame's locals cannot be read"];
            return;
        }
        const old = getItem(locals, label) as NativePointer;
        if (old.isNull()) {
            clear();
            result = [null, null, `no local ${JSON.stringify(write.name)} in the paused frame`];
        } else {
            const before = payload(old);
            const v = gil.scalar(write.value);
            if (v.isNull()) {
                result = [null, null, `${write.name} can be set to an int, float, string, boolean or null (None) only`];
            } else {
                const ok = setItem(locals, label, v) === 0;
                gil.decref(v);
                if (ok) {
                    toFast(frame, 0);
                    result = [payload(getItem(locals, label) as NativePointer), before, null];
                } else {
                    clear();
                    result = [null, null, `${write.name} could not be set`];
                }
            }
        }
        decref(locals);
    });
    send_({ type: "python_memory", id: write.id, results: [result!] });
}

/** Whether breakpoints were ever set (line tracing may be left to undo). */
export function debuggerUsed(): boolean {
    return table !== null;
}

/** Detach: no breakpoint, and no new pause from here (steppers are not
 *  consulted). The mechanism's release then takes the line events away. */
export function stopDebugging(r: PyRuntime): void {
    installed.clear();
    breakpointIds.clear();
    r.cfg.add(CFG.bpCount * 8).writeU64(0);
    r.cfg.add(CFG.stepping * 8).writeU64(0);
}
