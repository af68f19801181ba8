// The JavaScript tracer: calls of a Node.js program's own functions. The
// functions carry probes written in as Node loaded them (the daemon probes
// the sources; agent/node/preload.cjs swaps them in), so this side never
// hooks code. It keeps the enabled bits and moves records:
//
// - The program's runtime (preload.cjs) shows its buffer (enabled bitmap +
//   record ring, layout there) by writing the buffer's first 64 bytes to
//   /dev/null; the C listener on write() below recognises the marker, notes
//   the buffer, writes the thread id and copies the master bitmap in.
// - "hooks" set and clear bits (probe index = bit) in the master bitmap and
//   in every buffer shown, and map each probe to the daemon's function id.
// - The registry module (made as the agent loads) is small; the pump
//   module, which needs the shared ring, is made when the first function
//   is traced, so a Node.js program nobody traces starts as fast as it can.
// - The native drain runs `js_pump` first (ring.ts `addPump`): it copies
//   each buffer's new records into the shared ring with their function
//   ids, so they ship with every other record on one clock (the runtime
//   stamps them with CLOCK_MONOTONIC, as the ring does).
// - The runtime writes an unregister request as Node exits, before the
//   buffer is freed: its last records are pumped and the buffer forgotten.
import { JsTarget, send_ } from "../../protocol.js";
import { addPump, CONFIG_BEFORE_RECORD, noteTracedIds, RING_WRITER_C, sharedRing } from "../ring.js";
import { HookRequest, Tracer } from "../tracer.js";
import { utf8 } from "../../native/memory.js";
import { debugJavaScript, probeLive, releaseJavaScriptDebugger } from "./debug.js";
import { forgetNodeRuntimeLoading, loadNodeRuntime, nodeRuntimeAttached, nodeRuntimeMissing } from "./attach.js";

/** Probe indices (bits of a bitmap); the daemon's instrument.rs MAX_PROBES. */
const MAX_PROBES = 1 << 18;
const BITMAP_WORDS = MAX_PROBES / 32;
/** Buffers shown at once (the main thread's and its workers'). */
const MAX_BUFFERS = 16;
/** Bytes of a buffer's watch area (preload.cjs): u32 length + JSON, the
 *  watches and the preview depth. */
const WATCH_BYTES = 65536;


/** C both modules share: the buffers' control words and the lock. */
const SHARED_C = `
#include <glib.h>

extern volatile guint32 master[];
extern volatile guint32 funcs[];
extern volatile guint64 buffers[];
/* The watches every buffer gets (u32 length + JSON), WATCH_BYTES. */
extern volatile guint8 watches[];
/* [0] the lock; [2,3] the pump (a function pointer, 0 until the pump
   module exists); [4] buffers shown so far; [5] 1 when breakpoints wait
   for the program to start (copied to a buffer's C_DEBUG_WAIT). */
extern volatile guint32 state[];
extern int sched_yield(void);

#define BITMAP_WORDS ${BITMAP_WORDS}u
#define MAX_BUFFERS ${MAX_BUFFERS}u
#define MAX_PROBES ${MAX_PROBES}u
/* Control words of a runtime's buffer (agent/node/preload.cjs). */
#define C_REQUEST 3
#define C_TID 4
#define C_ATTACHED 5
#define C_HEAD 6
#define C_TAIL 7
#define C_DROPPED 8
#define C_DROPPED_PROBE 9
#define C_SLOTS 10
#define C_WORDS 11
#define C_WATCH_AT 12
#define C_WATCH_GEN 13
#define C_DEBUG_WAIT 15
#define CTRL_WORDS 16
#define WATCH_BYTES ${WATCH_BYTES}u

/* A macro: TinyCC inlines nothing, and js_pump_thread runs before every
   native record of a Node process. ok is set when the lock was taken. */
#define TRY_LOCK(ok) do { guint32 prev_, one_ = 1; volatile guint32 *l_ = &state[0]; \
    __asm__ volatile("lock; cmpxchgl %2, %1" : "=a"(prev_), "+m"(*l_) : "r"(one_), "0"(0u) : "memory"); \
    ok = prev_ == 0; } while (0)

static void lock(void) {
    for (;;) {
        int ok;
        TRY_LOCK(ok);
        if (ok) return;
        sched_yield();
    }
}

static void unlock(void) {
    __asm__ volatile("" ::: "memory");
    state[0] = 0;
}
`;

/** The module made as the agent loads in a Node.js process: small (it
 *  compiles in a few ms), it notes the buffers runtimes show and keeps
 *  their bitmaps. */
const REGISTRY_C = `
#include <gum/guminterceptor.h>
${SHARED_C}
extern int gettid(void);

typedef void (*pump_fn)(volatile guint32 *);

/* Sets (on != 0) or clears a probe's bit everywhere. */
void js_set(guint32 probe, guint32 on) {
    guint32 w = probe >> 5, bit = 1u << (probe & 31);
    lock();
    if (on) master[w] |= bit; else master[w] &= ~bit;
    for (guint32 i = 0; i < MAX_BUFFERS; i++) {
        if (buffers[i] == 0) continue;
        volatile guint32 *bm = (volatile guint32 *)(gsize)buffers[i] + CTRL_WORDS;
        if (on) bm[w] |= bit; else bm[w] &= ~bit;
    }
    unlock();
}

/* Copies the watches into buffer c and tells its runtime (a new
   generation). */
static void give_watches(volatile guint32 *c) {
    guint32 at = c[C_WATCH_AT];
    if (at == 0) return;
    volatile guint8 *area = (volatile guint8 *)c + at;
    guint32 len = *(volatile guint32 *)watches + 4;
    if (len > WATCH_BYTES) len = WATCH_BYTES;
    for (guint32 i = 0; i < len; i++) area[i] = watches[i];
    __asm__ volatile("" ::: "memory");
    c[C_WATCH_GEN] = c[C_WATCH_GEN] + 1;
}

/* The watches changed: every buffer gets them. */
void js_publish_watches(void) {
    lock();
    for (guint32 i = 0; i < MAX_BUFFERS; i++)
        if (buffers[i] != 0) give_watches((volatile guint32 *)(gsize)buffers[i]);
    unlock();
}

/* Lets go of every buffer: the runtimes stop recording (the agent goes). */
void js_release_all(void) {
    lock();
    for (guint32 i = 0; i < MAX_BUFFERS; i++) {
        if (buffers[i] == 0) continue;
        volatile guint32 *c = (volatile guint32 *)(gsize)buffers[i];
        for (guint32 w = 0; w < BITMAP_WORDS; w++) c[CTRL_WORDS + w] = 0;
        c[C_ATTACHED] = 0;
        buffers[i] = 0;
    }
    unlock();
}

/* The listener on write(): a runtime showing (request 1) or withdrawing
   (request 2) its buffer. Anything else returns at the first test. */
void on_write(GumInvocationContext *ic) {
    if ((gsize)gum_invocation_context_get_nth_argument(ic, 2) != 64) return;
    volatile guint32 *c = (volatile guint32 *)gum_invocation_context_get_nth_argument(ic, 1);
    if (c == NULL || c[0] != 0x4f525453u || c[1] != 0x534a4542u || c[2] != 1) return;
    if (c[C_WORDS] != BITMAP_WORDS || c[C_SLOTS] == 0 || (c[C_SLOTS] & (c[C_SLOTS] - 1)) != 0) return;
    lock();
    if (c[C_REQUEST] == 1) {
        for (guint32 i = 0; i < MAX_BUFFERS; i++) {
            if (buffers[i] != 0) continue;
            c[C_TID] = (guint32)gettid();
            for (guint32 w = 0; w < BITMAP_WORDS; w++) c[CTRL_WORDS + w] = master[w];
            give_watches(c);
            c[C_DEBUG_WAIT] = state[5];
            c[C_ATTACHED] = 1;
            buffers[i] = (guint64)(gsize)c;
            state[4]++;
            break;
        }
    } else if (c[C_REQUEST] == 2) {
        /* Its last records first, when anything was ever traced. */
        pump_fn pump = (pump_fn)(gsize)(((guint64)state[3] << 32) | state[2]);
        for (guint32 i = 0; i < MAX_BUFFERS; i++) {
            if (buffers[i] != (guint64)(gsize)c) continue;
            if (pump != NULL) pump(c);
            c[C_ATTACHED] = 0;
            buffers[i] = 0;
        }
    }
    unlock();
}
`;

/** The module made when the first function is traced: it moves records
 *  into the shared ring (which it needs, and so creates). */
const PUMP_C = `
${SHARED_C}
extern volatile guint64 ring[];
extern volatile guint64 drops[];
extern volatile guint64 config[];
extern int getpid(void);
extern int clock_gettime(int, void *);
extern int usleep(unsigned int);

${RING_WRITER_C}

/* Copies a buffer's new records into the shared ring, as many as it has
   room for without waiting (the drain, which makes room, runs after).
   Called with the lock held. */
void js_pump_one(volatile guint32 *c) {
    guint32 slots = c[C_SLOTS];
    volatile guint32 *recs = c + CTRL_WORDS + c[C_WORDS];
    guint32 tail = c[C_TAIL];
    guint32 head = c[C_HEAD];
    __asm__ volatile("" ::: "memory");
    while (tail != head) {
        volatile guint32 *r = recs + (guint64)(tail & (slots - 1)) * 8;
        guint32 kind = r[6], extra = r[7];
        if ((kind & 0xff) != KIND_PAD) {
            guint32 probe = r[2];
            guint32 func = probe < MAX_PROBES ? funcs[probe] : 0;
            if (func != 0) {
                if (ring[0] - ring[1] + 2ULL * (1 + extra) > CAP) break;
                guint64 ts = (guint64)r[0] | ((guint64)r[1] << 32);
                guint64 value = (guint64)r[4] | ((guint64)r[5] << 32);
                put_record(r[3], func, kind, value, ts, (const guint8 *)(r + 8), extra * 32);
            }
        }
        tail += 1 + extra;
    }
    __asm__ volatile("" ::: "memory");
    c[C_TAIL] = tail;
    /* Records the runtime dropped (its ring stayed full): counted against
       the function of the last one. */
    guint32 dropped = c[C_DROPPED];
    if (dropped != 0) {
        guint32 probe = c[C_DROPPED_PROBE];
        guint32 func = probe < MAX_PROBES ? funcs[probe] : 0;
        c[C_DROPPED] = 0;
        fetch_add(&drops[func & (MAXF - 1)], dropped);
    }
}

void js_pump(void) {
    lock();
    for (guint32 i = 0; i < MAX_BUFFERS; i++)
        if (buffers[i] != 0) js_pump_one((volatile guint32 *)(gsize)buffers[i]);
    unlock();
}

/* Called by the native hooks before they write a record on thread tid
   (ring.ts CONFIG_BEFORE_RECORD): that thread's JavaScript records go
   first, so a native call made from JavaScript nests inside its caller.
   Never waits: with the lock taken (the drain pumping), it leaves them. */
void js_pump_thread(guint32 tid) {
    int ok;
    TRY_LOCK(ok);
    if (!ok) return;
    for (guint32 i = 0; i < MAX_BUFFERS; i++) {
        volatile guint32 *c = (volatile guint32 *)(gsize)buffers[i];
        if (c != NULL && c[C_TID] == tid) js_pump_one(c);
    }
    unlock();
}
`;

interface JsRuntime {
    registry: CModule;
    set: NativeFunction<void, [number, number]>;
    releaseAll: NativeFunction<void, []>;
    publishWatches: NativeFunction<void, []>;
    watches: NativePointer;
    /** The pump, once anything is traced. */
    pump: NativeFunction<void, []> | null;
    pumpModule: CModule | null;
    master: NativePointer;
    funcs: NativePointer;
    buffers: NativePointer;
    state: NativePointer;
    listener: InvocationListener;
}

let rt: JsRuntime | null = null;
/** Probes traced now, by function id. */
const traced = new Map<number, number>();

/** Expression watches: (id, label, source). */
let exprs: Array<[number, string, string]> = [];
/** How many levels deep the runtimes preview values (serializationDepth). */
let previewDepth = 3;
/** The watch ids each function (by id) reads. */
const watchPlans = new Map<number, number[]>();

/** Writes the watches where every runtime reads them (preload.cjs), by
 *  probe, for the functions traced. */
function publishWatches(): void {
    if (rt === null) return;
    const plans: Record<string, number[]> = {};
    for (const [id, ids] of watchPlans) {
        const probe = traced.get(id);
        if (probe !== undefined) plans[probe] = ids;
    }
    const bytes = utf8(JSON.stringify({ exprs, plans, depth: previewDepth }));
    if (bytes.length + 4 > WATCH_BYTES) throw new Error(`the watches take ${bytes.length} bytes, over ${WATCH_BYTES - 4}`);
    rt.watches.add(4).writeByteArray(bytes);
    rt.watches.writeU32(bytes.length);
    rt.publishWatches();
}

/** Is this process Node.js (its main image exports Node's addon API)? */
function isNode(): boolean {
    return Process.mainModule.findExportByName("napi_module_register") !== null;
}

const libc = (name: string) => Module.findGlobalExportByName(name)!;

function createRuntime(): JsRuntime {
    // Kept referenced by the runtime: Frida frees Memory.alloc'd memory
    // once its pointer is collected, and the C side holds the addresses.
    const master = Memory.alloc(BITMAP_WORDS * 4);
    const funcs = Memory.alloc(MAX_PROBES * 4);
    const buffers = Memory.alloc(MAX_BUFFERS * 8);
    const state = Memory.alloc(64);
    const watches = Memory.alloc(WATCH_BYTES);
    const registry = new CModule(REGISTRY_C, {
        master, funcs, buffers, state, watches, gettid: libc("gettid"), sched_yield: libc("sched_yield"),
    });
    return {
        registry,
        set: new NativeFunction(registry.js_set, "void", ["uint32", "uint32"]),
        releaseAll: new NativeFunction(registry.js_release_all, "void", []),
        publishWatches: new NativeFunction(registry.js_publish_watches, "void", []),
        watches,
        pump: null,
        pumpModule: null,
        master, funcs, buffers, state,
        listener: Interceptor.attach(libc("write"), { onEnter: registry.on_write }),
    };
}

/** The pump, made on first use: it is the one user of the shared ring. */
function startPumping(r: JsRuntime): void {
    if (r.pump !== null) return;
    const shared = sharedRing();
    const module = new CModule(PUMP_C, {
        ring: shared.ring, drops: shared.drops, config: shared.config,
        master: r.master, funcs: r.funcs, buffers: r.buffers, state: r.state, watches: r.watches,
        getpid: libc("getpid"), clock_gettime: libc("clock_gettime"), sched_yield: libc("sched_yield"),
        usleep: libc("usleep"),
    });
    const one = module.js_pump_one;
    r.state.add(8).writePointer(one);
    r.pumpModule = module;
    const pump = new NativeFunction(module.js_pump, "void", []);
    r.pump = pump;
    addPump(() => pump());
    shared.config.add(CONFIG_BEFORE_RECORD * 8).writePointer(module.js_pump_thread);
}

function answer(req: HookRequest, started: number, installed: number[], failed: Array<[number, string]>): void {
    send_({ type: "hooks_updated", id: req.id, installed, failed, activeCount: traced.size, ms: Date.now() - started });
}

function install(req: HookRequest): void {
    const started = Date.now();
    const targets = req.functions as JsTarget[];
    const r = rt;
    if (r === null) {
        answer(req, started, [], targets.map(([id]) => [id, "this process is not Node.js"]));
        return;
    }
    const failed: Array<[number, string]> = [];
    const valid = targets.filter(([id, probe]) => {
        const ok = Number.isInteger(probe) && probe >= 0 && probe < MAX_PROBES;
        if (!ok) failed.push([id, `probe index ${probe} is out of range`]);
        return ok;
    });
    // An attached program compiled its functions before the probes
    // existed, and a launched one may have loaded a package before a
    // pattern named it: those scripts get their probed copies first.
    const late = nodeRuntimeAttached() ? valid : valid.filter(([, , probedLate]) => probedLate === true);
    if (late.length === 0) {
        enable(req, started, r, valid, failed);
        return;
    }
    const probes = [...new Set(late.map(([, probe]) => probe))];
    probeLive(probes, r.buffers, MAX_BUFFERS, nodeRuntimeMissing(), notLive => {
        const why = new Map(notLive);
        const live = valid.filter(([id, probe]) => {
            const w = why.get(probe);
            if (w !== undefined) failed.push([id, w]);
            return w === undefined;
        });
        enable(req, started, r, live, failed);
    });
}

/** Turns on the probes of `targets` (valid), answering for them and for
 *  those that `failed` already. */
function enable(req: HookRequest, started: number, r: JsRuntime, targets: JsTarget[], failed: Array<[number, string]>): void {
    const installed: number[] = [];
    for (const [id, probe] of targets) {
        startPumping(r);
        r.funcs.add(probe * 4).writeU32(id);
        traced.set(id, probe);
        installed.push(id);
    }
    // The watches these functions read (their plans came first), and the
    // preview depth, are in every runtime before the first call is recorded.
    const depthChanged = req.depth !== undefined && req.depth !== previewDepth;
    if (req.depth !== undefined) previewDepth = req.depth;
    if (depthChanged || installed.some(id => watchPlans.has(id))) publishWatches();
    for (const id of installed) r.set(traced.get(id)!, 1);
    noteTracedIds(installed);
    answer(req, started, installed, failed);
}

function remove(req: HookRequest): void {
    const started = Date.now();
    for (const id of req.functions as number[]) {
        const probe = traced.get(id);
        if (probe === undefined || rt === null) continue;
        // The probe keeps its function id: records already made still name it.
        rt.set(probe, 0);
        traced.delete(id);
    }
    answer(req, started, [], []);
}

/** Calls of a Node.js program's JavaScript functions. */
export const javascriptTracer: Tracer = {
    name: "javascript",
    start() {
        if (isNode()) rt = createRuntime();
    },
    install,
    remove,
    sync(req) {
        if (req.type === "exprs") {
            const errors: Array<[string, string]> = [];
            exprs = [];
            for (const [id, label, source] of req.exprs) {
                // The syntax is checked here (Frida's engine parses the same
                // language); Node compiles it with the function's names.
                try {
                    new Function("return (" + source + "\n);");
                    exprs.push([id, label, source]);
                } catch (e) {
                    errors.push([label, String((e as Error).message ?? e)]);
                }
            }
            publishWatches();
            send_({ type: "exprs_updated", id: req.id, errors });
            return;
        }
        // By function id: a plan may come before its function is traced.
        for (const [id, ids] of req.plans) {
            const list: number[] = [];
            for (let i = 0; ids !== null && i + 1 < ids.length; i += 2) list.push(ids[i] | (ids[i + 1] << 8));
            if (list.length > 0) watchPlans.set(id, list);
            else watchPlans.delete(id);
        }
        publishWatches();
        send_({ type: "plans_updated", id: req.id, count: req.plans.length });
    },
    // Its records reach the shared ring through the pump, run by the native
    // drain before it ships.
    drain: () => { /* see above */ },
    ack: () => { /* acknowledgements go to the native tracer */ },
    handlesDebug: () => rt !== null,
    loadRuntime(req) {
        const r = rt;
        if (r === null) {
            send_({ type: "runtime_loaded", id: req.id, how: null, error: "this process is not Node.js" });
            return;
        }
        loadNodeRuntime(req.dir, () => r.state.add(16).readU32(),
            (how, error) => send_({ type: "runtime_loaded", id: req.id, how, error }));
    },
    debug(req) {
        if (rt !== null) debugJavaScript(req, rt.buffers, MAX_BUFFERS, rt.state, nodeRuntimeMissing());
    },
    detach() {
        if (rt === null) return;
        releaseJavaScriptDebugger();
        forgetNodeRuntimeLoading();
        if (rt.pump !== null) sharedRing().config.add(CONFIG_BEFORE_RECORD * 8).writePointer(NULL);
        rt.pump?.();
        rt.releaseAll();
        rt.listener.detach();
        // The pump's address goes with its module.
        rt.state.add(8).writePointer(NULL);
    },
};
