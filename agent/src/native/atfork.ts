// Code that runs in every forked child, inside fork(): the tracer's "stop
// recording" flag and lifecycle's restoring of exit functions in children
// a session does not follow.

/** Registers `handler` to run in every forked child, inside fork(). glibc
 *  2.34+ exports `pthread_atfork` only as a compat version that symbol
 *  lookup does not find (it lives in libc_nonshared.a): its implementation,
 *  `__register_atfork`, is what is called. */
export function registerAtforkChild(handler: NativePointer): void {
    const register = Module.findGlobalExportByName("__register_atfork");
    if (register !== null) {
        const ok = new NativeFunction(register, "int", ["pointer", "pointer", "pointer", "pointer"])(
            NULL, NULL, handler, NULL) as number;
        if (ok !== 0) throw new Error(`__register_atfork failed: ${ok}`);
        return;
    }
    const atfork = Module.findGlobalExportByName("pthread_atfork");
    if (atfork === null) throw new Error("neither __register_atfork nor pthread_atfork found");
    new NativeFunction(atfork, "int", ["pointer", "pointer", "pointer"])(NULL, NULL, handler);
}
