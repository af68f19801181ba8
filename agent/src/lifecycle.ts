// Process lifecycle: exit codes and crash signals.
//
// Frida reaps the child itself, so the daemon never sees a wait status. The
// agent therefore reports the exit code from `_exit` (which `exit()` and a
// return from `main` reach too) and crashes from the exception handler, each
// time blocking until the daemon acknowledges.
import { onTrap } from "./breakpoints.js";
import { backtrace as stackOf } from "./backtrace.js";
import { Frame, sendAndWait } from "./protocol.js";

const SIGNALS: Record<string, string> = {
    "abort": "SIGABRT",
    "access-violation": "SIGSEGV",
    "guard-page": "SIGSEGV",
    "illegal-instruction": "SIGILL",
    "stack-overflow": "SIGSEGV",
    "arithmetic": "SIGFPE",
    "breakpoint": "SIGTRAP",
    "single-step": "SIGTRAP",
    "system": "SIGSYS",
};

let exitReported = false;
let crashReported = false;

/** `flush` runs before the exit or crash is reported, so no traced call is lost. */
export function installLifecycleHooks(flush: () => void): void {
    const exitFn = Module.findGlobalExportByName("_exit");
    const getpid = new NativeFunction(Module.findGlobalExportByName("getpid")!, "int", []);
    const ownPid = getpid() as number;
    const currentExceptionType = cxaCurrentExceptionType();
    if (exitFn !== null) {
        Interceptor.attach(exitFn, {
            onEnter(args) {
                // A forked child is not this session's process (and its
                // messages reach nobody): waiting for an ack would hang it.
                if ((getpid() as number) !== ownPid) return;
                if (exitReported) return;
                exitReported = true;
                flush();
                sendAndWait({ type: "exit", pid: Process.id, code: args[0].toInt32() }, "exit-ack");
            },
        });
    }

    const report = (kind: string, address: NativePointer, context: CpuContext,
        memory?: { operation: string; address: NativePointer }): void => {
        crashReported = true;
        let backtrace: Frame[] = [];
        try {
            backtrace = stackOf(context);
        } catch (_e) {
            // An unwinding failure must not keep the crash from being reported.
        }
        const registers: Record<string, string> = {};
        const ctx = context as unknown as Record<string, NativePointer>;
        for (const name of ["pc", "sp", "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9",
            "r10", "r11", "r12", "r13", "r14", "r15", "rip"]) {
            const v = ctx[name];
            if (v !== undefined) registers[name] = v.toString();
        }
        try { flush(); } catch (_e) { /* the crash report matters more */ }
        // During std::terminate the uncaught exception is the thread's
        // current one: its type is read, never its what() (calling into an
        // object of unknown type from a dying process is not safe).
        let exceptionType: string | undefined;
        if (kind === "abort" && currentExceptionType !== null) {
            try {
                const info = currentExceptionType() as NativePointer;
                // std::type_info is {vtable, const char *name}.
                if (!info.isNull()) exceptionType = info.add(Process.pointerSize).readPointer().readCString() ?? undefined;
            } catch (_e) { /* no type, still a crash */ }
        }
        sendAndWait({
            type: "crash",
            pid: Process.id,
            tid: Process.getCurrentThreadId(),
            signal: SIGNALS[kind] ?? kind,
            kind,
            address: address.toString(),
            memory: memory ? { operation: memory.operation, address: memory.address.toString() } : undefined,
            registers,
            backtrace,
            exceptionType,
        }, "crash-ack");
        exitReported = true;
    };

    // abort() is reported from its entry: the SIGABRT it raises next does
    // not always reach Frida's exception handler (measured: a Rust
    // panic=abort binary lost 4 aborts in 10 under plain Frida, a C one none).
    const abortFn = Module.findGlobalExportByName("abort");
    if (abortFn !== null) {
        Interceptor.attach(abortFn, {
            onEnter() {
                if ((getpid() as number) !== ownPid || crashReported) return;
                report("abort", abortFn, this.context);
            },
        });
    }

    Process.setExceptionHandler((details) => {
        // Breakpoint and step traps are not crashes.
        if (onTrap(details)) return true;
        // A forked child's crash is not this session's (see _exit above).
        if ((getpid() as number) !== ownPid) return false;
        if (!crashReported) report(details.type, details.address, details.context, details.memory);
        // Not handled: the process dies with its original signal.
        return false;
    });
}

/** libstdc++'s `__cxa_current_exception_type`, when the process has it. */
function cxaCurrentExceptionType(): NativeFunction<NativePointer, []> | null {
    const address = Module.findGlobalExportByName("__cxa_current_exception_type");
    return address === null ? null : new NativeFunction(address, "pointer", []);
}
