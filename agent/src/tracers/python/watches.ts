// Expression watches on traced Python functions (the C side is
// watches_c.ts): "exprs" gives the expressions, compiled here by the
// interpreter (one that does not compile is the answer for it); "plans"
// gives, per traced function, the ids of the ones read there (u16s). The
// per-function lists and their table are published whole and never freed
// (a Python thread may be reading them); compiled code is kept for the
// same reason.
import { send_ } from "../../protocol.js";
import { SyncRequest } from "../tracer.js";
import { withGil } from "./debugger.js";
import type { PyRuntime } from "./index.js";
import { CFG } from "./offsets.js";
import { WATCH_SLOT } from "./watches_c.js";

interface Compiled { label: NativePointer; code: NativePointer }

const compiled = new Map<number, Compiled>();
/** Expressions given before the interpreter ran (staged with the launch):
 *  compiled when it starts (compilePendingWatches). */
let pending: Array<[number, string, string]> | null = null;
/** Expression ids per function, as the last "plans" gave them. */
const byFunction = new Map<number, number[]>();
const retired: NativePointer[] = [];

/** Most watches the C side reads per call (watches_c.ts). */
const PER_CALL = 16;

function publish(r: PyRuntime): void {
    const lists = new Map<number, NativePointer>();
    for (const [func, ids] of byFunction) {
        const entries = ids.map(id => compiled.get(id)).filter((c): c is Compiled => c !== undefined).slice(0, PER_CALL);
        if (entries.length === 0) continue;
        const list = Memory.alloc(8 + entries.length * 16);
        list.writeU64(entries.length);
        entries.forEach((e, i) => {
            list.add(8 + i * 16).writePointer(e.label);
            list.add(16 + i * 16).writePointer(e.code);
        });
        retired.push(list);
        lists.set(func, list);
    }
    const word = (i: number) => r.cfg.add(i * 8);
    if (lists.size === 0) {
        word(CFG.watchTable).writePointer(NULL);
    } else {
        let slots = 16;
        while (slots < lists.size * 2) slots *= 2;
        const table = Memory.alloc(8 + slots * WATCH_SLOT);
        table.writeU64(slots - 1);
        for (const [func, list] of lists) {
            let i = func & (slots - 1);
            while (!table.add(8 + i * WATCH_SLOT).readU64().equals(0)) i = (i + 1) & (slots - 1);
            table.add(8 + i * WATCH_SLOT).writeU64(func);
            table.add(16 + i * WATCH_SLOT).writePointer(list);
        }
        retired.push(table);
        word(CFG.watchTable).writePointer(table);
    }
    word(CFG.generation).writeU64(word(CFG.generation).readU64().add(1));
}

/** "exprs" and "plans" for the Python tracer. */
export function syncWatches(r: PyRuntime | null, req: SyncRequest, why: string | null): void {
    if (req.type === "plans") {
        for (const [func, bytes] of req.plans) {
            const ids: number[] = [];
            for (let i = 0; bytes !== null && i + 1 < bytes.length; i += 2) ids.push(bytes[i] | (bytes[i + 1] << 8));
            if (ids.length > 0) byFunction.set(func, ids);
            else byFunction.delete(func);
        }
        if (r !== null) publish(r);
        send_({ type: "plans_updated", id: req.id, count: req.plans.length });
        return;
    }
    if (r === null) {
        send_({ type: "exprs_updated", id: req.id, errors: req.exprs.map(([, label]) => [label, why ?? "no CPython"]) });
        return;
    }
    if (r.isInitialized() === 0) {
        // Staged with the launch: compiled once the interpreter runs.
        pending = req.exprs;
        send_({ type: "exprs_updated", id: req.id, errors: [] });
        return;
    }
    send_({ type: "exprs_updated", id: req.id, errors: compile(r, req.exprs, false) });
}

/** Compiles the expressions (those already compiled are kept); returns the
 *  ones that do not compile, which are left out, or with `keepBroken`
 *  (nobody to answer) read as the compiler's message. */
function compile(r: PyRuntime, exprs: Array<[number, string, string]>, keepBroken: boolean): Array<[string, string]> {
    const errors: Array<[string, string]> = [];
    withGil(r, gil => {
        const next = new Map<number, Compiled>();
        for (const [id, label, source] of exprs) {
            const old = compiled.get(id);
            if (old !== undefined) {
                next.set(id, old);
                continue;
            }
            let code = gil.compile(source, `<watch ${label}>`);
            if (code.isNull()) {
                const why = gil.lastError();
                errors.push([label, why]);
                if (!keepBroken) continue;
                code = gil.compile(JSON.stringify(`<error: does not compile: ${why}>`), "<watch>");
                if (code.isNull()) continue;
            }
            const labelText = Memory.allocUtf8String(label);
            retired.push(labelText);
            next.set(id, { label: labelText, code });
        }
        compiled.clear();
        for (const [id, c] of next) compiled.set(id, c);
    });
    publish(r);
    return errors;
}

/** The interpreter runs its first code (holding the GIL): the staged
 *  expressions are compiled now. */
export function compilePendingWatches(r: PyRuntime): void {
    if (pending === null) return;
    const exprs = pending;
    pending = null;
    compile(r, exprs, true);
}
