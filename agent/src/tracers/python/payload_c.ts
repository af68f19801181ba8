// Payload writing and value encoding for the Python tracer's C side
// (cmodule.ts includes it): the buffer writers, and the typed encoding of a
// Python object read in place (never calling its code), in the format
// crates/strobe-values/src/python/ decodes.
import { CFG, LAYOUT } from "./offsets.js";

export const PY_PAYLOAD_C = `
/* Payload writing: everything stops (and one T_CUT is left) when the
   buffer is full, so a payload is never cut mid-value. Macros, not
   functions: TinyCC inlines nothing, and as calls these four were a third
   of a traced call's cost (perf, docs/BENCHMARKS.md). */
#define room(b, n) (!(b)->cut && ((b)->pos + (guint32)(n) + 1 <= (b)->cap \
    || ((b)->p[(b)->pos++] = T_CUT, (b)->cut = 1, 0)))
#define u8(b, v) do { Buf *b_ = (b); guint8 v_ = (guint8)(v); \
    if (room(b_, 1)) b_->p[b_->pos++] = v_; } while (0)
#define u32(b, v) do { Buf *b_ = (b); guint32 v_ = (guint32)(v); \
    if (room(b_, 4)) { *(guint32 *)(b_->p + b_->pos) = v_; b_->pos += 4; } } while (0)
#define u64(b, v) do { Buf *b_ = (b); guint64 v_ = (guint64)(v); \
    if (room(b_, 8)) { *(guint64 *)(b_->p + b_->pos) = v_; b_->pos += 8; } } while (0)
/* A short string: u16 length and bytes (names, type names). */
static void name(Buf *b, const char *s, gsize n) {
    if (n > 1024) n = 1024;
    if (!room(b, 2 + (guint32)n)) return;
    *(guint16 *)(b->p + b->pos) = (guint16)n;
    for (gsize i = 0; i < n; i++) b->p[b->pos + 2 + i] = s[i];
    b->pos += 2 + (guint32)n;
}
static void cname(Buf *b, const char *s) { gsize n = 0; while (s[n]) n++; name(b, s, n); }
static void str_name(Buf *b, PyObject *s) {
    Py_ssize_t n = 0;
    const char *p = utf8(s, &n);
    if (p == NULL) { PyErr_Clear(); name(b, "?", 1); return; }
    name(b, p, (gsize)n);
}
/* A long string or bytes: full length, shown length, bytes. */
static void blob(Buf *b, guint8 tag, const char *s, Py_ssize_t n) {
    guint32 shown = (guint32)n;
    if (shown > pycfg[${CFG.strBytes}]) shown = (guint32)pycfg[${CFG.strBytes}];
    if (!room(b, 9 + shown)) return;
    b->p[b->pos] = tag;
    *(guint32 *)(b->p + b->pos + 1) = (guint32)n;
    *(guint32 *)(b->p + b->pos + 5) = shown;
    for (guint32 i = 0; i < shown; i++) b->p[b->pos + 9 + i] = s[i];
    b->pos += 9 + shown;
}

static void value(Buf *b, PyObject *o, int depth);

/* An int of up to two 30-bit digits (|value| < 2^60; digits from
   LONG_DIGITS, a plain variable), read in place with no call, as a 64-bit
   two's complement. */
#define LONG_DIGIT(o, i) ((guint64)((const guint32 *)((char *)(o) + L(${LAYOUT.longDigits})))[i])
#define SMALL_MAGNITUDE(o, digits) ((digits) == 0 ? 0ULL : (digits) == 1 || (digits) == -1 ? LONG_DIGIT(o, 0) \
    : (LONG_DIGIT(o, 0) | LONG_DIGIT(o, 1) << 30))
#define SMALL_LONG(o, digits) ((digits) < 0 ? (guint64)(-(gint64)SMALL_MAGNITUDE(o, digits)) : SMALL_MAGNITUDE(o, digits))

/* A return value the exit record itself can carry, with no payload: None,
   a bool, an int of up to two digits, a float. Returns the record's kind
   bits for it (KIND_INLINE, the value's tag in bits 16-23) with its bits
   in *bits, or 0 when it needs a payload (NULL: an exception left). */
static guint32 inline_value(PyObject *o, guint64 *bits) {
    *bits = 0;
    if (o == NULL) return 0;
    if (o == (PyObject *)&_Py_NoneStruct) return KIND_INLINE | (T_NONE << 16);
    if (o == (PyObject *)&_Py_TrueStruct) return KIND_INLINE | (T_TRUE << 16);
    if (o == (PyObject *)&_Py_FalseStruct) return KIND_INLINE | (T_FALSE << 16);
    char *tp = TYPE(o);
    if (tp == &PyLong_Type) {
        Py_ssize_t digits = LONG_DIGITS(o);
        if (digits < -2 || digits > 2) return 0;
        *bits = SMALL_LONG(o, digits);
        return KIND_INLINE | (T_INT << 16);
    }
    if (tp == &PyFloat_Type) { *bits = AT(o, L(${LAYOUT.floatValue}), guint64); return KIND_INLINE | (T_FLOAT << 16); }
    return 0;
}

static void items(Buf *b, guint8 tag, PyObject **v, Py_ssize_t n, int depth) {
    guint32 shown = n < (Py_ssize_t)pycfg[${CFG.items}] ? (guint32)n : (guint32)pycfg[${CFG.items}];
    u8(b, tag); u32(b, (guint32)n); u32(b, shown);
    for (guint32 i = 0; i < shown; i++) value(b, v[i], depth - 1);
}

static void dict(Buf *b, PyObject *d, int depth) {
    Py_ssize_t n = PyDict_Size(d), pos = 0;
    guint32 shown = n < (Py_ssize_t)pycfg[${CFG.items}] ? (guint32)n : (guint32)pycfg[${CFG.items}];
    u8(b, T_DICT); u32(b, (guint32)n); u32(b, shown);
    PyObject *k, *v;
    for (guint32 i = 0; i < shown && PyDict_Next(d, &pos, &k, &v); i++) { value(b, k, depth - 1); value(b, v, depth - 1); }
}

static void set(Buf *b, guint8 tag, PyObject *s, int depth) {
    Py_ssize_t n = PySet_Size(s), pos = 0, hash;
    guint32 shown = n < (Py_ssize_t)pycfg[${CFG.items}] ? (guint32)n : (guint32)pycfg[${CFG.items}];
    u8(b, tag); u32(b, (guint32)n); u32(b, shown);
    PyObject *k;
    for (guint32 i = 0; i < shown && _PySet_NextEntry(s, &pos, &k, &hash); i++) value(b, k, depth - 1);
}

/* An instance's attributes, read where they are: its dict, or (3.11's
   managed dicts, before anything asked for __dict__) the values array
   beside the keys its type shares. Never creates a dict: no allocation,
   so no garbage collection and no finalizer runs from here. */
static PyObject *instance_dict(PyObject *o, PyObject ***vals) {
    char *tp = TYPE(o);
    unsigned long tf = TFLAGS(tp);
    PyObject *d = NULL;
    *vals = NULL;
    if (tf & MANAGED_DICT) {
#if PY_MINOR == 11
        d = AT(o, L(${LAYOUT.managedDict}), PyObject *);
        if (d == NULL) *vals = AT(o, L(${LAYOUT.managedValues}), PyObject **);
#elif PY_MINOR == 12
        /* One word: the dict, or the values array's address minus one. */
        char *dv = AT(o, L(${LAYOUT.managedDict}), char *);
        if ((gsize)dv & 1) *vals = (PyObject **)(dv + 1); else d = (PyObject *)dv;
#else
        /* The values inline after the object, valid until a dict took them. */
        d = AT(o, L(${LAYOUT.managedDict}), PyObject *);
        if (d == NULL && (tf & INLINE_VALUES)) {
            char *v = (char *)o + AT(tp, L(${LAYOUT.typeBasicSize}), Py_ssize_t);
            if (AT(v, L(${LAYOUT.valuesValid}), guint8)) *vals = (PyObject **)(v + L(${LAYOUT.valuesValues}));
        }
#endif
    } else if (tf & HEAPTYPE) {
        Py_ssize_t off = AT(tp, L(${LAYOUT.typeDictOffset}), Py_ssize_t);
        if (off > 0) d = AT(o, off, PyObject *);
    }
    return d != NULL && TYPE(d) == &PyDict_Type ? d : NULL;
}

/* The split keys' entries (key, value pairs after the index table) of a
   type whose instances keep managed values; NULL if none. */
static PyObject **shared_keys(char *tp, Py_ssize_t *entries) {
    char *keys = (TFLAGS(tp) & HEAPTYPE) ? AT(tp, L(${LAYOUT.cachedKeys}), char *) : NULL;
    if (keys == NULL) return NULL;
    *entries = AT(keys, L(${LAYOUT.keysEntries}), Py_ssize_t);
    return (PyObject **)(keys + L(${LAYOUT.keysIndices}) + ((gsize)1 << AT(keys, L(${LAYOUT.keysIndexBytes}), guint8)));
}

static void object(Buf *b, PyObject *o, const char *tname, int depth) {
    PyObject **vals;
    PyObject *d = instance_dict(o, &vals);
    if (d != NULL) {
        Py_ssize_t n = PyDict_Size(d), pos = 0;
        guint32 shown = n < (Py_ssize_t)pycfg[${CFG.items}] ? (guint32)n : (guint32)pycfg[${CFG.items}];
        u8(b, T_OBJECT); cname(b, tname); u32(b, (guint32)n); u32(b, shown);
        PyObject *k, *v;
        for (guint32 i = 0; i < shown && PyDict_Next(d, &pos, &k, &v); i++) {
            if (TYPE(k) == &PyUnicode_Type) str_name(b, k); else name(b, "?", 1);
            value(b, v, depth - 1);
        }
        return;
    }
    Py_ssize_t entries = 0, n = 0;
    PyObject **ent = vals != NULL ? shared_keys(TYPE(o), &entries) : NULL;
    if (ent == NULL) { u8(b, T_OPAQUE); cname(b, tname); u64(b, (guint64)(gsize)o); return; }
    for (Py_ssize_t i = 0; i < entries; i++) if (vals[i] != NULL) n++;
    guint32 shown = n < (Py_ssize_t)pycfg[${CFG.items}] ? (guint32)n : (guint32)pycfg[${CFG.items}];
    u8(b, T_OBJECT); cname(b, tname); u32(b, (guint32)n); u32(b, shown);
    for (Py_ssize_t i = 0, done = 0; i < entries && done < shown; i++) {
        if (vals[i] == NULL) continue;
        PyObject *k = ent[2 * i];
        if (k != NULL && TYPE(k) == &PyUnicode_Type) str_name(b, k); else name(b, "?", 1);
        value(b, vals[i], depth - 1);
        done++;
    }
}

static void value(Buf *b, PyObject *o, int depth) {
    if (b->cut) return;
    if (o == NULL) { u8(b, T_NONE); return; }
    if (o == (PyObject *)&_Py_NoneStruct) { u8(b, T_NONE); return; }
    if (o == (PyObject *)&_Py_TrueStruct) { u8(b, T_TRUE); return; }
    if (o == (PyObject *)&_Py_FalseStruct) { u8(b, T_FALSE); return; }
    char *tp = TYPE(o);
    if (tp == &PyLong_Type) {
        Py_ssize_t digits = LONG_DIGITS(o);
        if (digits >= -2 && digits <= 2) {
            u8(b, T_INT);
            u64(b, SMALL_LONG(o, digits));
            return;
        }
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow == 0) { u8(b, T_INT); u64(b, (guint64)v); return; }
        PyErr_Clear();
        u8(b, T_BIGINT); u8(b, _PyLong_Sign(o) < 0 ? 1 : 0); u64(b, (guint64)_PyLong_NumBits(o));
        return;
    }
    if (tp == &PyFloat_Type) { u8(b, T_FLOAT); u64(b, AT(o, L(${LAYOUT.floatValue}), guint64)); return; }
    if (tp == &PyUnicode_Type) {
        Py_ssize_t n = 0;
        const char *s = utf8(o, &n);
        if (s == NULL) { PyErr_Clear(); u8(b, T_OPAQUE); cname(b, "str"); u64(b, (guint64)(gsize)o); return; }
        blob(b, T_STR, s, n);
        return;
    }
    if (tp == &PyBytes_Type) { blob(b, T_BYTES, (const char *)o + 32, SIZE(o)); return; }
    const char *tname = AT(tp, L(${LAYOUT.typeName}), const char *);
    unsigned long tf = TFLAGS(tp);
    if (depth <= 0) {
        Py_ssize_t n = -1;
        if (tp == &PyList_Type || tp == &PyTuple_Type) n = SIZE(o);
        else if (tp == &PyDict_Type) n = PyDict_Size(o);
        u8(b, T_DEEP); cname(b, tname); u64(b, (guint64)n);
        return;
    }
    if (tp == &PyList_Type) { items(b, T_LIST, AT(o, L(${LAYOUT.listItems}), PyObject **), SIZE(o), depth); return; }
    if (tp == &PyTuple_Type) { items(b, T_TUPLE, (PyObject **)((char *)o + L(${LAYOUT.tupleItems})), SIZE(o), depth); return; }
    if (tp == &PyDict_Type) { dict(b, o, depth); return; }
    if (tp == &PySet_Type) { set(b, T_SET, o, depth); return; }
    if (tp == &PyFrozenSet_Type) { set(b, T_FROZENSET, o, depth); return; }
    if (tp == &PyFunction_Type) { u8(b, T_FUNCTION); str_name(b, AT(o, L(${LAYOUT.funcQualname}), PyObject *)); return; }
    if (tf & TYPE_SUB) { u8(b, T_CLASS); cname(b, AT(o, L(${LAYOUT.typeName}), const char *)); return; }
    if (tf & EXC_SUB) { u8(b, T_EXCEPTION); cname(b, tname); value(b, AT(o, L(${LAYOUT.excArgs}), PyObject *), depth - 1); return; }
    /* Subclasses of int and str (IntEnum, StrEnum, …): the type's name and
       the builtin value, read without calling the subclass's methods. */
    if ((tf & LONG_SUB) && tp != &PyBool_Type) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow) { PyErr_Clear(); v = 0; }
        u8(b, T_SUBCLASS); cname(b, tname); u8(b, T_INT); u64(b, (guint64)v);
        return;
    }
    if (tf & UNICODE_SUB) {
        Py_ssize_t n = 0;
        const char *s = utf8(o, &n);
        if (s != NULL) { u8(b, T_SUBCLASS); cname(b, tname); blob(b, T_STR, s, n); return; }
        PyErr_Clear();
    }
    object(b, o, tname, depth);
}

/* Starts a payload in the scratch buffer: marker, length (filled by
   finish), format version (2: an enter's names before its values), what
   it holds. */
#define begin(b, what) do { Buf *bb_ = (b); \
    bb_->p = (guint8 *)(gsize)pycfg[${CFG.scratch}]; bb_->cap = PAYLOAD_MAX; bb_->cut = 0; \
    *(guint32 *)bb_->p = PY_MARK; *(guint32 *)(bb_->p + 4) = 0; bb_->p[8] = 2; bb_->p[9] = (what); \
    bb_->pos = 10; } while (0)
static guint32 finish(Buf *b) { *(guint32 *)(b->p + 4) = b->pos; return b->pos; }
/* The ring's form of a payload: the header cut to its last three bytes,
   u16 length (of this form) and what, so a call's record takes fewer ring
   slots; the daemon restores the stored form (crates/strobe-values/src/
   python/ring_form.rs). put_py writes a record with it. */
#define WIRE_CUT 7
#define finish_wire(b) (*(guint16 *)((b)->p + WIRE_CUT) = (guint16)((b)->pos - WIRE_CUT), (b)->pos - WIRE_CUT)
#define put_py(tid, func, kind, key, t, b) put_record((tid), (func), (kind), (key), (t), (b)->p + WIRE_CUT, finish_wire(b))
`;
