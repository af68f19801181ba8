// Process lifecycle: exit codes and crash signals.
//
// Frida reaps the child itself, so the daemon never sees a wait status. The
// agent therefore reports the exit code from `_exit` (which `exit()` and a
// return from `main` reach too) and crashes from the exception handler, each
// time blocking until the daemon acknowledges.
import { onTrap } from "./breakpoints.js";
import { isStackOverflow, backtrace as stackOf } from "./backtrace.js";
import { CrashContext, Frame, sendAndWait } from "./protocol.js";
import { registerAtforkChild } from "./native/atfork.js";
import { PROT_ALL, rawAlloc, u32Bytes, u64Bytes } from "./native/memory.js";
import { asOwnCode } from "./native/own_code.js";

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
// Kept alive for as long as the listeners may call them.
let reportExit: NativeCallback<"void", ["int"]> | null = null;
let reportAbort: NativeCallback<"void", ["pointer"]> | null = null;
let listeners: CModule | null = null;

const LISTENER_REGS = ["pc", "rsp", "rbp", "rax", "rbx", "rcx", "rdx", "rsi", "rdi",
    "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"];

// Native Interceptor listeners: the session's own process goes on into
// JavaScript, a forked child returns without touching it.
const LISTENERS = `
#include <gum/guminterceptor.h>

extern int own_pid;
extern int getpid (void);
extern void report_exit (int code);
extern void report_abort (guint64 * regs);

void exit_enter (GumInvocationContext * ic) {
  if (getpid () != own_pid) return;
  report_exit ((int) (gsize) gum_invocation_context_get_nth_argument (ic, 0));
}

void abort_enter (GumInvocationContext * ic) {
  GumCpuContext * c = ic->cpu_context;
  guint64 regs[17];
  if (getpid () != own_pid) return;
  regs[0] = c->rip; regs[1] = c->rsp; regs[2] = c->rbp; regs[3] = c->rax; regs[4] = c->rbx;
  regs[5] = c->rcx; regs[6] = c->rdx; regs[7] = c->rsi; regs[8] = c->rdi; regs[9] = c->r8;
  regs[10] = c->r9; regs[11] = c->r10; regs[12] = c->r11; regs[13] = c->r12; regs[14] = c->r13;
  regs[15] = c->r14; regs[16] = c->r15;
  report_abort (regs);
}
`;

/** Registers a native listener copied out (see LISTENERS), by name. */
type StoppedRegisters = Record<string, NativePointer>;

function registersAt(regs: NativePointer): StoppedRegisters {
    const out: StoppedRegisters = {};
    LISTENER_REGS.forEach((name, i) => { out[name] = regs.add(8 * i).readPointer(); });
    out.sp = out.rsp;
    out.rip = out.pc;
    return out;
}

/** `flush` runs before the exit or crash is reported, so no traced call is
 *  lost; `context` adds what the tracers know of a crashing thread. */
export function installLifecycleHooks(flush: () => void, tracedContext: () => CrashContext): void {
    const exitFn = Module.findGlobalExportByName("_exit");
    const getpidFn = Module.findGlobalExportByName("getpid")!;
    const getpid = new NativeFunction(getpidFn, "int", []);
    const ownPid = getpid() as number;
    const currentExceptionType = cxaCurrentExceptionType();

    const report = (kind: string, address: NativePointer, context: CpuContext | StoppedRegisters,
        memory?: { operation: string; address: NativePointer }): void => {
        crashReported = true;
        let backtrace: Frame[] = [];
        let stackOverflow = false;
        try {
            stackOverflow = memory !== undefined && isStackOverflow(context as CpuContext, memory.address);
            // Registers a native listener copied out have no CpuContext:
            // the frame-pointer walk uses them; the daemon unwinds anyway.
            backtrace = stackOf(context as CpuContext, stackOverflow);
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
        let traced: CrashContext = {};
        try { traced = tracedContext(); } catch (_e) { /* likewise */ }
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
            stackOverflow,
            ...traced,
        }, "crash-ack");
        exitReported = true;
    };

    // _exit and abort() are hooked with native listeners that return at
    // once in a forked child this session does not follow: that child has a
    // copy of Frida's state but none of its threads, and entering
    // JavaScript there waited forever on a lock held at the fork (measured:
    // fork_loop's child hung in _exit in 1 run of 6 under load). abort() is
    // reported from its entry because the SIGABRT it raises next does not
    // always reach Frida's exception handler (a Rust panic=abort binary lost
    // 4 aborts in 10 under plain Frida, a C one none).
    const abortFn = Module.findGlobalExportByName("abort");
    const ownPidCell = Memory.alloc(4);
    ownPidCell.writeS32(ownPid);
    // On the program's thread, as Strobe's code (native/own_code.ts).
    reportExit = new NativeCallback((code: number) => asOwnCode(() => {
        if (exitReported) return;
        exitReported = true;
        flush();
        sendAndWait({ type: "exit", pid: Process.id, code }, "exit-ack");
    }), "void", ["int"]);
    reportAbort = new NativeCallback((regs: NativePointer) => asOwnCode(() => {
        if (crashReported || abortFn === null) return;
        report("abort", abortFn, registersAt(regs));
    }), "void", ["pointer"]);
    listeners = new CModule(LISTENERS, {
        own_pid: ownPidCell, getpid: getpidFn, report_exit: reportExit, report_abort: reportAbort,
    });
    if (exitFn !== null) Interceptor.attach(exitFn, { onEnter: listeners.exit_enter });
    if (abortFn !== null) Interceptor.attach(abortFn, { onEnter: listeners.abort_enter });
    restoreExitsInUnfollowedChildren();

    Process.setExceptionHandler((details) => asOwnCode(() => {
        // Breakpoint and step traps are not crashes.
        if (onTrap(details)) return true;
        // A forked child's crash is not this session's (see _exit above).
        if ((getpid() as number) !== ownPid) return false;
        if (!crashReported) report(details.type, details.address, details.context, details.memory);
        // Not handled: the process dies with its original signal.
        return false;
    }));
}

/** libstdc++'s `__cxa_current_exception_type`, when the process has it. */
function cxaCurrentExceptionType(): NativeFunction<NativePointer, []> | null {
    const address = Module.findGlobalExportByName("__cxa_current_exception_type");
    return address === null ? null : new NativeFunction(address, "pointer", []);
}

// A forked child that is not followed has a copy of Frida's state but none
// of its threads: a lock one of them held at the fork stays held, and the
// child hung in _exit inside Frida's interceptor (a spinlock; 1 run in 6 of
// fork_loop under load), whether the listener was JavaScript or native.
// Frida itself hooks exit, _exit and abort before any script loads. So a
// pthread_atfork child handler — machine code in raw memory, calling
// nothing but mprotect — writes their original first 16 bytes (from the
// library file) back, unless the session follows children: a gated child
// gets a new agent and needs Frida's hooks.
const following = rawAlloc(Process.pageSize);

/** The session follows children (set before the program runs on). */
export function markFollowing(): void {
    following.writeU64(1);
}

function restoreExitsInUnfollowedChildren(): void {
    const mprotect = Module.findGlobalExportByName("mprotect");
    if (mprotect === null) return;
    const code: number[] = [
        0x48, 0x83, 0xec, 0x08, //                     sub rsp, 8
        0x48, 0xb8, ...u64Bytes(following), //         mov rax, &following
        0x48, 0x83, 0x38, 0x00, //                     cmp qword [rax], 0
    ];
    const body: number[] = [];
    for (const name of ["_exit", "exit", "abort"]) {
        const at = Module.findGlobalExportByName(name);
        const original = at === null ? null : originalBytes(at);
        if (at === null || original === null) continue;
        const page = at.and(ptr(Process.pageSize - 1).not());
        const length = at.add(16).sub(page).add(Process.pageSize - 1).and(ptr(Process.pageSize - 1).not());
        const protect = (prot: number) => [
            0x48, 0xbf, ...u64Bytes(page), //          mov rdi, page
            0x48, 0xbe, ...u64Bytes(length), //        mov rsi, length
            0xba, prot, 0x00, 0x00, 0x00, //           mov edx, prot
            0x48, 0xb8, ...u64Bytes(mprotect), //      mov rax, mprotect
            0xff, 0xd0, //                             call rax
        ];
        body.push(...protect(7));
        for (const half of [0, 8]) {
            body.push(0x48, 0xb8, ...original.slice(half, half + 8)); // mov rax, imm64
            body.push(0x48, 0xa3, ...u64Bytes(at.add(half))); //        mov [at + half], rax
        }
        body.push(...protect(5));
    }
    if (body.length === 0) return;
    code.push(0x0f, 0x85, ...u32Bytes(body.length), ...body); //   jne done
    code.push(0x48, 0x83, 0xc4, 0x08, 0xc3); //              done: add rsp, 8; ret
    const handler = rawAlloc(Process.pageSize, PROT_ALL);
    handler.writeByteArray(code);
    Memory.protect(handler, Process.pageSize, "r-x");
    registerAtforkChild(handler);
}

/** The first 16 bytes of the function at `at` as its library file has
 *  them, or null when the file's bytes past the patched prefix do not match
 *  memory (the file offset is not the address's offset in the image). */
function originalBytes(at: NativePointer): number[] | null {
    const m = Process.findModuleByAddress(at);
    if (m === null) return null;
    try {
        const f = new File(m.path, "rb");
        f.seek(at.sub(m.base).toInt32());
        const disk = Array.from(new Uint8Array(f.readBytes(16)));
        f.close();
        const memory = Array.from(new Uint8Array(at.readByteArray(16)!));
        // Frida's near jump (5 bytes, padded to an instruction boundary)
        // leaves bytes 9..16 as they were; anything else (a far jump, a
        // different library on disk) is left alone.
        return disk.length === 16 && disk.slice(9).every((b, i) => b === memory[9 + i]) ? disk : null;
    } catch (_e) {
        return null;
    }
}
