//! One Python source file to the functions CPython will compile from it:
//! each `def` / `async def` with the `co_qualname`, `co_firstlineno` and
//! argument names (`co_varnames` order) its code object will have, and a
//! process-wide cache of parsed files keyed by path, mtime and size.

use ruff_python_ast::statement_visitor::{self, StatementVisitor};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Parameters, Stmt};
use ruff_python_parser::parse_unchecked_source;
use ruff_text_size::{Ranged, TextSize};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::SystemTime;

/// A function as its file defines it, before a module name is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ParsedFunction {
    /// `__qualname__` / `co_qualname` (`Outer.method`, `f.<locals>.g`).
    pub(super) qualname: String,
    /// `co_firstlineno`: the first decorator's line for a decorated
    /// function, else the `def` line.
    pub(super) first_line: u32,
    /// The line of the `def` (its name, to be exact).
    pub(super) def_line: u32,
    /// The line of its body's first statement after the docstring: where
    /// a breakpoint on the function stops.
    pub(super) body_line: u32,
    /// `async def`.
    pub(super) is_async: bool,
    /// Contains `yield` / `yield from` in its own scope.
    pub(super) is_generator: bool,
    /// Argument names as `co_varnames` starts: positional-only,
    /// positional-or-keyword, keyword-only, `*args`, `**kwargs`, with
    /// private names mangled as inside a class.
    pub(super) parameters: Vec<String>,
}

/// What one file gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct ParsedFile {
    /// Its functions, in source order of their `def`s.
    pub(super) functions: Vec<ParsedFunction>,
    /// The first syntax error (`line N: message`) and how many there were.
    pub(super) syntax_error: Option<(String, usize)>,
    /// Lines where a statement (or an `except` clause, a decorator, a
    /// `def`'s own line) starts, sorted: the lines a breakpoint can be on.
    /// A function's docstring is left out (CPython compiles no code for it).
    pub(super) statement_lines: Vec<u32>,
}

/// Parses `source`. With syntax errors the parser recovers what it can:
/// functions whose text holds an error are dropped, the others kept.
pub(super) fn parse_source(source: &str) -> ParsedFile {
    let parsed = parse_unchecked_source(source, ast::PySourceType::Python);
    let lines = LineIndex::new(source);
    let errors: Vec<TextSize> = parsed.errors().iter().map(|e| e.location.start()).collect();
    let mut collector = Collector {
        lines: &lines,
        scopes: Vec::new(),
        errors: &errors,
        out: Vec::new(),
        statements: Vec::new(),
    };
    collector.visit_body(&parsed.syntax().body);
    let mut statement_lines = std::mem::take(&mut collector.statements);
    statement_lines.sort_unstable();
    statement_lines.dedup();
    let syntax_error = parsed.errors().first().map(|e| {
        (
            format!("line {}: {}", lines.line(e.location.start()), e.error),
            parsed.errors().len(),
        )
    });
    ParsedFile {
        functions: collector.out,
        syntax_error,
        statement_lines,
    }
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum ReadError {
    /// The OS refused.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

#[derive(Clone)]
struct CacheEntry {
    mtime: Option<SystemTime>,
    size: u64,
    parsed: Arc<ParsedFile>,
}

/// Parsed files of every resolver of this process: a second session on
/// the same project (or the same stdlib) re-parses only what changed.
static CACHE: LazyLock<Mutex<HashMap<PathBuf, CacheEntry>>> = LazyLock::new(Default::default);

/// Bounds the cache's memory; past it the cache starts over.
const CACHE_MAX_FILES: usize = 200_000;

/// [`parse_source`] of the file at `path`, from the cache when its mtime
/// and size are unchanged.
pub(super) fn parse_file(path: &Path) -> Result<Arc<ParsedFile>, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    let (mtime, size) = (meta.modified().ok(), meta.len());
    if let Some(e) = lock(&CACHE).get(path)
        && e.mtime == mtime
        && e.size == size
        && mtime.is_some()
    {
        return Ok(e.parsed.clone());
    }
    let bytes = std::fs::read(path).map_err(io)?;
    // CPython rejects undecodable source unless it declares another
    // encoding; lossy decoding keeps line numbers right either way.
    let source = String::from_utf8_lossy(&bytes);
    let parsed = Arc::new(parse_source(&source));
    let mut cache = lock(&CACHE);
    if cache.len() >= CACHE_MAX_FILES {
        cache.clear();
    }
    cache.insert(
        path.to_path_buf(),
        CacheEntry {
            mtime,
            size,
            parsed: parsed.clone(),
        },
    );
    Ok(parsed)
}

/// Locks a mutex, taking over a poisoned one: what it guards stays
/// consistent (whole entries are inserted at once).
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Byte offsets to 1-based line numbers, counting `\n`, `\r\n` and a lone
/// `\r` as CPython's tokenizer does.
struct LineIndex {
    starts: Vec<u32>,
}

impl LineIndex {
    fn new(source: &str) -> LineIndex {
        let bytes = source.as_bytes();
        let mut starts = vec![0u32];
        for (i, &b) in bytes.iter().enumerate() {
            let is_break = b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n'));
            if is_break {
                starts.push(u32::try_from(i + 1).unwrap_or(u32::MAX));
            }
        }
        LineIndex { starts }
    }

    fn line(&self, offset: TextSize) -> u32 {
        let i = self.starts.partition_point(|&s| s <= offset.to_u32());
        u32::try_from(i).unwrap_or(u32::MAX)
    }
}

/// A scope that names what is defined in it.
struct Scope {
    /// Its own qualname.
    qualname: String,
    /// A function (children get `.<locals>.`) rather than a class.
    is_function: bool,
    /// Names declared `global` in its body (mangled): a function or class
    /// of that name defined here is named as if at module level.
    globals: HashSet<String>,
    /// The innermost enclosing class's name, for private name mangling.
    private: Option<String>,
}

struct Collector<'a> {
    lines: &'a LineIndex,
    scopes: Vec<Scope>,
    errors: &'a [TextSize],
    out: Vec<ParsedFunction>,
    statements: Vec<u32>,
}

/// A function body's docstring: its first statement, a string literal.
fn docstring(body: &[Stmt]) -> Option<&Stmt> {
    match body.first() {
        Some(s @ Stmt::Expr(e)) if e.value.is_string_literal_expr() => Some(s),
        _ => None,
    }
}

impl Collector<'_> {
    /// `co_qualname` of `name` defined in the current scope, as CPython's
    /// `compiler_set_qualname` computes it.
    fn qualname(&self, name: &str) -> String {
        let Some(parent) = self.scopes.last() else {
            return name.to_string();
        };
        if parent
            .globals
            .contains(&mangle(parent.private.as_deref(), name))
        {
            return name.to_string();
        }
        let sep = if parent.is_function {
            ".<locals>."
        } else {
            "."
        };
        format!("{}{sep}{name}", parent.qualname)
    }

    fn private(&self) -> Option<&str> {
        self.scopes.last().and_then(|s| s.private.as_deref())
    }

    fn function(&mut self, f: &ast::StmtFunctionDef) {
        let qualname = self.qualname(&f.name.id);
        let range = f.range();
        let broken = f.name.id.is_empty()
            || self
                .errors
                .iter()
                .any(|e| range.start() <= *e && *e < range.end());
        if !broken {
            let first = f
                .decorator_list
                .first()
                .map_or(range.start(), |d| d.expression.start());
            let mut finder = GeneratorFinder(false);
            for s in &f.body {
                finder.visit_stmt(s);
            }
            let doc = docstring(&f.body);
            let body_start = f
                .body
                .iter()
                .find(|s| doc.is_none_or(|d| !std::ptr::eq(*s, d)))
                .or(f.body.first())
                .map_or(f.name.start(), |s| s.start());
            self.out.push(ParsedFunction {
                qualname: qualname.clone(),
                first_line: self.lines.line(first),
                def_line: self.lines.line(f.name.start()),
                body_line: self.lines.line(body_start),
                is_async: f.is_async,
                is_generator: finder.0,
                parameters: parameter_names(&f.parameters, self.private()),
            });
        }
        let private = self.private().map(str::to_string);
        self.scopes.push(Scope {
            qualname,
            is_function: true,
            globals: globals_of(&f.body, private.as_deref()),
            private,
        });
        self.statements.push(self.lines.line(f.name.start()));
        for d in &f.decorator_list {
            self.statements.push(self.lines.line(d.expression.start()));
        }
        match docstring(&f.body) {
            Some(_) if f.body.len() > 1 => self.visit_body(&f.body[1..]),
            _ => self.visit_body(&f.body),
        }
        self.scopes.pop();
    }

    fn class(&mut self, c: &ast::StmtClassDef) {
        let qualname = self.qualname(&c.name.id);
        let private = Some(c.name.id.to_string());
        self.scopes.push(Scope {
            qualname,
            is_function: false,
            globals: globals_of(&c.body, private.as_deref()),
            private,
        });
        self.visit_body(&c.body);
        self.scopes.pop();
    }
}

impl<'a> StatementVisitor<'a> for Collector<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if !matches!(stmt, Stmt::FunctionDef(_)) {
            self.statements.push(self.lines.line(stmt.start()));
        }
        if let Stmt::ClassDef(c) = stmt {
            for d in &c.decorator_list {
                self.statements.push(self.lines.line(d.expression.start()));
            }
            self.statements.push(self.lines.line(c.name.start()));
        }
        match stmt {
            Stmt::FunctionDef(f) => self.function(f),
            Stmt::ClassDef(c) => self.class(c),
            _ => statement_visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_except_handler(&mut self, handler: &'a ast::ExceptHandler) {
        self.statements.push(self.lines.line(handler.start()));
        statement_visitor::walk_except_handler(self, handler);
    }
}

/// Names in `co_varnames` order (see [`ParsedFunction::parameters`]).
fn parameter_names(p: &Parameters, private: Option<&str>) -> Vec<String> {
    let named = p
        .posonlyargs
        .iter()
        .chain(&p.args)
        .chain(&p.kwonlyargs)
        .map(|a| &a.parameter);
    named
        .chain(p.vararg.as_deref())
        .chain(p.kwarg.as_deref())
        .map(|a| mangle(private, &a.name.id))
        .collect()
}

/// CPython's private name mangling: `__x` inside class `_C` is `_C__x`
/// (not dunder names, not inside a class named only with underscores).
pub(super) fn mangle(private: Option<&str>, name: &str) -> String {
    let Some(class) = private else {
        return name.to_string();
    };
    let class = class.trim_start_matches('_');
    if !name.starts_with("__") || name.ends_with("__") || name.contains('.') || class.is_empty() {
        return name.to_string();
    }
    format!("_{class}{name}")
}

/// Names a scope's own body declares `global` (not those of scopes nested
/// in it), mangled.
fn globals_of(body: &[Stmt], private: Option<&str>) -> HashSet<String> {
    struct Globals<'p>(HashSet<String>, Option<&'p str>);
    impl<'a> StatementVisitor<'a> for Globals<'_> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::Global(g) => {
                    for n in &g.names {
                        self.0.insert(mangle(self.1, &n.id));
                    }
                }
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                _ => statement_visitor::walk_stmt(self, stmt),
            }
        }
    }
    let mut g = Globals(HashSet::new(), private);
    g.visit_body(body);
    g.0
}

/// Finds `yield` in a function's own scope: not in the bodies of nested
/// functions, classes or lambdas, but in what the function itself
/// evaluates for them (decorators, defaults, base classes).
struct GeneratorFinder(bool);

impl<'a> Visitor<'a> for GeneratorFinder {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => {
                for d in &f.decorator_list {
                    self.visit_expr(&d.expression);
                }
                for d in f.parameters.iter_non_variadic_params() {
                    if let Some(e) = d.default() {
                        self.visit_expr(e);
                    }
                }
            }
            Stmt::ClassDef(c) => {
                for d in &c.decorator_list {
                    self.visit_expr(&d.expression);
                }
                if let Some(args) = &c.arguments {
                    for e in &args.args {
                        self.visit_expr(e);
                    }
                    for k in &args.keywords {
                        self.visit_expr(&k.value);
                    }
                }
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Yield(_) | Expr::YieldFrom(_) => self.0 = true,
            Expr::Lambda(l) => {
                if let Some(p) = &l.parameters {
                    for d in p.iter_non_variadic_params() {
                        if let Some(e) = d.default() {
                            self.visit_expr(e);
                        }
                    }
                }
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(src: &str) -> Vec<(String, u32, Vec<String>)> {
        parse_source(src)
            .functions
            .into_iter()
            .map(|f| (f.qualname, f.first_line, f.parameters))
            .collect()
    }

    #[test]
    fn qualnames_follow_cpython() {
        let src = "\
def top(a, /, b, *args, c, d=1, **kw):
    def inner():
        class Local:
            def m(self): pass
    return inner

class Outer:
    @staticmethod
    @other
    def s(x): pass
    class Nested:
        async def am(self): pass

def declares():
    global escaped
    def escaped(): pass
";
        let got = names(src);
        let q: Vec<&str> = got.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(
            q,
            [
                "top",
                "top.<locals>.inner",
                "top.<locals>.inner.<locals>.Local.m",
                "Outer.s",
                "Outer.Nested.am",
                "declares",
                "escaped",
            ]
        );
        assert_eq!(got[0].2, ["a", "b", "c", "d", "args", "kw"]);
        assert_eq!(got[3].1, 8, "co_firstlineno is the first decorator's line");
    }

    #[test]
    fn private_names_are_mangled_in_classes() {
        let got = names("class _C:\n    def __m(self, __x, *, __k, **__kw): pass\n");
        assert_eq!(got[0].0, "_C.__m", "qualnames are not mangled");
        assert_eq!(got[0].2, ["self", "_C__x", "_C__k", "_C__kw"]);
        assert_eq!(mangle(Some("__"), "__x"), "__x");
        assert_eq!(mangle(Some("C"), "__init__"), "__init__");
    }

    #[test]
    fn breakpoint_lines_are_statement_starts_without_docstrings() {
        let src = "import os\n\n@deco\ndef f(a,\n      b):\n    \"\"\"Doc.\"\"\"\n    # note\n    x = (a +\n         b)\n    try:\n        pass\n    except OSError:\n        raise\n    return x\ndef one(): return 1\nclass C:\n    \"\"\"Class doc.\"\"\"\n    y = 2\n";
        let p = parse_source(src);
        assert_eq!(
            p.statement_lines,
            [1, 3, 4, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18],
            "{src}"
        );
        let body: Vec<(&str, u32)> = p
            .functions
            .iter()
            .map(|f| (f.qualname.as_str(), f.body_line))
            .collect();
        assert_eq!(body, [("f", 8), ("one", 15)]);
    }

    #[test]
    fn generators_and_async() {
        let f = parse_source(
            "def g():\n    yield 1\ndef n():\n    def inner(): yield 2\n    return lambda: (yield)\nasync def a():\n    await x\n",
        )
        .functions;
        let flags: Vec<(&str, bool, bool)> = f
            .iter()
            .map(|f| (f.qualname.as_str(), f.is_generator, f.is_async))
            .collect();
        assert_eq!(
            flags,
            [
                ("g", true, false),
                ("n", false, false),
                ("n.<locals>.inner", true, false),
                ("a", false, true),
            ]
        );
    }

    #[test]
    fn modern_syntax_parses() {
        let src = "\
type Alias[T] = list[T]
def first[T](xs: list[T]) -> T:
    match xs:
        case [x, *_]:
            return x
class Box[T]:
    def get[U](self, u: U) -> T: ...
";
        let p = parse_source(src);
        assert_eq!(p.syntax_error, None);
        let q: Vec<&str> = p.functions.iter().map(|f| f.qualname.as_str()).collect();
        assert_eq!(q, ["first", "Box.get"]);
    }

    #[test]
    fn syntax_errors_drop_only_the_broken_functions() {
        let p = parse_source("def ok(a): pass\n\ndef broken(:\n    pass\n\ndef also_ok(): pass\n");
        let q: Vec<&str> = p.functions.iter().map(|f| f.qualname.as_str()).collect();
        assert!(q.contains(&"ok") && q.contains(&"also_ok"), "{q:?}");
        assert!(!q.contains(&"broken"), "{q:?}");
        let (first, n) = p.syntax_error.expect("reported");
        assert!(first.starts_with("line 3:"), "{first}");
        assert!(n >= 1);
    }

    #[test]
    fn lines_count_every_newline_style() {
        let idx = LineIndex::new("a\r\nb\rc\nd");
        let at = |o: u32| idx.line(TextSize::from(o));
        assert_eq!((at(0), at(3), at(5), at(7)), (1, 2, 3, 4));
    }
}
