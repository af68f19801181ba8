// The Python debugger's C side: breakpoints, logpoints and stepping, part
// of the tracer's CModule (cmodule.ts includes it). What gets the line
// events is the version's mechanism: CPython's C-level trace function,
// switched on per frame, in 3.11 (eval_frame_c.ts), and sys.monitoring's
// LINE events, per code object, in 3.12 and later (monitoring_c.ts). This
// file is what both share.
//
// A breakpoint line (breakpoints_at) checks its condition (Python code
// compiled when it was set, run in the frame's globals and locals), counts
// the hit, and either writes a logpoint message or pauses the thread: the
// frames and locals go to the daemon (js_paused), the GIL is released, and
// the thread blocks in js_wait until the daemon says how to go on, while
// every other thread runs. A step is a stepper entry for the thread (made
// by the mechanism's follow()): into stops at the next line anywhere, over
// at the next line of the same frame or of a caller once it returned, out
// at the next line of a caller.
//
// Everything here runs on a Python thread holding the GIL, except js_wait.
import { CFG, LAYOUT } from "./offsets.js";

/** Most threads stepping at once. */
export const STEPPER_SLOTS = 64;

/** Bytes of one breakpoint entry (BpEntry below). */
export const BP_ENTRY = 64;

/** Resume orders js_wait returns (set: a local was given a value to set;
 *  js_set_local sets it, holding the GIL, and the thread waits again). */
export const ORDER = { continue: 0, over: 1, into: 2, out: 3, set: 4 } as const;

/** Why a thread paused (js_paused's `reason`). */
export const REASON = { breakpoint: 0, step: 1 } as const;

export const PY_DEBUG_C = `
extern void *PyThreadState_Get(void);
extern int PyFrame_GetLineNumber(PyObject *);
extern PyObject *PyFrame_GetGlobals(PyObject *);
extern PyObject *PyEval_EvalCode(PyObject *, PyObject *, PyObject *);
extern int PyObject_IsTrue(PyObject *);
extern PyObject *PyObject_Str(PyObject *);
extern void *PyEval_SaveThread(void);
extern void PyEval_RestoreThread(void *);
extern void Py_IncRef(PyObject *);
extern void *PyInterpreterState_Main(void);
extern void *PyInterpreterState_ThreadHead(void *);
extern void *PyThreadState_Next(void *);
extern char PyCode_Type, PyModule_Type;
extern int PyDict_SetItemString(PyObject *, const char *, PyObject *);
extern void js_paused(guint32 tid, guint32 reason, gint32 bp, guint64 hits, const guint8 *payload, guint32 len);
extern guint32 js_wait(guint32 tid);
extern void js_set_local(guint32 tid, PyObject *frame);
extern void js_log(gint32 bp, guint32 tid, const char *message, guint32 len);
extern void js_bp_error(gint32 bp, const char *message);

#define STEP_OVER 1
#define STEP_INTO 2
#define STEP_OUT 3
#define BP_LOG 1u

/* One breakpoint or logpoint (BP_ENTRY bytes; index.ts writes them). */
typedef struct {
    const char *file;      /* realpath of the source file */
    const char *qualname;  /* NULL, or the only code object it applies to */
    guint32 line;
    guint32 flags;         /* BP_LOG */
    guint32 hit_count;     /* pause from this hit on (0: every hit) */
    gint32 index;          /* the agent's number for it */
    guint64 hits;          /* hits whose condition held */
    PyObject *condition;   /* a code object, or NULL */
    PyObject **parts;      /* a logpoint's message: str literals and code objects */
    guint64 nparts;
} BpEntry;

/* A stepping thread. frame: the frame the step began in (3.11; a
   reference). returned: on 3.11, whether that frame has returned (the step
   goes on in its caller); on 3.12 and later, the thread's frame depth when
   the step began (monitoring_c.ts compares depths, frame stays NULL). */
typedef struct { guint32 tid; guint32 mode; PyObject *frame; guint64 returned; } Stepper;

/* A frame the interpreter pushes for its own entry from C (3.12's shim
   frames, owned by the C stack): not the program's, never shown. */
#if PY_MINOR >= 12
#define SHIM_FRAME(fr) (AT(fr, L(${LAYOUT.frameOwner}), char) == 3)
#else
#define SHIM_FRAME(fr) 0
#endif

static BpEntry *bp_table(guint64 *n) {
    guint64 *t = (guint64 *)(gsize)pycfg[${CFG.bpTable}];
    *n = t == NULL ? 0 : t[0];
    return t == NULL ? NULL : (BpEntry *)(t + 1);
}

static Stepper *stepper_of(guint32 tid) {
    Stepper *s = (Stepper *)(gsize)pycfg[${CFG.steppers}];
    for (int i = 0; i < ${STEPPER_SLOTS}; i++) if (s[i].tid == tid) return &s[i];
    return NULL;
}

/* After a pause: a step order makes the thread a stepper from frame f
   (each mechanism has its own). */
static void follow(guint32 order, guint32 tid, PyObject *f);

/* Does a code object's file hold breakpoints? Its co_filename against the
   table's realpaths (resolved once per classification). */
static int file_matches(const BpEntry *b, const char *file, char *resolved, int *have) {
    if (same(b->file, file)) return 1;
    if (*have == 0) *have = realpath(file, resolved) != NULL ? 1 : -1;
    return *have == 1 && same(b->file, resolved);
}

/* Whether code object co has an instruction on some breakpoint's line
   (its own instructions only: a nested function is a code object of its
   own). Run once per classification. */
static guint32 code_bp(PyObject *co) {
    guint64 n;
    BpEntry *t = bp_table(&n);
    if (n == 0) return 0;
    const char *file = utf8(AT(co, L(${LAYOUT.codeFilename}), PyObject *), NULL);
    const char *qual = utf8(AT(co, L(${LAYOUT.codeQualname}), PyObject *), NULL);
    if (file == NULL || qual == NULL) { PyErr_Clear(); return 0; }
    char resolved[4096];
    int have = 0;
    Py_ssize_t units = SIZE(co);
    int first = AT(co, L(${LAYOUT.codeFirstLine}), int);
    for (guint64 i = 0; i < n; i++) {
        BpEntry *b = &t[i];
        if ((int)b->line < first) continue;
        if (b->qualname != NULL && !same(b->qualname, qual)) continue;
        if (!file_matches(b, file, resolved, &have)) continue;
        for (Py_ssize_t u = 0; u < units; u++)
            if (PyCode_Addr2Line(co, (int)(u * 2)) == (int)b->line) return 1;
    }
    return 0;
}

/* Runs code object code in frame f's globals and locals (new reference;
   NULL with the error set). */
static PyObject *eval_in(PyObject *code, PyObject *f) {
    PyObject *g = PyFrame_GetGlobals(f);
    PyObject *l = PyFrame_GetLocals(f);
    PyObject *r = (g != NULL && l != NULL) ? PyEval_EvalCode(code, g, l) : NULL;
    Py_DecRef(g);
    Py_DecRef(l);
    return r;
}

/* Appends text to out (cap bytes, NUL kept). */
static guint32 append(char *out, guint32 at, guint32 cap, const char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n && at + 1 < cap; i++) out[at++] = s[i];
    out[at] = 0;
    return at;
}

/* The pending error as "Type: message" in out, cleared. */
static void error_text(char *out, guint32 cap) {
    PyObject *type, *val, *tb;
    PyErr_Fetch(&type, &val, &tb);
    PyErr_NormalizeException(&type, &val, &tb);
    const char *tn = type != NULL ? AT(type, L(${LAYOUT.typeName}), const char *) : "error";
    guint32 at = append(out, 0, cap, tn, (Py_ssize_t)strlen_(tn));
    PyObject *s = val != NULL ? PyObject_Str(val) : NULL;
    Py_ssize_t n = 0;
    const char *m = s != NULL ? utf8(s, &n) : NULL;
    if (m != NULL && n > 0) { at = append(out, at, cap, ": ", 2); append(out, at, cap, m, n); }
    PyErr_Clear();
    Py_DecRef(s);
    Py_DecRef(type);
    Py_DecRef(val);
    Py_DecRef(tb);
}

/* str() of a value into out at offset at. */
static guint32 append_str(char *out, guint32 at, guint32 cap, PyObject *v) {
    PyObject *s = PyObject_Str(v);
    Py_ssize_t n = 0;
    const char *m = s != NULL ? utf8(s, &n) : NULL;
    if (m == NULL) {
        char err[256];
        error_text(err, sizeof(err));
        at = append(out, at, cap, "<str() failed: ", 15);
        at = append(out, at, cap, err, (Py_ssize_t)strlen_(err));
        at = append(out, at, cap, ">", 1);
    } else {
        at = append(out, at, cap, m, n);
    }
    Py_DecRef(s);
    return at;
}

/* A logpoint's message: literal parts as they are, expressions by str(). */
static void log_message(BpEntry *b, PyObject *f, guint32 tid) {
    char out[4096];
    guint32 at = 0;
    out[0] = 0;
    for (guint64 i = 0; i < b->nparts; i++) {
        PyObject *p = b->parts[i];
        if (TYPE(p) == &PyCode_Type) {
            PyObject *r = eval_in(p, f);
            if (r == NULL) {
                char err[512];
                error_text(err, sizeof(err));
                at = append(out, at, sizeof(out), "<", 1);
                at = append(out, at, sizeof(out), err, (Py_ssize_t)strlen_(err));
                at = append(out, at, sizeof(out), ">", 1);
            } else {
                at = append_str(out, at, sizeof(out), r);
                Py_DecRef(r);
            }
        } else {
            Py_ssize_t n = 0;
            const char *s = utf8(p, &n);
            if (s == NULL) PyErr_Clear(); else at = append(out, at, sizeof(out), s, n);
        }
    }
    js_log(b->index, tid, out, at);
}

#define MAX_PAUSE_FRAMES 64

static guint32 pause_here(void *ts, PyObject *f, int line, guint32 reason, gint32 bp, guint64 hits);

/* The breakpoints on this line of code object co, running in frame object
   f: each whose condition holds counts a hit, a logpoint writes its
   message, and the first that pauses pauses the thread (which then follows
   the daemon's order). Returns whether any breakpoint is on this line. */
static int breakpoints_at(void *ts, PyObject *f, PyObject *co, int line) {
    guint64 n;
    BpEntry *t = bp_table(&n);
    const char *file = utf8(AT(co, L(${LAYOUT.codeFilename}), PyObject *), NULL);
    const char *qual = utf8(AT(co, L(${LAYOUT.codeQualname}), PyObject *), NULL);
    if (file == NULL || qual == NULL) { PyErr_Clear(); return 0; }
    char resolved[4096];
    int have = 0, any = 0;
    guint32 tid = tid_of(ts);
    for (guint64 i = 0; i < n; i++) {
        BpEntry *b = &t[i];
        if ((int)b->line != line) continue;
        if (b->qualname != NULL && !same(b->qualname, qual)) continue;
        if (!file_matches(b, file, resolved, &have)) continue;
        any = 1;
        if (b->condition != NULL) {
            PyObject *r = eval_in(b->condition, f);
            int truth = r != NULL ? PyObject_IsTrue(r) : -1;
            Py_DecRef(r);
            if (truth < 0) {
                char err[512];
                error_text(err, sizeof(err));
                js_bp_error(b->index, err);
                continue;
            }
            if (!truth) continue;
        }
        b->hits++;
        if (b->flags & BP_LOG) { log_message(b, f, tid); continue; }
        if (b->hit_count != 0 && b->hits < b->hit_count) continue;
        follow(pause_here(ts, f, line, 0, b->index, b->hits), tid, f);
        return 1;
    }
    return any;
}

/* Pauses this thread in frame f at line: its frames (innermost first:
   function, file, line) and the frame's locals go to the daemon, then the
   GIL is let go until the daemon's order comes back. */
static guint32 pause_here(void *ts, PyObject *f, int line, guint32 reason, gint32 bp, guint64 hits) {
    pycfg[${CFG.inPause}]++;
    Buf b;
    begin(&b, 6);
    guint32 n = 0;
    for (char *fr = AT(f, L(${LAYOUT.pyFrameFrame}), char *); fr != NULL && n < MAX_PAUSE_FRAMES;
         fr = AT(fr, L(${LAYOUT.framePrevious}), char *)) if (!SHIM_FRAME(fr)) n++;
    u32(&b, n);
    guint32 i = 0;
    for (char *fr = AT(f, L(${LAYOUT.pyFrameFrame}), char *); fr != NULL && i < n;
         fr = AT(fr, L(${LAYOUT.framePrevious}), char *)) {
        if (SHIM_FRAME(fr)) continue;
        PyObject *co = AT(fr, L(${LAYOUT.frameCode}), PyObject *);
        str_name(&b, AT(co, L(${LAYOUT.codeQualname}), PyObject *));
        str_name(&b, AT(co, L(${LAYOUT.codeFilename}), PyObject *));
        int at = (int)(AT(fr, L(${LAYOUT.framePrevInstr}), char *) - ((char *)co + L(${LAYOUT.codeAdaptive})));
        u32(&b, (guint32)(i == 0 ? line : PyCode_Addr2Line(co, at < 0 ? 0 : at)));
        i++;
    }
    PyObject *locals = locals_dict(f);
    if (locals == NULL) { PyErr_Clear(); u8(&b, T_NONE); }
    else { value(&b, locals, (int)pycfg[${CFG.depth}]); Py_DecRef(locals); }
    guint32 len = finish(&b);
    guint32 tid = tid_of(ts);
    js_paused(tid, reason, bp, hits, b.p, len);
    for (;;) {
        void *saved = PyEval_SaveThread();
        guint32 order = js_wait(tid);
        PyEval_RestoreThread(saved);
        if (order != 4) { pycfg[${CFG.inPause}]--; return order; }
        js_set_local(tid, f);
    }
}

/* A value as a named-value payload (what 7, status 0), for answers. */
guint32 py_encode_named(const char *label, PyObject *v) {
    Buf b;
    begin(&b, 7);
    u8(&b, 0);
    cname(&b, label);
    value(&b, v, (int)pycfg[${CFG.depth}]);
    return finish(&b);
}

static void stop_stepping(Stepper *s) {
    Py_DecRef(s->frame);
    s->frame = NULL;
    s->tid = 0;
    pycfg[${CFG.stepping}]--;
}

/* A module global by dotted name: the longest prefix sys.modules has,
   then each name in the module's dict, a dict's keys or an instance's
   attributes where object() reads them; never a getattr, so no property
   or __getattr__ runs. Sets *value (borrowed), *holder (the dict it is in,
   NULL for an instance's managed values) and *part (where it failed, or
   the last name). Returns 0, 1 (no module) or 2 (no such name). */
static int lookup_global(const char *dotted, char *buf, gsize cap, PyObject **value, PyObject **holder, const char **part) {
    gsize n = strlen_(dotted);
    if (n + 1 > cap) n = cap - 1;
    for (gsize i = 0; i < n; i++) buf[i] = dotted[i];
    buf[n] = 0;
    PyObject *mods = PyImport_GetModuleDict();
    PyObject *cur = NULL;
    gsize end = n;
    for (;;) {
        char saved = buf[end];
        buf[end] = 0;
        cur = PyDict_GetItemString(mods, buf);
        buf[end] = saved;
        if (cur != NULL) break;
        while (end > 0 && buf[end - 1] != '.') end--;
        if (end == 0) { *part = dotted; return 1; }
        end--;
    }
    *holder = NULL;
    *part = dotted;
    *value = cur;
    char *seg = buf + end;
    while (*seg == '.') {
        *seg = 0;
        seg++;
        char *next = seg;
        while (*next && *next != '.') next++;
        char saved = *next;
        *next = 0;
        *part = dotted + (seg - buf);
        PyObject *d = NULL, **vals = NULL;
        if (TFLAGS(TYPE(cur)) & DICT_SUB) d = cur;
        else if (TYPE(cur) == &PyModule_Type) d = PyModule_GetDict(cur);
        else d = instance_dict(cur, &vals);
        PyObject *v = d != NULL ? PyDict_GetItemString(d, seg) : attr(cur, seg);
        if (v == NULL) { PyErr_Clear(); *next = saved; return 2; }
        *holder = d;
        cur = v;
        *next = saved;
        seg = next;
    }
    *value = cur;
    return 0;
}

/* Reads a global into a payload (what 7): u8 status (0 read, 1 no module,
   2 no such name), name (the whole name, or where it failed), value. */
guint32 py_read_global(const char *dotted, guint32 depth) {
    char buf[1024];
    PyObject *v = NULL, *holder = NULL;
    const char *part = dotted;
    int status = lookup_global(dotted, buf, sizeof(buf), &v, &holder, &part);
    Buf b;
    begin(&b, 7);
    u8(&b, (guint8)status);
    cname(&b, part);
    if (status == 0) value(&b, v, (int)depth); else u8(&b, T_NONE);
    return finish(&b);
}

/* Sets a global (or an attribute kept in a dict) to v. Returns 0, the
   lookup's 1 or 2, or 3 when the name is not in a dict (a module itself,
   or an instance's managed values). */
gint32 py_set_global(const char *dotted, PyObject *v) {
    char buf[1024];
    PyObject *old = NULL, *holder = NULL;
    const char *part = dotted;
    int status = lookup_global(dotted, buf, sizeof(buf), &old, &holder, &part);
    if (status != 0) return status;
    if (holder == NULL) return 3;
    if (PyDict_SetItemString(holder, part, v) != 0) { PyErr_Clear(); return 3; }
    return 0;
}

`;
