// Installing and removing the native tracer's hooks: each traced function's
// entry is redirected to a nearby stub that loads its FuncState and jumps to
// the shared hook (hook.ts).
import { NEAR_REACH, nearAlloc, within } from "../../native/memory.js";
import { isGuarded, writePatches } from "../../native/patch.js";
import { redirect, unredirect } from "../../native/redirect.js";
import { send_ } from "../../protocol.js";
import { HookRequest } from "../tracer.js";
import { FSTATE_COPY, FSTATE_ID, FSTATE_SIZE, FSTATE_TRAMPOLINE, MAX_FUNCTIONS, WINDOW_NS } from "./layout.js";
import { hasPlan, pruneRetiredPlans, setPlan } from "./plans.js";
import { runtime } from "./runtime.js";

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

/** Functions currently redirected to the hook: id → address. */
const replaced = new Map<number, NativePointer>();
/** The same, by address (aliases share one). */
const redirectedAt = new Map<string, number>();
/** Every function ever hooked: drops of unhooked ones are still reported. */
const everHooked = new Set<number>();

/** Ids of the functions hooked now. */
export function hookedIds(): IterableIterator<number> {
    return replaced.keys();
}

/** Ids of every function hooked since the agent loaded. */
export function everHookedIds(): ReadonlySet<number> {
    return everHooked;
}

/** A function to hook: id, entry offset in its module, its capture plan
 *  (bytes, see crates/strobe-values/src/wire.rs; null: name and timing
 *  only), how many bytes of stack arguments a call passes at most, and
 *  the bytes of code from the entry to the end of its range (0: unknown). */
type HookTarget = [number, number, number[] | null, number, number];

let watchLibraries = false;
/** Until the daemon says (`trace.libraryWaitMs`): its default. */
let libraryWait = 10_000;

/** True while patterns are active: a newly loaded library waits for hooks. */
export function watchingLibraries(): boolean {
    return watchLibraries;
}

/** How long (ms) a thread loading a library waits for its hooks at most. */
export function libraryWaitMs(): number {
    return libraryWait;
}

function moduleBase(path: string | undefined): NativePointer | null {
    if (path === undefined) return Process.mainModule.base;
    for (const m of Process.enumerateModules()) {
        if (m.path === path) return m.base;
    }
    return null;
}

/** Runs one hooks request's `change` and answers with what happened to each
 *  function. */
function updateHooks(req: HookRequest, change: (installed: number[], failed: Array<[number, string]>) => void): void {
    const started = Date.now();
    if (req.watchLibraries !== undefined) watchLibraries = req.watchLibraries;
    if (req.libraryWaitMs !== undefined) libraryWait = req.libraryWaitMs;
    pruneRetiredPlans();
    const installed: number[] = [];
    const failed: Array<[number, string]> = [];
    change(installed, failed);
    send_({ type: "hooks_updated", id: req.id, installed, failed, activeCount: replaced.size, ms: Date.now() - started });
}

/** Hooks the request's functions (HookTarget entries). */
export function installHooks(req: HookRequest): void {
    updateHooks(req, (installed, failed) => {
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
    });
}

/** Unhooks the request's functions (ids). */
export function removeHooks(req: HookRequest): void {
    updateHooks(req, () => {
        for (const funcId of req.functions as number[]) {
            const target = replaced.get(funcId);
            if (target !== undefined) {
                unredirect(target);
                redirectedAt.delete(target.toString());
            }
            replaced.delete(funcId);
            if (hasPlan(funcId)) setPlan(funcId, null);
        }
        writePatches();
        Interceptor.flush();
    });
}
