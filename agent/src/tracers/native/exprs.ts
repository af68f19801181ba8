// Expression watches: JavaScript evaluated in the traced thread at each
// enter/exit of the functions whose plans list them, with `args` (the six
// integer argument registers as NativePointers, at enter) and `retval` (rax,
// at exit) in scope. Costs a call into JS per traced call of those functions.
import { send_ } from "../../protocol.js";
import { ExprsRequest } from "../tracer.js";
import { utf8 } from "../../native/memory.js";

interface ExprWatch { label: string; fn: (args: NativePointer[], retval: NativePointer | undefined) => unknown }
let exprs = new Map<number, ExprWatch>();
/** The expression watch ids each function's plan lists (set with its plan). */
export const exprIdsByFunc = new Map<number, number[]>();
const EXPR_MAGIC = 0x52505845;
const EXPR_VALUE_MAX = 4096;

/** Replaces the set of expression watches; answers with the ones that do not compile. */
export function updateExprs(req: ExprsRequest): void {
    const errors: Array<[string, string]> = [];
    const next = new Map<number, ExprWatch>();
    for (const [id, label, source] of req.exprs) {
        const old = exprs.get(id);
        if (old !== undefined) { next.set(id, old); continue; }
        try {
            const fn = new Function("args", "retval", `"use strict"; return (${source});`) as ExprWatch["fn"];
            next.set(id, { label, fn });
        } catch (e) {
            errors.push([label, String((e as Error).message ?? e)]);
        }
    }
    exprs = next;
    send_({ type: "exprs_updated", id: req.id, errors });
}

/** A watch value as JSON: pointers and 64-bit integers as strings. */
function exprJson(v: unknown): unknown {
    if (v === undefined || v === null) return null;
    if (typeof v === "number") return Number.isFinite(v) ? v : String(v);
    if (typeof v === "string") return v.length > EXPR_VALUE_MAX ? v.slice(0, EXPR_VALUE_MAX) + "…" : v;
    if (typeof v === "boolean") return v;
    if (v instanceof NativePointer || v instanceof Int64 || v instanceof UInt64) return v.toString();
    if (v instanceof ArrayBuffer) {
        const b = new Uint8Array(v.slice(0, 64));
        return Array.from(b, x => x.toString(16).padStart(2, "0")).join("");
    }
    try {
        const text = JSON.stringify(v);
        return text.length > EXPR_VALUE_MAX ? text.slice(0, EXPR_VALUE_MAX) + "…" : JSON.parse(text);
    } catch (e) {
        return String(v);
    }
}

/** Evaluates a function's expression watches into a record (called from the
 *  CModule, see ExprFn); built with the runtime, like the rest of tracing. */
export function makeExprCallback(): NativeCallback<"uint32", ["uint32", "uint32", "pointer", "pointer", "uint32"]> {
    return new NativeCallback((func: number, exit: number, regs: NativePointer, out: NativePointer, cap: number): number => {
    const ids = exprIdsByFunc.get(func);
    if (ids === undefined) return 0;
    const args = exit ? [] : [0, 1, 2, 3, 4, 5].map(i => regs.add(i * 8).readPointer());
    const retval = exit ? regs.readPointer() : undefined;
    const values: Record<string, unknown> = {};
    for (const id of ids) {
        const e = exprs.get(id);
        if (e === undefined) continue;
        try {
            values[e.label] = exprJson(e.fn(args, retval));
        } catch (err) {
            values[e.label] = `<error: ${String((err as Error).message ?? err)}>`;
        }
    }
    let bytes = utf8(JSON.stringify(values));
    if (bytes.length + 8 > cap) {
        const cut: Record<string, string> = {};
        for (const k of Object.keys(values)) cut[k] = "<not captured: record size limit reached>";
        bytes = utf8(JSON.stringify(cut));
        if (bytes.length + 8 > cap) return 0;
    }
    out.writeByteArray(bytes);
    out.add(bytes.length).writeU32(bytes.length);
    out.add(bytes.length + 4).writeU32(EXPR_MAGIC);
    return bytes.length + 8;
}, "uint32", ["uint32", "uint32", "pointer", "pointer", "uint32"]);
}
