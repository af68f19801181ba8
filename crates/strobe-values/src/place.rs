//! Where a value's bytes live, the same when planning and when decoding.

use crate::wire::*;
use serde::{Deserialize, Serialize};

/// Where the bytes of a value live; decides which node dereferences each
/// pointer inside it, identically when planning and when decoding.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Origin {
    /// Passed in registers: per eightbyte, the GP register it came in.
    Regs {
        gp: [Option<u8>; 2],
        ret: bool,
        base: u64,
    },
    /// In the captured stack bytes at this offset.
    Stack(u64),
    /// In a node's block at this offset.
    Block(u16, u64),
    /// Nowhere a node can follow (e.g. an SSE register).
    Nowhere,
    /// Read from the target's memory at this address (debug_memory,
    /// watches): nothing to follow, but the address is known.
    Mem(u64),
}

impl Origin {
    pub(crate) fn shift(self, off: u64) -> Origin {
        match self {
            Origin::Regs { gp, ret, base } => Origin::Regs {
                gp,
                ret,
                base: base + off,
            },
            Origin::Stack(b) => Origin::Stack(b + off),
            Origin::Block(n, b) => Origin::Block(n, b + off),
            Origin::Nowhere => Origin::Nowhere,
            Origin::Mem(a) => Origin::Mem(a + off),
        }
    }

    /// The (parent, src, arg) key of a node reading through a pointer stored here.
    pub(crate) fn key(self) -> Option<(u16, u8, u64)> {
        match self {
            Origin::Regs { gp, ret, base } => {
                if base % 8 != 0 || base >= 16 {
                    return None;
                }
                let r = gp[(base / 8) as usize]?;
                Some(if ret {
                    (NO_PARENT, SRC_RET, r as u64)
                } else {
                    (NO_PARENT, SRC_GP, r as u64)
                })
            }
            Origin::Stack(b) => Some((NO_PARENT, SRC_STACK, b)),
            Origin::Block(n, b) => Some((n, SRC_FIELD, b)),
            Origin::Nowhere | Origin::Mem(_) => None,
        }
    }
}

/// Where a render is inside the value it was asked for: the pointers it
/// followed (to mark cycles) and the path of names to here
/// (`store.spare`), which a value cut at the depth limit quotes so that the
/// agent can ask for just the part it needs.
pub(crate) struct Trail {
    pub(crate) addrs: Vec<u64>,
    pub(crate) names: String,
    /// The next struct was reached through a pointer (`->`).
    pub(crate) arrow: bool,
    /// The depth the whole value is rendered to.
    pub(crate) depth: u32,
}

impl Trail {
    pub(crate) fn new(name: &str, depth: u32) -> Trail {
        Trail {
            addrs: Vec::new(),
            names: name.to_string(),
            arrow: false,
            depth,
        }
    }

    pub(crate) fn at(mut self, addr: u64) -> Trail {
        self.addrs.push(addr);
        self
    }
}

/// Where a parameter or the return value is, per the System V x86-64 ABI.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) enum Loc {
    /// In registers: per eightbyte, (is SSE, register index).
    Regs([Option<(bool, u8)>; 2]),
    /// In the captured stack bytes at this offset.
    Stack(u64),
    /// Passed by invisible reference (pointer in this GP register).
    ByRef(u8),
    /// Returned in memory: rax points at it on exit.
    RetMemory,
    /// Nothing to show (empty struct, void) or not captured.
    None,
    /// A constant the compiler propagated into the function (DWARF).
    Const(i64),
    /// Not available at entry (DWARF: removed by the optimizer).
    OptimizedOut,
}

pub(crate) fn regs_origin(regs: [Option<(bool, u8)>; 2], ret: bool) -> Origin {
    let gp = regs.map(|r| r.and_then(|(sse, i)| (!sse).then_some(i)));
    Origin::Regs { gp, ret, base: 0 }
}
