// The native tracer: hooks functions with Interceptor.attach and CModule
// callbacks that write fixed 32-byte records into a shared MPSC ring; the
// JS side drains the ring in chunks and sends them as binary data. No JS
// runs per call, and the thread id is cached per thread (no gettid per call).
//
// Record layout (little-endian), decoded by crates/strobe-session/src/trace.rs:
//   u64 timestamp (CLOCK_MONOTONIC ns) | u32 function id | u32 thread id
//   u64 value (first argument on enter, return value on exit)
//   u32 kind (1 = enter, 2 = exit, 3 = padding; 0 = slot not yet written)
//   u32 extra slots: a function with a capture plan (typed arguments,
//   watches; see crates/strobe-session/src/values.rs) appends its captured
//   registers and memory blocks in that many following 32-byte slots.

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
    /** Per function: window start, calls in window, record 1 in `every`, tick. */
    fstate: NativePointer;
    /** [0] calls per window above which a function is sampled, [1] sampling on, [2] pid. */
    config: NativePointer;
    drops: NativePointer;
    /** Per function: its capture plan, or NULL (name and timing only). */
    plans: NativePointer;
    committed: NativeFunction<number, [number]>;
    release: NativeFunction<void, [number]>;
    callbacks: InvocationListenerCallbacks;
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

function createRuntime(): Runtime {
const ring = Memory.alloc(64 + RING_RECORDS * RECORD_SIZE);
const drops = Memory.alloc(MAX_FUNCTIONS * 8);
const fstate = Memory.alloc(MAX_FUNCTIONS * 64);
const config = Memory.alloc(24);
// CModule globals are not writable (its image is mapped read+execute): the
// process id the hooks need is passed in config[2].
config.add(16).writeU64(Process.id);
const plans = Memory.alloc(MAX_FUNCTIONS * 8);
config.writeU64(10_000);
config.add(8).writeU64(1);

const cm = new CModule(`
#include <gum/guminterceptor.h>
#include <glib.h>

extern volatile guint64 ring[];
extern volatile guint64 drops[];
extern volatile guint64 fstate[];
extern volatile guint64 config[];
extern volatile guint64 plans[];
extern int gettid(void);
extern void *malloc(gsize);
extern long process_vm_readv(int, void *, unsigned long, void *, unsigned long, unsigned long);
extern int clock_gettime(int, void *);
extern int sched_yield(void);

#define CAP ${RING_RECORDS}ULL
#define MAXF ${MAX_FUNCTIONS}U

typedef struct { guint64 ts; guint32 func; guint32 tid; guint64 value; guint32 kind; guint32 extra; } Rec;
typedef struct { guint32 tid; guint8 *scratch; } ThreadState;
typedef struct { guint16 record; guint16 typed; guint32 sampled; } CallState;
typedef struct { guint64 window; guint64 calls; guint64 every; guint64 tick; guint64 hot; guint64 pad[3]; } FuncState;
typedef struct { guint8 src; guint8 flags; guint16 parent; guint32 size; guint64 arg; gint64 addend; } Node;
typedef struct { guint16 n_enter; guint16 n_exit; guint16 stack_bytes; guint16 id; } PlanHeader;
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

static inline guint64 now(void) {
    struct { gint64 s; gint64 ns; } t;
    clock_gettime(1, &t);
    return (guint64)t.s * 1000000000ULL + (guint64)t.ns;
}

static ThreadState *thread_state(GumInvocationContext *ic) {
    ThreadState *st = gum_invocation_context_get_listener_thread_data(ic, sizeof(ThreadState));
    if (st->tid == 0) st->tid = (guint32)gettid();
    return st;
}

/* Reserves 1 + extra slots, never across the ring's end (a padding record
   fills the rest first). Returns 0 when the ring stayed full too long. */
static int reserve(guint32 func, guint64 extra, guint64 *out) {
    guint64 deadline = 0;
    for (;;) {
        guint64 slot = ring[0];
        guint64 idx = slot % CAP;
        int wrap = idx + 1 + extra > CAP;
        guint64 need = wrap ? CAP - idx : 1 + extra;
        if (slot + need - ring[1] > CAP) {
            guint64 t = now();
            if (deadline == 0) deadline = t + ${FULL_RING_WAIT_NS}ULL;
            else if (t > deadline) { fetch_add(&drops[func % MAXF], 1); return 0; }
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
    guint64 extra = (len + 31) / 32;
    guint64 slot;
    /* Reserve only when there is room: a reserved slot is always written,
       so the drainer never waits on a hole. */
    if (!reserve(func, extra, &slot)) return 0;
    Rec *r = (Rec *)((char *)ring + 64) + (slot % CAP);
    if (len) {
        guint8 *dst = (guint8 *)(r + 1);
        for (guint32 i = 0; i < len; i++) dst[i] = payload[i];
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

static guint64 gp_arg(GumCpuContext *c, guint64 i) {
    switch (i) {
        case 0: return c->rdi; case 1: return c->rsi; case 2: return c->rdx;
        case 3: return c->rcx; case 4: return c->r8; default: return c->r9;
    }
}

/* Executes plan nodes: one block (u64 addr, u32 len, u32 status, data
   padded to 8) per node, appended at out[pos]. */
static guint32 run_nodes(const Node *nodes, guint32 n, GumCpuContext *c, guint8 *out, guint32 pos) {
    guint32 offs[MAX_NODES];
    guint32 lens[MAX_NODES];
    if (n > MAX_NODES) n = MAX_NODES;
    for (guint32 i = 0; i < n; i++) {
        const Node *nd = &nodes[i];
        guint64 addr = 0, len_hint = nd->size;
        guint32 status = 0;
        int have = 1;
        guint64 stack = c->rsp + 8;
        switch (nd->src) {
            case 0:
                addr = gp_arg(c, nd->arg);
                if ((nd->flags & 2) && nd->arg < 5) { guint64 l = gp_arg(c, nd->arg + 1); if (l < len_hint) len_hint = l; }
                break;
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
            case 3: addr = nd->arg == 0 ? c->rax : c->rdx; break;
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

static int put_enter(GumInvocationContext *ic, guint32 func, guint32 kind, guint64 ts, int typed) {
    ThreadState *st = thread_state(ic);
    GumCpuContext *c = ic->cpu_context;
    const PlanHeader *plan = typed ? (const PlanHeader *)(gsize)plans[func % MAXF] : NULL;
    if (plan == NULL) return put(st, func, kind, c->rdi, ts, NULL, 0);
    guint8 *out = scratch_of(st);
    if (out == NULL) return put(st, func, kind, c->rdi, ts, NULL, 0);
    guint64 *regs = (guint64 *)(out + 8);
    regs[0] = c->rdi; regs[1] = c->rsi; regs[2] = c->rdx;
    regs[3] = c->rcx; regs[4] = c->r8; regs[5] = c->r9;
    for (int i = 0; i < 8; i++) regs[6 + i] = *(const guint64 *)c->xmm[i].q;
    guint32 pos = 8 + 14 * 8;
    guint32 sb = (plan->stack_bytes + 7u) & ~7u;
    if (sb) {
        int f;
        guint32 got = safe_read(out + pos, c->rsp + 8, sb, 0, &f);
        for (guint32 i = got; i < sb; i++) out[pos + i] = 0;
        pos += sb;
    }
    pos = run_nodes((const Node *)(plan + 1), plan->n_enter, c, out, pos);
    *(guint32 *)out = plan->id;
    *(guint32 *)(out + 4) = pos;
    return put(st, func, kind, c->rdi, ts, out, pos);
}

static void put_exit(GumInvocationContext *ic, guint32 func, guint32 kind, guint64 ts, int typed) {
    ThreadState *st = thread_state(ic);
    GumCpuContext *c = ic->cpu_context;
    const PlanHeader *plan = typed ? (const PlanHeader *)(gsize)plans[func % MAXF] : NULL;
    guint8 *out = plan ? scratch_of(st) : NULL;
    if (out == NULL) { put(st, func, kind, c->rax, ts, NULL, 0); return; }
    guint64 *regs = (guint64 *)(out + 8);
    regs[0] = c->rax; regs[1] = c->rdx;
    regs[2] = *(const guint64 *)c->xmm[0].q; regs[3] = *(const guint64 *)c->xmm[1].q;
    guint32 pos = 8 + 4 * 8;
    pos = run_nodes((const Node *)(plan + 1) + plan->n_enter, plan->n_exit, c, out, pos);
    *(guint32 *)out = plan->id;
    *(guint32 *)(out + 4) = pos;
    put(st, func, kind, c->rax, ts, out, pos);
}

/* Decides, once per call, whether it is recorded (sampling of hot functions);
   the exit of a call follows its enter's decision. Counters are racy on
   purpose: rates only need to be approximate. */
void on_enter(GumInvocationContext *ic) {
    guint32 func = (guint32)(gsize)gum_invocation_context_get_listener_function_data(ic);
    CallState *cs = gum_invocation_context_get_listener_invocation_data(ic, sizeof(CallState));
    FuncState *fs = (FuncState *)fstate + (func % MAXF);
    guint64 t = now();
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
    cs->sampled = every > 1;
    cs->record = every <= 1 || (fs->tick++ % every) == 0;
    /* An enter that could not be recorded takes its exit with it. */
    cs->typed = !fs->hot;
    if (cs->record)
        cs->record = put_enter(ic, func, 1 | (cs->sampled ? SAMPLED : 0), t, cs->typed);
}

void on_leave(GumInvocationContext *ic) {
    CallState *cs = gum_invocation_context_get_listener_invocation_data(ic, sizeof(CallState));
    if (!cs->record) return;
    guint32 func = (guint32)(gsize)gum_invocation_context_get_listener_function_data(ic);
    put_exit(ic, func, 2 | (cs->sampled ? SAMPLED : 0), now(), cs->typed);
}

/* Slots of whole records committed contiguously from the tail, at most
   max (unless one record alone is larger), not crossing the ring's end. */
guint32 committed(guint32 max) {
    guint64 tail = ring[1];
    guint32 n = 0;
    while (n < max) {
        guint64 slot = tail + n;
        if (n > 0 && slot % CAP == 0) break;
        Rec *r = (Rec *)((char *)ring + 64) + (slot % CAP);
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
        Rec *r = (Rec *)((char *)ring + 64) + ((tail + i) % CAP);
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
    malloc: Module.findGlobalExportByName("malloc")!,
    process_vm_readv: Module.findGlobalExportByName("process_vm_readv")!,
    clock_gettime: Module.findGlobalExportByName("clock_gettime")!,
    sched_yield: Module.findGlobalExportByName("sched_yield")!,
});

return {
    module: cm,
    ring,
    fstate,
    config,
    drops,
    plans,
    committed: new NativeFunction(cm.committed, "uint32", ["uint32"]),
    release: new NativeFunction(cm.release, "void", ["uint32"]),
    callbacks: { onEnter: cm.on_enter, onLeave: cm.on_leave } as unknown as InvocationListenerCallbacks,
};
}

const listeners = new Map<number, InvocationListener>();
const reportedDrops = new Map<number, number>();
/** Every function ever hooked: drops of unhooked ones are still reported. */
const everHooked = new Set<number>();

/** A function to hook: id, entry offset in its module, and optionally its
 *  capture plan (bytes; see crates/strobe-session/src/values.rs). */
type HookTarget = [number, number] | [number, number, number[] | null];

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
    const cutoff = Date.now() - 5000;
    retiredPlans = retiredPlans.filter(([t]) => t > cutoff);
}

export interface PlansRequest {
    id: number;
    plans: Array<[number, number[] | null]>;
}

/** Replaces capture plans of hooked functions (watches changed). */
export function updatePlans(req: PlansRequest): void {
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
    if (req.watchLibraries !== undefined) watchLibraries = req.watchLibraries;
    const installed: number[] = [];
    const failed: Array<[number, string]> = [];
    if (req.action === "add") {
        const { callbacks, config } = runtime();
        if (req.sampling !== undefined) config.add(8).writeU64(req.sampling ? 1 : 0);
        if (req.hotCallsPerSecond !== undefined) {
            config.writeU64(Math.max(1, Math.round(req.hotCallsPerSecond * WINDOW_NS / 1e9)));
        }
        const base = moduleBase(req.module);
        for (const target of req.functions as HookTarget[]) {
            const [funcId, offset] = target;
            if (target.length > 2) setPlan(funcId, target[2] as number[] | null);
            if (listeners.has(funcId)) { installed.push(funcId); continue; }
            if (base === null) { failed.push([funcId, `module ${req.module} is not loaded`]); continue; }
            try {
                const l = Interceptor.attach(base.add(offset), callbacks, ptr(funcId));
                listeners.set(funcId, l);
                everHooked.add(funcId);
                installed.push(funcId);
            } catch (e) {
                failed.push([funcId, String((e as Error).message ?? e)]);
            }
        }
        Interceptor.flush();
    } else {
        for (const funcId of req.functions as number[]) {
            listeners.get(funcId)?.detach();
            listeners.delete(funcId);
            if (livePlans.has(funcId)) setPlan(funcId, null);
        }
        Interceptor.flush();
    }
    send({ type: "hooks_updated", id: req.id, installed, failed, activeCount: listeners.size });
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
    for (const funcId of listeners.keys()) {
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
