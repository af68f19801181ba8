// Frida's own threads (the script's, its main loop's, D-Bus's, its pools')
// call libc too: a program tracing `poll` or `sscanf` recorded them as its
// own. Frida cloaks them, and the CModule asks whether a thread is one of
// them at its first traced call (cmodule.ts is_own_thread), once per
// thread: Frida starts some on demand, so a list made in advance missed
// them. Such a thread gets a state that never records. The script's own
// thread is marked when the runtime is made (runtime.ts).

/** The CModule's question about a thread (at its first traced call): 1
 *  when it is Frida's. Kept referenced by the runtime. */
export function makeOwnThreadQuestion(): NativeCallback<"uint32", ["uint32"]> {
    return new NativeCallback((tid: number): number => (Cloak.hasThread(tid) ? 1 : 0), "uint32", ["uint32"]);
}

/** A thread state's `busy` while Strobe's code runs on it, and for good on
 *  Frida's threads (cmodule.ts OWN_CODE). */
export const OWN_CODE_BUSY = 2;
