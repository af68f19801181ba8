//! The plan's wire form, as the agent's native hook reads it: node sources
//! and flags, read limits, block statuses, and [`FunctionPlan::wire`].

use crate::plan::*;
use serde::{Deserialize, Serialize};

/// Node source: an integer argument register (arg = 0..5 for rdi..r9).
pub const SRC_GP: u8 = 0;
/// Node source: the pointer stored at rsp+8+arg at entry.
pub const SRC_STACK: u8 = 1;
/// Node source: the pointer stored at offset `arg` of the parent's block.
pub const SRC_FIELD: u8 = 2;
/// Node source: the return register (arg 0 = rax, 1 = rdx).
pub const SRC_RET: u8 = 3;
/// Node source: an absolute address (`arg`); the block is read there.
pub const SRC_ABS: u8 = 4;
/// Read a NUL-terminated string of at most `size` bytes.
pub const FLAG_CSTRING: u8 = 1;
/// The byte count is the u64 right after the pointer (Rust `&str`), capped at `size`.
pub const FLAG_LEN_NEXT: u8 = 2;
/// No parent.
pub const NO_PARENT: u16 = 0xffff;

/// Strings are cut at this many bytes.
pub const STRING_MAX: u32 = 1024;
/// Arrays show at most this many elements.
pub const ARRAY_MAX: u64 = 100;
/// Largest block one node copies.
pub const BLOCK_MAX: u64 = 4096;
/// Stack bytes captured for arguments passed in memory.
pub const STACK_MAX: u64 = 512;
/// Nodes per function for arguments (watches add theirs on top).
pub const ARG_NODES_MAX: usize = 64;
/// Bytes of the fixed enter part: 6 GP + 8 SSE registers.
pub(crate) const ENTER_REGS: usize = 14 * 8;
/// Bytes of the fixed exit part: rax, rdx, xmm0, xmm1.
pub(crate) const EXIT_REGS: usize = 4 * 8;

/// Block status written by the agent.
pub(crate) const ST_OK: u32 = 0;
pub(crate) const ST_NULL: u32 = 1;
pub(crate) const ST_UNREADABLE: u32 = 2;
pub(crate) const ST_NO_PARENT: u32 = 3;
pub(crate) const ST_CUT: u32 = 5;

/// One memory read of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// Where the address comes from (`SRC_*`).
    pub src: u8,
    /// `FLAG_*`.
    pub flags: u8,
    /// Parent node for `SRC_FIELD`.
    pub parent: u16,
    /// Bytes to copy (the cap for strings).
    pub size: u32,
    /// Register index, stack offset, field offset or absolute address.
    pub arg: u64,
    /// Added to the address before reading (`a->b.c` reads at `a + offset`).
    pub addend: i64,
}

impl FunctionPlan {
    /// The plan as the agent reads it.
    /// Header: u16 enter nodes, exit nodes, stack bytes, plan id, expression
    /// watches, 3 × u16 padding; then the nodes (24 bytes each); then the
    /// expression watch ids (u16 each).
    pub fn wire(&self) -> Vec<u8> {
        let mut w = Vec::with_capacity(16 + 24 * (self.enter.len() + self.exit.len()));
        w.extend_from_slice(&(self.enter.len() as u16).to_le_bytes());
        w.extend_from_slice(&(self.exit.len() as u16).to_le_bytes());
        w.extend_from_slice(&(self.stack_bytes as u16).to_le_bytes());
        w.extend_from_slice(&self.id.to_le_bytes());
        w.extend_from_slice(&(self.exprs.len() as u16).to_le_bytes());
        w.extend_from_slice(&[0; 6]);
        for n in self.enter.iter().chain(&self.exit) {
            w.push(n.src);
            w.push(n.flags);
            w.extend_from_slice(&n.parent.to_le_bytes());
            w.extend_from_slice(&n.size.to_le_bytes());
            w.extend_from_slice(&n.arg.to_le_bytes());
            w.extend_from_slice(&n.addend.to_le_bytes());
        }
        for (_, id) in &self.exprs {
            w.extend_from_slice(&id.to_le_bytes());
        }
        w
    }
}
