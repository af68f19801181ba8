//! Symbols: from trace patterns to hookable addresses.
//!
//! The [`SymbolResolver`] trait is the extension point for languages: one
//! implementation per file under [`resolvers`], whose registry
//! ([`resolvers::open`]) gives the resolvers of an image. The native one,
//! [`resolvers::dwarf::DwarfResolver`], indexes an ELF image's DWARF (with the
//! ELF symbol table as a fallback) into a [`SymbolIndex`], cached on disk.
//! [`pattern`] parses and matches the pattern language (`*`, `**`,
//! `@usercode`, `@file:`).

pub mod debuginfo;
pub mod index;
pub mod pattern;
pub mod resolvers;
pub mod scope;
pub mod source_maps;
pub mod types;

pub use debuginfo::DebugInfo;
pub use index::{DieRef, FunctionSymbol, GlobalSymbol, InlinedCall, InlinedRef, SymbolIndex};
pub use pattern::{Pattern, PatternError, Token};
pub use scope::{CfaRule, FrameBase, FrameTable, Place, ScopeVariable, Statement, Unwind};
pub use types::{EntryLoc, Member, Signature, Type, TypeId, TypeTable};

use std::path::{Path, PathBuf};

/// Why an image could not be indexed or its debug info read.
#[derive(Debug, thiserror::Error)]
pub enum SymbolError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not an object file this build understands.
    #[error("{path} is not a readable ELF image: {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// The parser's complaint.
        reason: String,
    },
    /// The DWARF is malformed.
    #[error("malformed DWARF in {path}: {reason}")]
    Dwarf {
        /// The file.
        path: PathBuf,
        /// The parser's complaint.
        reason: String,
    },
}

/// The kind of code a resolver covers. The functions it resolves are hooked
/// by the agent's tracer for that language (`agent/src/tracers/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    /// Machine code in an ELF image (C, C++, Rust, …), hooked at addresses.
    Native,
    /// Python functions, run by the interpreter.
    Python,
    /// JavaScript functions (CommonJS or ES modules).
    JavaScript,
}

impl Language {
    /// Lower-case name, as messages show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Native => "native",
            Language::Python => "python",
            Language::JavaScript => "javascript",
        }
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A function a pattern matched, ready to hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedTarget {
    /// The file the function lives in ([`SymbolResolver::path`]).
    pub module: std::sync::Arc<Path>,
    /// Index of the function in its resolver (for [`SymbolResolver::function`];
    /// for native code, in its [`SymbolIndex`]).
    pub function: usize,
    /// Qualified, demangled name.
    pub name: String,
    /// Where the agent hooks it. Native code: the entry address relative
    /// to the image's lowest load address (runtime address = module base +
    /// this). Other languages say what theirs means (0 when unused).
    pub entry_offset: u64,
}

/// What a pattern resolved to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolution {
    /// Hookable functions.
    pub targets: Vec<ResolvedTarget>,
    /// Matches that exist only inlined into other functions: "name inlined into X at file:line".
    pub inlined_only: Vec<String>,
}

/// A function as messages show it and the store's function table keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionInfo<'a> {
    /// Qualified name, as patterns match it.
    pub name: &'a str,
    /// The name the code itself uses (a linkage name), when different.
    pub name_raw: Option<&'a str>,
    /// Source file.
    pub file: Option<&'a str>,
    /// Line the function is declared at.
    pub line: Option<u32>,
}

/// Resolves trace patterns for one kind of code (native, Python, JS, …) in
/// one file. The session asks [`resolvers::open`] for the resolvers of each
/// image it traces and goes through this trait only; what is particular to
/// machine code (code ranges, DWARF, globals at fixed addresses) is the
/// [`SymbolResolver::native`] capability, so other languages need not
/// pretend to have it.
pub trait SymbolResolver: Send + Sync {
    /// Short name of the resolver (`"dwarf"`).
    fn name(&self) -> &'static str;
    /// The code it covers: which of the agent's tracers hooks its functions.
    fn language(&self) -> Language;
    /// The file it resolves in: an image (executable or shared library),
    /// or for interpreted code the file it was opened for.
    fn path(&self) -> &Path;
    /// Functions (and inlined-only matches) for `pattern`; `project_root`
    /// decides what `@usercode` means.
    fn resolve_pattern(&self, pattern: &Pattern, project_root: &Path) -> Resolution;
    /// Function `index` (a [`ResolvedTarget::function`] it handed out), for
    /// messages and the store's function table.
    fn function(&self, index: usize) -> Option<FunctionInfo<'_>>;
    /// Machine code's symbol index: code ranges, DWARF references and
    /// globals, from which [`DebugInfo`] reads signatures, types, line
    /// tables and scopes (capture plans, breakpoints, watches, crash
    /// frames). `None` for code that has none.
    fn native(&self) -> Option<&SymbolIndex> {
        None
    }
    /// Argument names of function `index`, in the order the language's
    /// tracer captures them (Python: `co_varnames` order); empty when
    /// unknown.
    fn parameters(&self, index: usize) -> Vec<String> {
        let _ = index;
        Vec::new()
    }
    /// What went wrong while opening or resolving that the user should
    /// hear about, though the resolver still works (a source file skipped
    /// for a syntax error, an interpreter that did not say its search
    /// path); empty by default.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// Interpreted code: the first line of function `index`'s body that
    /// has code (where a breakpoint on the function stops); `None` by
    /// default and for machine code, which has line tables instead.
    fn body_line(&self, index: usize) -> Option<u32> {
        let _ = index;
        None
    }
    /// Interpreted code: the lines of source `file` where a statement
    /// starts (where a line breakpoint can stop), sorted; `None` by default
    /// and when the file cannot be read.
    fn statement_lines(&self, file: &Path) -> Option<Vec<u32>> {
        let _ = file;
        None
    }
    /// Interpreted code: the source files indexed so far (a breakpoint's
    /// `file` is matched against them); empty by default.
    fn source_files(&self) -> Vec<PathBuf> {
        Vec::new()
    }
}
