//! What a stopped frame can see and where it goes next: the variables in
//! scope at an address with their DWARF locations, the function's frame
//! base, the canonical frame address rule from the image's `.eh_frame`, and
//! the statement addresses of a function's line table (for breakpoints and
//! stepping). Addresses in and out are image offsets (relative to the
//! image's lowest load address), as everywhere in this crate.

use crate::SymbolError;
use crate::debuginfo::{DebugInfo, R, name_and_type};
use crate::index::DieRef;
use crate::types::TypeId;
use gimli::{AttributeValue, UnitOffset, UnwindSection};
use object::{Object, ObjectSection};

/// Where a variable's value is at one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// In memory at the function's frame base plus this offset.
    FrameBase(i64),
    /// In memory at a register's value plus an offset (DWARF register number).
    RegisterOffset(u16, i64),
    /// In memory at a fixed image offset (a `static` local).
    Static(u64),
    /// The register holds the value itself.
    Register(u16),
    /// A constant the compiler propagated.
    Const(i64),
    /// Not available at this address.
    OptimizedOut,
    /// Described in a way this reader does not evaluate (pieces, entry values…).
    Unsupported(String),
}

/// How a function's frame base (`DW_AT_frame_base`) is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameBase {
    /// The canonical frame address (GCC).
    Cfa,
    /// A register's value plus an offset (Clang and rustc use `rbp` or `rsp`).
    Register(u16, i64),
    /// Not described.
    Unknown,
}

/// The canonical frame address at one address: a register's value plus an
/// offset (x86-64: the return address is at CFA − 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CfaRule {
    /// DWARF register number (6 = rbp, 7 = rsp).
    pub register: u16,
    /// Added to the register's value.
    pub offset: i64,
}

/// One step of unwinding at an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unwind {
    /// The canonical frame address rule.
    pub cfa: CfaRule,
    /// `rbp` was saved at CFA + this (else it still holds the caller's value).
    pub rbp_saved_at: Option<i64>,
}

/// A parameter or local variable in scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeVariable {
    /// Its name.
    pub name: String,
    /// Its type, in the image's [`crate::TypeTable`].
    pub ty: TypeId,
    /// Where it is at the address asked about.
    pub place: Place,
    /// A formal parameter (rather than a local).
    pub parameter: bool,
}

/// A statement start from the line table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// Image offset.
    pub offset: u64,
    /// Source line.
    pub line: u32,
    /// Source file.
    pub file: String,
}

/// The `.eh_frame` section of an image, with the addresses its pointers are
/// relative to.
struct EhFrameData {
    data: Vec<u8>,
    bases: gimli::BaseAddresses,
    little_endian: bool,
}

/// An image's unwind table (`.eh_frame`), which images without DWARF debug
/// info (libc) have too: walking a crash out of `abort()` needs it.
pub struct FrameTable {
    data: Option<EhFrameData>,
    load_bias: u64,
}

impl FrameTable {
    /// Reads the table of `image`.
    pub fn open(image: &std::path::Path) -> FrameTable {
        let (data, load_bias) = read_eh_frame(image).map_or((None, 0), |(d, b)| (Some(d), b));
        FrameTable { data, load_bias }
    }

    /// How to find the caller's frame from image offset `offset`: the CFA
    /// rule, and where `rbp` was saved.
    pub fn unwind_at(&self, offset: u64) -> Option<Unwind> {
        let eh = self.data.as_ref()?;
        let endian = if eh.little_endian {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let frame = gimli::EhFrame::new(&eh.data, endian);
        let mut ctx = Box::new(gimli::UnwindContext::new());
        let row = frame
            .unwind_info_for_address(
                &eh.bases,
                &mut ctx,
                offset.wrapping_add(self.load_bias),
                gimli::EhFrame::cie_from_offset,
            )
            .ok()?;
        let cfa = match row.cfa() {
            gimli::CfaRule::RegisterAndOffset { register, offset } => CfaRule {
                register: register.0,
                offset: *offset,
            },
            gimli::CfaRule::Expression(_) => return None,
        };
        let rbp_saved_at = match row.register(gimli::Register(6)) {
            gimli::RegisterRule::Offset(o) => Some(o),
            _ => None,
        };
        Some(Unwind { cfa, rbp_saved_at })
    }
}

struct RawVariable {
    name: Option<String>,
    ty: Option<UnitOffset>,
    place: Place,
    parameter: bool,
}

impl DebugInfo {
    /// The frame base of the function whose concrete DIE is `die`.
    pub fn frame_base(&mut self, die: DieRef) -> Result<FrameBase, SymbolError> {
        self.unit(die.unit)?;
        let u = &self.units[&die.unit].unit;
        let e = u
            .entry(UnitOffset(die.offset as usize))
            .map_err(|e| self.err(e))?;
        let Ok(Some(AttributeValue::Exprloc(expr))) = e.attr_value(gimli::DW_AT_frame_base) else {
            return Ok(FrameBase::Unknown);
        };
        let mut ops = expr.operations(u.encoding());
        Ok(match ops.next() {
            Ok(Some(gimli::Operation::CallFrameCFA)) => FrameBase::Cfa,
            Ok(Some(gimli::Operation::Register { register })) => FrameBase::Register(register.0, 0),
            Ok(Some(gimli::Operation::RegisterOffset {
                register, offset, ..
            })) => FrameBase::Register(register.0, offset),
            _ => FrameBase::Unknown,
        })
    }

    /// Parameters and locals of the function `die` that are in scope at
    /// image offset `offset` (innermost block last; a name declared again in
    /// an inner block appears once, as the inner one).
    pub fn scope_at(
        &mut self,
        die: DieRef,
        offset: u64,
    ) -> Result<Vec<ScopeVariable>, SymbolError> {
        self.unit(die.unit)?;
        let pc = offset.wrapping_add(self.load_bias);
        let mut raw = Vec::new();
        {
            let u = &self.units[&die.unit].unit;
            let mut tree = u
                .entries_tree(Some(UnitOffset(die.offset as usize)))
                .map_err(|e| self.err(e))?;
            let root = tree.root().map_err(|e| self.err(e))?;
            self.collect(u, root, pc, &mut raw, 0)
                .map_err(|e| self.err(e))?;
        }
        let mut out: Vec<ScopeVariable> = Vec::new();
        for (i, v) in raw.into_iter().enumerate() {
            let name = v.name.unwrap_or_else(|| format!("arg{i}"));
            let ty = match v.ty {
                Some(t) => self.type_at(die.unit, t, 0),
                None => crate::types::VOID,
            };
            out.retain(|o| o.name != name);
            out.push(ScopeVariable {
                name,
                ty,
                place: v.place,
                parameter: v.parameter,
            });
        }
        Ok(out)
    }

    fn collect(
        &self,
        u: &gimli::Unit<R>,
        node: gimli::EntriesTreeNode<R>,
        pc: u64,
        out: &mut Vec<RawVariable>,
        depth: u32,
    ) -> gimli::Result<()> {
        let uref = u.unit_ref(&self.dwarf);
        let mut children = node.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            match e.tag() {
                gimli::DW_TAG_formal_parameter | gimli::DW_TAG_variable => {
                    let (name, ty) = name_and_type(u, &uref, e);
                    // Declarations of globals inside a function (`extern int x;`) have no location.
                    let declaration = e
                        .attr_value(gimli::DW_AT_declaration)
                        .ok()
                        .flatten()
                        .is_some();
                    if !declaration {
                        out.push(RawVariable {
                            name,
                            ty,
                            place: self.place_of(u, e, pc),
                            parameter: e.tag() == gimli::DW_TAG_formal_parameter,
                        });
                    }
                }
                gimli::DW_TAG_lexical_block if depth < 32 => {
                    let inside = match self.dwarf.die_ranges(u, e) {
                        Ok(mut ranges) => {
                            let mut found = false;
                            while let Ok(Some(r)) = ranges.next() {
                                found |= (r.begin..r.end).contains(&pc);
                            }
                            found
                        }
                        Err(_) => false,
                    };
                    if inside {
                        self.collect(u, child, pc, out, depth + 1)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Where the variable `e` is at DWARF address `pc`.
    fn place_of(
        &self,
        u: &gimli::Unit<R>,
        e: &gimli::DebuggingInformationEntry<R>,
        pc: u64,
    ) -> Place {
        match e.attr_value(gimli::DW_AT_location) {
            Ok(Some(AttributeValue::Exprloc(expr))) => return self.eval_place(u, expr),
            Ok(Some(v)) => {
                let Ok(Some(mut list)) = self.dwarf.attr_locations(u, v) else {
                    return Place::Unsupported("an unreadable location list".into());
                };
                while let Ok(Some(entry)) = list.next() {
                    if (entry.range.begin..entry.range.end).contains(&pc) {
                        return self.eval_place(u, entry.data);
                    }
                }
                return Place::OptimizedOut;
            }
            _ => {}
        }
        match e.attr_value(gimli::DW_AT_const_value) {
            Ok(Some(v)) => match v.sdata_value().or(v.udata_value().map(|x| x as i64)) {
                Some(c) => Place::Const(c),
                None => Place::Unsupported("a constant that is not an integer".into()),
            },
            _ => Place::OptimizedOut,
        }
    }

    fn eval_place(&self, u: &gimli::Unit<R>, expr: gimli::Expression<R>) -> Place {
        let mut ops = expr.operations(u.encoding());
        let mut list = Vec::new();
        while let Ok(Some(op)) = ops.next() {
            list.push(op);
            if list.len() > 3 {
                break;
            }
        }
        use gimli::Operation as Op;
        match list.as_slice() {
            [] => Place::OptimizedOut,
            [Op::FrameOffset { offset }] => Place::FrameBase(*offset),
            [
                Op::RegisterOffset {
                    register, offset, ..
                },
            ] => Place::RegisterOffset(register.0, *offset),
            [Op::Register { register }] => Place::Register(register.0),
            [Op::Address { address }] => Place::Static(address.wrapping_sub(self.load_bias)),
            [Op::UnsignedConstant { value }, Op::StackValue] => Place::Const(*value as i64),
            [Op::SignedConstant { value }, Op::StackValue] => Place::Const(*value),
            [Op::EntryValue { .. }, ..] => {
                Place::Unsupported("its value at the function's entry (not kept)".into())
            }
            [Op::Piece { .. }, ..] | [_, Op::Piece { .. }, ..] => {
                Place::Unsupported("split across registers and memory".into())
            }
            _ => Place::Unsupported("a computed location".into()),
        }
    }

    /// The canonical frame address rule at image offset `offset`, from the
    /// image's `.eh_frame` (`None` where it has none, or where the rule is a
    /// DWARF expression).
    pub fn cfa_at(&mut self, offset: u64) -> Option<CfaRule> {
        self.unwind_at(offset).map(|u| u.cfa)
    }

    /// How to find the caller's frame from image offset `offset`.
    pub fn unwind_at(&mut self, offset: u64) -> Option<Unwind> {
        if self.eh_frame.is_none() {
            self.eh_frame = Some(FrameTable::open(&self.image));
        }
        self.eh_frame.as_ref()?.unwind_at(offset)
    }

    /// Statement starts of the function with code `ranges` (image offsets),
    /// by address (`unit` is the unit of the function's DIE).
    pub fn statements(&mut self, unit: u64, ranges: &[(u64, u64)]) -> Vec<Statement> {
        let bias = self.load_bias;
        let inside = |a: u64| {
            let off = a.wrapping_sub(bias);
            ranges.iter().any(|(s, e)| (*s..*e).contains(&off))
        };
        let Some(rows) = self.rows(unit).map(<[_]>::to_vec) else {
            return Vec::new();
        };
        let files = &self.units[&unit].files;
        let mut out: Vec<Statement> = Vec::new();
        for row in rows {
            if row.end_sequence || !row.is_stmt || row.line == 0 || !inside(row.address) {
                continue;
            }
            let offset = row.address.wrapping_sub(bias);
            let file = files
                .get(row.file as usize)
                .cloned()
                .flatten()
                .unwrap_or_default();
            // Several rows at one address: the last one is in effect.
            out.retain(|s| s.offset != offset);
            out.push(Statement {
                offset,
                line: row.line,
                file,
            });
        }
        out.sort_by_key(|s| s.offset);
        out
    }

    /// Where a function's body starts, past the prologue that sets up its
    /// frame (where a debugger stops for "break at function"): the line
    /// table's `prologue_end` mark, else the second statement, else `entry`.
    pub fn body_start(&mut self, unit: u64, ranges: &[(u64, u64)], entry: u64) -> u64 {
        let bias = self.load_bias;
        let marked = self.rows(unit).and_then(|rows| {
            rows.iter()
                .find(|r| {
                    let off = r.address.wrapping_sub(bias);
                    r.prologue_end
                        && !r.end_sequence
                        && ranges.iter().any(|(s, e)| (*s..*e).contains(&off))
                })
                .map(|r| r.address.wrapping_sub(bias))
        });
        if let Some(m) = marked {
            return m;
        }
        let stmts = self.statements(unit, ranges);
        stmts
            .iter()
            .find(|s| s.offset > entry)
            .map_or(entry, |s| s.offset)
    }
}

/// The image's `.eh_frame` and its lowest load address.
fn read_eh_frame(image: &std::path::Path) -> Option<(EhFrameData, u64)> {
    let bytes = std::fs::read(image).ok()?;
    let obj = object::File::parse(&*bytes).ok()?;
    use object::ObjectSegment;
    let load_bias = obj.segments().map(|s| s.address()).min().unwrap_or(0);
    let section = obj.section_by_name(".eh_frame")?;
    let mut bases = gimli::BaseAddresses::default().set_eh_frame(section.address());
    if let Some(text) = obj.section_by_name(".text") {
        bases = bases.set_text(text.address());
    }
    if let Some(hdr) = obj.section_by_name(".eh_frame_hdr") {
        bases = bases.set_eh_frame_hdr(hdr.address());
    }
    if let Some(got) = obj.section_by_name(".got") {
        bases = bases.set_got(got.address());
    }
    Some((
        EhFrameData {
            data: section.data().ok()?.to_vec(),
            bases,
            little_endian: obj.is_little_endian(),
        },
        load_bias,
    ))
}
