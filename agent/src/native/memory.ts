// Memory for code and data the agent writes into the target: raw pages that
// outlive the script, executable pages near a given address, and pointers
// as machine-code bytes. Shared by the tracers, breakpoints and lifecycle
// hooks, so none of them imports another for it.

// Memory that outlives this script. Frida frees what Memory.alloc gave when
// the script is unloaded (detach from an attached process), but a thread may
// still be inside a traced function then and return through the hook, its
// stub or a relocated prologue: those live in pages mapped with libc's mmap,
// left mapped on purpose (a few touched pages per session; the FuncState
// table reserves more address space than it touches).
const libcMmap = new NativeFunction(Module.findGlobalExportByName("mmap")!, "pointer",
    ["pointer", "size_t", "int", "int", "int", "int64"]);
const PROT_READ_WRITE = 3;
export const PROT_ALL = 7;
const MAP_PRIVATE_ANONYMOUS = 0x22, MAP_FIXED_NOREPLACE = 0x100000;

/** `size` bytes of zeroed memory no script teardown frees. */
export function rawAlloc(size: number, prot = PROT_READ_WRITE, at: NativePointer = NULL): NativePointer {
    const flags = MAP_PRIVATE_ANONYMOUS | (at.isNull() ? 0 : MAP_FIXED_NOREPLACE);
    const p = libcMmap(at, size, prot, flags, -1, 0) as NativePointer;
    if (p.equals(ptr(-1))) throw new Error(`mmap of ${size} bytes failed`);
    return p;
}

/** Like rawAlloc, within `reach` of `target`: the free gap nearest to it. */
function rawAllocNear(target: NativePointer, size: number, reach: number): NativePointer | null {
    const t = parseInt(target.toString(16), 16);
    const ranges = Process.enumerateRanges("---")
        .map(r => [parseInt(r.base.toString(16), 16), parseInt(r.base.toString(16), 16) + r.size])
        .sort((a, b) => a[0] - b[0]);
    let best: number | null = null;
    const consider = (lo: number, hi: number) => {
        // Aligned to 64 KiB, as near to the target as the gap allows.
        const align = 0x10000;
        const from = Math.ceil(lo / align) * align;
        const to = Math.floor((hi - size) / align) * align;
        if (to < from) return;
        const pick = Math.min(Math.max(t - (t % align), from), to);
        if (Math.abs(pick - t) + size < reach && (best === null || Math.abs(pick - t) < Math.abs(best - t))) best = pick;
    };
    let prevEnd = 0x10000;
    for (const [base, end] of ranges) {
        if (base > prevEnd) consider(prevEnd, base);
        prevEnd = Math.max(prevEnd, end);
    }
    if (best === null) return null;
    try {
        return rawAlloc(size, PROT_ALL, ptr(best));
    } catch (_e) {
        return null;
    }
}

// Stubs and relocated prologues (tracers) and displaced instructions
// (breakpoints) live in pages within reach of a 5-byte jump from the code
// they serve. The pages stay writable and executable so that more can be
// added while other threads run through their neighbours.
/** How far from its target near memory may be: 1.5 GiB, well inside a rel32 jump. */
export const NEAR_REACH = 0x6000_0000;
// Allocated 64 KiB at a time: Frida's near allocation searches the address
// space (~10 ms a call here), so one page at a time cost 1 s per 4,000 hooks.
const NEAR_CHUNK = 64 * 1024;
interface NearPage { base: NativePointer; used: number }
const nearPages: NearPage[] = [];

/** Frida allocations that must stay referenced (a collected NativePointer from
 *  Memory.alloc frees its memory). */
const keepAlive: NativePointer[] = [];

/** Keeps `p` referenced for the script's life. */
export function retain(p: NativePointer): void {
    keepAlive.push(p);
}

/** True when `a` and `b` are less than `distance` bytes apart. */
export function within(a: NativePointer, b: NativePointer, distance: number): boolean {
    const d = a.compare(b) >= 0 ? a.sub(b) : b.sub(a);
    return d.compare(ptr(distance)) < 0;
}

/** `size` bytes (8-aligned) of executable memory near `target`. */
export function nearAlloc(target: NativePointer, size: number): NativePointer {
    const need = Math.ceil(size / 8) * 8;
    let page = nearPages.find(p => p.used + need <= NEAR_CHUNK && within(p.base, target, NEAR_REACH));
    if (page === undefined) {
        let base = rawAllocNear(target, NEAR_CHUNK, NEAR_REACH);
        if (base === null) {
            // No gap found from the map: Frida searches harder (this page is
            // then freed with the script; see rawAlloc).
            base = Memory.alloc(NEAR_CHUNK, { near: target, maxDistance: NEAR_REACH });
            keepAlive.push(base);
        }
        Memory.protect(base, NEAR_CHUNK, "rwx");
        page = { base, used: 0 };
        nearPages.push(page);
    }
    const p = page.base.add(page.used);
    page.used += need;
    return p;
}

/** Little-endian bytes of a pointer (one native call: hooking thousands of
 *  functions builds thousands of these). */
export function u64Bytes(p: NativePointer): number[] {
    const hex = p.toString(16).padStart(16, "0");
    const b = new Array<number>(8);
    for (let i = 0; i < 8; i++) b[i] = parseInt(hex.substr(14 - 2 * i, 2), 16);
    return b;
}

/** `text` as UTF-8 bytes (a lone surrogate as the three bytes it would
 *  take, never an error), for C that reads strings out of raw memory. */
export function utf8(text: string): number[] {
    const out: number[] = [];
    for (const ch of text) {
        const c = ch.codePointAt(0)!;
        if (c < 0x80) out.push(c);
        else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
        else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
        else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
    return out;
}

/** `n`'s four bytes, little-endian (for machine code). */
export function u32Bytes(n: number): number[] {
    return [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff];
}
