// Sizes and layouts the native tracer's parts share: the ring's records (the
// daemon decodes them), the CModule's limits and the FuncState fields the
// hook's machine code reads.
//
// Record layout (little-endian), decoded by crates/strobe-session/src/trace/records.rs:
//   u64 timestamp (CLOCK_MONOTONIC ns) | u32 function id | u32 thread id
//   u64 value (first argument on enter, return value on exit)
//   u32 kind (1 = enter, 2 = exit, 3 = padding; 0 = slot not yet written)
//   u32 extra slots: a function with a capture plan (typed arguments,
//   watches; see crates/strobe-values/src/wire.rs) appends its captured
//   registers and memory blocks in that many following 32-byte slots.

/** Bytes of one ring slot (a record, or one of its payload's extra slots). */
export const RECORD_SIZE = 32;
/** Slots in the ring (8 MiB). */
export const RING_RECORDS = 1 << 18;
/** Most slots one `trace` message carries. */
export const CHUNK_RECORDS = 4096;
/** Function ids index the per-function tables modulo this. */
export const MAX_FUNCTIONS = 1 << 18;
/** Largest captured payload of one call (registers, stack, memory blocks). */
export const PAYLOAD_MAX = 16384;
/** Hot-function sampling: call rates are measured per function over windows
 *  of this length; above the threshold only 1 in N calls is recorded. */
export const WINDOW_NS = 100_000_000;
/** How long a thread waits for room in a full ring before it drops its record:
 *  slowing the program is better than losing calls, hanging it is not. */
export const FULL_RING_WAIT_NS = 500_000_000;

// FuncState field offsets the hook's machine code reads.
/** Bytes of one function's FuncState. */
export const FSTATE_SIZE = 64;
/** FuncState: the original's trampoline. */
export const FSTATE_TRAMPOLINE = 40;
/** FuncState: bytes of stack arguments the hook copies. */
export const FSTATE_COPY = 48;
/** FuncState: the function id. */
export const FSTATE_ID = 56;
