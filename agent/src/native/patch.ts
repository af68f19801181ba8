// Writes into the target's code (and GOT slots): queued patches written a
// page at a time, each journalled with the bytes it replaced so that a
// forked child or a detach can put them back, and the guard that keeps a
// tracer's redirect off a breakpoint's int3. Shared by the tracers,
// breakpoints and the fork guard.
import { rawAlloc } from "./memory.js";

/** Code writes waiting for writePatches: (address, bytes). */
let patches: Array<[NativePointer, number[]]> = [];

/** Queues a code write for the next writePatches (a tracer queues its
 *  redirects and writes them all at once when its request is done). */
export function queuePatch(at: NativePointer, bytes: number[]): void {
    patches.push([at, bytes]);
}

// The patch journal: the original bytes of every code location patched now
// (redirects and breakpoint traps), kept in native memory because a forked
// child inherits the patches but not this script: the child's own agent
// reads the parent's journal (its address travels through the daemon) and
// undoes them before the child runs on. Layout: u64 magic, u64 slots used,
// 48 bytes spare, then 32-byte slots {u64 address (0: free), u32 length,
// u32 spare, u8 original[16]}.
const JOURNAL_MAGIC = uint64("0x5354524f42454a4e");
const JOURNAL_SLOTS = 1 << 16;
let journal: NativePointer | null = null;
let journalUsed = 0;
const journalSlots = new Map<string, { slot: number; original: number[] }>();
const freeSlots: number[] = [];

/** The journal's address (created on first use). Mapped with libc's mmap:
 *  memory from Frida's allocator is gone in a forked child. */
export function journalAddress(): NativePointer {
    if (journal === null) {
        journal = rawAlloc(64 + JOURNAL_SLOTS * 32);
        journal.writeU64(JOURNAL_MAGIC);
    }
    return journal;
}

/** Notes the bytes at `at` before `bytes` overwrite them, or forgets them
 *  when `bytes` puts them back. */
function journalPatch(at: NativePointer, bytes: number[]): void {
    const key = at.toString();
    const known = journalSlots.get(key);
    const j = journalAddress();
    if (known !== undefined) {
        if (known.original.length === bytes.length && known.original.every((b, i) => b === bytes[i])) {
            j.add(64 + known.slot * 32).writeU64(0);
            journalSlots.delete(key);
            freeSlots.push(known.slot);
        }
        return;
    }
    const slot = freeSlots.pop() ?? journalUsed++;
    if (slot >= JOURNAL_SLOTS) return; // full: a forked child keeps this patch
    const original = Array.from(new Uint8Array(at.readByteArray(bytes.length)!));
    const e = j.add(64 + slot * 32);
    e.add(8).writeU32(bytes.length);
    e.add(16).writeByteArray(original);
    e.writePointer(at);
    j.add(8).writeU64(journalUsed);
    journalSlots.set(key, { slot, original });
}

/** Puts back every patch the journal at `address` lists (in a forked child:
 *  the parent's, inherited). Returns how many. */
export function undoJournal(address: NativePointer): number {
    if (!address.readU64().equals(JOURNAL_MAGIC)) throw new Error(`no patch journal at ${address}`);
    const used = Math.min(address.add(8).readU64().toNumber(), JOURNAL_SLOTS);
    const undo: Array<[NativePointer, number[]]> = [];
    for (let i = 0; i < used; i++) {
        const e = address.add(64 + i * 32);
        const at = e.readPointer();
        const n = e.add(8).readU32();
        if (at.isNull() || n === 0 || n > 16) continue;
        undo.push([at, Array.from(new Uint8Array(e.add(16).readByteArray(n)!))]);
    }
    patches.push(...undo);
    writePatches(false);
    return undo.length;
}

/** Writes code bytes now (batched per page like the tracer's own patches). */
export function patchCodeNow(list: Array<[NativePointer, number[]]>): void {
    patches.push(...list);
    writePatches();
}

/** Puts back every patch this agent made (redirects, int3s, GOT slots): the
 *  agent unloads from a process that lives on. */
export function undoAllPatches(): void {
    if (journal !== null) undoJournal(journal);
}

/** Breakpoint sites in `[at, at + n)`, if any (set by the breakpoints module),
 *  so a function is not redirected over an int3 and its relocated copy never
 *  holds one. */
let codeGuard: (at: NativePointer, n: number) => boolean = () => false;

/** Sets the code guard (the breakpoints module, asked about its sites). */
export function setCodeGuard(guard: (at: NativePointer, n: number) => boolean): void {
    codeGuard = guard;
}

/** True when the code guard reports a breakpoint site in `[at, at + n)`. */
export function isGuarded(at: NativePointer, n: number): boolean {
    return codeGuard(at, n);
}

/**
 * Writes the queued code patches, making each page writable once for all
 * of its patches: Memory.patchCode per function (two mprotects and the TLB
 * shootdowns they cost while the program runs) took ~1 ms a function.
 */
export function writePatches(journaled = true): void {
    if (patches.length === 0) return;
    const pageSize = Process.pageSize;
    // Addresses as numbers (user space fits in 47 bits): grouping thousands
    // of patches with NativePointer arithmetic cost a native call per step.
    const byPage = new Map<number, { first: number; last: number; items: Array<[NativePointer, number[]]> }>();
    for (const p of patches) {
        const at = parseInt(p[0].toString(16), 16);
        const page = at - (at % pageSize);
        const e = byPage.get(page) ?? { first: page, last: page, items: [] };
        e.items.push(p);
        const end = at + p[1].length - 1;
        e.last = Math.max(e.last, end - (end % pageSize));
        byPage.set(page, e);
    }
    patches = [];
    // Every range, not only code (the fork guard patches GOT slots), as
    // numbers once: looked up per page group.
    const ranges = Process.enumerateRanges("---").map(r => {
        const base = parseInt(r.base.toString(16), 16);
        return { base, end: base + r.size, protection: r.protection };
    });
    const protectionAt = (a: number) =>
        ranges.find(r => a >= r.base && a < r.end)?.protection ?? "r-x";
    for (const { first, last, items } of byPage.values()) {
        const start = ptr(first);
        const size = last - first + pageSize;
        const restore = protectionAt(first);
        Memory.protect(start, size, "rwx");
        for (const [at, bytes] of items) {
            if (journaled) journalPatch(at, bytes);
            writeCode(at, bytes);
        }
        Memory.protect(start, size, restore);
    }
}

/**
 * Writes a patch of up to 8 bytes as one aligned 8-byte store when it fits
 * in one (x86 makes those atomic), so a thread running the function while it
 * is patched sees either the old bytes or the new ones, never a mix.
 */
function writeCode(at: NativePointer, bytes: number[]): void {
    const offset = at.and(7).toInt32();
    if (bytes.length > 8 || offset + bytes.length > 8) {
        at.writeByteArray(bytes);
        return;
    }
    const aligned = at.sub(offset);
    const word = new Uint8Array(aligned.readByteArray(8)!);
    bytes.forEach((b, i) => { word[offset + i] = b; });
    let v = uint64(0);
    for (let i = 7; i >= 0; i--) v = v.shl(8).or(word[i]);
    aligned.writeU64(v);
}
