// CPython 3.12's and later's mechanism: sys.monitoring, with the C side's
// callbacks (monitoring_c.ts) registered under a tool id of their own. Its
// calls into sys.monitoring need the GIL, which this (the agent's) thread
// takes; the callbacks decide per code object, so a change of targets only
// restarts the events.
import { withGil } from "./debugger.js";
import type { Mechanism, PyRuntime } from "./index.js";
import { CFG } from "./offsets.js";

/** Whether sys.monitoring was set up for the tracer (monitoring_c.ts's
 *  mon_setup): until then there is nothing to turn off or give back, and
 *  no reason to take the GIL. */
function setUp(r: PyRuntime): boolean {
    return !r.cfg.add(CFG.monModule * 8).readPointer().isNull();
}

function call(r: PyRuntime, name: string, restart?: number): number {
    const args: NativeFunctionArgumentType[] = restart === undefined ? [] : ["uint32"];
    const fn = new NativeFunction(r.module[name], "int32", args) as unknown as (...a: number[]) => number;
    return withGil(r, () => (restart === undefined ? fn() : fn(restart)));
}

export const monitoringMechanism: Mechanism = {
    prepare() { /* nothing before the interpreter runs */ },
    on(r, restart) {
        if (r.mainInterpreter().isNull()) return false;
        if (call(r, "py_mon_sync", restart ? 1 : 0) !== 0) {
            const why = (new NativeFunction(r.module.py_mon_error, "pointer", [])() as NativePointer).readUtf8String();
            throw new Error(`sys.monitoring refused the tracer: ${why}`);
        }
        return true;
    },
    off(r) {
        // The events the C side still needs (none for tracing now).
        if (setUp(r)) call(r, "py_mon_sync", 0);
    },
    /** Waits (up to 2 s) for no thread to be inside a callback that runs
     *  Python code (a condition, a watch, a pause being left), which could
     *  let the GIL go: taking a code object's events away under it would
     *  pull the instrumentation out from under the interpreter. */
    release(r) {
        if (!setUp(r)) return;
        for (let tries = 0; tries < 200; tries++) {
            if (call(r, "py_mon_release") === 0) return;
            Thread.sleep(0.01);
        }
    },
};
