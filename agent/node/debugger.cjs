// Strobe's debugger inside a Node.js program: a worker thread the main
// thread's runtime (preload.cjs) starts, which debugs the main thread
// through the V8 inspector (`inspector.Session.connectToMainThread`).
// Breakpoints pause the main thread inside V8; this worker's own event
// loop goes on, so it can read the paused frame and wait for the daemon's
// order. Workers the program starts are not debugged (only traced).
//
// It talks to Strobe's Frida agent (agent/src/tracers/javascript/debug.ts)
// through the debug area of the main thread's buffer, two mailboxes of
// little-endian i32 words and JSON:
//
//   inbox (the agent's orders), INBOX_BYTES:  [0] seq [1] ack [2] length, JSON array
//   outbox (to the agent),      OUTBOX_BYTES: [0] seq [1] ack [2] length, JSON array
//
// then the logbox, where the main thread's runtime writes logpoint messages
// (preload.cjs `lp`: a logpoint never pauses) for the agent, alike.
//
// The writer writes only when ack == seq (the reader took the last batch),
// then bumps seq; the reader reads when seq != ack, then sets ack = seq.
// The messages out are the agent's own (`breakpoints_updated`,
// `python_paused`, `logpoint`, `breakpoint_error`): the daemon handles
// JavaScript pauses as it handles Python ones, with the same payload
// format (the runtime's `__strobe.snap`, evaluated in the paused frame).
"use strict";

const { parentPort, workerData } = require("worker_threads");
const fs = require("fs");
const inspector = require("inspector");
const path = require("path");
const vm = require("vm");

const INBOX_BYTES = 65536;
const OUTBOX_BYTES = 262144;
const POLL_MS = 5;
const IDLE_POLL_MS = 50;
/** How long an ending worker waits for the main thread's event loop (a
 *  main thread blocked in native code may never come back to it). */
const MAIN_TURN_WAIT_MS = 10000;
/** Frames a pause reports. */
const FRAMES_SHOWN = 24;
/** Strobe's own files: never a frame of the program, never stepped into. */
const OWN_FILES = ["preload.cjs", "bindings.cjs", "sources.cjs", "hooks.mjs", "debugger.cjs", "liveprobe.cjs"].map((f) => path.join(__dirname, f));
/** The probes' own locals (instrument.rs). */
const PROBE_LOCAL = /^__s(c|v|x|ce)$/;
/** How the probe code written into a function starts: its entry, the end
 *  of its body, its exit (in `finally`) and a catch clause's note. A pause
 *  there is not the program's: it steps on to the program's next line. */
const PROBE_CODE = [["var __sc=", "try{"], ["__sv=void 0", ";"], ["if(__sc)", "}"], ["__strobe.c(", ");"]];
/** From a function's entry to its probe: the header's end, `{`, directives. */
const FUNCTION_ENTRY = /^[^;{}]*\{\s*(("[^"]*"|'[^']*')\s*;?\s*)*$/;

const { shared, at, stop, crashLocals, ready, attached } = workerData;
/** The main thread's control words: [15] is 1 while it waits for the
 *  breakpoints set before it started (preload.cjs). */
const ctrl = new Int32Array(shared, 0, 16);
const inbox = new Int32Array(shared, at, 3);
const inboxBytes = new Uint8Array(shared, at + 12, INBOX_BYTES - 12);
const outbox = new Int32Array(shared, at + INBOX_BYTES, 3);
const outboxBytes = new Uint8Array(shared, at + INBOX_BYTES + 12, OUTBOX_BYTES - 12);

/** Messages waiting for the outbox. */
const outgoing = [];
let session = null;
/** Our breakpoints by agent id: {v8, spec, hits, parts (logpoint)}. */
const breakpoints = new Map();
/** V8's breakpoint id → ours. */
const byV8 = new Map();
/** The last order was a step: the next pause without a breakpoint is its end. */
let stepping = false;
/** A stop that landed in probe code: reported where the step over it ends. */
let carried = null;
/** Sources of the scripts paused in, by script id (lines). */
const sources = new Map();
/** Script URLs by script id (a paused frame's own `url` is empty). */
const urls = new Map();

function post(method, params) {
    return new Promise((resolve, reject) => {
        session.post(method, params || {}, (err, result) => (err ? reject(err) : resolve(result)));
    });
}

function nowNs() {
    // process.hrtime is CLOCK_MONOTONIC on Linux: the clock of every record.
    return process.hrtime.bigint().toString();
}

function send(msg) {
    outgoing.push(msg);
}

function flush() {
    if (outgoing.length === 0 || Atomics.load(outbox, 0) !== Atomics.load(outbox, 1)) return;
    let batch = outgoing.splice(0, outgoing.length);
    let bytes = Buffer.from(JSON.stringify(batch));
    while (bytes.length > outboxBytes.length && batch.length > 1) {
        // Too much at once: the rest goes next time.
        outgoing.unshift(...batch.splice(Math.ceil(batch.length / 2)));
        bytes = Buffer.from(JSON.stringify(batch));
    }
    if (bytes.length > outboxBytes.length) return; // one message too large: dropped
    outboxBytes.set(bytes);
    Atomics.store(outbox, 2, bytes.length);
    Atomics.add(outbox, 0, 1);
}

function takeOrders() {
    const seq = Atomics.load(inbox, 0);
    if (seq === Atomics.load(inbox, 1)) return [];
    const len = Atomics.load(inbox, 2);
    let orders = [];
    try {
        orders = JSON.parse(Buffer.from(inboxBytes.subarray(0, len)).toString("utf8"));
    } catch (_) {
        // A torn write cannot happen (the agent writes before bumping seq).
    }
    Atomics.store(inbox, 1, seq);
    return orders;
}

async function ensureSession() {
    if (session !== null) return;
    session = new inspector.Session();
    session.connectToMainThread();
    session.on("Debugger.scriptParsed", (m) => {
        urls.set(m.params.scriptId, m.params.url);
    });
    session.on("Debugger.paused", (m) => {
        onPaused(m.params).catch(() => resume("continue"));
    });
    // Word 1 of `stop`: a session is connected (the main thread's exit
    // waits for its end: Node prints "Waiting for the debugger to
    // disconnect..." when one outlives the program).
    Atomics.store(stop, 1, 1);
    await post("Debugger.enable");
    // Stepping never goes into Strobe's runtime (the probes call it).
    await post("Debugger.setBlackboxPatterns", { patterns: OWN_FILES.map(escapeRegex) });
}

function escapeRegex(s) {
    return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The script URLs of `file`: a CommonJS module's is its path, an ES
 *  module's its file: URL. */
function urlRegex(file) {
    return `^(file://)?${escapeRegex(file)}$`;
}

/** A V8 syntax check of an expression, in this worker (the same parser). */
function syntaxError(expr) {
    try {
        // Parsed, never run; through Node's vm, which a program run with
        // --disallow-code-generation-from-strings still allows.
        new vm.Script(`(${expr}\n);`);
        return null;
    } catch (e) {
        return `${e.name}: ${e.message}`;
    }
}

/** Why a breakpoint cannot be set (its condition or a message part does
 *  not parse), or null. */
function unparsed(condition, parts) {
    const c = condition != null ? syntaxError(condition) : null;
    if (c !== null) return `the condition does not parse: ${c}`;
    for (const p of parts || []) {
        const e = p.expr !== undefined ? syntaxError(p.expr) : null;
        if (e !== null) return `the message does not parse: ${e}`;
    }
    return null;
}

/** A logpoint message's parts: text and `{expression}`s. */
function messageParts(message) {
    const parts = [];
    const re = /\{([^{}]+)\}/g;
    let last = 0;
    for (let m; (m = re.exec(message)) !== null; ) {
        if (m.index > last) parts.push({ text: message.slice(last, m.index) });
        parts.push({ expr: m[1] });
        last = m.index + m[0].length;
    }
    if (last < message.length) parts.push({ text: message.slice(last) });
    return parts;
}

/** Breakpoints set so far (each gets its own URL pattern). */
let distinct = 0;

/** `__strobe.lp`'s arguments for a message's parts: its id, the texts
 *  around the expressions, and a function reading each. */
function logpointArgs(id, parts) {
    const texts = [""];
    const reads = [];
    for (const p of parts) {
        if (p.text !== undefined) {
            texts[texts.length - 1] += p.text;
        } else {
            reads.push(`() => (${p.expr}\n)`);
            texts.push("");
        }
    }
    return `${JSON.stringify(id)}, ${JSON.stringify(texts)}, [${reads.join(", ")}]`;
}

async function setBreakpoints(order) {
    const installed = [];
    const failed = [];
    await ensureSession();
    await armUncaught();
    for (const id of order.remove) {
        const bp = breakpoints.get(id);
        if (bp === undefined) continue;
        breakpoints.delete(id);
        byV8.delete(bp.v8);
        await post("Debugger.removeBreakpoint", { breakpointId: bp.v8 }).catch(() => {});
    }
    for (const spec of order.set) {
        const parts = spec.message != null ? messageParts(spec.message) : null;
        const why = unparsed(spec.condition, parts);
        if (why !== null) {
            failed.push([spec.id, why]);
            continue;
        }
        // A logpoint's condition makes its message where it is hit and is
        // false: the thread never pauses for it (preload.cjs `lp`).
        const when = spec.condition != null ? `(${spec.condition}\n)` : "true";
        const condition = parts === null ? when : `${when} && __strobe.lp(${logpointArgs(spec.id, parts)})`;
        // V8 names a breakpoint by its URL pattern and place, and refuses a
        // second one of the same name: a group matched zero times, with a
        // number of its own, keeps two on one line apart.
        distinct += 1;
        try {
            const r = await post("Debugger.setBreakpointByUrl", {
                urlRegex: `${urlRegex(spec.file)}(?:${distinct}){0}`,
                lineNumber: spec.line - 1,
                condition,
            });
            breakpoints.set(spec.id, { v8: r.breakpointId, spec, hits: 0, parts });
            byV8.set(r.breakpointId, spec.id);
            installed.push(spec.id);
        } catch (e) {
            failed.push([spec.id, String(e.message || e)]);
        }
    }
    send({ type: "breakpoints_updated", id: order.id, installed, failed });
}

/** The file a frame runs (a path; Node's own modules keep their `node:` URL). */
function fileOf(frame) {
    const url = frame.url || urls.get(frame.location.scriptId) || "";
    return url.startsWith("file://") ? decodeURIComponent(url.slice(7)) : url;
}

/** The locals of a paused frame: its local, block and catch scopes. */
async function localNames(frame) {
    const names = [];
    for (const scope of frame.scopeChain) {
        if (!["local", "block", "catch"].includes(scope.type) || scope.object.objectId === undefined) continue;
        const r = await post("Runtime.getProperties", { objectId: scope.object.objectId, ownProperties: true });
        for (const p of r.result) {
            if (!PROBE_LOCAL.test(p.name) && !names.includes(p.name) && /^[\p{L}_$][\p{L}\p{N}_$]*$/u.test(p.name)) {
                names.push(p.name);
            }
        }
    }
    return names;
}

/** Is `frame` paused at probe code (where the program's own code is not)? */
async function atProbe(frame) {
    const id = frame.location.scriptId;
    let lines = sources.get(id);
    if (lines === undefined) {
        const r = await post("Debugger.getScriptSource", { scriptId: id });
        lines = r.scriptSource.split("\n");
        sources.set(id, lines);
    }
    const text = lines[frame.location.lineNumber] || "";
    const col = frame.location.columnNumber || 0;
    // Inside a piece of probe code (V8 may stop within one: a `var`'s
    // stop is at its initializer).
    for (const [start, end] of PROBE_CODE) {
        for (let i = text.indexOf(start); i >= 0 && i <= col; i = text.indexOf(start, i + 1)) {
            const stop = text.indexOf(end, i + start.length);
            if (col < (stop < 0 ? text.length : stop + end.length)) return true;
        }
    }
    // A function's entry (V8 stops at its `{` when stepping in): the
    // probe comes right after it and any directives.
    const entry = text.indexOf(PROBE_CODE[0][0], col);
    return entry >= 0 && FUNCTION_ENTRY.test(text.slice(col, entry));
}

/** One-shot stops in the callers of the frame a step starts in, at every
 *  place left in each caller's function: V8 loses a step that leaves a
 *  function through `finally`, and every probed function has one. A stop
 *  counts only at most `returnDepth` frames deep (not in a recursion). */
let returnStops = [];
let returnDepth = 0;
/** Callers given return stops. */
const RETURN_FRAMES = 8;

async function armReturnStops(callFrames) {
    returnDepth = callFrames.length - 1;
    for (let k = 1; k < callFrames.length && k <= RETURN_FRAMES; k++) {
        const f = callFrames[k];
        const file = fileOf(f);
        // Not in Strobe's runtime nor Node's own code (a callback's caller).
        if (file === "" || file.startsWith("node:") || OWN_FILES.includes(file)) continue;
        const r = await post("Debugger.getPossibleBreakpoints", { start: f.location, restrictToFunction: true }).catch(() => ({ locations: [] }));
        for (const loc of r.locations) {
            const b = await post("Debugger.setBreakpoint", { location: loc }).catch(() => null);
            if (b !== null) returnStops.push(b.breakpointId);
        }
    }
}

async function clearReturnStops() {
    const ids = returnStops;
    returnStops = [];
    for (const id of ids) await post("Debugger.removeBreakpoint", { breakpointId: id }).catch(() => {});
}

/** Steps on from a pause whose call frames are `callFrames`. */
async function step(mode, callFrames) {
    stepping = true;
    await clearReturnStops();
    await armReturnStops(callFrames);
    // Out: to the first return stop.
    const method = { over: "Debugger.stepOver", into: "Debugger.stepInto", out: "Debugger.resume" }[mode];
    return post(method || "Debugger.stepOver").catch(() => {});
}

/** The raw call frames of the pause the daemon sees now. */
let pausedFrames = null;

/** The paused thread's `frames` (the program's, innermost first) and
 *  the top one's locals: the runtime's `what` 6 payload (base64), made in
 *  that frame by `__strobe.snap`, or null. */
async function snapshot(frames) {
    const top = frames[0];
    const names = await localNames(top);
    const shown = frames.slice(0, FRAMES_SHOWN).map((f) => [f.functionName || "<anonymous>", fileOf(f), f.location.lineNumber + 1]);
    const expression = `__strobe.snap(${JSON.stringify(shown)}, [${names.map((n) => `[${JSON.stringify(n)}, () => ${n}]`).join(", ")}])`;
    const r = await post("Debugger.evaluateOnCallFrame", {
        callFrameId: top.callFrameId,
        expression,
        silent: true,
        returnByValue: true,
    });
    return r.exceptionDetails === undefined && typeof r.result.value === "string" ? r.result.value : null;
}

/** Pausing where an exception nothing catches is thrown, for its frame's
 *  locals (`uncaught`): on from the start with STROBE_JS_CRASH_LOCALS=1,
 *  and once the program is being debugged (a breakpoint was set). V8
 *  then predicts at every throw whether a handler catches it, which makes
 *  a throw dearer (docs/BENCHMARKS.md). */
let uncaughtArmed = false;
async function armUncaught() {
    if (uncaughtArmed) return;
    uncaughtArmed = true;
    await post("Debugger.setPauseOnExceptions", { state: "uncaught" });
}

/** The main thread is about to throw (or reject with) what nothing
 *  catches: the throwing frame and its locals go to
 *  `uncaught-<pid>.json` beside this file, which the daemon reads if the
 *  process then ends on it (Node reports the error and exits; a handler of
 *  the program's may keep it running, and the next one replaces the
 *  file). Written before the main thread goes on, so it is there when
 *  the process is gone. */
async function uncaught(params) {
    let ending = false;
    try {
        const frames = params.callFrames.filter((f) => !OWN_FILES.includes(fileOf(f)));
        if (frames.length === 0) return;
        const snap = await snapshot(frames);
        if (snap === null) return;
        // Nothing will catch it (no handler of the program's): the process
        // ends on it, without this session.
        ending = params.reason === "exception" && (await evaluateOn(frames[0],
            "process.listenerCount('uncaughtException') === 0 && !process.hasUncaughtExceptionCaptureCallback()")) === true;
        const description = String((params.data && params.data.description) || "").split("\n")[0];
        const file = path.join(__dirname, `uncaught-${process.pid}.json`);
        fs.writeFileSync(`${file}.tmp`, JSON.stringify({ description, payload: Array.from(Buffer.from(snap, "base64")) }));
        fs.renameSync(`${file}.tmp`, file);
    } finally {
        if (ending) disconnect();
        else await post("Debugger.resume").catch(() => {});
    }
}

/** A value (by value) `expression` gives in `frame`; undefined if it threw. */
async function evaluateOn(frame, expression) {
    const r = await post("Debugger.evaluateOnCallFrame", { callFrameId: frame.callFrameId, expression, silent: true, returnByValue: true });
    return r.exceptionDetails === undefined ? r.result.value : undefined;
}

/** Ends the inspector session (a paused main thread runs on); the next
 *  order starts another. */
function disconnect() {
    if (session === null) return;
    session.disconnect();
    session = null;
    uncaughtArmed = false;
    Atomics.store(stop, 1, 0);
    Atomics.notify(stop, 1);
}

async function onPaused(params) {
    if (params.reason === "exception" || params.reason === "promiseRejection") return uncaught(params);
    const frames = params.callFrames.filter((f) => !OWN_FILES.includes(fileOf(f)));
    const top = frames[0];
    const tid = process.pid; // the main thread's
    const ids = params.hitBreakpoints || [];
    if (ids.length > 0 && ids.every((v) => returnStops.includes(v)) && params.callFrames.length > returnDepth) {
        // A return stop in a deeper call of the same function: not the
        // step's end.
        return post("Debugger.resume").catch(() => {});
    }
    const hit = ids.map((v) => breakpoints.get(byV8.get(v))).filter((b) => b !== undefined);
    let stopAt = null;
    for (const bp of hit) {
        // A logpoint never pauses (its condition is false).
        if (bp.parts !== null) continue;
        bp.hits++;
        if (bp.spec.hitCount != null && bp.hits < bp.spec.hitCount) continue;
        if (stopAt === null) stopAt = bp;
    }
    if (stopAt === null && carried !== null) stopAt = carried.bp;
    // While stepping, any pause ends the step (after its logpoints).
    const isStep = stepping || carried !== null;
    if (top === undefined || (stopAt === null && !isStep)) {
        // Only logpoints, a hit count not reached, or a pause of nobody's.
        carried = null;
        return resume("continue");
    }
    if (await atProbe(top)) {
        // On to the program's next line, as this stop.
        carried = { bp: stopAt };
        return step("over", params.callFrames);
    }
    await clearReturnStops();
    carried = null;
    stepping = false;
    pausedFrames = params.callFrames;
    const snap = await snapshot(frames);
    const payload = snap !== null ? Array.from(Buffer.from(snap, "base64")) : [];
    send({
        type: "python_paused",
        tid,
        pid: process.pid,
        ts: nowNs(),
        reason: stopAt !== null ? "breakpoint" : "step",
        breakpoint: stopAt !== null ? stopAt.spec.id : null,
        hits: stopAt !== null ? stopAt.hits : 0,
        payload,
    });
}

/** The daemon's order for the paused main thread. */
async function resume(mode) {
    const frames = pausedFrames;
    pausedFrames = null;
    if (mode !== "continue" && frames !== null) return step(mode, frames);
    stepping = false;
    await clearReturnStops();
    return post("Debugger.resume").catch(() => {});
}

/** A `debug_memory` target (`cart.items[0].sku`) as a path of keys; null
 *  when it is not one. */
function pathOf(target) {
    const m = /^([\p{L}_$][\p{L}\p{N}_$]*)((?:\.[\p{L}_$][\p{L}\p{N}_$]*|\[\d+\]|\["[^"]*"\]|\['[^']*'\])*)$/u.exec(target);
    if (m === null) return null;
    const path = [m[1]];
    for (const part of m[2].match(/\.[^.[]+|\[[^\]]+\]/g) || []) {
        path.push(part.startsWith(".") ? part.slice(1) : part.slice(1, -1).replace(/^["']|["']$/g, ""));
    }
    return path;
}

/** Evaluates `expression` in the paused top frame, or on the main thread
 *  (its globals) while it runs; the value (by value) or a thrown error. */
async function evaluate(expression) {
    const r = pausedFrames !== null
        ? await post("Debugger.evaluateOnCallFrame", { callFrameId: pausedFrames[0].callFrameId, expression, silent: true, returnByValue: true })
        : await post("Runtime.evaluate", { expression, silent: true, returnByValue: true });
    if (r.exceptionDetails !== undefined) {
        const e = r.result && r.result.description ? r.result.description.split("\n")[0] : r.exceptionDetails.text;
        throw new Error(e);
    }
    return r.result.value;
}

/** `[payload, previous payload, error]` of one debug_memory target:
 *  `[name, depth, write, value]`. */
async function memoryTarget([target, depth, write, value]) {
    const path = pathOf(target);
    if (path === null) {
        return [null, null, `${JSON.stringify(target)} is not a name or a path of names (like cart.items[0].sku)`];
    }
    // A name the paused frame binds is read by its own scope; anything
    // else (and everything while the program runs) is a module's
    // top-level binding (`orders.cart`) or a global, read by the runtime
    // (bindings.cjs) by descriptor like the rest of the path, so even a
    // global getter is not run.
    const bound = path[0] === "this" || (pausedFrames !== null && (await frameBinds(path[0])));
    try {
        if (!bound) {
            const args = `${JSON.stringify(path)}, ${!write ? "" : `${JSON.stringify(value)}, `}${Number(depth)}`;
            if (!write) return [Array.from(Buffer.from(await evaluate(`__strobe.peekm(${args})`), "base64")), null, null];
            const [before, now] = await evaluate(`__strobe.pokem(${args})`);
            return [Array.from(Buffer.from(now, "base64")), Array.from(Buffer.from(before, "base64")), null];
        }
        const args = `${JSON.stringify(path)}, () => ${path[0]}`;
        if (!write) {
            const b64 = await evaluate(`__strobe.peek(${args}, ${Number(depth)})`);
            return [Array.from(Buffer.from(b64, "base64")), null, null];
        }
        const [before, now] = await evaluate(
            `__strobe.poke(${args}, (__strobe_v) => { ${path[0]} = __strobe_v; }, ${JSON.stringify(value)}, ${Number(depth)})`);
        return [Array.from(Buffer.from(now, "base64")), Array.from(Buffer.from(before, "base64")), null];
    } catch (e) {
        // The runtime's errors without V8's "Error: ", and the global
        // object's name where the runtime added it.
        let why = String(e.message || e).replace(/^Error: /, "");
        if (!bound) why = why.replace(/^globalThis\./, "");
        if (!bound && pausedFrames !== null && why.startsWith(`${path[0]} is not a global`)) {
            why = `${path[0]} is not defined in the paused frame (not a local, a closure's, its module's or a global)${why.slice(why.indexOf(";"))}`;
        }
        return [null, null, why];
    }
}

/** Whether the paused top frame's scopes (not the global one) bind `name`. */
async function frameBinds(name) {
    for (const scope of pausedFrames[0].scopeChain) {
        if (scope.type === "global" || scope.object.objectId === undefined) continue;
        const r = await post("Runtime.getProperties", { objectId: scope.object.objectId, ownProperties: true });
        if (r.result.some((p) => p.name === name)) return true;
    }
    return false;
}

async function memory(order) {
    const results = [];
    for (const t of order.targets) results.push(await memoryTarget(t));
    send({ type: "python_memory", id: order.id, results });
}

/** The live probing of scripts loaded before an attach (liveprobe.cjs),
 *  made on first use. */
let live = null;

/** Makes the order's probes live in scripts the program loaded before
 *  Strobe attached; answers with those that could not be. */
async function probe(order) {
    await ensureSession();
    live ??= require("./liveprobe.cjs")(__dirname, post, urls, attached === true);
    send({ type: "probes_live", id: order.id, failed: await live.probe(order.probes) });
}

async function release() {
    for (const bp of breakpoints.values()) await post("Debugger.removeBreakpoint", { breakpointId: bp.v8 }).catch(() => {});
    breakpoints.clear();
    byV8.clear();
    if (pausedFrames !== null) await resume("continue");
    stepping = false;
}

/** The agent went (a detach: it let go of the main thread's buffer, or
 *  said "release"), or a newer worker replaced this one: every breakpoint
 *  goes, the main thread runs on, and this worker ends, leaving the
 *  program as it was. */
let ended = false;
async function end() {
    ended = true;
    if (session !== null) {
        await release().catch(() => {});
        // The scripts swapped for their probed copies get their own text
        // back (one that cannot stays probed, its probes off).
        if (live !== null) await live.restore().catch(() => {});
        disconnect();
        await mainThreadTurns(2);
    }
    // Only now: the poller is what keeps this worker alive while it waits
    // for the inspector's answers above.
    clearInterval(poller);
}

/** Resolves once the main thread has been through its event loop `n`
 *  times since the call (or after MAIN_TURN_WAIT_MS). A disconnected
 *  session's main-thread half goes on the main thread's next turn; if this
 *  worker's environment is torn down before that, Node aborts the program
 *  (SIGABRT in MainThreadInterface::Post, from the main thread deleting the
 *  session's delegate while the worker's inspector is being destroyed). */
async function mainThreadTurns(n) {
    const deadline = Date.now() + MAIN_TURN_WAIT_MS;
    for (let i = 0; i < n && Date.now() < deadline; i++) {
        await new Promise((resolve) => {
            const done = () => {
                clearTimeout(timer);
                parentPort.off("message", onMessage);
                resolve();
            };
            const onMessage = (m) => {
                if (m === MAIN_TURN) done();
            };
            const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
            parentPort.on("message", onMessage);
            parentPort.postMessage(MAIN_TURN);
        });
    }
}

/** The message the main thread echoes (preload.cjs startDebugger). */
const MAIN_TURN = "strobe-main-turn";

function agentGone() {
    return Atomics.load(ctrl, 5) !== 1 || (stop !== undefined && Atomics.load(stop, 0) === 1);
}

/** `stop` word 0 when the program exits (preload.cjs): the session ends
 *  at once. */
const EXITING = 2;

let busy = false;
async function tick() {
    if (Atomics.load(stop, 0) === EXITING) {
        disconnect();
        return;
    }
    if (busy || ended) return;
    busy = true;
    try {
        if (agentGone()) {
            await end();
            return;
        }
        const orders = takeOrders();
        for (const order of orders) {
            try {
                if (order.op === "breakpoints") await setBreakpoints(order);
                else if (order.op === "resume") await resume(order.mode);
                else if (order.op === "release") await end();
                else if (order.op === "memory") await memory(order);
                else if (order.op === "probe") await probe(order);
                if (ended) break;
            } catch (e) {
                if (order.op === "breakpoints") {
                    send({ type: "breakpoints_updated", id: order.id, installed: [], failed: order.set.map((s) => [s.id, String(e.message || e)]) });
                } else if (order.op === "probe") {
                    send({ type: "probes_live", id: order.id, failed: order.probes.map((p) => [p, String(e.message || e)]) });
                } else if (order.op === "memory") {
                    send({ type: "python_memory", id: order.id, results: order.targets.map(() => [null, null, String(e.message || e)]) });
                }
            }
        }
        // The main thread waiting for the breakpoints set before it started
        // goes on once all of them (one batch) are set.
        if (orders.length > 0 && Atomics.compareExchange(ctrl, 15, 1, 2) === 1) Atomics.notify(ctrl, 15);
    } finally {
        if (!ended) flush();
        busy = false;
    }
}

// The interval keeps this worker alive (an inspector answer does not).
// Idle, the mailbox is looked at every IDLE_POLL_MS; once breakpoints
// were set, every POLL_MS.
// Breakpoints that wait for the program to start are looked for at once
// and every POLL_MS.
// Crash locals from the start: armed before the main thread, which waits
// on `ready` (preload.cjs), runs the program.
if (crashLocals === true) {
    (async () => {
        await ensureSession();
        await armUncaught();
    })().catch(() => {}).finally(() => {
        Atomics.store(ready, 0, 1);
        Atomics.notify(ready, 0);
    });
}
const waited = Atomics.load(ctrl, 15) === 1;
let poller = setInterval(() => {
    tick();
    if (session !== null && !waited && !ended) {
        clearInterval(poller);
        poller = setInterval(tick, POLL_MS);
    }
}, waited ? POLL_MS : IDLE_POLL_MS);
if (waited) tick();
