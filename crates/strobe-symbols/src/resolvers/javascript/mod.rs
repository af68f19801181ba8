//! The JavaScript resolver: the functions of a program run by Node.js,
//! found in its JavaScript and TypeScript sources under the project root,
//! named `module.qualname` (`auth.validate`, `api.users.Router.handle`;
//! the naming rules are in [`program::module_name`] and `parse.rs`).
//!
//! It opens on the program image when that is `node`. It parses every
//! source under the project root up front (`.js .mjs .cjs .jsx .ts .mts
//! .cts .tsx`, never `node_modules` or a dot-directory); compiled output
//! that ends with a `//# sourceMappingURL=` comment is left out, since its
//! functions are listed from the sources it was compiled from. Patterns use
//! dotted names like Python's: `Router.*` (`*` one segment), `api.**` (any
//! depth), `@usercode` (everything indexed: the project's own files),
//! `@file:router.ts`.
//!
//! Parser: oxc (`oxc_parser` 0.146, pinned with its sibling crates). It
//! parses JavaScript, TypeScript and JSX to the latest syntax with one
//! arena-allocated AST, recovers from syntax errors, and is the fastest
//! of the Rust parsers (swc's is the other well-kept one, with a larger
//! dependency tree); its crates add about 20 s to a debug build from
//! scratch on two cores.
//!
//! What this resolver gives today is names, files, lines and parameters
//! before anything runs; no agent tracer hooks JavaScript functions yet,
//! and the daemon says so when a pattern matches them.

mod parse;
mod program;

use super::{Image, ImageKind, Registration, dotted_pattern, source_targets};
use crate::pattern::Pattern;
use crate::{FunctionInfo, Language, Resolution, SymbolError, SymbolResolver};
pub use parse::{ParsedFile, ParsedFunction, parse_source};
pub use program::{is_node, is_source, module_name, script_of};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The JavaScript resolver in the registry: opens on a program image that
/// is Node.js.
pub const REGISTRATION: Registration = Registration {
    name: "javascript-source",
    language: Language::JavaScript,
    open: open_image,
};

fn open_image(
    image: &Image<'_>,
    _cache_dir: Option<&Path>,
) -> Option<Result<Arc<dyn SymbolResolver>, SymbolError>> {
    if image.kind != ImageKind::Program || !is_node(image.path) {
        return None;
    }
    Some(Ok(
        Arc::new(JavaScriptResolver::open(image)) as Arc<dyn SymbolResolver>
    ))
}

/// A function of the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsFunction {
    /// `module.qualname`: what patterns match and messages show.
    pub name: String,
    /// Its name within the module (`Router.handle`).
    pub qualname: String,
    /// The module name.
    pub module: String,
    /// Absolute path of the source file.
    pub file: String,
    /// 1-based line where it starts.
    pub line: u32,
    /// `async`.
    pub is_async: bool,
    /// A generator.
    pub is_generator: bool,
    /// Parameter names.
    pub parameters: Vec<String>,
    /// `name` with `::` for `.`, as [`Pattern`] matches.
    colon_name: String,
}

/// The JavaScript resolver over one Node.js program.
#[derive(Debug)]
pub struct JavaScriptResolver {
    node: Arc<Path>,
    functions: Vec<JsFunction>,
    files: Vec<PathBuf>,
    warnings: Vec<String>,
}

impl JavaScriptResolver {
    /// Opens the resolver for `image` (a `node` binary): parses the
    /// project's sources, and the script wherever it is. Never fails: what
    /// goes wrong is in [`SymbolResolver::warnings`].
    pub fn open(image: &Image<'_>) -> JavaScriptResolver {
        let root = canonical(image.project_root);
        let mut warnings = Vec::new();
        let mut files = Vec::new();
        if program::walk_sources(&root, &mut files) {
            warnings.push(format!(
                "{} is too big to index whole (over {} source files or {} directories); the rest is left out",
                root.display(),
                super::walk::MAX_FILES,
                super::walk::MAX_DIRS
            ));
        }
        if let Some(script) = script_of(image.args) {
            let script = canonical(&root.join(script));
            if script.is_file() && is_source(&script) && !files.contains(&script) {
                files.push(script);
            }
        }
        let parsed: Vec<_> = files
            .par_iter()
            .map(|f| std::fs::read_to_string(f).map(|text| parse_source(f, &text)))
            .collect();
        let mut functions = Vec::new();
        let mut kept = Vec::new();
        for (file, parsed) in files.into_iter().zip(parsed) {
            let parsed = match parsed {
                Ok(p) => p,
                Err(e) => {
                    warnings.push(format!("{}: {e}", file.display()));
                    continue;
                }
            };
            if parsed.has_source_map && is_compiled(&file) {
                continue;
            }
            if let Some((first, count)) = &parsed.syntax_error {
                let more = if *count > 1 {
                    format!(" (and {} more)", count - 1)
                } else {
                    String::new()
                };
                warnings.push(format!(
                    "syntax error in {} at {first}{more}; {} of its functions indexed",
                    file.display(),
                    parsed.functions.len()
                ));
            }
            let module = module_name(&file, &root);
            let path = file.to_string_lossy().into_owned();
            for f in parsed.functions {
                let name = format!("{module}.{}", f.qualname);
                functions.push(JsFunction {
                    colon_name: name.replace('.', "::"),
                    name,
                    qualname: f.qualname,
                    module: module.clone(),
                    file: path.clone(),
                    line: f.line,
                    is_async: f.is_async,
                    is_generator: f.is_generator,
                    parameters: f.parameters,
                });
            }
            kept.push(file);
        }
        for w in &warnings {
            tracing::warn!("javascript resolver: {w}");
        }
        JavaScriptResolver {
            node: Arc::from(image.path),
            functions,
            files: kept,
            warnings,
        }
    }

    /// Every function indexed, in file then source order.
    pub fn functions(&self) -> &[JsFunction] {
        &self.functions
    }
}

/// JavaScript a compiler wrote (its functions are named from the sources
/// its source map points to).
fn is_compiled(file: &Path) -> bool {
    file.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "js" | "mjs" | "cjs"))
}

impl SymbolResolver for JavaScriptResolver {
    fn name(&self) -> &'static str {
        "javascript-source"
    }

    fn language(&self) -> Language {
        Language::JavaScript
    }

    fn path(&self) -> &Path {
        &self.node
    }

    fn resolve_pattern(&self, pattern: &Pattern, _project_root: &Path) -> Resolution {
        let dotted = match pattern {
            Pattern::Glob { text, .. } => match dotted_pattern(text) {
                Some(p) => Some(p),
                None => return Resolution::default(),
            },
            _ => None,
        };
        let matches = |f: &JsFunction| match (pattern, &dotted) {
            (_, Some(p)) => p.matches(&f.colon_name, None, Path::new("/")),
            (Pattern::UserCode, _) => true,
            (Pattern::File(part), _) => f.file.contains(part.as_str()),
            (Pattern::Glob { .. }, None) => false,
        };
        source_targets(
            &self.node,
            self.functions
                .iter()
                .enumerate()
                .filter(|(_, f)| matches(f))
                .map(|(i, f)| (i, f.name.as_str())),
        )
    }

    fn function(&self, index: usize) -> Option<FunctionInfo<'_>> {
        let f = self.functions.get(index)?;
        Some(FunctionInfo {
            name: &f.name,
            name_raw: Some(&f.qualname),
            file: Some(&f.file),
            line: Some(f.line),
        })
    }

    fn parameters(&self, index: usize) -> Vec<String> {
        self.functions
            .get(index)
            .map(|f| f.parameters.clone())
            .unwrap_or_default()
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn source_files(&self) -> Vec<PathBuf> {
        self.files.clone()
    }
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests;
