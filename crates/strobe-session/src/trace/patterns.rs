//! Patterns → functions: which functions of which images the active
//! patterns (and watch scopes) match, the ids they get, and what to hook
//! and unhook.

use super::Tracer;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use strobe_store::FunctionRow;
use strobe_symbols::{FunctionInfo, Language, Pattern, SymbolResolver};

/// The functions a set of patterns resolved to, before hooking.
#[derive(Debug, Default)]
pub struct Plan {
    /// Functions to hook.
    pub to_hook: Vec<HookTarget>,
    /// New function rows to register with the store.
    pub new_rows: Vec<FunctionRow>,
    /// Function ids no pattern covers any more.
    pub to_unhook: Vec<u32>,
    /// Functions matched by all active patterns.
    pub matched: usize,
    /// Warnings for the agent (inlined-only matches, patterns matching nothing).
    pub warnings: Vec<String>,
}

/// A function to hook: which of the agent's tracers hooks it, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookTarget {
    /// Function id.
    pub id: u32,
    /// The code it is ([`SymbolResolver::language`]), which names the
    /// agent's tracer that hooks it.
    pub language: Language,
    /// The file it lives in ([`SymbolResolver::path`]).
    pub module: PathBuf,
    /// Where in it ([`strobe_symbols::ResolvedTarget::entry_offset`]).
    pub offset: u64,
}

/// Functions above this count make a pattern "broad": the response says so.
pub const BROAD_PATTERN: usize = 1000;

impl Tracer {
    /// Adds the resolvers of an image loaded after tracing started
    /// (dlopen) and plans hooks for the active patterns in it.
    pub fn add_modules(&mut self, modules: Vec<Arc<dyn SymbolResolver>>) -> Plan {
        let m = self.modules.len();
        self.modules.extend(modules);
        self.plan_modules(&[], m..self.modules.len())
    }

    /// Applies added and removed patterns; returns what to change in the agent.
    pub fn plan(&mut self, add: &[Pattern], remove: &[String]) -> Plan {
        let mut warnings = Vec::new();
        for r in remove {
            let before = self.patterns.len();
            self.patterns.retain(|p| p.text() != *r);
            self.python_matched.remove(r);
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
            let mut matched_python = false;
            let mut inlined = Vec::new();
            // Images the pattern does not reach, with the functions it
            // matched there; functions refused because the hook uses them.
            let mut left_out: Vec<(String, usize)> = Vec::new();
            let mut refused: Vec<String> = Vec::new();
            for m in modules.clone() {
                let resolver = self.modules[m].clone();
                let res = resolver.resolve_pattern(&p, &self.project_root);
                let path = resolver.path();
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
                        Arc::new(
                            resolver
                                .native()
                                .map(crate::hookable::hook_path_offsets)
                                .unwrap_or_default(),
                        )
                    })
                    .clone();
                inlined.extend(res.inlined_only);
                for t in res.targets {
                    if never.contains(&t.entry_offset) {
                        refused.push(t.name.clone());
                        continue;
                    }
                    hits += 1;
                    matched_python |= resolver.language() == Language::Python;
                    let id = self.id_for(m, t.function, &mut plan.new_rows);
                    wanted.insert(id);
                    if !self.hooked.contains(&id)
                        && !self.failed.contains_key(&id)
                        && !plan.to_hook.iter().any(|h| h.id == id)
                    {
                        plan.to_hook.push(HookTarget {
                            id,
                            language: resolver.language(),
                            module: t.module.to_path_buf(),
                            offset: t.entry_offset,
                        });
                    }
                }
            }
            if matched_python {
                self.python_matched.insert(p.text());
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
                let has = |l| self.modules.iter().any(|m| m.language() == l);
                let python = has(strobe_symbols::Language::Python);
                if hits == 0 && inlined.is_empty() && refused.is_empty() && left_out.is_empty() {
                    let python_project = !python
                        && crate::language::project_language(&self.project_root)
                            == Some(strobe_symbols::Language::Python);
                    let warning = if has(strobe_symbols::Language::JavaScript) {
                        no_javascript_match_warning(&p.text())
                    } else {
                        no_match_warning(&p.text(), python, python_project)
                    };
                    plan.warnings.push(warning);
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
        // Every index a resolver hands out names a function of it.
        let f = self.modules[module]
            .function(function)
            .unwrap_or(FunctionInfo {
                name: "?",
                name_raw: None,
                file: None,
                line: None,
            });
        new_rows.push(FunctionRow {
            func_id: id,
            name: f.name.to_string(),
            name_raw: f.name_raw.map(str::to_string),
            file: f.file.map(str::to_string),
            line: f.line,
        });
        id
    }
}

/// Why a pattern matched nothing in a Node.js program, and what to try.
fn no_javascript_match_warning(pattern: &str) -> String {
    if pattern.contains("::") {
        let dotted = pattern.replace("::", ".");
        return format!(
            "pattern {pattern:?} matched no function: no native function has that name, and \"::\" is \
             native (C/C++/Rust) syntax; JavaScript functions are named module.name with dots, e.g. {dotted:?}"
        );
    }
    format!(
        "pattern {pattern:?} matched no function, JavaScript (module.name, e.g. \"api.users.Router.handle\" \
         for src/api/users.ts, or \"auth.*\") or native; check the module name (the file's path from the \
         project root without its extension, a leading src/ dropped, an index file named by its directory) \
         with a wider pattern such as \"@file:name.js\" or \"@usercode\". A package in node_modules is \
         named by its directory (\"ms.*\", \"minimatch.**\"). \
         The pattern stays active: a native addon loaded later is checked for it as it loads"
    )
}

/// Why a pattern matched nothing, and what to try, in the syntax of the
/// code the session runs: a Python program is named with dots
/// (`inventory.apply_discount`), native code with `::`.
fn no_match_warning(pattern: &str, python: bool, python_project: bool) -> String {
    if python && pattern.contains("::") {
        let dotted = pattern.replace("::", ".");
        return format!(
            "pattern {pattern:?} matched no function: no native function has that name, and \"::\" is \
             native (C/C++/Rust) syntax; Python functions are named module.qualname with dots, e.g. {dotted:?}"
        );
    }
    if python {
        return format!(
            "pattern {pattern:?} matched no function, Python (module.qualname, e.g. \"inventory.Bin.add\" or \
             \"inventory.*\") or native; check the module name (the file's path from the project root or \
             its sys.path entry, without .py) with a wider pattern such as \"@file:name.py\" or \"@usercode\". \
             Functions made at run time (exec, methods a library generates) are still matched when they first run"
        );
    }
    if pattern.contains('.') && !pattern.contains("::") && !pattern.starts_with('@') {
        let native = pattern.replace('.', "::");
        let mut out = format!(
            "pattern {pattern:?} matched no function: dotted names are Python syntax and this program runs \
             native code, whose functions are named with \"::\" (e.g. {native:?}) or plainly (C: \"parse_header\")"
        );
        if python_project {
            out.push_str(
                ". The project has Python files (pyproject.toml, setup.py, setup.cfg or requirements.txt): \
                 to trace Python functions, launch the program through its interpreter (command \"python3\", \
                 args [\"app.py\"] or [\"-m\", \"package\"])",
            );
        }
        return out;
    }
    format!(
        "pattern {pattern:?} matched no function in the program or its loaded libraries; check the spelling \
         with a wider pattern (e.g. \"ns::*\", \"**::name\" or \"@file:part.c\") and that it was built with -g \
         (libraries loaded later with dlopen are matched when they load)"
    )
}
