// Fork guard. Frida's fork handling in a gated child crashed (a NULL
// object referenced in frida-agent) when the program forked while agent
// messages were in flight — e.g. a traced call's records being shipped —
// losing the child in about 1 fork in 6 when it came within ~1 ms of a
// traced call. Frida's own fork hook runs before any listener a script
// attaches to fork(), so the guard goes in front of it: each module's GOT
// slot for fork points at a wrapper that ships the ring (every tracer's
// records: the caller's `flush`) and makes a round trip to the daemon (all
// messages delivered) before jumping to fork. The slots are journalled like
// code patches; the wrapper lives in raw memory and skips the round trip in
// a forked child that has no agent of its own (the flag this tracer's
// atfork handler sets in its config page, see runtime.ts).
//
// vfork() imports go to the same wrapper, so they fork: Frida replaces vfork
// with fork to gate its children, so a vfork child met the same crash (1 in
// 3 with records in flight) past a guard that covered fork's slots only.
// Modules loaded later (Python's subprocess is one, _posixsubprocess) get
// their slots patched when the dlopen that loaded them returns
// (guardModuleForks): the loader announces a module before relocating it,
// and relocation rewrites every import slot, so a slot patched on the
// announcement was put back to vfork itself (the guard never ran, and a
// followed traced Python program's subprocess child died in Frida's fork
// handling in 6 runs of 10), and the journal kept the unrelocated value
// for the detach to write back.
import { PROT_ALL, rawAlloc, u64Bytes } from "../../native/memory.js";
import { asOwnCode } from "../../native/own_code.js";
import { patchCodeNow } from "../../native/patch.js";
import { receive, send_ } from "../../protocol.js";
import { runtimeConfig } from "./runtime.js";

/** The barrier the wrappers call before fork, and what they call after
 *  it returned in the parent (one of each per agent). */
let forkBarrier: NativeCallback<"void", []> | null = null;
let forkReturned: NativeCallback<"void", ["int"]> | null = null;
/** Between a barrier and its fork's return: the drain timer sends nothing,
 *  so that no message of this agent is in flight when the process forks. */
let forking = false;

/** True while a guarded fork is under way in this process. */
export function forkInProgress(): boolean {
    return forking;
}
/** The wrapper the slots point at, once the guard is in. */
let forkWrapper: NativePointer | null = null;

/** The import slots of fork and vfork in `m` (not Frida's own). */
function forkSlots(m: Module, wrapper: NativePointer): Array<[NativePointer, number[]]> {
    if (!m.path.startsWith("/") || m.path.includes("frida")) return [];
    return m.enumerateImports()
        .filter(imp => (imp.name === "fork" || imp.name === "vfork") && imp.slot !== undefined)
        .map(imp => [imp.slot!, u64Bytes(wrapper)]);
}

/** Modules announced by the loader and not relocated yet, with the thread
 *  whose dlopen loads them (its return is when they are relocated). */
const awaitingRelocation: Array<{ module: Module; thread: ThreadId }> = [];
let loaderWatched = false;

/** A module loaded after the guard went in: its fork and vfork slots too,
 *  once the dlopen loading it returns. */
export function guardModuleForks(m: Module): void {
    if (forkWrapper === null) return;
    awaitingRelocation.push({ module: m, thread: Process.getCurrentThreadId() });
}

/** Patches, when a dlopen returns, the modules it loaded. Attached with the
 *  guard, from the agent's thread, not from a module announcement: that
 *  runs inside the dlopen, with the loader's lock held. */
function watchLoader(): void {
    if (loaderWatched) return;
    loaderWatched = true;
    for (const name of ["dlopen", "dlmopen"]) {
        const at = Module.findGlobalExportByName(name);
        if (at !== null) Interceptor.attach(at, { onLeave: guardRelocated });
    }
}

function guardRelocated(): void {
    const thread = Process.getCurrentThreadId();
    const slots: Array<[NativePointer, number[]]> = [];
    for (let i = awaitingRelocation.length - 1; i >= 0; i--) {
        const { module, thread: loader } = awaitingRelocation[i];
        if (loader !== thread || forkWrapper === null) continue;
        awaitingRelocation.splice(i, 1);
        slots.push(...forkSlots(module, forkWrapper));
    }
    if (slots.length > 0) patchCodeNow(slots);
}

/** Routes the program's fork() calls through the guard, whose barrier runs
 *  `flush` (a final drain) first; returns how many GOT slots now point at it. */
export function guardForks(flush: () => void): number {
    const fork = Module.findGlobalExportByName("fork");
    if (fork === null) return 0;
    if (forkBarrier === null) {
        // On the forking thread, as Strobe's code (native/own_code.ts).
        forkBarrier = new NativeCallback(() => asOwnCode(() => {
            forking = true;
            try { flush(); } catch (_e) { /* the fork matters more */ }
            const op = receive("fork-barrier-ack", () => { /* no data */ });
            send_({ type: "fork_barrier", pid: Process.id });
            op.wait();
        }), "void", []);
        forkReturned = new NativeCallback((child: number) => asOwnCode(() => {
            forking = false;
            send_({ type: "fork_done", pid: Process.id, child });
        }), "void", ["int"]);
    }
    const errnoAt = Module.findGlobalExportByName("__errno_location")!;
    // config[5] is the flag the atfork handler sets; reading it does not
    // need the tracer to exist. The wrapper calls fork rather than jumping
    // to it, to tell the daemon when the fork is over (it holds its
    // requests to this agent from the barrier until then: a message in
    // flight across the fork crashes the child, see docs/FRIDA_NOTES.md).
    // The child returns straight away: Frida's memory, the callbacks
    // included, is not mapped in a gated child. errno is kept for a failed
    // fork's caller.
    const config = runtimeConfig;
    const wrapper = rawAlloc(Process.pageSize, PROT_ALL);
    wrapper.writeByteArray([
        0x48, 0xb8, ...u64Bytes(config.add(40)), //    mov rax, &config[5] (set in a forked child)
        0x48, 0x83, 0x38, 0x00, //                     cmp qword [rax], 0
        0x75, 0x44, //                                 jne skip
        0x53, //                                       push rbx (and aligns the calls)
        0x48, 0xb8, ...u64Bytes(forkBarrier), //       mov rax, barrier
        0xff, 0xd0, //                                 call rax
        0x48, 0xb8, ...u64Bytes(fork), //              mov rax, fork
        0xff, 0xd0, //                                 call rax
        0x85, 0xc0, //                                 test eax, eax
        0x74, 0x25, //                                 jz done (the child)
        0x89, 0xc3, //                                 mov ebx, eax
        0x48, 0xb8, ...u64Bytes(errnoAt), //           mov rax, __errno_location
        0xff, 0xd0, //                                 call rax
        0xff, 0x30, //                                 push qword [rax] (errno)
        0x50, //                                       push rax (&errno)
        0x89, 0xdf, //                                 mov edi, ebx
        0x48, 0xb8, ...u64Bytes(forkReturned!), //     mov rax, returned
        0xff, 0xd0, //                                 call rax
        0x58, //                                       pop rax
        0x59, //                                       pop rcx
        0x89, 0x08, //                                 mov [rax], ecx
        0x89, 0xd8, //                                 mov eax, ebx
        0x5b, //                               done:   pop rbx
        0xc3, //                                       ret
        0x48, 0xb8, ...u64Bytes(fork), //       skip:  mov rax, fork
        0xff, 0xe0, //                                 jmp rax
    ]);
    Memory.protect(wrapper, Process.pageSize, "r-x");
    const slots = Process.enumerateModules().flatMap(m => forkSlots(m, wrapper));
    patchCodeNow(slots);
    forkWrapper = wrapper;
    watchLoader();
    return slots.length;
}
