//! Debug info for breakpoints and stepping, answered by the session's
//! [`Tracer`] (which owns the images and their DWARF): where a function's
//! body or a source line starts, which function and line an address is in,
//! what a frame can see and where its variables are, and the statement
//! addresses a step may stop at. Pure: no process access; registers and
//! memory come from the caller.

use crate::trace::Tracer;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use strobe_frida::agent_protocol::wire::{Hex, OrderedMap};
use strobe_frida::agent_protocol::{MemLocation, TypeDesc, VarDesc, VarLocation};
use strobe_symbols::{
    CfaRule, FrameBase, Pattern, Place, ScopeVariable, Statement, SymbolResolver, Type, TypeId,
    TypeTable,
};

/// A place to break: an image offset and what is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakSite {
    /// Index of the image in the tracer.
    pub module: usize,
    /// Image offset.
    pub offset: u64,
    /// The function containing it.
    pub function: String,
    /// Source file.
    pub file: Option<String>,
    /// Source line.
    pub line: Option<u32>,
}

/// An address resolved to its image, function and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeLocation {
    /// Index of the image in the tracer.
    pub module: usize,
    /// Image offset.
    pub offset: u64,
    /// Index of the function in the image's symbol index.
    pub function_index: Option<usize>,
    /// Its name.
    pub function: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Source line.
    pub line: Option<u32>,
}

/// What a frame at one address can see.
#[derive(Debug, Clone)]
pub struct FrameLayout {
    /// Parameters and locals in scope.
    pub vars: Vec<ScopeVariable>,
    /// How the function's frame base is computed.
    pub frame_base: FrameBase,
    /// The canonical frame address rule at the address.
    pub cfa: Option<CfaRule>,
    /// The image's types.
    pub types: Arc<TypeTable>,
    /// Index of the image in the tracer.
    pub module: usize,
}

/// Most addresses one breakpoint may stand for (a pattern matching many
/// functions, a line inlined in many places).
pub const MAX_SITES: usize = 32;

/// Lines searched past a line without code before giving up.
const LINE_SEARCH: u32 = 200;

impl Tracer {
    /// Where each function of native code matching `pattern` starts its body.
    pub fn function_sites(&mut self, pattern: &Pattern) -> Vec<BreakSite> {
        let mut out = Vec::new();
        for m in 0..self.modules.len() {
            let resolver = self.modules[m].clone();
            // Breakpoints are written into machine code.
            let Some(index) = resolver.native() else {
                continue;
            };
            for t in resolver
                .resolve_pattern(pattern, &self.project_root)
                .targets
            {
                let f = index.functions[t.function].clone();
                let offset = match (f.die, self.debug_info(m)) {
                    (Some(die), Some(di)) => di.body_start(die.unit, &f.ranges, f.entry_offset),
                    _ => f.entry_offset,
                };
                let line = self.debug_info(m).and_then(|di| di.line_at(offset));
                out.push(BreakSite {
                    module: m,
                    offset,
                    function: f.name.clone(),
                    file: line.as_ref().map(|l| l.file.clone()).or(f.file.clone()),
                    line: line.map(|l| l.line),
                });
            }
        }
        out
    }

    /// Statement addresses of `file`:`line`, or of the next line with code
    /// (its number is returned too).
    pub fn line_sites(&mut self, file: &str, line: u32) -> (Vec<BreakSite>, u32) {
        for candidate in line..=line.saturating_add(LINE_SEARCH) {
            let mut out = Vec::new();
            for m in 0..self.modules.len() {
                let module = self.modules[m].clone();
                let Some(index) = module.native() else {
                    continue;
                };
                let Some(di) = self.debug_info(m) else {
                    continue;
                };
                for offset in di.addresses_of_line(file, candidate) {
                    let at = di.line_at(offset);
                    let function = index
                        .function_containing(offset)
                        .map_or_else(|| "?".to_string(), |i| index.functions[i].name.clone());
                    out.push(BreakSite {
                        module: m,
                        offset,
                        function,
                        file: at.as_ref().map(|l| l.file.clone()),
                        line: Some(candidate),
                    });
                }
            }
            if !out.is_empty() {
                return (out, candidate);
            }
        }
        (Vec::new(), line)
    }

    /// The native resolver of the image at `path`, by index (paths compared
    /// as given and resolved: /lib is often a link to /usr/lib).
    pub fn module_index(&self, path: &std::path::Path) -> Option<usize> {
        let native = |m: &Arc<dyn SymbolResolver>| m.native().is_some();
        if let Some(i) = self
            .modules
            .iter()
            .position(|m| native(m) && m.path() == path)
        {
            return Some(i);
        }
        let real = path.canonicalize().ok()?;
        self.modules
            .iter()
            .position(|m| native(m) && m.path().canonicalize().is_ok_and(|p| p == real))
    }

    /// Function and line at image offset `offset` of image `module`.
    pub fn locate(&mut self, module: usize, offset: u64) -> CodeLocation {
        let resolver = &self.modules[module];
        let function_index = resolver
            .native()
            .and_then(|index| index.function_containing(offset));
        let function = function_index
            .and_then(|i| resolver.function(i))
            .map(|f| f.name.to_string());
        let line = self.debug_info(module).and_then(|di| di.line_at(offset));
        CodeLocation {
            module,
            offset,
            function_index,
            function,
            file: line.as_ref().map(|l| l.file.clone()),
            line: line.map(|l| l.line),
        }
    }

    /// What a frame of the function `function_index` at `offset` can see.
    pub fn frame_layout(
        &mut self,
        module: usize,
        function_index: usize,
        offset: u64,
    ) -> Option<FrameLayout> {
        let die = self.modules[module].native()?.functions[function_index].die?;
        let di = self.debug_info(module)?;
        let vars = di.scope_at(die, offset).ok()?;
        let frame_base = di.frame_base(die).unwrap_or(FrameBase::Unknown);
        let cfa = di.cfa_at(offset);
        let types = self.types_snapshot(module)?;
        Some(FrameLayout {
            vars,
            frame_base,
            cfa,
            types,
            module,
        })
    }

    /// Globals an expression mentions (and no local shadows), for the
    /// agent to read at a hit.
    pub fn globals_for(
        &mut self,
        text: &str,
        vars: &mut Vec<VarDesc>,
        bases: &dyn Fn(&std::path::Path) -> Option<u64>,
    ) {
        let known: Vec<String> = vars.iter().map(|v| v.name.clone()).collect();
        let mut wanted = Vec::new();
        for m in 0..self.modules.len() {
            let globals = self.modules[m].native().map_or(&[][..], |i| &i.globals);
            for g in globals {
                if !g.name.contains("::")
                    && !known.contains(&g.name)
                    && mentions(text, &g.name)
                    && !wanted
                        .iter()
                        .any(|w: &(usize, strobe_symbols::GlobalSymbol)| w.1.name == g.name)
                {
                    wanted.push((m, g.clone()));
                }
            }
        }
        for (m, g) in wanted {
            let path = self.modules[m].path().to_path_buf();
            let Some(base) = bases(&path) else { continue };
            let Some(Ok(ty)) = self.debug_info(m).map(|d| d.variable_type(g.die)) else {
                continue;
            };
            let Some(types) = self.types_snapshot(m) else {
                continue;
            };
            vars.push(VarDesc {
                name: g.name.clone(),
                param: false,
                loc: VarLocation::Mem(MemLocation::Abs {
                    off: Hex(base + g.offset),
                }),
                ty: agent_type(&types, ty, 3),
            });
        }
    }

    /// How to unwind from an offset of image `image` (CFA rule and saved `rbp`).
    pub fn unwind_rule(
        &mut self,
        image: &std::path::Path,
        offset: u64,
    ) -> Option<strobe_symbols::Unwind> {
        self.frame_tables
            .entry(image.to_path_buf())
            .or_insert_with(|| strobe_symbols::FrameTable::open(image))
            .unwind_at(offset)
    }

    /// The CFA rule at an image offset.
    pub fn cfa_rule(&mut self, module: usize, offset: u64) -> Option<CfaRule> {
        self.debug_info(module)?.cfa_at(offset)
    }

    /// Statement starts of a function, by address.
    pub fn statements(&mut self, module: usize, function_index: usize) -> Vec<Statement> {
        let Some(f) = self.modules[module]
            .native()
            .map(|i| i.functions[function_index].clone())
        else {
            return Vec::new();
        };
        match (f.die, self.debug_info(module)) {
            (Some(die), Some(di)) => di.statements(die.unit, &f.ranges),
            _ => Vec::new(),
        }
    }

    /// Where the body of the function at `offset` starts, when that function
    /// has line info (a step into a call stops there).
    pub fn body_of_function_at(&mut self, module: usize, offset: u64) -> Option<u64> {
        let index = self.modules[module].native()?;
        let i = index.function_containing(offset)?;
        let f = index.functions[i].clone();
        if f.entry_offset != offset {
            return None;
        }
        let die = f.die?;
        let di = self.debug_info(module)?;
        if di.statements(die.unit, &f.ranges).is_empty() {
            return None;
        }
        Some(di.body_start(die.unit, &f.ranges, f.entry_offset))
    }
}

/// Registers of a stopped thread by DWARF number (0 = rax … 16 = rip).
pub type Registers = HashMap<u16, u64>;

/// Registers by DWARF number from a `{name: "0x…"}` object (as the agent sends them).
pub fn registers_from(names: &Value) -> Registers {
    REGISTER_NAMES
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            Some((
                i as u16,
                crate::trace::parse_hex_address(names[n].as_str()?)?,
            ))
        })
        .collect()
}

/// DWARF x86-64 register names, by number.
pub const REGISTER_NAMES: [&str; 17] = [
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15", "rip",
];

/// The CFA of a frame from its registers.
pub fn cfa_value(rule: Option<CfaRule>, regs: &Registers) -> Option<u64> {
    let r = rule?;
    Some(regs.get(&r.register)?.wrapping_add(r.offset as u64))
}

/// Where a variable is in a stopped frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// In memory here.
    Address(u64),
    /// The value itself (register or constant), little-endian.
    Value(u64),
    /// Not readable, and why.
    Unavailable(String),
}

/// Resolves a variable's place with the frame's registers (`image_base` is
/// the image's load address, for `static` locals).
pub fn resolve_place(
    place: &Place,
    frame_base: FrameBase,
    cfa: Option<u64>,
    regs: &Registers,
    image_base: u64,
) -> Resolved {
    let reg = |r: u16| regs.get(&r).copied();
    let reg_name = |r: u16| {
        REGISTER_NAMES
            .get(r as usize)
            .map_or_else(|| format!("DWARF register {r}"), |n| n.to_string())
    };
    match place {
        Place::FrameBase(off) => {
            let base = match frame_base {
                FrameBase::Cfa => cfa,
                FrameBase::Register(r, o) => reg(r).map(|v| v.wrapping_add(o as u64)),
                FrameBase::Unknown => None,
            };
            match base {
                Some(b) => Resolved::Address(b.wrapping_add(*off as u64)),
                None => Resolved::Unavailable("its frame address is unknown here".into()),
            }
        }
        Place::RegisterOffset(r, off) => match reg(*r) {
            Some(v) => Resolved::Address(v.wrapping_add(*off as u64)),
            None => Resolved::Unavailable(format!("it is relative to {}, not saved", reg_name(*r))),
        },
        Place::Static(off) => Resolved::Address(image_base.wrapping_add(*off)),
        Place::Register(r) => match reg(*r) {
            Some(v) => Resolved::Value(v),
            None => Resolved::Unavailable(format!(
                "it lives in {} here, which is not readable",
                reg_name(*r)
            )),
        },
        Place::Const(c) => Resolved::Value(*c as u64),
        Place::OptimizedOut => Resolved::Unavailable("optimized out at this point".into()),
        Place::Unsupported(why) => Resolved::Unavailable(format!("stored as {why}")),
    }
}

/// How the agent reads a variable at a breakpoint (see agent/src/breakpoints.ts):
/// its place relative to the breakpoint's CFA or a register.
pub fn agent_location(place: &Place, frame_base: FrameBase, image_base: u64) -> VarLocation {
    let unavailable = |why: &str| VarLocation::Unavailable { why: why.into() };
    match place {
        Place::FrameBase(off) => match frame_base {
            FrameBase::Cfa => VarLocation::Mem(MemLocation::Cfa { off: *off }),
            FrameBase::Register(r, o) => VarLocation::Mem(MemLocation::Reg {
                reg: r,
                off: o + off,
            }),
            FrameBase::Unknown => unavailable("in a frame this reader cannot locate"),
        },
        Place::RegisterOffset(r, off) => VarLocation::Mem(MemLocation::Reg { reg: *r, off: *off }),
        Place::Static(off) => VarLocation::Mem(MemLocation::Abs {
            off: Hex(image_base.wrapping_add(*off)),
        }),
        Place::Register(r) if (*r as usize) < REGISTER_NAMES.len() => VarLocation::Reg { reg: *r },
        Place::Register(_) => unavailable("in a vector register"),
        Place::Const(c) => VarLocation::Const { v: *c },
        Place::OptimizedOut => unavailable("optimized out here"),
        Place::Unsupported(why) => unavailable(&format!("stored as {why}")),
    }
}

/// A type as the agent's condition reader understands it (depth-limited).
pub fn agent_type(types: &TypeTable, ty: TypeId, depth: u32) -> TypeDesc {
    match types.get(types.strip(ty)) {
        Type::Int { size, signed, .. } => TypeDesc::Int {
            size: *size,
            signed: *signed,
        },
        Type::Float { size, .. } => TypeDesc::Float { size: *size },
        Type::Bool { size } => TypeDesc::Bool { size: *size },
        Type::Enum {
            size,
            signed,
            variants,
            ..
        } => TypeDesc::Enum {
            size: *size,
            signed: *signed,
            names: OrderedMap(
                variants
                    .iter()
                    .map(|(v, n)| (v.to_string(), n.clone()))
                    .collect(),
            ),
        },
        Type::Pointer { target, .. } => {
            let t = types.get(types.strip(*target));
            if matches!(
                t,
                Type::Int {
                    size: 1,
                    is_char: true,
                    ..
                }
            ) {
                TypeDesc::Ptr {
                    str: true,
                    to: None,
                }
            } else if depth > 0 && matches!(t, Type::Struct { .. }) {
                TypeDesc::Ptr {
                    str: false,
                    to: Some(Box::new(agent_type(types, *target, depth - 1))),
                }
            } else {
                TypeDesc::Ptr {
                    str: false,
                    to: None,
                }
            }
        }
        Type::Struct { members, .. } if depth > 0 => TypeDesc::Struct {
            fields: members
                .iter()
                .filter(|m| m.bits.is_none())
                .map(|m| (m.name.clone(), m.offset, agent_type(types, m.ty, depth - 1)))
                .collect(),
        },
        _ => TypeDesc::Opaque,
    }
}

/// True when `text` uses `name` as an identifier (so only the variables an
/// expression mentions are read at each hit).
pub fn mentions(text: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// The addresses a step from `offset` may stop at within its function:
/// every statement except those of the run of same-line statements the
/// thread is in now (so a loop's header counts as a new line when it comes
/// round again). Also returns that run's address range, where a step into
/// looks for calls.
pub fn step_targets(statements: &[Statement], offset: u64) -> (Vec<u64>, (u64, u64)) {
    let Some(cur) = statements.iter().rposition(|s| s.offset <= offset) else {
        return (
            statements.iter().map(|s| s.offset).collect(),
            (offset, offset),
        );
    };
    let line = (&statements[cur].file, statements[cur].line);
    let mut first = cur;
    while first > 0 && (&statements[first - 1].file, statements[first - 1].line) == line {
        first -= 1;
    }
    let mut last = cur;
    while last + 1 < statements.len()
        && (&statements[last + 1].file, statements[last + 1].line) == line
    {
        last += 1;
    }
    let end = statements.get(last + 1).map_or(u64::MAX, |s| s.offset);
    let targets = statements
        .iter()
        .enumerate()
        .filter(|(i, _)| *i < first || *i > last)
        .map(|(_, s)| s.offset)
        .collect();
    (targets, (offset, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(offset: u64, line: u32) -> Statement {
        Statement {
            offset,
            line,
            file: "a.c".into(),
        }
    }

    #[test]
    fn a_step_skips_the_current_line_run_only() {
        let s = [
            st(0x10, 5),
            st(0x18, 6),
            st(0x20, 6),
            st(0x30, 7),
            st(0x40, 5),
        ];
        let (targets, range) = step_targets(&s, 0x1c);
        assert_eq!(targets, vec![0x10, 0x30, 0x40]);
        assert_eq!(range, (0x1c, 0x30));
    }

    #[test]
    fn identifiers_are_matched_whole() {
        assert!(mentions("n == 1 && depth > 2", "n"));
        assert!(!mentions("count > 1", "n"));
        assert!(mentions("{args[0]} {n}", "args"));
        assert!(!mentions("my_n2 + 1", "n"));
    }

    #[test]
    fn places_resolve_against_registers() {
        let regs: Registers = [(6u16, 0x1000u64), (7, 0x0f00)].into_iter().collect();
        assert_eq!(
            resolve_place(
                &Place::FrameBase(-20),
                FrameBase::Cfa,
                Some(0x1010),
                &regs,
                0
            ),
            Resolved::Address(0x1010 - 20)
        );
        assert_eq!(
            resolve_place(
                &Place::FrameBase(-20),
                FrameBase::Register(6, 0),
                None,
                &regs,
                0
            ),
            Resolved::Address(0x1000 - 20)
        );
        assert_eq!(
            resolve_place(&Place::Register(7), FrameBase::Cfa, None, &regs, 0),
            Resolved::Value(0x0f00)
        );
        assert!(matches!(
            resolve_place(&Place::Register(3), FrameBase::Cfa, None, &regs, 0),
            Resolved::Unavailable(_)
        ));
    }
}
