//! Typed arguments, return values and watches of traced calls.
//!
//! The agent's hook knows nothing about types. For each hooked function the
//! daemon compiles the DWARF signature into a *capture plan*: a short list of
//! memory reads ("follow the pointer in rdi, copy 40 bytes; follow the
//! pointer at offset 0 of that block, read a C string"), which the agent's
//! native code executes per call, copying the argument registers and the
//! blocks into the trace record. All interpretation (System V x86-64 ABI
//! classification, integer widths, enums, bitfields, strings, cycles) happens
//! here, in the daemon, when records are decoded.
//!
//! Wire format of a plan (little-endian), read by the agent's native tracer
//! (agent/src/tracers/native/cmodule.ts):
//! `u16 enter nodes, u16 exit nodes, u16 stack bytes, u16 plan id` then
//! 24-byte nodes `u8 src, u8 flags, u16 parent, u32 size, u64 arg, i64 addend`.
//! Payload of an enter record: `u32 plan id, u32 length, 6 × u64 integer
//! argument registers, 8 × u64 low halves of xmm0–7, stack bytes (from rsp+8),
//! blocks`; of an exit record: `u32 plan id, u32 length, rax, rdx, xmm0,
//! xmm1, blocks`. A block is `u64 address, u32 length, u32 status` + data
//! padded to 8 bytes, one per node in plan order.
//!
//! Pure: no I/O, no processes, no Frida. Modules by job: `wire` (what the
//! agent reads), `abi` (System V classification), `place` (where a value's
//! bytes are), `plan` (building), `stored` (the stored form), `decode`
//! (payload → JSON), `memory` (debug_memory's values), `varpath`
//! (variable paths such as `a->items[2].name`).

mod abi;
mod decode;
mod memory;
mod place;
mod plan;
pub mod python;
mod stored;
#[cfg(test)]
mod tests;
pub mod varpath;
mod wire;

pub use decode::text;
pub use memory::{encode_scalar, hint_size, render_hint, render_memory, type_name};
pub use plan::{FunctionPlan, WatchSpec, WatchType};
pub use stored::StoredPlan;
pub use wire::{
    ARG_NODES_MAX, ARRAY_MAX, BLOCK_MAX, FLAG_CSTRING, FLAG_LEN_NEXT, NO_PARENT, Node, SRC_ABS,
    SRC_FIELD, SRC_GP, SRC_RET, SRC_STACK, STACK_MAX, STRING_MAX,
};
