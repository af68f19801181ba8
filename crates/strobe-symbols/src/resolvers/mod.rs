//! One file per language's resolver, and the registry that opens them for
//! the images a session traces. Adding a language: a new file here, its
//! `pub mod` line and its [`Registration`] in [`REGISTRY`].

pub mod dwarf;
pub mod javascript;
pub mod python;
pub mod walk;

use crate::pattern::Pattern;
use crate::{Language, Resolution, ResolvedTarget, SymbolError, SymbolResolver};
use std::path::Path;
use std::sync::Arc;

/// A glob in an interpreted language's dotted names (Python, JavaScript)
/// as a [`Pattern`] over names with `::` for `.` (`inventory.Bin.*` →
/// `inventory::Bin::*`, so `*` stays within one dotted segment;
/// `f.<locals>.g` is three segments). `None` for a pattern in native
/// syntax, which names no such function.
pub(crate) fn dotted_pattern(text: &str) -> Option<Pattern> {
    if text.contains("::") {
        return None;
    }
    Pattern::parse(&text.replace('.', "::")).ok()
}

/// A source-level resolver's answer: each (function index, name) hit as a
/// target in `module` (the interpreter's image, which its tracer hooks).
pub(crate) fn source_targets<'a>(
    module: &Arc<Path>,
    hits: impl Iterator<Item = (usize, &'a str)>,
) -> Resolution {
    Resolution {
        targets: hits
            .map(|(function, name)| ResolvedTarget {
                module: module.clone(),
                function,
                name: name.to_string(),
                entry_offset: 0,
            })
            .collect(),
        inlined_only: Vec::new(),
    }
}

/// What an image is to the process it is loaded in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    /// The program's executable (for an interpreted program, the
    /// interpreter, whose arguments name the program's sources).
    Program,
    /// A shared library it loaded.
    Library,
}

/// An image of a traced process, as the registry's resolvers see it.
#[derive(Debug, Clone, Copy)]
pub struct Image<'a> {
    /// The file.
    pub path: &'a Path,
    /// What it is to the process.
    pub kind: ImageKind,
    /// The session's project root: where a source-level resolver finds the
    /// program's own code.
    pub project_root: &'a Path,
    /// The program's arguments after the executable (`argv[1..]`): for an
    /// interpreter, what names the program's sources (`["-u", "app.py"]`,
    /// `["-m", "pkg.main"]`).
    pub args: &'a [String],
    /// Environment the program runs with on top of the session's own
    /// (`PYTHONPATH`, …), which can change where an interpreter finds code.
    pub env: &'a [(String, String)],
}

/// Opens one resolver for an image (`cache_dir`: where it may cache what
/// it indexes); `None` when the resolver does not apply to that image.
pub type Opener =
    fn(&Image<'_>, Option<&Path>) -> Option<Result<Arc<dyn SymbolResolver>, SymbolError>>;

/// A resolver the registry can open.
#[derive(Debug, Clone, Copy)]
pub struct Registration {
    /// Its name ([`SymbolResolver::name`]).
    pub name: &'static str,
    /// The code it covers ([`SymbolResolver::language`]).
    pub language: Language,
    /// Opens it for an image.
    pub open: Opener,
}

/// Every resolver, tried in this order for each image (the order their
/// functions are listed in).
pub const REGISTRY: &[Registration] = &[
    dwarf::REGISTRATION,
    python::REGISTRATION,
    javascript::REGISTRATION,
];

/// The resolvers [`REGISTRY`] has for `image`, of `language` only when
/// given; each one that applies gives a resolver or the reason it could not
/// be opened.
pub fn open(
    image: &Image<'_>,
    cache_dir: Option<&Path>,
    language: Option<Language>,
) -> Vec<Result<Arc<dyn SymbolResolver>, SymbolError>> {
    open_with(REGISTRY, image, cache_dir, language)
}

/// [`open`] over another list of resolvers (tests register their own).
pub fn open_with(
    registry: &[Registration],
    image: &Image<'_>,
    cache_dir: Option<&Path>,
    language: Option<Language>,
) -> Vec<Result<Arc<dyn SymbolResolver>, SymbolError>> {
    registry
        .iter()
        .filter(|r| language.is_none_or(|l| l == r.language))
        .filter_map(|r| (r.open)(image, cache_dir))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(path: &str, kind: ImageKind) -> Image<'_> {
        Image {
            path: Path::new(path),
            kind,
            project_root: Path::new("/"),
            args: &[],
            env: &[],
        }
    }

    /// Applies to programs only, and never opens.
    fn programs_only(
        image: &Image<'_>,
        _cache_dir: Option<&Path>,
    ) -> Option<Result<Arc<dyn SymbolResolver>, SymbolError>> {
        (image.kind == ImageKind::Program).then(|| {
            Err(SymbolError::Format {
                path: image.path.to_path_buf(),
                reason: "test".into(),
            })
        })
    }

    const PROGRAMS_ONLY: Registration = Registration {
        name: "programs-only",
        language: Language::Python,
        open: programs_only,
    };

    #[test]
    fn the_native_resolver_is_tried_on_every_image() {
        for kind in [ImageKind::Program, ImageKind::Library] {
            let opened = open(&image("/nonexistent/image", kind), None, None);
            assert_eq!(opened.len(), 1);
            assert!(matches!(opened[0], Err(SymbolError::Io { .. })));
        }
        let none = open(
            &image("/nonexistent/image", ImageKind::Program),
            None,
            Some(Language::Python),
        );
        assert!(
            none.is_empty(),
            "the Python resolver opens on interpreters only"
        );
    }

    #[test]
    fn resolvers_apply_by_image_and_language() {
        let registry = [PROGRAMS_ONLY, dwarf::REGISTRATION];
        let program = image("/nonexistent/app", ImageKind::Program);
        let library = image("/nonexistent/lib.so", ImageKind::Library);
        let errors = |v: Vec<Result<Arc<dyn SymbolResolver>, SymbolError>>| -> Vec<String> {
            v.into_iter()
                .map(|r| r.err().expect("nothing opens here").to_string())
                .collect()
        };
        let all = errors(open_with(&registry, &program, None, None));
        assert_eq!(all.len(), 2);
        assert!(all[0].contains("test"), "in registry order: {all:?}");
        assert_eq!(open_with(&registry, &library, None, None).len(), 1);
        let python = errors(open_with(&registry, &program, None, Some(Language::Python)));
        assert_eq!(python.len(), 1);
        assert!(python[0].contains("test"));
        assert!(open_with(&registry, &library, None, Some(Language::Python)).is_empty());
    }
}
