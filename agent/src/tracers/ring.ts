// The record ring every tracer writes into: shared infrastructure, not a
// tracer. One ring (allocated with the native tracer's runtime, which
// provides it here) means the records of all tracers reach the daemon
// through one drain, one flow control and one clock, in the order they were
// made. This module has the ring's layout, the C that writes records (for
// each tracer's CModule), and the handle a tracer gets the ring by.
//
// Record layout (little-endian), decoded by crates/strobe-session/src/trace/records.rs:
//   u64 timestamp (CLOCK_MONOTONIC ns) | u32 function id | u32 thread id
//   u64 value (first argument on enter, return value on exit; a generator's
//   address with KIND_DETACHED)
//   u32 kind (1 = enter, 2 = exit, 3 = padding, 4 = a thread's name; 0 =
//   slot not yet written; plus the KIND_* bits)
//   u32 extra slots: the payload (typed values) in that many following
//   32-byte slots.
//
// A CModule that includes RING_WRITER_C must bind these externs (a
// SharedRing has them): `ring` (head, tail, then the slots), `drops` (per
// function id), `config` ([2] the pid, [5] set in a forked child, [8..15]
// the clock, see clock.ts), and libc's getpid, clock_gettime, sched_yield
// and usleep.
import { CLOCK_C } from "./clock.js";

/** Bytes of one ring slot (a record, or one of its payload's extra slots). */
export const RECORD_SIZE = 32;
/** Slots in the ring (8 MiB). */
export const RING_RECORDS = 1 << 18;
/** Most slots one `trace` message carries. */
export const CHUNK_RECORDS = 4096;
/** Function ids index the per-function tables modulo this. */
export const MAX_FUNCTIONS = 1 << 18;
/** Largest payload of one record (registers, stack, memory blocks, values). */
export const PAYLOAD_MAX = 16384;
/** How long a thread waits for room in a full ring before it drops its record:
 *  slowing the program is better than losing calls, hanging it is not. */
export const FULL_RING_WAIT_NS = 500_000_000;
/** While waiting for room: this many sched_yield calls, then sleeps of
 *  this many µs each (the drain ships every 2 ms). */
const RING_WAIT_YIELDS = 8;
const RING_WAIT_SLEEP_US = 50;

/** The ring's memory, as a CModule binds it. */
export interface SharedRing {
    ring: NativePointer;
    drops: NativePointer;
    config: NativePointer;
}

let provider: (() => SharedRing) | null = null;
const noted = new Set<number>();

/** The owner of the ring's memory (the native tracer's runtime) says how
 *  to get it; it is created on first use. */
export function provideRing(get: () => SharedRing): void {
    provider = get;
}

/** The ring, created on first use. */
export function sharedRing(): SharedRing {
    if (provider === null) throw new Error("no tracer provides the record ring");
    return provider();
}

/** Config word (u64 index) holding a function the native hooks call with
 *  their thread's id before they write a record (0: none): the JavaScript
 *  tracer's pump for that thread, so records its runtime made earlier on
 *  the same thread reach the ring before the native one. */
export const CONFIG_BEFORE_RECORD = 16;

/** Config word holding the native tracer's `flush_stage` (0: none yet):
 *  put_record calls it first, so records the native hooks staged on the
 *  calling thread (tracers/native/stage.ts) reach the ring before the
 *  record it writes. */
export const CONFIG_FLUSH_STAGE = 17;
/** Config word set when the agent detaches from a process that lives on:
 *  the native hook's own fast path records nothing from then on. */
export const CONFIG_HOOKS_OFF = 18;

const pumps: Array<() => void> = [];

/** A tracer whose records are made outside the ring (the JavaScript
 *  tracer's, in the program's own buffers) moves them in with `pump`, which
 *  the drain runs before each shipment; it must not wait for room. */
export function addPump(pump: () => void): void {
    pumps.push(pump);
}

/** Runs every pump (the drain, before it ships). */
export function runPumps(): void {
    for (const p of pumps) p();
}

/** Function ids a tracer records into the ring: their drops are counted
 *  and reported by the drain. */
export function noteTracedIds(ids: number[]): void {
    for (const id of ids) noted.add(id);
}

/** Every id noted so far. */
export function tracedIds(): ReadonlySet<number> {
    return noted;
}

/** Kind bit of a record whose payload is in the Python tracer's format
 *  (crates/strobe-values/src/python/) rather than a capture plan's. */
export const KIND_PYTHON = 0x200;
/** Kind bit of an enter or exit that pairs with its other half by the
 *  record's `value` (a generator's or coroutine's address), not by the
 *  thread's call stack: the two may be far apart, even on other threads. */
export const KIND_DETACHED = 0x400;
/** Kind bit of a Python exit with no payload: its return value (a scalar)
 *  is the record's `value`, its value tag in the kind's bits 16-23
 *  (crates/strobe-values/src/python/ring_form.rs). */
export const KIND_INLINE = 0x800;

/** The C source: ring constants, `Rec`, `fetch_add`, `NOW`,
 *  `reserve_slots`, `reserve`, `put_record` and `put_record_unstaged`. */
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


/* Per-call helpers are macros: TinyCC inlines nothing, and the calls were a
   good part of the per-call cost. NOW: CLOCK_MONOTONIC in ns (clock.ts). */
${CLOCK_C}
/* Reserves need_slots contiguous slots, never across the ring's end (a padding
   record fills the rest first). With wait set, a full ring is waited on
   for up to FULL_RING_WAIT_NS; without, a full ring fails at once (the
   drain's thread moving staged records must never wait on itself).
   Returns 0 when there was no room; the caller counts its drops. */
static int reserve_slots(guint64 need_slots, int wait, guint64 *out) {
    guint64 deadline = 0;
    guint32 waits = 0;
    for (;;) {
        guint64 slot = ring[0];
        guint64 idx = slot & (CAP - 1);
        int wrap = idx + need_slots > CAP;
        guint64 need = wrap ? CAP - idx : need_slots;
        if (slot + need - ring[1] > CAP) {
            if (!wait) return 0;
            /* A forked child has a copy of the ring that nobody drains: stop
               recording there rather than stall every traced call. Asked
               once per wait: getpid is a system call. */
            if (waits == 0 && (guint64)getpid() != config[2]) { config[5] = 1; return 0; }
            guint64 t;
            NOW(t);
            if (deadline == 0) deadline = t + ${FULL_RING_WAIT_NS}ULL;
            else if (t > deadline) return 0;
            /* Yield a few times, then sleep: on a machine with few cores a
               spinning thread takes the CPU the drain and the daemon need
               to make room. */
            if (++waits < ${RING_WAIT_YIELDS}) sched_yield(); else usleep(${RING_WAIT_SLEEP_US});
            continue;
        }
        /* cas(), written out: TinyCC emits even a static inline function
           as a call. */
        guint64 prev, desired = slot + need;
        volatile guint64 *head = &ring[0];
        __asm__ volatile("lock; cmpxchgq %2, %1" : "=a"(prev), "+m"(*head) : "r"(desired), "0"(slot) : "memory");
        if (prev != slot) continue;
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

/* reserve_slots for one record of 1 + extra slots, waiting; a record that
   found no room is counted as a drop of its function. */
static int reserve(guint32 func, guint64 extra, guint64 *out) {
    if (reserve_slots(1 + extra, 1, out)) return 1;
    if (!config[5]) fetch_add(&drops[func & (MAXF - 1)], 1);
    return 0;
}

/* put_record for a caller that has moved the thread's staged records into
   the ring already (the native tracer, which has the thread's state). */
static int put_record_unstaged(guint32 tid, guint32 func, guint32 kind, guint64 value, guint64 ts, const guint8 *payload, guint32 len) {
    /* A forked child records nothing: a shared ring is its parent's
       (tracers/native/shared_ring.ts), and nobody drains a private copy. */
    if (config[5]) return 0;
    guint64 extra = (len + 31) >> 5;
    /* Reserve only when there is room: a reserved slot is always written,
       so the drainer never waits on a hole. The common case (room, no
       wrap, no other writer in between) here, without reserve's call. */
    guint64 slot = ring[0], prev;
    if ((slot & (CAP - 1)) + 1 + extra <= CAP && slot + 1 + extra - ring[1] <= CAP) {
        volatile guint64 *head = &ring[0];
        __asm__ volatile("lock; cmpxchgq %2, %1" : "=a"(prev), "+m"(*head) : "r"(slot + 1 + extra), "0"(slot) : "memory");
        if (prev != slot && !reserve(func, extra, &slot)) return 0;
    } else if (!reserve(func, extra, &slot)) return 0;
    Rec *r = (Rec *)((char *)ring + 64) + (slot & (CAP - 1));
    if (len) {
        guint64 *dst = (guint64 *)(r + 1);
        const guint64 *src = (const guint64 *)payload;
        /* The bound once: TinyCC recomputed it on every iteration. */
        guint32 words = (len + 7) >> 3;
        for (guint32 i = 0; i < words; i++) dst[i] = src[i];
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

/* Writes one record (and its payload in the slots after it), after the
   records the native hooks staged on this thread (CONFIG_FLUSH_STAGE): a
   thread's records reach the ring in the order it made them. Returns 0
   when it had to be dropped (ring full for too long). */
static int put_record(guint32 tid, guint32 func, guint32 kind, guint64 value, guint64 ts, const guint8 *payload, guint32 len) {
    if (config[5]) return 0;
    { guint64 f_ = config[${CONFIG_FLUSH_STAGE}]; if (f_) ((void (*)(void))(gsize)f_)(); }
    return put_record_unstaged(tid, func, kind, value, ts, payload, len);
}
`;
