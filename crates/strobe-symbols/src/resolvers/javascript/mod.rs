//! The JavaScript resolver: the functions of a program run by Node.js,
//! found in its JavaScript and TypeScript sources under the project root,
//! named `module.qualname` (`auth.validate`, `api.users.Router.handle`;
//! the naming rules are in [`program::module_name`] and `parse.rs`).
//!
//! It opens on the program image when that is `node`. It parses every
//! source under the project root up front (`.js .mjs .cjs .jsx .ts .mts
//! .cts .tsx`, never `node_modules` or a dot-directory), and a package in
//! `node_modules` when a pattern's first segment names it (`semver.**`:
//! its modules named from `node_modules`, `semver.functions.parse`);
//! compiled output
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
//! Its functions are traced through probes written into the sources
//! (`instrument.rs`, `probes.rs`).

mod bindings;
pub mod instrument;
mod parse;
pub mod probes;
mod program;

use super::{Image, ImageKind, Registration, dotted_pattern, source_targets};
use crate::pattern::Pattern;
use crate::{FunctionInfo, Language, Resolution, SymbolError, SymbolResolver};
pub use parse::{ParsedFile, ParsedFunction, ProbeSite, ReturnSite, parse_source};
pub use program::{is_node, is_source, module_name, script_of};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

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

/// Most packages one resolver loads (each one batch of its append-only
/// table).
const MAX_PACKAGES: usize = 256;

/// One loaded package's functions, and the index of its first.
type PackageBatch = (usize, Vec<JsFunction>);

/// The JavaScript resolver over one Node.js program.
#[derive(Debug)]
pub struct JavaScriptResolver {
    node: Arc<Path>,
    root: PathBuf,
    functions: Vec<JsFunction>,
    files: Vec<PathBuf>,
    /// Compiled files with a source map (their functions are named from
    /// their sources, so they are not in `files`).
    compiled: Vec<PathBuf>,
    warnings: Vec<String>,
    /// Packages a pattern named, loaded then: append-only (a slot, once
    /// set, never changes), so `function` can hand out borrows while
    /// patterns load more. Each holds its first function index.
    packages: Box<[OnceLock<PackageBatch>]>,
    loaded: Mutex<Vec<PathBuf>>,
}

/// The package under `root/node_modules` a dotted pattern's first segment
/// names (`semver.**` → `node_modules/semver`), when there is one.
pub fn named_package(pattern: &str, root: &Path) -> Option<PathBuf> {
    let first = pattern.split('.').next()?;
    if first.is_empty() || first.starts_with('@') || first.contains(['*', '?', '[', '/']) {
        return None;
    }
    let dir = root.join("node_modules").join(first);
    dir.is_dir().then(|| canonical(&dir))
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
        let mut compiled = Vec::new();
        for (file, parsed) in files.into_iter().zip(parsed) {
            let parsed = match parsed {
                Ok(p) => p,
                Err(e) => {
                    warnings.push(format!("{}: {e}", file.display()));
                    continue;
                }
            };
            if parsed.has_source_map && is_compiled(&file) {
                // Named from its sources; kept for breakpoints on them.
                compiled.push(file);
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
                functions.push(js_function(&module, &path, f));
            }
            kept.push(file);
        }
        for w in &warnings {
            tracing::warn!("javascript resolver: {w}");
        }
        JavaScriptResolver {
            node: Arc::from(image.path),
            root,
            functions,
            files: kept,
            compiled,
            warnings,
            packages: (0..MAX_PACKAGES).map(|_| OnceLock::new()).collect(),
            loaded: Mutex::new(Vec::new()),
        }
    }

    /// The project's functions, in file then source order.
    pub fn functions(&self) -> &[JsFunction] {
        &self.functions
    }

    /// Every function indexed: the project's, then the packages' loaded.
    fn all(&self) -> impl Iterator<Item = (usize, &JsFunction)> {
        self.functions.iter().enumerate().chain(
            self.packages
                .iter()
                .map_while(OnceLock::get)
                .flat_map(|(start, fs)| fs.iter().enumerate().map(move |(i, f)| (start + i, f))),
        )
    }

    fn function_at(&self, index: usize) -> Option<&JsFunction> {
        if let Some(f) = self.functions.get(index) {
            return Some(f);
        }
        self.packages
            .iter()
            .map_while(OnceLock::get)
            .find(|(start, fs)| (*start..start + fs.len()).contains(&index))
            .map(|(start, fs)| &fs[index - start])
    }

    /// Indexes the package at `dir` (its sources, not its own
    /// `node_modules`), named from `node_modules` (`semver/functions/
    /// parse.js` → `semver.functions.parse`), unless it was.
    fn load_package(&self, dir: &Path) {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if loaded.iter().any(|d| d == dir) || loaded.len() >= MAX_PACKAGES {
            return;
        }
        let Some(modules) = dir.parent() else { return };
        let mut files = Vec::new();
        program::walk_sources(dir, &mut files);
        let parsed: Vec<_> = files
            .par_iter()
            .map(|f| std::fs::read_to_string(f).map(|text| parse_source(f, &text)))
            .collect();
        let start = self.functions.len()
            + self
                .packages
                .iter()
                .map_while(OnceLock::get)
                .map(|(_, fs)| fs.len())
                .sum::<usize>();
        let mut functions = Vec::new();
        for (file, parsed) in files.iter().zip(parsed) {
            let Ok(parsed) = parsed else { continue };
            let module = module_name(file, modules);
            let path = file.to_string_lossy().into_owned();
            for f in parsed.functions {
                functions.push(js_function(&module, &path, f));
            }
        }
        let slot = loaded.len();
        loaded.push(dir.to_path_buf());
        // The lock makes this the only writer of this slot.
        let _ = self.packages[slot].set((start, functions));
    }
}

/// A parsed function of `file` (module `module`), as the resolver lists it.
fn js_function(module: &str, file: &str, f: ParsedFunction) -> JsFunction {
    let name = format!("{module}.{}", f.qualname);
    JsFunction {
        colon_name: name.replace('.', "::"),
        name,
        qualname: f.qualname,
        module: module.to_string(),
        file: file.to_string(),
        line: f.line,
        is_async: f.is_async,
        is_generator: f.is_generator,
        parameters: f.parameters,
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
                Some(p) => {
                    if let Some(dir) = named_package(text, &self.root) {
                        self.load_package(&dir);
                    }
                    Some(p)
                }
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
        // `@usercode` is the project's own code, never a package's.
        let user = self.functions.len();
        source_targets(
            &self.node,
            self.all()
                .filter(|(i, f)| matches(f) && (*i < user || !matches!(pattern, Pattern::UserCode)))
                .map(|(i, f)| (i, f.name.as_str())),
        )
    }

    fn function(&self, index: usize) -> Option<FunctionInfo<'_>> {
        let f = self.function_at(index)?;
        Some(FunctionInfo {
            name: &f.name,
            name_raw: Some(&f.qualname),
            file: Some(&f.file),
            line: Some(f.line),
        })
    }

    fn parameters(&self, index: usize) -> Vec<String> {
        self.function_at(index)
            .map(|f| f.parameters.clone())
            .unwrap_or_default()
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// The sources indexed, then the compiled files (with a source map)
    /// Node runs in their stead.
    fn source_files(&self) -> Vec<PathBuf> {
        self.files.iter().chain(&self.compiled).cloned().collect()
    }
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests;
