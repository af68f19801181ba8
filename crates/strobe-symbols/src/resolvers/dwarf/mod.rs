//! The native resolver: DWARF (4 and 5, compressed sections, separate debug
//! files) with the ELF symbol table as a fallback, parsed per compilation
//! unit in parallel and cached on disk.

mod parse;

use super::{Image, Registration};
use crate::index::{FunctionSymbol, SymbolIndex};
use crate::pattern::Pattern;
use crate::{FunctionInfo, Language, Resolution, ResolvedTarget, SymbolError, SymbolResolver};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};
use parse::parse_dwarf;
pub(crate) use parse::{attr_string, file_table};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The native resolver in the registry: every image gets one (a file that
/// is not ELF fails to open, as before the registry existed).
pub const REGISTRATION: Registration = Registration {
    name: "dwarf",
    language: Language::Native,
    open: open_image,
};

fn open_image(
    image: &Image<'_>,
    cache_dir: Option<&Path>,
) -> Option<Result<Arc<dyn SymbolResolver>, SymbolError>> {
    Some(DwarfResolver::open(image.path, cache_dir).map(|r| Arc::new(r) as Arc<dyn SymbolResolver>))
}

/// The native resolver over one image.
#[derive(Debug, Clone)]
pub struct DwarfResolver {
    module: Arc<Path>,
    index: Arc<SymbolIndex>,
}

impl DwarfResolver {
    /// Indexes `path`, using `cache_dir` (when given) to skip re-parsing an
    /// unchanged image (key: build id, else path + mtime + size).
    pub fn open(path: &Path, cache_dir: Option<&Path>) -> Result<DwarfResolver, SymbolError> {
        let key = cache_key(path)?;
        if let Some(dir) = cache_dir
            && let Some(index) = SymbolIndex::load_cached(dir, &key)
        {
            return Ok(Self::from_index(index));
        }
        let index = build_index(path)?;
        if let Some(dir) = cache_dir
            && let Err(e) = index.store_cached(dir, &key)
        {
            tracing::warn!("cannot cache the symbol index of {}: {e}", path.display());
        }
        Ok(Self::from_index(index))
    }

    /// Wraps an existing index.
    pub fn from_index(index: SymbolIndex) -> DwarfResolver {
        DwarfResolver {
            module: Arc::from(index.path.as_path()),
            index: Arc::new(index),
        }
    }

    /// The index.
    pub fn index(&self) -> &SymbolIndex {
        &self.index
    }
}

impl SymbolResolver for DwarfResolver {
    fn name(&self) -> &'static str {
        "dwarf"
    }

    fn language(&self) -> Language {
        Language::Native
    }

    fn path(&self) -> &Path {
        &self.module
    }

    fn function(&self, index: usize) -> Option<FunctionInfo<'_>> {
        let f = self.index.functions.get(index)?;
        Some(FunctionInfo {
            name: &f.name,
            name_raw: f.name_raw.as_deref(),
            file: f.file.as_deref(),
            line: f.line,
        })
    }

    fn native(&self) -> Option<&SymbolIndex> {
        Some(&self.index)
    }

    fn resolve_pattern(&self, pattern: &Pattern, project_root: &Path) -> Resolution {
        let mut out = Resolution::default();
        let mut names = HashSet::new();
        for (i, f) in self.index.functions.iter().enumerate() {
            if pattern.matches(&f.name, f.file.as_deref(), project_root) {
                names.insert(f.name.as_str());
                out.targets.push(ResolvedTarget {
                    module: self.module.clone(),
                    function: i,
                    name: f.name.clone(),
                    entry_offset: f.entry_offset,
                });
            }
        }
        let idx = &self.index;
        let mut seen = HashSet::new();
        for c in &idx.inlined {
            let name = idx.string(c.name);
            if !names.contains(name)
                && pattern.matches(name, c.file.map(|f| idx.string(f)), project_root)
                && seen.insert((c.name, c.into))
            {
                let at = match (c.call_file, c.call_line) {
                    (Some(f), Some(l)) => format!(" at {}:{l}", idx.string(f)),
                    _ => String::new(),
                };
                out.inlined_only.push(format!(
                    "{name} inlined into {}{at}, cannot hook",
                    idx.string(c.into)
                ));
            }
        }
        out
    }
}

fn cache_key(path: &Path) -> Result<String, SymbolError> {
    let io = |source| SymbolError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let canonical = path.canonicalize().map_err(io)?;
    let mut h = Sha256::new();
    // Bumped when what an index holds changes, so older caches are rebuilt.
    h.update(b"index-format-3");
    h.update(canonical.as_os_str().as_encoded_bytes());
    h.update(mtime.to_le_bytes());
    h.update(meta.len().to_le_bytes());
    Ok(h.finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect())
}

fn map(path: &Path) -> Result<memmap2::Mmap, SymbolError> {
    let io = |source| SymbolError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    // SAFETY: the mapping is read-only; a concurrent truncation of the file
    // would be the user's own doing and at worst yields a parse error or SIGBUS
    // in this short-lived read.
    unsafe { memmap2::Mmap::map(&file) }.map_err(io)
}

fn has_dwarf(obj: &object::File<'_>) -> bool {
    obj.section_by_name(".debug_info")
        .is_some_and(|s| s.size() > 0)
}

/// Separate debug file: by build id, then by `.gnu_debuglink`.
fn find_debug_file(obj: &object::File<'_>, path: &Path) -> Option<PathBuf> {
    if let Ok(Some(id)) = obj.build_id()
        && id.len() > 1
    {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let p = PathBuf::from(format!(
            "/usr/lib/debug/.build-id/{}/{}.debug",
            &hex[..2],
            &hex[2..]
        ));
        if p.is_file() {
            return Some(p);
        }
    }
    if let Ok(Some((name, _crc))) = obj.gnu_debuglink() {
        let name = Path::new(std::str::from_utf8(name).ok()?);
        let dir = path.parent()?;
        let global = Path::new("/usr/lib/debug").join(dir.strip_prefix("/").unwrap_or(dir));
        for cand in [
            dir.join(name),
            dir.join(".debug").join(name),
            global.join(name),
        ] {
            if cand.is_file() && cand != path {
                return Some(cand);
            }
        }
    }
    None
}

/// Builds the index of one image.
pub fn build_index(path: &Path) -> Result<SymbolIndex, SymbolError> {
    let data = map(path)?;
    let fmt = |e: object::Error| SymbolError::Format {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let obj = object::File::parse(&*data).map_err(fmt)?;
    let load_bias = obj
        .segments()
        .filter(|s| s.size() > 0)
        .map(|s| s.address())
        .min()
        .unwrap_or(0);
    let build_id = obj
        .build_id()
        .ok()
        .flatten()
        .map(|id| id.iter().map(|b| format!("{b:02x}")).collect());

    let (mut functions, inlined, mut globals, debug_file) = if has_dwarf(&obj) {
        let p = parse_dwarf(&obj, path)?;
        (p.functions, p.inlined, p.globals, Some(path.to_path_buf()))
    } else if let Some(debug) = find_debug_file(&obj, path) {
        let ddata = map(&debug)?;
        let dobj = object::File::parse(&*ddata).map_err(fmt)?;
        let p = parse_dwarf(&dobj, &debug)?;
        (p.functions, p.inlined, p.globals, Some(debug))
    } else {
        (Vec::new(), Vec::new(), Vec::new(), None)
    };
    for g in &mut globals {
        g.offset = g.offset.wrapping_sub(load_bias);
    }
    globals.sort_by(|a, b| a.name.cmp(&b.name).then(a.offset.cmp(&b.offset)));
    globals.dedup_by(|a, b| a.name == b.name && a.offset == b.offset);

    // The ELF symbol table covers code without DWARF (and stripped DWARF).
    // Symbols inside a DWARF function's ranges are parts of it, not entry
    // points: `f.cold` blocks the compiler split off (jumped to, never
    // called; hooking one as a function would corrupt its frame).
    let known: HashSet<u64> = functions.iter().map(|f| f.entry_offset).collect();
    let mut dwarf_ranges: Vec<(u64, u64)> = functions
        .iter()
        .flat_map(|f| f.ranges.iter().copied())
        .collect();
    dwarf_ranges.sort_unstable();
    let inside_dwarf = |addr: u64| {
        let i = dwarf_ranges.partition_point(|r| r.0 <= addr);
        dwarf_ranges[..i].iter().rev().take(64).any(|r| addr < r.1)
    };
    let mut symtab: Vec<_> = obj.symbols().collect();
    if symtab.is_empty() {
        symtab = obj.dynamic_symbols().collect();
    }
    // Fewest leading underscores, then the shorter name: the public name of
    // an address exported under several (`__libc_malloc` and `malloc`).
    let rank = |n: &str| (n.len() - n.trim_start_matches('_').len(), n.len());
    let mut public: HashMap<u64, &str> = HashMap::new();
    for sym in obj.dynamic_symbols() {
        if sym.kind() != SymbolKind::Text || !sym.is_definition() || !sym.is_global() {
            continue;
        }
        let Ok(name) = sym.name() else { continue };
        public
            .entry(sym.address())
            .and_modify(|best| {
                if rank(name) < rank(best) {
                    *best = name;
                }
            })
            .or_insert(name);
    }
    // A C function known from DWARF by its internal name (glibc's
    // `__libc_malloc`, `__pthread_getspecific`) goes by the name it is
    // exported under, which is what a pattern names.
    for f in &mut functions {
        if let Some(name) = public.get(&f.entry_offset)
            && rank(name) < rank(&f.name)
            && !f.name.contains("::")
            && !name.starts_with("_Z")
        {
            f.name = name.to_string();
        }
    }
    // One function per address, under its public name: libc exports
    // `__getpid` and `getpid`, `__mmap` and `mmap` at one address, and a
    // pattern naming `getpid` must find it.
    let mut by_addr: HashMap<u64, (&str, u64)> = HashMap::new();
    for sym in &symtab {
        if sym.kind() != SymbolKind::Text || sym.size() == 0 || !sym.is_definition() {
            continue;
        }
        let addr = sym.address();
        if known.contains(&addr) || inside_dwarf(addr) {
            continue;
        }
        let Ok(raw) = sym.name() else { continue };
        if raw.ends_with(".cold") || raw.contains(".cold.") {
            continue;
        }
        by_addr
            .entry(addr)
            .and_modify(|best| {
                if rank(raw) < rank(best.0) {
                    *best = (raw, sym.size());
                }
            })
            .or_insert((raw, sym.size()));
    }
    let mut chosen: Vec<(u64, &str, u64)> = by_addr
        .into_iter()
        .map(|(addr, (raw, size))| (addr, raw, size))
        .collect();
    chosen.sort_unstable();
    for (addr, raw, size) in chosen {
        let sym_size = size;
        functions.push(FunctionSymbol {
            name: demangle(raw).unwrap_or_else(|| raw.to_string()),
            name_raw: Some(raw.to_string()),
            file: None,
            line: None,
            entry_offset: addr,
            ranges: vec![(addr, addr + sym_size)],
            from_symtab: true,
            die: None,
        });
    }
    for f in &mut functions {
        f.entry_offset = f.entry_offset.wrapping_sub(load_bias);
        for r in &mut f.ranges {
            *r = (r.0.wrapping_sub(load_bias), r.1.wrapping_sub(load_bias));
        }
    }
    functions.sort_by(|a, b| {
        a.entry_offset
            .cmp(&b.entry_offset)
            .then_with(|| a.name.cmp(&b.name))
    });
    functions.dedup_by(|a, b| a.entry_offset == b.entry_offset && a.name == b.name);
    // One call site per (inlined function, caller) is enough to explain why
    // a pattern cannot hook it, and keeps the cached index small.
    let mut inlined = inlined;
    let mut seen_inline = HashSet::new();
    inlined.retain(|c| seen_inline.insert((c.name.clone(), c.into.clone())));
    let mut index = SymbolIndex {
        path: path.to_path_buf(),
        build_id,
        load_bias,
        functions,
        debug_file,
        globals,
        ..Default::default()
    };
    index.set_inlined(inlined);
    Ok(index)
}

/// Demangles a linkage name: Rust without the `::h<hash>` suffix, C++
/// without parameters or return type. `None` for unmangled names.
pub fn demangle(raw: &str) -> Option<String> {
    if let Ok(d) = rustc_demangle::try_demangle(raw) {
        return Some(format!("{d:#}"));
    }
    if raw.starts_with("_Z") {
        let sym = cpp_demangle::Symbol::new(raw).ok()?;
        let opts = cpp_demangle::DemangleOptions::new()
            .no_params()
            .no_return_type();
        return sym.demangle(&opts).ok();
    }
    None
}

/// Readable form of a C++ `std::type_info` name (`St13runtime_error` →
/// `std::runtime_error`); the name itself when it does not demangle.
pub fn demangle_type_name(name: &str) -> String {
    // Types local to a translation unit are marked with a leading '*'.
    let name = name.strip_prefix('*').unwrap_or(name);
    cpp_demangle::Symbol::new(format!("_ZTS{name}"))
        .ok()
        .and_then(|s| {
            s.to_string()
                .strip_prefix("typeinfo name for ")
                .map(str::to_string)
        })
        .unwrap_or_else(|| name.to_string())
}
