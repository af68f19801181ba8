//! JavaScript breakpoints: a request naming a JavaScript source or a
//! dotted function on a session that runs Node.js is resolved from the
//! JavaScript resolver's index, and set by the debugger worker inside the
//! program (agent/node/debugger.cjs) through the V8 inspector. They travel
//! as the Python debugger's do (`python-breakpoints`, `python_paused`):
//! a source line, a condition and a message in the program's language,
//! and a paused frame's locals in the same payload format. V8 moves a
//! line without code to the next one that has.

use super::python::PySite;
use super::*;
use strobe_symbols::{Language, SymbolResolver};

/// Extensions of the sources Node.js runs.
const JS_EXTENSIONS: [&str; 4] = ["js", "mjs", "cjs", "jsx"];
/// Extensions of TypeScript sources (run as the JavaScript they compile to).
const TS_EXTENSIONS: [&str; 4] = ["ts", "mts", "cts", "tsx"];

fn extension(file: &str) -> &str {
    std::path::Path::new(file)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
}

/// Whether request `a` is for JavaScript code: the session runs Node.js
/// and it names a JavaScript or TypeScript file or a dotted (not `::`)
/// function.
pub(in crate::manager) fn is_javascript_request(tracer: &Tracer, a: &BreakpointRequest) -> bool {
    if !tracer.has_language(Language::JavaScript) {
        return false;
    }
    match (&a.function, &a.file) {
        (_, Some(f)) => {
            JS_EXTENSIONS.contains(&extension(f)) || TS_EXTENSIONS.contains(&extension(f))
        }
        (Some(f), None) => !f.contains("::"),
        _ => false,
    }
}

fn javascript_modules(tracer: &Tracer) -> impl Iterator<Item = &Arc<dyn SymbolResolver>> {
    tracer
        .modules
        .iter()
        .filter(|m| m.language() == Language::JavaScript)
}

/// A TypeScript source cannot take a breakpoint yet: V8 runs the compiled
/// JavaScript, and mapping lines back is still to come.
fn not_typescript(file: &str) -> Result<(), SessionError> {
    if TS_EXTENSIONS.contains(&extension(file)) {
        return Err(err(format!(
            "{file} is TypeScript: breakpoints in TypeScript lines are not supported yet; set it on the \
             line of the JavaScript tsc compiled it to (the .js file beside it or in outDir)"
        )));
    }
    Ok(())
}

/// The one source file `file` names: a path under the project (or an
/// absolute one), or the tail of a file the resolver indexed.
fn source_file(tracer: &Tracer, file: &str) -> Result<PathBuf, SessionError> {
    let direct = tracer.project_root.join(file);
    if direct.is_file() {
        return Ok(std::fs::canonicalize(&direct).unwrap_or(direct));
    }
    let tail = file.trim_start_matches("./");
    let mut found: Vec<PathBuf> = javascript_modules(tracer)
        .flat_map(|m| m.source_files())
        .filter(|p| p.ends_with(tail))
        .collect();
    found.sort();
    found.dedup();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(err(format!(
            "no JavaScript source {file:?} in the program (not under {}); give a path relative to projectRoot or an absolute one",
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

/// The function of `file` declared last at or above `line`, as patterns
/// name it; `None` for top-level code.
pub(in crate::manager) fn function_at(tracer: &Tracer, file: &str, line: u32) -> Option<String> {
    let mut best: Option<(u32, String)> = None;
    for m in javascript_modules(tracer) {
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
    best.map(|(_, name)| name)
}

/// The sites of a JavaScript request: a function pattern's functions
/// (each where it is declared: V8 stops at its first statement) or a
/// file's line.
pub(in crate::manager) fn resolve_javascript(
    tracer: &Tracer,
    a: &BreakpointRequest,
) -> Result<(Vec<PySite>, Option<String>), SessionError> {
    if let Some(f) = &a.function {
        let pattern = strobe_symbols::Pattern::parse(f)
            .map_err(|e| err(format!("'function' {f:?} is not a valid pattern: {e}")))?;
        let mut sites = Vec::new();
        for m in javascript_modules(tracer) {
            for t in m.resolve_pattern(&pattern, &tracer.project_root).targets {
                let Some(info) = m.function(t.function) else {
                    continue;
                };
                let file = info.file.unwrap_or_default().to_string();
                not_typescript(&file)?;
                sites.push(PySite {
                    file,
                    line: info.line.unwrap_or(1),
                    qualname: None,
                    function: info.name.to_string(),
                });
            }
        }
        if sites.is_empty() {
            return Err(err(format!(
                "no JavaScript function matches {f:?} (names are module.name, e.g. \"orders.Cart.total\"; \"orders.*\" lists a module's)"
            )));
        }
        if sites.len() > frames::MAX_SITES {
            return Err(err(format!(
                "it matches {} functions (at most {}); narrow the pattern",
                sites.len(),
                frames::MAX_SITES
            )));
        }
        return Ok((sites, None));
    }
    let file = a.file.as_deref().expect("validated");
    let line = a.line.expect("validated");
    not_typescript(file)?;
    let path = source_file(tracer, file)?;
    let lines = std::fs::read_to_string(&path)
        .map_err(|e| err(format!("cannot read {}: {e}", path.display())))?
        .lines()
        .count() as u32;
    if line > lines {
        return Err(err(format!(
            "{file} has {lines} lines; line {line} is past its end"
        )));
    }
    let file_text = path.to_string_lossy().into_owned();
    Ok((
        vec![PySite {
            function: function_at(tracer, &file_text, line).unwrap_or_else(|| "<top level>".into()),
            file: file_text,
            line,
            qualname: None,
        }],
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typescript_sources_are_refused_with_the_way_round() {
        let e = not_typescript("src/router.ts").unwrap_err().to_string();
        assert!(e.contains("TypeScript") && e.contains(".js"), "{e}");
        assert!(not_typescript("src/router.js").is_ok());
        assert!(not_typescript("src/router.mjs").is_ok());
    }
}
