//! The symbol index of one image, and its on-disk cache.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Bumped whenever the index's content or layout changes.
pub const INDEX_FORMAT: u32 = 3;

/// A function with code in the image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionSymbol {
    /// Qualified, demangled name without parameters or Rust hash
    /// (`mycrate::parser::parse`, `ns::Class::method`, `max<int>`).
    pub name: String,
    /// The linkage (mangled) name, when there is one.
    pub name_raw: Option<String>,
    /// Source file (absolute when the DWARF says where it was compiled).
    pub file: Option<String>,
    /// Declaration line.
    pub line: Option<u32>,
    /// Entry address, relative to the image's lowest load address.
    pub entry_offset: u64,
    /// Code ranges `[start, end)` relative to the lowest load address
    /// (hot/cold split functions have several).
    pub ranges: Vec<(u64, u64)>,
    /// True when only the ELF symbol table knew this function.
    pub from_symtab: bool,
    /// The concrete `DW_TAG_subprogram` (parameters, return type), read on
    /// demand through [`crate::DebugInfo`].
    pub die: Option<DieRef>,
}

/// Where a DIE lives: its unit's offset in `.debug_info` and its offset in the unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DieRef {
    /// Offset of the unit header in `.debug_info`.
    pub unit: u64,
    /// Offset of the DIE within its unit.
    pub offset: u64,
}

/// A global or static variable with a fixed address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalSymbol {
    /// Qualified name (`gCounter`, `ns::Class::member`, `main::calls` for a
    /// function's static, Rust `crate::module::STATIC`).
    pub name: String,
    /// Address relative to the image's lowest load address.
    pub offset: u64,
    /// Source file of the declaration.
    pub file: Option<String>,
    /// The variable's DIE (its type), read through [`crate::DebugInfo`].
    pub die: DieRef,
}

impl FunctionSymbol {
    /// Bytes of code in all ranges.
    pub fn size(&self) -> u64 {
        self.ranges.iter().map(|(a, b)| b - a).sum()
    }
}

/// A call that the compiler inlined (owned form, as the parser produces it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlinedCall {
    /// The inlined function's qualified name.
    pub name: String,
    /// Source file of the inlined function's definition.
    pub file: Option<String>,
    /// The function it was inlined into.
    pub into: String,
    /// Call site file.
    pub call_file: Option<String>,
    /// Call site line.
    pub call_line: Option<u32>,
}

/// Everything Strobe knows about one image's functions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SymbolIndex {
    /// The image file.
    pub path: PathBuf,
    /// GNU build id (hex), when present.
    pub build_id: Option<String>,
    /// Lowest `PT_LOAD` virtual address; runtime address = base + (addr - this).
    pub load_bias: u64,
    /// Functions with code, sorted by entry offset.
    pub functions: Vec<FunctionSymbol>,
    /// Inlined call sites, with strings interned in `strings` (there are
    /// many more of them than functions; interning keeps the cache fast).
    pub inlined: Vec<InlinedRef>,
    /// String table for `inlined`.
    pub strings: Vec<String>,
    /// Where the DWARF came from (`None`: no DWARF, symbol table only).
    pub debug_file: Option<PathBuf>,
    /// Globals and statics with fixed addresses, sorted by name.
    pub globals: Vec<GlobalSymbol>,
}

/// An inlined call site with interned strings (indexes into `SymbolIndex::strings`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InlinedRef {
    /// The inlined function's name.
    pub name: u32,
    /// Its definition's source file.
    pub file: Option<u32>,
    /// The function it was inlined into.
    pub into: u32,
    /// Call site file.
    pub call_file: Option<u32>,
    /// Call site line.
    pub call_line: Option<u32>,
}

#[derive(Serialize, Deserialize)]
struct CacheFile {
    format: u32,
    key: String,
    index: SymbolIndex,
}

impl SymbolIndex {
    /// Reads a cached index for `key` from `dir`, if present and current.
    pub fn load_cached(dir: &Path, key: &str) -> Option<SymbolIndex> {
        let bytes = std::fs::read(dir.join(format!("{key}.idx"))).ok()?;
        let f: CacheFile = bincode::deserialize(&bytes).ok()?;
        (f.format == INDEX_FORMAT && f.key == key).then_some(f.index)
    }

    /// Writes the index to the cache (atomically).
    pub fn store_cached(&self, dir: &Path, key: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let bytes = bincode::serialize(&CacheFile {
            format: INDEX_FORMAT,
            key: key.to_string(),
            index: self.clone(),
        })
        .map_err(std::io::Error::other)?;
        let path = dir.join(format!("{key}.idx"));
        strobe_core::files::write_atomically(&path, &bytes)
    }

    /// Interns `calls` into `inlined` + `strings`.
    pub fn set_inlined(&mut self, calls: Vec<InlinedCall>) {
        let mut ids: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
        let mut strings = Vec::new();
        let mut intern = |s: String| -> u32 {
            *ids.entry(s).or_insert_with_key(|k| {
                strings.push(k.clone());
                (strings.len() - 1) as u32
            })
        };
        self.inlined = calls
            .into_iter()
            .map(|c| InlinedRef {
                name: intern(c.name),
                file: c.file.map(&mut intern),
                into: intern(c.into),
                call_file: c.call_file.map(&mut intern),
                call_line: c.call_line,
            })
            .collect();
        self.strings = strings;
    }

    /// The string behind an interned id.
    pub fn string(&self, id: u32) -> &str {
        &self.strings[id as usize]
    }

    /// The function whose code contains image offset `offset` (one with
    /// DWARF preferred when symbols overlap).
    pub fn function_containing(&self, offset: u64) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, f) in self.functions.iter().enumerate() {
            if f.ranges.iter().any(|(s, e)| (*s..*e).contains(&offset))
                && best.is_none_or(|b| self.functions[b].die.is_none() && f.die.is_some())
            {
                best = Some(i);
            }
        }
        best
    }

    /// Functions whose names match exactly (used by tests and lookups).
    pub fn by_name<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a FunctionSymbol> + 'a {
        self.functions.iter().filter(move |f| f.name == name)
    }
}
