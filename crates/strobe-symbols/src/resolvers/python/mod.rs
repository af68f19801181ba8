//! The Python resolver: the functions of a program run by CPython, found in
//! its source files, named as the interpreter names their code objects
//! (`module.` + `co_qualname`), for the agent's Python tracer.
//!
//! It opens on the program image when that is a CPython interpreter
//! (`python`, `python3`, `python3.12`, …). It asks the interpreter for its
//! module search path (`sys.path`), works out what the arguments run (a
//! script, `-m module`, `-c`), parses every `.py` file under the project
//! root up front, and parses modules outside it (the standard library,
//! site-packages) only when a pattern names them: `json.decoder.*` loads
//! `json/decoder.py`, `json.**` the whole `json` package. Patterns use
//! Python's dotted names: `inventory.Bin.*` (`*` one segment), `app.**`
//! (any depth), `@usercode` (files found under the project root, never a
//! virtualenv or site-packages inside it), `@file:inventory.py`. A pattern
//! without a module prefix (`**`, `*.validate`, `@file:`) matches only the
//! files already parsed: it never makes the resolver walk the whole
//! search path.
//!
//! Parser: `ruff_python_parser` (Astral's, the parser of Ruff and ty),
//! pinned to 0.0.10, the last release that builds with Rust 1.95. It
//! follows CPython's grammar to the latest syntax (3.12 `type` statements
//! and PEP 695 generics, `match`, 3.14 t-strings), its AST has CPython's
//! shape (decorators, the five parameter kinds that make `co_varnames`),
//! and it recovers from syntax errors, so a broken file still gives its
//! intact functions. It parses the standard library at about 115 MB/s
//! (14 MB/s unoptimized); tree-sitter-python (12 MB/s, a C parser and a
//! concrete tree to interpret) and rustpython-parser 0.4 (no 3.12 syntax)
//! were the alternatives. Its cost is 48 more packages in the build
//! (stacker's assembly and unicode_names2's generated tables among them):
//! about 20 s of a debug build from scratch on two cores, paid once.

mod parse;
mod program;

use super::walk::MAX_DIRS;
pub use super::walk::MAX_FILES;
use super::{Image, ImageKind, Registration, dotted_pattern, source_targets};
use crate::pattern::Pattern;
use crate::{FunctionInfo, Language, Resolution, SymbolError, SymbolResolver};
use parse::{ParsedFile, lock, parse_file};
use program::walk_sources;
pub use program::{ProbeError, Program, is_interpreter, module_name, parse_args, probe_sys_path};
use rayon::prelude::*;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// The Python resolver in the registry: opens on a program image that is a
/// CPython interpreter.
pub const REGISTRATION: Registration = Registration {
    name: "python-source",
    language: Language::Python,
    open: open_image,
};

fn open_image(
    image: &Image<'_>,
    _cache_dir: Option<&Path>,
) -> Option<Result<Arc<dyn SymbolResolver>, SymbolError>> {
    if image.kind != ImageKind::Program || !is_interpreter(image.path) {
        return None;
    }
    Some(Ok(
        Arc::new(PythonResolver::open(image)) as Arc<dyn SymbolResolver>
    ))
}

/// Most loads (the project, then one per pattern that names new modules);
/// the function table is append-only in this many slots.
const MAX_BATCHES: usize = 1024;

/// The message for a pattern in native syntax given to Python code, which
/// it cannot match (Python names are dotted); `None` for other patterns.
pub fn native_syntax_hint(pattern: &str) -> Option<String> {
    if pattern.starts_with('@') || !pattern.contains("::") {
        return None;
    }
    Some(format!(
        "{pattern:?} is native (C/C++/Rust) syntax; Python functions are named with dots: {:?}",
        pattern.replace("::", ".")
    ))
}

/// A function of the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonFunction {
    /// `module.qualname`: what patterns match and messages show
    /// (`inventory.Bin.add`).
    pub name: String,
    /// Its code object's `co_qualname` (`Bin.add`, `f.<locals>.g`).
    pub qualname: String,
    /// Dotted module name (`pkg.inventory`; a script run as `python
    /// app.py` is `app`, not `__main__`).
    pub module: String,
    /// Absolute path of the source file (symlinks resolved).
    pub file: String,
    /// `co_firstlineno`: the first decorator's line when decorated.
    pub line: u32,
    /// The line of the `def`.
    pub def_line: u32,
    /// Its body's first line with code (after the docstring).
    pub body_line: u32,
    /// `async def`.
    pub is_async: bool,
    /// A generator (or, with `is_async`, an async generator).
    pub is_generator: bool,
    /// Argument names in `co_varnames` order.
    pub parameters: Vec<String>,
    /// Found by the project scan (what `@usercode` means).
    pub user: bool,
    /// `name` with `::` for `.`, as [`Pattern`] matches.
    colon_name: String,
}

/// Functions loaded at once, at their place in the table.
struct Batch {
    start: usize,
    functions: Vec<PythonFunction>,
}

#[derive(Default)]
struct State {
    /// Files already in the table.
    loaded: HashSet<PathBuf>,
    /// Batches filled.
    batches: usize,
    /// Functions in the table.
    functions: usize,
    /// Module prefixes already looked up on the search path.
    tried: HashSet<String>,
    warnings: Vec<String>,
}

/// The Python resolver over one interpreter running one program.
pub struct PythonResolver {
    interpreter: Arc<Path>,
    project_root: PathBuf,
    search_path: Vec<PathBuf>,
    program: Program,
    /// The function table, append-only: a slot, once set, is never changed,
    /// so `function` can hand out borrows while patterns load more.
    batches: Box<[OnceLock<Batch>]>,
    state: Mutex<State>,
}

impl std::fmt::Debug for PythonResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PythonResolver")
            .field("interpreter", &self.interpreter)
            .field("project_root", &self.project_root)
            .field("program", &self.program)
            .finish_non_exhaustive()
    }
}

impl PythonResolver {
    /// Opens the resolver for `image` (an interpreter): asks it for its
    /// search path and parses the project's sources. Never fails: what
    /// goes wrong is in [`SymbolResolver::warnings`].
    pub fn open(image: &Image<'_>) -> PythonResolver {
        let project_root = canonical(image.project_root);
        let (program, flags) = parse_args(image.args);
        let mut warnings = Vec::new();
        let script = match &program {
            Program::Script(p) => Some(canonical(&project_root.join(p))),
            _ => None,
        };
        // `python script.py` puts the script's directory (symlinks
        // resolved) first on sys.path; `-m`, `-c` and the REPL the cwd.
        let first = match &script {
            Some(s) if s.is_dir() => s.clone(),
            Some(s) => s.parent().map_or(project_root.clone(), Path::to_path_buf),
            None => project_root.clone(),
        };
        let search_path = match probe_sys_path(image.path, &flags, &project_root, image.env) {
            Ok(entries) => entries
                .into_iter()
                .map(|e| {
                    if e.as_os_str().is_empty() {
                        first.clone()
                    } else {
                        canonical(&project_root.join(e))
                    }
                })
                .collect(),
            Err(e) => {
                warnings.push(format!(
                    "{e}; module names are taken relative to {} and {}",
                    first.display(),
                    project_root.display()
                ));
                vec![first, project_root.clone()]
            }
        };
        let resolver = PythonResolver {
            interpreter: Arc::from(image.path),
            project_root,
            search_path,
            program,
            batches: (0..MAX_BATCHES).map(|_| OnceLock::new()).collect(),
            state: Mutex::new(State {
                warnings,
                ..State::default()
            }),
        };
        resolver.load_project(script.filter(|s| s.is_file()));
        for w in &lock(&resolver.state).warnings {
            tracing::warn!("python resolver: {w}");
        }
        resolver
    }

    /// The interpreter's module search path, as used to name modules.
    pub fn search_path(&self) -> &[PathBuf] {
        &self.search_path
    }

    /// What the arguments run.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Function `index` of the table, with everything known about it.
    pub fn python_function(&self, index: usize) -> Option<&PythonFunction> {
        let filled = self.batches.partition_point(|b| b.get().is_some());
        let batches = &self.batches[..filled];
        let at = batches.partition_point(|b| b.get().is_some_and(|b| b.start <= index));
        let batch = batches.get(at.checked_sub(1)?)?.get()?;
        batch.functions.get(index - batch.start)
    }

    fn functions(&self) -> impl Iterator<Item = (usize, &PythonFunction)> {
        self.batches.iter().map_while(OnceLock::get).flat_map(|b| {
            b.functions
                .iter()
                .enumerate()
                .map(|(i, f)| (b.start + i, f))
        })
    }

    /// Parses the project's sources (and the script, wherever it is).
    fn load_project(&self, script: Option<PathBuf>) {
        let mut state = lock(&self.state);
        let mut files = Vec::new();
        if walk_sources(&self.project_root, &mut files) {
            state.warnings.push(format!(
                "{} is too big to index whole (over {MAX_FILES} Python files or {MAX_DIRS} \
                 directories); the rest is left out (name a module to load it: pkg.module.*)",
                self.project_root.display()
            ));
        }
        let mut files: Vec<(PathBuf, bool)> = files.into_iter().map(|f| (f, true)).collect();
        if let Some(s) = script
            && !files.iter().any(|(f, _)| *f == s)
        {
            files.push((s, true));
        }
        self.load(&mut state, files);
    }

    /// Parses `files` (path, found by the project scan) not yet loaded and
    /// appends their functions as one batch.
    fn load(&self, state: &mut State, files: Vec<(PathBuf, bool)>) {
        let files: Vec<(PathBuf, bool)> = files
            .into_iter()
            .filter(|(f, _)| state.loaded.insert(f.clone()))
            .collect();
        if files.is_empty() {
            return;
        }
        if state.batches >= MAX_BATCHES {
            state.warnings.push(format!(
                "too many separate loads; {} more files not indexed",
                files.len()
            ));
            return;
        }
        let parsed: Vec<_> = files.par_iter().map(|(path, _)| parse_file(path)).collect();
        let mut functions = Vec::new();
        for ((path, user), parsed) in files.iter().zip(parsed) {
            match parsed {
                Ok(p) => {
                    if let Some((first, count)) = &p.syntax_error {
                        state.warnings.push(syntax_warning(path, first, *count, &p));
                    }
                    self.add_functions(&mut functions, path, *user, &p);
                }
                Err(e) => state.warnings.push(e.to_string()),
            }
        }
        let start = state.functions;
        state.functions += functions.len();
        let slot = state.batches;
        state.batches += 1;
        // The state lock makes this the only writer of this slot.
        let _ = self.batches[slot].set(Batch { start, functions });
    }

    fn add_functions(
        &self,
        out: &mut Vec<PythonFunction>,
        path: &Path,
        user: bool,
        parsed: &ParsedFile,
    ) {
        let module = module_name(path, &self.search_path, &self.project_root);
        let file = path.to_string_lossy().into_owned();
        for f in &parsed.functions {
            let name = format!("{module}.{}", f.qualname);
            out.push(PythonFunction {
                colon_name: name.replace('.', "::"),
                name,
                qualname: f.qualname.clone(),
                module: module.clone(),
                file: file.clone(),
                line: f.first_line,
                def_line: f.def_line,
                body_line: f.body_line,
                is_async: f.is_async,
                is_generator: f.is_generator,
                parameters: f.parameters.clone(),
                user,
            });
        }
    }

    /// Loads the module (or for a pattern with wildcards after it, the
    /// package) that the literal dotted prefix of `text` names on the
    /// search path, when not loaded yet.
    fn load_named(&self, text: &str) {
        let segments: Vec<&str> = text.split('.').collect();
        let literal: Vec<&str> = segments
            .iter()
            .copied()
            .take_while(|s| !s.contains('*'))
            .collect();
        let wildcard = literal.len() < segments.len();
        if literal.is_empty() || !literal.iter().all(|s| is_identifier(s)) {
            return;
        }
        let key = format!("{}{}", literal.join("."), if wildcard { ".*" } else { "" });
        let mut state = lock(&self.state);
        if !state.tried.insert(key) {
            return;
        }
        let Some(found) = (1..=literal.len())
            .rev()
            .find_map(|n| self.locate(&literal[..n]))
        else {
            return;
        };
        let files = match found {
            Located::Module(file) => vec![file],
            Located::Package(dir) if wildcard => {
                let mut files = Vec::new();
                if walk_sources(&dir, &mut files) {
                    state.warnings.push(format!(
                        "{} is too big to index whole (over {MAX_FILES} Python files or {MAX_DIRS} \
                         directories); the rest is left out",
                        dir.display()
                    ));
                }
                files
            }
            Located::Package(dir) => vec![dir.join("__init__.py")],
        };
        let files = files
            .into_iter()
            .filter(|f| f.is_file())
            .map(|f| (f, false))
            .collect();
        self.load(&mut state, files);
    }

    /// The module `segments` names, in the first search path entry that
    /// has it.
    fn locate(&self, segments: &[&str]) -> Option<Located> {
        let rel: PathBuf = segments.iter().collect();
        self.search_path.iter().find_map(|entry| {
            let base = entry.join(&rel);
            if base.is_dir() {
                return Some(Located::Package(base));
            }
            let file = base.with_extension("py");
            file.is_file().then_some(Located::Module(file))
        })
    }
}

/// Where a dotted name is on the search path.
enum Located {
    /// `name.py`.
    Module(PathBuf),
    /// A directory (a package, with `__init__.py` or a namespace package).
    Package(PathBuf),
}

impl SymbolResolver for PythonResolver {
    fn name(&self) -> &'static str {
        "python-source"
    }

    fn language(&self) -> Language {
        Language::Python
    }

    fn path(&self) -> &Path {
        &self.interpreter
    }

    fn resolve_pattern(&self, pattern: &Pattern, project_root: &Path) -> Resolution {
        let _ = project_root; // @usercode is the project scan's files.
        let dotted = match pattern {
            Pattern::Glob { text, .. } => {
                let Some(p) = dotted_pattern(text) else {
                    return Resolution::default();
                };
                self.load_named(text);
                Some(p)
            }
            _ => None,
        };
        let matches = |f: &PythonFunction| match (pattern, &dotted) {
            (_, Some(p)) => p.matches(&f.colon_name, None, Path::new("/")),
            (Pattern::UserCode, _) => f.user,
            (Pattern::File(part), _) => f.file.contains(part.as_str()),
            (Pattern::Glob { .. }, None) => false,
        };
        source_targets(
            &self.interpreter,
            self.functions()
                .filter(|(_, f)| matches(f))
                .map(|(i, f)| (i, f.name.as_str())),
        )
    }

    fn function(&self, index: usize) -> Option<FunctionInfo<'_>> {
        let f = self.python_function(index)?;
        Some(FunctionInfo {
            name: &f.name,
            name_raw: Some(&f.qualname),
            file: Some(&f.file),
            line: Some(f.line),
        })
    }

    fn parameters(&self, index: usize) -> Vec<String> {
        self.python_function(index)
            .map(|f| f.parameters.clone())
            .unwrap_or_default()
    }

    fn warnings(&self) -> Vec<String> {
        lock(&self.state).warnings.clone()
    }

    fn body_line(&self, index: usize) -> Option<u32> {
        self.python_function(index).map(|f| f.body_line)
    }

    fn statement_lines(&self, file: &Path) -> Option<Vec<u32>> {
        parse_file(file).ok().map(|p| p.statement_lines.clone())
    }

    fn source_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = lock(&self.state).loaded.iter().cloned().collect();
        files.sort();
        files
    }
}

fn syntax_warning(path: &Path, first: &str, count: usize, parsed: &ParsedFile) -> String {
    let more = if count > 1 {
        format!(" (and {} more)", count - 1)
    } else {
        String::new()
    };
    format!(
        "syntax error in {} at {first}{more}; {} of its functions indexed, those containing an error left out",
        path.display(),
        parsed.functions.len()
    )
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests;
