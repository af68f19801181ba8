// The sys.monitoring side of the Python tracer (CPython 3.12 and later),
// part of the tracer's CModule (cmodule.ts includes it from 3.12 on; 3.11
// uses eval_frame_c.ts). The tracer takes one of sys.monitoring's tool ids
// and registers C functions as its callbacks (METH_FASTCALL builtins, so
// the interpreter calls them without building argument tuples):
//
// - PY_START (a function starts, or a generator or coroutine starts
//   running), global: classifies the code object (cached, as in 3.11); for a
//   traced function it writes the enter record, for any other it returns
//   sys.monitoring.DISABLE, which takes the event off that code for good
//   (until restart_events), so untraced code runs as if nothing watched it.
// - PY_RETURN, global: the exit record of a traced function; DISABLE
//   elsewhere.
// - PY_UNWIND (an exception leaves a frame), global while anything is
//   traced: that event cannot be disabled, so it costs a cached lookup per
//   frame an exception leaves.
// - LINE, local to the code objects that hold a breakpoint (set when
//   PY_START classifies them, or when the breakpoint is set on code already
//   running), and global while a thread steps. A line without a breakpoint
//   is disabled unless a thread steps.
//
// A change of targets bumps the classification generation; new targets
// also call restart_events, so code disabled before is looked at again
// (a removed target's code disables itself at its next start). A
// generator's enter
// is written when it first runs (3.11 writes it when it is created), and a
// function that was already running when it became traced gets an exit
// without an enter (the store ignores those).
//
// Callbacks run on the Python thread holding the GIL, with the thread's
// tracing count raised (so the watch and condition code they run is not
// itself monitored); the py_mon_* and py_arm_running / py_disarm entry
// points are called by index.ts and debugger.ts holding the GIL too.
import { CFG, LAYOUT } from "./offsets.js";

/** sys.monitoring's event bits the tracer uses (the same in 3.12 and 3.13). */
export const EVENTS = { pyStart: 1, pyReturn: 4, line: 32, pyUnwind: 4096 } as const;

/** Bytes of the callbacks' method table (4 PyMethodDef) and of the
 *  failure text, both allocated by index.ts. */
export const MON_DEFS_BYTES = 4 * 32;
export const MON_ERROR_BYTES = 512;

export const PY_MONITORING_C = `
extern PyObject *PyImport_ImportModule(const char *);
extern PyObject *PyObject_GetAttrString(PyObject *, const char *);
extern PyObject *PyObject_Call(PyObject *, PyObject *, PyObject *);
extern PyObject *PyTuple_New(Py_ssize_t);
extern int PyTuple_SetItem(PyObject *, Py_ssize_t, PyObject *);
extern PyObject *PyLong_FromLong(long);
extern PyObject *PyCFunction_NewEx(void *, PyObject *, PyObject *);
extern PyObject *PyEval_GetFrame(void);
extern PyObject *PyList_New(Py_ssize_t);
extern int PyList_Append(PyObject *, PyObject *);

#define EV_START ${EVENTS.pyStart}
#define EV_RETURN ${EVENTS.pyReturn}
#define EV_LINE ${EVENTS.line}
#define EV_UNWIND ${EVENTS.pyUnwind}
#define METH_FASTCALL 0x80
#define MON_CALLBACKS 4

typedef struct { const char *name; void *meth; int flags; const char *doc; } MethodDef;

/* The event of each callback, in mon_defs' order. */
#define MON_EVENT(i) ((i) == 0 ? EV_START : (i) == 1 ? EV_RETURN : (i) == 2 ? EV_UNWIND : EV_LINE)
/* The state, in the configuration page (the module has no writable data):
   sys.monitoring and its DISABLE once set up (NULL before and after), the
   code objects given local LINE events (a list, holding them), the tool
   id, the global events set now, the callbacks' method table and the text
   of the last failure (MON_ERROR_BYTES). */
#define mon (*(PyObject **)&pycfg[${CFG.monModule}])
#define mon_disable (*(PyObject **)&pycfg[${CFG.monDisable}])
#define mon_armed (*(PyObject **)&pycfg[${CFG.monArmed}])
#define mon_tool (*(long *)&pycfg[${CFG.monTool}])
#define mon_set pycfg[${CFG.monSet}]
#define mon_defs ((MethodDef *)(gsize)pycfg[${CFG.monDefs}])
#define mon_error ((char *)(gsize)pycfg[${CFG.monError}])
#define MON_ERROR_BYTES ${MON_ERROR_BYTES}

#define NEW_REF(o) (Py_IncRef((PyObject *)(o)), (PyObject *)(o))
/* None is immortal from 3.12 on (PEP 683): its count is never touched,
   so a callback hands it back without the call. */
#define NONE_REF() ((PyObject *)&_Py_NoneStruct)

/* sys.monitoring.<name>(a0, a1, a2): the arguments are new references,
   taken (NULL ends the list). Returns the result (new reference), or NULL
   with the error cleared and its text in mon_error. */
static PyObject *mon_call(const char *name, PyObject *a0, PyObject *a1, PyObject *a2) {
    PyObject *args[3] = { a0, a1, a2 };
    int n = a0 == NULL ? 0 : a1 == NULL ? 1 : a2 == NULL ? 2 : 3;
    PyObject *fn = PyObject_GetAttrString(mon, name);
    PyObject *tuple = PyTuple_New(n);
    PyObject *r = NULL;
    if (fn != NULL && tuple != NULL) {
        for (int i = 0; i < n; i++) { PyTuple_SetItem(tuple, i, args[i]); args[i] = NULL; }
        r = PyObject_Call(fn, tuple, NULL);
    }
    for (int i = 0; i < n; i++) Py_DecRef(args[i]);
    Py_DecRef(tuple);
    Py_DecRef(fn);
    if (r == NULL) error_text(mon_error, MON_ERROR_BYTES);
    return r;
}

/* Like mon_call, for calls whose result is not needed: 0, or -1. */
static int mon_do(const char *name, PyObject *a0, PyObject *a1, PyObject *a2) {
    PyObject *r = mon_call(name, a0, a1, a2);
    Py_DecRef(r);
    return r != NULL ? 0 : -1;
}

/* Gives code object co local LINE events when its state says it holds a
   breakpoint, and takes them away when it no longer does. */
static void arm_code(PyObject *co, CodeState *st) {
    guint32 want = st->bp != 0 ? EV_LINE : 0;
    if (mon == NULL || st->local == want) return;
    if (mon_do("set_local_events", PyLong_FromLong(mon_tool), NEW_REF(co), PyLong_FromLong(want)) != 0) return;
    if (want != 0 && st->local == 0 && mon_armed != NULL && PyList_Append(mon_armed, co) != 0) PyErr_Clear();
    st->local = want;
}

/* The thread's Python frames from fr outwards (shims not counted). */
static guint64 frame_depth(char *fr) {
    guint64 n = 0;
    for (; fr != NULL; fr = AT(fr, L(${LAYOUT.framePrevious}), char *)) if (!SHIM_FRAME(fr)) n++;
    return n;
}

/* The enter or exit record of a traced function: its arguments (enter),
   return value or exception (exit), and its watches. A generator's or
   coroutine's pair by the object, which holds the frame. As on 3.11, an
   enter is stamped after its watches ran and an exit before: the call's
   duration leaves the tracer's own work out. */
static void mon_record(void *ts, char *frame, PyObject *co, CodeState *st, int enter, PyObject *result, PyObject *exc) {
    guint32 tid = tid_of(ts);
    NAME_THREAD(tid);
    guint64 t;
    if (!enter) NOW(t);
    PyObject *watched[MAX_CALL_WATCHES];
    guint32 nw = 0;
    if (st->watches != NULL) {
        pycfg[${CFG.inCallback}]++;
        nw = eval_watches(ts, st->watches, frame, co, enter ? st->nargs : 0xFFFFFFFFu, result, watched);
        pycfg[${CFG.inCallback}]--;
    }
    Buf b;
    guint32 kind = (enter ? 1u : 2u) | KIND_PY;
    guint64 key = 0;
    if (st->flags & GEN_FLAGS) { kind |= KIND_DET; key = (guint64)(gsize)(frame - L(${LAYOUT.genIframe})); }
    else if (!enter && exc == NULL && nw == 0) {
        guint32 inl = inline_value(result, &key);
        if (inl != 0) { put_record(tid, st->id, kind | inl, key, t, NULL, 0); return; }
    }
    if (enter) {
        begin(&b, 0);
        args_of(&b, st, co, (PyObject **)(frame + L(${LAYOUT.frameLocals})));
    } else if (exc == NULL) {
        begin(&b, 1);
        value(&b, result, (int)pycfg[${CFG.depth}]);
    } else {
        exception_exit(&b, (PyObject *)TYPE(exc), exc, AT(exc, L(${LAYOUT.excTraceback}), PyObject *));
    }
    put_watches(&b, st->watches, watched, nw);
    if (enter) NOW(t);
    put_py(tid, st->id, kind, key, t, &b);
}

/* PY_START(code, offset). */
static PyObject *mon_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!pycfg[${CFG.enabled}] || nargs < 1) return NONE_REF();
    PyObject *co = args[0];
    void *ts = PyThreadState_Get();
    char *frame = CURRENT_FRAME(ts);
    CodeState *st;
    STATE_OF(st, co, frame);
    if (st == NULL) return NONE_REF();
    if ((st->bp != 0) != (st->local != 0)) arm_code(co, st);
    if (st->id == 0) return NEW_REF(mon_disable);
    if (config[5]) return NONE_REF();
    if (st->watches == NULL && !(st->flags & GEN_FLAGS)) {
        /* mon_record's most common enter, without its call. */
        guint32 tid = tid_of(ts);
        NAME_THREAD(tid);
        Buf b;
        begin(&b, 0);
        args_of(&b, st, co, (PyObject **)(frame + L(${LAYOUT.frameLocals})));
        guint64 t;
        NOW(t);
        put_py(tid, st->id, 1 | KIND_PY, 0, t, &b);
    } else {
        mon_record(ts, frame, co, st, 1, NULL, NULL);
    }
    return NONE_REF();
}

/* PY_RETURN(code, offset, value). */
static PyObject *mon_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!pycfg[${CFG.enabled}] || nargs < 3) return NONE_REF();
    void *ts = PyThreadState_Get();
    char *frame = CURRENT_FRAME(ts);
    CodeState *st;
    STATE_OF(st, args[0], frame);
    if (st == NULL) return NONE_REF();
    if (st->id == 0) return NEW_REF(mon_disable);
    if (config[5]) return NONE_REF();
    guint64 bits;
    guint32 inl = st->watches == NULL && !(st->flags & GEN_FLAGS) ? inline_value(args[2], &bits) : 0;
    if (inl != 0) {
        /* mon_record's most common exit, without its call. */
        guint32 tid = tid_of(ts);
        NAME_THREAD(tid);
        guint64 t;
        NOW(t);
        put_record(tid, st->id, 2 | KIND_PY | inl, bits, t, NULL, 0);
    } else {
        mon_record(ts, frame, args[0], st, 0, args[2], NULL);
    }
    return NONE_REF();
}

/* PY_UNWIND(code, offset, exception): never disabled (it cannot be). */
static PyObject *mon_unwind(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (!pycfg[${CFG.enabled}] || nargs < 3 || config[5]) return NONE_REF();
    void *ts = PyThreadState_Get();
    char *frame = CURRENT_FRAME(ts);
    CodeState *st = state_of(args[0], frame);
    if (st != NULL && st->id != 0) mon_record(ts, frame, args[0], st, 0, NULL, args[2]);
    return NONE_REF();
}

static void mon_apply(void);

/* LINE(code, line): a stepping thread's stop, or breakpoints. Counted
   in inCallback (conditions, logpoints and pauses run Python code). */
static PyObject *mon_line_(PyObject *const *args, Py_ssize_t nargs);
static PyObject *mon_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    pycfg[${CFG.inCallback}]++;
    PyObject *r = mon_line_(args, nargs);
    pycfg[${CFG.inCallback}]--;
    return r;
}

static PyObject *mon_line_(PyObject *const *args, Py_ssize_t nargs) {
    if (!pycfg[${CFG.enabled}] || nargs < 2) return NONE_REF();
    PyObject *co = args[0];
    int overflow = 0;
    int line = (int)PyLong_AsLongLongAndOverflow(args[1], &overflow);
    void *ts = PyThreadState_Get();
    char *frame = CURRENT_FRAME(ts);
    Stepper *s = pycfg[${CFG.stepping}] != 0 ? stepper_of(tid_of(ts)) : NULL;
    if (s != NULL) {
        guint64 d = frame_depth(frame);
        int stop = s->mode == STEP_INTO
            || (s->mode == STEP_OVER && d <= s->returned)
            || (s->mode == STEP_OUT && d < s->returned);
        PyObject *f = stop ? PyEval_GetFrame() : NULL;
        if (f != NULL) {
            stop_stepping(s);
            mon_apply();
            follow(pause_here(ts, f, line, 1, -1, 0), tid_of(ts), f);
            return NONE_REF();
        }
    }
    int any = 0;
    CodeState *st = pycfg[${CFG.bpCount}] != 0 ? state_of(co, frame) : NULL;
    if (st != NULL && st->bp != 0) {
        PyObject *f = PyEval_GetFrame();
        if (f != NULL) any = breakpoints_at(ts, f, co, line);
    }
    /* A line disabled is disabled for every thread: not while one steps. */
    return any || pycfg[${CFG.stepping}] != 0 ? NONE_REF() : NEW_REF(mon_disable);
}

/* The first time: sys.monitoring, a free tool id (the profiler's, else one
   nobody reserved, else the debugger's or coverage's) and the callbacks.
   Returns 0, or -1 with mon_error set. */
static int mon_setup(void) {
    if (mon != NULL) return 0;
    PyObject *sys = PyImport_ImportModule("sys");
    PyObject *m = sys != NULL ? PyObject_GetAttrString(sys, "monitoring") : NULL;
    Py_DecRef(sys);
    PyObject *disable = m != NULL ? PyObject_GetAttrString(m, "DISABLE") : NULL;
    PyObject *armed = PyList_New(0);
    if (m == NULL || disable == NULL || armed == NULL) {
        error_text(mon_error, MON_ERROR_BYTES);
        Py_DecRef(m); Py_DecRef(disable); Py_DecRef(armed);
        return -1;
    }
    mon = m;
    /* 2 (the profiler's), 3, 4, 0 (the debugger's), 1 (coverage's), 5. */
    long tool = -1;
    for (int i = 0; i < 6 && tool < 0; i++) {
        long id = i < 3 ? i + 2 : i == 5 ? 5 : i - 3;
        PyObject *owner = mon_call("get_tool", PyLong_FromLong(id), NULL, NULL);
        int free_ = owner == (PyObject *)&_Py_NoneStruct;
        Py_DecRef(owner);
        if (free_ && mon_do("use_tool_id", PyLong_FromLong(id), PyUnicode_FromString("strobe"), NULL) == 0) tool = id;
    }
    if (tool < 0) {
        const char *why = "sys.monitoring has no free tool id (all six are taken by other tools in this process)";
        append(mon_error, 0, MON_ERROR_BYTES, why, (Py_ssize_t)strlen_(why));
        mon = NULL;
        Py_DecRef(m); Py_DecRef(disable); Py_DecRef(armed);
        return -1;
    }
    mon_tool = tool;
    mon_disable = disable;
    mon_armed = armed;
    mon_set = 0;
    mon_defs[0].name = "strobe_py_start";
    mon_defs[0].meth = (void *)mon_start;
    mon_defs[1].name = "strobe_py_return";
    mon_defs[1].meth = (void *)mon_return;
    mon_defs[2].name = "strobe_py_unwind";
    mon_defs[2].meth = (void *)mon_unwind;
    mon_defs[3].name = "strobe_line";
    mon_defs[3].meth = (void *)mon_line;
    for (int i = 0; i < MON_CALLBACKS; i++) {
        mon_defs[i].flags = METH_FASTCALL;
        mon_defs[i].doc = NULL;
        PyObject *fn = PyCFunction_NewEx(&mon_defs[i], NULL, NULL);
        if (fn == NULL || mon_do("register_callback", PyLong_FromLong(tool), PyLong_FromLong(MON_EVENT(i)), fn) != 0) {
            if (fn == NULL) error_text(mon_error, MON_ERROR_BYTES);
            return -1;
        }
    }
    return 0;
}

/* The global events the tracer needs now. */
static guint64 mon_wanted(void) {
    guint64 ev = 0;
    if (pycfg[${CFG.monTrace}]) ev |= EV_START | EV_RETURN | EV_UNWIND;
    if (pycfg[${CFG.bpCount}]) ev |= EV_START;
    if (pycfg[${CFG.stepping}]) ev |= EV_LINE;
    return ev;
}

/* Sets the global events to what is needed (a no-op when they are). */
static void mon_apply(void) {
    if (mon == NULL) return;
    guint64 want = mon_wanted();
    if (want == mon_set) return;
    if (mon_do("set_events", PyLong_FromLong(mon_tool), PyLong_FromLong((long)want), NULL) == 0) mon_set = want;
}

/* After a pause: a step order makes the thread a stepper from frame f's
   depth, and every thread's lines report again (restart_events undoes
   the lines disabled while nobody stepped). */
static void follow(guint32 order, guint32 tid, PyObject *f) {
    if (order == 0) return;
    Stepper *s = stepper_of(0);
    if (s == NULL) return; /* every slot taken: runs on */
    s->frame = NULL;
    s->mode = order;
    s->returned = frame_depth(AT(f, L(${LAYOUT.pyFrameFrame}), char *));
    s->tid = tid;
    pycfg[${CFG.stepping}]++;
    mon_apply();
    mon_do("restart_events", NULL, NULL, NULL);
}

/* Sets the events to what the tracer needs, setting sys.monitoring up the
   first time; restart (after new targets): disabled code is classified
   again. Returns 0, or -1 (py_mon_error says why). */
gint32 py_mon_sync(guint32 restart) {
    if (mon == NULL && mon_wanted() == 0) return 0;
    if (mon_setup() != 0) return -1;
    mon_apply();
    if (restart && mon_do("restart_events", NULL, NULL, NULL) != 0) return -1;
    return 0;
}

const char *py_mon_error(void) {
    return mon_error;
}

/* Breakpoints changed: code already running that holds one gets its LINE
   events now (every frame of every thread), the rest when it next starts. */
void py_arm_running(void) {
    if (py_mon_sync(1) != 0) return;
    void *interp = PyInterpreterState_Main();
    if (interp == NULL) return;
    for (void *ts = PyInterpreterState_ThreadHead(interp); ts != NULL; ts = PyThreadState_Next(ts)) {
        for (char *fr = CURRENT_FRAME(ts); fr != NULL; fr = AT(fr, L(${LAYOUT.framePrevious}), char *)) {
            PyObject *co = AT(fr, L(${LAYOUT.frameCode}), PyObject *);
            if (SHIM_FRAME(fr) || co == NULL || TYPE(co) != &PyCode_Type) continue;
            CodeState *st = state_of(co, fr);
            if (st != NULL && st->bp != 0) arm_code(co, st);
        }
    }
}

/* No breakpoint left: every code object given LINE events loses them. */
void py_disarm(void) {
    if (mon == NULL) return;
    Py_ssize_t idx = (Py_ssize_t)pycfg[${CFG.extraIndex}];
    Py_ssize_t n = mon_armed != NULL ? SIZE(mon_armed) : 0;
    PyObject **items = n > 0 ? AT(mon_armed, L(${LAYOUT.listItems}), PyObject **) : NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *co = items[i];
        mon_do("set_local_events", PyLong_FromLong(mon_tool), NEW_REF(co), PyLong_FromLong(0));
        CodeExtra *ex = AT(co, L(${LAYOUT.codeExtra}), CodeExtra *);
        CodeState *st = (idx >= 0 && ex != NULL && idx < ex->size) ? ex->extras[idx] : NULL;
        if (st != NULL) st->local = 0;
    }
    Py_DecRef(mon_armed);
    mon_armed = PyList_New(0);
    if (mon_armed == NULL) PyErr_Clear();
    mon_apply();
}

/* Detach: no events, no callbacks, the tool id given back. Returns 0, or
   1 (nothing done) while a thread is inside a callback that runs Python
   code. */
gint32 py_mon_release(void) {
    if (mon == NULL) return 0;
    if (pycfg[${CFG.inCallback}] != 0) return 1;
    py_disarm();
    mon_do("set_events", PyLong_FromLong(mon_tool), PyLong_FromLong(0), NULL);
    for (int i = 0; i < MON_CALLBACKS; i++)
        mon_do("register_callback", PyLong_FromLong(mon_tool), PyLong_FromLong(MON_EVENT(i)), NONE_REF());
    mon_do("free_tool_id", PyLong_FromLong(mon_tool), NULL, NULL);
    Py_DecRef(mon_armed);
    Py_DecRef(mon_disable);
    Py_DecRef(mon);
    mon = NULL;
    mon_armed = NULL;
    mon_disable = NULL;
    mon_set = 0;
    return 0;
}
`;
