//! The DWARF walk behind the native index: each compilation unit's
//! functions (named from their declarations, through specifications and
//! abstract origins), inlined call sites and globals with fixed addresses.

use super::demangle;
use crate::SymbolError;
use crate::index::{DieRef, FunctionSymbol, GlobalSymbol, InlinedCall};
use gimli::{AttributeValue, DwAt, EndianSlice, RunTimeEndian, UnitOffset};
use object::{Object, ObjectSection};
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

type Slice<'a> = EndianSlice<'a, RunTimeEndian>;

/// What the DWARF of one image holds, before relocation to load offsets.
#[derive(Default)]
pub(super) struct Parsed {
    pub(super) functions: Vec<FunctionSymbol>,
    pub(super) inlined: Vec<InlinedCall>,
    pub(super) globals: Vec<GlobalSymbol>,
}

pub(super) fn parse_dwarf(obj: &object::File<'_>, path: &Path) -> Result<Parsed, SymbolError> {
    let derr = |e: gimli::Error| SymbolError::Dwarf {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let endian = if obj.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<Cow<'_, [u8]>, gimli::Error> {
        Ok(match obj.section_by_name(id.name()) {
            Some(s) => s.uncompressed_data().unwrap_or(Cow::Borrowed(&[])),
            None => Cow::Borrowed(&[]),
        })
    };
    let sections = gimli::DwarfSections::load(load).map_err(derr)?;
    let dwarf = sections.borrow(|s| EndianSlice::new(s, endian));
    let mut headers = Vec::new();
    let mut iter = dwarf.units();
    while let Some(h) = iter.next().map_err(derr)? {
        headers.push(h);
    }
    let per_unit: Vec<_> = headers
        .into_par_iter()
        .map(|h| parse_unit(&dwarf, h))
        .collect();
    let mut all = Parsed::default();
    for r in per_unit {
        match r {
            Ok(p) => {
                all.functions.extend(p.functions);
                all.inlined.extend(p.inlined);
                all.globals.extend(p.globals);
            }
            // One bad unit must not hide the rest of the program.
            Err(e) => tracing::warn!("skipping a malformed DWARF unit in {}: {e}", path.display()),
        }
    }
    Ok(all)
}

#[derive(Clone, Default)]
struct Decl {
    qualified: Option<String>,
    linkage: Option<String>,
    file: Option<String>,
    line: Option<u32>,
    /// The declaration this one refers to (specification / abstract origin).
    refers_to: Option<UnitOffset>,
}

/// An inlined call: origin declaration, enclosing concrete function, call file and line.
type InlineSite = (UnitOffset, Option<UnitOffset>, Option<String>, Option<u32>);

struct Concrete {
    /// The concrete DIE (its declaration is found through it).
    decl: UnitOffset,
    entry: u64,
    ranges: Vec<(u64, u64)>,
}

fn parse_unit(
    dwarf: &gimli::Dwarf<Slice<'_>>,
    header: gimli::UnitHeader<Slice<'_>>,
) -> gimli::Result<Parsed> {
    let unit_start = header
        .offset()
        .as_debug_info_offset()
        .map_or(u64::MAX, |o| o.0 as u64);
    let unit = dwarf.unit(header)?;
    let unit_ref = unit.unit_ref(dwarf);
    let comp_dir = unit.comp_dir.map(|d| d.to_string_lossy().into_owned());
    let files = file_table(&unit_ref, comp_dir.as_deref());

    let mut decls: HashMap<UnitOffset, Decl> = HashMap::new();
    let mut concrete: Vec<Concrete> = Vec::new();
    let mut inlined: Vec<InlineSite> = Vec::new();
    let mut scopes: Vec<(isize, String)> = Vec::new();
    let mut funcs: Vec<(isize, UnitOffset)> = Vec::new();
    // Every enclosing subprogram by name, to qualify function statics.
    let mut fn_scopes: Vec<(isize, Option<String>)> = Vec::new();
    let mut var_decls: HashMap<UnitOffset, String> = HashMap::new();
    let mut globals: Vec<GlobalSymbol> = Vec::new();
    let mut depth = 0isize;
    let mut entries = unit.entries();
    while let Some((delta, entry)) = entries.next_dfs()? {
        depth += delta;
        while scopes.last().is_some_and(|(d, _)| *d >= depth) {
            scopes.pop();
        }
        while funcs.last().is_some_and(|(d, _)| *d >= depth) {
            funcs.pop();
        }
        while fn_scopes.last().is_some_and(|(d, _)| *d >= depth) {
            fn_scopes.pop();
        }
        let tag = entry.tag();
        match tag {
            gimli::DW_TAG_namespace
            | gimli::DW_TAG_class_type
            | gimli::DW_TAG_structure_type
            | gimli::DW_TAG_union_type
            | gimli::DW_TAG_enumeration_type => {
                let name = attr_string(&unit_ref, entry.attr_value(gimli::DW_AT_name)?)
                    .unwrap_or_else(|| {
                        if tag == gimli::DW_TAG_namespace {
                            "(anonymous namespace)".into()
                        } else {
                            "(anonymous)".into()
                        }
                    });
                scopes.push((depth, name));
            }
            gimli::DW_TAG_subprogram => {
                let name = attr_string(&unit_ref, entry.attr_value(gimli::DW_AT_name)?);
                let linkage =
                    attr_string(&unit_ref, entry.attr_value(gimli::DW_AT_linkage_name)?).or(
                        attr_string(&unit_ref, entry.attr_value(gimli::DW_AT_MIPS_linkage_name)?),
                    );
                let qualified = name.map(|n| qualify(&scopes, &n));
                fn_scopes.push((depth, qualified.clone()));
                let refers_to = unit_offset(entry.attr_value(gimli::DW_AT_specification)?)
                    .or(unit_offset(entry.attr_value(gimli::DW_AT_abstract_origin)?));
                let file = file_attr(entry.attr_value(gimli::DW_AT_decl_file)?, &files);
                let line = entry
                    .attr_value(gimli::DW_AT_decl_line)?
                    .and_then(|v| v.udata_value())
                    .map(|l| l as u32);
                decls.insert(
                    entry.offset(),
                    Decl {
                        qualified,
                        linkage,
                        file,
                        line,
                        refers_to,
                    },
                );
                let mut ranges = Vec::new();
                let mut it = dwarf.die_ranges(&unit, entry)?;
                while let Some(r) = it.next()? {
                    if r.end > r.begin {
                        ranges.push((r.begin, r.end));
                    }
                }
                if !ranges.is_empty() {
                    let entry_pc = unit_ref
                        .attr_address_value(entry, gimli::DW_AT_entry_pc)
                        .or_else(|| unit_ref.attr_address_value(entry, gimli::DW_AT_low_pc))
                        .unwrap_or(ranges[0].0);
                    concrete.push(Concrete {
                        decl: entry.offset(),
                        entry: entry_pc,
                        ranges,
                    });
                    funcs.push((depth, entry.offset()));
                }
            }
            gimli::DW_TAG_variable | gimli::DW_TAG_member => {
                let name = attr_string(&unit_ref, entry.attr_value(gimli::DW_AT_name)?);
                // Declarations (extern variables, static class members) only
                // lend their names to the definitions that refer to them.
                if tag == gimli::DW_TAG_member
                    || entry.attr_value(gimli::DW_AT_declaration)?.is_some()
                {
                    let is_static_member = tag == gimli::DW_TAG_variable
                        || entry.attr_value(gimli::DW_AT_external)?.is_some();
                    if let Some(n) = name
                        && is_static_member
                    {
                        var_decls.insert(entry.offset(), qualify(&scopes, &n));
                    }
                    continue;
                }
                let Some(addr) =
                    static_address(&unit_ref, entry.attr_value(gimli::DW_AT_location)?)
                else {
                    continue;
                };
                let qualified = match name {
                    Some(n) => match fn_scopes.last() {
                        Some((_, Some(f))) => format!("{f}::{n}"),
                        _ => qualify(&scopes, &n),
                    },
                    None => match unit_offset(entry.attr_value(gimli::DW_AT_specification)?)
                        .and_then(|o| var_decls.get(&o))
                    {
                        Some(n) => n.clone(),
                        None => continue,
                    },
                };
                globals.push(GlobalSymbol {
                    name: qualified,
                    offset: addr,
                    file: file_attr(entry.attr_value(gimli::DW_AT_decl_file)?, &files),
                    die: DieRef {
                        unit: unit_start,
                        offset: entry.offset().0 as u64,
                    },
                });
            }
            gimli::DW_TAG_inlined_subroutine => {
                if let Some(origin) = unit_offset(entry.attr_value(gimli::DW_AT_abstract_origin)?) {
                    let call_file = file_attr(entry.attr_value(gimli::DW_AT_call_file)?, &files);
                    let call_line = entry
                        .attr_value(gimli::DW_AT_call_line)?
                        .and_then(|v| v.udata_value())
                        .map(|l| l as u32);
                    inlined.push((origin, funcs.last().map(|(_, o)| *o), call_file, call_line));
                }
            }
            _ => {}
        }
    }

    let resolve =
        |off: UnitOffset| -> (Option<String>, Option<String>, Option<String>, Option<u32>) {
            // Follow specification/abstract-origin links (bounded) to fill gaps.
            let (mut qualified, mut linkage, mut file, mut line) = (None, None, None, None);
            let mut cur = Some(off);
            for _ in 0..8 {
                let Some(d) = cur.and_then(|o| decls.get(&o)) else {
                    break;
                };
                qualified = qualified.or_else(|| d.qualified.clone());
                linkage = linkage.or_else(|| d.linkage.clone());
                file = file.or_else(|| d.file.clone());
                line = line.or(d.line);
                cur = d.refers_to;
            }
            let name = linkage.as_deref().and_then(demangle).or(qualified);
            (name, linkage, file, line)
        };

    let mut out = Vec::with_capacity(concrete.len());
    let mut names_by_decl: HashMap<UnitOffset, String> = HashMap::new();
    for c in concrete {
        let (name, linkage, file, line) = resolve(c.decl);
        let Some(name) = name else { continue };
        names_by_decl.insert(c.decl, name.clone());
        out.push(FunctionSymbol {
            name,
            name_raw: linkage,
            file,
            line,
            entry_offset: c.entry,
            ranges: c.ranges,
            from_symtab: false,
            die: Some(DieRef {
                unit: unit_start,
                offset: c.decl.0 as u64,
            }),
        });
    }
    let calls = inlined
        .into_iter()
        .filter_map(|(origin, into, call_file, call_line)| {
            let (name, _, file, _) = resolve(origin);
            Some(InlinedCall {
                name: name?,
                file,
                into: into
                    .and_then(|o| names_by_decl.get(&o).cloned())
                    .unwrap_or_else(|| "?".into()),
                call_file,
                call_line,
            })
        })
        .collect();
    Ok(Parsed {
        functions: out,
        inlined: calls,
        globals,
    })
}

/// The fixed address of a variable whose location is a single `DW_OP_addr`
/// (or `DW_OP_addrx`); thread-locals and register/stack variables have none.
fn static_address(
    unit: &gimli::UnitRef<'_, Slice<'_>>,
    loc: Option<AttributeValue<Slice<'_>>>,
) -> Option<u64> {
    let AttributeValue::Exprloc(expr) = loc? else {
        return None;
    };
    let mut ops = expr.operations(unit.encoding());
    let first = ops.next().ok()??;
    if ops.next().ok()?.is_some() {
        return None;
    }
    match first {
        gimli::Operation::Address { address } => Some(address),
        gimli::Operation::AddressIndex { index } => unit.address(index).ok(),
        _ => None,
    }
}

fn qualify(scopes: &[(isize, String)], name: &str) -> String {
    if scopes.is_empty() {
        return name.to_string();
    }
    let mut s = String::new();
    for (_, scope) in scopes {
        s.push_str(scope);
        s.push_str("::");
    }
    s.push_str(name);
    s
}

fn unit_offset(v: Option<AttributeValue<Slice<'_>>>) -> Option<UnitOffset> {
    match v? {
        AttributeValue::UnitRef(o) => Some(o),
        _ => None,
    }
}

pub(crate) fn attr_string<R: gimli::Reader>(
    unit: &gimli::UnitRef<'_, R>,
    v: Option<AttributeValue<R>>,
) -> Option<String> {
    let v = v?;
    let s = unit.attr_string(v).ok()?;
    Some(s.to_string_lossy().ok()?.into_owned())
}

trait AddrAttr<'d> {
    fn attr_address_value(
        &self,
        entry: &gimli::DebuggingInformationEntry<'_, '_, Slice<'d>>,
        at: DwAt,
    ) -> Option<u64>;
}

impl<'d> AddrAttr<'d> for gimli::UnitRef<'_, Slice<'d>> {
    fn attr_address_value(
        &self,
        entry: &gimli::DebuggingInformationEntry<'_, '_, Slice<'d>>,
        at: DwAt,
    ) -> Option<u64> {
        let v = entry.attr_value(at).ok()??;
        self.attr_address(v).ok()?
    }
}

pub(crate) fn file_table<R: gimli::Reader>(
    unit: &gimli::UnitRef<'_, R>,
    comp_dir: Option<&str>,
) -> Vec<Option<String>> {
    let Some(program) = unit.line_program.as_ref() else {
        return Vec::new();
    };
    let header = program.header();
    let version5 = header.version() >= 5;
    let count = header.file_names().len() as u64;
    let (first, last) = if version5 { (0, count) } else { (1, count + 1) };
    let mut out = vec![None; last as usize];
    for index in first..last {
        let Some(entry) = header.file(index) else {
            continue;
        };
        let Some(name) = attr_string(unit, Some(entry.path_name().clone())) else {
            continue;
        };
        let mut path = PathBuf::new();
        if let Some(dir) = entry
            .directory(header)
            .and_then(|d| attr_string(unit, Some(d.clone())))
        {
            if let Some(cd) = comp_dir
                && !Path::new(&dir).is_absolute()
            {
                path.push(cd);
            }
            path.push(dir);
        } else if let Some(cd) = comp_dir {
            path.push(cd);
        }
        path.push(name);
        out[index as usize] = Some(normalize(&path));
    }
    out
}

fn normalize(p: &Path) -> String {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out.to_string_lossy().into_owned()
}

pub(crate) fn file_attr<R: gimli::Reader>(
    v: Option<AttributeValue<R>>,
    files: &[Option<String>],
) -> Option<String> {
    let idx = match v? {
        AttributeValue::FileIndex(i) => i,
        other => other.udata_value()?,
    };
    files.get(idx as usize).cloned().flatten()
}
