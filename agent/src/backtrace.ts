// Backtraces of stopped threads (crashes, breakpoints), symbolized by Frida;
// the daemon re-reads file:line from the program's own DWARF.
import { Frame } from "./protocol.js";

/** A code address with its symbol and source line, for backtraces. A
 *  return address (`caller`) is looked up one byte back: it points after its
 *  call, which may be the first instruction of the next line. */
export function frameOf(addr: NativePointer, caller = false): Frame {
    const sym = DebugSymbol.fromAddress(caller ? addr.sub(1) : addr);
    return {
        address: addr.toString(),
        module: sym.moduleName,
        name: sym.name,
        file: sym.fileName || null,
        line: sym.lineNumber || null,
    };
}

/** Return addresses along the frame-pointer chain (code built with frame
 *  pointers, and the tracer's hook, which keeps one). */
function framePointerWalk(ctx: CpuContext): NativePointer[] {
    const x = ctx as X64CpuContext;
    const out: NativePointer[] = [];
    const low = x.rsp;
    const high = x.rsp.add(64 * 1024 * 1024);
    let fp = x.rbp;
    for (let i = 0; i < 64; i++) {
        if (fp.compare(low) < 0 || fp.compare(high) >= 0 || !fp.and(7).isNull()) break;
        let next: NativePointer;
        let ret: NativePointer;
        try {
            next = fp.readPointer();
            ret = fp.add(8).readPointer();
        } catch (_e) {
            break;
        }
        if (ret.isNull()) break;
        out.push(ret);
        if (next.compare(fp) <= 0) break;
        fp = next;
    }
    return out;
}

/**
 * A stopped thread's frames (a crash, a breakpoint), innermost first,
 * starting at its pc. Frida's DWARF unwinder stops at the tracer's hook (it does
 * not see the hook's registered unwind info), so the frame-pointer chain is
 * tried too and the walk that reaches more frames in modules wins; tracer code and
 * addresses outside any module are left out. `overflowed`: the thread used
 * up its stack, and Frida's unwinders, which read it unguarded, kill the
 * process there (measured: both of them, in a handler on an alternate
 * stack); only the guarded frame-pointer walk is tried.
 */
export function backtrace(ctx: CpuContext, overflowed = false): Frame[] {
    // The tracer's code (hook, stubs, relocated prologues) lives in
    // anonymous memory, outside every module, so this drops it too.
    const keep = (addrs: NativePointer[]) =>
        addrs.filter(a => Process.findModuleByAddress(a) !== null).slice(0, 64);
    let accurate: NativePointer[] = [];
    try {
        if (!overflowed) accurate = keep(Thread.backtrace(ctx, Backtracer.ACCURATE));
    } catch (_e) {
        accurate = [];
    }
    const chain = keep(framePointerWalk(ctx));
    // Only the walk kept is symbolized (DebugSymbol is most of the cost).
    const frames = chain.length > accurate.length ? chain : accurate;
    return [frameOf(ctx.pc), ...frames.map(a => frameOf(a, true))];
}

/** How near the stack pointer a fault must be to be a stack overflow: a
 *  frame's own locals, reached by a push or a store below the new rsp. */
const OVERFLOW_REACH = 64 * 1024;

/** The fault at `address` is the thread running off the end of its stack:
 *  near the stack pointer, in memory that cannot be read (the guard page
 *  or the gap below the stack). */
export function isStackOverflow(ctx: CpuContext, address: NativePointer): boolean {
    const sp = ctx.sp;
    const distance = address.compare(sp) < 0 ? sp.sub(address) : address.sub(sp);
    if (distance.compare(ptr(OVERFLOW_REACH)) > 0) return false;
    try {
        address.readU8();
        return false;
    } catch (_e) {
        return true;
    }
}
