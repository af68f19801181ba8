//! What the agent needs to hook one function: the stack bytes its hook
//! copies, the code bytes it may overwrite, and its capture plan (typed
//! signature and watches), or light mode without one.

use super::{Decoder, Tracer};
use std::sync::Arc;
use strobe_symbols::{Signature, TypeTable};
use strobe_values::{FunctionPlan, WatchSpec};

/// Functions hooked in one change above this count are traced in light mode
/// (name, timing, raw first argument and return register; no typed values).
pub const LIGHT_MODE_ABOVE: usize = 5000;

/// Stack bytes the hook copies for a function whose signature is unknown:
/// 32 argument slots.
pub const STACK_COPY_UNKNOWN: u32 = 256;

/// Most stack bytes the hook copies per call.
const STACK_COPY_MAX: u64 = 64 * 1024;

impl Tracer {
    /// Marks functions to trace in light mode (no typed values).
    pub fn set_light(&mut self, ids: &[u32]) {
        self.light.extend(ids.iter().copied());
    }

    /// Functions traced in light mode.
    pub fn light_count(&self) -> usize {
        self.light
            .iter()
            .filter(|id| self.hooked.contains(id))
            .count()
    }

    /// Bytes of code from function `id`'s entry to the end of the address
    /// range that holds it (0 when unknown): the agent checks that no jump
    /// lands inside the bytes it overwrites.
    pub fn entry_extent(&self, id: u32) -> u64 {
        let Some(&(m, f)) = self.slot(id).and_then(|i| self.by_id.get(i)) else {
            return 0;
        };
        let Some(func) = self.modules[m].native().map(|i| &i.functions[f]) else {
            return 0;
        };
        func.ranges
            .iter()
            .find(|(lo, hi)| (*lo..*hi).contains(&func.entry_offset))
            .map_or(0, |(_, hi)| hi - func.entry_offset)
    }

    /// How many bytes of the caller's stack the agent's hook copies for a
    /// call of function `id` (see agent/src/tracers/native/hook.ts): an upper
    /// bound of the bytes its arguments can occupy on the stack under any
    /// x86-64 calling convention (System V for C/C++, Rust's own), because
    /// copying too little would corrupt the call. Unknown, specialized
    /// (`.isra`, `.constprop`) and variadic signatures get a generous window.
    /// `None`: the arguments may take more than 64 KiB of stack, which the
    /// hook does not copy (such a function is not hooked).
    pub fn stack_copy_bytes(&mut self, id: u32) -> Option<u32> {
        if self.light.contains(&id) {
            return Some(STACK_COPY_UNKNOWN);
        }
        let Some(Some(sig)) = self.declared_signature(id) else {
            return Some(STACK_COPY_UNKNOWN);
        };
        let m = self.by_id[self.slot(id).expect("an id of this tracer")].0;
        let Some(info) = self.debug_info(m) else {
            return Some(STACK_COPY_UNKNOWN);
        };
        let types = info.types();
        let mut bound = 0u64;
        for (_, ty) in &sig.params {
            let Some(size) = types.size_of(*ty) else {
                return Some(STACK_COPY_UNKNOWN);
            };
            // Every argument on the stack, each in 8-byte slots, 16-byte
            // aligned ones possibly after a padding slot.
            bound += size.div_ceil(8) * 8 + if size >= 16 { 8 } else { 0 };
        }
        if sig.variadic {
            bound += u64::from(STACK_COPY_UNKNOWN);
        }
        let bytes = bound.div_ceil(16) * 16;
        (bytes <= STACK_COPY_MAX).then_some(bytes as u32)
    }

    /// The signature function `id` was declared with: `None` when it has no
    /// DWARF entry, or is a compiler-specialized clone (`.isra`, `.constprop`,
    /// `.part`) that does not follow its declaration; `Some(None)` when the
    /// entry could not be read. Read once per function.
    fn declared_signature(&mut self, id: u32) -> Option<Option<Signature>> {
        let (m, f) = *self.by_id.get(self.slot(id)?)?;
        let func = &self.modules[m].native()?.functions[f];
        let specialized = func.name_raw.as_deref().is_some_and(|n| {
            n.contains(".isra") || n.contains(".constprop") || n.contains(".part")
        });
        let die = func.die.filter(|_| !specialized)?;
        if let Some(sig) = self.signatures.get(&id) {
            return Some(sig.clone());
        }
        let sig = self.debug_info(m).and_then(|i| i.signature(die).ok());
        self.signatures.insert(id, sig.clone());
        Some(sig)
    }

    /// Builds the capture plan of a function (its typed signature and the
    /// watches that apply to it); `None` for light-mode functions and code
    /// without DWARF, which are traced by name and timing only.
    pub fn decoder_for(&mut self, id: u32) -> Option<Arc<Decoder>> {
        if self.light.contains(&id) {
            return None;
        }
        let (m, f) = *self.by_id.get(self.slot(id)?)?;
        let func = self.modules[m].function(f)?;
        let watches: Vec<WatchSpec> = self
            .watches
            .iter()
            .filter(|w| w.read_in(func.name, func.file, &self.project_root))
            .map(|w| w.spec.clone())
            .collect();
        let depth = self.depth;
        // Plan ids wrap within 1..0xFFFF: 0xFFFF in a payload's first word
        // marks a Python payload (strobe_values::python::PY_PAYLOAD_MARK).
        let next = self
            .plan_ids
            .get(&id)
            .map_or(1, |p| if *p >= 0xFFFE { 1 } else { p + 1 });
        // Without a usable declaration (no DWARF, a specialized clone) only
        // watches are read.
        let (sig, types, module) = match self.declared_signature(id) {
            Some(sig) => (sig?, self.types_snapshot(m)?, Some(m as u32)),
            None if !watches.is_empty() => {
                (Default::default(), Arc::new(TypeTable::default()), None)
            }
            None => return None,
        };
        self.plan_ids.insert(id, next);
        Some(Arc::new(Decoder {
            plan: FunctionPlan::build(next, &sig, &types, depth, &watches),
            types,
            module,
        }))
    }

    /// Hooked functions that are not in light mode (their plans change with watches).
    pub fn planned_functions(&self) -> Vec<u32> {
        self.hooked
            .iter()
            .copied()
            .filter(|id| !self.light.contains(id))
            .collect()
    }
}
