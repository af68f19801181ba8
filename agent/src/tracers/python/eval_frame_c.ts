// The eval stub's side of the Python tracer (CPython 3.11), part of the
// tracer's CModule (cmodule.ts includes it for 3.11): py_enter and py_leave,
// which the eval stub (stub.ts) calls around every frame, and the debugger's
// line tracing through CPython's C-level trace function (Py_tracefunc),
// switched on per frame: py_enter turns tracing on for the frame about to
// run when its code holds a breakpoint line (or its thread is stepping
// into), and off for the frames that code calls, so code without
// breakpoints runs at full speed even while a caller is being line-traced.
// In 3.11 a frame's tracing is the use_tracing byte of its C frame
// (_PyCFrame), which the eval loop copies from its caller's when it starts;
// py_enter sets the caller's byte before the frame's eval starts and
// py_leave puts it back. CPython 3.12 and later use monitoring_c.ts instead.
import { CFG, LAYOUT } from "./offsets.js";

export const PY_EVAL_FRAME_C = `
#define PYTRACE_LINE 2
#define PYTRACE_RETURN 3
#define TS_CFRAME(ts) AT(ts, L(${LAYOUT.tstateCframe}), char *)
#define USE_TRACING(cf) AT(cf, L(${LAYOUT.cframeUseTracing}), guint8)

static int py_trace(PyObject *obj, PyObject *f, int what, PyObject *arg);

/* Turns line tracing of the frame whose C frame is cf on or off. The trace
   function, once set on a thread, stays while breakpoints exist: the
   interpreter recomputes a C frame's byte from it after each trace call. */
static void set_tracing(void *ts, char *cf, int on) {
    if (on) AT(ts, L(${LAYOUT.tstateTraceFunc}), void *) = (void *)py_trace;
    USE_TRACING(cf) = on ? 255 : 0;
}

/* py_enter's part: the frame about to run gets line tracing when its code
   holds a breakpoint or its thread steps into, and loses it otherwise (a
   traced caller's byte would be copied). Returns token bits for
   debug_leave: 2 (changed), 4 (it was on). A profiler (c_profilefunc)
   keeps every frame's byte on; then only the trace function is set. */
static guint64 debug_enter(void *ts, CodeState *st) {
    void *fn = AT(ts, L(${LAYOUT.tstateTraceFunc}), void *);
    if (fn != NULL && fn != (void *)py_trace) return 0; /* the program's own sys.settrace */
    int want = st->bp != 0;
    if (!want && pycfg[${CFG.stepping}] != 0) {
        Stepper *s = stepper_of(tid_of(ts));
        want = s != NULL && s->mode == STEP_INTO;
    }
    char *cf = TS_CFRAME(ts);
    int cur = USE_TRACING(cf) != 0;
    if (AT(ts, L(${LAYOUT.tstateProfileFunc}), void *) != NULL) {
        if (want) AT(ts, L(${LAYOUT.tstateTraceFunc}), void *) = (void *)py_trace;
        return 0;
    }
    if (cur == want || (!want && fn == NULL)) return 0;
    set_tracing(ts, cf, want);
    return 2 | (cur ? 4 : 0);
}

/* py_leave's part: the caller's byte back as it was, or on when its thread
   steps and the step goes on in the caller. */
static void debug_leave(void *ts, guint64 token) {
    int on = (token & 4) != 0;
    if (!on && pycfg[${CFG.stepping}] != 0) {
        Stepper *s = stepper_of(tid_of(ts));
        on = s != NULL && (s->returned || s->mode == STEP_INTO);
    }
    set_tracing(ts, TS_CFRAME(ts), on);
}

/* After a pause: a step order makes the thread a stepper from frame f. */
static void follow(guint32 order, guint32 tid, PyObject *f) {
    if (order == 0) return;
    Stepper *s = stepper_of(0);
    if (s == NULL) return; /* every slot taken: runs on */
    Py_IncRef(f);
    s->frame = f;
    s->mode = order;
    s->returned = 0;
    s->tid = tid;
    pycfg[${CFG.stepping}]++;
}

/* The trace function (Py_tracefunc) of threads with traced frames. */
static int py_trace(PyObject *obj, PyObject *f, int what, PyObject *arg) {
    if (what != PYTRACE_LINE && what != PYTRACE_RETURN) return 0;
    void *ts = PyThreadState_Get();
    guint32 tid = tid_of(ts);
    Stepper *s = pycfg[${CFG.stepping}] != 0 ? stepper_of(tid) : NULL;
    if (what == PYTRACE_RETURN) {
        /* A step that goes on in the caller: its C frame traces too. */
        if (s != NULL && (s->mode == STEP_INTO || s->frame == f)) {
            if (s->frame == f) s->returned = 1;
            char *prev = AT(TS_CFRAME(ts), L(${LAYOUT.cframePrevious}), char *);
            if (prev != NULL) USE_TRACING(prev) = 255;
        }
        return 0;
    }
    int line = PyFrame_GetLineNumber(f);
    if (s != NULL) {
        int stop = s->mode == STEP_INTO
            || (s->mode == STEP_OVER && (s->frame == f || s->returned))
            || (s->mode == STEP_OUT && s->returned && s->frame != f);
        if (stop) {
            stop_stepping(s);
            follow(pause_here(ts, f, line, 1, -1, 0), tid, f);
            return 0;
        }
    }
    if (pycfg[${CFG.bpCount}] == 0) return 0;
    char *iframe = AT(f, L(${LAYOUT.pyFrameFrame}), char *);
    PyObject *co = AT(iframe, L(${LAYOUT.frameCode}), PyObject *);
    CodeState *st = state_of(co, iframe);
    if (st != NULL && st->bp != 0) breakpoints_at(ts, f, co, line);
    return 0;
}

/* Arms the frames already running when breakpoints change: every C frame
   of every thread whose Python frames (one C frame runs several when they
   were called before the eval stub went in) include code with a
   breakpoint gets line tracing. Called holding the GIL. */
void py_arm_running(void) {
    void *interp = PyInterpreterState_Main();
    if (interp == NULL) return;
    for (void *ts = PyInterpreterState_ThreadHead(interp); ts != NULL; ts = PyThreadState_Next(ts)) {
        void *fn = AT(ts, L(${LAYOUT.tstateTraceFunc}), void *);
        if (fn != NULL && fn != (void *)py_trace) continue;
        for (char *cf = TS_CFRAME(ts); cf != NULL; cf = AT(cf, L(${LAYOUT.cframePrevious}), char *)) {
            char *prev = AT(cf, L(${LAYOUT.cframePrevious}), char *);
            char *stop = prev != NULL ? AT(prev, L(${LAYOUT.cframeCurrent}), char *) : NULL;
            for (char *fr = AT(cf, L(${LAYOUT.cframeCurrent}), char *); fr != NULL && fr != stop;
                 fr = AT(fr, L(${LAYOUT.framePrevious}), char *)) {
                CodeState *st = state_of(AT(fr, L(${LAYOUT.frameCode}), PyObject *), fr);
                if (st != NULL && st->bp) { set_tracing(ts, cf, 1); break; }
            }
        }
    }
}

/* Leaves no trace function behind (the last breakpoint went, or detach):
   every thread whose trace function is this one loses it, and its C
   frames their tracing (unless a profiler keeps them on). Holding the GIL. */
void py_disarm(void) {
    void *interp = PyInterpreterState_Main();
    if (interp == NULL) return;
    for (void *ts = PyInterpreterState_ThreadHead(interp); ts != NULL; ts = PyThreadState_Next(ts)) {
        if (AT(ts, L(${LAYOUT.tstateTraceFunc}), void *) != (void *)py_trace) continue;
        AT(ts, L(${LAYOUT.tstateTraceFunc}), void *) = NULL;
        if (AT(ts, L(${LAYOUT.tstateProfileFunc}), void *) != NULL) continue;
        for (char *cf = TS_CFRAME(ts); cf != NULL; cf = AT(cf, L(${LAYOUT.cframePrevious}), char *))
            USE_TRACING(cf) = 0;
    }
}

/* Frame owners (3.11): the thread's stack, or a generator / coroutine. */
#define OWNED_BY_GENERATOR 1
/* Generator frame states (3.11): suspended at a yield or await. */
#define FRAME_SUSPENDED -1

/* Called by the eval stub before a frame runs. Returns 0 to let it run
   untraced and with its tracing as it was, else a token for py_leave: the
   code's state, with bit 0 set for a generator's or coroutine's
   resumption, bits 1-2 from debug_enter (line tracing changed) and bit 3
   when nothing was recorded (only the tracing is put back). */
guint64 py_enter(void *ts, void *frame, int throwflag) {
    /* Code run by the tools themselves (a watch, a condition, a trace
       function) is neither recorded nor line-traced. */
    if (!pycfg[${CFG.enabled}] || AT(ts, L(${LAYOUT.tstateTracing}), int) != 0) return 0;
    PyObject *co = AT(frame, L(${LAYOUT.frameCode}), PyObject *);
    CodeState *st;
    STATE_OF(st, co, frame);
    if (st == NULL) return 0;
    guint64 debug = (pycfg[${CFG.bpCount}] | pycfg[${CFG.stepping}]) != 0 ? debug_enter(ts, st) : 0;
    if (st->id == 0 || config[5]) return debug == 0 ? 0 : (guint64)(gsize)st | debug | 8;
    if (st->flags & GEN_FLAGS) {
        /* Created here (the call runs only RETURN_GENERATOR): the enter is
           written by py_leave, which has the new object to pair with.
           Resumed: only its end is recorded, by py_leave. */
        return (guint64)(gsize)st | debug | (AT(frame, L(${LAYOUT.frameOwner}), char) == OWNED_BY_GENERATOR ? 1 : 0);
    }
    NAME_THREAD(tid_of(ts));
    PyObject *watched[MAX_CALL_WATCHES];
    guint32 nw = st->watches != NULL ? eval_watches(ts, st->watches, (char *)frame, co, st->nargs, NULL, watched) : 0;
    Buf b;
    begin(&b, 0);
    args_of(&b, st, co, (PyObject **)((char *)frame + L(${LAYOUT.frameLocals})));
    put_watches(&b, st->watches, watched, nw);
    guint64 t;
    NOW(t);
    if (!put_py(tid_of(ts), st->id, 1 | KIND_PY, 0, t, &b)) return debug == 0 ? 0 : (guint64)(gsize)st | debug | 8;
    return (guint64)(gsize)st | debug;
}

/* The payload of a call's end: its return value, or the exception leaving
   it, and the values of its watches (nw of them, released here). */
static void exit_payload(Buf *b, PyObject *result, void *watches, PyObject **watched, guint32 nw) {
    if (result != NULL) {
        begin(b, 1);
        value(b, result, (int)pycfg[${CFG.depth}]);
        put_watches(b, watches, watched, nw);
        return;
    }
    PyObject *type, *val, *tb;
    PyErr_Fetch(&type, &val, &tb);
    exception_exit(b, type, val, tb);
    put_watches(b, watches, watched, nw);
    PyErr_Restore(type, val, tb);
}

/* Called by the eval stub after a frame py_enter traced has run. */
void py_leave(void *ts, void *frame, PyObject *result, guint64 token) {
    CodeState *st = (CodeState *)(gsize)(token & ~15ULL);
    if (token & 2) debug_leave(ts, token);
    /* Bit 3: a token for the line tracing only (nothing recorded). */
    if (token & 8) return;
    guint64 t;
    NOW(t);
    Buf b;
    if (!(st->flags & GEN_FLAGS)) {
        PyObject *watched[MAX_CALL_WATCHES];
        guint32 nw = 0;
        if (st->watches != NULL) {
            /* Watches run Python code: not with an exception pending. */
            PyObject *et, *ev, *etb;
            PyErr_Fetch(&et, &ev, &etb);
            nw = eval_watches(ts, st->watches, (char *)frame, AT(frame, L(${LAYOUT.frameCode}), PyObject *),
                0xFFFFFFFFu, result, watched);
            PyErr_Restore(et, ev, etb);
        }
        guint64 bits;
        guint32 inl = nw == 0 && st->watches == NULL ? inline_value(result, &bits) : 0;
        if (inl != 0) { put_record(tid_of(ts), st->id, 2 | KIND_PY | inl, bits, t, NULL, 0); return; }
        exit_payload(&b, result, st->watches, watched, nw);
        put_py(tid_of(ts), st->id, 2 | KIND_PY, 0, t, &b);
        return;
    }
    PyObject *co = AT(frame, L(${LAYOUT.frameCode}), PyObject *);
    PyObject *watched[MAX_CALL_WATCHES];
    guint32 nw = 0;
    if ((token & 1) == 0) {
        /* The call that created the generator: its arguments (and what
           its watches read) are now in the generator's own frame. */
        if (result == NULL) { exit_payload(&b, result, NULL, NULL, 0); put_py(tid_of(ts), st->id, 2 | KIND_PY, 0, t, &b); return; }
        char *own = (char *)result + L(${LAYOUT.genIframe});
        NAME_THREAD(tid_of(ts));
        if (st->watches != NULL) nw = eval_watches(ts, st->watches, own, co, st->nargs, NULL, watched);
        begin(&b, 0);
        args_of(&b, st, co, (PyObject **)(own + L(${LAYOUT.frameLocals})));
        put_watches(&b, st->watches, watched, nw);
        put_py(tid_of(ts), st->id, 1 | KIND_PY | KIND_DET, (guint64)(gsize)result, t, &b);
        return;
    }
    char *gen = (char *)frame - L(${LAYOUT.genIframe});
    if (AT(gen, L(${LAYOUT.genState}), gint8) == FRAME_SUSPENDED) return;
    /* Finished: the frame still holds its final locals here (the
       generator clears it after the evaluation returns). */
    if (st->watches != NULL) {
        PyObject *et, *ev, *etb;
        PyErr_Fetch(&et, &ev, &etb);
        nw = eval_watches(ts, st->watches, (char *)frame, co, 0xFFFFFFFFu, result, watched);
        PyErr_Restore(et, ev, etb);
    }
    exit_payload(&b, result, st->watches, watched, nw);
    put_py(tid_of(ts), st->id, 2 | KIND_PY | KIND_DET, (guint64)(gsize)gen, t, &b);
}
`;
