//! Function tracing for one session: patterns → functions → hooks in the
//! agent, and the agent's binary trace records → timeline events.
//!
//! `patterns.rs` resolves patterns to functions and hook plans, `hooks.rs`
//! what each hook needs (stack copy, capture plan, light mode),
//! `watches.rs` the watches, `records.rs` the decoder of the agent's records,
//! `sockets.rs` that of its socket records (the program's own network I/O),
//! `shared_ring.rs` the reader's side of a ring mapped from the target.

mod hooks;
mod patterns;
mod records;
mod shared_ring;
mod sockets;
#[cfg(test)]
mod tests;
mod watches;

pub use hooks::{LIGHT_MODE_ABOVE, STACK_COPY_UNKNOWN};
pub use patterns::{BROAD_PATTERN, HookTarget, Plan};
pub use records::{
    BLOB_PLAN, BLOB_TYPES, Decoded, Decoder, Decoders, RECORD_SIZE, decode_records,
    decoders_from_blobs, decoders_to_blobs, defined_functions, thread_names, typed_in, typed_of,
    typed_values,
};
pub use shared_ring::{RingError, SharedRing, Staged};
pub use watches::{
    ActiveWatch, MAX_DEREFS, MAX_WATCHES, Step, Watch, WatchRequest, WatchTarget, chain_spec,
    parse_chain,
};

use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strobe_symbols::{DebugInfo, Pattern, Signature, SymbolResolver, TypeTable};

/// Everything besides patterns that one `debug_trace` call may change.
#[derive(Debug, Clone, Default)]
pub struct TraceOptions {
    /// Hot-function sampling on/off.
    pub sampling: Option<bool>,
    /// Typed serialization depth (1–10).
    pub serialization_depth: Option<u32>,
    /// Watches to add.
    pub watch_add: Vec<WatchRequest>,
    /// Watch labels to remove.
    pub watch_remove: Vec<String>,
    /// Watches that do not resolve become warnings instead of errors (staged
    /// watches applied at launch must not stop a program they do not fit).
    pub lenient_watches: bool,
}

/// Tracing state of one session: the images it resolves against (the
/// executable first, then shared libraries, including ones loaded later with
/// dlopen), the active patterns, and which functions are hooked.
pub struct Tracer {
    pub(crate) modules: Vec<Arc<dyn SymbolResolver>>,
    pub(crate) project_root: PathBuf,
    patterns: Vec<Pattern>,
    /// (module index, function index) → function id.
    ids: HashMap<(usize, usize), u32>,
    /// function id → (module index, function index).
    by_id: Vec<(usize, usize)>,
    /// Added to every id this tracer hands out: each process of a session
    /// has its own tracer, and their ids share the session's function table.
    id_base: u32,
    hooked: BTreeSet<u32>,
    failed: HashMap<u32, String>,
    /// Patterns (by text) that matched Python functions: Python patterns,
    /// which no native library loaded later can need.
    python_matched: BTreeSet<String>,
    /// Hot-function sampling allowed (debug_trace `sampling`).
    pub sampling: bool,
    /// Depth of typed argument serialization (1–10).
    pub depth: u32,
    /// Opened DWARF per module index (`None`: the image has none, or its
    /// resolver is not native).
    debug: HashMap<usize, Option<DebugInfo>>,
    /// Unwind tables by image path (read for crashes; any image, indexed or not).
    pub(crate) frame_tables: HashMap<PathBuf, strobe_symbols::FrameTable>,
    /// Latest shared copy of each module's type table (see `types_snapshot`).
    snapshots: HashMap<usize, Arc<TypeTable>>,
    /// Current plan id per function.
    plan_ids: HashMap<u32, u16>,
    /// Active watches.
    watches: Vec<Watch>,
    /// Functions traced in light mode (no typed values).
    light: BTreeSet<u32>,
    /// Declared signatures read so far, by function id (hooking reads each
    /// twice: for the stack bytes to copy and for the capture plan).
    signatures: HashMap<u32, Option<Signature>>,
    /// Id of the next expression watch (ids are never reused in a session,
    /// so a record names the expression it was evaluated with).
    next_expr: u16,
    /// Per image, entry offsets never hooked (`hookable::hook_path_offsets`).
    never_hooked: HashMap<usize, Arc<std::collections::HashSet<u64>>>,
}

/// What the agent reports about running hooks. Kept apart from [`Tracer`]
/// (under its own lock) because the session's event thread updates it and
/// must never wait for the tracer, which may be held by a debug_trace call
/// that is itself waiting for the event thread to deliver the agent's answer.
#[derive(Debug, Default)]
pub struct TraceStats {
    drops: HashMap<u32, u64>,
    sampled: HashMap<u32, u64>,
    late_libraries: Vec<LateLibrary>,
}

impl TraceStats {
    /// Adds per-function drop counts; returns the total added.
    pub fn add_drops(&mut self, deltas: &HashMap<u32, u64>) -> u64 {
        let mut total = 0;
        for (id, n) in deltas {
            *self.drops.entry(*id).or_default() += n;
            total += n;
        }
        total
    }

    /// A library whose loading thread stopped waiting for its hooks.
    pub fn add_late_library(&mut self, path: String, waited_ms: u64) {
        self.late_libraries.push(LateLibrary { path, waited_ms });
    }

    /// The libraries whose hooks came after their load went on.
    pub fn late_libraries(&self) -> &[LateLibrary] {
        &self.late_libraries
    }

    /// Applies sampling changes: (id, 1 in N; 0 = every call).
    pub fn set_sampling(&mut self, changes: &[(u32, u64)]) {
        for (id, every) in changes {
            if *every > 1 {
                self.sampled.insert(*id, *every);
            } else {
                self.sampled.remove(id);
            }
        }
    }
}

impl Tracer {
    /// A tracer resolving against `modules` (the executable's resolvers
    /// first), as [`strobe_symbols::resolvers::open`] gives them.
    pub fn new(modules: Vec<Arc<dyn SymbolResolver>>, project_root: &Path) -> Self {
        Self {
            modules,
            project_root: project_root.to_path_buf(),
            patterns: Vec::new(),
            ids: HashMap::new(),
            by_id: Vec::new(),
            id_base: 0,
            hooked: BTreeSet::new(),
            failed: HashMap::new(),
            python_matched: BTreeSet::new(),
            sampling: true,
            depth: 3,
            debug: HashMap::new(),
            frame_tables: HashMap::new(),
            snapshots: HashMap::new(),
            plan_ids: HashMap::new(),
            watches: Vec::new(),
            light: BTreeSet::new(),
            signatures: HashMap::new(),
            next_expr: 1,
            never_hooked: HashMap::new(),
        }
    }

    /// Makes this tracer's ids start above `base` (see `id_base`).
    pub fn with_id_base(mut self, base: u32) -> Self {
        self.id_base = base;
        self
    }

    /// Index into `by_id` of one of this tracer's ids.
    fn slot(&self, id: u32) -> Option<usize> {
        Some(id.checked_sub(self.id_base)?.checked_sub(1)? as usize)
    }

    /// Named (function, count) pairs from an id → count map, largest first.
    fn named(&self, counts: &HashMap<u32, u64>) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = counts
            .iter()
            .map(|(id, n)| (self.name_of(*id).unwrap_or("?").to_string(), *n))
            .collect();
        v.sort_by_key(|e| std::cmp::Reverse(e.1));
        v
    }

    /// Functions being sampled now, most sampled first.
    pub fn sampled(&self, stats: &TraceStats) -> Vec<SampledFunction> {
        self.named(&stats.sampled)
            .into_iter()
            .map(|(function, one_in)| SampledFunction { function, one_in })
            .collect()
    }

    /// Functions that lost events, most first.
    pub fn drops(&self, stats: &TraceStats) -> Vec<FunctionDrops> {
        self.named(&stats.drops)
            .into_iter()
            .map(|(function, dropped)| FunctionDrops { function, dropped })
            .collect()
    }

    /// Active patterns, as written.
    pub fn patterns(&self) -> Vec<String> {
        self.patterns.iter().map(Pattern::text).collect()
    }

    /// Currently hooked functions.
    pub fn hooked_count(&self) -> usize {
        self.hooked.len()
    }

    /// True when `path` is one of the images already known.
    pub fn has_module(&self, path: &Path) -> bool {
        self.modules.iter().any(|m| m.path() == path)
    }

    /// Adds a resolver of an image without planning hooks (the next
    /// [`Tracer::plan`] covers it).
    pub fn push_module(&mut self, module: Arc<dyn SymbolResolver>) {
        self.modules.push(module);
    }

    /// Records what the agent installed and what failed.
    pub fn applied(&mut self, installed: &[u32], failed: &[(u32, String)], removed: &[u32]) {
        for id in removed {
            self.hooked.remove(id);
        }
        self.hooked.extend(installed.iter().copied());
        for (id, why) in failed {
            self.failed.insert(*id, why.clone());
        }
    }

    /// A function id's name, file and line.
    pub fn info_of(&self, id: u32) -> Option<strobe_symbols::FunctionInfo<'_>> {
        let (m, f) = *self.by_id.get(self.slot(id)?)?;
        self.modules[m].function(f)
    }

    /// Whether any resolver of this tracer covers `language`.
    pub fn has_language(&self, language: strobe_symbols::Language) -> bool {
        self.modules.iter().any(|m| m.language() == language)
    }

    /// The code a function id is ([`SymbolResolver::language`]).
    pub fn language_of(&self, id: u32) -> Option<strobe_symbols::Language> {
        let (m, _) = *self.by_id.get(self.slot(id)?)?;
        Some(self.modules[m].language())
    }

    /// Name of a function id (for messages).
    pub fn name_of(&self, id: u32) -> Option<&str> {
        let (m, f) = *self.by_id.get(self.slot(id)?)?;
        Some(self.modules[m].function(f)?.name)
    }

    /// True when a library loaded later may hold functions an active pattern
    /// (or watch scope) wants, so the loading thread must wait for its hooks:
    /// some pattern has not matched Python functions. A Python-only session
    /// never waits: the wait happens inside dlopen with the loader's lock
    /// held, where anything else needing that lock (a Frida thread's dlsym)
    /// waits too.
    pub fn needs_library_watch(&self) -> bool {
        let watched = self.watches.iter().flat_map(|w| w.on.iter());
        self.patterns
            .iter()
            .chain(watched)
            .any(|p| !self.python_matched.contains(&p.text()))
    }

    pub(crate) fn debug_info(&mut self, m: usize) -> Option<&mut DebugInfo> {
        let modules = &self.modules;
        self.debug
            .entry(m)
            .or_insert_with(|| DebugInfo::open(modules[m].native()?).ok())
            .as_mut()
    }

    /// The types read so far from module `m`, shared by every plan built
    /// since the table last grew (it only ever grows, so equal length means
    /// equal content).
    pub(crate) fn types_snapshot(&mut self, m: usize) -> Option<Arc<TypeTable>> {
        let table = self.debug.get(&m)?.as_ref()?.types();
        if let Some(snap) = self.snapshots.get(&m).filter(|s| s.len() == table.len()) {
            return Some(snap.clone());
        }
        let snap = Arc::new(table.clone());
        self.snapshots.insert(m, snap.clone());
        Some(snap)
    }

    /// The current (complete) type table of image `m`, for storing.
    pub fn latest_types(&mut self, m: u32) -> Option<Arc<TypeTable>> {
        self.types_snapshot(m as usize)
    }
}

/// A hex address as users write it ("0x7ffd1234", "7ffd1234", "0X…").
pub fn parse_hex_address(text: &str) -> Option<u64> {
    let hex = text
        .trim()
        .trim_start_matches("0x")
        .trim_start_matches("0X");
    u64::from_str_radix(hex, 16).ok()
}

/// `debug_trace` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceResponse {
    /// "pending" (staged for the next launch) or "runtime" (applied live).
    pub mode: &'static str,
    /// Patterns now active.
    pub active_patterns: Vec<String>,
    /// Functions hooked now.
    pub hooked_functions: usize,
    /// Functions the patterns matched, when different from hooked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_functions: Option<usize>,
    /// Active watches.
    pub active_watches: Vec<ActiveWatch>,
    /// Problems worth knowing.
    pub warnings: Vec<String>,
    /// `events.maxPerSession` in force.
    pub event_limit: u64,
    /// What this means and what to do next.
    pub status: String,
    /// Functions whose events the agent had to drop because its ring stayed
    /// full, most first (absent when nothing was lost).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped_events: Vec<FunctionDrops>,
    /// Hot functions recorded by sampling: their events carry `sampled: true`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sampled_functions: Vec<SampledFunction>,
    /// Functions traced in light mode (no typed values), when any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub light_mode_functions: Option<usize>,
}

/// A library loaded while patterns were active whose hooks took longer
/// than `trace.libraryWaitMs`: its load went on without them, so calls it
/// made before they went in (its constructors, say) were not traced.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LateLibrary {
    /// The library.
    pub path: String,
    /// How long its loading thread waited.
    pub waited_ms: u64,
}

/// A function recorded 1 call in `one_in`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SampledFunction {
    /// The function.
    pub function: String,
    /// One call in this many is recorded.
    pub one_in: u64,
}

/// Events lost for one function.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionDrops {
    /// The function.
    pub function: String,
    /// Events dropped.
    pub dropped: u64,
}
