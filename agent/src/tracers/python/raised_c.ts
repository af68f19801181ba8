// Exceptions raised inside traced functions, caught there or not: part of
// the tracer's CModule (cmodule.ts includes it). The interpreter calls
// PyTraceBack_Here for each Python frame an exception passes through, as it
// starts unwinding that frame (before looking for a handler); while Python
// functions are traced the tracer listens there (index.ts attaches
// py_traceback_here) and, when the frame is a traced function's and the
// exception starts in it (no traceback entry yet: raised by its own code or
// by a C function it called), writes a "raised" record: the exception's
// type, args and the line. Leaving the frame later is then not reported a
// second time (exit_payload's origin byte).
import { CFG, LAYOUT } from "./offsets.js";

export const PY_RAISED_C = `
extern void *gum_invocation_context_get_nth_argument(void *ic, guint n);

#define KIND_RAISED 6u

/* The body of an exception: its type's name, then its args (or the value
   itself when it was never instantiated, e.g. set from C with a string). */
static void exception_body(Buf *b, PyObject *type, PyObject *val) {
    cname(b, type != NULL ? AT(type, L(${LAYOUT.typeName}), const char *) : "?");
    if (val != NULL && (TFLAGS(TYPE(val)) & EXC_SUB)) value(b, AT(val, L(${LAYOUT.excArgs}), PyObject *), (int)pycfg[${CFG.depth}]);
    else value(b, val, (int)pycfg[${CFG.depth}]);
}

/* An exit by exception's payload up to its watches: the exception, and
   whether it was raised in this frame (its traceback entry, tb, is the only
   one), in which case the raised record reported it already. */
static void exception_exit(Buf *b, PyObject *type, PyObject *val, PyObject *tb) {
    begin(b, 2);
    exception_body(b, type, val);
    u8(b, tb != NULL && AT(tb, L(${LAYOUT.tbNext}), PyObject *) == NULL ? 1 : 0);
}

/* Interceptor listener (onEnter) of PyTraceBack_Here(frame), on the Python
   thread, holding the GIL, with the exception pending. */
void py_traceback_here(void *ic) {
    if (!pycfg[${CFG.enabled}] || config[5]) return;
    PyObject *f = (PyObject *)gum_invocation_context_get_nth_argument(ic, 0);
    if (f == NULL) return;
    char *iframe = AT(f, L(${LAYOUT.pyFrameFrame}), char *);
    if (iframe == NULL) return;
    PyObject *co = AT(iframe, L(${LAYOUT.frameCode}), PyObject *);
    CodeState *st = state_of(co, iframe);
    if (st == NULL || st->id == 0) return;
    PyObject *type, *val, *tb;
    PyErr_Fetch(&type, &val, &tb);
    if (type != NULL && tb == NULL) {
        void *ts = PyThreadState_Get();
        name_thread(tid_of(ts));
        Buf b;
        begin(&b, 8);
        exception_body(&b, type, val);
        u32(&b, (guint32)PyFrame_GetLineNumber(f));
        guint64 t;
        NOW(t);
        put_py(tid_of(ts), st->id, KIND_RAISED | KIND_PY, 0, t, &b);
    }
    PyErr_Restore(type, val, tb);
}
`;
