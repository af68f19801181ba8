//! Symbols: from trace patterns to hookable addresses.
//!
//! The [`SymbolResolver`] trait is the extension point for languages: one
//! implementation per file under [`resolvers`]. The native one,
//! [`resolvers::dwarf::DwarfResolver`], indexes an ELF image's DWARF (with the
//! ELF symbol table as a fallback) into a [`SymbolIndex`], cached on disk.
//! [`pattern`] parses and matches the pattern language (`*`, `**`,
//! `@usercode`, `@file:`).

pub mod debuginfo;
pub mod index;
pub mod pattern;
pub mod resolvers;
pub mod scope;
pub mod types;

pub use debuginfo::DebugInfo;
pub use index::{DieRef, FunctionSymbol, GlobalSymbol, InlinedCall, InlinedRef, SymbolIndex};
pub use pattern::{Pattern, PatternError, Token};
pub use scope::{CfaRule, FrameBase, FrameTable, Place, ScopeVariable, Statement, Unwind};
pub use types::{EntryLoc, Member, Signature, Type, TypeId, TypeTable};

use std::path::Path;

/// A function a pattern matched, ready to hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedTarget {
    /// The image (executable or shared library) the function lives in.
    pub module: std::sync::Arc<Path>,
    /// Index of the function in its [`SymbolIndex`].
    pub function: usize,
    /// Qualified, demangled name.
    pub name: String,
    /// Entry address relative to the image's lowest load address
    /// (runtime address = module base + this).
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

/// Resolves trace patterns for one kind of code (native, Python, JS, …).
pub trait SymbolResolver: Send + Sync {
    /// Short name of the resolver (`"dwarf"`).
    fn name(&self) -> &'static str;
    /// Functions (and inlined-only matches) for `pattern`; `project_root`
    /// decides what `@usercode` means.
    fn resolve_pattern(&self, pattern: &Pattern, project_root: &Path) -> Resolution;
}
