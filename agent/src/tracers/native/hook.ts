// ---------------------------------------------------------------------------
// The shared hook, in machine code. Entered from a function's stub with r11 =
// its FuncState; the stack is exactly as the caller left it.
//
//   push rbp; mov rbp, rsp; push rbx; sub rsp, 232    frame; rbx = FuncState
//   save rdi..r9, rax (vararg count), r10, xmm0-7      Regs at rbp-240
//   fast_enter(fs, &regs, rbp+16 (stack args), &callstate at rbp-48)
//   sub rsp, fs->copy; copy the caller's stack args   the original sees them
//   restore the registers; call fs->trampoline         where it expects them
//   save rax, rdx, xmm0, xmm1; fast_leave(fs, &ret, &callstate); restore
//   lea rsp, [rbp-8]; pop rbx; pop rbp; ret
//
// Copying the stack arguments (rather than swapping the return address, as
// Interceptor.attach does) keeps the real return address where unwinders
// look for it; the hook's own frame is described by hand-written .eh_frame
// data below.
// ---------------------------------------------------------------------------
import { rawAlloc, retain, u64Bytes } from "../../native/memory.js";
import { FSTATE_COPY, FSTATE_TRAMPOLINE } from "./layout.js";

const HOOK_SAVE = [
    0x48, 0x89, 0x3c, 0x24, //             mov [rsp], rdi
    0x48, 0x89, 0x74, 0x24, 0x08, //       mov [rsp+8], rsi
    0x48, 0x89, 0x54, 0x24, 0x10, //       mov [rsp+16], rdx
    0x48, 0x89, 0x4c, 0x24, 0x18, //       mov [rsp+24], rcx
    0x4c, 0x89, 0x44, 0x24, 0x20, //       mov [rsp+32], r8
    0x4c, 0x89, 0x4c, 0x24, 0x28, //       mov [rsp+40], r9
    0x48, 0x89, 0x44, 0x24, 0x30, //       mov [rsp+48], rax
    0x4c, 0x89, 0x54, 0x24, 0x38, //       mov [rsp+56], r10
    0xf3, 0x0f, 0x7f, 0x44, 0x24, 0x40, // movdqu [rsp+64], xmm0
    0xf3, 0x0f, 0x7f, 0x4c, 0x24, 0x50, // movdqu [rsp+80], xmm1
    0xf3, 0x0f, 0x7f, 0x54, 0x24, 0x60, // movdqu [rsp+96], xmm2
    0xf3, 0x0f, 0x7f, 0x5c, 0x24, 0x70, // movdqu [rsp+112], xmm3
    0xf3, 0x0f, 0x7f, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00, // movdqu [rsp+128], xmm4
    0xf3, 0x0f, 0x7f, 0xac, 0x24, 0x90, 0x00, 0x00, 0x00, // movdqu [rsp+144], xmm5
    0xf3, 0x0f, 0x7f, 0xb4, 0x24, 0xa0, 0x00, 0x00, 0x00, // movdqu [rsp+160], xmm6
    0xf3, 0x0f, 0x7f, 0xbc, 0x24, 0xb0, 0x00, 0x00, 0x00, // movdqu [rsp+176], xmm7
];

const HOOK_RESTORE = [
    0x48, 0x8b, 0xbd, 0x10, 0xff, 0xff, 0xff, // mov rdi, [rbp-240]
    0x48, 0x8b, 0xb5, 0x18, 0xff, 0xff, 0xff, // mov rsi, [rbp-232]
    0x48, 0x8b, 0x95, 0x20, 0xff, 0xff, 0xff, // mov rdx, [rbp-224]
    0x48, 0x8b, 0x8d, 0x28, 0xff, 0xff, 0xff, // mov rcx, [rbp-216]
    0x4c, 0x8b, 0x85, 0x30, 0xff, 0xff, 0xff, // mov r8, [rbp-208]
    0x4c, 0x8b, 0x8d, 0x38, 0xff, 0xff, 0xff, // mov r9, [rbp-200]
    0x48, 0x8b, 0x85, 0x40, 0xff, 0xff, 0xff, // mov rax, [rbp-192]
    0x4c, 0x8b, 0x95, 0x48, 0xff, 0xff, 0xff, // mov r10, [rbp-184]
    0xf3, 0x0f, 0x6f, 0x85, 0x50, 0xff, 0xff, 0xff, // movdqu xmm0, [rbp-176]
    0xf3, 0x0f, 0x6f, 0x8d, 0x60, 0xff, 0xff, 0xff, // movdqu xmm1, [rbp-160]
    0xf3, 0x0f, 0x6f, 0x95, 0x70, 0xff, 0xff, 0xff, // movdqu xmm2, [rbp-144]
    0xf3, 0x0f, 0x6f, 0x9d, 0x80, 0xff, 0xff, 0xff, // movdqu xmm3, [rbp-128]
    0xf3, 0x0f, 0x6f, 0xa5, 0x90, 0xff, 0xff, 0xff, // movdqu xmm4, [rbp-112]
    0xf3, 0x0f, 0x6f, 0xad, 0xa0, 0xff, 0xff, 0xff, // movdqu xmm5, [rbp-96]
    0xf3, 0x0f, 0x6f, 0xb5, 0xb0, 0xff, 0xff, 0xff, // movdqu xmm6, [rbp-80]
    0xf3, 0x0f, 0x6f, 0xbd, 0xc0, 0xff, 0xff, 0xff, // movdqu xmm7, [rbp-64]
];

/** Where the hook's code lives, and its length (for the unwind info). */
let hookCode: { start: NativePointer; length: number } | null = null;
let hookCalls: number[] = [];

/** Writes the hook (calling `enter` and `leave`, the CModule's fast_enter and
 *  fast_leave) into raw memory and returns its address. */
export function writeHook(enter: NativePointer, leave: NativePointer): NativePointer {
    const code: number[] = [
        0x55, //                               push rbp
        0x48, 0x89, 0xe5, //                   mov rbp, rsp
        0x53, //                               push rbx
        0x48, 0x81, 0xec, 0xe8, 0x00, 0x00, 0x00, // sub rsp, 232
        ...HOOK_SAVE,
        0x4c, 0x89, 0xdb, //                   mov rbx, r11
        0x48, 0x89, 0xdf, //                   mov rdi, rbx
        0x48, 0x89, 0xe6, //                   mov rsi, rsp
        0x48, 0x8d, 0x55, 0x10, //             lea rdx, [rbp+16]
        0x48, 0x8d, 0x8c, 0x24, 0xc0, 0x00, 0x00, 0x00, // lea rcx, [rsp+192]
        0x48, 0xb8, ...u64Bytes(enter), //    mov rax, fast_enter
        0xff, 0xd0, //                         call rax
        0x48, 0x8b, 0x4b, FSTATE_COPY, //      mov rcx, [rbx+copy]
        0x48, 0x29, 0xcc, //                   sub rsp, rcx
        0x48, 0x89, 0xe7, //                   mov rdi, rsp
        0x48, 0x8d, 0x75, 0x10, //             lea rsi, [rbp+16]
        0xf3, 0xa4, //                         rep movsb
        ...HOOK_RESTORE,
        0xff, 0x53, FSTATE_TRAMPOLINE, //      call [rbx+trampoline]
        0x48, 0x8d, 0xa5, 0x10, 0xff, 0xff, 0xff, // lea rsp, [rbp-240]
        0x48, 0x89, 0x04, 0x24, //             mov [rsp], rax
        0x48, 0x89, 0x54, 0x24, 0x08, //       mov [rsp+8], rdx
        0xf3, 0x0f, 0x7f, 0x44, 0x24, 0x10, // movdqu [rsp+16], xmm0
        0xf3, 0x0f, 0x7f, 0x4c, 0x24, 0x20, // movdqu [rsp+32], xmm1
        0x48, 0x89, 0xdf, //                   mov rdi, rbx
        0x48, 0x89, 0xe6, //                   mov rsi, rsp
        0x48, 0x8d, 0x94, 0x24, 0xc0, 0x00, 0x00, 0x00, // lea rdx, [rsp+192]
        0x48, 0xb8, ...u64Bytes(leave), //    mov rax, fast_leave
        0xff, 0xd0, //                         call rax
        0x48, 0x8b, 0x04, 0x24, //             mov rax, [rsp]
        0x48, 0x8b, 0x54, 0x24, 0x08, //       mov rdx, [rsp+8]
        0xf3, 0x0f, 0x6f, 0x44, 0x24, 0x10, // movdqu xmm0, [rsp+16]
        0xf3, 0x0f, 0x6f, 0x4c, 0x24, 0x20, // movdqu xmm1, [rsp+32]
        0x48, 0x8d, 0x65, 0xf8, //             lea rsp, [rbp-8]
        0x5b, //                               pop rbx
        0x5d, //                               pop rbp
        0xc3, //                               ret
    ];
    const start = rawAlloc(Process.pageSize);
    start.writeByteArray(code);
    Memory.protect(start, Process.pageSize, "r-x");
    hookCode = { start, length: code.length };
    // Where the two `call rax` (fast_enter, fast_leave) are: detach turns
    // them into no-ops, so a call in flight returns without the CModule.
    const calls: number[] = [];
    for (let i = 0; i + 1 < code.length; i++) {
        if (code[i] === 0xff && code[i + 1] === 0xd0 && code[i - 10] === 0x48 && code[i - 9] === 0xb8) calls.push(i);
    }
    hookCalls = calls;
    return start;
}

/** Turns the hook's two calls into the CModule into no-ops (the agent
 *  unloads and the CModule goes with it): a call in flight then returns
 *  through the hook without recording. */
export function silenceHook(): void {
    if (hookCode === null) return;
    const { start } = hookCode;
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
    if (unwindRegistered || hookCode === null) return;
    const register = Module.findGlobalExportByName("__register_frame");
    if (register === null) return;
    const { start, length } = hookCode;
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
