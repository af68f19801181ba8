// The JavaScript debugger's agent side. The debugging itself is done in
// the program by the debugger worker (agent/node/debugger.cjs) through
// the V8 inspector; this side carries the daemon's orders to it and its
// messages back, through the two mailboxes of the debug area at the end of
// the main thread's buffer (layout in debugger.cjs). The messages are the
// Python debugger's (breakpoints_updated, python_paused, logpoint,
// breakpoint_error), so the daemon handles both alike.
import { AgentMessage, receive, send_ } from "../../protocol.js";
import { utf8 } from "../../native/memory.js";
import type { DebugRequest } from "../tracer.js";

const INBOX_BYTES = 65536;
/** The runtime's logpoint messages (preload.cjs LOGBOX_AT): a ring of
 *  bytes, u32 head (the runtime) and tail (here), then newline-ended JSON. */
const LOGBOX_AT = 65536 + 262144, LOGBOX_BYTES = 65536;
/** Control words of a runtime's buffer (preload.cjs). */
const C_TID = 4, C_DEBUG_AT = 14;
/** How often the mailboxes are looked at once the debugger is in use. */
const POLL_MS = 5;

/** Orders not yet taken by the worker. */
const orders: object[] = [];
let poller: ReturnType<typeof setInterval> | null = null;
/** The debug area; found on first use. */
let area: NativePointer | null = null;

/** Why there is no debug area while the main thread's runtime has not
 *  shown its buffer yet (the program has not started). */
const NOT_STARTED = "not started";

/** Orders given before the program started (breakpoints staged for a
 *  launch, stopOnEntry): handed over as the runtime shows its buffer,
 *  which waits for the worker to set them before the program's code runs. */
let early: { buffers: NativePointer; count: number } | null = null;

/** The main thread's debug area, among the buffers runtimes showed, or
 *  why there is none. */
function findArea(buffers: NativePointer, count: number): NativePointer | string {
    for (let i = 0; i < count; i++) {
        const c = buffers.add(i * 8).readPointer();
        if (c.isNull() || c.add(C_TID * 4).readU32() !== Process.id) continue;
        const at = c.add(C_DEBUG_AT * 4).readU32();
        if (at !== 0) return c.add(at);
        return "this Node.js program has no Strobe debugger: it was launched with STROBE_JS_DEBUGGER=0, "
            + "or without SharedArrayBuffer; launch it with debug_launch (without that variable) to set breakpoints";
    }
    return NOT_STARTED;
}

/** A condition's or a message part's syntax error, checked here (the
 *  worker checks again in V8) for orders that are answered before the
 *  worker runs. */
function syntaxError(expr: string): string | null {
    try {
        new Function(`return (${expr}\n);`);
        return null;
    } catch (e) {
        return `${(e as Error).name}: ${(e as Error).message}`;
    }
}

/** Why breakpoint `b` cannot be set (its condition or a message part does
 *  not parse), or null. */
function unparsed(b: { condition?: string | null; message?: string | null }): string | null {
    const c = b.condition == null ? null : syntaxError(b.condition);
    if (c !== null) return `the condition does not parse: ${c}`;
    for (const m of (b.message ?? "").matchAll(/\{([^{}]+)\}/g)) {
        const e = syntaxError(m[1]);
        if (e !== null) return `the message does not parse: ${e}`;
    }
    return null;
}

/** Breakpoints given before the program started: kept for the worker and
 *  answered now, those that do not parse refused. */
function keepForStart(req: DebugRequest & { type: "python-breakpoints" }): void {
    const failed: Array<[string, string]> = [];
    const set = req.set.filter(b => {
        const why = unparsed(b);
        if (why !== null) failed.push([b.id, why]);
        return why === null;
    });
    orders.push({ op: "breakpoints", id: req.id, set, remove: req.remove });
    send_({ type: "breakpoints_updated", id: req.id, installed: set.map(b => b.id), failed });
}

/** Hands the waiting orders over when the worker took the last ones. */
function giveOrders(a: NativePointer): void {
    if (orders.length === 0 || a.readS32() !== a.add(4).readS32()) return;
    const bytes = utf8(JSON.stringify(orders));
    if (bytes.length > INBOX_BYTES - 12) throw new Error(`the debugger's orders take ${bytes.length} bytes, over ${INBOX_BYTES - 12}`);
    orders.length = 0;
    a.add(12).writeByteArray(bytes);
    a.add(8).writeS32(bytes.length);
    a.writeS32(a.readS32() + 1);
}

/** Forwards the worker's messages, and the runtime's logpoint messages, to
 *  the daemon. */
function takeMessages(a: NativePointer): void {
    takeFrom(a.add(INBOX_BYTES));
    takeLogs(a.add(LOGBOX_AT));
}

/** The logpoint messages written since the last look. */
function takeLogs(box: NativePointer): void {
    const size = LOGBOX_BYTES - 8;
    const head = box.readU32(), tail = box.add(4).readU32();
    const used = (head - tail) >>> 0;
    if (used === 0) return;
    const at = tail % size, first = Math.min(used, size - at);
    const bytes = new Uint8Array(used);
    bytes.set(new Uint8Array(box.add(8 + at).readByteArray(first)!), 0);
    if (first < used) bytes.set(new Uint8Array(box.add(8).readByteArray(used - first)!), first);
    box.add(4).writeU32(head);
    // Whole again (the ring may have split a character), then as text.
    const whole = Memory.alloc(used);
    whole.writeByteArray(bytes.buffer as ArrayBuffer);
    const text = whole.readUtf8String(used) ?? "";
    for (const l of text.split("\n")) {
        if (l !== "") send_(JSON.parse(l) as AgentMessage);
    }
}

/** The batch in the mailbox at `o` (seq, ack, length, JSON array), if new. */
function takeFrom(o: NativePointer): void {
    const seq = o.readS32();
    if (seq === o.add(4).readS32()) return;
    const text = o.add(12).readUtf8String(o.add(8).readS32()) ?? "[]";
    o.add(4).writeS32(seq);
    for (const m of JSON.parse(text) as Array<AgentMessage | ProbesLive>) {
        if (m.type === "probes_live") {
            // The worker's answer to this agent (probeLive), not the daemon's.
            const done = probing.get(m.id);
            probing.delete(m.id);
            done?.(m.failed);
            continue;
        }
        if (m.type === "python_paused") awaitOrder(m.tid);
        send_(m);
    }
}

/** The worker's answer to a `probe` order: the probes it could not make
 *  live, with why. */
interface ProbesLive { type: "probes_live"; id: number; failed: Array<[number, string]> }

/** `probe` orders waiting for the worker's answer, by order id. */
const probing = new Map<number, (failed: Array<[number, string]>) => void>();
let probeOrders = 0;
/** Longest wait for the worker to probe: a swap waits out a running
 *  function for at most ~0.5 s a file. */
const PROBE_WAIT_MS = 20000;

/**
 * Makes `probes` live in an attached program: the worker swaps each one's
 * script, if the program loaded it before the attach, for its probed copy
 * (agent/node/liveprobe.cjs). `done` gets those that could not be, with
 * why (every one, when the program has no debugger worker).
 */
export function probeLive(probes: number[], buffers: NativePointer, count: number, missing: string | null,
    done: (failed: Array<[number, string]>) => void): void {
    if (area === null) {
        const located = findArea(buffers, count);
        const found = located === NOT_STARTED && missing !== null ? missing : located;
        if (typeof found === "string") {
            const why = found === NOT_STARTED ? "Strobe's runtime has not started in this Node.js program" : found;
            done(probes.map(p => [p, why]));
            return;
        }
        area = found;
    }
    const id = ++probeOrders;
    const timer = setTimeout(() => {
        if (!probing.delete(id)) return;
        done(probes.map(p => [p, `Strobe's debugger worker in the program did not answer within ${PROBE_WAIT_MS / 1000} s`]));
    }, PROBE_WAIT_MS);
    probing.set(id, failed => {
        clearTimeout(timer);
        done(failed);
    });
    orders.push({ op: "probe", id, probes });
    poller ??= setInterval(poll, POLL_MS);
    poll();
}

/** The paused main thread's next order (`resume-<tid>`), for the worker. */
function awaitOrder(tid: number): void {
    receive(`resume-${tid}`, order => {
        if (order.action === "py-set") {
            // Set by the worker in the paused frame; the thread stays paused.
            orders.push({ op: "memory", id: order.id, targets: [[order.name, 3, true, order.value]] });
            poll();
            awaitOrder(tid);
            return;
        }
        orders.push({ op: "resume", mode: order.action === "py-step" ? order.mode : "continue" });
        poll();
    });
}

function poll(): void {
    if (area === null && early !== null) {
        const found = findArea(early.buffers, early.count);
        if (found === NOT_STARTED) return;
        early = null;
        if (typeof found === "string") {
            // It started without a debugger: what was kept cannot be set.
            for (const o of orders.splice(0) as Array<{ set?: Array<{ id: string }> }>) {
                for (const b of o.set ?? []) send_({ type: "breakpoint_error", id: b.id, error: found });
            }
            return;
        }
        area = found;
    }
    if (area === null) return;
    try {
        giveOrders(area);
        takeMessages(area);
    } catch (e) {
        // The program is ending and its memory going: nothing more to do.
        if (poller !== null) clearInterval(poller);
        poller = null;
        area = null;
    }
}

/**
 * A request of the daemon's source-level debugger for a Node.js program:
 * breakpoints (`python-breakpoints`) or names to read and set
 * (`python-memory`), both done by the worker. `missing` says why an
 * attached program has no runtime (its loading failed), else null.
 */
export function debugJavaScript(req: DebugRequest, buffers: NativePointer, count: number, state: NativePointer,
    missing: string | null): void {
    if (area === null && early === null) {
        // An attached program whose runtime could not be loaded has none.
        const located = findArea(buffers, count);
        const found = located === NOT_STARTED && missing !== null ? missing : located;
        if (found === NOT_STARTED && req.type === "python-breakpoints") {
            // Before the program runs: kept for the runtime, which waits
            // for them (state word 5 → its control word 15).
            state.add(20).writeU32(1);
            early = { buffers, count };
            poller ??= setInterval(poll, POLL_MS);
            keepForStart(req);
            return;
        }
        if (typeof found === "string") {
            const why = found === NOT_STARTED
                ? "Strobe's runtime has not started in this Node.js program (an attached Node.js program has none); "
                    + "names can be read once it runs"
                : found;
            if (req.type === "python-memory") {
                send_({ type: "python_memory", id: req.id, results: req.targets.map(() => [null, null, why]) });
            } else {
                send_({ type: "breakpoints_updated", id: req.id, installed: [], failed: req.set.map(b => [b.id, why]) });
            }
            return;
        }
        area = found;
    }
    if (area === null && req.type === "python-breakpoints") {
        // More before the program started: they go with the first.
        keepForStart(req);
        return;
    }
    if (area === null) {
        send_({ type: "python_memory", id: req.id, results: (req.type === "python-memory" ? req.targets : []).map(() => [null, null, "the program has not started yet"]) });
        return;
    }
    if (req.type === "python-memory") orders.push({ op: "memory", id: req.id, targets: req.targets });
    else orders.push({ op: "breakpoints", id: req.id, set: req.set, remove: req.remove });
    poller ??= setInterval(poll, POLL_MS);
    poll();
}

/** The agent goes: the worker removes every breakpoint and lets the main
 *  thread run. */
export function releaseJavaScriptDebugger(): void {
    if (area === null) return;
    if (poller !== null) clearInterval(poller);
    poller = null;
    orders.push({ op: "release" });
    // The worker takes orders every few ms: wait (briefly) for the inbox.
    for (let i = 0; i < 40 && orders.length > 0 && area !== null; i++) {
        poll();
        if (orders.length > 0) Thread.sleep(0.005);
    }
}
