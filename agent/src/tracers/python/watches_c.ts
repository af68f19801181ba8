// Expression watches on traced Python functions: part of the tracer's
// CModule (cmodule.ts includes it). The daemon sends the expressions
// (compiled by the interpreter in watches.ts) and, per traced function, the
// ones read there; a function's list is found once per classification and
// cached in its code state. At a call's enter the expressions run with the
// arguments as locals, at its exit with the frame's final locals and
// `retval`, both in the function's globals; the values follow the
// arguments or return value in the payload. They run Python code (the
// user's), before the payload is written (a call they make may be traced
// and reuse the scratch buffer), with the thread's `tracing` count raised
// so no call they make is recorded and no trace function runs.
import { CFG, LAYOUT } from "./offsets.js";

/** Most watch values one call records. */
export const MAX_CALL_WATCHES = 16;

/** Bytes of one watch table slot: function id, list pointer. */
export const WATCH_SLOT = 16;

export const PY_WATCHES_C = `
extern PyObject *PyDict_New(void);
extern int PyDict_SetItem(PyObject *, PyObject *, PyObject *);
extern PyObject *PyUnicode_FromString(const char *);
extern char PyCell_Type;

#define MAX_CALL_WATCHES ${MAX_CALL_WATCHES}

typedef struct { const char *label; PyObject *code; } WatchEntry;
typedef struct { guint64 n; WatchEntry e[1]; } WatchList;

/* A function's watches: the table is [mask, then (id, list) slots]. */
static void *watches_of(guint32 id) {
    const guint64 *t = (const guint64 *)(gsize)pycfg[${CFG.watchTable}];
    if (t == NULL || id == 0) return NULL;
    guint64 mask = t[0];
    const guint64 *slots = t + 1;
    for (guint64 i = id & mask, probes = 0; probes <= mask; i = (i + 1) & mask, probes++) {
        if (slots[2 * i] == 0) return NULL;
        if (slots[2 * i] == id) return (void *)(gsize)slots[2 * i + 1];
    }
    return NULL;
}

/* Runs a call's watches: results[i] is a new reference (a str saying why
   for one that raised). Locals: the frame's first nlocals (a cell's
   contents for a cell), and retval when given. */
static guint32 eval_watches(void *ts, void *list, char *frame, PyObject *co, guint32 nlocals, PyObject *retval, PyObject **results) {
    WatchList *wl = (WatchList *)list;
    PyObject *locals = PyDict_New();
    if (locals == NULL) { PyErr_Clear(); return 0; }
    PyObject *names = AT(co, L(${LAYOUT.codeNames}), PyObject *);
    PyObject **namev = (PyObject **)((char *)names + L(${LAYOUT.tupleItems}));
    PyObject **vals = (PyObject **)(frame + L(${LAYOUT.frameLocals}));
    if (nlocals > (guint32)SIZE(names)) nlocals = (guint32)SIZE(names);
    for (guint32 i = 0; i < nlocals; i++) {
        PyObject *v = vals[i];
        if (v != NULL && TYPE(v) == &PyCell_Type) v = AT(v, 16, PyObject *);
        if (v != NULL && PyDict_SetItem(locals, namev[i], v) != 0) PyErr_Clear();
    }
    if (retval != NULL && PyDict_SetItemString(locals, "retval", retval) != 0) PyErr_Clear();
    PyObject *globals = AT(frame, L(${LAYOUT.frameGlobals}), PyObject *);
    guint32 n = wl->n < MAX_CALL_WATCHES ? (guint32)wl->n : MAX_CALL_WATCHES;
    AT(ts, L(${LAYOUT.tstateTracing}), int)++;
    for (guint32 i = 0; i < n; i++) {
        PyObject *r = PyEval_EvalCode(wl->e[i].code, globals, locals);
        if (r == NULL) {
            char err[512] = "<error: ";
            error_text(err + 8, sizeof(err) - 10);
            guint32 at = (guint32)strlen_(err);
            err[at] = '>';
            err[at + 1] = 0;
            r = PyUnicode_FromString(err);
            if (r == NULL) PyErr_Clear();
        }
        results[i] = r;
    }
    AT(ts, L(${LAYOUT.tstateTracing}), int)--;
    Py_DecRef(locals);
    return n;
}

/* The watch section of a payload: u8 count, then label and value each;
   the references are released. */
static void put_watches_(Buf *b, void *list, PyObject **results, guint32 n);
/* Without a call when there is nothing to write (most calls). */
#define put_watches(b, list, results, n) do { if ((n) != 0) put_watches_((b), (list), (results), (n)); } while (0)
static void put_watches_(Buf *b, void *list, PyObject **results, guint32 n) {
    WatchList *wl = (WatchList *)list;
    u8(b, (guint8)n);
    for (guint32 i = 0; i < n; i++) {
        cname(b, wl->e[i].label);
        value(b, results[i], (int)pycfg[${CFG.depth}]);
        Py_DecRef(results[i]);
    }
}
`;
