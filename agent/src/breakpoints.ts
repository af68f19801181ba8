// Breakpoints, logpoints and stepping.
//
// A site is an `int3` written over the first byte of an instruction, caught
// by the process exception handler in the thread that hit it. Pausing blocks
// only that thread (recv().wait() inside the handler; other threads, RPC and
// memory access go on). Resuming never removes the int3: the thread continues
// in a displaced copy of the instruction (relocated next to it, followed by
// a jump back), and a `call` is carried out by hand (return address pushed,
// pc set to the callee) so the callee returns into the original code — so
// other threads can hit the same site at any time.
//
// The daemon decides everything that needs debug info: which addresses,
// where variables live (sent as descriptors that this file reads), and which
// addresses end a step. Stepping plants temporary sites for one thread; each
// carries a frame check (a register plus offset that must equal the frame
// address the step started in) so recursion and other threads pass through.
import { backtrace } from "./backtrace.js";
import { nearAlloc } from "./native/memory.js";
import { asOwnCode } from "./native/own_code.js";
import { patchCodeNow, setCodeGuard } from "./native/patch.js";
import { inRedirectedPrologue } from "./native/redirect.js";
import { BreakpointSpec, DaemonMessageOf, ResumeOrder, StepStop, TypeDesc, VarDesc, receive, send_ } from "./protocol.js";

interface CompiledBreakpoint {
    spec: BreakpointSpec;
    address: NativePointer;
    condition: ((...a: unknown[]) => unknown) | null;
    /** Literal text and compiled `{expression}` parts of a logpoint message. */
    parts: Array<string | ((...a: unknown[]) => unknown)>;
    hits: number;
    errors: number;
}

/** One instruction carrying an int3, and how to execute it displaced. */
interface Site {
    address: NativePointer;
    original: number;
    next: NativePointer;
    /** For calls: the operand, evaluated at hit time. */
    call: X86Instruction | null;
    /** Displaced copy (non-calls). */
    displaced: NativePointer | null;
    breakpoints: Set<CompiledBreakpoint>;
    /** Threads with a step stop here, and the frame check of each. */
    temps: Map<number, TempStop>;
    planted: boolean;
}

interface TempStop {
    /** [DWARF register, offset, expected value]: the stop counts only when reg + offset equals it. */
    frame: [number, number, string] | null;
    /** A call site of the line being stepped into (asks the daemon where the callee's body starts). */
    call: boolean;
}

const sites = new Map<string, Site>();
const breakpoints = new Map<string, CompiledBreakpoint>();
/** Temporary stops per stepping thread (addresses as strings). */
const stepping = new Map<number, Set<string>>();

const DWARF_REGS = ["rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
    "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"];

let clock: NativeFunction<number, [NativePointer, NativePointer]> | null = null;
let clockBuf: NativePointer | null = null;

export function monotonicNs(): string {
    if (clock === null) {
        clock = new NativeFunction(Module.findGlobalExportByName("clock_gettime")!, "int", ["int", "pointer"]) as never;
        clockBuf = Memory.alloc(16);
    }
    (clock as unknown as (id: number, p: NativePointer) => number)(1, clockBuf!);
    const s = BigInt(clockBuf!.readU64().toString());
    const ns = BigInt(clockBuf!.add(8).readU64().toString());
    return (s * 1000000000n + ns).toString();
}

function register(ctx: CpuContext, dwarf: number): NativePointer {
    const name = DWARF_REGS[dwarf];
    if (name === undefined) throw new Error(`register ${dwarf} is not readable here`);
    return (ctx as unknown as Record<string, NativePointer>)[name];
}

function registers(ctx: CpuContext): Record<string, string> {
    const out: Record<string, string> = {};
    for (const name of DWARF_REGS) out[name] = (ctx as unknown as Record<string, NativePointer>)[name].toString();
    return out;
}

/** A pointer value in conditions: compares as a number, prints as hex. */
class Pointer {
    constructor(readonly p: NativePointer) {}
    valueOf(): number { return parseInt(this.p.toString(), 16); }
    toString(): string { return this.p.toString(); }
    toJSON(): string { return this.p.toString(); }
}

function readAt(t: TypeDesc, at: NativePointer, depth: number): unknown {
    switch (t.k) {
        case "int":
            if (t.size === 1) return t.signed ? at.readS8() : at.readU8();
            if (t.size === 2) return t.signed ? at.readS16() : at.readU16();
            if (t.size === 4) return t.signed ? at.readS32() : at.readU32();
            return t.signed ? at.readS64().toNumber() : at.readU64().toNumber();
        case "float":
            return t.size === 4 ? at.readFloat() : at.readDouble();
        case "bool":
            return at.readU8() !== 0;
        case "enum": {
            const v = readAt({ k: "int", size: t.size, signed: t.signed }, at, depth) as number;
            return t.names[String(v)] ?? v;
        }
        case "ptr":
            return pointerValue(t, at.readPointer(), depth);
        case "struct": {
            const o: Record<string, unknown> = {};
            for (const [name, off, ft] of t.fields) {
                try {
                    o[name] = depth > 0 ? readAt(ft, at.add(off), depth - 1) : "…";
                } catch (_e) {
                    o[name] = "<unreadable>";
                }
            }
            return o;
        }
        default:
            return new Pointer(at);
    }
}

/** A C string of at most `max` bytes, read page by page (never past its NUL). */
function cString(p: NativePointer, max: number): string {
    let out = "";
    let at = p;
    let left = max;
    while (left > 0) {
        const inPage = Process.pageSize - at.and(Process.pageSize - 1).toInt32();
        const n = Math.min(left, inPage);
        const bytes = new Uint8Array(at.readByteArray(n)!);
        const nul = bytes.indexOf(0);
        if (nul >= 0) return out + (nul > 0 ? at.readUtf8String(nul) : "");
        out += at.readUtf8String(n);
        at = at.add(n);
        left -= n;
    }
    return out + "…";
}

function pointerValue(t: { str?: boolean; to?: TypeDesc }, p: NativePointer, depth: number): unknown {
    if (p.isNull()) return null;
    if (t.str) {
        try { return cString(p, 256); } catch (_e) { return new Pointer(p); }
    }
    // Pointers to structs read as the struct, so `cfg.rate` works on `struct config *cfg`.
    if (t.to !== undefined && t.to.k === "struct" && depth > 0) {
        try { return readAt(t.to, p, depth - 1); } catch (_e) { return new Pointer(p); }
    }
    return new Pointer(p);
}

function cfaOf(bp: BreakpointSpec, ctx: CpuContext): NativePointer | null {
    return bp.cfa === null ? null : register(ctx, bp.cfa[0]).add(bp.cfa[1]);
}

function readVar(v: VarDesc, ctx: CpuContext, cfa: NativePointer | null): unknown {
    switch (v.loc.k) {
        case "const":
            return v.loc.v;
        case "none":
            throw new Error(`${v.name} is ${v.loc.why}`);
        case "reg": {
            const r = register(ctx, v.loc.reg);
            const t = v.type;
            if (t.k === "ptr") return pointerValue(t, r, 2);
            if (t.k === "int" || t.k === "enum") {
                const bits = t.size * 8;
                let n = uint64(r.toString());
                if (bits < 64) n = n.and(uint64(1).shl(bits).sub(1));
                let value = n.toNumber();
                if (t.signed && bits < 64 && value >= 2 ** (bits - 1)) value -= 2 ** bits;
                if (t.signed && bits === 64) value = int64(r.toString()).toNumber();
                return t.k === "enum" ? (t.names[String(value)] ?? value) : value;
            }
            if (t.k === "bool") return !r.and(0xff).isNull();
            return new Pointer(r);
        }
        case "mem": {
            let at: NativePointer;
            if (v.loc.base === "cfa") {
                if (cfa === null) throw new Error(`the frame address of ${v.name} is unknown here`);
                at = cfa.add(v.loc.off);
            } else if (v.loc.base === "reg") {
                at = register(ctx, v.loc.reg!).add(v.loc.off);
            } else {
                at = ptr(String(v.loc.off));
            }
            return readAt(v.type, at, 2);
        }
    }
}

function compileExpression(source: string, names: string[]): (...a: unknown[]) => unknown {
    return new Function("args", ...names, `"use strict"; return (${source});`) as (...a: unknown[]) => unknown;
}

/** Values of the variables an expression may use, read when a site is hit. */
function bindings(bp: CompiledBreakpoint, ctx: CpuContext): unknown[] {
    const cfa = cfaOf(bp.spec, ctx);
    const value = (v: VarDesc) => {
        try { return readVar(v, ctx, cfa); } catch (e) { return undefined; }
    };
    const args = bp.spec.vars.filter(v => v.param).map(value);
    return [args, ...bp.spec.vars.map(value)];
}

function render(v: unknown): string {
    if (typeof v === "string") return v;
    if (v instanceof Pointer) return v.toString();
    if (v !== null && typeof v === "object") {
        try { return JSON.stringify(v); } catch (_e) { return String(v); }
    }
    return String(v);
}

function compile(spec: BreakpointSpec): CompiledBreakpoint {
    const names = spec.vars.map(v => v.name);
    const condition = spec.condition ? compileExpression(spec.condition, names) : null;
    const parts: CompiledBreakpoint["parts"] = [];
    if (spec.message !== undefined) {
        const re = /\{([^{}]+)\}/g;
        let last = 0;
        let m: RegExpExecArray | null;
        while ((m = re.exec(spec.message)) !== null) {
            if (m.index > last) parts.push(spec.message.slice(last, m.index));
            parts.push(compileExpression(m[1], names));
            last = m.index + m[0].length;
        }
        if (last < spec.message.length) parts.push(spec.message.slice(last));
    }
    return { spec, address: ptr(spec.address), condition, parts, hits: 0, errors: 0 };
}

function siteAt(address: NativePointer): Site {
    const key = address.toString();
    let site = sites.get(key);
    if (site !== undefined) return site;
    if (inRedirectedPrologue(address)) {
        throw new Error("it is in the first bytes of a traced function (they hold the jump to the tracer's hook); " +
            "stop tracing that function or break on a later line");
    }
    const insn = Instruction.parse(address) as X86Instruction;
    let displaced: NativePointer | null = null;
    let call: X86Instruction | null = null;
    if (insn.mnemonic === "call") {
        call = insn;
    } else {
        displaced = nearAlloc(address, 64);
        const w = new X86Writer(displaced, { pc: displaced });
        const rl = new X86Relocator(address, w);
        if (rl.readOne() === 0) throw new Error(`cannot relocate the instruction at ${address} (${insn})`);
        rl.writeOne();
        w.putJmpAddress(insn.next);
        w.flush();
    }
    site = {
        address, original: address.readU8(), next: insn.next, call, displaced,
        breakpoints: new Set(), temps: new Map(), planted: false,
    };
    sites.set(key, site);
    return site;
}

/** Writes or removes int3s to match who uses each site. */
function syncSites(changed: Site[]): void {
    const writes: Array<[NativePointer, number[]]> = [];
    for (const s of changed) {
        const want = s.breakpoints.size > 0 || s.temps.size > 0;
        if (want === s.planted) continue;
        writes.push([s.address, [want ? 0xcc : s.original]]);
        s.planted = want;
    }
    if (writes.length > 0) patchCodeNow(writes);
}

/** Where a call at `site` goes, from the thread's registers. */
function callTarget(insn: X86Instruction, ctx: CpuContext): NativePointer {
    const op = insn.operands[0];
    if (op.type === "imm") return ptr(op.value.toString());
    if (op.type === "reg") return register(ctx, DWARF_REGS.indexOf(op.value as string));
    const m = op.value as { base?: string; index?: string; scale: number; disp: number };
    const reg = (name: string | undefined) => {
        if (name === undefined) return ptr(0);
        if (name === "rip") return insn.next;
        return (ctx as unknown as Record<string, NativePointer>)[name];
    };
    const at = reg(m.base).add(reg(m.index).toUInt32() * m.scale).add(m.disp);
    return at.readPointer();
}

/** Continues the thread past `site` without removing its int3. */
function resumePast(site: Site, ctx: CpuContext): void {
    if (site.call !== null) {
        const target = callTarget(site.call, ctx);
        const sp = ctx.sp.sub(8);
        sp.writePointer(site.next);
        (ctx as X64CpuContext).rsp = sp;
        ctx.pc = target;
    } else {
        ctx.pc = site.displaced!;
    }
}

function frameMatches(t: TempStop, ctx: CpuContext): boolean {
    if (t.frame === null) return true;
    return register(ctx, t.frame[0]).add(t.frame[1]).equals(ptr(t.frame[2]));
}

function clearSteps(tid: number): void {
    const mine = stepping.get(tid);
    if (mine === undefined) return;
    stepping.delete(tid);
    const changed: Site[] = [];
    for (const key of mine) {
        const s = sites.get(key);
        if (s !== undefined && s.temps.delete(tid)) changed.push(s);
    }
    syncSites(changed);
}

/** Call instructions in [from, to), decoding through planted sites. */
function callsIn(from: NativePointer, to: NativePointer): string[] {
    const out: string[] = [];
    let at = from;
    for (let n = 0; n < 4096 && at.compare(to) < 0; n++) {
        const s = sites.get(at.toString());
        if (s !== undefined && s.planted) {
            if (s.call !== null) out.push(at.toString());
            at = s.next;
            continue;
        }
        const insn = Instruction.parse(at);
        if (insn.mnemonic === "call") out.push(at.toString());
        at = insn.next;
    }
    return out;
}

function addStops(tid: number, stops: StepStop[]): string[] {
    const failed: string[] = [];
    const changed: Site[] = [];
    const mine = stepping.get(tid) ?? new Set<string>();
    for (const [address, frame, call] of stops) {
        try {
            const s = siteAt(ptr(address));
            s.temps.set(tid, { frame, call });
            mine.add(s.address.toString());
            changed.push(s);
        } catch (e) {
            failed.push(`${address}: ${(e as Error).message}`);
        }
    }
    stepping.set(tid, mine);
    syncSites(changed);
    return failed;
}

/** Pauses running thread `tid` at the first of `stops` it reaches (the
 *  daemon reports it as a pause); the stops that could not be planted. */
export function armPause(tid: number, stops: StepStop[]): string[] {
    return addStops(tid, stops);
}

/** Blocks the thread until the daemon says how to go on. */
function pause(tid: number, site: Site, ctx: CpuContext, bp: CompiledBreakpoint | null): void {
    const ts = monotonicNs();
    clearSteps(tid);
    // Set by the callback while this thread waits (`as`: no narrowing to "continue").
    let order = { action: "continue" } as ResumeOrder;
    const op = receive(`resume-${tid}`, m => { order = m; });
    send_({
        type: "paused", tid, pid: Process.id, ts,
        reason: bp === null ? "step" : "breakpoint",
        breakpoint: bp?.spec.id ?? null, hits: bp?.hits ?? 0,
        address: site.address.toString(),
        registers: registers(ctx),
        backtrace: backtrace(ctx),
    });
    op.wait();
    // Marked again: the tracer may have started while this thread waited.
    asOwnCode(() => resume(tid, site, ctx, order));
}

/** Plants the stops a paused thread's order asks for. */
function resume(tid: number, site: Site, ctx: CpuContext, order: ResumeOrder): void {
    if (order.action === "step") {
        const stops = order.stops;
        if (order.scan) {
            try {
                for (const c of callsIn(ptr(order.scan[0]), ptr(order.scan[1]))) {
                    stops.push([c, order.scanFrame ?? null, true]);
                }
            } catch (_e) {
                // Undecodable bytes: the step into becomes a step over.
            }
        }
        const failed = addStops(tid, stops);
        if (failed.length > 0) send_({ type: "step_failed", tid, failed });
        // Paused on a call of the line stepped into: it runs next, not through its trap.
        if (site.call !== null && site.temps.get(tid)?.call === true) stepIntoCall(tid, site, ctx);
    }
}

/** A call site of a line being stepped into: plant a stop in the callee's
 *  body when the daemon knows it (code with line info). */
function stepIntoCall(tid: number, site: Site, ctx: CpuContext): void {
    let target: NativePointer;
    try { target = callTarget(site.call!, ctx); } catch (_e) { return; }
    // Set by the callback while this thread waits.
    let answer = null as string | null;
    const op = receive(`callee-${tid}`, m => { answer = m.address; });
    send_({ type: "step_call", tid, target: target.toString() });
    op.wait();
    if (answer !== null) addStops(tid, [[answer, null, false]]);
}

let ownPid = 0;
let getpid: NativeFunction<number, []> | null = null;

/** The exception handler's part: true when the trap was one of ours. */
export function onTrap(details: ExceptionDetails): boolean {
    if (details.type !== "breakpoint") return false;
    const ctx = details.context;
    // The int3 has executed: pc is one past it.
    const at = ctx.pc.sub(1);
    const site = sites.get(at.toString());
    if (site === undefined) return false;
    if (!site.planted) {
        // Removed while this thread was trapping: run the restored instruction.
        if (at.readU8() === 0xcc) return false;
        ctx.pc = at;
        return true;
    }
    const tid = Process.getCurrentThreadId();
    if (getpid !== null && (getpid() as number) !== ownPid) {
        // A forked child inherits the int3s but not this session: run on.
        resumePast(site, ctx);
        return true;
    }
    let paused = false;
    for (const bp of site.breakpoints) {
        if (paused) break;
        let pass = true;
        if (bp.condition !== null || bp.parts.length > 0) {
            const values = bindings(bp, ctx);
            if (bp.condition !== null) {
                try {
                    pass = Boolean(bp.condition(...values));
                } catch (e) {
                    pass = false;
                    if (bp.errors++ < 3) send_({ type: "breakpoint_error", id: bp.spec.id, error: String((e as Error).message ?? e) });
                }
            }
            if (pass && bp.spec.message !== undefined) {
                bp.hits++;
                const text = bp.parts.map(p => {
                    if (typeof p === "string") return p;
                    try { return render(p(...values)); } catch (e) { return `<error: ${(e as Error).message ?? e}>`; }
                }).join("");
                send_({ type: "logpoint", id: bp.spec.id, tid, pid: Process.id, ts: monotonicNs(), message: text });
                continue;
            }
        }
        if (!pass) continue;
        if (bp.spec.message !== undefined) continue;
        bp.hits++;
        if (bp.spec.hitCount !== undefined && bp.hits < bp.spec.hitCount) continue;
        pause(tid, site, ctx, bp);
        paused = true;
    }
    if (!paused) {
        const temp = site.temps.get(tid);
        if (temp !== undefined && frameMatches(temp, ctx)) {
            if (temp.call) {
                stepIntoCall(tid, site, ctx);
            } else {
                pause(tid, site, ctx, null);
            }
        }
    }
    resumePast(site, ctx);
    return true;
}

/** Adds, replaces and removes breakpoints; answers what was done. */
export function updateBreakpoints(req: DaemonMessageOf<"breakpoints">): void {
    if (getpid === null) {
        getpid = new NativeFunction(Module.findGlobalExportByName("getpid")!, "int", []);
        ownPid = getpid() as number;
    }
    const installed: string[] = [];
    const failed: Array<[string, string]> = [];
    const changed: Site[] = [];
    for (const id of req.remove) {
        const bp = breakpoints.get(id);
        if (bp === undefined) continue;
        breakpoints.delete(id);
        const s = sites.get(bp.address.toString());
        if (s !== undefined) { s.breakpoints.delete(bp); changed.push(s); }
    }
    for (const spec of req.set ?? []) {
        try {
            const bp = compile(spec);
            const s = siteAt(bp.address);
            const old = breakpoints.get(spec.id);
            if (old !== undefined) {
                bp.hits = old.hits;
                sites.get(old.address.toString())?.breakpoints.delete(old);
            }
            breakpoints.set(spec.id, bp);
            s.breakpoints.add(bp);
            changed.push(s);
            installed.push(spec.id);
        } catch (e) {
            failed.push([spec.id, String((e as Error).message ?? e)]);
        }
    }
    syncSites(changed);
    send_({ type: "breakpoints_updated", id: req.id, installed, failed });
}

/** True when a breakpoint site lies in `[at, at + n)`. */
function siteWithin(at: NativePointer, n: number): boolean {
    for (const s of sites.values()) {
        if (s.planted && s.address.compare(at) >= 0 && s.address.compare(at.add(n)) < 0) return true;
    }
    return false;
}

setCodeGuard(siteWithin);
