// The shared hook's machine code, as bytes (hook.ts writes it into the
// target). Entered from a function's stub with r11 = its FuncState; the
// stack is exactly as the caller left it.
//
// Two paths through it. The fast one, in machine code here, records an
// untyped enter or exit (no capture plan, or a hot function) into the
// thread's stage (stage.ts) with plain stores: the thread state comes from
// the thread's descriptor (glibc keeps the first 32 pthread keys' values at
// a fixed offset from %fs, found at run time: see specificOffset in
// hook.ts), the clock from rdtsc (clock.ts), and it touches no vector
// register, so it saves and restores only the six general registers it
// uses. Anything else — a first call on a thread, a typed call, sampling, a
// new rate window, a full stage, a clock update in progress, a forked
// child, the JavaScript tracer's pump, a detached agent — takes the slow
// path: every argument register is saved and the CModule's fast_enter /
// fast_leave decide and record, as before.
//
//   push rbp; mov rbp, rsp; push rbx; sub rsp, 232      frame; rbx = FuncState
//   Regs at rbp-240 (rdi, rsi, rdx, rcx, r8, r9, rax, r10, xmm0-7)
//   CallState at rbp-48 (record u16, typed u16, sampled u32, thread state)
//   enter: fast path, or save the rest and call fast_enter
//   copy the caller's stack args; restore; call fs->trampoline
//   exit: fast path, or save xmm0/1 and call fast_leave
//   restore rax, rdx; lea rsp, [rbp-8]; pop rbx; pop rbp; ret
//
// Copying the stack arguments (rather than swapping the return address, as
// Interceptor.attach does) keeps the real return address where unwinders
// look for it; the frame is described by hand-written .eh_frame data
// (hook.ts), which needs the epilogue to be the code's last bytes.
import { CLOCK_WORDS } from "../clock.js";
import { CONFIG_BEFORE_RECORD, CONFIG_HOOKS_OFF } from "../ring.js";
import { FSTATE_COPY, FSTATE_ID, FSTATE_TRAMPOLINE, MAX_FUNCTIONS, WINDOW_NS } from "./layout.js";
import { STAGE_FLUSHED, STAGE_HEAD, STAGE_RECORDS, STAGE_RECS } from "./stage.js";

/** Addresses the code embeds, each as 8 little-endian bytes. */
export interface HookAddresses {
    /** The CModule's fast_enter and fast_leave (the slow paths). */
    enter: number[];
    leave: number[];
    /** The runtime's config page and plan table. */
    config: number[];
    plans: number[];
}

/** The code, and where its two calls into the CModule (`call rax`) are. */
export interface HookCode {
    bytes: number[];
    cCalls: number[];
}

// Registers.
const RAX = 0, RCX = 1, RDX = 2, RBX = 3, RSP = 4, RBP = 5, RSI = 6, RDI = 7, R8 = 8, R9 = 9, R10 = 10, R11 = 11;
// Condition codes (jcc).
const E = 4, NE = 5, AE = 3, A = 7;

// FuncState fields (layout.ts; cmodule.ts FuncState).
const FS_WINDOW = 0, FS_CALLS = 8, FS_EVERY = 16, FS_HOT = 32;
// ThreadState fields (cmodule.ts).
const TS_TID = 0, TS_BUSY = 4, TS_STAGE = 16;
// The frame.
const REGS = -240, REG_RDI = REGS, REG_RSI = REGS + 8, REG_RDX = REGS + 16, REG_RCX = REGS + 24;
const REG_R8 = REGS + 32, REG_R9 = REGS + 40, REG_RAX = REGS + 48, REG_R10 = REGS + 56;
const CALL_STATE = -48, CS_TYPED = CALL_STATE + 2, CS_SAMPLED = CALL_STATE + 4, CS_THREAD = CALL_STATE + 8;
const config = (word: number) => word * 8;
const KIND_ENTER = 1, KIND_EXIT = 2;

const SAVE_XMM = [
    0xf3, 0x0f, 0x7f, 0x85, 0x50, 0xff, 0xff, 0xff, // movdqu [rbp-176], xmm0
    0xf3, 0x0f, 0x7f, 0x8d, 0x60, 0xff, 0xff, 0xff, // movdqu [rbp-160], xmm1
    0xf3, 0x0f, 0x7f, 0x95, 0x70, 0xff, 0xff, 0xff, // movdqu [rbp-144], xmm2
    0xf3, 0x0f, 0x7f, 0x9d, 0x80, 0xff, 0xff, 0xff, // movdqu [rbp-128], xmm3
    0xf3, 0x0f, 0x7f, 0xa5, 0x90, 0xff, 0xff, 0xff, // movdqu [rbp-112], xmm4
    0xf3, 0x0f, 0x7f, 0xad, 0xa0, 0xff, 0xff, 0xff, // movdqu [rbp-96], xmm5
    0xf3, 0x0f, 0x7f, 0xb5, 0xb0, 0xff, 0xff, 0xff, // movdqu [rbp-80], xmm6
    0xf3, 0x0f, 0x7f, 0xbd, 0xc0, 0xff, 0xff, 0xff, // movdqu [rbp-64], xmm7
];
/** The same, loading (0x6f instead of 0x7f). */
const RESTORE_XMM = SAVE_XMM.map((b, i) => (i % 8 === 2 ? 0x6f : b));

/** A small x86-64 assembler: the few instruction forms the hook uses, every
 *  memory operand as [base + disp32], jumps to labels as rel32. */
class Asm {
    readonly bytes: number[] = [];
    private labels = new Map<string, number>();
    private fixups: Array<[number, string]> = [];

    emit(...b: number[]): this {
        this.bytes.push(...b);
        return this;
    }
    label(name: string): this {
        this.labels.set(name, this.bytes.length);
        return this;
    }
    private rex(w: number, reg: number, base: number): void {
        const r = 0x40 | (w << 3) | ((reg >> 3) << 2) | (base >> 3);
        if (r !== 0x40) this.emit(r);
    }
    private mem(reg: number, base: number, disp: number): void {
        this.emit(0x80 | ((reg & 7) << 3) | (base & 7));
        if ((base & 7) === RSP) this.emit(0x24);
        this.imm32(disp);
    }
    imm32(v: number): this {
        return this.emit(v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, (v >>> 24) & 0xff);
    }
    /** Two-operand op with a memory operand: `op reg, [base+disp]` (or the
     *  store form), 64-bit unless `size` is 4 or 2. */
    private op(opcode: number[], reg: number, base: number, disp: number, size = 8): this {
        if (size === 2) this.emit(0x66);
        this.rex(size === 8 ? 1 : 0, reg, base);
        this.emit(...opcode);
        this.mem(reg, base, disp);
        return this;
    }
    store(base: number, disp: number, reg: number, size = 8): this { return this.op([0x89], reg, base, disp, size); }
    load(reg: number, base: number, disp: number, size = 8): this { return this.op([0x8b], reg, base, disp, size); }
    orLoad(reg: number, base: number, disp: number): this { return this.op([0x0b], reg, base, disp); }
    subLoad(reg: number, base: number, disp: number): this { return this.op([0x2b], reg, base, disp); }
    addLoad(reg: number, base: number, disp: number): this { return this.op([0x03], reg, base, disp); }
    cmpLoad(reg: number, base: number, disp: number): this { return this.op([0x3b], reg, base, disp); }
    imulLoad(reg: number, base: number, disp: number): this { return this.op([0x0f, 0xaf], reg, base, disp); }
    lea(reg: number, base: number, disp: number): this { return this.op([0x8d], reg, base, disp); }
    /** `cmp size [base+disp], imm8` (sign-extended). */
    cmpImm(base: number, disp: number, imm: number, size = 8): this {
        this.op([0x83], 7, base, disp, size);
        return this.emit(imm & 0xff);
    }
    /** `mov size [base+disp], imm32` (sign-extended for 8 bytes). */
    storeImm(base: number, disp: number, imm: number, size = 8): this {
        this.op([0xc7], 0, base, disp, size);
        return this.imm32(imm);
    }
    incMem(base: number, disp: number): this { return this.op([0xff], 0, base, disp); }
    movImm64(reg: number, value: number[]): this {
        this.rex(1, 0, reg);
        return this.emit(0xb8 + (reg & 7), ...value);
    }
    /** `op dst, src` between 64-bit registers (op: the `r/m, reg` opcode). */
    private rr(opcode: number, dst: number, src: number): this {
        this.rex(1, src, dst);
        return this.emit(opcode, 0xc0 | ((src & 7) << 3) | (dst & 7));
    }
    mov(dst: number, src: number): this { return this.rr(0x89, dst, src); }
    or(dst: number, src: number): this { return this.rr(0x09, dst, src); }
    add(dst: number, src: number): this { return this.rr(0x01, dst, src); }
    test(a: number): this { return this.rr(0x85, a, a); }
    /** `shl`/`shr reg, imm8`. */
    shl(reg: number, n: number): this { this.rex(1, 0, reg); return this.emit(0xc1, 0xe0 | (reg & 7), n); }
    shr(reg: number, n: number): this { this.rex(1, 0, reg); return this.emit(0xc1, 0xe8 | (reg & 7), n); }
    /** `and reg32, imm32` (clears the upper half). */
    and32(reg: number, imm: number): this { this.rex(0, 0, reg); this.emit(0x81, 0xe0 | (reg & 7)); return this.imm32(imm); }
    /** `cmp reg, imm32` (sign-extended). */
    cmpRegImm(reg: number, imm: number): this { this.rex(1, 0, reg); this.emit(0x81, 0xf8 | (reg & 7)); return this.imm32(imm); }
    incReg(reg: number): this { this.rex(1, 0, reg); return this.emit(0xff, 0xc0 | (reg & 7)); }
    jcc(cc: number, to: string): this {
        this.emit(0x0f, 0x80 | cc);
        this.fixups.push([this.bytes.length, to]);
        return this.imm32(0);
    }
    jmp(to: string): this {
        this.emit(0xe9);
        this.fixups.push([this.bytes.length, to]);
        return this.imm32(0);
    }
    /** Resolves the jumps; returns the bytes. */
    finish(): number[] {
        for (const [at, name] of this.fixups) {
            const target = this.labels.get(name);
            if (target === undefined) throw new Error(`hook code: no label ${name}`);
            const rel = target - (at + 4);
            for (let i = 0; i < 4; i++) this.bytes[at + i] = (rel >> (8 * i)) & 0xff;
        }
        return this.bytes;
    }
}

/** Jumps to `bail` unless config words 5 (forked child), CONFIG_BEFORE_RECORD
 *  and CONFIG_HOOKS_OFF are 0 and the counter clock is on. cfg: the config
 *  page's register; uses rcx. */
function requireFastConfig(a: Asm, cfg: number, bail: string): void {
    a.load(RCX, cfg, config(5)).orLoad(RCX, cfg, config(CONFIG_BEFORE_RECORD)).orLoad(RCX, cfg, config(CONFIG_HOOKS_OFF));
    a.jcc(NE, bail);
    a.cmpImm(cfg, config(CLOCK_WORDS.ON), 0).jcc(E, bail);
}

/** Jumps to `bail` if the function has a capture plan. Uses rcx, rdx. */
function requireNoPlan(a: Asm, addrs: HookAddresses, bail: string): void {
    a.load(RCX, RBX, FSTATE_ID, 4).and32(RCX, MAX_FUNCTIONS - 1);
    a.movImm64(RDX, addrs.plans);
    // cmp qword [rdx + rcx*8], 0
    a.emit(0x48, 0x83, 0x3c, 0xca, 0x00).jcc(NE, bail);
}

/** The thread's stage into rcx, or jumps to `bail` (none, or full). Uses rdx. */
function requireStageRoom(a: Asm, bail: string): void {
    a.load(RCX, R11, TS_STAGE).test(RCX).jcc(E, bail);
    a.load(RDX, RCX, STAGE_HEAD).subLoad(RDX, RCX, STAGE_FLUSHED).cmpRegImm(RDX, STAGE_RECORDS).jcc(AE, bail);
}

/** rax = now (ns), as clock.ts's NOW does from the counter; jumps to `bail`
 *  when that needs clock_gettime (an update in progress, an old anchor).
 *  cfg: the config page's register; uses rdx, r10. */
function readClock(a: Asm, cfg: number, bail: string): void {
    a.load(R10, cfg, config(CLOCK_WORDS.SEQ));
    a.emit(0x41, 0xf6, 0xc2, 0x01).jcc(NE, bail); //  test r10b, 1
    a.emit(0x0f, 0x31); //                              rdtsc
    a.shl(RDX, 32).or(RAX, RDX).subLoad(RAX, cfg, config(CLOCK_WORDS.TSC));
    a.mov(RDX, RAX).shr(RDX, 32).jcc(NE, bail);
    a.imulLoad(RAX, cfg, config(CLOCK_WORDS.MULT)).shr(RAX, 32).addLoad(RAX, cfg, config(CLOCK_WORDS.NS));
    a.cmpLoad(R10, cfg, config(CLOCK_WORDS.SEQ)).jcc(NE, bail);
}

/** Writes the record (ts in rax, value in `value`, kind) at the stage's
 *  head (stage in rcx, thread state in r11) and moves the head. Uses rdx, r10. */
function stageRecord(a: Asm, value: number, kind: number): void {
    a.load(RDX, RCX, STAGE_HEAD);
    a.mov(R10, RDX).and32(R10, STAGE_RECORDS - 1).shl(R10, 5).add(R10, RCX);
    a.store(R10, STAGE_RECS, RAX);
    a.load(RAX, RBX, FSTATE_ID, 4).store(R10, STAGE_RECS + 8, RAX, 4);
    a.load(RAX, R11, TS_TID, 4).store(R10, STAGE_RECS + 12, RAX, 4);
    a.store(R10, STAGE_RECS + 16, value);
    a.storeImm(R10, STAGE_RECS + 24, kind); // kind, and extra = 0
    a.incReg(RDX).store(RCX, STAGE_HEAD, RDX);
}

/** The hook's code. `specificOffset`: where the thread's state is, from
 *  %fs (null: unknown, every enter takes the slow path). */
export function hookCode(addrs: HookAddresses, specificOffset: number | null): HookCode {
    const a = new Asm();
    const cCalls: number[] = [];
    const callC = (fn: number[]) => {
        a.movImm64(RAX, fn);
        cCalls.push(a.bytes.length);
        a.emit(0xff, 0xd0); // call rax
    };
    // Prologue.
    a.emit(0x55, 0x48, 0x89, 0xe5, 0x53); //            push rbp; mov rbp, rsp; push rbx
    a.emit(0x48, 0x81, 0xec).imm32(232); //             sub rsp, 232
    a.mov(RBX, R11);
    for (const [reg, at] of [[RDI, REG_RDI], [RSI, REG_RSI], [RDX, REG_RDX], [RCX, REG_RCX], [RAX, REG_RAX], [R10, REG_R10]]) {
        a.store(RBP, at, reg);
    }

    // Enter, fast: the thread state in r11, config in rsi.
    if (specificOffset === null) a.emit(0x4d, 0x31, 0xdb); //  xor r11, r11
    else a.emit(0x64, 0x4c, 0x8b, 0x1c, 0x25).imm32(specificOffset); // mov r11, fs:[off]
    a.test(R11).jcc(E, "slow_enter");
    a.movImm64(RSI, addrs.config);
    requireFastConfig(a, RSI, "slow_enter");
    a.cmpImm(R11, TS_BUSY, 0, 4).jcc(NE, "slow_enter");
    a.cmpImm(RBX, FS_EVERY, 1).jcc(A, "slow_enter");
    a.cmpImm(RBX, FS_HOT, 0).jcc(NE, "enter_untyped");
    requireNoPlan(a, addrs, "slow_enter");
    a.label("enter_untyped");
    requireStageRoom(a, "slow_enter");
    // Busy from here: a signal handler's traced call records nothing.
    a.storeImm(R11, TS_BUSY, 1, 4);
    readClock(a, RSI, "enter_bail");
    a.mov(RDX, RAX).subLoad(RDX, RBX, FS_WINDOW).cmpRegImm(RDX, WINDOW_NS).jcc(AE, "enter_bail");
    a.incMem(RBX, FS_CALLS);
    stageRecord(a, RDI, KIND_ENTER);
    a.storeImm(R11, TS_BUSY, 0, 4);
    // CallState: record 1, typed 0 (this enter had no plan to follow),
    // sampled 0, the thread state.
    a.storeImm(RBP, CALL_STATE, 1).store(RBP, CS_THREAD, R11);
    a.jmp("call_original");

    // Enter, slow: the CModule decides and records.
    a.label("enter_bail");
    a.storeImm(R11, TS_BUSY, 0, 4);
    a.label("slow_enter");
    a.store(RBP, REG_R8, R8).store(RBP, REG_R9, R9).emit(...SAVE_XMM);
    a.mov(RDI, RBX).lea(RSI, RBP, REGS).lea(RDX, RBP, 16).lea(RCX, RBP, CALL_STATE);
    callC(addrs.enter);
    a.load(R8, RBP, REG_R8).load(R9, RBP, REG_R9).emit(...RESTORE_XMM);

    // The original, with the caller's stack arguments copied below.
    a.label("call_original");
    // (rep movsb costs ~10 ns even when it copies nothing: skipped then.)
    a.load(RCX, RBX, FSTATE_COPY).test(RCX).jcc(E, "copied");
    a.emit(0x48, 0x29, 0xcc); //                         sub rsp, rcx
    a.mov(RDI, RSP).lea(RSI, RBP, 16).emit(0xf3, 0xa4); //  rep movsb
    a.label("copied");
    for (const [reg, at] of [[RDI, REG_RDI], [RSI, REG_RSI], [RDX, REG_RDX], [RCX, REG_RCX], [RAX, REG_RAX], [R10, REG_R10]]) {
        a.load(reg, RBP, at);
    }
    a.emit(0xff, 0x53, FSTATE_TRAMPOLINE); //            call [rbx+trampoline]

    // Exit: RetRegs (rax, rdx, xmm0, xmm1) at rsp = rbp-240.
    a.lea(RSP, RBP, REGS).store(RSP, 0, RAX).store(RSP, 8, RDX);
    a.cmpImm(RBP, CALL_STATE, 0, 2).jcc(E, "done");
    a.movImm64(RSI, addrs.config);
    requireFastConfig(a, RSI, "slow_exit");
    a.cmpImm(RBP, CS_SAMPLED, 0, 4).jcc(NE, "slow_exit");
    a.load(R11, RBP, CS_THREAD);
    a.cmpImm(RBP, CS_TYPED, 0, 2).jcc(E, "exit_untyped");
    requireNoPlan(a, addrs, "slow_exit");
    a.label("exit_untyped");
    requireStageRoom(a, "slow_exit");
    a.storeImm(R11, TS_BUSY, 1, 4);
    readClock(a, RSI, "exit_bail");
    a.load(RDI, RSP, 0);
    stageRecord(a, RDI, KIND_EXIT);
    a.storeImm(R11, TS_BUSY, 0, 4);
    a.jmp("done");

    a.label("exit_bail");
    a.storeImm(R11, TS_BUSY, 0, 4);
    a.label("slow_exit");
    a.emit(0xf3, 0x0f, 0x7f, 0x44, 0x24, 0x10); //       movdqu [rsp+16], xmm0
    a.emit(0xf3, 0x0f, 0x7f, 0x4c, 0x24, 0x20); //       movdqu [rsp+32], xmm1
    a.mov(RDI, RBX).mov(RSI, RSP).lea(RDX, RBP, CALL_STATE);
    callC(addrs.leave);
    a.emit(0xf3, 0x0f, 0x6f, 0x44, 0x24, 0x10); //       movdqu xmm0, [rsp+16]
    a.emit(0xf3, 0x0f, 0x6f, 0x4c, 0x24, 0x20); //       movdqu xmm1, [rsp+32]

    // Epilogue: the code's last bytes (the unwind info says so).
    a.label("done");
    a.load(RAX, RSP, 0).load(RDX, RSP, 8);
    a.emit(0x48, 0x8d, 0x65, 0xf8, 0x5b, 0x5d, 0xc3); // lea rsp, [rbp-8]; pop rbx; pop rbp; ret
    return { bytes: a.finish(), cCalls };
}
