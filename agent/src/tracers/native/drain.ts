// Shipping the ring: a 2 ms timer (started with the runtime) sends committed
// records in chunks as `trace` messages, with flow control by the daemon's
// acks, and now and then the per-function drop counts and sampling changes.
import { send_ } from "../../protocol.js";
import { runPumps, tracedIds } from "../ring.js";
import { everHookedIds, hookedIds } from "./install.js";
import { CHUNK_RECORDS, MAX_FUNCTIONS, RECORD_SIZE, RING_RECORDS } from "./layout.js";
import { existingRuntime, onRuntimeCreated } from "./runtime.js";

/** Drops reported so far, per function (the CModule's counts are totals). */
const reportedDrops = new Map<number, number>();

/** Drops per function since the last report, if any. */
function dropDeltas(drops: NativePointer): Record<string, number> | undefined {
    let out: Record<string, number> | undefined;
    for (const funcId of [...everHookedIds(), ...tracedIds()]) {
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
    for (const funcId of hookedIds()) {
        const every = fstate.add((funcId % MAX_FUNCTIONS) * 64 + 16).readU64().toNumber();
        const shown = every > 1 ? every : 0;
        if ((reportedSampling.get(funcId) ?? 0) !== shown) {
            reportedSampling.set(funcId, shown);
            changes.push([funcId, shown]);
        }
    }
    if (changes.length > 0) send_({ type: "sampling", changes });
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
    const rt = existingRuntime();
    if (rt === null) return;
    runPumps();
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
        send_({ type: "trace", count: n }, start.readByteArray(n * RECORD_SIZE)!);
        unacked++;
        release(n);
    }
    if (!full && ++drains % 50 !== 0) return;
    const d = dropDeltas(drops);
    if (d !== undefined) send_({ type: "trace_drops", drops: d });
    reportSampling(rt.fstate);
}

let timer: ReturnType<typeof setInterval> | null = null;

// Thread names are read by the daemon from /proc: enumerating threads from
// here suspends them, and doing it periodically stalled traced programs.
function startDraining(): void {
    if (timer !== null) return;
    let ticks = 0;
    existingRuntime()?.anchorClock();
    timer = setInterval(() => {
        // The records' clock: anchored every 50 ms (clock.ts).
        if (++ticks % 25 === 0) existingRuntime()?.anchorClock();
        drain();
    }, 2);
}

onRuntimeCreated(startDraining);
