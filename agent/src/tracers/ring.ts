// The record ring's writing side, in C, shared by every tracer's CModule:
// all tracers write into the one ring the native runtime owns
// (native/runtime.ts), so their records reach the daemon through one drain,
// one flow control and one clock, in the order they were made.
//
// A CModule that includes RING_WRITER_C must bind these externs (runtime.ts
// has them): `ring` (head, tail, then the slots), `drops` (per function id),
// `config` ([2] the pid, [5] set in a forked child), and libc's getpid,
// clock_gettime and sched_yield. Record layout: native/layout.ts.
import { FULL_RING_WAIT_NS, MAX_FUNCTIONS, RING_RECORDS } from "./native/layout.js";

/** Kind bit of a record whose payload is in the Python tracer's format
 *  (crates/strobe-values/src/python.rs) rather than a capture plan's. */
export const KIND_PYTHON = 0x200;
/** Kind bit of an enter or exit that pairs with its other half by the
 *  record's `value` (a generator's or coroutine's address), not by the
 *  thread's call stack: the two may be far apart, even on other threads. */
export const KIND_DETACHED = 0x400;

/** The C source: ring constants, `Rec`, `fetch_add`, `cas`, `NOW`,
 *  `reserve` and `put_record`. */
export const RING_WRITER_C = `
/* Both powers of two: masks, not divisions (TinyCC does not turn a
   modulo into a mask, and a 64-bit division costs tens of cycles). */
#define CAP ${RING_RECORDS}ULL
#define MAXF ${MAX_FUNCTIONS}U
#define KIND_PAD 3u

typedef struct { guint64 ts; guint32 func; guint32 tid; guint64 value; guint32 kind; guint32 extra; } Rec;

static inline guint64 fetch_add(volatile guint64 *p, guint64 v) {
    __asm__ volatile("lock; xaddq %0, %1" : "+r"(v), "+m"(*p) :: "memory");
    return v;
}

static inline int cas(volatile guint64 *p, guint64 expected, guint64 desired) {
    guint64 prev;
    __asm__ volatile("lock; cmpxchgq %2, %1" : "=a"(prev), "+m"(*p) : "r"(desired), "0"(expected) : "memory");
    return prev == expected;
}

/* Per-call helpers are macros: TinyCC inlines nothing, and the calls were a
   good part of the per-call cost. CLOCK_MONOTONIC in ns. */
#define NOW(out) do { struct { gint64 s; gint64 ns; } t_; clock_gettime(1, &t_); \\
    out = (guint64)t_.s * 1000000000ULL + (guint64)t_.ns; } while (0)

/* Reserves 1 + extra slots, never across the ring's end (a padding record
   fills the rest first). Returns 0 when the ring stayed full too long. */
static int reserve(guint32 func, guint64 extra, guint64 *out) {
    guint64 deadline = 0;
    for (;;) {
        guint64 slot = ring[0];
        guint64 idx = slot & (CAP - 1);
        int wrap = idx + 1 + extra > CAP;
        guint64 need = wrap ? CAP - idx : 1 + extra;
        if (slot + need - ring[1] > CAP) {
            /* A forked child has a copy of the ring that nobody drains: stop
               recording there rather than stall every traced call. */
            if ((guint64)getpid() != config[2]) { config[5] = 1; return 0; }
            guint64 t;
            NOW(t);
            if (deadline == 0) deadline = t + ${FULL_RING_WAIT_NS}ULL;
            else if (t > deadline) { fetch_add(&drops[func & (MAXF - 1)], 1); return 0; }
            sched_yield();
            continue;
        }
        if (!cas(&ring[0], slot, slot + need)) continue;
        if (wrap) {
            Rec *p = (Rec *)((char *)ring + 64) + idx;
            p->extra = (guint32)(need - 1);
            __asm__ volatile("" ::: "memory");
            *(volatile guint32 *)&p->kind = KIND_PAD;
            continue;
        }
        *out = slot;
        return 1;
    }
}

/* Writes one record (and its payload in the slots after it). Returns 0
   when it had to be dropped (ring full for too long). */
static int put_record(guint32 tid, guint32 func, guint32 kind, guint64 value, guint64 ts, const guint8 *payload, guint32 len) {
    guint64 extra = (len + 31) >> 5;
    guint64 slot;
    /* Reserve only when there is room: a reserved slot is always written,
       so the drainer never waits on a hole. */
    if (!reserve(func, extra, &slot)) return 0;
    Rec *r = (Rec *)((char *)ring + 64) + (slot & (CAP - 1));
    if (len) {
        guint64 *dst = (guint64 *)(r + 1);
        const guint64 *src = (const guint64 *)payload;
        for (guint32 i = 0; i < (len + 7) / 8; i++) dst[i] = src[i];
    }
    r->ts = ts;
    r->func = func;
    r->tid = tid;
    r->value = value;
    r->extra = (guint32)extra;
    /* The fields above must be in memory before the commit flag. */
    __asm__ volatile("" ::: "memory");
    *(volatile guint32 *)&r->kind = kind;
    return 1;
}
`;
