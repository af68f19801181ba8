// Sizes and layouts the native tracer's parts share: the CModule's limits
// and the FuncState fields the hook's machine code reads (the record ring's
// layout is in ../ring.ts). A function with a capture plan (typed
// arguments, watches; see crates/strobe-values/src/wire.rs) appends its
// captured registers and memory blocks to its records.

// The ring's own sizes are the ring's (../ring.ts), which every tracer shares.
export { CHUNK_RECORDS, FULL_RING_WAIT_NS, MAX_FUNCTIONS, PAYLOAD_MAX, RECORD_SIZE, RING_RECORDS } from "../ring.js";
/** Hot-function sampling: call rates are measured per function over windows
 *  of this length; above the threshold only 1 in N calls is recorded. */
export const WINDOW_NS = 100_000_000;

// FuncState field offsets the hook's machine code reads.
/** Bytes of one function's FuncState. */
export const FSTATE_SIZE = 64;
/** FuncState: the original's trampoline. */
export const FSTATE_TRAMPOLINE = 40;
/** FuncState: bytes of stack arguments the hook copies. */
export const FSTATE_COPY = 48;
/** FuncState: the function id. */
export const FSTATE_ID = 56;
