// The native tracer's runtime: the ring, the per-function tables, the config
// page, the CModule and the hook, built together on the first request that
// needs them.
import { registerAtforkChild } from "../../native/atfork.js";
import { rawAlloc, u64Bytes } from "../../native/memory.js";
import { provideOwnCodeMarkers } from "../../native/own_code.js";
import { allowCounterClock } from "../clock.js";
import { CONFIG_FLUSH_STAGE, provideRing } from "../ring.js";
import { CMODULE_SOURCE } from "./cmodule.js";
import { makeExprCallback } from "./exprs.js";
import { registerUnwindInfo, specificOffset, writeHook } from "./hook.js";
import { FSTATE_SIZE, MAX_FUNCTIONS, RECORD_SIZE, RING_RECORDS } from "./layout.js";
import { OWN_CODE_BUSY, makeOwnThreadQuestion } from "./own_threads.js";
import { sharedAlloc } from "./shared_ring.js";
import { STAGE_AREA_BYTES } from "./stage.js";

/** The tracer's live state (see createRuntime). */
export interface Runtime {
    /** Kept referenced: a collected CModule frees the code the hooks call. */
    module: CModule;
    ring: NativePointer;
    /** The ring's bytes (head and tail, then the slots). */
    ringBytes: number;
    /** The threads' stages (stage.ts), right after the ring in its memory. */
    stages: NativePointer;
    /** The memfd the ring is mapped from, until the daemon answered the
     *  offer (shared_ring.ts); null: private memory, shipped in messages. */
    ringFd: number | null;
    /** Per function (64 bytes): window start, calls in window, record 1 in
     *  `every`, tick, hot, original's trampoline, stack bytes to copy, id. */
    fstate: NativePointer;
    /** [0] calls per window above which a function is sampled, [1] sampling
     *  on, [2] pid, [3] pthread key of the per-thread state, [4] the
     *  expression watch evaluator (a NativeCallback), [5] set in a forked
     *  child: record nothing, [8..15] the clock (clock.ts), [16] what the
     *  hooks call before writing a record (ring.ts CONFIG_BEFORE_RECORD),
     *  [17] flush_stage (ring.ts CONFIG_FLUSH_STAGE), [18] set once the
     *  agent detached (ring.ts CONFIG_HOOKS_OFF). */
    config: NativePointer;
    drops: NativePointer;
    /** Per function: its capture plan, or NULL (name and timing only). */
    plans: NativePointer;
    /** The shared hook every stub jumps to. */
    hook: NativePointer;
    /** Kept referenced: the CModule asks it whether a thread is Frida's. */
    ownThreadQuestion: NativeCallback<"uint32", ["uint32"]>;
    /** Kept referenced: the hooks call it while expression watches exist. */
    exprCallback: NativeCallback<"uint32", ["uint32", "uint32", "pointer", "pointer", "uint32"]>;
    committed: NativeFunction<number, [number]>;
    release: NativeFunction<void, [number]>;
    /** Re-anchors the records' clock (clock.ts); the drain calls it. */
    anchorClock: NativeFunction<void, []>;
    /** Moves every thread's staged records into the ring, without waiting
     *  for room (stage.ts); the drain calls it first. */
    stageSteal: NativeFunction<void, []>;
    /** Records staged and not yet in the ring. */
    stagePending: NativeFunction<number, []>;
}

// Built on the first hook, so sessions that never trace pay nothing
// (no TinyCC compile, no ring allocation) at launch.
let rt: Runtime | null = null;
let onCreated: () => void = () => { /* nothing registered */ };

/** The runtime, created on first use. */
export function runtime(): Runtime {
    if (rt === null) {
        rt = createRuntime();
        onCreated();
    }
    return rt;
}

// The ring every tracer writes into is this runtime's.
provideRing(() => {
    const { ring, drops, config } = runtime();
    return { ring, drops, config };
});

/** The runtime if it was created, without creating it. */
export function existingRuntime(): Runtime | null {
    return rt;
}

/** Runs `fn` once the runtime has been created (the drain's timer starts
 *  then). */
export function onRuntimeCreated(fn: () => void): void {
    onCreated = fn;
}

/** The tracer's config page (read by the CModule, the fork handler and the
 *  fork guard). Raw memory: the fork handler writes it in a child where
 *  Frida's allocations may be gone. Mapped at load so the fork guard can use
 *  it without creating the tracer (sessions that trace nothing pay nothing). */
export const runtimeConfig = rawAlloc(Process.pageSize);

/** Allocates the ring and tables, compiles the CModule and writes the hook. */
function createRuntime(): Runtime {
    const ringBytes = 64 + RING_RECORDS * RECORD_SIZE;
    // Shared with the daemon when the kernel allows (shared_ring.ts); the
    // threads' stages follow the ring (their pages are touched as threads
    // claim them).
    const shared = sharedAlloc(ringBytes + STAGE_AREA_BYTES);
    const ring = shared?.base ?? Memory.alloc(ringBytes + STAGE_AREA_BYTES);
    const stages = ring.add(ringBytes);
    // Touch every page now: first-touch page faults inside traced calls cost
    // more than the record itself (a few µs each in a VM).
    for (let off = 0; off < ringBytes; off += Process.pageSize) ring.add(off).writeU8(0);
    const drops = Memory.alloc(MAX_FUNCTIONS * 8);
    // Read by stubs and the hook while a call is in flight: outlives the script.
    const fstate = rawAlloc(MAX_FUNCTIONS * FSTATE_SIZE);
    // Raw memory, mapped at load (see runtimeConfig).
    const config = runtimeConfig;
    // CModule globals are not writable (its image is mapped read+execute): the
    // process id the hooks need is passed in config[2].
    config.add(16).writeU64(Process.id);
    const plans = Memory.alloc(MAX_FUNCTIONS * 8);
    const ownThreadQuestion = makeOwnThreadQuestion();
    // The state of a thread running Strobe's code that had none
    // (cmodule.ts own_begin): busy for good, no stage, never written.
    const ownState = rawAlloc(Process.pageSize);
    ownState.add(4).writeU32(OWN_CODE_BUSY);
    config.writeU64(10_000);
    config.add(8).writeU64(1);
    allowCounterClock(config);

    const cm = new CModule(CMODULE_SOURCE, {
        ring,
        drops,
        fstate,
        config,
        plans,
        stages,
        own_thread_asked: ownThreadQuestion,
        own_state: ownState,
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
        usleep: Module.findGlobalExportByName("usleep")!,
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

    config.add(CONFIG_FLUSH_STAGE * 8).writePointer(cm.flush_stage);

    // The script's thread never records (a traced sscanf of Frida's, reading
    // the memory map for a breakpoint, was recorded as the program's), and
    // Strobe's code on a program's thread is marked while it runs.
    const ownBegin = new NativeFunction(cm.own_begin, "uint32", []);
    const ownEnd = new NativeFunction(cm.own_end, "void", ["uint32"]);
    ownBegin();
    provideOwnCodeMarkers({ begin: () => ownBegin() as number, end: previous => { ownEnd(previous); } });

    const exprCallback = makeExprCallback();
    config.add(32).writePointer(exprCallback);

    const hook = writeHook(cm.fast_enter, cm.fast_leave, config, plans, specificOffset(key.readU32()));
    registerUnwindInfo();

    return {
        module: cm,
        ring,
        ringBytes,
        stages,
        ringFd: shared?.fd ?? null,
        fstate,
        config,
        drops,
        plans,
        hook,
        ownThreadQuestion,
        exprCallback,
        // Exclusive: a cooperative call lets another thread's drain run in
        // between (the timer's beside an exit's or the fork guard's), and both
        // shipped the same records (seen as a duplicated call before a fork).
        committed: new NativeFunction(cm.committed, "uint32", ["uint32"], { scheduling: "exclusive" }),
        release: new NativeFunction(cm.release, "void", ["uint32"], { scheduling: "exclusive" }),
        anchorClock: new NativeFunction(cm.clock_anchor, "void", [], { scheduling: "exclusive" }),
        stageSteal: new NativeFunction(cm.stage_steal, "void", [], { scheduling: "exclusive" }),
        stagePending: new NativeFunction(cm.stage_pending, "uint32", [], { scheduling: "exclusive" }),
    };
}
