//! JavaScript breakpoints: a request naming a JavaScript source or a
//! dotted function on a session that runs Node.js is resolved from the
//! JavaScript resolver's index, and set by the debugger worker inside the
//! program (agent/node/debugger.cjs) through the V8 inspector. They travel
//! as the Python debugger's do (`python-breakpoints`, `python_paused`):
//! a source line, a condition and a message in the program's language,
//! and a paused frame's locals in the same payload format. V8 moves a
//! line without code to the next one that has. A TypeScript line is set
//! on the compiled JavaScript through tsc's source maps, and a pause's
//! frames are shown back at their TypeScript lines.

use super::python::{PySite, modules_of, pattern_sites, source_file};
use super::*;
use std::path::Path;
use strobe_symbols::source_maps::SourceMaps;
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
    modules_of(tracer, Language::JavaScript)
}

fn is_typescript(file: &str) -> bool {
    TS_EXTENSIONS.contains(&extension(file))
}

/// Where `line` of TypeScript source `ts` (or the next line with code)
/// runs: a compiled file of the program and its line, through the source
/// maps tsc wrote, and the source line it stops at.
fn compiled_site(
    tracer: &Tracer,
    maps: &mut SourceMaps,
    ts: &Path,
    line: u32,
) -> Result<(PathBuf, u32, u32), SessionError> {
    let mut compiled: Vec<PathBuf> = javascript_modules(tracer)
        .flat_map(|m| m.source_files())
        .filter(|f| !is_typescript(&f.to_string_lossy()))
        .collect();
    compiled.sort();
    compiled.dedup();
    compiled
        .into_iter()
        .find_map(|js| {
            let (at, source_line) = maps.generated(&js, ts, line)?;
            Some((js, at, source_line))
        })
        .ok_or_else(|| {
            err(format!(
                "no compiled JavaScript of the program maps {}:{line} or a line after it: compile with source \
                 maps (tsc's sourceMap) and run the compiled files, or set the breakpoint in the JavaScript",
                ts.display()
            ))
        })
}

/// A TypeScript source the request names: under the project, absolute, or
/// the tail of a source a compiled function came from.
fn typescript_file(tracer: &Tracer, file: &str) -> Result<PathBuf, SessionError> {
    let direct = tracer.project_root.join(file);
    if direct.is_file() {
        return Ok(std::fs::canonicalize(&direct).unwrap_or(direct));
    }
    let tail = file.trim_start_matches("./");
    javascript_modules(tracer)
        .flat_map(|m| (0..).map_while(move |i| m.function(i)).filter_map(|f| f.file))
        .map(PathBuf::from)
        .find(|p| p.ends_with(tail))
        .ok_or_else(|| {
            err(format!(
                "no TypeScript source {file:?} (not under {}); give a path relative to projectRoot or an absolute one",
                tracer.project_root.display()
            ))
        })
}

/// A paused thread's frames in the program's own terms: a compiled
/// file's line at its source's (the compiled place kept as `generated`).
pub(in crate::manager) fn in_source_terms(frames: &mut [Value]) {
    let mut maps = SourceMaps::default();
    for f in frames {
        let (Some(file), Some(line)) = (f["file"].as_str(), f["line"].as_u64()) else {
            continue;
        };
        if !JS_EXTENSIONS.contains(&extension(file)) {
            continue;
        }
        if let Some(o) = maps.original_line(Path::new(file), line as u32) {
            f["generated"] = json!({"file": file, "line": line});
            f["file"] = json!(o.file.to_string_lossy());
            f["line"] = json!(o.line);
        }
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
        let mut maps = SourceMaps::default();
        for m in javascript_modules(tracer) {
            for t in m.resolve_pattern(&pattern, &tracer.project_root).targets {
                let Some(info) = m.function(t.function) else {
                    continue;
                };
                let file = info.file.unwrap_or_default().to_string();
                let line = info.line.unwrap_or(1);
                // A compiled function is named from its TypeScript source.
                let (at_file, at_line, source) = if is_typescript(&file) {
                    let (js, at, src) = compiled_site(tracer, &mut maps, Path::new(&file), line)?;
                    (js.to_string_lossy().into_owned(), at, Some((file, src)))
                } else {
                    (file, line, None)
                };
                sites.push(PySite {
                    file: at_file,
                    line: at_line,
                    qualname: None,
                    function: info.name.to_string(),
                    source,
                });
            }
        }
        return pattern_sites(
            sites,
            format!(
                "no JavaScript function matches {f:?} (names are module.name, e.g. \"orders.Cart.total\"; \"orders.*\" lists a module's)"
            ),
        );
    }
    let file = a.file.as_deref().expect("validated");
    let line = a.line.expect("validated");
    if is_typescript(file) {
        let ts = typescript_file(tracer, file)?;
        let (js, at, source_line) = compiled_site(tracer, &mut SourceMaps::default(), &ts, line)?;
        let ts_text = ts.to_string_lossy().into_owned();
        let note = (source_line != line).then(|| {
            format!("line {line} has no code; moved to line {source_line}, the next line that has")
        });
        return Ok((
            vec![PySite {
                function: function_at(tracer, &ts_text, source_line)
                    .unwrap_or_else(|| "<top level>".into()),
                file: js.to_string_lossy().into_owned(),
                line: at,
                qualname: None,
                source: Some((ts_text, source_line)),
            }],
            note,
        ));
    }
    let path = source_file(tracer, file, Language::JavaScript)?;
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
            source: None,
        }],
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiled_frames_are_shown_at_their_source_lines() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("dist")).unwrap();
        std::fs::write(root.join("src/a.ts"), "// one\nexport function f() {}\n").unwrap();
        std::fs::write(
            root.join("dist/a.js"),
            "function f() {}\n//# sourceMappingURL=a.js.map\n",
        )
        .unwrap();
        std::fs::write(
            root.join("dist/a.js.map"),
            r#"{"version":3,"file":"a.js","sources":["../src/a.ts"],"names":["f"],"mappings":"AACA"}"#,
        )
        .unwrap();
        let js = root.join("dist/a.js").to_string_lossy().into_owned();
        let mut frames = vec![
            json!({"function": "f", "file": js, "line": 1}),
            json!({"function": "g", "file": "node:internal/timers", "line": 5}),
        ];
        in_source_terms(&mut frames);
        assert_eq!(
            frames[0]["file"],
            json!(root.join("src/a.ts").to_string_lossy())
        );
        assert_eq!(frames[0]["line"], 2);
        assert_eq!(frames[0]["generated"], json!({"file": js, "line": 1}));
        assert_eq!(frames[1]["line"], 5, "Node's own code is left as it is");
    }
}
