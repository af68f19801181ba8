// Per-thread staging of the native hooks' untyped records. Reserving a slot
// in the shared ring takes a `lock cmpxchg` (~14 ns on this machine's
// VMs, more when the previous record's cache line is still being written),
// twice per traced call. Instead, each traced thread writes its untyped
// records into a stage of its own with plain stores, and the stage moves
// into the ring in batches: by its thread when it is full (one reservation
// for up to STAGE_RECORDS records), by the drain's timer every 2 ms (so a
// thread that stops calling is not left holding records), and by any other
// tracer's record on the thread (put_record calls flush_stage first), so a
// thread's records still reach the ring in the order it made them.
//
// Stages live in the memfd after the ring (the daemon maps both): after a
// crash, an exec or a `kill -9` the daemon reads what was staged and not yet
// moved (crates/strobe-session/src/trace/shared_ring.rs).
//
// Stage area layout (little-endian):
//   64-byte header: u64 stages claimed so far (a high-water mark)
//   then STAGE_MAX stages of STAGE_BYTES: a 64-byte header (u32 lock,
//   u32 in use, u64 head: records written, u64 flushed: records moved),
//   then STAGE_RECORDS 32-byte records (ring.ts layout, one slot each).
// Only the owning thread moves `head`, only the holder of `lock` moves
// `flushed`; records in [flushed, head) are complete (head is stored after
// them).
/** Records one stage holds (a power of two). */
export const STAGE_RECORDS = 128;
/** Bytes of one stage: its header and its records. */
export const STAGE_BYTES = 64 + STAGE_RECORDS * 32;
/** Most threads with a stage at once; later ones write to the ring directly. */
export const STAGE_MAX = 256;
/** Bytes of the stage area (its header and every stage). */
export const STAGE_AREA_BYTES = 64 + STAGE_MAX * STAGE_BYTES;
/** Offsets in a stage's header (the hook's machine code reads them). */
export const STAGE_HEAD = 8;
export const STAGE_FLUSHED = 16;
/** Offset of the first record in a stage. */
export const STAGE_RECS = 64;

/** C for the native CModule: `Stage`, claim_stage, stage_put, flush_own,
 *  flush_stage (put_record's CONFIG_FLUSH_STAGE), stage_steal and
 *  stage_pending (the drain's). Needs RING_WRITER_C, `stages` (the area)
 *  and `ThreadState` with `busy` and `stage`. */
export const STAGE_C = `
#define STAGE_RECORDS ${STAGE_RECORDS}u
#define STAGE_MAX ${STAGE_MAX}u
typedef struct Stage {
    volatile guint32 lock; volatile guint32 in_use;
    volatile guint64 head; volatile guint64 flushed; guint64 pad[5];
    Rec recs[STAGE_RECORDS];
} Stage;

static Stage *stage_at(guint32 i) {
    return (Stage *)((char *)stages + 64 + (gsize)i * sizeof(Stage));
}

static int cas32(volatile guint32 *p, guint32 expect, guint32 want) {
    guint32 prev;
    __asm__ volatile("lock; cmpxchgl %2, %1" : "=a"(prev), "+m"(*p) : "r"(want), "0"(expect) : "memory");
    return prev == expect;
}

/* A free stage for a new thread, or NULL (all in use: the thread writes
   to the ring directly). Its pages are touched here, not inside a traced
   call. */
static Stage *claim_stage(void) {
    for (guint32 i = 0; i < STAGE_MAX; i++) {
        Stage *s = stage_at(i);
        if (s->in_use || !cas32(&s->in_use, 0, 1)) continue;
        for (;;) {
            guint64 seen = stages[0];
            if (seen > i) break;
            guint64 prev;
            volatile guint64 *count = &stages[0];
            __asm__ volatile("lock; cmpxchgq %2, %1" : "=a"(prev), "+m"(*count) : "r"((guint64)i + 1), "0"(seen) : "memory");
            if (prev == seen) break;
        }
        for (gsize off = 0; off < sizeof(Stage); off += 4096) ((volatile char *)s)[off] = ((volatile char *)s)[off];
        return s;
    }
    return NULL;
}

/* Takes a stage's lock; 0 if it stayed taken (the caller writes around
   the stage rather than wait forever). */
static int stage_lock(Stage *s, int wait) {
    for (guint32 tries = 0; ; tries++) {
        if (!s->lock && cas32(&s->lock, 0, 1)) return 1;
        if (!wait || tries > 100000) return 0;
        sched_yield();
    }
}

static void stage_unlock(Stage *s) {
    __asm__ volatile("" ::: "memory");
    s->lock = 0;
}

/* Moves the stage's records into the ring; the caller holds its lock.
   With wait, a full ring is waited on (FULL_RING_WAIT_NS), then what did
   not fit is dropped and counted; without, what does not fit stays. */
static void stage_move(Stage *s, int wait) {
    guint64 h = s->head, f = s->flushed;
    while (f < h) {
        guint64 n = h - f, slot;
        if (!reserve_slots(n, wait, &slot)) {
            if (!wait) return;
            if (!config[5]) {
                for (; f < h; f++) fetch_add(&drops[s->recs[f & (STAGE_RECORDS - 1)].func & (MAXF - 1)], 1);
            }
            s->flushed = h;
            return;
        }
        /* In assembly: TinyCC's loop took several times the instructions.
           Word by word, in order; each record's last word (kind, and
           extra = 0) is its commit, stored after the rest (x86 keeps
           stores in order). The reservation never crosses the ring's end. */
        Rec *dst = (Rec *)((char *)ring + 64) + (slot & (CAP - 1));
        Rec *recs = s->recs;
        guint64 first = f, count = n;
        __asm__ volatile(
            "1: movq %%rdx, %%rax; andq $${STAGE_RECORDS - 1}, %%rax; shlq $5, %%rax; addq %%rsi, %%rax;"
            "movq (%%rax), %%r8; movq %%r8, (%%rdi); movq 8(%%rax), %%r8; movq %%r8, 8(%%rdi);"
            "movq 16(%%rax), %%r8; movq %%r8, 16(%%rdi); movq 24(%%rax), %%r8; movq %%r8, 24(%%rdi);"
            "addq $32, %%rdi; incq %%rdx; decq %%rcx; jnz 1b"
            : "+D"(dst), "+d"(first), "+c"(count)
            : "S"(recs)
            : "rax", "r8", "memory");
        f += n;
        s->flushed = f;
    }
}

/* The calling thread's staged records into the ring (its state st). */
static void flush_own(ThreadState *st) {
    Stage *s = st->stage;
    /* A forked child shares its parent's stages (and ring): hands off. */
    if (s == NULL || config[5] || s->head == s->flushed) return;
    guint32 was = st->busy;
    st->busy = 1;
    if (stage_lock(s, 1)) {
        stage_move(s, 1);
        stage_unlock(s);
    }
    st->busy = was;
}

/* put_record's first step in every tracer's module (ring.ts
   CONFIG_FLUSH_STAGE): this thread's staged records go first. */
void flush_stage(void) {
    ThreadState *st = pthread_getspecific((unsigned int)config[3]);
    if (st != NULL) flush_own(st);
}

/* Stages one untyped record; a full stage is moved into the ring first.
   Returns 0 when the record was not kept. */
static int stage_put(ThreadState *st, guint32 func, guint32 kind, guint64 value, guint64 ts) {
    Stage *s = st->stage;
    if (s == NULL) return put_record_unstaged(st->tid, func, kind, value, ts, NULL, 0);
    guint64 h = s->head;
    if (h - s->flushed >= STAGE_RECORDS) {
        flush_own(st);
        if (h - s->flushed >= STAGE_RECORDS) return put_record_unstaged(st->tid, func, kind, value, ts, NULL, 0);
    }
    Rec *r = &s->recs[h & (STAGE_RECORDS - 1)];
    r->ts = ts;
    r->func = func;
    r->tid = st->tid;
    r->value = value;
    r->kind = kind;
    r->extra = 0;
    __asm__ volatile("" ::: "memory");
    s->head = h + 1;
    return 1;
}

/* The drain's: every stage's records into the ring, without waiting (a
   stage being moved by its thread, or a ring without room, is left for
   the next time). */
void stage_steal(void) {
    guint64 n = stages[0];
    for (guint32 i = 0; i < n && i < STAGE_MAX; i++) {
        Stage *s = stage_at(i);
        if (s->head == s->flushed || !stage_lock(s, 0)) continue;
        stage_move(s, 0);
        stage_unlock(s);
    }
}

/* Records staged and not yet moved, over every stage. */
guint32 stage_pending(void) {
    guint64 n = stages[0], left = 0;
    for (guint32 i = 0; i < n && i < STAGE_MAX; i++) {
        Stage *s = stage_at(i);
        left += s->head - s->flushed;
    }
    return (guint32)left;
}

/* A thread ends: its records into the ring, its stage free for another. */
static void release_stage(ThreadState *st) {
    Stage *s = st->stage;
    if (s == NULL) return;
    st->stage = NULL;
    if (config[5]) return;
    st->stage = s;
    flush_own(st);
    st->stage = NULL;
    __asm__ volatile("" ::: "memory");
    s->in_use = 0;
}
`;
