//! Python breakpoints: a request naming a `.py` file or a dotted function
//! on a session that runs Python is resolved from source (the statement
//! lines the Python resolver parsed), not from DWARF, and set by the
//! agent's Python debugger (agent/src/tracers/python/debugger.ts), which
//! compiles conditions and message expressions with the interpreter
//! itself. A paused Python thread reports its frames and locals at once.

use super::*;
use strobe_frida::agent_protocol::{PyBreakpointSpec, PyStepMode, PythonPaused};
use strobe_symbols::{Language, SymbolResolver};

/// Whether request `a` is for Python code: the session runs Python and it
/// names a Python source file or a dotted (not `::`) function.
pub(in crate::manager) fn is_python_request(tracer: &Tracer, a: &BreakpointRequest) -> bool {
    if !tracer.has_language(Language::Python) {
        return false;
    }
    match (&a.function, &a.file) {
        (_, Some(f)) => f.ends_with(".py") || f.ends_with(".pyw"),
        (Some(f), None) => !f.contains("::"),
        _ => false,
    }
}

/// Where a Python breakpoint stops: a line of a file, in one code object
/// when `qualname` is set (a function breakpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::manager) struct PySite {
    /// Source file (absolute).
    pub(in crate::manager) file: String,
    /// Line.
    pub(in crate::manager) line: u32,
    /// `co_qualname` of the one code object it applies to.
    pub(in crate::manager) qualname: Option<String>,
    /// The function it is in, as patterns name it.
    pub(in crate::manager) function: String,
    /// Where it is in the program's own terms when that is not where it is
    /// set: a TypeScript line, for JavaScript compiled from it.
    pub(in crate::manager) source: Option<(String, u32)>,
}

impl PySite {
    /// The agent's description of it.
    pub(in crate::manager) fn spec(
        &self,
        a: &BreakpointRequest,
        agent_id: String,
    ) -> PyBreakpointSpec {
        PyBreakpointSpec {
            id: agent_id,
            file: self.file.clone(),
            line: self.line,
            qualname: self.qualname.clone(),
            condition: a.condition.clone(),
            hit_count: a.hit_count,
            message: a.message.clone(),
        }
    }

    /// `file:line`, as `addresses` lists it.
    pub(in crate::manager) fn place(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }

    /// The file and line it is reported at.
    pub(in crate::manager) fn shown(&self) -> (String, u32) {
        self.source
            .clone()
            .unwrap_or_else(|| (self.file.clone(), self.line))
    }
}

fn python_modules(tracer: &Tracer) -> impl Iterator<Item = &Arc<dyn SymbolResolver>> {
    modules_of(tracer, Language::Python)
}

/// The resolvers of one language's sources.
pub(super) fn modules_of(
    tracer: &Tracer,
    language: Language,
) -> impl Iterator<Item = &Arc<dyn SymbolResolver>> {
    tracer
        .modules
        .iter()
        .filter(move |m| m.language() == language)
}

/// Does `path` end with the path components of `tail`?
fn ends_with_components(path: &std::path::Path, tail: &str) -> bool {
    path.ends_with(tail.trim_start_matches("./"))
}

/// The one source file `file` names: an absolute path, a path under the
/// project, or the tail of a file a resolver of `language` indexed.
pub(super) fn source_file(
    tracer: &Tracer,
    file: &str,
    language: Language,
) -> Result<PathBuf, SessionError> {
    let direct = tracer.project_root.join(file);
    if direct.is_file() {
        return Ok(std::fs::canonicalize(&direct).unwrap_or(direct));
    }
    let mut found: Vec<PathBuf> = modules_of(tracer, language)
        .flat_map(|m| m.source_files())
        .filter(|p| ends_with_components(p, file))
        .collect();
    found.sort();
    found.dedup();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(err(format!(
            "no {} source {file:?} in the program (not under {} and not a module it loaded); give a path relative to projectRoot or an absolute one",
            if language == Language::Python {
                "Python"
            } else {
                "JavaScript"
            },
            tracer.project_root.display()
        ))),
        n => Err(err(format!(
            "{file:?} matches {n} files ({}); give more of its path",
            found
                .iter()
                .take(5)
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// A function pattern's sites, or why there are none or too many
/// (`none` says how the language names functions).
pub(super) fn pattern_sites(
    sites: Vec<PySite>,
    none: String,
) -> Result<(Vec<PySite>, Option<String>), SessionError> {
    if sites.is_empty() {
        return Err(err(none));
    }
    if sites.len() > frames::MAX_SITES {
        return Err(err(format!(
            "it matches {} functions (at most {}); narrow the pattern",
            sites.len(),
            frames::MAX_SITES
        )));
    }
    Ok((sites, None))
}

/// The function of `file` whose code holds `line`, as patterns name it
/// (the innermost `def` at or above it), else the module.
fn function_at(tracer: &Tracer, file: &str, line: u32) -> String {
    let mut best: Option<(u32, String)> = None;
    for m in python_modules(tracer) {
        for i in 0.. {
            let Some(f) = m.function(i) else { break };
            let starts = f.line.unwrap_or(0);
            if f.file == Some(file)
                && starts <= line
                && best.as_ref().is_none_or(|(l, _)| *l <= starts)
            {
                best = Some((starts, f.name.to_string()));
            }
        }
    }
    best.map_or_else(|| "<module>".to_string(), |(_, name)| name)
}

/// The sites of a Python request, and a note when its line moved.
pub(in crate::manager) fn resolve_python(
    tracer: &Tracer,
    a: &BreakpointRequest,
) -> Result<(Vec<PySite>, Option<String>), SessionError> {
    if let Some(f) = &a.function {
        let pattern = strobe_symbols::Pattern::parse(f)
            .map_err(|e| err(format!("'function' {f:?} is not a valid pattern: {e}")))?;
        let mut sites = Vec::new();
        for m in python_modules(tracer) {
            for t in m.resolve_pattern(&pattern, &tracer.project_root).targets {
                let (Some(info), Some(body)) = (m.function(t.function), m.body_line(t.function))
                else {
                    continue;
                };
                sites.push(PySite {
                    file: info.file.unwrap_or_default().to_string(),
                    line: body,
                    qualname: Some(info.name_raw.unwrap_or(info.name).to_string()),
                    function: info.name.to_string(),
                    source: None,
                });
            }
        }
        return pattern_sites(
            sites,
            format!(
                "no Python function matches {f:?} (names are module.qualname, e.g. \"shop.Cart.total\"; \"shop.*\" lists a module's)"
            ),
        );
    }
    let file = a.file.as_deref().expect("validated");
    let line = a.line.expect("validated");
    let path = source_file(tracer, file, Language::Python)?;
    let lines = python_modules(tracer)
        .find_map(|m| m.statement_lines(&path))
        .ok_or_else(|| err(format!("cannot read {}", path.display())))?;
    let Some(&at) = lines.iter().find(|&&l| l >= line) else {
        return Err(err(format!(
            "no code at or after {file}:{line} (its last statement is on line {})",
            lines.last().copied().unwrap_or(0)
        )));
    };
    let file_text = path.to_string_lossy().into_owned();
    let note = (at != line)
        .then(|| format!("line {line} has no code; moved to line {at}, the next line that has"));
    Ok((
        vec![PySite {
            function: function_at(tracer, &file_text, at),
            file: file_text,
            line: at,
            qualname: None,
            source: None,
        }],
        note,
    ))
}

/// The step order for a paused Python thread.
pub(in crate::manager) fn python_step(action: &str) -> ResumeOrder {
    ResumeOrder::PyStep {
        mode: match action {
            "step-into" => PyStepMode::Into,
            "step-out" => PyStepMode::Out,
            _ => PyStepMode::Over,
        },
    }
}

impl SessionManager {
    /// A Python thread paused (or a Node.js main thread, reported alike):
    /// its frames and locals are in the payload.
    pub(in crate::manager) fn on_python_paused(&self, live: &Live, paused: &PythonPaused) {
        let (mut frames, locals) =
            strobe_values::python::paused(&paused.payload).unwrap_or_default();
        // Compiled JavaScript's frames at their TypeScript lines.
        super::javascript::in_source_terms(&mut frames);
        let top = frames.first().cloned().unwrap_or(Value::Null);
        let breakpoint = paused
            .breakpoint
            .as_deref()
            .map(|s| s.split('@').next().unwrap_or(s).to_string());
        let file = top["file"].as_str().map(str::to_string);
        let line = top["line"].as_u64().map(|l| l as u32);
        let guard = live.tracer.lock().expect("tracer lock");
        // Named as patterns name it (module.qualname) when the source is indexed.
        let function = match (&file, line, guard.as_ref()) {
            (Some(f), Some(l), Some(tracer)) => Some(function_at(tracer, f, l))
                .filter(|n| n != "<module>" && n.ends_with(top["function"].as_str().unwrap_or("")))
                .or_else(|| super::javascript::function_at(tracer, f, l)),
            _ => None,
        }
        .or_else(|| top["function"].as_str().map(str::to_string));
        // No instruction address: the language it is paused in.
        let javascript = guard
            .as_ref()
            .is_some_and(|t| t.has_language(Language::JavaScript));
        drop(guard);
        let p = PausedThread {
            thread_id: paused.tid,
            reason: paused.reason.as_str().to_string(),
            breakpoint_id: breakpoint.clone(),
            function,
            file,
            line,
            address: if javascript { "javascript" } else { "python" }.into(),
            arguments: Vec::new(),
            locals: Some(locals),
            backtrace: Value::Array(frames),
            paused_at_ns: paused.ts.saturating_sub(live.origin_ns),
            hit_to_visible_us: 0.0,
            seq: 0,
            regs: Registers::default(),
            location: None,
            image_base: 0,
            python: true,
        };
        self.publish_pause(live, p, paused.hits, paused.ts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_tail_matches_whole_components() {
        let p = std::path::Path::new("/app/pkg/shop.py");
        assert!(ends_with_components(p, "shop.py"));
        assert!(ends_with_components(p, "pkg/shop.py"));
        assert!(ends_with_components(p, "./pkg/shop.py"));
        assert!(!ends_with_components(p, "hop.py"));
    }

    #[test]
    fn steps_map_to_python_modes() {
        assert_eq!(
            python_step("step-into"),
            ResumeOrder::PyStep {
                mode: PyStepMode::Into
            }
        );
        assert_eq!(
            python_step("step-out"),
            ResumeOrder::PyStep {
                mode: PyStepMode::Out
            }
        );
        assert_eq!(
            python_step("step-over"),
            ResumeOrder::PyStep {
                mode: PyStepMode::Over
            }
        );
    }
}
