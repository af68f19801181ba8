// The native tracer. Each traced function starts with a 5-byte jump to a
// nearby 24-byte stub (redirectNear; Interceptor.replaceFast when that is
// not safe) that loads the function's state and jumps to one shared hook
// (machine code written below): the hook saves
// the argument registers, calls the CModule's fast_enter (which writes a
// record into a shared MPSC ring: 32 bytes, plus the captured values of a
// function with a capture plan), copies the stack arguments and
// calls the original function through its trampoline, then calls fast_leave
// with the return registers. The original return address stays on the
// stack and the hook has unwind info (registered with __register_frame), so
// C++ exceptions and Rust panics unwind through traced functions. The JS
// side drains the ring in chunks and sends them as binary data. No JS runs
// per call (except expression watches, in the functions they are read in),
// and the thread id is cached per thread (no gettid per call).
//
// Record layout (little-endian), decoded by crates/strobe-session/src/trace.rs:
//   u64 timestamp (CLOCK_MONOTONIC ns) | u32 function id | u32 thread id
//   u64 value (first argument on enter, return value on exit)
//   u32 kind (1 = enter, 2 = exit, 3 = padding; 0 = slot not yet written)
//   u32 extra slots: a function with a capture plan (typed arguments,
//   watches; see crates/strobe-session/src/values.rs) appends its captured
//   registers and memory blocks in that many following 32-byte slots.

import { registerAtforkChild } from "../native/atfork.js";
import { NEAR_REACH, PROT_ALL, nearAlloc, rawAlloc, retain, u64Bytes, within } from "../native/memory.js";
import { isGuarded, patchCodeNow, undoAllPatches, writePatches } from "../native/patch.js";
import { redirect, unredirect } from "../native/redirect.js";

export const RECORD_SIZE = 32;
const RING_RECORDS = 1 << 18; // 8 MiB
const CHUNK_RECORDS = 4096;
const MAX_FUNCTIONS = 1 << 18;
// Largest captured payload of one call (registers, stack, memory blocks).
const PAYLOAD_MAX = 16384;
// Hot-function sampling: call rates are measured per function over windows
// of this length; above the threshold only 1 in N calls is recorded.
const WINDOW_NS = 100_000_000;
// How long a thread waits for room in a full ring before it drops its record:
// slowing the program is better than losing calls, hanging it is not.
const FULL_RING_WAIT_NS = 500_000_000;

interface Runtime {
    /** Kept referenced: a collected CModule frees the code the hooks call. */
    module: CModule;
    ring: NativePointer;
    /** Per function (64 bytes): window start, calls in window, record 1 in
     *  `every`, tick, hot, original's trampoline, stack bytes to copy, id. */
    fstate: NativePointer;
    /** [0] calls per window above which a function is sampled, [1] sampling
     *  on, [2] pid, [3] pthread key of the per-thread state, [4] the
     *  expression watch evaluator (a NativeCallback), [5] set in a forked
     *  child: record nothing. */
    config: NativePointer;
    drops: NativePointer;
    /** Per function: its capture plan, or NULL (name and timing only). */
    plans: NativePointer;
    /** The shared hook every stub jumps to. */
    hook: NativePointer;
    /** Kept referenced: the hooks call it while expression watches exist. */
    exprCallback: NativeCallback<"uint32", ["uint32", "uint32", "pointer", "pointer", "uint32"]>;
    committed: NativeFunction<number, [number]>;
    release: NativeFunction<void, [number]>;
}

// Built on the first hook, so sessions that never trace pay nothing
// (no TinyCC compile, no ring allocation) at launch.
let rt: Runtime | null = null;

function runtime(): Runtime {
    if (rt === null) {
        rt = createRuntime();
        startDraining();
    }
    return rt;
}

// FuncState field offsets the hook's machine code reads.
const FSTATE_SIZE = 64;
const FSTATE_TRAMPOLINE = 40;
const FSTATE_COPY = 48;
const FSTATE_ID = 56;

function createRuntime(): Runtime {
const ring = Memory.alloc(64 + RING_RECORDS * RECORD_SIZE);
// Touch every page now: first-touch page faults inside traced calls cost
// more than the record itself (a few µs each in a VM).
for (let off = 0; off < 64 + RING_RECORDS * RECORD_SIZE; off += Process.pageSize) ring.add(off).writeU8(0);
const drops = Memory.alloc(MAX_FUNCTIONS * 8);
// Read by stubs and the hook while a call is in flight: outlives the script.
const fstate = rawAlloc(MAX_FUNCTIONS * FSTATE_SIZE);
// Raw memory, mapped at load (see runtimeConfig).
const config = runtimeConfig;
// CModule globals are not writable (its image is mapped read+execute): the
// process id the hooks need is passed in config[2].
config.add(16).writeU64(Process.id);
const plans = Memory.alloc(MAX_FUNCTIONS * 8);
config.writeU64(10_000);
config.add(8).writeU64(1);

const cm = new CModule(`
#include <glib.h>

extern volatile guint64 ring[];
extern volatile guint64 drops[];
extern volatile guint64 fstate[];
extern volatile guint64 config[];
extern volatile guint64 plans[];
extern int gettid(void);
extern int getpid(void);
extern void *calloc(gsize, gsize);
extern void *malloc(gsize);
extern void free(void *);
extern void *pthread_getspecific(unsigned int);
extern int pthread_setspecific(unsigned int, const void *);
extern long process_vm_readv(int, void *, unsigned long, void *, unsigned long, unsigned long);
extern int clock_gettime(int, void *);
extern int sched_yield(void);

/* Both powers of two: masks, not divisions (TinyCC does not turn a
   modulo into a mask, and a 64-bit division costs tens of cycles). */
#define CAP ${RING_RECORDS}ULL
#define MAXF ${MAX_FUNCTIONS}U

typedef struct { guint64 ts; guint32 func; guint32 tid; guint64 value; guint32 kind; guint32 extra; } Rec;
typedef struct { guint32 tid; guint32 busy; guint8 *scratch; } ThreadState;
/* Per call, in the hook's frame (32 bytes there): the enter's decisions and
   the thread state it found, for the exit. */
typedef struct { guint16 record; guint16 typed; guint32 sampled; ThreadState *st; } CallState;
typedef struct { guint64 window; guint64 calls; guint64 every; guint64 tick; guint64 hot; guint64 trampoline; guint64 copy; guint64 id; } FuncState;
/* Saved by the hook at entry: rdi, rsi, rdx, rcx, r8, r9, rax, r10, xmm0-7. */
typedef struct { guint64 gp[6]; guint64 rax; guint64 r10; guint64 xmm[8][2]; } Regs;
/* Saved by the hook at exit. */
typedef struct { guint64 rax; guint64 rdx; guint64 xmm0[2]; guint64 xmm1[2]; } RetRegs;
typedef struct { guint8 src; guint8 flags; guint16 parent; guint32 size; guint64 arg; gint64 addend; } Node;
typedef struct { guint16 n_enter; guint16 n_exit; guint16 stack_bytes; guint16 id; guint16 n_expr; guint16 pad[3]; } PlanHeader;
/* Evaluates a function's expression watches (JS) into out; returns bytes written. */
typedef guint32 (*ExprFn)(guint32 func, guint32 exit, const guint64 *regs, guint8 *out, guint32 cap);
#define SAMPLED 0x100u
#define KIND_PAD 3u
#define PAYLOAD_MAX ${PAYLOAD_MAX}u
#define MAX_NODES 256u

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
#define NOW(out) do { struct { gint64 s; gint64 ns; } t_; clock_gettime(1, &t_); \
    out = (guint64)t_.s * 1000000000ULL + (guint64)t_.ns; } while (0)

/* The calling thread's state, created on its first traced call (the
   caller found none under the pthread key) and freed by thread_gone (the
   key's destructor) when the thread ends. */
static ThreadState *new_thread_state(void) {
    ThreadState *st = calloc(1, sizeof(ThreadState));
    if (st == NULL) return NULL;
    st->tid = (guint32)gettid();
    pthread_setspecific((unsigned int)config[3], st);
    return st;
}

void thread_gone(void *p) {
    ThreadState *st = p;
    if (st == NULL) return;
    free(st->scratch);
    free(st);
}

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

/* Returns 0 when the record had to be dropped (ring full for too long). */
static int put(ThreadState *st, guint32 func, guint32 kind, guint64 value, guint64 ts, const guint8 *payload, guint32 len) {
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
    r->tid = st->tid;
    r->value = value;
    r->extra = (guint32)extra;
    /* The fields above must be in memory before the commit flag. */
    __asm__ volatile("" ::: "memory");
    *(volatile guint32 *)&r->kind = kind;
    return 1;
}

/* Copies len bytes at addr without ever faulting (unmapped memory just
   reads short): page by page through process_vm_readv on this process.
   For C strings, stops at NUL (*found set) and excludes it. */
static guint32 safe_read(guint8 *dst, guint64 addr, guint32 len, int cstring, int *found) {
    struct { void *base; gsize len; } local, remote;
    guint32 done = 0;
    *found = 0;
    int self_pid = (int)config[2];
    while (done < len) {
        guint64 a = addr + done;
        guint32 chunk = 4096 - (guint32)(a & 4095);
        if (chunk > len - done) chunk = len - done;
        local.base = dst + done; local.len = chunk;
        remote.base = (void *)a; remote.len = chunk;
        long n = process_vm_readv(self_pid, &local, 1, &remote, 1, 0);
        if (n <= 0) break;
        if (cstring) {
            for (long i = 0; i < n; i++) {
                if (dst[done + i] == 0) { *found = 1; return done + (guint32)i; }
            }
        }
        done += (guint32)n;
        if ((guint32)n < chunk) break;
    }
    return done;
}

/* Executes plan nodes: one block (u64 addr, u32 len, u32 status, data
   padded to 8) per node, appended at out[pos]. gp: the six argument
   registers (NULL at exit); rax/rdx: return registers; stack: where the
   caller put the stack arguments. */
static guint32 run_nodes(const Node *nodes, guint32 n, const guint64 *gp, guint64 rax, guint64 rdx, guint64 stack, guint8 *out, guint32 pos) {
    guint32 offs[MAX_NODES];
    guint32 lens[MAX_NODES];
    if (n > MAX_NODES) n = MAX_NODES;
    for (guint32 i = 0; i < n; i++) {
        const Node *nd = &nodes[i];
        guint64 addr = 0, len_hint = nd->size;
        guint32 status = 0;
        int have = 1;
        switch (nd->src) {
            case 0: {
                guint64 a = nd->arg < 5 ? nd->arg : 5;
                addr = gp ? gp[a] : 0;
                if ((nd->flags & 2) && gp && nd->arg < 5) { guint64 l = gp[nd->arg + 1]; if (l < len_hint) len_hint = l; }
                break;
            }
            case 1: {
                int f; guint64 v = 0;
                if (safe_read((guint8 *)&v, stack + nd->arg, 8, 0, &f) != 8) { have = 0; status = 2; }
                addr = v;
                if (have && (nd->flags & 2)) { guint64 l = 0; safe_read((guint8 *)&l, stack + nd->arg + 8, 8, 0, &f); if (l < len_hint) len_hint = l; }
                break;
            }
            case 2: {
                guint16 p = nd->parent;
                if (p >= i || lens[p] < nd->arg + 8) { have = 0; status = 3; break; }
                const guint8 *pd = out + offs[p] + nd->arg;
                addr = *(const guint64 *)pd;
                if ((nd->flags & 2) && lens[p] >= nd->arg + 16) { guint64 l = *(const guint64 *)(pd + 8); if (l < len_hint) len_hint = l; }
                break;
            }
            case 3: addr = nd->arg == 0 ? rax : rdx; break;
            default: addr = nd->arg; break;
        }
        if (have) addr += (guint64)nd->addend;
        if (pos + 16 > PAYLOAD_MAX) { n = i; break; }
        guint8 *h = out + pos;
        pos += 16;
        guint32 got = 0;
        if (have && addr == (guint64)nd->addend && nd->src != 4) status = 1;
        else if (have) {
            guint32 want = (guint32)len_hint;
            int cut = 0;
            if (want > PAYLOAD_MAX - pos) { want = PAYLOAD_MAX - pos; cut = 1; }
            int found;
            got = safe_read(out + pos, addr, want, nd->flags & 1, &found);
            if (nd->flags & 1) status = found ? 0 : (got == 0 ? 2 : 5);
            else if (got < want) status = got == 0 ? 2 : 5;
            if (cut && status == 0) status = 5;
        }
        *(guint64 *)h = addr;
        *(guint32 *)(h + 8) = got;
        *(guint32 *)(h + 12) = status;
        offs[i] = pos;
        lens[i] = (status == 0 || status == 5) ? got : 0;
        pos += (got + 7) & ~7u;
    }
    return pos;
}

static guint8 *scratch_of(ThreadState *st) {
    /* One buffer per traced thread, kept for the thread's life. */
    if (st->scratch == NULL) st->scratch = malloc(PAYLOAD_MAX + 64);
    return st->scratch;
}

static int put_enter(ThreadState *st, guint32 func, guint32 kind, guint64 ts, const PlanHeader *plan, const Regs *r, guint64 stack) {
    guint8 *out = scratch_of(st);
    if (out == NULL) return put(st, func, kind, r->gp[0], ts, NULL, 0);
    guint64 *regs = (guint64 *)(out + 8);
    for (int i = 0; i < 6; i++) regs[i] = r->gp[i];
    for (int i = 0; i < 8; i++) regs[6 + i] = r->xmm[i][0];
    guint32 pos = 8 + 14 * 8;
    guint32 sb = (plan->stack_bytes + 7u) & ~7u;
    if (sb) {
        int f;
        guint32 got = safe_read(out + pos, stack, sb, 0, &f);
        for (guint32 i = got; i < sb; i++) out[pos + i] = 0;
        pos += sb;
    }
    pos = run_nodes((const Node *)(plan + 1), plan->n_enter, r->gp, 0, 0, stack, out, pos);
    if (plan->n_expr && config[4]) pos += ((ExprFn)(gsize)config[4])(func, 0, r->gp, out + pos, PAYLOAD_MAX - pos);
    *(guint32 *)out = plan->id;
    *(guint32 *)(out + 4) = pos;
    return put(st, func, kind, r->gp[0], ts, out, pos);
}

static void put_exit(ThreadState *st, guint32 func, guint32 kind, guint64 ts, const PlanHeader *plan, const RetRegs *r) {
    guint8 *out = scratch_of(st);
    if (out == NULL) { put(st, func, kind, r->rax, ts, NULL, 0); return; }
    guint64 *regs = (guint64 *)(out + 8);
    regs[0] = r->rax; regs[1] = r->rdx;
    regs[2] = r->xmm0[0]; regs[3] = r->xmm1[0];
    guint32 pos = 8 + 4 * 8;
    pos = run_nodes((const Node *)(plan + 1) + plan->n_enter, plan->n_exit, NULL, r->rax, r->rdx, 0, out, pos);
    if (plan->n_expr && config[4]) pos += ((ExprFn)(gsize)config[4])(func, 1, &r->rax, out + pos, PAYLOAD_MAX - pos);
    *(guint32 *)out = plan->id;
    *(guint32 *)(out + 4) = pos;
    put(st, func, kind, r->rax, ts, out, pos);
}

/* Writes one record without payload: one compare-and-swap on the ring head;
   anything unusual (ring full, a lost race) goes through put(). The asm
   operand goes through a pointer: TinyCC mis-addresses an extern symbol
   (ring[0]) used directly as a memory operand, and the target crashed. */
#define PUT1(ST, FUNC, KIND, VALUE, TS, OK) do { \
    volatile guint64 *head_ = &ring[0]; \
    guint64 slot_ = *head_, next_ = slot_ + 1, prev_; \
    if (next_ - ring[1] > CAP) { OK = put(ST, FUNC, KIND, VALUE, TS, NULL, 0); break; } \
    __asm__ volatile("lock; cmpxchgq %2, %1" : "=a"(prev_), "+m"(*head_) : "r"(next_), "0"(slot_) : "memory"); \
    if (prev_ != slot_) { OK = put(ST, FUNC, KIND, VALUE, TS, NULL, 0); break; } \
    Rec *r_ = (Rec *)((char *)ring + 64) + (slot_ & (CAP - 1)); \
    r_->ts = TS; r_->func = FUNC; r_->tid = (ST)->tid; r_->value = VALUE; r_->extra = 0; \
    __asm__ volatile("" ::: "memory"); \
    *(volatile guint32 *)&r_->kind = KIND; \
    OK = 1; \
} while (0)

/* Called by the hook before the original function runs. Decides, once per
   call, whether it is recorded (sampling of hot functions); the exit of a
   call follows its enter's decision. Counters are racy on purpose: rates
   only need to be approximate. A traced function called from this code
   itself (busy) runs untraced. */
void fast_enter(FuncState *fs, const Regs *r, guint64 stack, CallState *cs) {
    cs->record = 0;
    if (config[5]) return;
    ThreadState *st = pthread_getspecific((unsigned int)config[3]);
    if (st == NULL) st = new_thread_state();
    if (st == NULL || st->busy) return;
    st->busy = 1;
    cs->st = st;
    guint32 func = (guint32)fs->id;
    guint64 t;
    NOW(t);
    if (t - fs->window >= ${WINDOW_NS}ULL) {
        guint64 calls = fs->calls;
        fs->window = t;
        fs->calls = 0;
        if (config[1] && calls > config[0]) fs->every = calls / config[0] + 1;
        else if (!config[1] || calls * (fs->every ? fs->every : 1) < config[0] / 2) fs->every = 0;
        /* With sampling off, a hot function's every call is recorded, but
           without typed values: capturing and decoding them for each of
           millions of calls would slow the program many times over. */
        fs->hot = !config[1] && calls > config[0];
    }
    fs->calls++;
    guint64 every = fs->every;
    guint32 sampled = every > 1;
    cs->sampled = sampled;
    int record = every <= 1 || (fs->tick++ % every) == 0;
    int typed = !fs->hot;
    cs->typed = (guint16)typed;
    /* An enter that could not be recorded takes its exit with it. */
    if (record) {
        guint32 kind = 1 | (sampled ? SAMPLED : 0);
        const PlanHeader *plan = typed ? (const PlanHeader *)(gsize)plans[func & (MAXF - 1)] : NULL;
        if (plan) record = put_enter(st, func, kind, t, plan, r, stack);
        else PUT1(st, func, kind, r->gp[0], t, record);
    }
    cs->record = (guint16)record;
    st->busy = 0;
}

/* Called by the hook after the original function returned. */
void fast_leave(FuncState *fs, const RetRegs *r, CallState *cs) {
    if (!cs->record) return;
    ThreadState *st = cs->st;
    st->busy = 1;
    guint32 func = (guint32)fs->id;
    guint32 kind = 2 | (cs->sampled ? SAMPLED : 0);
    guint64 t;
    NOW(t);
    const PlanHeader *plan = cs->typed ? (const PlanHeader *)(gsize)plans[func & (MAXF - 1)] : NULL;
    if (plan) put_exit(st, func, kind, t, plan, r);
    else { int ok; PUT1(st, func, kind, r->rax, t, ok); (void)ok; }
    st->busy = 0;
}

/* Slots of whole records committed contiguously from the tail, at most
   max (unless one record alone is larger), not crossing the ring's end. */
guint32 committed(guint32 max) {
    guint64 tail = ring[1];
    guint32 n = 0;
    while (n < max) {
        guint64 slot = tail + n;
        if (n > 0 && (slot & (CAP - 1)) == 0) break;
        Rec *r = (Rec *)((char *)ring + 64) + (slot & (CAP - 1));
        if (*(volatile guint32 *)&r->kind == 0) break;
        __asm__ volatile("" ::: "memory");
        guint32 size = 1 + r->extra;
        if (n > 0 && n + size > max) break;
        n += size;
    }
    return n;
}

/* Frees n records at the tail. */
void release(guint32 n) {
    guint64 tail = ring[1];
    for (guint32 i = 0; i < n; i++) {
        Rec *r = (Rec *)((char *)ring + 64) + ((tail + i) & (CAP - 1));
        *(volatile guint32 *)&r->kind = 0;
    }
    ring[1] = tail + n;
}
`, {
    ring,
    drops,
    fstate,
    config,
    plans,
    gettid: Module.findGlobalExportByName("gettid")!,
    getpid: Module.findGlobalExportByName("getpid")!,
    calloc: Module.findGlobalExportByName("calloc")!,
    malloc: Module.findGlobalExportByName("malloc")!,
    free: Module.findGlobalExportByName("free")!,
    pthread_getspecific: Module.findGlobalExportByName("pthread_getspecific")!,
    pthread_setspecific: Module.findGlobalExportByName("pthread_setspecific")!,
    process_vm_readv: Module.findGlobalExportByName("process_vm_readv")!,
    clock_gettime: Module.findGlobalExportByName("clock_gettime")!,
    sched_yield: Module.findGlobalExportByName("sched_yield")!,
});

// pthread_atfork child handler: a forked child keeps the redirects and a copy
// of the ring (and of its locks) that no agent thread drains, so it must stop
// recording at once — waiting for the ring to fill left a child spinning. The
// handler is machine code in raw memory, not CModule code: under child gating
// the CModule is no longer mapped in the child when glibc runs it. A followed
// child's new agent has its own config.
{
    const handler = rawAlloc(Process.pageSize);
    handler.writeByteArray([
        0x48, 0xb8, ...u64Bytes(config.add(40)), // mov rax, &config[5]
        0x48, 0xc7, 0x00, 0x01, 0x00, 0x00, 0x00, // mov qword [rax], 1
        0xc3, //                                   ret
    ]);
    Memory.protect(handler, Process.pageSize, "r-x");
    registerAtforkChild(handler);
}

const keyCreate = new NativeFunction(Module.findGlobalExportByName("pthread_key_create")!, "int", ["pointer", "pointer"]);
const key = Memory.alloc(8);
if ((keyCreate(key, cm.thread_gone) as number) !== 0) throw new Error("pthread_key_create failed");
config.add(24).writeU64(key.readU32());

const exprCallback = makeExprCallback();
config.add(32).writePointer(exprCallback);

const hook = writeHook(cm.fast_enter, cm.fast_leave);
registerUnwindInfo();

return {
    module: cm,
    ring,
    fstate,
    config,
    drops,
    plans,
    hook,
    exprCallback,
    // Exclusive: a cooperative call lets another thread's drain run in
    // between (the timer's beside an exit's or the fork guard's), and both
    // shipped the same records (seen as a duplicated call before a fork).
    committed: new NativeFunction(cm.committed, "uint32", ["uint32"], { scheduling: "exclusive" }),
    release: new NativeFunction(cm.release, "void", ["uint32"], { scheduling: "exclusive" }),
};
}

// ---------------------------------------------------------------------------
// The shared hook, in machine code. Entered from a function's stub with r11 =
// its FuncState; the stack is exactly as the caller left it.
//
//   push rbp; mov rbp, rsp; push rbx; sub rsp, 232    frame; rbx = FuncState
//   save rdi..r9, rax (vararg count), r10, xmm0-7      Regs at rbp-240
//   fast_enter(fs, &regs, rbp+16 (stack args), &callstate at rbp-48)
//   sub rsp, fs->copy; copy the caller's stack args   the original sees them
//   restore the registers; call fs->trampoline         where it expects them
//   save rax, rdx, xmm0, xmm1; fast_leave(fs, &ret, &callstate); restore
//   lea rsp, [rbp-8]; pop rbx; pop rbp; ret
//
// Copying the stack arguments (rather than swapping the return address, as
// Interceptor.attach does) keeps the real return address where unwinders
// look for it; the hook's own frame is described by hand-written .eh_frame
// data below.
// ---------------------------------------------------------------------------

const HOOK_SAVE = [
    0x48, 0x89, 0x3c, 0x24, //             mov [rsp], rdi
    0x48, 0x89, 0x74, 0x24, 0x08, //       mov [rsp+8], rsi
    0x48, 0x89, 0x54, 0x24, 0x10, //       mov [rsp+16], rdx
    0x48, 0x89, 0x4c, 0x24, 0x18, //       mov [rsp+24], rcx
    0x4c, 0x89, 0x44, 0x24, 0x20, //       mov [rsp+32], r8
    0x4c, 0x89, 0x4c, 0x24, 0x28, //       mov [rsp+40], r9
    0x48, 0x89, 0x44, 0x24, 0x30, //       mov [rsp+48], rax
    0x4c, 0x89, 0x54, 0x24, 0x38, //       mov [rsp+56], r10
    0xf3, 0x0f, 0x7f, 0x44, 0x24, 0x40, // movdqu [rsp+64], xmm0
    0xf3, 0x0f, 0x7f, 0x4c, 0x24, 0x50, // movdqu [rsp+80], xmm1
    0xf3, 0x0f, 0x7f, 0x54, 0x24, 0x60, // movdqu [rsp+96], xmm2
    0xf3, 0x0f, 0x7f, 0x5c, 0x24, 0x70, // movdqu [rsp+112], xmm3
    0xf3, 0x0f, 0x7f, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00, // movdqu [rsp+128], xmm4
    0xf3, 0x0f, 0x7f, 0xac, 0x24, 0x90, 0x00, 0x00, 0x00, // movdqu [rsp+144], xmm5
    0xf3, 0x0f, 0x7f, 0xb4, 0x24, 0xa0, 0x00, 0x00, 0x00, // movdqu [rsp+160], xmm6
    0xf3, 0x0f, 0x7f, 0xbc, 0x24, 0xb0, 0x00, 0x00, 0x00, // movdqu [rsp+176], xmm7
];

const HOOK_RESTORE = [
    0x48, 0x8b, 0xbd, 0x10, 0xff, 0xff, 0xff, // mov rdi, [rbp-240]
    0x48, 0x8b, 0xb5, 0x18, 0xff, 0xff, 0xff, // mov rsi, [rbp-232]
    0x48, 0x8b, 0x95, 0x20, 0xff, 0xff, 0xff, // mov rdx, [rbp-224]
    0x48, 0x8b, 0x8d, 0x28, 0xff, 0xff, 0xff, // mov rcx, [rbp-216]
    0x4c, 0x8b, 0x85, 0x30, 0xff, 0xff, 0xff, // mov r8, [rbp-208]
    0x4c, 0x8b, 0x8d, 0x38, 0xff, 0xff, 0xff, // mov r9, [rbp-200]
    0x48, 0x8b, 0x85, 0x40, 0xff, 0xff, 0xff, // mov rax, [rbp-192]
    0x4c, 0x8b, 0x95, 0x48, 0xff, 0xff, 0xff, // mov r10, [rbp-184]
    0xf3, 0x0f, 0x6f, 0x85, 0x50, 0xff, 0xff, 0xff, // movdqu xmm0, [rbp-176]
    0xf3, 0x0f, 0x6f, 0x8d, 0x60, 0xff, 0xff, 0xff, // movdqu xmm1, [rbp-160]
    0xf3, 0x0f, 0x6f, 0x95, 0x70, 0xff, 0xff, 0xff, // movdqu xmm2, [rbp-144]
    0xf3, 0x0f, 0x6f, 0x9d, 0x80, 0xff, 0xff, 0xff, // movdqu xmm3, [rbp-128]
    0xf3, 0x0f, 0x6f, 0xa5, 0x90, 0xff, 0xff, 0xff, // movdqu xmm4, [rbp-112]
    0xf3, 0x0f, 0x6f, 0xad, 0xa0, 0xff, 0xff, 0xff, // movdqu xmm5, [rbp-96]
    0xf3, 0x0f, 0x6f, 0xb5, 0xb0, 0xff, 0xff, 0xff, // movdqu xmm6, [rbp-80]
    0xf3, 0x0f, 0x6f, 0xbd, 0xc0, 0xff, 0xff, 0xff, // movdqu xmm7, [rbp-64]
];


/** Where the hook's code lives, and its length (for the unwind info). */
let hookCode: { start: NativePointer; length: number } | null = null;
let hookCalls: number[] = [];

function writeHook(enter: NativePointer, leave: NativePointer): NativePointer {
    const code: number[] = [
        0x55, //                               push rbp
        0x48, 0x89, 0xe5, //                   mov rbp, rsp
        0x53, //                               push rbx
        0x48, 0x81, 0xec, 0xe8, 0x00, 0x00, 0x00, // sub rsp, 232
        ...HOOK_SAVE,
        0x4c, 0x89, 0xdb, //                   mov rbx, r11
        0x48, 0x89, 0xdf, //                   mov rdi, rbx
        0x48, 0x89, 0xe6, //                   mov rsi, rsp
        0x48, 0x8d, 0x55, 0x10, //             lea rdx, [rbp+16]
        0x48, 0x8d, 0x8c, 0x24, 0xc0, 0x00, 0x00, 0x00, // lea rcx, [rsp+192]
        0x48, 0xb8, ...u64Bytes(enter), //    mov rax, fast_enter
        0xff, 0xd0, //                         call rax
        0x48, 0x8b, 0x4b, FSTATE_COPY, //      mov rcx, [rbx+copy]
        0x48, 0x29, 0xcc, //                   sub rsp, rcx
        0x48, 0x89, 0xe7, //                   mov rdi, rsp
        0x48, 0x8d, 0x75, 0x10, //             lea rsi, [rbp+16]
        0xf3, 0xa4, //                         rep movsb
        ...HOOK_RESTORE,
        0xff, 0x53, FSTATE_TRAMPOLINE, //      call [rbx+trampoline]
        0x48, 0x8d, 0xa5, 0x10, 0xff, 0xff, 0xff, // lea rsp, [rbp-240]
        0x48, 0x89, 0x04, 0x24, //             mov [rsp], rax
        0x48, 0x89, 0x54, 0x24, 0x08, //       mov [rsp+8], rdx
        0xf3, 0x0f, 0x7f, 0x44, 0x24, 0x10, // movdqu [rsp+16], xmm0
        0xf3, 0x0f, 0x7f, 0x4c, 0x24, 0x20, // movdqu [rsp+32], xmm1
        0x48, 0x89, 0xdf, //                   mov rdi, rbx
        0x48, 0x89, 0xe6, //                   mov rsi, rsp
        0x48, 0x8d, 0x94, 0x24, 0xc0, 0x00, 0x00, 0x00, // lea rdx, [rsp+192]
        0x48, 0xb8, ...u64Bytes(leave), //    mov rax, fast_leave
        0xff, 0xd0, //                         call rax
        0x48, 0x8b, 0x04, 0x24, //             mov rax, [rsp]
        0x48, 0x8b, 0x54, 0x24, 0x08, //       mov rdx, [rsp+8]
        0xf3, 0x0f, 0x6f, 0x44, 0x24, 0x10, // movdqu xmm0, [rsp+16]
        0xf3, 0x0f, 0x6f, 0x4c, 0x24, 0x20, // movdqu xmm1, [rsp+32]
        0x48, 0x8d, 0x65, 0xf8, //             lea rsp, [rbp-8]
        0x5b, //                               pop rbx
        0x5d, //                               pop rbp
        0xc3, //                               ret
    ];
    const start = rawAlloc(Process.pageSize);
    start.writeByteArray(code);
    Memory.protect(start, Process.pageSize, "r-x");
    hookCode = { start, length: code.length };
    // Where the two `call rax` (fast_enter, fast_leave) are: detach turns
    // them into no-ops, so a call in flight returns without the CModule.
    const calls: number[] = [];
    for (let i = 0; i + 1 < code.length; i++) {
        if (code[i] === 0xff && code[i + 1] === 0xd0 && code[i - 10] === 0x48 && code[i - 9] === 0xb8) calls.push(i);
    }
    hookCalls = calls;
    return start;
}

// Stubs: 24 bytes (mov r11, FuncState; jmp [rip]; hook address), in near
// memory (native/memory.ts) within reach of the function's 5-byte jump.
const STUB_SIZE = 24;
const stubs = new Map<number, NativePointer>();

function stubFor(funcId: number, target: NativePointer): NativePointer {
    const existing = stubs.get(funcId);
    if (existing !== undefined && within(existing, target, NEAR_REACH)) return existing;
    const { fstate, hook } = runtime();
    const stub = nearAlloc(target, STUB_SIZE);
    const fs = fstate.add((funcId % MAX_FUNCTIONS) * FSTATE_SIZE);
    stub.writeByteArray([0x49, 0xbb]); //                 mov r11, fs
    stub.add(2).writePointer(fs);
    stub.add(10).writeByteArray([0xff, 0x25, 0, 0, 0, 0]); // jmp [rip]
    stub.add(16).writePointer(hook);
    stubs.set(funcId, stub);
    return stub;
}

/** The tracer's config page (read by the CModule, the fork handler and the
 *  fork guard). Raw memory: the fork handler writes it in a child where
 *  Frida's allocations may be gone. Mapped at load so the fork guard can use
 *  it without creating the tracer (sessions that trace nothing pay nothing). */
const runtimeConfig = rawAlloc(Process.pageSize);

/**
 * Before this script goes away from a process that lives on (detach): every
 * patched byte is put back, and the hook's calls into the CModule (freed with
 * the script) become no-ops, so a call in flight returns through the hook
 * without recording. What a returning call still runs through (hook, stubs,
 * relocated prologues, FuncState) is in memory the teardown leaves mapped.
 */
export function detachHooks(): void {
    undoAllPatches();
    if (rt === null || hookCode === null) return;
    const keyDelete = new NativeFunction(Module.findGlobalExportByName("pthread_key_delete")!, "int", ["uint32"]);
    keyDelete(rt.config.add(24).readU32());
    const { start } = hookCode;
    Memory.protect(start, Process.pageSize, "rwx");
    for (const at of hookCalls) start.add(at).writeByteArray([0x66, 0x90]); // 2-byte nop
    Memory.protect(start, Process.pageSize, "r-x");
}

// Unwind info (.eh_frame: one CIE, one FDE, a terminator) for the hook, so
// that C++ exceptions, Rust panics and backtraces pass through it. Registered
// with libgcc's __register_frame, which programs that unwind have loaded; a
// program that loads it later gets it registered then (see watchModules).
let unwindRegistered = false;

function registerUnwindInfo(): void {
    if (unwindRegistered || hookCode === null) return;
    const register = Module.findGlobalExportByName("__register_frame");
    if (register === null) return;
    const { start, length } = hookCode;
    const cie = [
        20, 0, 0, 0, //          length
        0, 0, 0, 0, //           CIE id
        1, //                    version
        0x7a, 0x52, 0, //        augmentation "zR"
        1, //                    code alignment
        0x78, //                 data alignment -8
        16, //                   return address: r16 (rip)
        1, 0x00, //              augmentation data: FDE pointers absolute
        0x0c, 7, 8, //           DW_CFA_def_cfa rsp+8
        0x90, 1, //              DW_CFA_offset rip at cfa-8
        0, 0, //                 padding
    ];
    const epilogue = length - 1 - 5; // from after `push rbx` to before `ret`
    const fde = [
        44, 0, 0, 0, //          length
        28, 0, 0, 0, //          distance back to the CIE
        ...u64Bytes(start), //   first address
        ...u64Bytes(ptr(length)), // range
        0, //                    augmentation data: none
        0x41, 0x0e, 16, //       after push rbp: cfa = rsp+16
        0x86, 2, //              rbp at cfa-16
        0x43, 0x0d, 6, //        after mov rbp, rsp: cfa = rbp+16
        0x41, 0x83, 3, //        after push rbx: rbx at cfa-24
        0x04, epilogue & 0xff, (epilogue >> 8) & 0xff, 0, 0, // before ret:
        0x0c, 7, 8, //           cfa = rsp+8
        0, 0, 0, 0, //           padding
    ];
    // Unwinders keep using it for frames in flight after a detach.
    const frame = rawAlloc(cie.length + fde.length + 4);
    frame.writeByteArray([...cie, ...fde, 0, 0, 0, 0]);
    new NativeFunction(register, "void", ["pointer"])(frame);
    retain(frame);
    unwindRegistered = true;
}


/** Functions currently redirected to the hook: id → address. */
const replaced = new Map<number, NativePointer>();
/** The same, by address (aliases share one). */
const redirectedAt = new Map<string, number>();
const reportedDrops = new Map<number, number>();
/** Every function ever hooked: drops of unhooked ones are still reported. */
const everHooked = new Set<number>();

/** A function to hook: id, entry offset in its module, its capture plan
 *  (bytes, see crates/strobe-session/src/values.rs; null: name and timing
 *  only), how many bytes of stack arguments a call passes at most, and
 *  the bytes of code from the entry to the end of its range (0: unknown). */
type HookTarget = [number, number, number[] | null, number, number];

export interface HookRequest {
    id: number;
    action: "add" | "remove";
    module?: string;
    functions: HookTarget[] | number[];
    /** True while patterns are active: libraries loaded later must then be
     *  checked (and hooked) before their code runs. */
    watchLibraries?: boolean;
    /** Hot-function sampling on/off, and the rate above which it starts. */
    sampling?: boolean;
    hotCallsPerSecond?: number;
}

let watchLibraries = false;

// Plans stay allocated while in use; a replaced plan may still be read by a
// hook running on another thread, so it is freed only a while later.
const livePlans = new Map<number, NativePointer>();
let retiredPlans: Array<[number, NativePointer]> = [];

/** Installs (or clears, with null) a function's capture plan. */
function setPlan(funcId: number, bytes: number[] | null | undefined): void {
    const { plans } = runtime();
    const slot = plans.add((funcId % MAX_FUNCTIONS) * 8);
    const old = livePlans.get(funcId);
    exprIdsByFunc.delete(funcId);
    if (bytes && bytes.length >= 16) {
        const u16 = (o: number) => bytes[o] | (bytes[o + 1] << 8);
        const nExpr = u16(8);
        if (nExpr > 0) {
            const at = 16 + 24 * (u16(0) + u16(2));
            exprIdsByFunc.set(funcId, Array.from({ length: nExpr }, (_, i) => u16(at + 2 * i)));
        }
    }
    if (bytes && bytes.length > 0) {
        const mem = Memory.alloc(bytes.length);
        mem.writeByteArray(bytes);
        slot.writePointer(mem);
        livePlans.set(funcId, mem);
    } else {
        slot.writePointer(NULL);
        livePlans.delete(funcId);
    }
    if (old !== undefined) retiredPlans.push([Date.now(), old]);
}

/** Frees replaced plans no hook can still be reading (once per request:
 *  per plan it made re-planning thousands of functions quadratic). */
function pruneRetiredPlans(): void {
    const cutoff = Date.now() - 5000;
    if (retiredPlans.length > 0 && retiredPlans[0][0] <= cutoff) {
        retiredPlans = retiredPlans.filter(([t]) => t > cutoff);
    }
}

// Expression watches: JavaScript evaluated in the traced thread at each
// enter/exit of the functions whose plans list them, with `args` (the six
// integer argument registers as NativePointers, at enter) and `retval` (rax,
// at exit) in scope. Costs a call into JS per traced call of those functions.
interface ExprWatch { label: string; fn: (args: NativePointer[], retval: NativePointer | undefined) => unknown }
let exprs = new Map<number, ExprWatch>();
const exprIdsByFunc = new Map<number, number[]>();
const EXPR_MAGIC = 0x52505845;
const EXPR_VALUE_MAX = 4096;

export interface ExprsRequest {
    id: number;
    exprs: Array<[number, string, string]>;
}

/** Replaces the set of expression watches; answers with the ones that do not compile. */
export function updateExprs(req: ExprsRequest): void {
    const errors: Array<[string, string]> = [];
    const next = new Map<number, ExprWatch>();
    for (const [id, label, source] of req.exprs) {
        const old = exprs.get(id);
        if (old !== undefined) { next.set(id, old); continue; }
        try {
            const fn = new Function("args", "retval", `"use strict"; return (${source});`) as ExprWatch["fn"];
            next.set(id, { label, fn });
        } catch (e) {
            errors.push([label, String((e as Error).message ?? e)]);
        }
    }
    exprs = next;
    send({ type: "exprs_updated", id: req.id, errors });
}

/** A watch value as JSON: pointers and 64-bit integers as strings. */
function exprJson(v: unknown): unknown {
    if (v === undefined || v === null) return null;
    if (typeof v === "number") return Number.isFinite(v) ? v : String(v);
    if (typeof v === "string") return v.length > EXPR_VALUE_MAX ? v.slice(0, EXPR_VALUE_MAX) + "…" : v;
    if (typeof v === "boolean") return v;
    if (v instanceof NativePointer || v instanceof Int64 || v instanceof UInt64) return v.toString();
    if (v instanceof ArrayBuffer) {
        const b = new Uint8Array(v.slice(0, 64));
        return Array.from(b, x => x.toString(16).padStart(2, "0")).join("");
    }
    try {
        const text = JSON.stringify(v);
        return text.length > EXPR_VALUE_MAX ? text.slice(0, EXPR_VALUE_MAX) + "…" : JSON.parse(text);
    } catch (e) {
        return String(v);
    }
}

function utf8(text: string): number[] {
    const bin = unescape(encodeURIComponent(text));
    return Array.from(bin, c => c.charCodeAt(0));
}

/** Evaluates a function's expression watches into a record (called from the
 *  CModule, see ExprFn); built with the runtime, like the rest of tracing. */
function makeExprCallback(): NativeCallback<"uint32", ["uint32", "uint32", "pointer", "pointer", "uint32"]> {
    return new NativeCallback((func: number, exit: number, regs: NativePointer, out: NativePointer, cap: number): number => {
    const ids = exprIdsByFunc.get(func);
    if (ids === undefined) return 0;
    const args = exit ? [] : [0, 1, 2, 3, 4, 5].map(i => regs.add(i * 8).readPointer());
    const retval = exit ? regs.readPointer() : undefined;
    const values: Record<string, unknown> = {};
    for (const id of ids) {
        const e = exprs.get(id);
        if (e === undefined) continue;
        try {
            values[e.label] = exprJson(e.fn(args, retval));
        } catch (err) {
            values[e.label] = `<error: ${String((err as Error).message ?? err)}>`;
        }
    }
    let bytes = utf8(JSON.stringify(values));
    if (bytes.length + 8 > cap) {
        const cut: Record<string, string> = {};
        for (const k of Object.keys(values)) cut[k] = "<not captured: record size limit reached>";
        bytes = utf8(JSON.stringify(cut));
        if (bytes.length + 8 > cap) return 0;
    }
    out.writeByteArray(bytes);
    out.add(bytes.length).writeU32(bytes.length);
    out.add(bytes.length + 4).writeU32(EXPR_MAGIC);
    return bytes.length + 8;
}, "uint32", ["uint32", "uint32", "pointer", "pointer", "uint32"]);
}

export interface PlansRequest {
    id: number;
    plans: Array<[number, number[] | null]>;
}

/** Replaces capture plans of hooked functions (watches changed). */
export function updatePlans(req: PlansRequest): void {
    pruneRetiredPlans();
    for (const [funcId, bytes] of req.plans) setPlan(funcId, bytes);
    send({ type: "plans_updated", id: req.id, count: req.plans.length });
}

function moduleBase(path: string | undefined): NativePointer | null {
    if (path === undefined) return Process.mainModule.base;
    for (const m of Process.enumerateModules()) {
        if (m.path === path) return m.base;
    }
    return null;
}

/** Installs or removes hooks; answers with what happened to each function. */
export function updateHooks(req: HookRequest): void {
    const started = Date.now();
    if (req.watchLibraries !== undefined) watchLibraries = req.watchLibraries;
    pruneRetiredPlans();
    const installed: number[] = [];
    const failed: Array<[number, string]> = [];
    if (req.action === "add") {
        const { config, fstate } = runtime();
        if (req.sampling !== undefined) config.add(8).writeU64(req.sampling ? 1 : 0);
        if (req.hotCallsPerSecond !== undefined) {
            config.writeU64(Math.max(1, Math.round(req.hotCallsPerSecond * WINDOW_NS / 1e9)));
        }
        const base = moduleBase(req.module);
        for (const [funcId, offset, plan, copy, extent] of req.functions as HookTarget[]) {
            setPlan(funcId, plan);
            if (replaced.has(funcId)) { installed.push(funcId); continue; }
            if (base === null) { failed.push([funcId, `module ${req.module} is not loaded`]); continue; }
            const fs = fstate.add((funcId % MAX_FUNCTIONS) * FSTATE_SIZE);
            fs.add(FSTATE_ID).writeU64(funcId);
            fs.add(FSTATE_COPY).writeU64(Math.ceil(copy / 16) * 16);
            const target = base.add(offset);
            const alias = redirectedAt.get(target.toString());
            if (alias !== undefined) {
                failed.push([funcId, `shares its address with function #${alias} (an alias, e.g. a C++ constructor variant); its calls are recorded under that one`]);
                continue;
            }
            if (isGuarded(target, 16)) {
                failed.push([funcId, "a breakpoint is set in its first bytes; remove it (debug_breakpoint) to trace this function"]);
                continue;
            }
            try {
                // Both redirections go live below (writePatches, flush),
                // after the trampoline is stored where the hook reads it.
                const stub = stubFor(funcId, target);
                const trampoline = redirect(target, stub, extent);
                fs.add(FSTATE_TRAMPOLINE).writePointer(trampoline);
                replaced.set(funcId, target);
                redirectedAt.set(target.toString(), funcId);
                everHooked.add(funcId);
                installed.push(funcId);
            } catch (e) {
                failed.push([funcId, String((e as Error).message ?? e)]);
            }
        }
        writePatches();
        Interceptor.flush();
    } else {
        for (const funcId of req.functions as number[]) {
            const target = replaced.get(funcId);
            if (target !== undefined) {
                unredirect(target);
                redirectedAt.delete(target.toString());
            }
            replaced.delete(funcId);
            if (livePlans.has(funcId)) setPlan(funcId, null);
        }
        writePatches();
        Interceptor.flush();
    }
    send({ type: "hooks_updated", id: req.id, installed, failed, activeCount: replaced.size, ms: Date.now() - started });
}

function dropDeltas(drops: NativePointer): Record<string, number> | undefined {
    let out: Record<string, number> | undefined;
    for (const funcId of everHooked) {
        const total = drops.add((funcId % MAX_FUNCTIONS) * 8).readU64().toNumber();
        const before = reportedDrops.get(funcId) ?? 0;
        if (total > before) {
            reportedDrops.set(funcId, total);
            (out ??= {})[funcId] = total - before;
        }
    }
    return out;
}

const reportedSampling = new Map<number, number>();

/** Reports functions whose sampling changed (1 in `every` calls recorded; 0 = all). */
function reportSampling(fstate: NativePointer): void {
    const changes: Array<[number, number]> = [];
    for (const funcId of replaced.keys()) {
        const every = fstate.add((funcId % MAX_FUNCTIONS) * 64 + 16).readU64().toNumber();
        const shown = every > 1 ? every : 0;
        if ((reportedSampling.get(funcId) ?? 0) !== shown) {
            reportedSampling.set(funcId, shown);
            changes.push([funcId, shown]);
        }
    }
    if (changes.length > 0) send({ type: "sampling", changes });
}

let drains = 0;

// Flow control: trace chunks the daemon has not acknowledged yet. Past the
// limit the ring is left to fill, so a slow daemon slows the traced threads
// (and, past FULL_RING_WAIT_NS, drops counted records) instead of piling up
// unsent messages in memory.
const MAX_UNACKED_CHUNKS = 64;
let unacked = 0;

/** The daemon stored `n` more chunks. */
export function onTraceAck(n: number): void {
    unacked = Math.max(0, unacked - n);
}

/** Sends every committed record to the daemon; drop counts and sampling
 *  changes are reported every 50th call and on a `full` drain (exit, crash). */
export function drain(full = false): void {
    if (rt === null) return;
    const { ring, committed, release, drops } = rt;
    // A full drain (exit, crash) also waits briefly for slots other threads
    // have reserved but not yet written.
    const deadline = Date.now() + 5;
    for (;;) {
        if (!full && unacked >= MAX_UNACKED_CHUNKS) break;
        const n = committed(CHUNK_RECORDS) as number;
        if (n === 0) {
            const pending = ring.readU64().compare(ring.add(8).readU64()) > 0;
            if (full && pending && Date.now() < deadline) continue;
            break;
        }
        const tail = ring.add(8).readU64().toNumber();
        const start = ring.add(64 + (tail % RING_RECORDS) * RECORD_SIZE);
        send({ type: "trace", count: n }, start.readByteArray(n * RECORD_SIZE)!);
        unacked++;
        release(n);
    }
    if (!full && ++drains % 50 !== 0) return;
    const d = dropDeltas(drops);
    if (d !== undefined) send({ type: "trace_drops", drops: d });
    reportSampling(rt.fstate);
}

/** Reports the loaded images, and from then on every newly loaded one; while
 *  patterns are active the loading thread waits for the daemon's hooks so
 *  that a library's functions are traced from their first call. */
export function watchModules(): void {
    let initial = true;
    const report = (m: Module) => {
        // libgcc (the unwinder) may arrive after the hook was written.
        if (!unwindRegistered && rt !== null) registerUnwindInfo();
        if (initial || !m.path.startsWith("/")) return;
        if (!watchLibraries) {
            send({ type: "module_loaded", path: m.path, wait: false });
            return;
        }
        const op = recv("module-hooks", (msg: HookRequest) => updateHooks({ ...msg, action: "add", id: 0 }));
        send({ type: "module_loaded", path: m.path, wait: true });
        op.wait();
    };
    Process.attachModuleObserver({ onAdded: report });
    initial = false;
    const paths = Process.enumerateModules().map(m => m.path).filter(p => p.startsWith("/"));
    send({ type: "modules", paths });
}

let timer: ReturnType<typeof setInterval> | null = null;

// Thread names are read by the daemon from /proc: enumerating threads from
// here suspends them, and doing it periodically stalled traced programs.
function startDraining(): void {
    if (timer === null) timer = setInterval(() => drain(), 2);
}

// Fork guard. Frida's fork handling in a gated child crashed (a NULL
// object referenced in frida-agent) when the program forked while agent
// messages were in flight — e.g. a traced call's records being shipped —
// losing the child in about 1 fork in 6 when it came within ~1 ms of a
// traced call. Frida's own fork hook runs before any listener a script
// attaches to fork(), so the guard goes in front of it: each module's GOT
// slot for fork points at a wrapper that ships the ring and makes a round
// trip to the daemon (all messages delivered) before jumping to fork. The
// slots are journalled like code patches; the wrapper lives in raw memory
// and skips the round trip in a forked child that has no agent of its own.
let forkBarrier: NativeCallback<"void", []> | null = null;

/** Routes the program's fork() calls through the guard; returns how many
 *  GOT slots now point at it. */
export function guardForks(): number {
    const fork = Module.findGlobalExportByName("fork");
    if (fork === null) return 0;
    if (forkBarrier === null) {
        forkBarrier = new NativeCallback(() => {
            try { drain(true); } catch (_e) { /* the fork matters more */ }
            const op = recv("fork-barrier-ack", () => { /* no data */ });
            send({ type: "fork_barrier", pid: Process.id });
            op.wait();
        }, "void", []);
    }
    // config[5] is the flag the atfork handler sets; reading it does not
    // need the tracer to exist.
    const config = runtimeConfig;
    const wrapper = rawAlloc(Process.pageSize, PROT_ALL);
    wrapper.writeByteArray([
        0x48, 0xb8, ...u64Bytes(config.add(40)), //    mov rax, &config[5] (set in a forked child)
        0x48, 0x83, 0x38, 0x00, //                     cmp qword [rax], 0
        0x75, 0x14, //                                 jne skip
        0x48, 0x83, 0xec, 0x08, //                     sub rsp, 8 (align the call)
        0x48, 0xb8, ...u64Bytes(forkBarrier), //       mov rax, barrier
        0xff, 0xd0, //                                 call rax
        0x48, 0x83, 0xc4, 0x08, //                     add rsp, 8
        0x48, 0xb8, ...u64Bytes(fork), //       skip:  mov rax, fork
        0xff, 0xe0, //                                 jmp rax
    ]);
    Memory.protect(wrapper, Process.pageSize, "r-x");
    const slots: Array<[NativePointer, number[]]> = [];
    for (const m of Process.enumerateModules()) {
        if (!m.path.startsWith("/") || m.path.includes("frida")) continue;
        for (const imp of m.enumerateImports()) {
            if (imp.name === "fork" && imp.slot !== undefined) slots.push([imp.slot, u64Bytes(wrapper)]);
        }
    }
    patchCodeNow(slots);
    return slots.length;
}
