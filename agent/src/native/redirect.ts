// Redirecting a function's entry to a stub: a 5-byte jump with the displaced
// instructions relocated next to it (redirectNear), or Frida's replaceFast
// when that cannot be done safely. Also answers which bytes hold such a
// jump, so breakpoints stay off them. The jumps are queued patches
// (patch.ts): they go live with the caller's writePatches.
import { nearAlloc, u64Bytes } from "./memory.js";
import { queuePatch } from "./patch.js";

/**
 * True when some jump or call in the function's first `extent` bytes lands
 * strictly inside its first `n` bytes (which the redirection overwrites).
 * A cheap scan of every byte offset for rel8/rel32 branch encodings rules
 * most functions out; a hit there is confirmed by decoding instructions.
 */
function branchesIntoPrologue(target: NativePointer, extent: number, n: number): boolean {
    const code = new Uint8Array(target.readByteArray(extent)!);
    const lands = (from: number, rel: number) => {
        const dest = from + rel;
        return dest > 0 && dest < n;
    };
    const rel32 = (i: number) => code[i] | (code[i + 1] << 8) | (code[i + 2] << 16) | (code[i + 3] << 24);
    const rel8 = (i: number) => (code[i] << 24) >> 24;
    let suspect = false;
    for (let i = 0; i < extent && !suspect; i++) {
        const b = code[i];
        suspect =
            ((b === 0xeb || (b >= 0x70 && b <= 0x7f) || (b >= 0xe0 && b <= 0xe3)) && i + 1 < extent && lands(i + 2, rel8(i + 1))) ||
            ((b === 0xe8 || b === 0xe9) && i + 4 < extent && lands(i + 5, rel32(i + 1))) ||
            (b === 0x0f && i + 5 < extent && code[i + 1] >= 0x80 && code[i + 1] <= 0x8f && lands(i + 6, rel32(i + 2)));
    }
    if (!suspect) return false;
    const end = target.add(extent);
    const first = target.add(1);
    const last = target.add(n);
    let at = target;
    try {
        while (at.compare(end) < 0) {
            const insn = Instruction.parse(at) as X86Instruction;
            if (insn.groups.includes("jump") || insn.groups.includes("call")) {
                const op = insn.operands[0];
                if (op !== undefined && op.type === "imm") {
                    const dest = ptr(op.value.toString());
                    if (dest.compare(first) >= 0 && dest.compare(last) < 0) return true;
                }
            }
            at = insn.next;
        }
    } catch (e) {
        return true; // undecodable bytes: do not guess
    }
    return false;
}

/** Functions redirected by redirectNear: their original first bytes. */
const nearRedirects = new Map<string, number[]>();
/** Every function redirected now, either kind (by address). */
const redirected = new Set<string>();

/**
 * Redirects a function with a 5-byte jump to its nearby stub, and returns
 * the trampoline that runs the displaced instructions and continues in the
 * original. Only 5 bytes are displaced (replaceFast takes 16), so small
 * functions can be traced, and a call among them is re-created so that the
 * callee returns into the original function rather than the trampoline:
 * unwinding through that call keeps working. Throws when it cannot be done
 * safely (under 5 bytes of code, or a jump landing inside those bytes).
 */
function redirectNear(target: NativePointer, stub: NativePointer, extent: number): NativePointer {
    const tramp = nearAlloc(target, 64);
    const w = new X86Writer(tramp, { pc: tramp });
    const rl = new X86Relocator(target, w);
    const insns: Instruction[] = [];
    let n = 0;
    while (n < 5) {
        const next = rl.readOne();
        if (next === 0 || (rl.eoi && next < 5)) throw new Error("too small to hook (under 5 bytes of code)");
        insns.push(Instruction.parse(target.add(n)));
        n = next;
    }
    if (branchesIntoPrologue(target, Math.max(extent, n), n)) {
        throw new Error("a jump lands inside its first instructions; cannot hook");
    }
    for (const insn of insns) {
        const op = (insn as X86Instruction).operands[0];
        if (insn.mnemonic === "call" && op !== undefined && op.type === "imm") {
            // call rel32 → push the original return address; jmp callee.
            rl.skipOne();
            const ret = u64Bytes(insn.next);
            w.putBytes([
                0x48, 0x8d, 0x64, 0x24, 0xf8, //           lea rsp, [rsp-8]
                0xc7, 0x04, 0x24, ...ret.slice(0, 4), //    mov dword [rsp], lo
                0xc7, 0x44, 0x24, 0x04, ...ret.slice(4), // mov dword [rsp+4], hi
                0xff, 0x25, 0, 0, 0, 0, ...u64Bytes(ptr(op.value.toString())), // jmp [rip]
            ]);
        } else {
            rl.writeOne();
        }
    }
    if (!rl.eoi) w.putJmpAddress(target.add(n));
    w.flush();
    nearRedirects.set(target.toString(), Array.from(new Uint8Array(target.readByteArray(n)!)));
    const rel = stub.sub(target.add(5)).toInt32();
    const jump = [0xe9, rel & 0xff, (rel >> 8) & 0xff, (rel >> 16) & 0xff, (rel >>> 24) & 0xff];
    while (jump.length < n) jump.push(0x90);
    queuePatch(target, jump);
    return tramp;
}

/**
 * Redirects the function at `target` to `stub` and returns the trampoline
 * that runs the original: with redirectNear when its code size (`extent`, 0
 * when unknown) allows, else with Frida's replaceFast. Throws with both
 * reasons when neither can.
 */
export function redirect(target: NativePointer, stub: NativePointer, extent: number): NativePointer {
    let trampoline: NativePointer;
    try {
        if (extent === 0) throw new Error("its code size is unknown");
        trampoline = redirectNear(target, stub, extent);
    } catch (nearError) {
        // Frida's own redirection: 16 bytes, its own checks.
        try {
            trampoline = Interceptor.replaceFast(target, stub);
        } catch (e) {
            throw new Error(`${(nearError as Error).message}; Frida could not redirect it either (${(e as Error).message})`);
        }
    }
    redirected.add(target.toString());
    return trampoline;
}

/** Undoes a redirection (either kind). */
export function unredirect(target: NativePointer): void {
    redirected.delete(target.toString());
    const orig = nearRedirects.get(target.toString());
    if (orig === undefined) {
        Interceptor.revert(target);
        return;
    }
    nearRedirects.delete(target.toString());
    queuePatch(target, orig);
}

/** True when `addr` lies in the first bytes of a redirected function (they
 *  hold the jump to its hook: no breakpoint may go there). */
export function inRedirectedPrologue(addr: NativePointer): boolean {
    for (let d = 0; d < 16; d++) {
        const start = addr.sub(d);
        if (!redirected.has(start.toString())) continue;
        const n = nearRedirects.get(start.toString())?.length ?? 16;
        if (d < n) return true;
    }
    return false;
}
