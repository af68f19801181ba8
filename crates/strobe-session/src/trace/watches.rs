//! Watches: globals (with field, index and slice steps), raw addresses
//! and expressions read at traced calls, resolved against the images'
//! DWARF into read chains.

use super::Tracer;
use serde::Serialize;
use std::path::Path;
use strobe_symbols::Pattern;
use strobe_values::{WatchSpec, WatchType};

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

impl Watch {
    /// Whether it is read in function `name` (`file`).
    pub fn read_in(&self, name: &str, file: Option<&str>, project_root: &Path) -> bool {
        read_in(&self.on, name, file, project_root)
    }
}

/// Whether a watch scoped to `on` is read in function `name` (`file`): no
/// `on`, or a pattern of it matching (names with `::` between segments).
fn read_in(on: &[Pattern], name: &str, file: Option<&str>, project_root: &Path) -> bool {
    on.is_empty() || on.iter().any(|p| p.matches(name, file, project_root))
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

/// Most watches per session.
pub const MAX_WATCHES: usize = 32;
pub use strobe_values::varpath::{MAX_DEREFS, Step, chain_spec, parse_chain};

impl Tracer {
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
                ty: strobe_values::type_name(&w.spec.ty),
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

    /// For a source-level tracer (Python, JavaScript): per hooked function
    /// of `language` (and each of `about_to_hook`), the ids of the
    /// expression watches read there (u16, little-endian). Every hooked
    /// function of that language is listed, so an empty list takes its
    /// watches away. `on` patterns are matched in dotted names.
    pub fn dotted_watch_plans(
        &self,
        language: strobe_symbols::Language,
        about_to_hook: &[u32],
    ) -> Vec<(u32, Vec<u8>)> {
        // Expression watches with their `on` in dotted names, compared
        // segment-wise as Python names are.
        let exprs: Vec<(Vec<Pattern>, u16)> = self
            .watches
            .iter()
            .filter_map(|w| match w.spec.ty {
                WatchType::Expr(id) => Some((
                    w.on.iter()
                        .filter_map(|p| Pattern::parse(&p.text().replace('.', "::")).ok())
                        .collect(),
                    id,
                )),
                _ => None,
            })
            .collect();
        self.hooked
            .iter()
            .chain(about_to_hook)
            .filter(|id| self.language_of(**id) == Some(language))
            .filter_map(|id| {
                let name = self.name_of(*id)?.replace('.', "::");
                let ids: Vec<u8> = exprs
                    .iter()
                    .filter(|(on, _)| read_in(on, &name, None, &self.project_root))
                    .flat_map(|(_, id)| id.to_le_bytes())
                    .collect();
                Some((*id, ids))
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
                size: strobe_values::hint_size(hint).ok_or_else(|| {
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
            let Some(idx) = module.native() else {
                continue;
            };
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
        let path = self.modules[m].path().to_path_buf();
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
            strobe_values::varpath::Start::At(module_base + g.offset, ty),
            types,
            m as u32,
            &steps,
            &mut array_of,
        )
    }
}

/// A watch's slice is read whole at every call, within one plan read
/// ([`strobe_values::BLOCK_MAX`] bytes, [`strobe_values::ARRAY_MAX`]
/// elements): a longer one is refused with the longest that fits, rather
/// than cut at every call.
fn watch_slice_fits(
    expr: &str,
    asked: &std::ops::Range<u64>,
    spec: &WatchSpec,
) -> Result<(), String> {
    use strobe_values::{ARRAY_MAX, BLOCK_MAX};
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
