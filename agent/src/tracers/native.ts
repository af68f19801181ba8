// The native tracer: hooks functions with Interceptor.attach and CModule
// callbacks that write fixed 32-byte records into a shared MPSC ring; the
// JS side drains the ring in chunks and sends them as binary data. No JS
// runs per call, and the thread id is cached per thread (no gettid per call).
//
// Record layout (little-endian), decoded by crates/strobe-session/src/trace.rs:
//   u64 timestamp (CLOCK_MONOTONIC ns) | u32 function id | u32 thread id
//   u64 value (first argument on enter, return value on exit)
//   u32 kind (1 = enter, 2 = exit; 0 = slot not yet written) | u32 reserved

export const RECORD_SIZE = 32;
const RING_RECORDS = 1 << 18; // 8 MiB
const CHUNK_RECORDS = 4096;
const MAX_FUNCTIONS = 1 << 18;
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
    /** [0] calls per window above which a function is sampled, [1] sampling on. */
    config: NativePointer;
    drops: NativePointer;
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
const fstate = Memory.alloc(MAX_FUNCTIONS * 32);
const config = Memory.alloc(16);
config.writeU64(10_000);
config.add(8).writeU64(1);

const cm = new CModule(`
#include <gum/guminterceptor.h>
#include <glib.h>

extern volatile guint64 ring[];
extern volatile guint64 drops[];
extern volatile guint64 fstate[];
extern volatile guint64 config[];
extern int gettid(void);
extern int clock_gettime(int, void *);
extern int sched_yield(void);

#define CAP ${RING_RECORDS}ULL
#define MAXF ${MAX_FUNCTIONS}U

typedef struct { guint64 ts; guint32 func; guint32 tid; guint64 value; guint32 kind; guint32 pad; } Rec;
typedef struct { guint32 tid; } ThreadState;
typedef struct { guint32 record; guint32 sampled; } CallState;
typedef struct { guint64 window; guint64 calls; guint64 every; guint64 tick; } FuncState;
#define SAMPLED 0x100u

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

/* Returns 0 when the record had to be dropped (ring full for too long). */
static int put(GumInvocationContext *ic, guint32 func, guint32 kind, guint64 value, guint64 ts) {
    ThreadState *st = gum_invocation_context_get_listener_thread_data(ic, sizeof(ThreadState));
    if (st->tid == 0) st->tid = (guint32)gettid();
    /* Reserve a slot only when there is room: a reserved slot is always
       written, so the drainer never waits on a hole. */
    guint64 slot;
    guint64 deadline = 0;
    for (;;) {
        slot = ring[0];
        if (slot - ring[1] >= CAP) {
            guint64 t = now();
            if (deadline == 0) deadline = t + ${FULL_RING_WAIT_NS}ULL;
            else if (t > deadline) { fetch_add(&drops[func % MAXF], 1); return 0; }
            sched_yield();
            continue;
        }
        if (cas(&ring[0], slot, slot + 1)) break;
    }
    Rec *r = (Rec *)((char *)ring + 64) + (slot % CAP);
    r->ts = ts;
    r->func = func;
    r->tid = st->tid;
    r->value = value;
    /* The fields above must be in memory before the commit flag. */
    __asm__ volatile("" ::: "memory");
    *(volatile guint32 *)&r->kind = kind;
    return 1;
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
    }
    fs->calls++;
    guint64 every = fs->every;
    cs->sampled = every > 1;
    cs->record = every <= 1 || (fs->tick++ % every) == 0;
    /* An enter that could not be recorded takes its exit with it. */
    if (cs->record)
        cs->record = put(ic, func, 1 | (cs->sampled ? SAMPLED : 0), (guint64)(gsize)gum_invocation_context_get_nth_argument(ic, 0), t);
}

void on_leave(GumInvocationContext *ic) {
    CallState *cs = gum_invocation_context_get_listener_invocation_data(ic, sizeof(CallState));
    if (!cs->record) return;
    guint32 func = (guint32)(gsize)gum_invocation_context_get_listener_function_data(ic);
    put(ic, func, 2 | (cs->sampled ? SAMPLED : 0), (guint64)(gsize)gum_invocation_context_get_return_value(ic), now());
}

/* Records committed contiguously from the tail, at most max, not crossing the ring's end. */
guint32 committed(guint32 max) {
    guint64 tail = ring[1];
    guint32 n = 0;
    while (n < max) {
        guint64 slot = tail + n;
        if (n > 0 && slot % CAP == 0) break;
        Rec *r = (Rec *)((char *)ring + 64) + (slot % CAP);
        if (*(volatile guint32 *)&r->kind == 0) break;
        n++;
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
    gettid: Module.findGlobalExportByName("gettid")!,
    clock_gettime: Module.findGlobalExportByName("clock_gettime")!,
    sched_yield: Module.findGlobalExportByName("sched_yield")!,
});

return {
    module: cm,
    ring,
    fstate,
    config,
    drops,
    committed: new NativeFunction(cm.committed, "uint32", ["uint32"]),
    release: new NativeFunction(cm.release, "void", ["uint32"]),
    callbacks: { onEnter: cm.on_enter, onLeave: cm.on_leave } as unknown as InvocationListenerCallbacks,
};
}

const listeners = new Map<number, InvocationListener>();
const reportedDrops = new Map<number, number>();
/** Every function ever hooked: drops of unhooked ones are still reported. */
const everHooked = new Set<number>();

export interface HookRequest {
    id: number;
    action: "add" | "remove";
    module?: string;
    functions: Array<[number, number]> | number[];
    /** True while patterns are active: libraries loaded later must then be
     *  checked (and hooked) before their code runs. */
    watchLibraries?: boolean;
    /** Hot-function sampling on/off, and the rate above which it starts. */
    sampling?: boolean;
    hotCallsPerSecond?: number;
}

let watchLibraries = false;

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
        for (const [funcId, offset] of req.functions as Array<[number, number]>) {
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
        const every = fstate.add((funcId % MAX_FUNCTIONS) * 32 + 16).readU64().toNumber();
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
