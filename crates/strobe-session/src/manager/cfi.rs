//! One step of a CFI stack walk on x86-64, shared by the crash walk
//! (`crash.rs`) and the pause walk (`breakpoints/pause.rs`): from a frame's
//! registers and its image's unwind rule, the caller's registers.

use super::memory::Mem;
use crate::frames;

/// The caller's frame in a CFI walk: its stack pointer (this frame's CFA),
/// where it resumes, and its frame pointer when this frame saved it.
pub(in crate::manager) struct CallerFrame {
    pub(in crate::manager) cfa: u64,
    pub(in crate::manager) ret: u64,
    pub(in crate::manager) rbp: Option<u64>,
}

impl CallerFrame {
    /// `regs` become the caller's.
    pub(in crate::manager) fn apply(&self, regs: &mut frames::Registers) {
        if let Some(rbp) = self.rbp {
            regs.insert(6, rbp);
        }
        regs.insert(7, self.cfa);
        regs.insert(16, self.ret);
    }
}

/// One step of a CFI walk on x86-64: from a frame's registers and its
/// unwind rule, its caller's (None when memory cannot be read).
pub(in crate::manager) fn caller_frame(
    unwind: &strobe_symbols::Unwind,
    regs: &frames::Registers,
    mem: &Mem,
) -> Option<CallerFrame> {
    let cfa = regs
        .get(&unwind.cfa.register)?
        .wrapping_add(unwind.cfa.offset as u64);
    let ret = mem.read_u64(cfa.wrapping_sub(8)).ok()?;
    let rbp = match unwind.rbp_saved_at {
        Some(o) => Some(mem.read_u64(cfa.wrapping_add(o as u64)).ok()?),
        None => None,
    };
    Some(CallerFrame { cfa, ret, rbp })
}
