// Delivering the ring. When its memory is shared (shared_ring.ts) the daemon
// drains it itself, once it accepted the offer this module makes as the
// runtime is created. Otherwise a 2 ms timer (started with the runtime)
// sends committed records in chunks as `trace` messages, with flow control
// by the daemon's acks. Either way the timer runs the pumps, re-anchors the
// clock and now and then reports per-function drop counts and sampling
// changes.
import { receive, send_ } from "../../protocol.js";
import { runPumps, tracedIds } from "../ring.js";
import { everHookedIds, hookedIds } from "./install.js";
import { CHUNK_RECORDS, MAX_FUNCTIONS, RECORD_SIZE, RING_RECORDS } from "./layout.js";
import { existingRuntime, onRuntimeCreated, type Runtime } from "./runtime.js";
import { forkInProgress } from "./forkguard.js";
import { slowHookReason } from "./hook.js";
import { closeRingFd, unshare } from "./shared_ring.js";
import { STAGE_AREA_BYTES, STAGE_RECORDS } from "./stage.js";

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

/** Who takes records out of the ring: this script, in `trace` messages;
 *  nobody yet (offered to the daemon, not answered); the daemon. */
type Delivery = "messages" | "offered" | "shared";
let delivery: Delivery = "messages";
/** The pending offer's answer (a full drain waits for it). */
let offer: MessageRecvOperation | null = null;
/** How long a full drain waits for the daemon to take what is in a shared
 *  ring: an exit, crash or fork is then stored after the records before it. */
const SHARED_FLUSH_MS = 1000;

/** Offers the daemon the ring's shared memory; until it answers nobody
 *  drains (records wait in the ring), then the daemon does or, refused,
 *  this script does again. */
function offerRing(rt: Runtime): void {
    const fd = rt.ringFd;
    if (fd === null) return;
    delivery = "offered";
    offer = receive("ring-attached", m => {
        delivery = m.ok ? "shared" : "messages";
        offer = null;
        closeRingFd(fd);
        rt.ringFd = null;
    });
    send_({
        type: "ring", fd, bytes: rt.ringBytes, stageBytes: STAGE_AREA_BYTES, stageRecords: STAGE_RECORDS,
        slowHook: slowHookReason(),
    });
}

/** Waits (bounded) until the daemon has taken every record reserved so far
 *  out of the shared ring. */
function awaitShared(ring: NativePointer): void {
    const head = ring.readU64();
    const deadline = Date.now() + SHARED_FLUSH_MS;
    while (ring.add(8).readU64().compare(head) < 0 && Date.now() < deadline) Thread.sleep(0.0002);
}

/** At most how many times a full drain moves staged records that found
 *  the ring full and waits for it to empty. */
const FULL_DRAIN_ROUNDS = 20;

/** Sends every committed record to the daemon (a shared ring: waits until
 *  the daemon took them, on a `full` drain); drop counts and sampling
 *  changes are reported every 50th call and on a `full` drain (exit, crash).
 *  The threads' staged records go into the ring first, then the pumps run:
 *  a thread's staged native records are older than its JavaScript records
 *  not yet pumped (a native record pumps them before it is staged). */
export function drain(full = false): void {
    const rt = existingRuntime();
    if (rt === null) return;
    rt.stageSteal();
    runPumps();
    if (full && delivery === "offered" && offer !== null) offer.wait();
    // A full drain also moves what stages still hold because the ring was
    // full, as long as that makes progress (a stage its thread is moving
    // right now cannot be taken).
    let pending = Infinity;
    for (let round = 0; ; round++) {
        if (delivery === "messages") shipRecords(rt, full);
        else if (delivery === "shared" && full) awaitShared(rt.ring);
        if (!full || delivery === "offered" || round >= FULL_DRAIN_ROUNDS) break;
        const left = rt.stagePending() as number;
        if (left === 0 || left >= pending) break;
        pending = left;
        rt.stageSteal();
    }
    if (!full && ++drains % 50 !== 0) return;
    const d = dropDeltas(rt.drops);
    if (d !== undefined) send_({ type: "trace_drops", drops: d });
    reportSampling(rt.fstate);
}

/** Ships committed records in `trace` messages. */
function shipRecords(rt: Runtime, full: boolean): void {
    const { ring, committed, release } = rt;
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
}

/** The agent unloads from a process that runs on: a shared ring's pages
 *  become private ones, so the daemon's mapping is the last holder. */
export function unshareRing(): void {
    const rt = existingRuntime();
    if (rt === null || delivery !== "shared") return;
    unshare(rt.ring, rt.ringBytes + STAGE_AREA_BYTES);
    delivery = "messages";
}

let timer: ReturnType<typeof setInterval> | null = null;

// Thread names are read by the daemon from /proc: enumerating threads from
// here suspends them, and doing it periodically stalled traced programs.
function startDraining(): void {
    if (timer !== null) return;
    let ticks = 0;
    const rt = existingRuntime();
    rt?.anchorClock();
    if (rt !== null) offerRing(rt);
    timer = setInterval(() => {
        // The records' clock: anchored every 50 ms (clock.ts).
        if (++ticks % 25 === 0) existingRuntime()?.anchorClock();
        // The fork guard drained; nothing may be in flight when it forks.
        if (!forkInProgress()) drain();
    }, 2);
}

onRuntimeCreated(startDraining);
