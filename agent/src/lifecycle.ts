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

/** `flush` runs before the exit or crash is reported, so no traced call is lost. */
export function installLifecycleHooks(flush: () => void): void {
    const exitFn = Module.findGlobalExportByName("_exit");
    const getpid = new NativeFunction(Module.findGlobalExportByName("getpid")!, "int", []);
    const ownPid = getpid() as number;
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

    Process.setExceptionHandler((details) => {
        // Breakpoint and step traps are not crashes.
        if (onTrap(details)) return true;
        // A forked child's crash is not this session's (see _exit above).
        if ((getpid() as number) !== ownPid) return false;
        let backtrace: Frame[] = [];
        try {
            backtrace = stackOf(details.context);
        } catch (_e) {
            // An unwinding failure must not keep the crash from being reported.
        }
        const registers: Record<string, string> = {};
        const ctx = details.context as unknown as Record<string, NativePointer>;
        for (const name of ["pc", "sp", "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9",
            "r10", "r11", "r12", "r13", "r14", "r15", "rip"]) {
            const v = ctx[name];
            if (v !== undefined) registers[name] = v.toString();
        }
        try { flush(); } catch (_e) { /* the crash report matters more */ }
        const memory = details.memory
            ? { operation: details.memory.operation, address: details.memory.address.toString() }
            : undefined;
        sendAndWait({
            type: "crash",
            pid: Process.id,
            tid: Process.getCurrentThreadId(),
            signal: SIGNALS[details.type] ?? details.type,
            kind: details.type,
            address: details.address.toString(),
            memory,
            registers,
            backtrace,
        }, "crash-ack");
        exitReported = true;
        // Not handled: the process dies with its original signal.
        return false;
    });
}
