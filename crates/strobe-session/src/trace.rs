//! Function tracing for one session: patterns → functions → hooks in the
//! agent, and the agent's binary trace records → timeline events.

use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strobe_core::event::{EventBatch, EventHeader, EventKind};
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
        let kind = match u32_at(24) {
            1 => EventKind::FunctionEnter,
            2 => EventKind::FunctionExit,
            _ => continue,
        };
        batch.push(
            EventHeader {
                ts_ns: u64_at(0).saturating_sub(origin_ns),
                kind: kind as u8,
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

/// Tracing state of one session.
pub struct Tracer {
    resolver: Arc<DwarfResolver>,
    project_root: PathBuf,
    patterns: Vec<Pattern>,
    ids: HashMap<usize, u32>,
    hooked: BTreeSet<u32>,
    failed: HashMap<u32, String>,
    drops: HashMap<u32, u64>,
}

/// Functions above this count make a pattern "broad": the response says so.
pub const BROAD_PATTERN: usize = 1000;

impl Tracer {
    /// A tracer resolving against `resolver`.
    pub fn new(resolver: Arc<DwarfResolver>, project_root: &Path) -> Self {
        Self {
            resolver,
            project_root: project_root.to_path_buf(),
            patterns: Vec::new(),
            ids: HashMap::new(),
            hooked: BTreeSet::new(),
            failed: HashMap::new(),
            drops: HashMap::new(),
        }
    }

    /// Active patterns, as written.
    pub fn patterns(&self) -> Vec<String> {
        self.patterns.iter().map(Pattern::text).collect()
    }

    /// Currently hooked functions.
    pub fn hooked_count(&self) -> usize {
        self.hooked.len()
    }

    /// Applies added and removed patterns; returns what to change in the agent.
    pub fn plan(&mut self, add: &[Pattern], remove: &[String]) -> Plan {
        let mut plan = Plan::default();
        for r in remove {
            let before = self.patterns.len();
            self.patterns.retain(|p| p.text() != *r);
            if self.patterns.len() == before {
                plan.warnings
                    .push(format!("pattern {r:?} was not active; nothing removed"));
            }
        }
        for p in add {
            if !self.patterns.contains(p) {
                self.patterns.push(p.clone());
            }
        }
        let index = self.resolver.index();
        let mut wanted: BTreeSet<u32> = BTreeSet::new();
        for p in &self.patterns {
            let res = self.resolver.resolve_pattern(p, &self.project_root);
            let fresh = add.contains(p);
            if fresh && res.targets.is_empty() {
                if res.inlined_only.is_empty() {
                    plan.warnings.push(format!(
                        "pattern {:?} matched no function in {}; check the spelling with a wider pattern \
                         (e.g. \"ns::*\", \"**::name\" or \"@file:part.c\") and that the program was built with -g",
                        p.text(),
                        index.path.display()
                    ));
                }
            } else if fresh && res.targets.len() > BROAD_PATTERN {
                plan.warnings.push(format!(
                    "pattern {:?} matched {} functions; expect many events (narrow it if queries get noisy)",
                    p.text(),
                    res.targets.len()
                ));
            }
            if fresh {
                for m in res.inlined_only.iter().take(10) {
                    plan.warnings.push(m.clone());
                }
            }
            for t in res.targets {
                let next = self.ids.len() as u32 + 1;
                let id = *self.ids.entry(t.function).or_insert_with(|| {
                    let f = &index.functions[t.function];
                    plan.new_rows.push(FunctionRow {
                        func_id: next,
                        name: f.name.clone(),
                        name_raw: f.name_raw.clone(),
                        file: f.file.clone(),
                        line: f.line,
                    });
                    next
                });
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
        plan.matched = wanted.len();
        plan.to_unhook = self
            .hooked
            .iter()
            .copied()
            .filter(|id| !wanted.contains(id))
            .collect();
        // Failed hooks of functions no longer wanted may be retried later.
        self.failed.retain(|id, _| wanted.contains(id));
        plan
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
        let idx = self.ids.iter().find(|(_, v)| **v == id).map(|(k, _)| *k)?;
        Some(self.resolver.index().functions[idx].name.as_str())
    }

    /// Adds per-function drop counts reported by the agent; returns the total added.
    pub fn add_drops(&mut self, deltas: &HashMap<u32, u64>) -> u64 {
        let mut total = 0;
        for (id, n) in deltas {
            *self.drops.entry(*id).or_default() += n;
            total += n;
        }
        total
    }

    /// Functions that lost events, most first: (name, dropped).
    pub fn drops(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = self
            .drops
            .iter()
            .map(|(id, n)| (self.name_of(*id).unwrap_or("?").to_string(), *n))
            .collect();
        v.sort_by_key(|e| std::cmp::Reverse(e.1));
        v
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
