// CPython 3.11's mechanism: the eval stub (stub.ts) as the interpreter's
// frame evaluation function (PEP 523) while anything needs it, calling
// py_enter and py_leave (eval_frame_c.ts) around every frame. With nothing
// traced and no breakpoint, the interpreter's own evaluation function is
// put back and Python runs at full speed.
import { debuggerUsed, withGil } from "./debugger.js";
import type { Mechanism, PyRuntime } from "./index.js";
import { EvalStub, wrappedBy, writeEvalStub } from "./stub.js";

/** The interpreter's evaluation function before the stub went in; null
 *  while the stub is not installed. */
let previousEval: NativePointer | null = null;
let stub: EvalStub | null = null;

function interpreterCalls(r: PyRuntime) {
    return {
        setEvalFrame: new NativeFunction(r.py.fn("_PyInterpreterState_SetEvalFrameFunc"), "void", ["pointer", "pointer"]),
        getEvalFrame: new NativeFunction(r.py.fn("_PyInterpreterState_GetEvalFrameFunc"), "pointer", ["pointer"]),
    };
}

export const evalFrameMechanism: Mechanism = {
    prepare(r) {
        stub = writeEvalStub();
        stub.setCallees(r.module.py_enter, r.module.py_leave);
    },
    on(r) {
        if (previousEval !== null) return true;
        const interp = r.mainInterpreter();
        if (interp.isNull()) return false;
        const { setEvalFrame, getEvalFrame } = interpreterCalls(r);
        let current = getEvalFrame(interp) as NativePointer;
        if (current.equals(stub!.entry)) return true;
        // A forked child's inherited stub (the parent agent's, its callees
        // cleared by the fork handler) is replaced, not wrapped.
        current = wrappedBy(current) ?? current;
        previousEval = current;
        stub!.setEval(current);
        setEvalFrame(interp, stub!.entry);
        return true;
    },
    /** Gives the interpreter its own evaluation function back (frames in
     *  flight still return through the stub, which outlives the script). */
    off(r) {
        if (previousEval === null) return;
        const interp = r.mainInterpreter();
        const defaultEval = r.py.fn("_PyEval_EvalFrameDefault");
        if (!interp.isNull()) interpreterCalls(r).setEvalFrame(interp, previousEval.equals(defaultEval) ? NULL : previousEval);
        previousEval = null;
    },
    release(r) {
        // No trace function left on any thread (there is none to take the
        // GIL for if no breakpoint was ever set).
        if (debuggerUsed() && r.isInitialized() !== 0) {
            withGil(r, () => new NativeFunction(r.module.py_disarm, "void", [])());
        }
        stub?.setCallees(NULL, NULL);
        this.off(r);
    },
};
