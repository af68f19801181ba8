//! Function tracing for one session: patterns → functions → hooks in the
//! agent, and the agent's binary trace records → timeline events.

use crate::values::{FunctionPlan, WatchSpec, WatchType};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strobe_core::event::{
    Event, EventBatch, EventHeader, EventKind, FLAG_CAPTURE, FLAG_SAMPLED, FLAG_VALUE_TYPED,
};
use strobe_store::{CaptureBlob, FunctionRow};
use strobe_symbols::resolvers::dwarf::DwarfResolver;
use strobe_symbols::{DebugInfo, Pattern, Signature, SymbolResolver, TypeTable};

/// Size of one agent trace record slot (see agent/src/tracers/native/layout.ts).
pub const RECORD_SIZE: usize = 32;

/// A function's capture plan with the types it renders with.
#[derive(Debug)]
pub struct Decoder {
    /// The plan the agent executes.
    pub plan: FunctionPlan,
    /// Types of the function's image (a snapshot taken when the plan was built).
    pub types: Arc<TypeTable>,
    /// The image's index in the tracer (`None`: no DWARF signature, the
    /// plan only reads watches).
    pub module: Option<u32>,
}

/// Plans by (function id, plan id): records name the plan they were captured with.
pub type Decoders = HashMap<(u32, u16), Arc<Decoder>>;

/// [`CaptureBlob`] kind of an image's type table (id = image index).
pub const BLOB_TYPES: u32 = 1;
/// [`CaptureBlob`] kind of a plan (id = function id, sub = plan id).
pub const BLOB_PLAN: u32 = 2;

#[derive(Serialize, Deserialize)]
struct StoredDecoder {
    module: Option<u32>,
    plan: crate::values::StoredPlan,
}

/// Blobs that store `decoders` with their session: each plan, and the type
/// table of each image in `tables` (the latest, complete snapshot: tables
/// only grow, so a type id a plan took from an earlier snapshot means the
/// same type in a later one).
pub fn decoders_to_blobs(
    decoders: &[(u32, Arc<Decoder>)],
    tables: &[(u32, Arc<TypeTable>)],
) -> Vec<CaptureBlob> {
    let mut out = Vec::new();
    for (m, table) in tables {
        match serde_json::to_vec(&**table) {
            Ok(body) => out.push(CaptureBlob {
                kind: BLOB_TYPES,
                id: *m,
                sub: 0,
                body,
            }),
            Err(e) => tracing::warn!("type table of image {m} not stored: {e}"),
        }
    }
    for (func, d) in decoders {
        let stored = StoredDecoder {
            module: d.module,
            plan: d.plan.to_stored(),
        };
        match serde_json::to_vec(&stored) {
            Ok(body) => out.push(CaptureBlob {
                kind: BLOB_PLAN,
                id: *func,
                sub: u32::from(d.plan.id),
                body,
            }),
            Err(e) => tracing::warn!("capture plan of function {func} not stored: {e}"),
        }
    }
    out
}

/// Rebuilds a session's decoders from its stored blobs; plans whose type
/// tables are missing or unreadable are left out (their events show raw
/// registers).
pub fn decoders_from_blobs(blobs: &[CaptureBlob]) -> Decoders {
    let mut tables: HashMap<u32, Arc<TypeTable>> = HashMap::new();
    for b in blobs.iter().filter(|b| b.kind == BLOB_TYPES) {
        match serde_json::from_slice::<TypeTable>(&b.body) {
            Ok(t) => {
                tables.insert(b.id, Arc::new(t));
            }
            Err(e) => tracing::warn!("stored type table {} unreadable: {e}", b.id),
        }
    }
    let empty = Arc::new(TypeTable::default());
    let mut out = Decoders::new();
    for b in blobs.iter().filter(|b| b.kind == BLOB_PLAN) {
        let Ok(stored) = serde_json::from_slice::<StoredDecoder>(&b.body) else {
            tracing::warn!("stored capture plan of function {} unreadable", b.id);
            continue;
        };
        let types = match stored.module {
            Some(m) => match tables.get(&m) {
                Some(t) => t.clone(),
                None => continue,
            },
            None => empty.clone(),
        };
        let Some(plan) = FunctionPlan::from_stored(stored.plan, &|m| tables.get(&m).cloned())
        else {
            continue;
        };
        out.insert(
            (b.id, plan.id),
            Arc::new(Decoder {
                plan,
                types,
                module: stored.module,
            }),
        );
    }
    out
}

/// Decodes agent records into events (timestamps rebased on the session
/// clock). A record's capture (typed values) is stored as is, flagged
/// [`FLAG_CAPTURE`]; [`typed_values`] renders it when queried. Returns how
/// many events were decoded.
/// `decoders` (the session's capture plans) let exits carry their typed
/// return value in `value` for chunk indexes (`FLAG_VALUE_TYPED`).
pub fn decode_records(
    data: &[u8],
    origin_ns: u64,
    pid: u32,
    decoders: Option<&Decoders>,
    batch: &mut EventBatch,
) -> usize {
    let mut n = 0;
    let mut at = 0;
    while at + RECORD_SIZE <= data.len() {
        let rec = &data[at..at + RECORD_SIZE];
        let u64_at = |o: usize| u64::from_le_bytes(rec[o..o + 8].try_into().expect("8 bytes"));
        let u32_at = |o: usize| u32::from_le_bytes(rec[o..o + 4].try_into().expect("4 bytes"));
        let raw_kind = u32_at(24);
        let extra = u32_at(28) as usize;
        let payload_at = at + RECORD_SIZE;
        at = payload_at + extra * RECORD_SIZE;
        let kind = match raw_kind & 0xff {
            1 => EventKind::FunctionEnter,
            2 => EventKind::FunctionExit,
            _ => continue,
        };
        let mut flags = if raw_kind & 0x100 != 0 {
            FLAG_SAMPLED
        } else {
            0
        };
        let mut payload = data.get(payload_at..at.min(data.len())).unwrap_or(&[]);
        if payload.len() >= 8 {
            let len = u32::from_le_bytes(payload[4..8].try_into().expect("4")) as usize;
            payload = &payload[..len.min(payload.len())];
            flags |= FLAG_CAPTURE;
        } else {
            payload = &[];
        }
        let func_id = u32_at(8);
        let mut value = u64_at(16);
        if kind == EventKind::FunctionExit && flags & FLAG_CAPTURE != 0 {
            let plan_id = u32::from_le_bytes(payload[0..4].try_into().expect("4")) as u16;
            if let Some(key) = decoders
                .and_then(|d| d.get(&(func_id, plan_id)))
                .and_then(|d| d.plan.return_key(&d.types, payload))
            {
                value = key;
                flags |= FLAG_VALUE_TYPED;
            }
        }
        batch.push(
            EventHeader {
                ts_ns: u64_at(0).saturating_sub(origin_ns),
                kind: kind as u8,
                flags,
                pid,
                func_id,
                tid: u32_at(12),
                value,
                ..Default::default()
            },
            payload,
        );
        n += 1;
    }
    n
}

/// Typed values of a traced call (`arguments` / `returnValue` /
/// `watchValues`) from its stored capture; `None` when the event has no
/// capture or its plan is unknown (e.g. recorded by an earlier daemon).
pub fn typed_values(decoders: &Decoders, e: &Event) -> Option<serde_json::Value> {
    typed_of(decoders, &e.header, &e.payload)
}

/// [`typed_values`] on a header and payload.
pub fn typed_of(decoders: &Decoders, h: &EventHeader, payload: &[u8]) -> Option<serde_json::Value> {
    if h.flags & FLAG_CAPTURE == 0 || payload.len() < 8 {
        return None;
    }
    let plan_id = u32::from_le_bytes(payload[0..4].try_into().expect("4")) as u16;
    let d = decoders.get(&(h.func_id, plan_id))?;
    Some(if h.kind == EventKind::FunctionEnter as u8 {
        d.plan.decode_enter(&d.types, payload)
    } else {
        d.plan.decode_exit(&d.types, payload)
    })
}

/// Functions hooked in one change above this count are traced in light mode
/// (name, timing, raw first argument and return register; no typed values).
pub const LIGHT_MODE_ABOVE: usize = 5000;

/// Stack bytes the hook copies for a function whose signature is unknown:
/// 32 argument slots.
pub const STACK_COPY_UNKNOWN: u32 = 256;

/// Most stack bytes the hook copies per call.
const STACK_COPY_MAX: u64 = 64 * 1024;

/// A watch as the agent asked for it, and what it resolved to.
#[derive(Debug, Clone)]
pub struct Watch {
    /// Label values are stored under.
    pub label: String,
    /// What was asked: the variable chain or the address.
    pub target: WatchTarget,
    /// Function patterns it is read in (empty: every traced function).
    pub on: Vec<Pattern>,
    /// The resolved read chain.
    pub spec: WatchSpec,
}

/// What a watch reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum WatchTarget {
    /// A global/static, optionally followed by `.field` / `->field` steps.
    Variable(String),
    /// A raw address with a type hint.
    Address {
        /// The address.
        address: u64,
        /// The hint (i8…u64, f32, f64, pointer).
        hint: String,
    },
    /// A JavaScript expression the agent evaluates at each read (with
    /// `args` / `retval` bound, see agent/src/tracers/native/exprs.ts).
    Expr(String),
}

/// A watch in `debug_trace` responses.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveWatch {
    /// Label.
    pub label: String,
    /// Variable (or address) read.
    pub target: String,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: String,
    /// Where it is read (empty: every traced function).
    pub on: Vec<String>,
}

/// A watch as requested (validated by the session manager).
#[derive(Debug, Clone, Default)]
pub struct WatchRequest {
    /// Global/static with optional `.field`/`->field` steps.
    pub variable: Option<String>,
    /// Raw hex address.
    pub address: Option<String>,
    /// Type hint for `address`.
    pub type_hint: Option<String>,
    /// Label (default: the variable or address).
    pub label: Option<String>,
    /// JavaScript expression evaluated by the agent (see [`WatchTarget::Expr`]).
    pub expr: Option<String>,
    /// Function patterns the watch is read in.
    pub on: Vec<String>,
}

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

/// Most watches per session.
pub const MAX_WATCHES: usize = 32;
pub use crate::varpath::{MAX_DEREFS, Step, chain_spec, parse_chain};

/// The functions a set of patterns resolved to, before hooking.
#[derive(Debug, Default)]
pub struct Plan {
    /// (function id, module path, entry offset) to hook.
    pub to_hook: Vec<(u32, PathBuf, u64)>,
    /// New function rows to register with the store.
    pub new_rows: Vec<FunctionRow>,
    /// Function ids no pattern covers any more.
    pub to_unhook: Vec<u32>,
    /// Functions matched by all active patterns.
    pub matched: usize,
    /// Warnings for the agent (inlined-only matches, patterns matching nothing).
    pub warnings: Vec<String>,
}

/// Tracing state of one session: the images it resolves against (the
/// executable first, then shared libraries, including ones loaded later with
/// dlopen), the active patterns, and which functions are hooked.
pub struct Tracer {
    pub(crate) modules: Vec<Arc<DwarfResolver>>,
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
    /// Hot-function sampling allowed (debug_trace `sampling`).
    pub sampling: bool,
    /// Depth of typed argument serialization (1–10).
    pub depth: u32,
    /// Opened DWARF per module index (`None`: the image has none).
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

/// Functions above this count make a pattern "broad": the response says so.
pub const BROAD_PATTERN: usize = 1000;

impl Tracer {
    /// A tracer resolving against `modules` (the executable first).
    pub fn new(modules: Vec<Arc<DwarfResolver>>, project_root: &Path) -> Self {
        Self {
            modules,
            project_root: project_root.to_path_buf(),
            patterns: Vec::new(),
            ids: HashMap::new(),
            by_id: Vec::new(),
            id_base: 0,
            hooked: BTreeSet::new(),
            failed: HashMap::new(),
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
        self.modules.iter().any(|m| m.index().path == path)
    }

    /// Adds an image without planning hooks (the next [`Tracer::plan`] covers it).
    pub fn push_module(&mut self, module: Arc<DwarfResolver>) {
        self.modules.push(module);
    }

    /// Adds an image loaded after tracing started (dlopen) and plans hooks
    /// for the active patterns in it.
    pub fn add_module(&mut self, module: Arc<DwarfResolver>) -> Plan {
        self.modules.push(module);
        let m = self.modules.len() - 1;
        self.plan_modules(&[], m..m + 1)
    }

    /// Applies added and removed patterns; returns what to change in the agent.
    pub fn plan(&mut self, add: &[Pattern], remove: &[String]) -> Plan {
        let mut warnings = Vec::new();
        for r in remove {
            let before = self.patterns.len();
            self.patterns.retain(|p| p.text() != *r);
            if self.patterns.len() == before {
                warnings.push(format!("pattern {r:?} was not active; nothing removed"));
            }
        }
        for p in add {
            if !self.patterns.contains(p) {
                self.patterns.push(p.clone());
            }
        }
        let mut plan = self.plan_modules(add, 0..self.modules.len());
        plan.warnings.splice(0..0, warnings);
        plan
    }

    fn plan_modules(&mut self, fresh: &[Pattern], modules: std::ops::Range<usize>) -> Plan {
        let mut plan = Plan::default();
        let mut wanted: BTreeSet<u32> = BTreeSet::new();
        let all_modules = modules.start == 0 && modules.end == self.modules.len();
        // Functions a watch is scoped to are traced too: a watch is read at
        // their enter and exit.
        let mut all_patterns = self.patterns.clone();
        for w in &self.watches {
            for p in &w.on {
                if !all_patterns.contains(p) {
                    all_patterns.push(p.clone());
                }
            }
        }
        for p in all_patterns {
            let is_fresh = fresh.contains(&p);
            let wildcard = crate::hookable::starts_with_wildcard(&p);
            let mut hits = 0;
            let mut inlined = Vec::new();
            // Images the pattern does not reach, with the functions it
            // matched there; functions refused because the hook uses them.
            let mut left_out: Vec<(String, usize)> = Vec::new();
            let mut refused: Vec<String> = Vec::new();
            for m in modules.clone() {
                let resolver = self.modules[m].clone();
                let res = resolver.resolve_pattern(&p, &self.project_root);
                let path = &resolver.index().path;
                if crate::hookable::is_loader(path)
                    || (m != 0 && wildcard && crate::hookable::is_system_library(path))
                {
                    if !res.targets.is_empty() {
                        let file = path.file_name().map(|f| f.to_string_lossy().into_owned());
                        left_out.push((file.unwrap_or_default(), res.targets.len()));
                    }
                    continue;
                }
                let never = self
                    .never_hooked
                    .entry(m)
                    .or_insert_with(|| {
                        Arc::new(crate::hookable::hook_path_offsets(resolver.index()))
                    })
                    .clone();
                inlined.extend(res.inlined_only);
                for t in res.targets {
                    if never.contains(&t.entry_offset) {
                        refused.push(t.name.clone());
                        continue;
                    }
                    hits += 1;
                    let id = self.id_for(m, t.function, &mut plan.new_rows);
                    wanted.insert(id);
                    if !self.hooked.contains(&id)
                        && !self.failed.contains_key(&id)
                        && !plan.to_hook.iter().any(|h| h.0 == id)
                    {
                        plan.to_hook
                            .push((id, t.module.to_path_buf(), t.entry_offset));
                    }
                }
            }
            if is_fresh && !left_out.is_empty() {
                let n: usize = left_out.iter().map(|l| l.1).sum();
                let images: Vec<String> =
                    left_out.iter().map(|(f, k)| format!("{f}: {k}")).collect();
                plan.warnings.push(format!(
                    "pattern {:?} left out {n} functions of system libraries and the loader ({}): a pattern \
                     starting with a wildcard reaches only the program and its own libraries, and Frida needs the \
                     loader; name a library function exactly (\"fopen\") or by its prefix (\"sqlite3_*\")",
                    p.text(),
                    images.join(", ")
                ));
            }
            if is_fresh && !refused.is_empty() {
                refused.sort();
                refused.dedup();
                plan.warnings.push(format!(
                    "not hooked: {} (Strobe's own hook calls them on every traced call, so tracing them would \
                     recurse); trace their callers instead",
                    refused.join(", ")
                ));
            }
            if is_fresh {
                if hits == 0 && inlined.is_empty() && refused.is_empty() && left_out.is_empty() {
                    plan.warnings.push(format!(
                        "pattern {:?} matched no function in the program or its loaded libraries; check the spelling \
                         with a wider pattern (e.g. \"ns::*\", \"**::name\" or \"@file:part.c\") and that it was built with -g \
                         (libraries loaded later with dlopen are matched when they load)",
                        p.text()
                    ));
                } else if hits > BROAD_PATTERN {
                    plan.warnings.push(format!(
                        "pattern {:?} matched {hits} functions; expect many events (narrow it if queries get noisy)",
                        p.text()
                    ));
                }
                plan.warnings.extend(inlined.into_iter().take(10));
            }
        }
        plan.matched = wanted.len();
        if all_modules {
            plan.to_unhook = self
                .hooked
                .iter()
                .copied()
                .filter(|id| !wanted.contains(id))
                .collect();
            // Failed hooks of functions no longer wanted may be retried later.
            self.failed.retain(|id, _| wanted.contains(id));
        }
        plan
    }

    fn id_for(&mut self, module: usize, function: usize, new_rows: &mut Vec<FunctionRow>) -> u32 {
        if let Some(id) = self.ids.get(&(module, function)) {
            return *id;
        }
        let id = self.id_base + self.by_id.len() as u32 + 1;
        self.ids.insert((module, function), id);
        self.by_id.push((module, function));
        let f = &self.modules[module].index().functions[function];
        new_rows.push(FunctionRow {
            func_id: id,
            name: f.name.clone(),
            name_raw: f.name_raw.clone(),
            file: f.file.clone(),
            line: f.line,
        });
        id
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

    /// Name of a function id (for messages).
    pub fn name_of(&self, id: u32) -> Option<&str> {
        let (m, f) = *self.by_id.get(self.slot(id)?)?;
        Some(self.modules[m].index().functions[f].name.as_str())
    }

    /// True when any pattern (or watch scope) is active: libraries loaded
    /// later must be checked.
    pub fn has_patterns(&self) -> bool {
        !self.patterns.is_empty() || self.watches.iter().any(|w| !w.on.is_empty())
    }

    pub(crate) fn debug_info(&mut self, m: usize) -> Option<&mut DebugInfo> {
        let modules = &self.modules;
        self.debug
            .entry(m)
            .or_insert_with(|| DebugInfo::open(modules[m].index()).ok())
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
        let func = &self.modules[m].index().functions[f];
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
        let func = &self.modules[m].index().functions[f];
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
        let func = self.modules[m].index().functions[f].clone();
        let watches: Vec<WatchSpec> = self
            .watches
            .iter()
            .filter(|w| {
                w.on.is_empty()
                    || w.on
                        .iter()
                        .any(|p| p.matches(&func.name, func.file.as_deref(), &self.project_root))
            })
            .map(|w| w.spec.clone())
            .collect();
        let depth = self.depth;
        let next = self
            .plan_ids
            .get(&id)
            .map_or(1, |p| p.wrapping_add(1).max(1));
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

    /// Active watches, as shown in responses.
    pub fn active_watches(&self) -> Vec<ActiveWatch> {
        self.watches
            .iter()
            .map(|w| ActiveWatch {
                label: w.label.clone(),
                target: match &w.target {
                    WatchTarget::Variable(v) | WatchTarget::Expr(v) => v.clone(),
                    WatchTarget::Address { address, .. } => format!("{address:#x}"),
                },
                ty: crate::values::type_name(&w.spec.ty),
                on: w.on.iter().map(Pattern::text).collect(),
            })
            .collect()
    }

    /// The expression watches the agent must know: (id, label, source).
    pub fn expr_watches(&self) -> Vec<(u16, String, String)> {
        self.watches
            .iter()
            .filter_map(|w| match (&w.target, &w.spec.ty) {
                (WatchTarget::Expr(src), WatchType::Expr(id)) => {
                    Some((*id, w.label.clone(), src.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// Removes watches by label; returns the labels that were not active.
    pub fn remove_watches(&mut self, labels: &[String]) -> Vec<String> {
        let mut missing = Vec::new();
        for l in labels {
            let before = self.watches.len();
            self.watches.retain(|w| &w.label != l);
            if self.watches.len() == before {
                missing.push(l.clone());
            }
        }
        missing
    }

    /// Resolves and adds a watch. `base` gives the runtime load address of
    /// an image (for globals of PIE executables and libraries).
    pub fn add_watch(
        &mut self,
        label: Option<String>,
        target: WatchTarget,
        on: Vec<Pattern>,
        base: &dyn Fn(&Path) -> Option<u64>,
    ) -> Result<(), String> {
        let label = label.unwrap_or_else(|| match &target {
            WatchTarget::Variable(v) | WatchTarget::Expr(v) => v.clone(),
            WatchTarget::Address { address, .. } => format!("{address:#x}"),
        });
        if self.watches.iter().any(|w| w.label == label) {
            return Err(format!(
                "a watch labelled {label:?} already exists; remove it first or pick another label"
            ));
        }
        if self.watches.len() >= MAX_WATCHES {
            return Err(format!(
                "a session has at most {MAX_WATCHES} watches; remove some (watches.remove with their labels) first"
            ));
        }
        let spec = match &target {
            WatchTarget::Address { address, hint } => WatchSpec {
                label: label.clone(),
                chain: vec![(*address, 0)],
                size: crate::values::hint_size(hint).ok_or_else(|| {
                    format!("unknown type hint {hint:?}: use i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 or pointer")
                })?,
                ty: WatchType::Hint(hint.clone()),
                string: false,
                slice: None,
            },
            WatchTarget::Variable(expr) => {
                let spec = self.resolve_variable(&label, expr, base)?;
                if let Some(asked) = &spec.slice {
                    watch_slice_fits(expr, asked, &spec)?;
                }
                spec
            }
            WatchTarget::Expr(_) => {
                let id = self.next_expr;
                self.next_expr = self.next_expr.checked_add(1).ok_or(
                    "this session has used all 65535 expression watch ids; start a new session",
                )?;
                WatchSpec {
                    label: label.clone(),
                    chain: Vec::new(),
                    size: 0,
                    ty: WatchType::Expr(id),
                    string: false,
                    slice: None,
                }
            }
        };
        self.watches.push(Watch {
            label,
            target,
            on,
            spec,
        });
        Ok(())
    }

    /// Resolves a global/static with `.field` / `->field` / `[i]` steps
    /// (and a last `[a:b]` slice) to a read chain (`base` gives an image's load address in the process).
    pub fn resolve_variable(
        &mut self,
        label: &str,
        expr: &str,
        base: &dyn Fn(&Path) -> Option<u64>,
    ) -> Result<WatchSpec, String> {
        let (name, steps) = parse_chain(expr)?;
        let mut found = None;
        for (m, module) in self.modules.iter().enumerate() {
            let idx = module.index();
            let exact = idx.globals.iter().find(|g| g.name == name);
            let suffix = || {
                let tail = format!("::{name}");
                let mut it = idx.globals.iter().filter(|g| g.name.ends_with(&tail));
                let first = it.next();
                first.filter(|_| it.next().is_none())
            };
            if let Some(g) = exact.or_else(suffix) {
                found = Some((m, g.clone()));
                break;
            }
        }
        let Some((m, g)) = found else {
            return Err(format!(
                "no global or static variable named {name:?} in the program or its loaded libraries (locals cannot be watched; the image must be built with -g). Use address + type for raw memory."
            ));
        };
        let path = self.modules[m].index().path.clone();
        let module_base = base(&path).ok_or_else(|| {
            format!(
                "cannot find where {} is loaded in the process (neither its /proc/PID/maps nor the agent know it)",
                path.display()
            )
        })?;
        let di = self
            .debug_info(m)
            .ok_or_else(|| format!("{} has no readable DWARF", path.display()))?;
        let ty = di.variable_type(g.die).map_err(|e| e.to_string())?;
        let types = self
            .types_snapshot(m)
            .ok_or_else(|| format!("{} has no readable DWARF", path.display()))?;
        // A slice's `T[n]` goes into the image's own table, which stored
        // plans name (watches are rendered again from the store).
        let mut array_of = |elem, n| {
            let di = self
                .debug_info(m)
                .ok_or_else(|| format!("{} has no readable DWARF", path.display()))?;
            let id = di.intern_type(strobe_symbols::Type::Array {
                elem,
                count: Some(n),
            });
            let table = self
                .types_snapshot(m)
                .ok_or_else(|| format!("{} has no readable DWARF", path.display()))?;
            Ok((id, table))
        };
        chain_spec(
            label,
            expr,
            crate::varpath::Start::At(module_base + g.offset, ty),
            types,
            m as u32,
            &steps,
            &mut array_of,
        )
    }
}

/// A watch's slice is read whole at every call, within one plan read
/// ([`crate::values::BLOCK_MAX`] bytes, [`crate::values::ARRAY_MAX`]
/// elements): a longer one is refused with the longest that fits, rather
/// than cut at every call.
fn watch_slice_fits(
    expr: &str,
    asked: &std::ops::Range<u64>,
    spec: &WatchSpec,
) -> Result<(), String> {
    use crate::values::{ARRAY_MAX, BLOCK_MAX};
    let n = asked.end - asked.start;
    let esize = (spec.size / n.min(ARRAY_MAX)).max(1);
    let most = (BLOCK_MAX / esize).min(ARRAY_MAX);
    if n <= most {
        return Ok(());
    }
    // The slice is the last step: the path before its '['.
    let base = expr.rfind('[').map_or(expr, |i| &expr[..i]);
    Err(format!(
        "the watch {expr:?} reads {n} elements of {esize} bytes; a watch reads at most {most} of them \
         ({ARRAY_MAX} elements, {BLOCK_MAX} bytes): watch {base}[{}:{}], and the rest in more watches",
        asked.start,
        asked.start + most
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_decode_and_rebase() {
        let mut data = Vec::new();
        for (ts, func, tid, value, kind) in [
            (1_000u64, 7u32, 42u32, 5u64, 1u32),
            (1_500, 7, 42, 6, 2),
            (0, 0, 0, 0, 0),
        ] {
            data.extend_from_slice(&ts.to_le_bytes());
            data.extend_from_slice(&func.to_le_bytes());
            data.extend_from_slice(&tid.to_le_bytes());
            data.extend_from_slice(&value.to_le_bytes());
            data.extend_from_slice(&kind.to_le_bytes());
            data.extend_from_slice(&0u32.to_le_bytes());
        }
        let mut b = EventBatch::default();
        assert_eq!(
            decode_records(&data, 400, 99, None, &mut b),
            2,
            "unwritten slots are skipped"
        );
        assert_eq!(b.headers[0].ts_ns, 600);
        assert_eq!(b.headers[0].kind, EventKind::FunctionEnter as u8);
        assert_eq!(
            (
                b.headers[1].func_id,
                b.headers[1].tid,
                b.headers[1].value,
                b.headers[1].pid
            ),
            (7, 42, 6, 99)
        );
    }
}
