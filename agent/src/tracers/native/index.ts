// The native tracer. Each traced function starts with a 5-byte jump to a
// nearby 24-byte stub (redirectNear; Interceptor.replaceFast when that is
// not safe) that loads the function's state and jumps to one shared hook
// (machine code, hook.ts): the hook saves the argument registers, calls the
// CModule's fast_enter (which writes a record into a shared MPSC ring: 32
// bytes, plus the captured values of a function with a capture plan),
// copies the stack arguments and calls the original function through its
// trampoline, then calls fast_leave with the return registers. The original
// return address stays on the stack and the hook has unwind info
// (registered with __register_frame), so C++ exceptions and Rust panics
// unwind through traced functions. The JS side drains the ring in chunks and
// sends them as binary data. No JS runs per call (except expression watches,
// in the functions they are read in), and the thread id is cached per thread
// (no gettid per call).
//
// The parts: runtime.ts (ring, tables, CModule from cmodule.ts, hook from
// hook.ts), install.ts (install/remove, stubs), plans.ts and exprs.ts (what
// calls capture), drain.ts (shipping the ring), forkguard.ts; sizes in
// layout.ts.
// Code patching and near memory are shared with breakpoints (../../native/).
import { receive, send_ } from "../../protocol.js";
import { CONFIG_FLUSH_STAGE, CONFIG_HOOKS_OFF } from "../ring.js";
import { Tracer } from "../tracer.js";
import { drain, onTraceAck, unshareRing } from "./drain.js";
import { updateExprs } from "./exprs.js";
import { guardForks, guardModuleForks } from "./forkguard.js";
import { registerUnwindInfo, silenceHook } from "./hook.js";
import { installHooks, libraryWaitMs, removeHooks, watchingLibraries } from "./install.js";
import { updatePlans } from "./plans.js";
import { existingRuntime } from "./runtime.js";
import { asOwnCode } from "../../native/own_code.js";

/** Reports the loaded images, and from then on every newly loaded one; while
 *  patterns are active the loading thread waits for the daemon's hooks so
 *  that a library's functions are traced from their first call, for
 *  `trace.libraryWaitMs` at most: the thread is inside dlopen, holding the
 *  loader's lock, and a Frida thread that needs that lock (dlsym) while
 *  the answer is on its way would otherwise hang both for good. Past the
 *  limit the load goes on, the hooks go in when they come, and the daemon
 *  is told (its status lists the library). */
function watchModules(): void {
    preloadUnwinder();
    let initial = true;
    // On the loading thread, as Strobe's code (native/own_code.ts).
    const report = (m: Module) => asOwnCode(() => {
        // libgcc (the unwinder) may arrive after the hook was written.
        if (existingRuntime() !== null) registerUnwindInfo();
        if (initial || !m.path.startsWith("/")) return;
        guardModuleForks(m);
        if (!watchingLibraries()) {
            send_({ type: "module_loaded", path: m.path, wait: false });
            return;
        }
        // One answer per report; whichever callback takes it installs its
        // hooks and notes its library (threads loading libraries at once,
        // or an answer that came after its thread stopped waiting).
        receive("module-hooks", msg => {
            installHooks({ ...msg, action: "add", id: 0 });
            if (!gaveUp.delete(msg.module)) hooksCame.add(msg.module);
        });
        send_({ type: "module_loaded", path: m.path, wait: true });
        const limit = libraryWaitMs();
        const started = Date.now();
        // Thread.sleep lets go of the script's lock, so the answer's
        // callback runs (on the script's thread) while this one polls.
        while (!hooksCame.has(m.path) && Date.now() - started < limit) Thread.sleep(LIBRARY_POLL_S);
        if (!hooksCame.delete(m.path)) {
            gaveUp.add(m.path);
            send_({ type: "library_wait_expired", path: m.path, waitedMs: Date.now() - started });
        }
    });
    Process.attachModuleObserver({ onAdded: report });
    initial = false;
    const paths = Process.enumerateModules().map(m => m.path).filter(p => p.startsWith("/"));
    send_({ type: "modules", paths });
}

/** How often (s) a thread waiting for a library's hooks looks for them. */
const LIBRARY_POLL_S = 0.001;

/** Libraries whose hooks came and whose loading thread has not seen it yet. */
const hooksCame = new Set<string>();
/** Libraries whose loading thread stopped waiting before their hooks came. */
const gaveUp = new Set<string>();

/** Loads libgcc_s (the unwinder glibc's pthread_exit and cancellation use)
 *  now if the program has not. glibc loads it at the first thread exit
 *  otherwise, inside pthread_exit: with patterns active, that thread then
 *  waited for the daemon's hooks for it while holding the loader's lock, and
 *  a Frida thread in dlsym waited for that lock. A Python program's
 *  threads end through pthread_exit, so a traced one hung at exit in about
 *  1 run of 3 (tests/python_debug.rs, the stepper's ticker thread). */
function preloadUnwinder(): void {
    if (Process.findModuleByName("libgcc_s.so.1") !== null) return;
    try {
        Module.load("libgcc_s.so.1");
    } catch (_e) {
        // Not installed: glibc cannot load it at thread exit either.
    }
}

/** Before the script goes away from a process that lives on (the caller has
 *  put the journalled patches back): the per-thread key is deleted and the
 *  hook's calls into the CModule (freed with the script) become no-ops, so a
 *  call in flight returns through the hook without recording. What a
 *  returning call still runs through (hook, stubs, relocated prologues,
 *  FuncState) is in memory the teardown leaves mapped. */
function detach(): void {
    const rt = existingRuntime();
    if (rt === null) return;
    const keyDelete = new NativeFunction(Module.findGlobalExportByName("pthread_key_delete")!, "int", ["uint32"]);
    keyDelete(rt.config.add(24).readU32());
    rt.config.add(CONFIG_HOOKS_OFF * 8).writeU64(1);
    // The CModule goes with the script: nothing may call its flush_stage.
    rt.config.add(CONFIG_FLUSH_STAGE * 8).writeU64(0);
    silenceHook();
    unshareRing();
}

/** The native tracer, and what only it provides: the fork guard (native
 *  code forks, whichever tracer records). */
export interface NativeTracer extends Tracer {
    /** See forkguard.ts. */
    guardForks(flush: () => void): number;
}

/** Functions of native code (C, C++, Rust, …), hooked by address. */
export const nativeTracer: NativeTracer = {
    name: "native",
    start: watchModules,
    install: installHooks,
    remove: removeHooks,
    sync: req => (req.type === "plans" ? updatePlans(req) : updateExprs(req)),
    drain: final => drain(final),
    ack: onTraceAck,
    detach,
    guardForks,
};
