//! The tracer through [`SymbolResolver`] alone: a resolver of interpreted
//! code (no symbol index, no DWARF), opened from a registry of its own the
//! way the session opens the built-in one.

use super::*;
use strobe_symbols::resolvers::{self, Image, ImageKind, Registration};
use strobe_symbols::{FunctionInfo, Language, Resolution, ResolvedTarget, SymbolError};

/// Resolves in a fixed list of (name, file, line), as a Python resolver
/// would from a program's sources.
struct SourceResolver {
    path: Arc<Path>,
    functions: Vec<(&'static str, PathBuf, u32)>,
}

impl SymbolResolver for SourceResolver {
    fn name(&self) -> &'static str {
        "source"
    }

    fn language(&self) -> Language {
        Language::Python
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn resolve_pattern(&self, pattern: &Pattern, project_root: &Path) -> Resolution {
        let targets = self
            .functions
            .iter()
            .enumerate()
            .filter(|(_, (name, file, _))| pattern.matches(name, file.to_str(), project_root))
            .map(|(i, (name, _, line))| ResolvedTarget {
                module: self.path.clone(),
                function: i,
                name: name.to_string(),
                // The first line stands for where the agent hooks it.
                entry_offset: u64::from(*line),
            })
            .collect();
        Resolution {
            targets,
            inlined_only: Vec::new(),
        }
    }

    fn function(&self, index: usize) -> Option<FunctionInfo<'_>> {
        let (name, file, line) = self.functions.get(index)?;
        Some(FunctionInfo {
            name,
            name_raw: None,
            file: file.to_str(),
            line: Some(*line),
        })
    }
}

/// Opens a [`SourceResolver`] for the program only (a library has no sources).
fn open_source(
    image: &Image<'_>,
    _cache_dir: Option<&Path>,
) -> Option<Result<Arc<dyn SymbolResolver>, SymbolError>> {
    let root = image.project_root;
    (image.kind == ImageKind::Program).then(|| {
        Ok(Arc::new(SourceResolver {
            path: Arc::from(image.path),
            functions: vec![
                ("app::handlers::login", root.join("app/handlers.py"), 10),
                ("app::handlers::logout", root.join("app/handlers.py"), 20),
                ("app::db::query", root.join("app/db.py"), 5),
            ],
        }) as Arc<dyn SymbolResolver>)
    })
}

const SOURCE: Registration = Registration {
    name: "source",
    language: Language::Python,
    open: open_source,
};

const ROOT: &str = "/project";
const PROGRAM: &str = "/project/app/main.py";

/// A tracer over what the test registry has for the program and a library.
fn tracer() -> Tracer {
    let mut modules = Vec::new();
    for (path, kind) in [
        (PROGRAM, ImageKind::Program),
        ("/project/libfoo.so", ImageKind::Library),
    ] {
        let image = Image {
            path: Path::new(path),
            kind,
            project_root: Path::new(ROOT),
            args: &[],
            env: &[],
        };
        for r in resolvers::open_with(&[SOURCE], &image, None, None) {
            modules.push(r.expect("the test resolver opens"));
        }
    }
    assert_eq!(modules.len(), 1, "the library has no resolver");
    Tracer::new(modules, Path::new(ROOT))
}

fn pattern(text: &str) -> Pattern {
    Pattern::parse(text).expect("a valid pattern")
}

#[test]
fn patterns_resolve_and_plan_hooks_through_the_trait() {
    let mut t = tracer();
    let plan = t.plan(&[pattern("app::handlers::*")], &[]);
    let hook = |id, offset| HookTarget {
        id,
        language: Language::Python,
        module: PathBuf::from(PROGRAM),
        offset,
    };
    assert_eq!(plan.to_hook, vec![hook(1, 10), hook(2, 20)]);
    assert_eq!(plan.matched, 2);
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    let rows: Vec<_> = plan
        .new_rows
        .iter()
        .map(|r| (r.func_id, r.name.as_str(), r.file.as_deref(), r.line))
        .collect();
    assert_eq!(
        rows,
        vec![
            (
                1,
                "app::handlers::login",
                Some("/project/app/handlers.py"),
                Some(10)
            ),
            (
                2,
                "app::handlers::logout",
                Some("/project/app/handlers.py"),
                Some(20)
            ),
        ]
    );
    assert_eq!(t.name_of(2), Some("app::handlers::logout"));

    // What a hook request carries, without DWARF: the generous stack
    // window, no code extent, no capture plan.
    assert_eq!(t.stack_copy_bytes(1), Some(STACK_COPY_UNKNOWN));
    assert_eq!(t.entry_extent(1), 0);
    assert!(t.decoder_for(1).is_none());

    t.applied(&[1, 2], &[], &[]);
    let plan = t.plan(&[pattern("@file:db.py")], &["app::handlers::*".to_string()]);
    assert_eq!(plan.to_hook, vec![hook(3, 5)]);
    assert_eq!(plan.to_unhook, vec![1, 2]);
}

#[test]
fn a_pattern_matching_nothing_says_so() {
    let mut t = tracer();
    let plan = t.plan(&[pattern("app::nothing")], &[]);
    assert!(plan.to_hook.is_empty());
    assert_eq!(plan.warnings.len(), 1);
    assert!(plan.warnings[0].contains("matched no function"));
}

#[test]
fn a_dotted_pattern_on_a_native_program_of_a_python_project_says_how_to_launch_python() {
    let dir = std::env::temp_dir().join(format!("strobe-pyproject-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut native = Tracer::new(Vec::new(), &dir);
    let plain = native.plan(&[pattern("inventory.apply")], &[]);
    assert!(
        plain.warnings[0].contains("dotted names are Python syntax"),
        "{:?}",
        plain.warnings
    );
    assert!(!plain.warnings[0].contains("through its interpreter"));
    std::fs::write(dir.join("pyproject.toml"), "[project]\nname = \"shop\"\n").unwrap();
    let mut python_project = Tracer::new(Vec::new(), &dir);
    let hinted = python_project.plan(&[pattern("inventory.apply2")], &[]);
    assert!(
        hinted.warnings[0].contains("launch the program through its interpreter"),
        "{:?}",
        hinted.warnings
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_watch_scope_is_matched_against_the_resolvers_names() {
    let mut t = tracer();
    t.add_watch(
        Some("rows".into()),
        WatchTarget::Expr("args[0]".into()),
        vec![pattern("app::db::*")],
        &|_| None,
    )
    .expect("an expression watch needs no symbols");
    let plan = t.plan(&[], &[]);
    assert_eq!(plan.to_hook.len(), 1, "the watch's scope is traced");
    let id = plan.to_hook[0].id;
    assert_eq!(t.name_of(id), Some("app::db::query"));
    let d = t.decoder_for(id).expect("a plan that reads the watch");
    assert_eq!(d.module, None, "no typed signature without native code");
}

#[test]
fn native_debugging_skips_other_resolvers() {
    let mut t = tracer();
    assert!(t.has_module(Path::new(PROGRAM)));
    assert!(t.function_sites(&pattern("app::**")).is_empty());
    assert_eq!(t.line_sites("handlers.py", 10).0, Vec::new());
    assert_eq!(t.module_index(Path::new(PROGRAM)), None);
    let at = t.locate(0, 10);
    assert_eq!(
        (at.function_index, at.function, at.line),
        (None, None, None)
    );
    assert!(t.frame_layout(0, 0, 10).is_none());
    assert!(t.statements(0, 0).is_empty());
    assert!(
        t.resolve_variable("x", "x", &|_| Some(0))
            .unwrap_err()
            .contains("no global or static variable")
    );
}

#[test]
fn only_patterns_no_python_function_matched_make_libraries_wait() {
    let mut t = tracer();
    assert!(!t.needs_library_watch(), "no pattern, nothing to wait for");
    t.plan(&[pattern("app::handlers::*")], &[]);
    assert!(
        !t.needs_library_watch(),
        "a Python pattern: no native library loaded later can need it"
    );
    // Unmatched (a function of a library not loaded yet, say): libraries
    // loaded later must be checked before their code runs.
    t.plan(&[pattern("sqlite3_open")], &[]);
    assert!(t.needs_library_watch());
    t.plan(&[], &["sqlite3_open".to_string()]);
    assert!(!t.needs_library_watch());
}
