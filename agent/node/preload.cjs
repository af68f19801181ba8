// Strobe's runtime inside a Node.js program (loaded with `--require` by the
// daemon, which sets NODE_OPTIONS and STROBE_JS_DIR for a JavaScript
// session). It does three things:
//
// 1. Has Node run each source as the copy with probes written in, when the
//    daemon made one (sources.cjs; the probes are written by
//    crates/strobe-symbols/src/resolvers/javascript/instrument.rs).
// 2. Defines the global the probes call (`__strobe`): `m`, the enabled
//    bitmap (one bit per probe index), and enter/exit functions that write
//    records, in the agent's 32-byte record format, into a ring in this
//    thread's buffer.
// 3. Shows the buffer to Strobe's Frida agent: it writes the buffer's
//    first 64 bytes to /dev/null; the agent, which watches write(), learns
//    the buffer's address from that call, writes the thread id, sets bits
//    in the bitmap as patterns come and go, and moves the ring's records
//    into its own (agent/src/tracers/javascript/).
// 4. On the main thread, starts the debugger worker (debugger.cjs), which
//    sets breakpoints and steps through the V8 inspector; it talks to the
//    agent through the debug area at the end of the main thread's buffer
//    (a SharedArrayBuffer, so the worker shares it).
//
// Buffer layout (little-endian u32 words of the first 64 bytes):
//   [0,1] magic "STROBEJS" | [2] version | [3] request (1 register,
//   2 unregister) | [4] thread id (agent) | [5] 1 once the agent took the
//   buffer | [6] head: slots written (here) | [7] tail: slots consumed
//   (agent) | [8] records dropped | [9] a dropped record's probe | [10]
//   ring slots | [11] bitmap words | [12] the watch area's offset | [13]
//   the watches' generation (agent) | [14] the debug area's offset (main
//   thread only; 0: none) | [15] 1 (agent) when breakpoints wait for the
//   program to start, 2 (debugger worker) once they are set
// then the bitmap (BITMAP_WORDS u32), the ring (RING_SLOTS x 32 bytes) and
// the watch area (WATCH_BYTES).
//
// Payloads are the Python tracer's stored form with version 3, JavaScript
// (crates/strobe-values/src/python/mod.rs): values are typed previews made
// without running the program's code (no getters, no proxies' traps, no
// toString).
"use strict";

const fs = require("fs");
const vm = require("vm");
const path = require("path");
const { isMainThread } = require("worker_threads");
const { types, inspect } = require("util");

const VERSION = 1;
const BITMAP_WORDS = (1 << 18) / 32;
const RING_SLOTS = 1 << 18;
const CTRL_BYTES = 64;
const RING_AT = CTRL_BYTES + BITMAP_WORDS * 4;
/** The watch area after the ring: u32 length + JSON the agent writes
 *  ({exprs: [[id, label, source]], plans: {probe: [ids]}, depth}), a new
 *  generation in ctrl[13] each time. */
const WATCH_BYTES = 65536;
/** The main thread's debug area, after the watch area: the debugger
 *  worker's mailboxes (layout in debugger.cjs). */
const DEBUG_BYTES = 65536 + 262144 + 65536;
/** Where the logbox is in the debug area (after the worker's two
 *  mailboxes): logpoint messages this thread writes, the agent reads. */
const LOGBOX_AT = 65536 + 262144, LOGBOX_BYTES = 65536;
/** Longest the program waits at start for breakpoints set before it ran. */
const DEBUG_START_WAIT_MS = 5000;
const KIND_ENTER = 1, KIND_EXIT = 2, KIND_PAD = 3, KIND_RAISED = 6, KIND_DETACHED = 0x400;
const FULL_RING_WAIT_MS = 500;
const PAYLOAD_MAX = 4096;
const STRING_SHOWN = 200, ITEMS_SHOWN = 16, LOCALS_SHOWN = 32;
/** Levels of a value previewed: serializationDepth, from the agent with
 *  the watches. */
let depthLimit = 3;
// Value tags (crates/strobe-values/src/python/mod.rs `Tag`).
const T = {
    None: 0, True: 1, False: 2, Int: 3, BigInt: 4, Float: 5, Str: 6, Bytes: 7, List: 8,
    Dict: 10, Set: 11, Object: 13, Deep: 14, Opaque: 15, Cut: 16, Exception: 18, Class: 19,
    Function: 20, Undefined: 21,
};

const dir = process.env.STROBE_JS_DIR || "";
/** Loaded into a running program by the agent (an attach,
 *  agent/src/tracers/javascript/attach.ts), not at start. */
const attaching = process.env.STROBE_JS_ATTACH === "1";
// Worker threads: a worker's own memory is freed when it ends, however it
// ends (`terminate()` runs none of its code), and the agent would go on
// reading it. So the main thread makes one SharedArrayBuffer of slots for
// workers, which lives as long as the main thread, and hands it to every
// worker through the environment data Node copies into each (a
// SharedArrayBuffer is shared, not copied). A worker takes a free slot;
// one that ends normally gives it back. Pool layout: POOL_SLOTS i32 slot
// states (0 free, 1 taken) in the first 64 bytes, then the slots, each a
// buffer as above with a ring of WORKER_RING_SLOTS.
const POOL_KEY = "strobe.javascript.pool";
const POOL_SLOTS = 8;
const WORKER_RING_SLOTS = 1 << 15;
const SLOT_BYTES = RING_AT + WORKER_RING_SLOTS * 32 + WATCH_BYTES;

/** This thread's buffer (a Buffer view, from its first byte) and views. */
let buffer, ctrl, bitmap, ring, ringBytes, ringSlots = 0;
/** Main thread: the workers' pool (a Buffer view) and its slot states. */
let pool = null, poolStates = null;
/** Worker: the pool slot taken (-1: none). */
let poolSlot = -1;

function useBuffer(ab, offset, slots) {
    ringSlots = slots;
    buffer = Buffer.from(ab, offset, RING_AT + slots * 32 + WATCH_BYTES);
    ctrl = new Int32Array(ab, offset, CTRL_BYTES / 4);
    bitmap = new Int32Array(ab, offset + CTRL_BYTES, BITMAP_WORDS);
    ring = new Uint32Array(ab, offset + RING_AT, slots * 8);
    ringBytes = new Uint8Array(ab, offset + RING_AT, slots * 32);
}

/** The main thread's debug area: its offset in `mainShared` (0: none). */
let debugAt = 0, mainShared = null;

/** The main thread's own buffer, and the workers' pool it shares. */
function mainBuffers() {
    const size = RING_AT + RING_SLOTS * 32 + WATCH_BYTES;
    // STROBE_JS_DEBUGGER=0: no debugger worker (no breakpoints), ~13 ms
    // less at start; the agent then finds no debug area.
    try {
        if (process.env.STROBE_JS_DEBUGGER === "0") throw new Error("no debugger");
        // Shared, so the debugger worker reads and writes the debug area.
        mainShared = new SharedArrayBuffer(size + DEBUG_BYTES);
        debugAt = size;
        useBuffer(mainShared, 0, RING_SLOTS);
        logbox = new Int32Array(mainShared, debugAt + LOGBOX_AT, 2);
        logboxBytes = new Uint8Array(mainShared, debugAt + LOGBOX_AT + 8, LOGBOX_BYTES - 8);
    } catch (_) {
        // No SharedArrayBuffer (or no debugger wanted): traced, but no breakpoints.
        const own = Buffer.allocUnsafeSlow(size);
        own.fill(0, 0, RING_AT);
        useBuffer(own.buffer, own.byteOffset, RING_SLOTS);
    }
    try {
        const shared = new SharedArrayBuffer(64 + POOL_SLOTS * SLOT_BYTES);
        require("worker_threads").setEnvironmentData(POOL_KEY, shared);
        pool = Buffer.from(shared);
        poolStates = new Int32Array(shared, 0, POOL_SLOTS);
    } catch (_) {
        // No pool (SharedArrayBuffer disabled): workers run untraced.
    }
}

/** A worker's buffer: a free slot of the main thread's pool; false when
 *  there is none (the worker runs untraced). */
function workerBuffer() {
    let shared;
    try {
        shared = require("worker_threads").getEnvironmentData(POOL_KEY);
    } catch (_) {
        return false;
    }
    if (!(shared instanceof SharedArrayBuffer)) return false;
    const states = new Int32Array(shared, 0, POOL_SLOTS);
    for (let i = 0; i < POOL_SLOTS; i++) {
        if (Atomics.compareExchange(states, i, 0, 1) !== 0) continue;
        poolSlot = i;
        poolStates = states;
        const offset = 64 + i * SLOT_BYTES;
        new Uint8Array(shared, offset, RING_AT).fill(0);
        useBuffer(shared, offset, WORKER_RING_SLOTS);
        return true;
    }
    return false;
}
const scratch = Buffer.allocUnsafeSlow(PAYLOAD_MAX + 64);
const view = new DataView(scratch.buffer, scratch.byteOffset, scratch.length);

/** Encoded parameter names by probe index (from the manifest). */
const names = [];
const encodedNames = [];
/** Errors already reported where they were thrown. */
const reported = new WeakSet();
let tid = 0, head = 0, token = 0;

// ---- Records -----------------------------------------------------------------

/** Room for `need` slots at `head` (a padding record first when they would
 *  cross the ring's end); false when the agent left the ring full too long. */
function reserve(need, probe) {
    let deadline = 0;
    for (;;) {
        const idx = head & (ringSlots - 1);
        const pad = idx + need > ringSlots ? ringSlots - idx : 0;
        if (head + pad + need - Atomics.load(ctrl, 7) <= ringSlots) {
            if (pad > 0) {
                const b = idx * 8;
                ring[b + 7] = pad - 1;
                ring[b + 6] = KIND_PAD;
                head += pad;
            }
            return true;
        }
        // The agent let the buffer go (it detached): nobody will make room.
        if (ctrl[5] !== 1) return false;
        const now = Date.now();
        if (deadline === 0) deadline = now + FULL_RING_WAIT_MS;
        else if (now > deadline) {
            ctrl[8]++;
            ctrl[9] = probe;
            return false;
        }
    }
}

/** CLOCK_MONOTONIC in ns (exact in a double for 104 days of uptime). */
function nowNs() {
    const t = process.hrtime();
    return t[0] * 1e9 + t[1];
}

/** Writes one record with the payload in `scratch[0, len)`, stamped now
 *  (or at `ns`). */
function put(probe, kind, value, len, ns) {
    const extra = (len + 31) >>> 5;
    if (!reserve(1 + extra, probe)) return;
    const idx = head & (ringSlots - 1);
    if (len > 0) ringBytes.set(scratch.subarray(0, len), (idx + 1) * 32);
    if (ns === undefined) ns = nowNs();
    const lo = ns % 4294967296;
    const b = idx * 8;
    ring[b] = lo;
    ring[b + 1] = (ns - lo) / 4294967296;
    ring[b + 2] = probe;
    ring[b + 3] = tid;
    ring[b + 4] = value;
    ring[b + 5] = 0;
    ring[b + 7] = extra;
    ring[b + 6] = kind;
    head += 1 + extra;
    Atomics.store(ctrl, 6, head);
}

// ---- Payloads ------------------------------------------------------------------

let at = 0, cut = false;

function room(n) {
    if (cut) return false;
    if (at + n > PAYLOAD_MAX) {
        if (at < PAYLOAD_MAX + 1) scratch[at++] = T.Cut;
        cut = true;
        return false;
    }
    return true;
}

function u8(v) { if (room(1)) scratch[at++] = v; }
function u32(v) { if (room(4)) { view.setUint32(at, v, true); at += 4; } }

/** A `name`: u16 length + UTF-8, at most 255 bytes. */
function name(s) {
    if (!room(2 + Math.min(s.length * 3, 255))) return;
    const n = scratch.utf8Write(s, at + 2, 255);
    view.setUint16(at, n, true);
    at += 2 + n;
}

function str(s) {
    u8(T.Str);
    const shown = s.length > STRING_SHOWN ? s.slice(0, STRING_SHOWN) : s;
    if (!room(8 + shown.length * 3)) return;
    const n = scratch.utf8Write(shown, at + 8, shown.length * 3);
    view.setUint32(at, shown.length === s.length ? n : Buffer.byteLength(s), true);
    view.setUint32(at + 4, n, true);
    at += 8 + n;
}

/** The constructor name of an object, read without running its code. */
function className(o) {
    const proto = Object.getPrototypeOf(o);
    if (proto === null) return "Object";
    const d = Object.getOwnPropertyDescriptor(proto, "constructor");
    const c = d !== undefined && "value" in d ? d.value : undefined;
    return typeof c === "function" && typeof c.name === "string" && c.name !== "" ? c.name : "Object";
}

function value(v, depth) {
    switch (typeof v) {
        case "undefined": return u8(T.Undefined);
        case "boolean": return u8(v ? T.True : T.False);
        case "number":
            if ((v | 0) === v && !Object.is(v, -0)) {
                if (!room(9)) return;
                scratch[at] = T.Int;
                view.setInt32(at + 1, v, true);
                view.setInt32(at + 5, v < 0 ? -1 : 0, true);
                at += 9;
            } else if (Number.isInteger(v) && Math.abs(v) <= Number.MAX_SAFE_INTEGER) {
                if (!room(9)) return;
                scratch[at] = T.Int;
                view.setBigInt64(at + 1, BigInt(v), true);
                at += 9;
            } else {
                if (!room(9)) return;
                scratch[at] = T.Float;
                view.setFloat64(at + 1, v, true);
                at += 9;
            }
            return;
        case "bigint": {
            // u8 flags (1 negative, 2 over 64 bits), u64 magnitude.
            if (!room(10)) return;
            const magnitude = v < 0n ? -v : v;
            scratch[at] = T.BigInt;
            scratch[at + 1] = (v < 0n ? 1 : 0) | (magnitude > 0xffffffffffffffffn ? 2 : 0);
            view.setBigUint64(at + 2, BigInt.asUintN(64, magnitude), true);
            at += 10;
            return;
        }
        case "string": return str(v);
        case "symbol": u8(T.Opaque); name("symbol"); if (room(8)) { view.setBigUint64(at, 0n, true); at += 8; } return;
        case "function":
            u8(types.isProxy(v) ? T.Opaque : /^class[\s{]/.test(Function.prototype.toString.call(v)) ? T.Class : T.Function);
            return name(types.isProxy(v) ? "Proxy" : safeName(v));
        default: return object(v, depth);
    }
}

function safeName(f) {
    const d = Object.getOwnPropertyDescriptor(f, "name");
    return d !== undefined && typeof d.value === "string" && d.value !== "" ? d.value : "(anonymous)";
}

function opaque(type) {
    u8(T.Opaque);
    name(type);
    if (room(8)) { view.setBigUint64(at, 0n, true); at += 8; }
}

function deep(type, size) {
    u8(T.Deep);
    name(type);
    if (room(8)) { view.setBigUint64(at, BigInt(size < 0 ? -1 : size) & 0xffffffffffffffffn, true); at += 8; }
}

function items(tag, list, total, depth) {
    u8(tag);
    const shown = Math.min(total, ITEMS_SHOWN);
    u32(total);
    u32(shown);
    for (let i = 0; i < shown; i++) value(list[i], depth + 1);
}

function object(o, depth) {
    if (o === null) return u8(T.None);
    if (types.isProxy(o)) return opaque("Proxy");
    if (Array.isArray(o)) {
        if (depth >= depthLimit) return deep("Array", o.length);
        return items(T.List, ownValues(o, Math.min(o.length, ITEMS_SHOWN)), o.length, depth);
    }
    if (types.isUint8Array(o)) {
        u8(T.Bytes);
        const shown = Math.min(o.length, 64);
        u32(o.length);
        u32(shown);
        if (room(shown)) { scratch.set(o.subarray(0, shown), at); at += shown; }
        return;
    }
    if (types.isNativeError(o) || o instanceof Error) return error(o, depth);
    if (types.isMap(o)) {
        if (depth >= depthLimit) return deep("Map", o.size);
        u8(T.Dict);
        const shown = Math.min(o.size, ITEMS_SHOWN);
        u32(o.size);
        u32(shown);
        let i = 0;
        for (const [k, v] of Map.prototype.entries.call(o)) {
            if (i++ >= shown) break;
            value(k, depth + 1);
            value(v, depth + 1);
        }
        return;
    }
    if (types.isSet(o)) {
        if (depth >= depthLimit) return deep("Set", o.size);
        const list = [];
        for (const v of Set.prototype.values.call(o)) { if (list.length >= ITEMS_SHOWN) break; list.push(v); }
        return items(T.Set, list, o.size, depth);
    }
    if (types.isPromise(o)) return opaque("Promise");
    if (types.isDate(o)) return str(Number.isNaN(Date.prototype.getTime.call(o)) ? "Invalid Date" : Date.prototype.toISOString.call(o));
    if (types.isRegExp(o) || types.isWeakMap(o) || types.isWeakSet(o) || ArrayBuffer.isView(o) || types.isAnyArrayBuffer(o)) {
        return opaque(className(o));
    }
    const type = className(o);
    if (depth >= depthLimit) return deep(type, -1);
    u8(T.Object);
    name(type);
    const keys = Object.keys(o);
    const shown = Math.min(keys.length, ITEMS_SHOWN);
    u32(keys.length);
    u32(shown);
    for (let i = 0; i < shown; i++) {
        name(keys[i]);
        const d = Object.getOwnPropertyDescriptor(o, keys[i]);
        if (d !== undefined && "value" in d) value(d.value, depth + 1);
        else opaque("getter");
    }
}

/** The first `n` elements of an array, read without running getters. */
function ownValues(a, n) {
    const out = new Array(n);
    for (let i = 0; i < n; i++) {
        const d = Object.getOwnPropertyDescriptor(a, i);
        out[i] = d === undefined ? undefined : "value" in d ? d.value : "<getter>";
    }
    return out;
}

/** An error: `Exception` with its class and `args` [message]. */
function error(e, depth) {
    u8(T.Exception);
    name(className(e));
    const d = Object.getOwnPropertyDescriptor(e, "message");
    items(T.List, d !== undefined && "value" in d ? [d.value] : [], d !== undefined ? 1 : 0, depth);
}

function begin(what) {
    at = 0;
    cut = false;
    view.setUint32(0, 0xffff, true);
    scratch[8] = 3;
    scratch[9] = what;
    at = 10;
}

function finish() {
    if (at > PAYLOAD_MAX) at = PAYLOAD_MAX + 1;
    view.setUint32(4, at, true);
    return at;
}

/** The probe's parameter names, encoded once: {bytes, count}. */
function namesOf(probe) {
    let enc = encodedNames[probe];
    if (enc === undefined) {
        const list = names[probe] || [];
        at = 0;
        cut = false;
        for (let i = 0; i < list.length; i++) name(list[i]);
        enc = { bytes: Buffer.from(scratch.subarray(0, at)), count: list.length };
        encodedNames[probe] = enc;
    }
    return enc;
}

// ---- Expression watches -------------------------------------------------------

/** The generation of the watches compiled below. */
let watchGen = 0;
/** Per probe: [{label, fn}], fn(...parameters, retval). */
let watchFns = [];

/** Compiles the watches the agent wrote (a new generation). */
function loadWatches() {
    watchGen = ctrl[13];
    watchFns = [];
    let spec;
    try {
        const at = ctrl[12];
        const len = buffer.readUInt32LE(at);
        spec = JSON.parse(buffer.toString("utf8", at + 4, at + 4 + len));
    } catch (_) {
        return;
    }
    if (Number.isInteger(spec.depth) && spec.depth > 0) depthLimit = spec.depth;
    const byId = new Map(spec.exprs.map(([id, label, source]) => [id, { label, source }]));
    for (const probe of Object.keys(spec.plans)) {
        const params = (names[probe] || []).map((n, i) => /^[A-Za-z_$][\w$]*$/.test(n) && n !== "retval" ? n : `__a${i}`);
        const fns = [];
        for (const id of spec.plans[probe]) {
            const w = byId.get(id);
            if (w === undefined) continue;
            let fn;
            try {
                // Compiled as `new Function` would, but through Node's vm, so
                // a program run with --disallow-code-generation-from-strings
                // still gets its watches.
                fn = vm.compileFunction(`return (${w.source}\n);`, [...params, "retval"]);
            } catch (e) {
                const why = `<does not compile here: ${e && e.message}>`;
                fn = () => why;
            }
            fns.push({ label: w.label, fn });
        }
        if (fns.length > 0) watchFns[Number(probe)] = fns;
    }
}

/** A watched call's arguments, by its token, from its enter to its exit. */
const watchedArgs = new Map();

/** The watch section of a payload: what each of the probe's watches gives
 *  over the call's arguments by name, and `retval` at its exit. */
function watchValues(probe, args, retval) {
    const fns = watchFns[probe];
    if (fns === undefined || args === undefined) return;
    u8(fns.length);
    for (const { label, fn } of fns) {
        name(label);
        let v;
        try {
            v = fn(...args, retval);
        } catch (e) {
            v = `<error: ${e && e.message}>`;
        }
        value(v, 0);
    }
}

function enterPayload(probe, args) {
    if (ctrl[13] !== watchGen) loadWatches();
    const enc = namesOf(probe);
    begin(0);
    if (args.length !== enc.count || enc.count > 255) {
        // Names and values disagree (the source changed under the
        // manifest): values only.
        scratch[10] = 0;
        at = 11;
        return finish();
    }
    scratch[10] = enc.count;
    scratch.set(enc.bytes, 11);
    at = 11 + enc.bytes.length;
    for (let i = 0; i < args.length; i++) value(args[i], 0);
    if (watchFns[probe] !== undefined) watchValues(probe, args, undefined);
    return finish();
}

// ---- What the probes call ----------------------------------------------------

/** What `__sv` holds in a probed function that threw (instrument.rs). */
const THREW = Object.freeze({ threw: true });
/** The innermost traced function a synchronous throw left, waiting for
 *  the catch clause (or the uncaught handler) that shows what was thrown:
 *  its probe and the time it threw; -1 when none. */
let pendingProbe = -1, pendingNs = 0;

function enter(probe, args, kind) {
    if (ctrl[5] !== 1) return 0;
    pendingProbe = -1;
    const t = ++token;
    put(probe, kind, kind === KIND_ENTER ? 0 : t, enterPayload(probe, args));
    if (watchFns[probe] !== undefined) watchedArgs.set(t, args);
    return t;
}

/** An exit by a throw whose value is not at hand (a synchronous function
 *  or generator has no catch): `what` 2 with no type; the value comes with
 *  the exception record `raised` writes. */
function threw(probe, kind, t) {
    watchedArgs.delete(t);
    if (pendingProbe < 0) {
        pendingProbe = probe;
        pendingNs = nowNs();
    }
    begin(2);
    name("");
    items(T.List, [], 0, 0);
    u8(1);
    put(probe, kind, kind & KIND_DETACHED ? t : 0, finish());
}

/** The exception record (kind 6, `what` 8) of the pending throw, now
 *  that its value is known. */
function raised(e) {
    if (pendingProbe < 0) return;
    const probe = pendingProbe;
    pendingProbe = -1;
    begin(8);
    errorInfo(e);
    u32(0);
    put(probe, KIND_RAISED, 0, finish(), pendingNs);
}

/** `name` type and `value` args [message] of a thrown value; remembers an
 *  object as reported. Returns whether it was reported before. */
function errorInfo(e) {
    const isObject = (typeof e === "object" && e !== null) || typeof e === "function";
    if (isObject && !types.isProxy(e)) {
        name(className(e));
        const d = Object.getOwnPropertyDescriptor(e, "message");
        items(T.List, d !== undefined && "value" in d ? [d.value] : [], d !== undefined ? 1 : 0, 0);
    } else {
        name(typeof e);
        items(T.List, [e], 1, 0);
    }
    const seen = isObject && reported.has(e);
    if (isObject && !seen) reported.add(e);
    return seen;
}

function exit(probe, kind, t, v) {
    if (v === THREW) return threw(probe, kind, t);
    pendingProbe = -1;
    begin(1);
    value(v, 0);
    if (watchFns[probe] !== undefined) {
        watchValues(probe, watchedArgs.get(t), v);
        watchedArgs.delete(t);
    }
    // A detached exit pairs with its enter by the token in the record.
    put(probe, kind, kind & KIND_DETACHED ? t : 0, finish());
}

/** The property `key` of `o` (own, else inherited) without running
 *  anything: undefined when there is none; a getter is an error. */
function descriptor(o, key, where) {
    for (let p = o; p !== null && p !== undefined; p = Object.getPrototypeOf(p)) {
        if (types.isProxy(p)) throw new Error(`${where} is behind a Proxy, which Strobe does not run`);
        const d = Object.getOwnPropertyDescriptor(p, key);
        if (d === undefined) continue;
        if (!("value" in d)) throw new Error(`${where} is a getter, which Strobe does not run`);
        return d;
    }
    return undefined;
}

/** `v` walked along `path`'s rest (path[0] is the name `v` is). */
function walk(path, v) {
    for (let i = 1; i < path.length; i++) {
        const where = path.slice(0, i + 1).join(".");
        if (v === null || (typeof v !== "object" && typeof v !== "function")) {
            throw new Error(`${path.slice(0, i).join(".")} is ${v === null ? "null" : typeof v}: it has no ${path[i]}`);
        }
        const d = descriptor(v, path[i], where);
        if (d === undefined) throw new Error(`${where} does not exist`);
        v = d.value;
    }
    return v;
}

/** Runs `encode` on the encoder and puts back what it was doing: the
 *  inspector may run these in the middle of a probe's own encoding (a
 *  Runtime.evaluate interrupts the running thread). */
function aside(encode) {
    const saved = { at, cut, depthLimit, bytes: Buffer.from(scratch.subarray(0, Math.min(at, scratch.length))) };
    try {
        return encode();
    } finally {
        saved.bytes.copy(scratch, 0);
        at = saved.at;
        cut = saved.cut;
        depthLimit = saved.depthLimit;
    }
}

// ---- Logpoints ----------------------------------------------------------------
// A logpoint is a breakpoint whose condition (the debugger worker writes
// it) calls `__strobe.lp` and is false: the message is made on the thread
// that hit it, with no pause, and goes to the agent through the logbox, a
// ring of bytes: u32 head (written here), u32 tail (the agent), then
// LOGBOX_BYTES - 8 bytes of messages, one JSON object and a newline each.
// Only the main thread writes it (the inspector debugs only that thread).

let logbox = null, logboxBytes = null;
/** Messages that found no room, by logpoint: said once there is room. */
let logsDropped = new Map();
const logErrors = new Set();

/** A value as a logpoint shows it, without running the program's code. */
function shown(v) {
    if (typeof v === "string") return v;
    if (v === null || (typeof v !== "object" && typeof v !== "function")) return String(v);
    return inspect(v, { depth: 1, getters: false, customInspect: false, showProxy: true, breakLength: Infinity });
}

/** Appends `msg` to the logbox; false when there is no room. */
function putLog(msg) {
    const bytes = Buffer.from(JSON.stringify(msg) + "\n");
    const size = logboxBytes.length;
    const head = Atomics.load(logbox, 0) >>> 0, tail = Atomics.load(logbox, 1) >>> 0;
    if (((head - tail) >>> 0) + bytes.length > size) return false;
    const at = head % size, first = Math.min(bytes.length, size - at);
    logboxBytes.set(bytes.subarray(0, first), at);
    if (first < bytes.length) logboxBytes.set(bytes.subarray(first), 0);
    Atomics.store(logbox, 0, (head + bytes.length) | 0);
    return true;
}

function log(msg) {
    if (logbox === null) return;
    for (const [id, n] of logsDropped) {
        if (!putLog({ type: "breakpoint_error", id, error: `${n} messages of this logpoint were dropped: the agent fell behind` })) break;
        logsDropped.delete(id);
    }
    if (!putLog(msg) && msg.type === "logpoint") logsDropped.set(msg.id, (logsDropped.get(msg.id) || 0) + 1);
}

/** A logpoint hit: its message from `texts` and what `reads` give. */
function logpointHit(id, texts, reads) {
    let message = "";
    for (let i = 0; i < texts.length; i++) {
        message += texts[i];
        if (i >= reads.length) continue;
        try {
            message += shown(reads[i]());
        } catch (e) {
            const why = e instanceof Error ? `${e.name}: ${e.message}` : shown(e);
            message += `<error: ${why}>`;
            // Said once per logpoint; each message shows it too.
            if (!logErrors.has(id)) {
                logErrors.add(id);
                log({ type: "breakpoint_error", id, error: `a part of the message threw ${why}` });
            }
        }
    }
    const ts = process.hrtime.bigint().toString();
    log({ type: "logpoint", id, tid: tid || process.pid, pid: process.pid, ts, message });
}

/** A `what` 7 payload (base64): status 0, the name, the value. */
function named(path, v, depth) {
    return aside(() => {
        depthLimit = depth;
        begin(7);
        u8(0);
        name(path.join("."));
        value(v, 0);
        return scratch.toString("base64", 0, finish());
    });
}

const runtime = {
    /** The enabled bitmap: probe P is traced when bit P is set (set at
     *  start, once this thread has its buffer). */
    m: null,
    /** The marker a probed function's result holds until it returns. */
    T: THREW,
    /** Enter of a function whose exit comes before the caller's next step. */
    e(probe, args) { return enter(probe, args, KIND_ENTER); },
    /** Enter of an async function or generator: its exit pairs by token. */
    a(probe, args) { return enter(probe, args, KIND_ENTER | KIND_DETACHED); },
    /** Exit with the value returned (`undefined` when none), or THREW. */
    f(probe, t, v) { exit(probe, KIND_EXIT, t, v); },
    /** `f` of an async function or generator. */
    fa(probe, t, v) { exit(probe, KIND_EXIT | KIND_DETACHED, t, v); },
    /** An async function's rejection, with what it rejected with. */
    xa(probe, t, e) {
        watchedArgs.delete(t);
        raised(e);
        begin(2);
        const seen = errorInfo(e);
        // 0: the exit reports the exception (it was thrown here, or by
        // code nobody traces); 1: it was reported where it was thrown.
        u8(seen ? 1 : 0);
        put(probe, KIND_EXIT | KIND_DETACHED, t, finish());
    },
    /** A catch clause of a probed file caught `e`. */
    c(e) {
        if (pendingProbe >= 0) raised(e);
    },
    /** A logpoint's message, made where it was hit (the condition the
     *  debugger worker gives V8 calls this and is false: no pause):
     *  `texts` around what each of `reads` gives. Never throws. */
    lp(id, texts, reads) {
        try {
            logpointHit(id, texts, reads);
        } catch (_) {
            // A logpoint never changes what the program does.
        }
        return false;
    },
    /** A name `debug_memory` reads (the debugger worker evaluates this in
     *  a paused frame, or on the main thread): a `what` 7 payload (base64)
     *  of the value `read` gives, walked along `path`'s rest by property
     *  descriptors (a getter is never run), previewed `depth` levels. */
    peek(path, read, depth) {
        return named(path, walk(path, read()), depth);
    },
    /** Sets what `path` names to `v` (`assign` sets a bare name) and
     *  returns [its previous value's payload, its new one's]. */
    poke(path, read, assign, v, depth) {
        let before;
        if (path.length === 1) {
            before = read();
            assign(v);
        } else {
            const owner = walk(path.slice(0, -1), read());
            const key = path[path.length - 1];
            const d = descriptor(owner, key, path.join("."));
            if (d === undefined || !("value" in d) || d.writable === false) {
                throw new Error(`${path.join(".")} is not a writable data property`);
            }
            before = d.value;
            owner[key] = v;
        }
        const previous = named(path, before, depth);
        return [previous, named(path, walk(path, read()), depth)];
    },
    /** A paused frame, as the debugger worker reports it: a `what` 6
     *  payload (base64) of `frames` ([function, file, line], innermost
     *  first) and the locals the `[name, read]` pairs give. The worker
     *  evaluates this in the paused frame; a read that throws (a `let`
     *  not reached yet) leaves that local out. */
    snap(frames, locals) {
        return aside(() => snapNow(frames, locals));
    },
};
// Modules' top-level bindings, read while the program runs (`peekm`).
require(path.join(__dirname, "bindings.cjs"))(runtime, { walk, named, poke: runtime.poke });

/** `runtime.snap`'s payload. */
function snapNow(frames, locals) {
    begin(6);
    u32(frames.length);
    for (const [fn, file, line] of frames) {
        name(fn);
        name(file);
        u32(line);
    }
    const got = [];
    for (const [n, read] of locals) {
        try {
            got.push([n, read()]);
        } catch (_) {
            // Not initialized yet.
        }
    }
    const shown = Math.min(got.length, LOCALS_SHOWN);
    u8(T.Dict);
    u32(got.length);
    u32(shown);
    for (let i = 0; i < shown; i++) {
        str(got[i][0]);
        value(got[i][1], 0);
    }
    return scratch.toString("base64", 0, finish());
}

// ---- Start-up ------------------------------------------------------------------

/** Shows (request 1) or withdraws (2) the buffer whose first byte is
 *  `view[0]` (this thread's, or a pool slot) to the agent. */
function register(request, view = buffer, slots = ringSlots) {
    const c = new Int32Array(view.buffer, view.byteOffset, CTRL_BYTES / 4);
    c[0] = 0x4f525453; // "STRO"
    c[1] = 0x534a4542; // "BEJS"
    c[2] = VERSION;
    c[3] = request;
    c[10] = slots;
    c[11] = BITMAP_WORDS;
    c[12] = RING_AT + slots * 32;
    c[14] = view === buffer && debugAt !== 0 ? debugAt : 0;
    let fd = -1;
    try {
        fd = fs.openSync("/dev/null", "w");
        fs.writeSync(fd, view, 0, CTRL_BYTES);
    } catch (_) {
        // No agent can see it then; the program runs untraced.
    } finally {
        if (fd >= 0) fs.closeSync(fd);
    }
}

/** The directory debugger.cjs is started from: this file's, or the last
 *  attached session's (`runtime.attached`). */
let runtimeDir = __dirname;
/** Points sources.cjs at another session's probed copies. */
let retargetSources = null;
/** The running debugger worker's stop word (1: exit now), or null. */
let debuggerStop = null;

/** The debugger worker: started with the agent attached, idle (a poll of
 *  its mailbox every few ms) until breakpoints are set. It never keeps the
 *  program alive, and nothing it does can fail the program. It ends when
 *  the agent goes (a detach). */
function startDebugger() {
    if (mainShared === null) return;
    try {
        const { Worker } = require("worker_threads");
        // [0]: 1 the agent left, 2 the program exits; [1]: 1 while the
        // worker has an inspector session (debugger.cjs).
        const stop = new Int32Array(new SharedArrayBuffer(8));
        // The throwing frame's locals in a crash report: the worker arms
        // V8's pause on uncaught exceptions before the program runs (a
        // launch waits for it, at most DEBUG_START_WAIT_MS).
        const crashLocals = process.env.STROBE_JS_CRASH_LOCALS === "1";
        const ready = crashLocals ? new Int32Array(new SharedArrayBuffer(4)) : null;
        const w = new Worker(path.join(runtimeDir, "debugger.cjs"), {
            workerData: { strobeDebugger: true, shared: mainShared, at: debugAt, stop, crashLocals, ready, attached: attaching },
            stdout: true,
            stderr: true,
        });
        w.on("error", () => {});
        // An ending worker waits for a turn of this thread's event loop
        // (debugger.cjs mainThreadTurns): the echo is that turn.
        w.on("message", (m) => {
            if (m === "strobe-main-turn") w.postMessage(m);
        });
        w.unref();
        debuggerStop = stop;
        if (crashLocals && !attaching) Atomics.wait(ready, 0, 0, DEBUG_START_WAIT_MS);
    } catch (_) {
        // No debugger: calls are still traced.
    }
}

/** Empties the debug area's mailboxes and logbox for a new agent (what
 *  they held was for the one that left). */
function resetDebugArea() {
    if (mainShared === null) return;
    for (const box of [0, 65536]) new Int32Array(mainShared, debugAt + box, 3).fill(0);
    Atomics.store(logbox, 1, Atomics.load(logbox, 0));
}

/** What is set up once the agent took this thread's buffer: handlers
 *  added once (an attach after a detach finds them there). */
let handlersAdded = false;
function addHandlers() {
    if (handlersAdded) return;
    handlersAdded = true;
    // A throw nothing caught: its value, for the traced function it left
    // (the program's own reporting goes on as it would).
    process.on("uncaughtExceptionMonitor", (e) => runtime.c(e));
    process.on("exit", () => {
        // The debugger worker's inspector session ends before the program
        // does (else Node prints that it waits for the debugger).
        const stop = debuggerStop;
        if (isMainThread && stop !== null && Atomics.load(stop, 1) === 1) {
            Atomics.store(stop, 0, 2);
            for (let i = 0; i < 100 && Atomics.load(stop, 1) === 1; i++) Atomics.wait(stop, 1, 1, 5);
        }
        // The last logpoint messages: written, and taken by the agent
        // (it looks every few ms) before the memory goes.
        for (let i = 0; i < 250 && logbox !== null && Atomics.load(logbox, 0) !== Atomics.load(logbox, 1); i++) {
            Atomics.wait(ctrl, 15, Atomics.load(ctrl, 15), 2);
        }
        bitmap.fill(0);
        register(2);
        if (isMainThread) {
            // Before Node tears the memory down: the agent takes the last
            // records and forgets the buffers (the workers' too: a
            // terminated worker never withdrew its slot). Calls after this
            // are not recorded.
            for (let i = 0; pool !== null && i < POOL_SLOTS; i++) {
                if (Atomics.load(poolStates, i) === 0) continue;
                const off = 64 + i * SLOT_BYTES;
                register(2, pool.subarray(off, off + SLOT_BYTES), WORKER_RING_SLOTS);
            }
        } else {
            // The slot goes back to the pool for the next worker.
            Atomics.store(poolStates, poolSlot, 0);
        }
    });
}

/** A Strobe session attached to this process after an earlier one
 *  detached (the runtime stays loaded): the main thread shows its buffer
 *  to the new agent and starts a debugger worker from `dir`, the new
 *  session's copy of the runtime. Workers started before keep running
 *  untraced. */
runtime.attached = function attached(dir) {
    if (!isMainThread) return;
    runtimeDir = dir;
    if (retargetSources !== null) retargetSources(dir);
    if (debuggerStop !== null) Atomics.store(debuggerStop, 0, 1);
    debuggerStop = null;
    resetDebugArea();
    register(1);
    tid = ctrl[4];
    if (ctrl[5] !== 1) throw new Error("the agent did not take the runtime's buffer");
    startDebugger();
};

function start() {
    const { workerData } = require("worker_threads");
    // The debugger worker runs none of this (it is not the program's).
    if (!isMainThread && workerData !== null && typeof workerData === "object" && workerData.strobeDebugger === true) return;
    const traced = dir !== "" && (isMainThread ? (mainBuffers(), true) : workerBuffer());
    if (!traced) useBuffer(new ArrayBuffer(RING_AT + 32 + WATCH_BYTES), 0, 1);
    runtime.m = bitmap;
    Object.defineProperty(globalThis, "__strobe", { value: runtime, enumerable: false, writable: false, configurable: false });
    if (dir === "") return;
    // An attached program's agent may leave: the probed copies are served
    // while it is there.
    retargetSources = require(path.join(__dirname, "sources.cjs")).serveProbedSources(dir, names, {
        serving: attaching ? () => ctrl[5] === 1 : undefined,
        hooks: !attaching,
    });
    if (!traced) return;
    register(1);
    tid = ctrl[4];
    if (ctrl[5] !== 1) {
        if (attaching) throw new Error("the agent did not take the runtime's buffer");
        return;
    }
    addHandlers();
    if (isMainThread) {
        startDebugger();
        // Breakpoints set before the program started (staged, stopOnEntry)
        // wait for the worker: the program's code runs once they are set.
        if (mainShared !== null && Atomics.load(ctrl, 15) === 1) Atomics.wait(ctrl, 15, 1, DEBUG_START_WAIT_MS);
    }
}

try {
    start();
} catch (e) {
    // Whatever went wrong here, the program must run as it would: unprobed
    // (the probed copies are only loaded once start has set everything up).
    // Loaded into a running program (an attach), the error is the agent's
    // to report.
    if (attaching) throw e;
}
