// Capture plans: per function, the bytes the CModule executes on each
// call (registers and memory to copy; format in
// crates/strobe-values/src/wire.rs), installed where the hook reads them.
import { send_ } from "../../protocol.js";
import { PlansRequest } from "../tracer.js";
import { exprIdsByFunc } from "./exprs.js";
import { MAX_FUNCTIONS } from "./layout.js";
import { runtime } from "./runtime.js";

// Plans stay allocated while in use; a replaced plan may still be read by a
// hook running on another thread, so it is freed only a while later.
const livePlans = new Map<number, NativePointer>();
let retiredPlans: Array<[number, NativePointer]> = [];

/** Installs (or clears, with null) a function's capture plan. */
export function setPlan(funcId: number, bytes: number[] | null | undefined): void {
    const { plans } = runtime();
    const slot = plans.add((funcId % MAX_FUNCTIONS) * 8);
    const old = livePlans.get(funcId);
    exprIdsByFunc.delete(funcId);
    if (bytes && bytes.length >= 16) {
        const u16 = (o: number) => bytes[o] | (bytes[o + 1] << 8);
        const nExpr = u16(8);
        if (nExpr > 0) {
            const at = 16 + 24 * (u16(0) + u16(2));
            exprIdsByFunc.set(funcId, Array.from({ length: nExpr }, (_, i) => u16(at + 2 * i)));
        }
    }
    if (bytes && bytes.length > 0) {
        const mem = Memory.alloc(bytes.length);
        mem.writeByteArray(bytes);
        slot.writePointer(mem);
        livePlans.set(funcId, mem);
    } else {
        slot.writePointer(NULL);
        livePlans.delete(funcId);
    }
    if (old !== undefined) retiredPlans.push([Date.now(), old]);
}

/** Frees replaced plans no hook can still be reading (once per request:
 *  per plan it made re-planning thousands of functions quadratic). */
export function pruneRetiredPlans(): void {
    const cutoff = Date.now() - 5000;
    if (retiredPlans.length > 0 && retiredPlans[0][0] <= cutoff) {
        retiredPlans = retiredPlans.filter(([t]) => t > cutoff);
    }
}

/** True while a function has a capture plan installed. */
export function hasPlan(funcId: number): boolean {
    return livePlans.has(funcId);
}

/** Replaces capture plans of hooked functions (watches changed). */
export function updatePlans(req: PlansRequest): void {
    pruneRetiredPlans();
    for (const [funcId, bytes] of req.plans) setPlan(funcId, bytes);
    send_({ type: "plans_updated", id: req.id, count: req.plans.length });
}
