//! Function tracing for one session: patterns → functions → hooks in the
//! agent, and the agent's binary trace records → timeline events.

use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strobe_core::event::{EventBatch, EventHeader, EventKind, FLAG_SAMPLED};
use strobe_store::FunctionRow;
use strobe_symbols::resolvers::dwarf::DwarfResolver;
use strobe_symbols::{Pattern, SymbolResolver};

/// Size of one agent trace record (see agent/src/tracers/native.ts).
pub const RECORD_SIZE: usize = 32;

/// Decodes agent records into events (timestamps rebased on the session
/// clock); returns how many were decoded.
pub fn decode_records(data: &[u8], origin_ns: u64, pid: u32, batch: &mut EventBatch) -> usize {
    let mut n = 0;
    for rec in data.chunks_exact(RECORD_SIZE) {
        let u64_at = |o: usize| u64::from_le_bytes(rec[o..o + 8].try_into().expect("8 bytes"));
        let u32_at = |o: usize| u32::from_le_bytes(rec[o..o + 4].try_into().expect("4 bytes"));
        let raw_kind = u32_at(24);
        let kind = match raw_kind & 0xff {
            1 => EventKind::FunctionEnter,
            2 => EventKind::FunctionExit,
            _ => continue,
        };
        let flags = if raw_kind & 0x100 != 0 {
            FLAG_SAMPLED
        } else {
            0
        };
        batch.push(
            EventHeader {
                ts_ns: u64_at(0).saturating_sub(origin_ns),
                kind: kind as u8,
                flags,
                pid,
                func_id: u32_at(8),
                tid: u32_at(12),
                value: u64_at(16),
                ..Default::default()
            },
            &[],
        );
        n += 1;
    }
    n
}

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
    modules: Vec<Arc<DwarfResolver>>,
    project_root: PathBuf,
    patterns: Vec<Pattern>,
    /// (module index, function index) → function id.
    ids: HashMap<(usize, usize), u32>,
    /// function id → (module index, function index).
    by_id: Vec<(usize, usize)>,
    hooked: BTreeSet<u32>,
    failed: HashMap<u32, String>,
    /// Hot-function sampling allowed (debug_trace `sampling`).
    pub sampling: bool,
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
            hooked: BTreeSet::new(),
            failed: HashMap::new(),
            sampling: true,
        }
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
        for p in self.patterns.clone() {
            let is_fresh = fresh.contains(&p);
            let mut hits = 0;
            let mut inlined = Vec::new();
            for m in modules.clone() {
                let resolver = self.modules[m].clone();
                let res = resolver.resolve_pattern(&p, &self.project_root);
                hits += res.targets.len();
                inlined.extend(res.inlined_only);
                for t in res.targets {
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
            if is_fresh {
                if hits == 0 && inlined.is_empty() {
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
        let id = self.by_id.len() as u32 + 1;
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
        let (m, f) = *self.by_id.get(id.checked_sub(1)? as usize)?;
        Some(self.modules[m].index().functions[f].name.as_str())
    }

    /// True when any pattern is active (libraries loaded later must be checked).
    pub fn has_patterns(&self) -> bool {
        !self.patterns.is_empty()
    }
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
    /// Active watches (none yet).
    pub active_watches: Vec<serde_json::Value>,
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
            decode_records(&data, 400, 99, &mut b),
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
