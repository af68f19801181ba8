// The JavaScript the Python debugger's C side (debug_c.ts) calls: a thread
// paused (sent to the daemon), the wait for the daemon's order (the only
// one called without the GIL), a logpoint's message and a condition that
// failed. Each runs on the Python thread concerned.
import { asOwnCode } from "../../native/own_code.js";
import { monotonicNs } from "../../breakpoints.js";
import { ResumeOrder, receive, send_ } from "../../protocol.js";
import { ORDER } from "./debug_c.js";

/** The daemon's ids of breakpoints, by the C side's index. */
export const breakpointIds = new Map<number, string>();

/** Threads paused now (between js_paused and the end of js_wait). */
export const pausedThreads = new Set<number>();

/** A local a paused thread is to set (a "py-set" order). */
export interface LocalWrite { id: number; name: string; value: unknown }

const pendingWrites = new Map<number, LocalWrite>();
let localWriter: ((frame: NativePointer, write: LocalWrite) => void) | null = null;

/** Who sets a paused frame's local (debugger.ts, given the runtime). */
export function setLocalWriter(writer: (frame: NativePointer, write: LocalWrite) => void): void {
    localWriter = writer;
}

/** Most bytes of a logpoint message or condition error read. */
const TEXT_MAX = 4096;

function text(p: NativePointer, len?: number): string {
    try {
        return (len === undefined ? p.readUtf8String(TEXT_MAX) : p.readUtf8String(len)) ?? "";
    } catch (_e) {
        // Cut inside a UTF-8 sequence: the bytes as Latin-1 rather than nothing.
        return p.readCString(len) ?? "";
    }
}

let callbacks: Record<string, NativeCallback<never, never>> | null = null;

/** The callbacks, as CModule symbols (created once, kept referenced). */
export function pauseCallbacks(): Record<string, NativePointer> {
    callbacks ??= {
        js_paused: new NativeCallback((tid: number, reason: number, bp: number, hits: UInt64,
            payload: NativePointer, len: number) => asOwnCode(() => {
            pausedThreads.add(tid);
            send_({
                type: "python_paused", tid, pid: Process.id, ts: monotonicNs(),
                reason: reason === 1 ? "step" : "breakpoint",
                breakpoint: bp >= 0 ? breakpointIds.get(bp) ?? null : null,
                hits: hits.toNumber(),
                payload: Array.from(new Uint8Array(payload.readByteArray(len)!)),
            });
        }), "void", ["uint32", "uint32", "int32", "uint64", "pointer", "uint32"]) as never,
        js_wait: new NativeCallback((tid: number): number => asOwnCode(() => {
            let order: ResumeOrder = { action: "continue" };
            // Blocks this thread only (the GIL is released by the caller);
            // ends with the script too, and then the thread runs on.
            receive(`resume-${tid}`, m => { order = m; }).wait();
            const o = order as ResumeOrder;
            if (o.action === "py-set") {
                pendingWrites.set(tid, { id: o.id, name: o.name, value: o.value });
                return ORDER.set;
            }
            pausedThreads.delete(tid);
            return o.action === "py-step" ? ORDER[o.mode] : ORDER.continue;
        }), "uint32", ["uint32"]) as never,
        js_set_local: new NativeCallback((tid: number, frame: NativePointer) => asOwnCode(() => {
            const write = pendingWrites.get(tid);
            pendingWrites.delete(tid);
            if (write === undefined) return;
            if (localWriter === null) {
                send_({ type: "python_memory", id: write.id, results: [[null, null, "the Python debugger is not ready"]] });
                return;
            }
            localWriter(frame, write);
        }), "void", ["uint32", "pointer"]) as never,
        js_log: new NativeCallback((bp: number, tid: number, message: NativePointer, len: number) => asOwnCode(() => {
            const id = breakpointIds.get(bp);
            if (id === undefined) return;
            send_({ type: "logpoint", id, tid, pid: Process.id, ts: monotonicNs(), message: text(message, len) });
        }), "void", ["int32", "uint32", "pointer", "uint32"]) as never,
        js_bp_error: new NativeCallback((bp: number, error: NativePointer) => asOwnCode(() => {
            const id = breakpointIds.get(bp);
            if (id !== undefined) send_({ type: "breakpoint_error", id, error: text(error) });
        }), "void", ["int32", "pointer"]) as never,
    };
    return callbacks as unknown as Record<string, NativePointer>;
}
