// The eval stub: the frame evaluation function (PEP 523) the interpreter
// calls for every Python frame while Python functions are traced. It is
// machine code in raw memory that outlives the script, because every frame
// on every thread's stack at detach time was entered through it and
// returns through it: the C it calls (py_enter / py_leave, freed with the
// script) is reached through two pointers the detach clears, and the frame
// itself always runs in the interpreter's own evaluation function.
import { registerAtforkChild } from "../../native/atfork.js";
import { PROT_ALL, rawAlloc, u64Bytes } from "../../native/memory.js";

/** Where the stub reads its callees: py_enter, py_leave (0: not called)
 *  and the evaluation function it wraps; a marker that says a page is
 *  one of these stubs (a forked child's agent finds its parent's). */
const ENTER = 0, LEAVE = 8, EVAL = 16, MARK = 24;
const CODE = 64;
const MARKER = [0x53, 0x54, 0x52, 0x4f, 0x42, 0x45, 0x50, 0x59]; // "STROBEPY"
/** The fork-child handler, after the stub's code. */
const ATFORK = 256;

/** The stub: its entry point and its data words. */
export interface EvalStub {
    entry: NativePointer;
    setCallees(enter: NativePointer, leave: NativePointer): void;
    /** The evaluation function frames run in (the interpreter's default,
     *  or the one installed before the tracer's). */
    setEval(fn: NativePointer): void;
}

/** The evaluation function a stub at `entry` wraps, if `entry` is one of
 *  these stubs (a forked child's inherited one); null otherwise. */
export function wrappedBy(entry: NativePointer): NativePointer | null {
    const page = entry.sub(CODE);
    try {
        const mark = new Uint8Array(page.add(MARK).readByteArray(MARKER.length)!);
        if (!MARKER.every((b, i) => mark[i] === b)) return null;
        return page.add(EVAL).readPointer();
    } catch (_e) {
        return null;
    }
}

/** Writes the stub. Per frame: token = enter ? enter(ts, frame, throw) : 0;
 *  result = eval(ts, frame, throw); if (token && leave) leave(ts, frame,
 *  result, token); return result. */
export function writeEvalStub(): EvalStub {
    const page = rawAlloc(Process.pageSize, PROT_ALL);
    const code: number[] = [
        0x53, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57, // push rbx, r12, r13, r14, r15
        0x48, 0x83, 0xec, 0x10, //                                sub rsp, 16 (aligned for calls)
        0x48, 0x89, 0xfb, //                                      mov rbx, rdi (thread state)
        0x49, 0x89, 0xf4, //                                      mov r12, rsi (frame)
        0x41, 0x89, 0xd5, //                                      mov r13d, edx (throw flag)
        0x49, 0xbf, ...u64Bytes(page), //                         mov r15, data
        0x45, 0x31, 0xf6, //                                      xor r14d, r14d (token)
        0x49, 0x8b, 0x07, //                                      mov rax, [r15 + ENTER]
        0x48, 0x85, 0xc0, //                                      test rax, rax
        0x74, 0x05, //                                            jz .eval
        0xff, 0xd0, //                                            call rax
        0x49, 0x89, 0xc6, //                                      mov r14, rax
        // .eval:
        0x48, 0x89, 0xdf, //                                      mov rdi, rbx
        0x4c, 0x89, 0xe6, //                                      mov rsi, r12
        0x44, 0x89, 0xea, //                                      mov edx, r13d
        0x41, 0xff, 0x57, EVAL, //                                call [r15 + EVAL]
        0x4d, 0x85, 0xf6, //                                      test r14, r14
        0x74, 0x20, //                                            jz .ret
        0x4d, 0x8b, 0x5f, LEAVE, //                               mov r11, [r15 + LEAVE]
        0x4d, 0x85, 0xdb, //                                      test r11, r11
        0x74, 0x17, //                                            jz .ret
        0x48, 0x89, 0x04, 0x24, //                                mov [rsp], rax (result)
        0x48, 0x89, 0xdf, //                                      mov rdi, rbx
        0x4c, 0x89, 0xe6, //                                      mov rsi, r12
        0x48, 0x89, 0xc2, //                                      mov rdx, rax
        0x4c, 0x89, 0xf1, //                                      mov rcx, r14
        0x41, 0xff, 0xd3, //                                      call r11
        0x48, 0x8b, 0x04, 0x24, //                                mov rax, [rsp]
        // .ret:
        0x48, 0x83, 0xc4, 0x10, //                                add rsp, 16
        0x41, 0x5f, 0x41, 0x5e, 0x41, 0x5d, 0x41, 0x5c, 0x5b, //  pop r15, r14, r13, r12, rbx
        0xc3, //                                                  ret
    ];
    page.add(CODE).writeByteArray(code);
    page.add(MARK).writeByteArray(MARKER);
    // A forked child keeps the stub as its evaluation function, but the
    // callees it points at are the parent agent's, which the child does
    // not have (a followed child gets an agent of its own): the child
    // clears them inside fork(), before any Python runs there. Machine
    // code in this page, like the stub.
    page.add(ATFORK).writeByteArray([
        0x48, 0xb8, ...u64Bytes(page), //         mov rax, page
        0x48, 0xc7, 0x00, 0, 0, 0, 0, //          mov qword [rax + ENTER], 0
        0x48, 0xc7, 0x40, LEAVE, 0, 0, 0, 0, //   mov qword [rax + LEAVE], 0
        0xc3, //                                  ret
    ]);
    registerAtforkChild(page.add(ATFORK));
    return {
        entry: page.add(CODE),
        setCallees(enter, leave) {
            // Enter first when clearing, leave first when setting: no frame
            // gets a token once clearing began, and a token given always
            // finds py_leave until then.
            if (enter.isNull()) {
                page.add(ENTER).writePointer(NULL);
                page.add(LEAVE).writePointer(NULL);
            } else {
                page.add(LEAVE).writePointer(leave);
                page.add(ENTER).writePointer(enter);
            }
        },
        setEval(fn) {
            page.add(EVAL).writePointer(fn);
        },
    };
}
