// Writing the shared hook (its code: hook_code.ts) into the target, turning
// its calls into the CModule off when the agent detaches, and registering
// its unwind info.
import { rawAlloc, retain, u64Bytes } from "../../native/memory.js";
import { hookCode } from "./hook_code.js";

/** Where the hook's code lives, and its length (for the unwind info). */
let written: { start: NativePointer; length: number } | null = null;
let hookCalls: number[] = [];

const libc = (name: string) => Module.findGlobalExportByName(name)!;

/** How much of a thread's descriptor specificOffset searches. */
const SPECIFIC_SCAN_BYTES = 2048;

/** Why the hook's fast path is off (specificOffset found no offset), or
 *  null while it is on. The daemon shows it in `debug_session status`. */
let fastPathOff: string | null = null;

/** Why every traced call takes the hook's slow path, if it does. */
export function slowHookReason(): string | null {
    return fastPathOff;
}

/** Where glibc keeps the calling thread's value of pthread key `key`, as
 *  an offset from the thread pointer (%fs), or null (slowHookReason says
 *  why). glibc stores the first 32 keys' values inside the thread's
 *  descriptor; the offset is found by setting a sentinel on this thread and
 *  looking for it there, then checked by running the very instruction the
 *  hook uses. */
export function specificOffset(key: number): number | null {
    fastPathOff = null;
    const slowPath = (why: string) => { fastPathOff = why; return null; };
    if (Process.arch !== "x64") return slowPath(`the fast path is x86-64 machine code; this process is ${Process.arch}`);
    if (key >= 32) return slowPath(`pthread key ${key} is past the 32 whose values glibc keeps in the thread's descriptor`);
    const self = new NativeFunction(libc("pthread_self"), "pointer", [])() as NativePointer;
    const get = new NativeFunction(libc("pthread_getspecific"), "pointer", ["uint32"]);
    const set = new NativeFunction(libc("pthread_setspecific"), "int", ["uint32", "pointer"]);
    // Only the descriptor's first 2 KB (struct pthread is larger, the keys'
    // values sit in its first KB): its mapping may end soon after it, and
    // a read past it faulted a forked child (a followed Python subprocess,
    // whose new agent scanned before Frida could catch it). Frida's ranges
    // cannot tell where: they leave its own threads' memory out.
    const before = get(key) as NativePointer;
    const sentinel = Memory.alloc(8);
    if ((set(key, sentinel) as number) !== 0) return slowPath("pthread_setspecific failed");
    let found: number | null = null;
    let matches = 0;
    for (let off = 0; off < SPECIFIC_SCAN_BYTES; off += 8) {
        if (self.add(off).readPointer().equals(sentinel)) {
            found = off;
            matches++;
        }
    }
    let confirmed = false;
    if (matches === 1 && found !== null) {
        // One page, kept (raw memory is never freed; see native/memory.ts).
        const probe = rawAlloc(Process.pageSize);
        probe.writeByteArray([0x64, 0x48, 0x8b, 0x04, 0x25, found & 0xff, (found >> 8) & 0xff, 0, 0, 0xc3]); // mov rax, fs:[off]; ret
        Memory.protect(probe, Process.pageSize, "r-x");
        confirmed = (new NativeFunction(probe, "pointer", [])() as NativePointer).equals(sentinel);
    }
    set(key, before);
    if (confirmed) return found;
    return slowPath(matches === 1
        ? "the thread's key value is not where %fs says (not glibc's layout)"
        : `the thread's key value was found ${matches} times in its descriptor's first ${SPECIFIC_SCAN_BYTES} bytes (not glibc's layout)`);
}

/** Writes the hook (its slow paths calling `enter` and `leave`, the
 *  CModule's fast_enter and fast_leave) into raw memory and returns its
 *  address. `threadOffset`: specificOffset of the thread state's key. */
export function writeHook(enter: NativePointer, leave: NativePointer, config: NativePointer, plans: NativePointer, threadOffset: number | null): NativePointer {
    const { bytes, cCalls } = hookCode(
        { enter: u64Bytes(enter), leave: u64Bytes(leave), config: u64Bytes(config), plans: u64Bytes(plans) },
        threadOffset,
    );
    const start = rawAlloc(Process.pageSize);
    start.writeByteArray(bytes);
    Memory.protect(start, Process.pageSize, "r-x");
    written = { start, length: bytes.length };
    // detach turns the two `call rax` into no-ops, so a call in flight
    // returns without the CModule.
    hookCalls = cCalls;
    return start;
}

/** Turns the hook's two calls into the CModule into no-ops (the agent
 *  unloads and the CModule goes with it): a call in flight then returns
 *  through the hook without recording. */
export function silenceHook(): void {
    if (written === null) return;
    const { start } = written;
    Memory.protect(start, Process.pageSize, "rwx");
    for (const at of hookCalls) start.add(at).writeByteArray([0x66, 0x90]); // 2-byte nop
    Memory.protect(start, Process.pageSize, "r-x");
}

// Unwind info (.eh_frame: one CIE, one FDE, a terminator) for the hook, so
// that C++ exceptions, Rust panics and backtraces pass through it. Registered
// with libgcc's __register_frame, which programs that unwind have loaded; a
// program that loads it later gets it registered then (see watchModules).
let unwindRegistered = false;

/** Registers the hook's unwind info, once the hook exists and libgcc is loaded. */
export function registerUnwindInfo(): void {
    if (unwindRegistered || written === null) return;
    const register = Module.findGlobalExportByName("__register_frame");
    if (register === null) return;
    const { start, length } = written;
    const cie = [
        20, 0, 0, 0, //          length
        0, 0, 0, 0, //           CIE id
        1, //                    version
        0x7a, 0x52, 0, //        augmentation "zR"
        1, //                    code alignment
        0x78, //                 data alignment -8
        16, //                   return address: r16 (rip)
        1, 0x00, //              augmentation data: FDE pointers absolute
        0x0c, 7, 8, //           DW_CFA_def_cfa rsp+8
        0x90, 1, //              DW_CFA_offset rip at cfa-8
        0, 0, //                 padding
    ];
    const epilogue = length - 1 - 5; // from after `push rbx` to before `ret`
    const fde = [
        44, 0, 0, 0, //          length
        28, 0, 0, 0, //          distance back to the CIE
        ...u64Bytes(start), //   first address
        ...u64Bytes(ptr(length)), // range
        0, //                    augmentation data: none
        0x41, 0x0e, 16, //       after push rbp: cfa = rsp+16
        0x86, 2, //              rbp at cfa-16
        0x43, 0x0d, 6, //        after mov rbp, rsp: cfa = rbp+16
        0x41, 0x83, 3, //        after push rbx: rbx at cfa-24
        0x04, epilogue & 0xff, (epilogue >> 8) & 0xff, 0, 0, // before ret:
        0x0c, 7, 8, //           cfa = rsp+8
        0, 0, 0, 0, //           padding
    ];
    // Unwinders keep using it for frames in flight after a detach.
    const frame = rawAlloc(cie.length + fde.length + 4);
    frame.writeByteArray([...cie, ...fde, 0, 0, 0, 0]);
    new NativeFunction(register, "void", ["pointer"])(frame);
    retain(frame);
    unwindRegistered = true;
}
