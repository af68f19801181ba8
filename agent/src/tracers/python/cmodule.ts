// The Python tracer's C side (compiled by Frida's TinyCC). What calls it
// at each Python call depends on the version (the mechanism): in 3.11 the
// interpreter evaluates every frame through the eval stub (stub.ts), which
// calls py_enter before the frame runs and py_leave after it
// (eval_frame_c.ts); in 3.12 and later sys.monitoring calls its callbacks
// at a function's start, return and unwinding (monitoring_c.ts). Either
// runs on the Python thread, holding the GIL, and never runs the program's
// code. A code object is classified once per change of targets (the answer
// is cached on the code object, in its co_extra slot); a traced function's
// enter record carries its typed arguments, its exit the return value or
// the exception. Records go into the native runtime's ring (../ring.ts)
// with a payload in the format crates/strobe-values/src/python/ decodes.
//
// CPython's internal layouts are read at offsets cpython.ts has per version,
// not from headers (TinyCC has none). They are constants in the source the
// interpreter gets (pyCModuleSource): TinyCC folds them into the loads,
// where reading each from a table cost a load and an index per access.
import { KIND_DETACHED, KIND_INLINE, KIND_PYTHON, PAYLOAD_MAX, RING_WRITER_C } from "../ring.js";
import { PY_DEBUG_C } from "./debug_c.js";
import { PY_EVAL_FRAME_C } from "./eval_frame_c.js";
import { PY_MONITORING_C } from "./monitoring_c.js";
import { PY_PAYLOAD_C } from "./payload_c.js";
import { PY_RAISED_C } from "./raised_c.js";
import { PY_WATCHES_C } from "./watches_c.js";
import { CFG, LAYOUT, THREAD_SLOTS } from "./offsets.js";

export { CFG, LAYOUT, TABLE_SLOT, THREAD_SLOTS } from "./offsets.js";


/** The C source for an interpreter with these layout offsets (indexed by
 *  LAYOUT's values); its externs are bound in index.ts. */
export function pyCModuleSource(layout: readonly number[], minor: number): string {
    const constants = layout.map((off, i) => `#define LAYOUT_${i} (${off}L)`).join("\n");
    return PY_CMODULE_SOURCE
        .replace("#define L(i) LAYOUT_##i", `#define PY_MINOR ${minor}\n${constants}\n#define L(i) LAYOUT_##i`)
        .replace("/* MECHANISM */", minor >= 12 ? PY_MONITORING_C : PY_EVAL_FRAME_C);
}

const PY_CMODULE_SOURCE = `
#include <glib.h>

typedef struct _object PyObject;
typedef long Py_ssize_t;

extern volatile guint64 ring[];
extern volatile guint64 drops[];
extern volatile guint64 config[];
extern volatile guint64 pycfg[];
extern int getpid(void);
extern int clock_gettime(int, void *);
extern int sched_yield(void);
extern int usleep(unsigned int);
extern void *malloc(gsize);
extern void free(void *);
extern char *realpath(const char *, char *);
extern Py_ssize_t _PyEval_RequestCodeExtraIndex(void (*)(void *));
extern int _PyCode_SetExtra(PyObject *, Py_ssize_t, void *);
extern const char *PyUnicode_AsUTF8AndSize(PyObject *, Py_ssize_t *);
extern long long PyLong_AsLongLongAndOverflow(PyObject *, int *);
extern gsize _PyLong_NumBits(PyObject *);
extern int _PyLong_Sign(PyObject *);
extern double PyFloat_AsDouble(PyObject *);
extern int PyDict_Next(PyObject *, Py_ssize_t *, PyObject **, PyObject **);
extern int _PySet_NextEntry(PyObject *, Py_ssize_t *, PyObject **, Py_ssize_t *);
extern Py_ssize_t PySet_Size(PyObject *);
extern Py_ssize_t PyDict_Size(PyObject *);
extern void PyErr_Fetch(PyObject **, PyObject **, PyObject **);
extern void PyErr_Restore(PyObject *, PyObject *, PyObject *);
extern void PyErr_Clear(void);
extern void PyErr_NormalizeException(PyObject **, PyObject **, PyObject **);
extern int PyErr_GivenExceptionMatches(PyObject *, PyObject *);
extern PyObject *PyExc_SystemExit;
extern PyObject *PyFrame_GetCode(PyObject *);
extern PyObject *PyFrame_GetLocals(PyObject *);
extern PyObject *PyDict_New(void);
extern int PyDict_Merge(PyObject *, PyObject *, int);
extern void Py_DecRef(PyObject *);
extern PyObject *PyImport_GetModuleDict(void);
extern PyObject *PyDict_GetItemString(PyObject *, const char *);
extern PyObject *PyModule_GetDict(PyObject *);
extern PyObject *PyLong_FromUnsignedLong(unsigned long);
extern PyObject *PyDict_GetItem(PyObject *, PyObject *);
extern unsigned long PyThread_get_thread_ident(void);
extern int PyCode_Addr2Line(PyObject *, int);
extern char _Py_NoneStruct, _Py_TrueStruct, _Py_FalseStruct;
extern char PyLong_Type, PyBool_Type, PyFloat_Type, PyUnicode_Type, PyBytes_Type, PyByteArray_Type;
extern char PyList_Type, PyTuple_Type, PyDict_Type, PySet_Type, PyFrozenSet_Type, PyFunction_Type;

${RING_WRITER_C}

#define KIND_PY ${KIND_PYTHON}u
#define KIND_DET ${KIND_DETACHED}u
#define KIND_INLINE ${KIND_INLINE}u
#define PAYLOAD_MAX ${PAYLOAD_MAX}u
#define PY_MARK 0xFFFFu

#define L(i) LAYOUT_##i
#define AT(p, off, T) (*(T *)((char *)(p) + (off)))
#define TYPE(o) AT(o, 8, char *)
#define SIZE(o) AT(o, 16, Py_ssize_t)
#define TFLAGS(t) AT(t, L(${LAYOUT.typeFlags}), unsigned long)
/* An int's digit count, negative for a negative int: its ob_size in 3.11;
   from 3.12 its lv_tag, digits << 3 | sign (0 positive, 1 zero, 2 negative). */
#if PY_MINOR >= 12
#define LONG_DIGITS(o) ((AT(o, 16, guint64) & 3) == 2 ? -(Py_ssize_t)(AT(o, 16, guint64) >> 3) : (Py_ssize_t)(AT(o, 16, guint64) >> 3))
#else
#define LONG_DIGITS(o) SIZE(o)
#endif

#define CO_GENERATOR 0x20
#define CO_COROUTINE 0x80
#define CO_ASYNC_GENERATOR 0x200
#define CO_VARARGS 0x4
#define CO_VARKEYWORDS 0x8
#define GEN_FLAGS (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)
#define HEAPTYPE (1UL << 9)
#define MANAGED_DICT (1UL << 4)
#define INLINE_VALUES (1UL << 2)
#define LONG_SUB (1UL << 24)
#define LIST_SUB (1UL << 25)
#define TUPLE_SUB (1UL << 26)
#define BYTES_SUB (1UL << 27)
#define UNICODE_SUB (1UL << 28)
#define DICT_SUB (1UL << 29)
#define EXC_SUB (1UL << 30)
#define TYPE_SUB (1UL << 31)

/* Value tags: crates/strobe-values/src/python/. */
enum { T_NONE, T_TRUE, T_FALSE, T_INT, T_BIGINT, T_FLOAT, T_STR, T_BYTES, T_LIST, T_TUPLE,
       T_DICT, T_SET, T_FROZENSET, T_OBJECT, T_DEEP, T_OPAQUE, T_CUT, T_SUBCLASS, T_EXCEPTION,
       T_CLASS, T_FUNCTION };

/* Bytes of a code object's argument names kept encoded (u16 length and
   UTF-8 each) in its state, for its enter records to copy in one go. */
#define NAMES_MAX 64
/* names_len: 0 not encoded yet, NAMES_LONG too long to keep, else the
   bytes plus one. */
#define NAMES_LONG 0xFFFFFFFFu

/* What py_enter found out about a code object, cached in its co_extra. */
typedef struct { guint64 gen; guint32 id; guint32 nargs; guint32 flags; guint32 dyn; guint32 bp; guint32 local; void *watches;
                 guint32 names_len; guint8 names[NAMES_MAX]; } CodeState;
typedef struct { guint64 hash; guint64 id; const char *qualname; const char *file; } Slot;
typedef struct { Py_ssize_t size; void *extras[1]; } CodeExtra;
typedef struct { guint8 *p; guint32 pos; guint32 cap; guint32 cut; } Buf;

static guint64 fnv(const char *s, Py_ssize_t n) {
    guint64 h = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < n; i++) { h ^= (guint8)s[i]; h *= 1099511628211ULL; }
    return h | 1;
}

/* A str's UTF-8: a compact ASCII string's own characters (most names and
   many values: no call), else the interpreter's cached UTF-8 (NULL with an
   error set when it has none, e.g. lone surrogates). */
static const char *utf8(PyObject *s, Py_ssize_t *n) {
    guint32 state = AT(s, L(${LAYOUT.strState}), guint32);
    if (((state >> 5) & 3) == 3) {
        if (n != NULL) *n = AT(s, L(${LAYOUT.strLength}), Py_ssize_t);
        return (const char *)s + L(${LAYOUT.strAsciiData});
    }
    return PyUnicode_AsUTF8AndSize(s, n);
}

static int same(const char *a, const char *b) {
    while (*a && *a == *b) { a++; b++; }
    return *a == *b;
}

/* The function id of a code object (0: not traced): its co_qualname and
   co_filename against the target table; a file named differently (a
   relative path, a symlink) is compared again once resolved. */
static guint32 lookup(PyObject *co) {
    Py_ssize_t qn = 0, fn = 0;
    const char *q = utf8(AT(co, L(${LAYOUT.codeQualname}), PyObject *), &qn);
    if (q == NULL) { PyErr_Clear(); return 0; }
    const char *f = utf8(AT(co, L(${LAYOUT.codeFilename}), PyObject *), &fn);
    if (f == NULL) { PyErr_Clear(); return 0; }
    /* One pointer to the whole table (its first slot holds the mask), so a
       table swapped in while this runs is read whole, old or new. */
    const Slot *table = (const Slot *)(gsize)pycfg[${CFG.table}];
    if (table == NULL) return 0;
    guint64 h = fnv(q, qn), mask = table[0].hash;
    table++;
    char resolved[4096];
    int have_resolved = 0;
    for (guint64 i = h & mask, probes = 0; probes <= mask; i = (i + 1) & mask, probes++) {
        const Slot *s = &table[i];
        if (s->hash == 0) return 0;
        if (s->hash != h || !same(s->qualname, q)) continue;
        if (same(s->file, f)) return (guint32)s->id;
        if (!have_resolved) have_resolved = realpath(f, resolved) != NULL ? 1 : -1;
        if (have_resolved == 1 && same(s->file, resolved)) return (guint32)s->id;
    }
    return 0;
}

static guint32 runtime_match(PyObject *co, void *frame, CodeState *st);
static guint32 code_bp(PyObject *co);
static void *watches_of(guint32 id);
static gsize strlen_(const char *s) { gsize n = 0; while (s[n]) n++; return n; }

static CodeState *state_of(PyObject *co, void *frame) {
    Py_ssize_t idx = (Py_ssize_t)pycfg[${CFG.extraIndex}];
    if (idx < 0) {
        idx = _PyEval_RequestCodeExtraIndex(free);
        if (idx < 0) { PyErr_Clear(); return NULL; }
        pycfg[${CFG.extraIndex}] = (guint64)idx;
    }
    CodeExtra *ex = AT(co, L(${LAYOUT.codeExtra}), CodeExtra *);
    CodeState *st = (ex != NULL && idx < ex->size) ? ex->extras[idx] : NULL;
    if (st != NULL && st->gen == pycfg[${CFG.generation}]) return st;
    if (st == NULL) {
        st = malloc(sizeof(CodeState));
        if (st == NULL) return NULL;
        if (_PyCode_SetExtra(co, idx, st) != 0) { free(st); PyErr_Clear(); return NULL; }
        st->dyn = 0;
        st->local = 0;
        st->names_len = 0;
    }
    st->gen = pycfg[${CFG.generation}];
    st->id = lookup(co);
    if (st->id == 0 && pycfg[${CFG.patternCount}] != 0) st->id = runtime_match(co, frame, st);
    guint32 flags = (guint32)AT(co, L(${LAYOUT.codeFlags}), int);
    st->flags = flags;
    st->bp = pycfg[${CFG.bpCount}] != 0 ? code_bp(co) : 0;
    st->watches = st->id != 0 ? watches_of(st->id) : NULL;
    st->nargs = (guint32)AT(co, L(${LAYOUT.codeArgc}), int) + (guint32)AT(co, L(${LAYOUT.codeKwonly}), int)
        + ((flags & CO_VARARGS) ? 1 : 0) + ((flags & CO_VARKEYWORDS) ? 1 : 0);
    return st;
}

/* state_of's common case without a call (TinyCC inlines nothing): the
   code object's state of this generation. */
#define STATE_OF(out, co, frame) do { PyObject *so_co = (co); \
    CodeExtra *so_ex = AT(so_co, L(${LAYOUT.codeExtra}), CodeExtra *); \
    Py_ssize_t so_i = (Py_ssize_t)pycfg[${CFG.extraIndex}]; \
    CodeState *so_st = (so_ex != NULL && so_i >= 0 && so_i < so_ex->size) ? so_ex->extras[so_i] : NULL; \
    out = so_st != NULL && so_st->gen == pycfg[${CFG.generation}] ? so_st : state_of(so_co, (frame)); } while (0)

${PY_PAYLOAD_C}

#define ARG_NAME(co, i) ((PyObject **)((char *)AT(co, L(${LAYOUT.codeNames}), PyObject *) + L(${LAYOUT.tupleItems})))[i]

/* Encodes a code object's first nargs argument names into its state (a
   code object's names never change), or marks them too long to keep. */
static void encode_names(CodeState *st, PyObject *co, guint32 nargs) {
    guint32 at = 0;
    for (guint32 i = 0; i < nargs; i++) {
        Py_ssize_t n = 0;
        const char *s = utf8(ARG_NAME(co, i), &n);
        if (s == NULL) { PyErr_Clear(); s = "?"; n = 1; }
        if (at + 2 + (guint32)n > NAMES_MAX) { st->names_len = NAMES_LONG; return; }
        *(guint16 *)(st->names + at) = (guint16)n;
        for (Py_ssize_t k = 0; k < n; k++) st->names[at + 2 + k] = s[k];
        at += 2 + (guint32)n;
    }
    st->names_len = at + 1;
}

/* An enter's arguments (format version 2): their count, their names, then
   their values. The names are copied from the code object's state in
   words; an int of up to two digits is written here, with no call. */
static void args_of(Buf *b, CodeState *st, PyObject *co, PyObject **locals) {
    guint32 nargs = st->nargs > 255 ? 255 : st->nargs;
    u8(b, (guint8)nargs);
    if (st->names_len == 0) encode_names(st, co, nargs);
    if (st->names_len != NAMES_LONG) {
        guint32 n = st->names_len - 1;
        if (room(b, n)) {
            /* Whole words: the scratch buffer and names[] both have room
               past the end for the last one. */
            guint64 *dst = (guint64 *)(b->p + b->pos);
            const guint64 *src = (const guint64 *)st->names;
            guint32 words = (n + 7) >> 3;
            for (guint32 i = 0; i < words; i++) dst[i] = src[i];
            b->pos += n;
        }
    } else {
        for (guint32 i = 0; i < nargs; i++) str_name(b, ARG_NAME(co, i));
    }
    int depth = (int)pycfg[${CFG.depth}];
    for (guint32 i = 0; i < nargs; i++) {
        PyObject *o = locals[i];
        Py_ssize_t digits;
        if (o != NULL && TYPE(o) == &PyLong_Type && (digits = LONG_DIGITS(o)) >= -2 && digits <= 2) {
            u8(b, T_INT);
            u64(b, SMALL_LONG(o, digits));
        } else {
            value(b, o, depth);
        }
    }
}

/* An instance attribute by name, read where object() reads them (borrowed
   reference; NULL when absent). Never runs the object's code. */
static PyObject *attr(PyObject *o, const char *want) {
    PyObject **vals;
    PyObject *d = instance_dict(o, &vals);
    if (d != NULL) {
        PyObject *v = PyDict_GetItemString(d, want);
        if (v == NULL) PyErr_Clear();
        return v;
    }
    Py_ssize_t entries = 0;
    PyObject **ent = vals != NULL ? shared_keys(TYPE(o), &entries) : NULL;
    if (ent == NULL) return NULL;
    for (Py_ssize_t i = 0; i < entries; i++) {
        PyObject *k = ent[2 * i];
        if (vals[i] == NULL || k == NULL || TYPE(k) != &PyUnicode_Type) continue;
        const char *s = utf8(k, NULL);
        if (s == NULL) { PyErr_Clear(); continue; }
        if (same(s, want)) return vals[i];
    }
    return NULL;
}

#define KIND_THREAD_NAME 4u

/* The first time a thread records, its name from the threading module
   (threading._active[ident]._name: dict lookups, no Python code) goes into
   the ring as a record of its own; a thread threading does not know keeps
   the name the OS has. */
static void name_thread(guint32 tid) {
    volatile guint32 *seen = (volatile guint32 *)(gsize)pycfg[${CFG.threads}];
    guint32 i = tid & (${THREAD_SLOTS}u - 1), n = 0;
    for (; n < ${THREAD_SLOTS}u; n++, i = (i + 1) & (${THREAD_SLOTS}u - 1)) {
        if (seen[i] == tid) return;
        if (seen[i] == 0) break;
    }
    if (n == ${THREAD_SLOTS}u) return;
    seen[i] = tid;
    PyObject *mods = PyImport_GetModuleDict();
    PyObject *threading = mods != NULL ? PyDict_GetItemString(mods, "threading") : NULL;
    PyObject *active = threading != NULL ? PyDict_GetItemString(PyModule_GetDict(threading), "_active") : NULL;
    if (active == NULL || TYPE(active) != &PyDict_Type) { PyErr_Clear(); return; }
    PyObject *key = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
    if (key == NULL) { PyErr_Clear(); return; }
    PyObject *thread = PyDict_GetItem(active, key);
    Py_DecRef(key);
    PyObject *name = thread != NULL ? attr(thread, "_name") : NULL;
    if (name == NULL || TYPE(name) != &PyUnicode_Type) return;
    Buf b;
    begin(&b, 4);
    str_name(&b, name);
    guint64 t;
    NOW(t);
    put_py(tid, 0, KIND_THREAD_NAME | KIND_PY, 0, t, &b);
}

/* name_thread's common case without a call: the thread sits in its first
   probe slot. */
#define NAME_THREAD(tid) do { guint32 nt_ = (tid); \
    if (((volatile guint32 *)(gsize)pycfg[${CFG.threads}])[nt_ & (${THREAD_SLOTS}u - 1)] != nt_) \
        name_thread(nt_); } while (0)

/* A dotted-name glob: "*" within one segment, "**" across segments. */
static int glob(const char *p, const char *s) {
    for (;;) {
        if (*p == '*') {
            int any = p[1] == '*';
            p += any ? 2 : 1;
            for (const char *t = s;; t++) {
                if (glob(p, t)) return 1;
                if (*t == 0 || (!any && *t == '.')) return 0;
            }
        }
        if (*p == 0) return *s == 0;
        if (*p != *s) return 0;
        p++;
        s++;
    }
}

#define KIND_FUNCTION 5u

/* Code with no source file the resolver could read (exec, methods a
   library generates, like a dataclass's __init__) is named at run time by
   the function object running it: its __module__ (the main script's
   module name for __main__) and __qualname__, which such generators set
   to where the function belongs. A match gets an id of the run-time range
   (kept for the code object's life) and a record telling the daemon its
   name, file and line. */
static guint32 runtime_match(PyObject *co, void *frame, CodeState *st) {
    Py_ssize_t n = 0;
    const char *file = utf8(AT(co, L(${LAYOUT.codeFilename}), PyObject *), &n);
    if (file == NULL) { PyErr_Clear(); return 0; }
    if (file[0] != '<') return 0;
    PyObject *func = AT(frame, L(${LAYOUT.frameFunc}), PyObject *);
    if (func == NULL || TYPE(func) != &PyFunction_Type) return 0;
    PyObject *qn = AT(func, L(${LAYOUT.funcQualname}), PyObject *);
    PyObject *mod = AT(func, L(${LAYOUT.funcModule}), PyObject *);
    if (qn == NULL || mod == NULL || TYPE(qn) != &PyUnicode_Type || TYPE(mod) != &PyUnicode_Type) return 0;
    const char *q = utf8(qn, NULL);
    const char *m = utf8(mod, NULL);
    if (q == NULL || m == NULL) { PyErr_Clear(); return 0; }
    if (same(m, "__main__") && pycfg[${CFG.mainModule}] != 0) m = (const char *)(gsize)pycfg[${CFG.mainModule}];
    char full[1024];
    gsize at = 0;
    for (const char *c = m; *c && at < sizeof(full) - 2; c++) full[at++] = *c;
    full[at++] = '.';
    for (const char *c = q; *c && at < sizeof(full) - 1; c++) full[at++] = *c;
    full[at] = 0;
    const char **patterns = (const char **)(gsize)pycfg[${CFG.patterns}];
    int hit = 0;
    for (guint64 i = 0; i < pycfg[${CFG.patternCount}] && !hit; i++) hit = glob(patterns[i], full);
    if (!hit) return 0;
    if (st->dyn != 0) return st->dyn;
    if (pycfg[${CFG.nextId}] >= pycfg[${CFG.idLimit}]) return 0;
    st->dyn = (guint32)pycfg[${CFG.nextId}]++;
    Buf b;
    begin(&b, 5);
    name(&b, full, at);
    name(&b, file, (gsize)n);
    u32(&b, (guint32)AT(co, L(${LAYOUT.codeFirstLine}), int));
    guint64 t;
    NOW(t);
    put_py(0, st->dyn, KIND_FUNCTION | KIND_PY, 0, t, &b);
    return st->dyn;
}

#define tid_of(ts) ((guint32)AT(ts, L(${LAYOUT.tstateTid}), guint64))

/* A frame object's locals as a dict (new reference; NULL with the error
   set): 3.13 gives an optimized frame's as a write-through proxy, copied
   here, which runs none of the program's code. */
static PyObject *locals_dict(PyObject *f) {
    PyObject *l = PyFrame_GetLocals(f);
#if PY_MINOR >= 13
    if (l != NULL && TYPE(l) != &PyDict_Type) {
        PyObject *d = PyDict_New();
        if (d != NULL && PyDict_Merge(d, l, 1) != 0) { Py_DecRef(d); d = NULL; }
        Py_DecRef(l);
        l = d;
    }
#endif
    return l;
}

/* The interpreter frame a thread runs now. */
#if PY_MINOR >= 13
#define CURRENT_FRAME(ts) AT(ts, L(${LAYOUT.tstateFrame}), char *)
#else
#define CURRENT_FRAME(ts) AT(AT(ts, L(${LAYOUT.tstateCframe}), char *), L(${LAYOUT.cframeCurrent}), char *)
#endif

${PY_DEBUG_C}
${PY_RAISED_C}
${PY_WATCHES_C}

/* MECHANISM */

/* Most traceback entries an uncaught exception's report keeps (the
   innermost: where it was raised). */
#define MAX_TB 64

/* Called as the interpreter is about to print an exception nothing caught
   (PyErr_PrintEx), with it pending. Writes its type, args and traceback
   (per entry: function, file, line, the frame's locals) into the scratch
   buffer and returns the payload's length; 0 for SystemExit (an exit, not
   a crash) or nothing pending. The exception is left pending as found. */
guint32 py_uncaught(void) {
    PyObject *type, *val, *tb;
    PyErr_Fetch(&type, &val, &tb);
    if (type == NULL) return 0;
    PyErr_NormalizeException(&type, &val, &tb);
    if (PyErr_GivenExceptionMatches(type, PyExc_SystemExit)) { PyErr_Restore(type, val, tb); return 0; }
    Buf b;
    begin(&b, 3);
    cname(&b, AT(type, L(${LAYOUT.typeName}), const char *));
    if (val != NULL && (TFLAGS(TYPE(val)) & EXC_SUB)) value(&b, AT(val, L(${LAYOUT.excArgs}), PyObject *), (int)pycfg[${CFG.depth}]);
    else value(&b, val, (int)pycfg[${CFG.depth}]);
    guint32 n = 0;
    for (PyObject *t = tb; t != NULL; t = AT(t, L(${LAYOUT.tbNext}), PyObject *)) n++;
    guint32 skip = n > MAX_TB ? n - MAX_TB : 0;
    u32(&b, n - skip); u32(&b, skip);
    guint32 i = 0;
    for (PyObject *t = tb; t != NULL; t = AT(t, L(${LAYOUT.tbNext}), PyObject *), i++) {
        if (i < skip) continue;
        PyObject *frame = AT(t, L(${LAYOUT.tbFrame}), PyObject *);
        PyObject *co = PyFrame_GetCode(frame);
        str_name(&b, AT(co, L(${LAYOUT.codeQualname}), PyObject *));
        str_name(&b, AT(co, L(${LAYOUT.codeFilename}), PyObject *));
        /* 3.11 leaves tb_lineno at -1 until asked: the line is the one of
           the instruction the frame was at. */
        int line = AT(t, L(${LAYOUT.tbLineno}), int);
        if (line < 0) line = PyCode_Addr2Line(co, AT(t, L(${LAYOUT.tbLasti}), int));
        u32(&b, (guint32)line);
        Py_DecRef(co);
        PyObject *locals = locals_dict(frame);
        if (locals == NULL) { PyErr_Clear(); u8(&b, T_NONE); }
        else { value(&b, locals, (int)pycfg[${CFG.depth}]); Py_DecRef(locals); }
    }
    PyErr_Restore(type, val, tb);
    return finish(&b);
}
`;
