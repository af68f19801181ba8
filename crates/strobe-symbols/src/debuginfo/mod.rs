//! DWARF details read on demand: signatures (parameter and return types),
//! the types of globals, and line tables. The [`crate::SymbolIndex`] keeps
//! only what pattern matching needs; this reopens the debug file when a
//! function is actually hooked or an address needs a source line, so
//! indexing stays fast for images with 100 k functions.

use crate::SymbolError;
use crate::index::{DieRef, SymbolIndex};
use crate::resolvers::dwarf::{attr_string, file_table};
use crate::types::{EntryLoc, Member, Signature, Type, TypeId, TypeTable, VOID};
use gimli::Reader;
use gimli::{AttributeValue, DebugInfoOffset, EndianArcSlice, RunTimeEndian, UnitOffset};
use object::{Object, ObjectSection};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) type R = EndianArcSlice<RunTimeEndian>;

/// How deep type reading recurses before deferring (bounds the stack).
mod lines;
#[cfg(test)]
use lines::path_ends_with;

const TYPE_NESTING: u32 = 64;

/// One decoded row of a line table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineRow {
    pub(crate) address: u64,
    pub(crate) file: u32,
    pub(crate) line: u32,
    pub(crate) end_sequence: bool,
    pub(crate) is_stmt: bool,
    pub(crate) prologue_end: bool,
}

pub(crate) struct UnitData {
    pub(crate) unit: gimli::Unit<R>,
    pub(crate) files: Vec<Option<String>>,
    rows: Option<Vec<LineRow>>,
}

/// Lazily read DWARF of one image. Types are interned into one
/// [`TypeTable`] shared by every signature read from it.
pub struct DebugInfo {
    pub(crate) path: PathBuf,
    /// The image itself (its `.eh_frame` gives frame addresses).
    pub(crate) image: PathBuf,
    pub(crate) dwarf: gimli::Dwarf<R>,
    pub(crate) load_bias: u64,
    pub(crate) units: HashMap<u64, UnitData>,
    /// The image's `.eh_frame`, read when a frame address is first asked for.
    pub(crate) eh_frame: Option<crate::scope::FrameTable>,
    table: TypeTable,
    type_ids: HashMap<(u64, u64), TypeId>,
    /// Types nested too deep to read on the stack, read after it unwinds.
    deferred: Vec<(u64, UnitOffset, TypeId)>,
    /// Function code ranges (image offsets) → unit, for line lookups.
    ranges: Vec<(u64, u64, u64)>,
}

/// A source position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLine {
    /// Source file (absolute when the DWARF says where it was compiled).
    pub file: String,
    /// Line number.
    pub line: u32,
}

impl DebugInfo {
    /// Opens the DWARF behind `index` (the image or its separate debug file).
    pub fn open(index: &SymbolIndex) -> Result<DebugInfo, SymbolError> {
        let Some(path) = index.debug_file.clone() else {
            return Err(SymbolError::Format {
                path: index.path.clone(),
                reason: "the image has no DWARF debug info (build with -g)".into(),
            });
        };
        let dwarf = load(&path)?;
        let mut ranges: Vec<(u64, u64, u64)> = index
            .functions
            .iter()
            .filter_map(|f| Some((f.ranges.clone(), f.die?.unit)))
            .flat_map(|(rs, unit)| rs.into_iter().map(move |(a, b)| (a, b, unit)))
            .collect();
        ranges.sort_unstable();
        Ok(DebugInfo {
            path,
            image: index.path.clone(),
            eh_frame: None,
            dwarf,
            load_bias: index.load_bias,
            units: HashMap::new(),
            table: TypeTable::default(),
            type_ids: HashMap::new(),
            deferred: Vec::new(),
            ranges,
        })
    }

    /// Every type read so far.
    pub fn types(&self) -> &TypeTable {
        &self.table
    }

    /// Adds a type the DWARF does not spell (a slice's `T[n]`) to this
    /// image's table, or finds it there; returns its id.
    pub fn intern_type(&mut self, t: Type) -> TypeId {
        self.table.intern(t)
    }

    pub(crate) fn err(&self, reason: impl std::fmt::Display) -> SymbolError {
        SymbolError::Dwarf {
            path: self.path.clone(),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn unit(&mut self, start: u64) -> Result<&mut UnitData, SymbolError> {
        if !self.units.contains_key(&start) {
            let header = self
                .dwarf
                .debug_info
                .header_from_offset(DebugInfoOffset(start as usize))
                .map_err(|e| self.err(e))?;
            let unit = self.dwarf.unit(header).map_err(|e| self.err(e))?;
            let unit_ref = unit.unit_ref(&self.dwarf);
            let comp_dir = unit
                .comp_dir
                .as_ref()
                .and_then(|d| d.to_string_lossy().ok().map(|s| s.into_owned()));
            let files = file_table(&unit_ref, comp_dir.as_deref());
            self.units.insert(
                start,
                UnitData {
                    unit,
                    files,
                    rows: None,
                },
            );
        }
        Ok(self.units.get_mut(&start).expect("inserted above"))
    }

    /// Parameters and return type of the function whose concrete DIE is `die`.
    pub fn signature(&mut self, die: DieRef) -> Result<Signature, SymbolError> {
        self.unit(die.unit)?;
        let mut sig = Signature::default();
        // The return type lives on the declaration the concrete DIE refers to
        // when not on the DIE itself.
        if let Some(t) = self.declared_type(die)? {
            sig.ret = Some(self.type_at(die.unit, t, 0));
        }
        // Parameters: the concrete DIE's formal_parameter children, names and
        // types taken from their abstract origins where the concrete copy lacks them.
        let mut params: Vec<(Option<String>, Option<UnitOffset>)> = Vec::new();
        {
            let data = &self.units[&die.unit];
            let u = &data.unit;
            let uref = u.unit_ref(&self.dwarf);
            let mut tree = u
                .entries_tree(Some(UnitOffset(die.offset as usize)))
                .map_err(|e| self.err(e))?;
            let root = tree.root().map_err(|e| self.err(e))?;
            let entry_pc = self.entry_pc(u, root.entry());
            sig.nocall = matches!(
                root.entry().attr_value(gimli::DW_AT_calling_convention),
                Ok(Some(AttributeValue::CallingConvention(gimli::DW_CC_nocall)))
            );
            let mut children = root.children();
            while let Some(child) = children.next().map_err(|e| self.err(e))? {
                let e = child.entry();
                match e.tag() {
                    gimli::DW_TAG_formal_parameter => {
                        sig.entry_locs.push(self.entry_loc(u, e, entry_pc));
                        params.push(name_and_type(u, &uref, e));
                    }
                    gimli::DW_TAG_unspecified_parameters => sig.variadic = true,
                    _ => {}
                }
            }
        }
        for (i, (name, ty)) in params.into_iter().enumerate() {
            let id = match ty {
                Some(t) => self.type_at(die.unit, t, 0),
                None => VOID,
            };
            sig.params
                .push((name.unwrap_or_else(|| format!("arg{i}")), id));
        }
        Ok(sig)
    }

    /// The address a function is entered at (DWARF address space): its
    /// `low_pc`, `entry_pc`, or the start of its first range.
    pub(crate) fn entry_pc(
        &self,
        u: &gimli::Unit<R>,
        e: &gimli::DebuggingInformationEntry<R>,
    ) -> Option<u64> {
        for attr in [gimli::DW_AT_entry_pc, gimli::DW_AT_low_pc] {
            if let Ok(Some(v)) = e.attr_value(attr)
                && let Ok(Some(a)) = self.dwarf.attr_address(u, v)
            {
                return Some(a);
            }
        }
        let mut ranges = self.dwarf.die_ranges(u, e).ok()?;
        ranges.next().ok().flatten().map(|r| r.begin)
    }

    /// Where a formal parameter is at the function's entry.
    fn entry_loc(
        &self,
        u: &gimli::Unit<R>,
        e: &gimli::DebuggingInformationEntry<R>,
        entry_pc: Option<u64>,
    ) -> EntryLoc {
        let single_register = |expr: gimli::Expression<R>| {
            let mut ops = expr.operations(u.encoding());
            match (ops.next(), ops.next()) {
                (Ok(Some(gimli::Operation::Register { register })), Ok(None)) => {
                    EntryLoc::Register(register.0)
                }
                _ => EntryLoc::Unknown,
            }
        };
        match e.attr_value(gimli::DW_AT_location) {
            Ok(Some(AttributeValue::Exprloc(expr))) => return single_register(expr),
            Ok(Some(v)) => {
                let (Some(pc), Ok(Some(mut list))) = (entry_pc, self.dwarf.attr_locations(u, v))
                else {
                    return EntryLoc::Unknown;
                };
                while let Ok(Some(entry)) = list.next() {
                    if (entry.range.begin..entry.range.end).contains(&pc) {
                        return single_register(entry.data);
                    }
                }
                // Described, but not where the function starts.
                return EntryLoc::OptimizedOut;
            }
            _ => {}
        }
        match e.attr_value(gimli::DW_AT_const_value) {
            Ok(Some(AttributeValue::Sdata(v))) => EntryLoc::Const(v),
            Ok(Some(AttributeValue::Udata(v))) => EntryLoc::Const(v as i64),
            Ok(Some(AttributeValue::Data1(v))) => EntryLoc::Const(i64::from(v)),
            Ok(Some(AttributeValue::Data2(v))) => EntryLoc::Const(i64::from(v)),
            Ok(Some(AttributeValue::Data4(v))) => EntryLoc::Const(i64::from(v)),
            Ok(Some(AttributeValue::Data8(v))) => EntryLoc::Const(v as i64),
            Ok(Some(_)) => EntryLoc::Unknown,
            _ => EntryLoc::OptimizedOut,
        }
    }

    /// The type of the variable whose DIE is `die` (following its specification).
    pub fn variable_type(&mut self, die: DieRef) -> Result<TypeId, SymbolError> {
        self.unit(die.unit)?;
        Ok(match self.declared_type(die)? {
            Some(t) => self.type_at(die.unit, t, 0),
            None => VOID,
        })
    }

    /// `DW_AT_type` of `die`, or of the declaration it completes
    /// (`DW_AT_specification`, `DW_AT_abstract_origin`), up to four steps away.
    fn declared_type(&self, die: DieRef) -> Result<Option<UnitOffset>, SymbolError> {
        let u = &self.units[&die.unit].unit;
        let mut cur = Some(UnitOffset(die.offset as usize));
        for _ in 0..4 {
            let Some(off) = cur else { break };
            let e = u.entry(off).map_err(|e| self.err(e))?;
            if let Some(t) = unit_ref(e.attr_value(gimli::DW_AT_type).ok().flatten()) {
                return Ok(Some(t));
            }
            cur = unit_ref(e.attr_value(gimli::DW_AT_specification).ok().flatten()).or(unit_ref(
                e.attr_value(gimli::DW_AT_abstract_origin).ok().flatten(),
            ));
        }
        Ok(None)
    }

    /// Interns the type at `off` in `unit` (recursive types are tied through
    /// a placeholder, so a linked-list node refers to itself by id).
    ///
    /// Nesting deeper than [`TYPE_NESTING`] is not cut: the type keeps its
    /// placeholder id and is read when the outermost call unwinds. A cut
    /// type would be interned as `void` for good, and DIEs are shared, so
    /// the `const char` of a string parameter read after a deep struct graph
    /// (SQLite's `sqlite3 *db` before `const char *zSql`) was a `void *`.
    pub(crate) fn type_at(&mut self, unit: u64, off: UnitOffset, depth: u32) -> TypeId {
        let key = (unit, off.0 as u64);
        if let Some(id) = self.type_ids.get(&key) {
            return *id;
        }
        let id = self.table.push(Type::Void);
        self.type_ids.insert(key, id);
        if depth > TYPE_NESTING {
            self.deferred.push((unit, off, id));
            return id;
        }
        self.fill(unit, off, depth, id);
        if depth == 0 {
            while let Some((unit, off, id)) = self.deferred.pop() {
                self.fill(unit, off, 0, id);
            }
        }
        id
    }

    fn fill(&mut self, unit: u64, off: UnitOffset, depth: u32, id: TypeId) {
        let t = self.read_type(unit, off, depth).unwrap_or(Type::Opaque {
            name: "?".into(),
            size: None,
        });
        self.table.set(id, t);
    }

    fn read_type(&mut self, unit: u64, off: UnitOffset, depth: u32) -> Option<Type> {
        struct Raw {
            tag: gimli::DwTag,
            name: Option<String>,
            size: Option<u64>,
            encoding: Option<gimli::DwAte>,
            target: Option<UnitOffset>,
            declaration: bool,
            pass_by_ref: bool,
            children: Vec<Child>,
        }
        struct Child {
            tag: gimli::DwTag,
            name: Option<String>,
            ty: Option<UnitOffset>,
            offset: Option<u64>,
            bit_offset: Option<u64>,
            bit_size: Option<u64>,
            is_static: bool,
            value: Option<i64>,
            count: Option<u64>,
        }
        let raw = {
            let data = self.units.get(&unit)?;
            let u = &data.unit;
            let uref = u.unit_ref(&self.dwarf);
            let mut tree = u.entries_tree(Some(off)).ok()?;
            let root = tree.root().ok()?;
            let e = root.entry();
            let attr = |at| e.attr_value(at).ok().flatten();
            let mut raw = Raw {
                tag: e.tag(),
                name: attr_string(&uref, attr(gimli::DW_AT_name)),
                size: attr(gimli::DW_AT_byte_size).and_then(|v| v.udata_value()),
                encoding: match attr(gimli::DW_AT_encoding) {
                    Some(AttributeValue::Encoding(enc)) => Some(enc),
                    _ => None,
                },
                target: unit_ref(attr(gimli::DW_AT_type)),
                declaration: attr(gimli::DW_AT_declaration).is_some(),
                pass_by_ref: matches!(
                    attr(gimli::DW_AT_calling_convention),
                    Some(AttributeValue::CallingConvention(
                        gimli::DW_CC_pass_by_reference
                    ))
                ),
                children: Vec::new(),
            };
            let mut children = root.children();
            while let Ok(Some(child)) = children.next() {
                let c = child.entry();
                let cattr = |at| c.attr_value(at).ok().flatten();
                let offset = match cattr(gimli::DW_AT_data_member_location) {
                    Some(AttributeValue::Exprloc(expr)) => {
                        let mut ops = expr.operations(u.encoding());
                        match ops.next() {
                            Ok(Some(gimli::Operation::PlusConstant { value })) => Some(value),
                            _ => None,
                        }
                    }
                    Some(v) => v.udata_value(),
                    None => None,
                };
                let count = cattr(gimli::DW_AT_count)
                    .and_then(|v| v.udata_value())
                    .or_else(|| {
                        cattr(gimli::DW_AT_upper_bound)
                            .and_then(|v| v.udata_value().or(v.sdata_value().map(|s| s as u64)))
                            .map(|ub| ub.wrapping_add(1))
                    });
                raw.children.push(Child {
                    tag: c.tag(),
                    name: attr_string(&uref, cattr(gimli::DW_AT_name)),
                    ty: unit_ref(cattr(gimli::DW_AT_type)),
                    offset,
                    bit_offset: cattr(gimli::DW_AT_data_bit_offset).and_then(|v| v.udata_value()),
                    bit_size: cattr(gimli::DW_AT_bit_size).and_then(|v| v.udata_value()),
                    is_static: cattr(gimli::DW_AT_external).is_some()
                        || cattr(gimli::DW_AT_declaration).is_some(),
                    value: cattr(gimli::DW_AT_const_value)
                        .and_then(|v| v.sdata_value().or(v.udata_value().map(|u| u as i64))),
                    count,
                });
            }
            raw
        };
        let name = |fallback: &str| raw.name.clone().unwrap_or_else(|| fallback.to_string());
        let target = |me: &mut Self| match raw.target {
            Some(t) => me.type_at(unit, t, depth + 1),
            None => VOID,
        };
        Some(match raw.tag {
            gimli::DW_TAG_base_type => {
                let size = raw.size.unwrap_or(0).min(255) as u8;
                match raw.encoding {
                    Some(gimli::DW_ATE_boolean) => Type::Bool { size },
                    Some(gimli::DW_ATE_float) => Type::Float {
                        name: name("float"),
                        size,
                    },
                    Some(
                        enc @ (gimli::DW_ATE_signed
                        | gimli::DW_ATE_signed_char
                        | gimli::DW_ATE_unsigned
                        | gimli::DW_ATE_unsigned_char
                        | gimli::DW_ATE_UTF),
                    ) => Type::Int {
                        name: name("int"),
                        size,
                        signed: matches!(enc, gimli::DW_ATE_signed | gimli::DW_ATE_signed_char),
                        is_char: matches!(
                            enc,
                            gimli::DW_ATE_signed_char
                                | gimli::DW_ATE_unsigned_char
                                | gimli::DW_ATE_UTF
                        ),
                    },
                    _ => Type::Opaque {
                        name: name("?"),
                        size: raw.size,
                    },
                }
            }
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type => Type::Pointer {
                target: target(self),
                reference: raw.tag != gimli::DW_TAG_pointer_type,
            },
            gimli::DW_TAG_const_type
            | gimli::DW_TAG_volatile_type
            | gimli::DW_TAG_restrict_type
            | gimli::DW_TAG_atomic_type => {
                // Unnamed: the target may still be a placeholder, so its
                // name is looked up when asked for (`TypeTable::name`).
                Type::Typedef {
                    name: String::new(),
                    target: target(self),
                }
            }
            gimli::DW_TAG_typedef => Type::Typedef {
                name: name("?"),
                target: target(self),
            },
            gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_union_type => {
                if raw.declaration
                    || raw
                        .children
                        .iter()
                        .any(|c| c.tag == gimli::DW_TAG_variant_part)
                {
                    // Declarations have no layout; Rust enums' variant parts are
                    // not modelled: both are shown as raw bytes.
                    return Some(Type::Opaque {
                        name: name("(anonymous)"),
                        size: raw.size,
                    });
                }
                let is_union = raw.tag == gimli::DW_TAG_union_type;
                let mut members = Vec::new();
                for c in &raw.children {
                    let is_base = c.tag == gimli::DW_TAG_inheritance;
                    if !(c.tag == gimli::DW_TAG_member || is_base) || c.is_static {
                        continue;
                    }
                    let Some(ty) = c.ty else { continue };
                    let ty = self.type_at(unit, ty, depth + 1);
                    let (offset, bits) = match (c.bit_offset, c.bit_size) {
                        (Some(bo), Some(bs)) => (bo / 8, Some(((bo % 8) as u32, bs as u32))),
                        (None, Some(bs)) => (c.offset.unwrap_or(0), Some((0, bs as u32))),
                        _ => (c.offset.unwrap_or(0), None),
                    };
                    let member_name = if is_base {
                        format!("<{}>", self.table.name(ty))
                    } else {
                        c.name.clone().unwrap_or_else(|| "(anonymous)".into())
                    };
                    members.push(Member {
                        name: member_name,
                        offset,
                        ty,
                        bits,
                    });
                }
                Type::Struct {
                    name: name("(anonymous)"),
                    size: raw.size.unwrap_or(0),
                    members,
                    is_union,
                    by_reference: raw.pass_by_ref,
                }
            }
            gimli::DW_TAG_enumeration_type => {
                let signed = match raw.target {
                    Some(_) => {
                        let t = target(self);
                        let t = self.table.strip(t);
                        matches!(self.table.get(t), Type::Int { signed: true, .. })
                    }
                    None => true,
                };
                Type::Enum {
                    name: name("(anonymous enum)"),
                    size: raw.size.unwrap_or(4).min(255) as u8,
                    signed,
                    variants: raw
                        .children
                        .iter()
                        .filter(|c| c.tag == gimli::DW_TAG_enumerator)
                        .filter_map(|c| Some((c.value?, c.name.clone()?)))
                        .collect(),
                }
            }
            gimli::DW_TAG_array_type => {
                let mut elem = target(self);
                let counts: Vec<Option<u64>> = raw
                    .children
                    .iter()
                    .filter(|c| c.tag == gimli::DW_TAG_subrange_type)
                    .map(|c| c.count)
                    .collect();
                if counts.is_empty() {
                    return Some(Type::Array { elem, count: None });
                }
                // int a[2][3] is an array of 2 arrays of 3.
                for count in counts[1..].iter().rev() {
                    elem = self.table.push(Type::Array {
                        elem,
                        count: *count,
                    });
                }
                Type::Array {
                    elem,
                    count: counts[0],
                }
            }
            gimli::DW_TAG_subroutine_type => Type::Function,
            _ => Type::Opaque {
                name: name("?"),
                size: raw.size,
            },
        })
    }
}

/// A variable's or parameter's name and type, taken from its abstract
/// origin where the concrete DIE (optimized or inlined code) lacks them.
pub(crate) fn name_and_type(
    u: &gimli::Unit<R>,
    uref: &gimli::UnitRef<R>,
    e: &gimli::DebuggingInformationEntry<R>,
) -> (Option<String>, Option<UnitOffset>) {
    let mut name = attr_string(uref, e.attr_value(gimli::DW_AT_name).ok().flatten());
    let mut ty = unit_ref(e.attr_value(gimli::DW_AT_type).ok().flatten());
    let mut origin = unit_ref(e.attr_value(gimli::DW_AT_abstract_origin).ok().flatten());
    for _ in 0..4 {
        if name.is_some() && ty.is_some() {
            break;
        }
        let Some(o) = origin else { break };
        let Ok(oe) = u.entry(o) else { break };
        name = name.or_else(|| attr_string(uref, oe.attr_value(gimli::DW_AT_name).ok().flatten()));
        ty = ty.or(unit_ref(oe.attr_value(gimli::DW_AT_type).ok().flatten()));
        origin = unit_ref(oe.attr_value(gimli::DW_AT_abstract_origin).ok().flatten());
    }
    (name, ty)
}

pub(crate) fn unit_ref(v: Option<AttributeValue<R>>) -> Option<UnitOffset> {
    match v? {
        AttributeValue::UnitRef(o) => Some(o),
        _ => None,
    }
}

pub(crate) fn load(path: &Path) -> Result<gimli::Dwarf<R>, SymbolError> {
    let data = std::fs::read(path).map_err(|source| SymbolError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let obj = object::File::parse(&*data).map_err(|e| SymbolError::Format {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let endian = if obj.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let dwarf = gimli::Dwarf::load(|id: gimli::SectionId| -> Result<R, gimli::Error> {
        let bytes: Arc<[u8]> = match obj.section_by_name(id.name()) {
            Some(s) => Arc::from(s.uncompressed_data().unwrap_or_default().as_ref()),
            None => Arc::from(&[][..]),
        };
        Ok(EndianArcSlice::new(bytes, endian))
    })
    .map_err(|e| SymbolError::Dwarf {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    Ok(dwarf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_paths_match_by_whole_components() {
        assert!(path_ends_with("/src/app/main.c", "main.c"));
        assert!(path_ends_with("/src/app/main.c", "app/main.c"));
        assert!(path_ends_with("main.c", "main.c"));
        assert!(path_ends_with("/src/app/main.c", "/src/app/main.c"));
        assert!(!path_ends_with("/glibc/math/w_lgamma_main.c", "main.c"));
        assert!(!path_ends_with("/src/myapp/main.c", "app/main.c"));
    }

    #[test]
    fn an_image_without_dwarf_says_to_build_with_g() {
        let idx = SymbolIndex {
            path: "/bin/x".into(),
            ..Default::default()
        };
        let e = DebugInfo::open(&idx).err().expect("no dwarf");
        assert!(e.to_string().contains("-g"), "{e}");
    }
}
