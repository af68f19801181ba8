//! Typed arguments, return values and watches of traced calls.
//!
//! The agent's hook knows nothing about types. For each hooked function the
//! daemon compiles the DWARF signature into a *capture plan*: a short list of
//! memory reads ("follow the pointer in rdi, copy 40 bytes; follow the
//! pointer at offset 0 of that block, read a C string"), which the agent's
//! native code executes per call, copying the argument registers and the
//! blocks into the trace record. All interpretation (System V x86-64 ABI
//! classification, integer widths, enums, bitfields, strings, cycles) happens
//! here, in the daemon, when records are decoded.
//!
//! Wire format of a plan (little-endian), read by agent/src/tracers/native.ts:
//! `u16 enter nodes, u16 exit nodes, u16 stack bytes, u16 plan id` then
//! 24-byte nodes `u8 src, u8 flags, u16 parent, u32 size, u64 arg, i64 addend`.
//! Payload of an enter record: `u32 plan id, u32 length, 6 × u64 integer
//! argument registers, 8 × u64 low halves of xmm0–7, stack bytes (from rsp+8),
//! blocks`; of an exit record: `u32 plan id, u32 length, rax, rdx, xmm0,
//! xmm1, blocks`. A block is `u64 address, u32 length, u32 status` + data
//! padded to 8 bytes, one per node in plan order.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use strobe_symbols::{EntryLoc, Signature, Type, TypeId, TypeTable};

/// Node source: an integer argument register (arg = 0..5 for rdi..r9).
pub const SRC_GP: u8 = 0;
/// Node source: the pointer stored at rsp+8+arg at entry.
pub const SRC_STACK: u8 = 1;
/// Node source: the pointer stored at offset `arg` of the parent's block.
pub const SRC_FIELD: u8 = 2;
/// Node source: the return register (arg 0 = rax, 1 = rdx).
pub const SRC_RET: u8 = 3;
/// Node source: an absolute address (`arg`); the block is read there.
pub const SRC_ABS: u8 = 4;
/// Read a NUL-terminated string of at most `size` bytes.
pub const FLAG_CSTRING: u8 = 1;
/// The byte count is the u64 right after the pointer (Rust `&str`), capped at `size`.
pub const FLAG_LEN_NEXT: u8 = 2;
/// No parent.
pub const NO_PARENT: u16 = 0xffff;

/// Strings are cut at this many bytes.
pub const STRING_MAX: u32 = 1024;
/// Arrays show at most this many elements.
pub const ARRAY_MAX: u64 = 100;
/// Largest block one node copies.
pub const BLOCK_MAX: u64 = 4096;
/// Stack bytes captured for arguments passed in memory.
pub const STACK_MAX: u64 = 512;
/// Nodes per function for arguments (watches add theirs on top).
pub const ARG_NODES_MAX: usize = 64;
/// Bytes of the fixed enter part: 6 GP + 8 SSE registers.
const ENTER_REGS: usize = 14 * 8;
/// Bytes of the fixed exit part: rax, rdx, xmm0, xmm1.
const EXIT_REGS: usize = 4 * 8;

/// Block status written by the agent.
const ST_OK: u32 = 0;
const ST_NULL: u32 = 1;
const ST_UNREADABLE: u32 = 2;
const ST_NO_PARENT: u32 = 3;
const ST_CUT: u32 = 5;

/// One memory read of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// Where the address comes from (`SRC_*`).
    pub src: u8,
    /// `FLAG_*`.
    pub flags: u8,
    /// Parent node for `SRC_FIELD`.
    pub parent: u16,
    /// Bytes to copy (the cap for strings).
    pub size: u32,
    /// Register index, stack offset, field offset or absolute address.
    pub arg: u64,
    /// Added to the address before reading (`a->b.c` reads at `a + offset`).
    pub addend: i64,
}

/// Where the bytes of a value live; decides which node dereferences each
/// pointer inside it, identically when planning and when decoding.
#[derive(Debug, Clone, Copy)]
enum Origin {
    /// Passed in registers: per eightbyte, the GP register it came in.
    Regs {
        gp: [Option<u8>; 2],
        ret: bool,
        base: u64,
    },
    /// In the captured stack bytes at this offset.
    Stack(u64),
    /// In a node's block at this offset.
    Block(u16, u64),
    /// Nowhere a node can follow (e.g. an SSE register).
    Nowhere,
    /// Read from the target's memory at this address (debug_memory,
    /// watches): nothing to follow, but the address is known.
    Mem(u64),
}

impl Origin {
    fn shift(self, off: u64) -> Origin {
        match self {
            Origin::Regs { gp, ret, base } => Origin::Regs {
                gp,
                ret,
                base: base + off,
            },
            Origin::Stack(b) => Origin::Stack(b + off),
            Origin::Block(n, b) => Origin::Block(n, b + off),
            Origin::Nowhere => Origin::Nowhere,
            Origin::Mem(a) => Origin::Mem(a + off),
        }
    }

    /// The (parent, src, arg) key of a node reading through a pointer stored here.
    fn key(self) -> Option<(u16, u8, u64)> {
        match self {
            Origin::Regs { gp, ret, base } => {
                if base % 8 != 0 || base >= 16 {
                    return None;
                }
                let r = gp[(base / 8) as usize]?;
                Some(if ret {
                    (NO_PARENT, SRC_RET, r as u64)
                } else {
                    (NO_PARENT, SRC_GP, r as u64)
                })
            }
            Origin::Stack(b) => Some((NO_PARENT, SRC_STACK, b)),
            Origin::Block(n, b) => Some((n, SRC_FIELD, b)),
            Origin::Nowhere | Origin::Mem(_) => None,
        }
    }
}

/// Where a render is inside the value it was asked for: the pointers it
/// followed (to mark cycles) and the path of names to here
/// (`store.spare`), which a value cut at the depth limit quotes so that the
/// agent can ask for just the part it needs.
struct Trail {
    addrs: Vec<u64>,
    names: String,
    /// The next struct was reached through a pointer (`->`).
    arrow: bool,
    /// The depth the whole value is rendered to.
    depth: u32,
}

impl Trail {
    fn new(name: &str, depth: u32) -> Trail {
        Trail {
            addrs: Vec::new(),
            names: name.to_string(),
            arrow: false,
            depth,
        }
    }

    fn at(mut self, addr: u64) -> Trail {
        self.addrs.push(addr);
        self
    }
}

/// Where a parameter or the return value is, per the System V x86-64 ABI.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
enum Loc {
    /// In registers: per eightbyte, (is SSE, register index).
    Regs([Option<(bool, u8)>; 2]),
    /// In the captured stack bytes at this offset.
    Stack(u64),
    /// Passed by invisible reference (pointer in this GP register).
    ByRef(u8),
    /// Returned in memory: rax points at it on exit.
    RetMemory,
    /// Nothing to show (empty struct, void) or not captured.
    None,
    /// A constant the compiler propagated into the function (DWARF).
    Const(i64),
    /// Not available at entry (DWARF: removed by the optimizer).
    OptimizedOut,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Integer,
    Sse,
}

/// How a watch's value is typed.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchType {
    /// A DWARF type, in the table of the image that declares the variable
    /// (the image's index in the session's tracer, for storing the plan).
    Typed(TypeId, std::sync::Arc<TypeTable>, u32),
    /// A hint for raw addresses: i8…u64, f32, f64, pointer.
    Hint(String),
    /// A JavaScript expression the agent evaluates (its id in the agent).
    Expr(u16),
}

/// A watch, resolved to an address chain.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchSpec {
    /// The label values are stored under.
    pub label: String,
    /// Chain of reads: the first absolute, each later one through the
    /// pointer the previous read (at offset 0) returned, plus `addend`.
    pub chain: Vec<(u64, i64)>,
    /// Size of the final read.
    pub size: u64,
    /// Type of the final value.
    pub ty: WatchType,
    /// The final value is a `char *`: the string it points to is read too.
    pub string: bool,
    /// For a slice path (`a[2:5]`): the elements asked for; the final read
    /// holds at most [`ARRAY_MAX`] of them, from the start.
    pub slice: Option<std::ops::Range<u64>>,
}

/// The compiled plan of one function.
#[derive(Debug, Clone)]
pub struct FunctionPlan {
    /// Identifies this plan in records (plans change when watches do).
    pub id: u16,
    params: Vec<(String, TypeId, Loc)>,
    ret: Option<(TypeId, Loc)>,
    enter: Vec<Node>,
    exit: Vec<Node>,
    enter_keys: HashMap<(u16, u8, u64), u16>,
    exit_keys: HashMap<(u16, u8, u64), u16>,
    /// (label, final node index in enter, in exit, type).
    watches: Vec<(String, u16, u16, WatchType)>,
    /// Expression watches read in this function: (label, agent id).
    exprs: Vec<(String, u16)>,
    stack_bytes: u64,
    depth: u32,
    /// Pointers left unfollowed because the node budget ran out.
    pub truncated: bool,
}

/// The argument register a DWARF x86-64 register number names, as
/// (is SSE, index): rdi, rsi, rdx, rcx, r8, r9 and xmm0-7 are captured.
fn dwarf_arg_register(r: u16) -> Option<(bool, u8)> {
    match r {
        5 => Some((false, 0)),
        4 => Some((false, 1)),
        1 => Some((false, 2)),
        2 => Some((false, 3)),
        8 => Some((false, 4)),
        9 => Some((false, 5)),
        17..=24 => Some((true, (r - 17) as u8)),
        _ => None,
    }
}

/// A [`FunctionPlan`] as stored with its session: watch types name their
/// image by index instead of holding its type table.
#[derive(Debug, Serialize, Deserialize)]
pub struct StoredPlan {
    id: u16,
    params: Vec<(String, TypeId, Loc)>,
    ret: Option<(TypeId, Loc)>,
    enter: Vec<Node>,
    exit: Vec<Node>,
    enter_keys: Vec<((u16, u8, u64), u16)>,
    exit_keys: Vec<((u16, u8, u64), u16)>,
    watches: Vec<(String, u16, u16, StoredWatchType)>,
    #[serde(default)]
    exprs: Vec<(String, u16)>,
    stack_bytes: u64,
    depth: u32,
    truncated: bool,
}

#[derive(Debug, Serialize, Deserialize)]
enum StoredWatchType {
    Typed(TypeId, u32),
    Hint(String),
}

impl FunctionPlan {
    /// The plan in its stored form.
    pub fn to_stored(&self) -> StoredPlan {
        StoredPlan {
            id: self.id,
            params: self.params.clone(),
            ret: self.ret,
            enter: self.enter.clone(),
            exit: self.exit.clone(),
            enter_keys: self.enter_keys.iter().map(|(k, v)| (*k, *v)).collect(),
            exit_keys: self.exit_keys.iter().map(|(k, v)| (*k, *v)).collect(),
            watches: self
                .watches
                .iter()
                .map(|(label, e, x, ty)| {
                    let ty = match ty {
                        WatchType::Typed(t, _, module) => StoredWatchType::Typed(*t, *module),
                        WatchType::Hint(h) => StoredWatchType::Hint(h.clone()),
                        WatchType::Expr(_) => StoredWatchType::Hint("expr".into()),
                    };
                    (label.clone(), *e, *x, ty)
                })
                .collect(),
            exprs: self.exprs.clone(),
            stack_bytes: self.stack_bytes,
            depth: self.depth,
            truncated: self.truncated,
        }
    }

    /// The return value of an exit payload as the query engine compares it
    /// (see `strobe_core::event::FLAG_VALUE_TYPED`): integers extended to 64
    /// bits by their signedness, bools 0/1, floats as the bits of the f64
    /// they render as, pointers raw, and the raw `rax` for functions without
    /// a return type. `None` for anything else (structs, enums, 128-bit
    /// values), which chunk indexes then cannot rule out.
    pub fn return_key(&self, types: &TypeTable, payload: &[u8]) -> Option<u64> {
        let regs = payload.get(8..8 + EXIT_REGS)?;
        let reg =
            |i: usize| u64::from_le_bytes(regs[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let Some((ty, loc)) = self.ret else {
            return Some(reg(0));
        };
        let Loc::Regs([Some((sse, 0)), None]) = loc else {
            return None;
        };
        let raw = if sse { reg(2) } else { reg(0) };
        match types.get(types.strip(ty)) {
            Type::Int { size, signed, .. } if *size <= 8 => {
                let size = *size as usize;
                let v = le(&raw.to_le_bytes(), size);
                Some(if *signed {
                    sign_extend(v, size) as u64
                } else {
                    v
                })
            }
            Type::Bool { size } => Some(u64::from(le(&raw.to_le_bytes(), *size as usize) != 0)),
            Type::Float { size: 4, .. } => Some((f32::from_bits(raw as u32) as f64).to_bits()),
            Type::Float { size: 8, .. } => Some(raw),
            // A `char *` renders as its string, which no stored number
            // stands for.
            Type::Pointer { target, .. }
                if matches!(
                    types.get(types.strip(*target)),
                    Type::Int {
                        size: 1,
                        is_char: true,
                        ..
                    }
                ) =>
            {
                None
            }
            Type::Pointer { .. } => Some(raw),
            _ => None,
        }
    }

    /// Images whose type tables this plan's watches render with.
    pub fn watch_modules(&self) -> Vec<u32> {
        self.watches
            .iter()
            .filter_map(|(_, _, _, ty)| match ty {
                WatchType::Typed(_, _, m) => Some(*m),
                WatchType::Hint(_) | WatchType::Expr(_) => None,
            })
            .collect()
    }

    /// Rebuilds a stored plan; `table` gives an image's type table by index
    /// (`None` when the store lacks it: the plan cannot be used).
    pub fn from_stored(
        s: StoredPlan,
        table: &dyn Fn(u32) -> Option<std::sync::Arc<TypeTable>>,
    ) -> Option<FunctionPlan> {
        let mut watches = Vec::with_capacity(s.watches.len());
        for (label, e, x, ty) in s.watches {
            let ty = match ty {
                StoredWatchType::Typed(t, module) => WatchType::Typed(t, table(module)?, module),
                StoredWatchType::Hint(h) => WatchType::Hint(h),
            };
            watches.push((label, e, x, ty));
        }
        Some(FunctionPlan {
            id: s.id,
            params: s.params,
            ret: s.ret,
            enter: s.enter,
            exit: s.exit,
            enter_keys: s.enter_keys.into_iter().collect(),
            exit_keys: s.exit_keys.into_iter().collect(),
            watches,
            exprs: s.exprs,
            stack_bytes: s.stack_bytes,
            depth: s.depth,
            truncated: s.truncated,
        })
    }
}

struct Builder<'a> {
    types: &'a TypeTable,
    nodes: Vec<Node>,
    keys: HashMap<(u16, u8, u64), u16>,
    budget: usize,
    truncated: bool,
}

impl Builder<'_> {
    fn add(&mut self, key: (u16, u8, u64), flags: u8, size: u64) -> Option<u16> {
        if let Some(n) = self.keys.get(&key) {
            return Some(*n);
        }
        if self.nodes.len() >= self.budget {
            self.truncated = true;
            return None;
        }
        let idx = self.nodes.len() as u16;
        self.nodes.push(Node {
            src: key.1,
            flags,
            parent: key.0,
            size: size.min(BLOCK_MAX) as u32,
            arg: key.2,
            addend: 0,
        });
        self.keys.insert(key, idx);
        Some(idx)
    }

    /// Plans the reads a value of type `ty` stored at `origin` needs to be
    /// shown to `depth` levels (struct nesting and pointer targets count).
    fn value(&mut self, ty: TypeId, origin: Origin, depth: u32) {
        let t = self.types;
        let ty = t.strip(ty);
        match t.get(ty) {
            Type::Pointer { target, .. } => {
                let Some(key) = origin.key() else { return };
                let target = t.strip(*target);
                match t.get(target) {
                    Type::Int {
                        size: 1,
                        is_char: true,
                        ..
                    } => {
                        self.add(key, FLAG_CSTRING, STRING_MAX as u64);
                    }
                    _ if depth == 0 => {}
                    other => {
                        let Some(size) = t.size_of(target).filter(|s| *s > 0) else {
                            return;
                        };
                        if matches!(other, Type::Function | Type::Void) {
                            return;
                        }
                        if let Some(n) = self.add(key, 0, size) {
                            self.value(target, Origin::Block(n, 0), pointee_depth(other, depth));
                        }
                    }
                }
            }
            Type::Struct { name, members, .. } => {
                if depth == 0 {
                    return;
                }
                if let Some((ptr_off, _)) = rust_str_fields(name, members) {
                    if let Some(key) = origin.shift(ptr_off).key() {
                        self.add(key, FLAG_LEN_NEXT, STRING_MAX as u64);
                    }
                    return;
                }
                for m in members {
                    if m.bits.is_none() {
                        self.value(m.ty, origin.shift(m.offset), depth - 1);
                    }
                }
            }
            Type::Array {
                elem,
                count: Some(n),
            } => {
                if depth == 0 || !has_pointers(t, *elem, 4) {
                    return;
                }
                let Some(esize) = t.size_of(*elem).filter(|s| *s > 0) else {
                    return;
                };
                for i in 0..(*n).min(ARRAY_MAX) {
                    self.value(*elem, origin.shift(i * esize), depth - 1);
                }
            }
            _ => {}
        }
    }
}

/// Depth left for a pointer's target: a struct or array behind a pointer is
/// one level (its own), other targets cost one level for the hop.
fn pointee_depth(target: &Type, depth: u32) -> u32 {
    match target {
        Type::Struct { .. } | Type::Array { .. } => depth,
        _ => depth.saturating_sub(1),
    }
}

fn has_pointers(t: &TypeTable, ty: TypeId, depth: u32) -> bool {
    if depth == 0 {
        return false;
    }
    match t.get(t.strip(ty)) {
        Type::Pointer { .. } => true,
        Type::Struct { members, .. } => members.iter().any(|m| has_pointers(t, m.ty, depth - 1)),
        Type::Array { elem, .. } => has_pointers(t, *elem, depth - 1),
        _ => false,
    }
}

/// Rust `&str`: (offset of data_ptr, offset of length).
fn rust_str_fields(name: &str, members: &[strobe_symbols::Member]) -> Option<(u64, u64)> {
    if name != "&str" && name != "&mut str" {
        return None;
    }
    let p = members.iter().find(|m| m.name == "data_ptr")?;
    let l = members.iter().find(|m| m.name == "length")?;
    (l.offset == p.offset + 8).then_some((p.offset, l.offset))
}

/// Flattens scalar leaves (offset, size, is float) of a type, for ABI classification.
fn leaves(
    t: &TypeTable,
    ty: TypeId,
    base: u64,
    out: &mut Vec<(u64, u64, bool)>,
    depth: u32,
) -> bool {
    if depth > 16 {
        return false;
    }
    let ty = t.strip(ty);
    match t.get(ty) {
        Type::Struct { members, .. } => {
            for m in members {
                if !leaves(t, m.ty, base + m.offset, out, depth + 1) {
                    return false;
                }
            }
            true
        }
        Type::Array { elem, count } => {
            let Some(es) = t.size_of(*elem).filter(|s| *s > 0) else {
                return true;
            };
            for i in 0..count.unwrap_or(0).min(16) {
                if !leaves(t, *elem, base + i * es, out, depth + 1) {
                    return false;
                }
            }
            true
        }
        Type::Float { size, .. } if *size > 8 => false,
        Type::Float { size, .. } => {
            out.push((base, *size as u64, true));
            true
        }
        Type::Opaque { .. } | Type::Void | Type::Function | Type::Typedef { .. } => false,
        _ => {
            let size = t.size_of(ty).unwrap_or(8);
            out.push((base, size, false));
            true
        }
    }
}

/// System V classification: `None` = passed in memory.
fn classify(t: &TypeTable, ty: TypeId) -> Option<Vec<Class>> {
    let ty = t.strip(ty);
    let size = t.size_of(ty)?;
    if size == 0 {
        return Some(Vec::new());
    }
    if size > 16 {
        return None;
    }
    if let Type::Int { size: 16, .. } = t.get(ty) {
        return Some(vec![Class::Integer, Class::Integer]);
    }
    let mut ls = Vec::new();
    if !leaves(t, ty, 0, &mut ls, 0) {
        return None;
    }
    let n = size.div_ceil(8) as usize;
    let mut classes = vec![None; n];
    for (off, sz, float) in ls {
        if sz > 0 && off % sz != 0 {
            return None; // unaligned member: memory
        }
        let i = (off / 8) as usize;
        if i >= n {
            continue;
        }
        let c = if float { Class::Sse } else { Class::Integer };
        classes[i] = Some(match (classes[i], c) {
            (Some(Class::Integer), _) | (_, Class::Integer) => Class::Integer,
            _ => Class::Sse,
        });
    }
    Some(
        classes
            .into_iter()
            .map(|c| c.unwrap_or(Class::Sse))
            .collect(),
    )
}

fn by_reference(t: &TypeTable, ty: TypeId) -> bool {
    matches!(
        t.get(t.strip(ty)),
        Type::Struct {
            by_reference: true,
            ..
        }
    )
}

impl FunctionPlan {
    /// Compiles a signature (and the watches that apply) into a plan.
    pub fn build(
        id: u16,
        sig: &Signature,
        types: &TypeTable,
        depth: u32,
        watches: &[WatchSpec],
    ) -> FunctionPlan {
        let depth = depth.clamp(1, 10);
        // Return value first: one returned in memory takes rdi.
        // A `nocall` function may not return what its type says.
        let ret_loc = sig.ret.filter(|_| !sig.nocall).map(|r| {
            if by_reference(types, r) {
                return (r, Loc::RetMemory);
            }
            let loc = match classify(types, r) {
                None => Loc::RetMemory,
                Some(cs) if cs.is_empty() => Loc::None,
                Some(cs) => {
                    let (mut gi, mut si) = (0u8, 0u8);
                    let mut regs = [None; 2];
                    for (i, c) in cs.iter().enumerate().take(2) {
                        regs[i] = Some(match c {
                            Class::Integer => {
                                gi += 1;
                                (false, gi - 1)
                            }
                            Class::Sse => {
                                si += 1;
                                (true, si - 1)
                            }
                        });
                    }
                    Loc::Regs(regs)
                }
            };
            (r, loc)
        });
        let (mut gp, mut sse, mut stack) = (0u8, 0u8, 0u64);
        if matches!(ret_loc, Some((_, Loc::RetMemory))) {
            gp = 1;
        }
        let mut params = Vec::new();
        for (name, ty) in &sig.params {
            let ty = *ty;
            let loc = if by_reference(types, ty) {
                if gp < 6 {
                    gp += 1;
                    Loc::ByRef(gp - 1)
                } else {
                    stack += 8;
                    Loc::None
                }
            } else {
                match classify(types, ty) {
                    Some(cs) if cs.is_empty() => Loc::None,
                    Some(cs) => {
                        let need_gp = cs.iter().filter(|c| **c == Class::Integer).count() as u8;
                        let need_sse = cs.len() as u8 - need_gp;
                        if gp + need_gp <= 6 && sse + need_sse <= 8 {
                            let mut regs = [None; 2];
                            for (i, c) in cs.iter().enumerate().take(2) {
                                regs[i] = Some(match c {
                                    Class::Integer => {
                                        gp += 1;
                                        (false, gp - 1)
                                    }
                                    Class::Sse => {
                                        sse += 1;
                                        (true, sse - 1)
                                    }
                                });
                            }
                            Loc::Regs(regs)
                        } else {
                            let at = stack;
                            stack += (cs.len() as u64) * 8;
                            Loc::Stack(at)
                        }
                    }
                    None => match types.size_of(ty) {
                        Some(size) => {
                            let at = stack;
                            stack += size.div_ceil(8) * 8;
                            Loc::Stack(at)
                        }
                        None => Loc::None,
                    },
                }
            };
            // Optimized code: the DWARF location at entry wins over the
            // calling convention (arguments the compiler dropped or moved).
            let dwarf = sig.entry_locs.get(params.len()).copied();
            let loc = match dwarf {
                Some(EntryLoc::Register(r)) if types.size_of(ty).is_some_and(|s| s <= 8) => {
                    match dwarf_arg_register(r) {
                        Some(reg) => Loc::Regs([Some(reg), None]),
                        None => Loc::OptimizedOut,
                    }
                }
                Some(EntryLoc::Const(v)) => Loc::Const(v),
                Some(EntryLoc::OptimizedOut) => Loc::OptimizedOut,
                _ if sig.nocall => Loc::OptimizedOut,
                _ => loc,
            };
            params.push((name.clone(), ty, loc));
        }
        let stack_bytes = stack.min(STACK_MAX);

        let mut b = Builder {
            types,
            nodes: Vec::new(),
            keys: HashMap::new(),
            budget: ARG_NODES_MAX,
            truncated: false,
        };
        // The node budget is shared by the parameters, so it is spent level
        // by level: every parameter's shallow reads before anyone's deeper
        // ones. Walked one parameter at a time, a pointer into a large
        // struct graph (SQLite's `sqlite3 *db`) spent it all and the string
        // after it (`zSql`) showed as an address. Nodes already planned
        // are found again by key, so each level extends the last.
        for level in 1..=depth {
            for (_, ty, loc) in &params {
                match *loc {
                    Loc::Regs(regs) => b.value(*ty, regs_origin(regs, false), level),
                    Loc::Stack(off) if off + types.size_of(*ty).unwrap_or(0) <= stack_bytes => {
                        b.value(*ty, Origin::Stack(off), level)
                    }
                    Loc::ByRef(r) => {
                        let size = types.size_of(*ty).unwrap_or(0);
                        if let Some(n) = b.add((NO_PARENT, SRC_GP, r as u64), 0, size) {
                            b.value(*ty, Origin::Block(n, 0), level);
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut enter = std::mem::take(&mut b.nodes);
        let enter_keys = std::mem::take(&mut b.keys);
        let mut truncated = b.truncated;

        let mut x = Builder {
            types,
            nodes: Vec::new(),
            keys: HashMap::new(),
            budget: ARG_NODES_MAX,
            truncated: false,
        };
        if let Some((ty, loc)) = ret_loc {
            match loc {
                Loc::Regs(regs) => x.value(ty, regs_origin(regs, true), depth),
                Loc::RetMemory => {
                    let size = types.size_of(ty).unwrap_or(0);
                    if let Some(n) = x.add((NO_PARENT, SRC_RET, 0), 0, size) {
                        x.value(ty, Origin::Block(n, 0), depth);
                    }
                }
                _ => {}
            }
        }
        let mut exit = x.nodes;
        let exit_keys = x.keys;
        truncated |= x.truncated;

        let mut plan_watches = Vec::new();
        let mut exprs = Vec::new();
        for w in watches {
            if let WatchType::Expr(id) = w.ty {
                exprs.push((w.label.clone(), id));
                continue;
            }
            let e = push_chain(&mut enter, w);
            let x = push_chain(&mut exit, w);
            plan_watches.push((w.label.clone(), e, x, w.ty.clone()));
        }
        FunctionPlan {
            id,
            params,
            ret: ret_loc,
            enter,
            exit,
            enter_keys,
            exit_keys,
            watches: plan_watches,
            exprs,
            stack_bytes,
            depth,
            truncated,
        }
    }

    /// The plan as the agent reads it.
    /// Header: u16 enter nodes, exit nodes, stack bytes, plan id, expression
    /// watches, 3 × u16 padding; then the nodes (24 bytes each); then the
    /// expression watch ids (u16 each).
    pub fn wire(&self) -> Vec<u8> {
        let mut w = Vec::with_capacity(16 + 24 * (self.enter.len() + self.exit.len()));
        w.extend_from_slice(&(self.enter.len() as u16).to_le_bytes());
        w.extend_from_slice(&(self.exit.len() as u16).to_le_bytes());
        w.extend_from_slice(&(self.stack_bytes as u16).to_le_bytes());
        w.extend_from_slice(&self.id.to_le_bytes());
        w.extend_from_slice(&(self.exprs.len() as u16).to_le_bytes());
        w.extend_from_slice(&[0; 6]);
        for n in self.enter.iter().chain(&self.exit) {
            w.push(n.src);
            w.push(n.flags);
            w.extend_from_slice(&n.parent.to_le_bytes());
            w.extend_from_slice(&n.size.to_le_bytes());
            w.extend_from_slice(&n.arg.to_le_bytes());
            w.extend_from_slice(&n.addend.to_le_bytes());
        }
        for (_, id) in &self.exprs {
            w.extend_from_slice(&id.to_le_bytes());
        }
        w
    }

    /// Decodes an enter payload into `{"arguments": [...], "watchValues": {...}}`.
    pub fn decode_enter(&self, types: &TypeTable, payload: &[u8]) -> Value {
        let (body, exprs) = split_exprs(payload.get(8..).unwrap_or(&[]));
        let regs = body.get(..ENTER_REGS).unwrap_or(&[]);
        let stack_end = ENTER_REGS + self.stack_bytes.div_ceil(8) as usize * 8;
        let stack = body
            .get(ENTER_REGS..stack_end.min(body.len()))
            .unwrap_or(&[]);
        let blocks = parse_blocks(body.get(stack_end..).unwrap_or(&[]), self.enter.len());
        let ctx = Ctx {
            types,
            nodes: &self.enter,
            blocks: &blocks,
            keys: &self.enter_keys,
        };
        let reg = |sse: bool, i: u8| -> [u8; 8] {
            let o = if sse {
                48 + i as usize * 8
            } else {
                i as usize * 8
            };
            regs.get(o..o + 8)
                .and_then(|s| s.try_into().ok())
                .unwrap_or([0; 8])
        };
        let mut args = Vec::new();
        for (name, ty, loc) in &self.params {
            let value = match *loc {
                Loc::Regs(rs) => {
                    let mut bytes = Vec::with_capacity(16);
                    for r in rs.iter().flatten() {
                        bytes.extend_from_slice(&reg(r.0, r.1));
                    }
                    ctx.render(
                        *ty,
                        &bytes,
                        regs_origin(rs, false),
                        self.depth,
                        &mut Trail::new(name, self.depth),
                    )
                }
                Loc::Stack(off) => {
                    let size = types.size_of(*ty).unwrap_or(0) as usize;
                    match stack.get(off as usize..off as usize + size) {
                        Some(bytes) => {
                            let trail = &mut Trail::new(name, self.depth);
                            ctx.render(*ty, bytes, Origin::Stack(off), self.depth, trail)
                        }
                        None => {
                            json!("<not captured: passed on the stack beyond the captured bytes>")
                        }
                    }
                }
                Loc::ByRef(r) => ctx.by_node(*ty, (NO_PARENT, SRC_GP, r as u64), self.depth, name),
                Loc::Const(v) => {
                    let size = types.size_of(*ty).unwrap_or(8).min(8) as usize;
                    ctx.render(
                        *ty,
                        &v.to_le_bytes()[..size],
                        Origin::Nowhere,
                        self.depth,
                        &mut Trail::new(name, self.depth),
                    )
                }
                Loc::OptimizedOut => json!("<optimized out>"),
                Loc::RetMemory | Loc::None => Value::Null,
            };
            args.push(json!({"name": name, "type": types.name(*ty), "value": value}));
        }
        let mut out = Map::new();
        out.insert("arguments".into(), Value::Array(args));
        if let Some(w) = self.with_exprs(self.watch_values(&blocks, true), exprs) {
            out.insert("watchValues".into(), w);
        }
        Value::Object(out)
    }

    /// Decodes an exit payload into `{"returnValue": …, "watchValues": {...}}`.
    pub fn decode_exit(&self, types: &TypeTable, payload: &[u8]) -> Value {
        let (body, exprs) = split_exprs(payload.get(8..).unwrap_or(&[]));
        let regs = body.get(..EXIT_REGS).unwrap_or(&[]);
        let blocks = parse_blocks(body.get(EXIT_REGS..).unwrap_or(&[]), self.exit.len());
        let ctx = Ctx {
            types,
            nodes: &self.exit,
            blocks: &blocks,
            keys: &self.exit_keys,
        };
        let mut out = Map::new();
        if let Some((ty, loc)) = self.ret {
            let value = match loc {
                Loc::Regs(rs) => {
                    let mut bytes = Vec::with_capacity(16);
                    for (sse, i) in rs.iter().flatten() {
                        // rax, rdx, xmm0, xmm1
                        let o = if *sse {
                            16 + *i as usize * 8
                        } else {
                            *i as usize * 8
                        };
                        bytes.extend_from_slice(regs.get(o..o + 8).unwrap_or(&[0; 8]));
                    }
                    ctx.render(
                        ty,
                        &bytes,
                        regs_origin(rs, true),
                        self.depth,
                        &mut Trail::new("", self.depth),
                    )
                }
                Loc::RetMemory => ctx.by_node(ty, (NO_PARENT, SRC_RET, 0), self.depth, ""),
                _ => Value::Null,
            };
            out.insert("returnValue".into(), value);
        }
        if let Some(w) = self.with_exprs(self.watch_values(&blocks, false), exprs) {
            out.insert("watchValues".into(), w);
        }
        Value::Object(out)
    }

    /// Adds expression watch values (evaluated by the agent) to the native
    /// ones, in the plan's order; one the agent did not report shows why.
    fn with_exprs(
        &self,
        native: Option<Value>,
        exprs: Option<Map<String, Value>>,
    ) -> Option<Value> {
        if self.exprs.is_empty() {
            return native;
        }
        let mut m = match native {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let mut got = exprs.unwrap_or_default();
        for (label, _) in &self.exprs {
            let v = got
                .remove(label)
                .unwrap_or_else(|| json!("<not captured: expression not evaluated>"));
            m.insert(label.clone(), v);
        }
        Some(Value::Object(m))
    }

    fn watch_values(&self, blocks: &[Block<'_>], enter: bool) -> Option<Value> {
        if self.watches.is_empty() {
            return None;
        }
        let mut m = Map::new();
        for (label, e, x, ty) in &self.watches {
            let idx = if enter { *e } else { *x } as usize;
            let nodes = if enter { &self.enter } else { &self.exit };
            let string = nodes.get(idx).is_some_and(|n| n.flags & FLAG_CSTRING != 0);
            let v = match blocks.get(idx) {
                Some(b) if string && (b.status == ST_OK || b.status == ST_CUT) => {
                    text(b.data, b.status == ST_CUT)
                }
                Some(b) if b.status == ST_OK => render_memory(ty, b.data, b.addr, 2, label),
                Some(b) => status_text(b.status, b.addr),
                None => json!("<not captured: record truncated>"),
            };
            m.insert(label.clone(), v);
        }
        Some(Value::Object(m))
    }
}

fn regs_origin(regs: [Option<(bool, u8)>; 2], ret: bool) -> Origin {
    let gp = regs.map(|r| r.and_then(|(sse, i)| (!sse).then_some(i)));
    Origin::Regs { gp, ret, base: 0 }
}

/// Appends a watch's chain of reads; returns the index of the final node
/// (for a string watch, the node reading the string).
fn push_chain(nodes: &mut Vec<Node>, w: &WatchSpec) -> u16 {
    let last = push_reads(nodes, w);
    if !w.string {
        return last;
    }
    nodes.push(Node {
        src: SRC_FIELD,
        flags: FLAG_CSTRING,
        parent: last,
        size: STRING_MAX,
        arg: 0,
        addend: 0,
    });
    (nodes.len() - 1) as u16
}

fn push_reads(nodes: &mut Vec<Node>, w: &WatchSpec) -> u16 {
    let last = w.chain.len().saturating_sub(1);
    let mut parent = NO_PARENT;
    for (i, (arg, addend)) in w.chain.iter().enumerate() {
        let size = if i == last { w.size.min(BLOCK_MAX) } else { 8 };
        nodes.push(Node {
            src: if i == 0 { SRC_ABS } else { SRC_FIELD },
            flags: 0,
            parent,
            size: size as u32,
            arg: if i == 0 { *arg } else { 0 },
            addend: *addend,
        });
        parent = (nodes.len() - 1) as u16;
    }
    parent
}

#[derive(Debug, Clone, Copy)]
struct Block<'a> {
    addr: u64,
    status: u32,
    data: &'a [u8],
}

/// Ends a payload that carries expression watch values: the JSON object of
/// values, then u32 its length, then u32 this magic.
const EXPR_MAGIC: u32 = 0x5250_5845;

/// Splits the expression watch values off the end of a payload body.
fn split_exprs(body: &[u8]) -> (&[u8], Option<Map<String, Value>>) {
    let n = body.len();
    if n < 8 || u32::from_le_bytes(body[n - 4..].try_into().expect("4")) != EXPR_MAGIC {
        return (body, None);
    }
    let len = u32::from_le_bytes(body[n - 8..n - 4].try_into().expect("4")) as usize;
    let Some(start) = (n - 8).checked_sub(len) else {
        return (body, None);
    };
    let values = match serde_json::from_slice(&body[start..n - 8]) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    (&body[..start], Some(values))
}

fn parse_blocks(mut b: &[u8], n: usize) -> Vec<Block<'_>> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n && b.len() >= 16 {
        let addr = u64::from_le_bytes(b[0..8].try_into().expect("8"));
        let len = u32::from_le_bytes(b[8..12].try_into().expect("4")) as usize;
        let status = u32::from_le_bytes(b[12..16].try_into().expect("4"));
        let data = b.get(16..16 + len).unwrap_or(&[]);
        out.push(Block { addr, status, data });
        b = b.get(16 + len.div_ceil(8) * 8..).unwrap_or(&[]);
    }
    out
}

fn status_text(status: u32, addr: u64) -> Value {
    match status {
        ST_NULL => Value::Null,
        ST_UNREADABLE => json!(format!("<unreadable {addr:#x}>")),
        ST_NO_PARENT => json!("<not captured: the pointer before it was unreadable>"),
        _ => json!(format!(
            "<not captured: record size limit reached at {addr:#x}>"
        )),
    }
}

struct Ctx<'a> {
    types: &'a TypeTable,
    nodes: &'a [Node],
    blocks: &'a [Block<'a>],
    keys: &'a HashMap<(u16, u8, u64), u16>,
}

fn le(bytes: &[u8], size: usize) -> u64 {
    let mut b = [0u8; 8];
    let n = size.min(8).min(bytes.len());
    b[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(b)
}

fn sign_extend(v: u64, size: usize) -> i64 {
    if size >= 8 {
        return v as i64;
    }
    let shift = 64 - size * 8;
    ((v << shift) as i64) >> shift
}

fn float_json(f: f64) -> Value {
    if f.is_finite() {
        json!(f)
    } else {
        json!(f.to_string())
    }
}

/// A string read from the target: bytes that are not UTF-8 are shown as
/// `\xNN` (a lossy U+FFFD would hide which bytes they were); `…` marks a
/// string cut at the read limit.
pub(crate) fn text(data: &[u8], cut: bool) -> Value {
    let mut s = String::with_capacity(data.len());
    let mut chunks = data.utf8_chunks().peekable();
    while let Some(chunk) = chunks.next() {
        s.push_str(chunk.valid());
        // A character split by the read limit is not an invalid byte.
        if cut && chunks.peek().is_none() {
            break;
        }
        for b in chunk.invalid() {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    if cut {
        s.push('…');
    }
    Value::String(s)
}

impl Ctx<'_> {
    /// A value reached through the node at `key` (by-reference arguments,
    /// structs returned in memory).
    fn by_node(&self, ty: TypeId, key: (u16, u8, u64), depth: u32, name: &str) -> Value {
        let Some(idx) = self.keys.get(&key) else {
            return json!(format!("<{}>", self.types.name(ty)));
        };
        match self.blocks.get(*idx as usize) {
            Some(b) if b.status == ST_OK => {
                let trail = &mut Trail::new(name, depth).at(b.addr);
                self.render(ty, b.data, Origin::Block(*idx, 0), depth, trail)
            }
            Some(b) => status_text(b.status, b.addr),
            None => json!("<not captured: record truncated>"),
        }
    }

    /// An array whose elements the depth limit cuts, said once:
    /// `[64 × account] @0x… (depth limit: ask for store.spare[i] or depth 2)`.
    fn cut_array(&self, elem: TypeId, n: u64, origin: Origin, path: &Trail) -> String {
        let at = match origin {
            Origin::Mem(a) => format!(" @{a:#x}"),
            Origin::Block(idx, off) => self
                .blocks
                .get(idx as usize)
                .map(|b| format!(" @{:#x}", b.addr + off))
                .unwrap_or_default(),
            _ => String::new(),
        };
        let part = if path.names.is_empty() {
            "one element".to_string()
        } else {
            crate::varpath::any_element(&path.names)
        };
        format!(
            "[{n} × {}]{at} (depth limit: ask for {part} or depth {})",
            self.types.name(elem),
            path.depth + 1
        )
    }

    fn render(
        &self,
        ty: TypeId,
        bytes: &[u8],
        origin: Origin,
        depth: u32,
        path: &mut Trail,
    ) -> Value {
        let t = self.types;
        let sty = t.strip(ty);
        match t.get(sty) {
            Type::Void | Type::Function => json!(format!("{:#x}", le(bytes, 8))),
            Type::Int {
                size,
                signed,
                is_char,
                ..
            } => {
                let size = *size as usize;
                if size > 8 {
                    let mut b = [0u8; 16];
                    let n = bytes.len().min(16);
                    b[..n].copy_from_slice(&bytes[..n]);
                    return if *signed {
                        json!(i128::from_le_bytes(b).to_string())
                    } else {
                        json!(u128::from_le_bytes(b).to_string())
                    };
                }
                let raw = le(bytes, size);
                let n = if *signed {
                    sign_extend(raw, size)
                } else {
                    raw as i64
                };
                if *is_char && size == 1 {
                    let c = raw as u8;
                    if c.is_ascii_graphic() || c == b' ' {
                        return json!(format!("'{}' ({n})", c as char));
                    }
                } else if *is_char
                    && size == 4
                    && let Some(c) = char::from_u32(raw as u32)
                {
                    return json!(c.to_string());
                }
                if *signed { json!(n) } else { json!(raw) }
            }
            Type::Float { size: 4, .. } => float_json(f32::from_bits(le(bytes, 4) as u32) as f64),
            Type::Float { size: 8, .. } => float_json(f64::from_bits(le(bytes, 8))),
            Type::Float { .. } => json!(format!("0x{}", hex(bytes))),
            Type::Bool { size } => json!(le(bytes, *size as usize) != 0),
            Type::Enum {
                size,
                signed,
                variants,
                ..
            } => {
                let raw = le(bytes, *size as usize);
                let v = if *signed {
                    sign_extend(raw, *size as usize)
                } else {
                    raw as i64
                };
                match variants.iter().find(|(val, _)| *val == v) {
                    Some((_, name)) => json!(name),
                    None => json!(v),
                }
            }
            Type::Pointer { target, .. } => {
                let addr = le(bytes, 8);
                if addr == 0 {
                    return Value::Null;
                }
                if path.addrs.contains(&addr) {
                    return json!(format!("<circular ref to {addr:#x}>"));
                }
                let Some(idx) = origin.key().and_then(|k| self.keys.get(&k)) else {
                    let target = t.strip(*target);
                    return match t.get(target) {
                        Type::Struct { name, .. } if depth == 0 => {
                            json!(format!("<{name} * {addr:#x}: depth limit>"))
                        }
                        _ => json!(format!("{addr:#x}")),
                    };
                };
                let Some(b) = self.blocks.get(*idx as usize) else {
                    return json!(format!("{addr:#x}"));
                };
                if b.status != ST_OK && b.status != ST_CUT {
                    return status_text(b.status, b.addr);
                }
                let node_flags = self.node_flags(*idx);
                if node_flags & FLAG_CSTRING != 0 {
                    return text(b.data, b.status == ST_CUT);
                }
                path.addrs.push(addr);
                path.arrow = true;
                let pointee = pointee_depth(t.get(t.strip(*target)), depth);
                let inner = self.render(*target, b.data, Origin::Block(*idx, 0), pointee, path);
                path.arrow = false;
                path.addrs.pop();
                match inner {
                    Value::Object(mut m) => {
                        let mut o = Map::new();
                        o.insert("@addr".into(), json!(format!("{addr:#x}")));
                        o.append(&mut m);
                        Value::Object(o)
                    }
                    other => json!({"@addr": format!("{addr:#x}"), "*": other}),
                }
            }
            Type::Struct {
                name,
                members,
                size,
                ..
            } => {
                let sep = if std::mem::take(&mut path.arrow) {
                    "->"
                } else {
                    "."
                };
                if depth == 0 {
                    return json!(format!("<{name}: depth limit>"));
                }
                if let Some((p, l)) = rust_str_fields(name, members) {
                    let ptr = le(bytes.get(p as usize..).unwrap_or(&[]), 8);
                    let len = le(bytes.get(l as usize..).unwrap_or(&[]), 8);
                    let key = origin.shift(p).key();
                    return match key
                        .and_then(|k| self.keys.get(&k))
                        .and_then(|i| self.blocks.get(*i as usize))
                    {
                        Some(b) if b.status == ST_OK || b.status == ST_CUT => {
                            text(b.data, len > b.data.len() as u64)
                        }
                        Some(b) => status_text(b.status, b.addr),
                        None => json!(format!("<&str {ptr:#x}, {len} bytes>")),
                    };
                }
                let mut o = Map::new();
                for m in members {
                    let start = m.offset as usize;
                    let msize = t.size_of(m.ty).unwrap_or(0) as usize;
                    let v = if let Some((bit, nbits)) = m.bits {
                        let raw = le(bytes.get(start..).unwrap_or(&[]), 8);
                        let mask = if nbits >= 64 {
                            u64::MAX
                        } else {
                            (1u64 << nbits) - 1
                        };
                        let v = (raw >> bit) & mask;
                        match t.get(t.strip(m.ty)) {
                            Type::Enum { .. } | Type::Bool { .. } => {
                                self.render(m.ty, &v.to_le_bytes(), Origin::Nowhere, 0, path)
                            }
                            _ => json!(v),
                        }
                    } else if start + msize > bytes.len() || start + msize > *size as usize {
                        json!("<not captured>")
                    } else {
                        let len = path.names.len();
                        if len > 0 {
                            path.names.push_str(sep);
                            path.names.push_str(&m.name);
                        }
                        let v = self.render(
                            m.ty,
                            &bytes[start..start + msize],
                            origin.shift(m.offset),
                            depth - 1,
                            path,
                        );
                        path.names.truncate(len);
                        v
                    };
                    o.insert(m.name.clone(), v);
                }
                Value::Object(o)
            }
            Type::Array { elem, count } => {
                let Some(esize) = t.size_of(*elem).filter(|s| *s > 0) else {
                    return json!(format!("<{}>", t.name(ty)));
                };
                let n = count.unwrap_or(0);
                if matches!(
                    t.get(t.strip(*elem)),
                    Type::Int {
                        size: 1,
                        is_char: true,
                        ..
                    }
                ) {
                    let data = &bytes[..bytes.len().min(n as usize)];
                    let end = data.iter().position(|c| *c == 0).unwrap_or(data.len());
                    return text(&data[..end.min(STRING_MAX as usize)], false);
                }
                path.arrow = false;
                if depth == 0 {
                    return json!(format!("<{}: depth limit>", t.name(ty)));
                }
                if depth == 1
                    && matches!(
                        t.get(t.strip(*elem)),
                        Type::Struct { .. } | Type::Array { .. }
                    )
                {
                    // Every element would be its own "<…: depth limit>":
                    // say it once, with what to ask for instead.
                    return json!(self.cut_array(*elem, n, origin, path));
                }
                let mut items = Vec::new();
                for i in 0..n.min(ARRAY_MAX) {
                    let s = (i * esize) as usize;
                    let Some(b) = bytes.get(s..s + esize as usize) else {
                        break;
                    };
                    // The element's own path (a slice's element 0 is
                    // `a[start]`), for the hints of parts cut inside it.
                    let array = if path.names.is_empty() {
                        String::new()
                    } else {
                        let own = crate::varpath::element_path(&path.names, i);
                        std::mem::replace(&mut path.names, own)
                    };
                    items.push(self.render(*elem, b, origin.shift(i * esize), depth - 1, path));
                    if !array.is_empty() {
                        path.names = array;
                    }
                }
                if n > ARRAY_MAX {
                    items.push(json!(format!("… {} more", n - ARRAY_MAX)));
                }
                Value::Array(items)
            }
            Type::Typedef { .. } => Value::Null,
            Type::Opaque { name, size } => {
                if bytes.len() <= 16 && !bytes.is_empty() {
                    json!(format!("<{name} 0x{}>", hex(bytes)))
                } else {
                    json!(format!(
                        "<{name}, {} bytes>",
                        size.unwrap_or(bytes.len() as u64)
                    ))
                }
            }
        }
    }

    fn node_flags(&self, idx: u16) -> u8 {
        self.nodes.get(idx as usize).map_or(0, |n| n.flags)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().rev().map(|b| format!("{b:02x}")).collect()
}

/// Renders a raw watch by its type hint.
pub fn render_hint(hint: &str, b: &[u8]) -> Value {
    match hint {
        "i8" => json!(sign_extend(le(b, 1), 1)),
        "u8" => json!(le(b, 1)),
        "i16" => json!(sign_extend(le(b, 2), 2)),
        "u16" => json!(le(b, 2)),
        "i32" => json!(sign_extend(le(b, 4), 4)),
        "u32" => json!(le(b, 4)),
        "i64" => json!(le(b, 8) as i64),
        "u64" => json!(le(b, 8)),
        "f32" => float_json(f32::from_bits(le(b, 4) as u32) as f64),
        "f64" => float_json(f64::from_bits(le(b, 8))),
        _ => json!(format!("{:#x}", le(b, 8))),
    }
}

/// Renders a value's bytes read on their own (a watch's final read, or
/// debug_memory): structs and arrays expand to `depth` levels; pointers
/// inside show as addresses (they are not followed). Expression watches
/// are never read as bytes.
///
/// `addr` is where the bytes were read (0: not from memory) and `name` the
/// path they were asked for by, quoted when part is cut at `depth`.
pub fn render_memory(ty: &WatchType, bytes: &[u8], addr: u64, depth: u32, name: &str) -> Value {
    match ty {
        WatchType::Typed(t, table, _) => {
            let ctx = Ctx {
                types: table,
                nodes: &[],
                blocks: &[],
                keys: &HashMap::new(),
            };
            let origin = if addr == 0 {
                Origin::Nowhere
            } else {
                Origin::Mem(addr)
            };
            ctx.render(
                *t,
                bytes,
                origin,
                depth,
                &mut Trail::new(name, depth).at(addr),
            )
        }
        WatchType::Hint(h) => render_hint(h, bytes),
        WatchType::Expr(_) => Value::Null,
    }
}

/// The type's name for messages.
pub fn type_name(ty: &WatchType) -> String {
    match ty {
        WatchType::Typed(t, table, _) => table.name(*t),
        WatchType::Hint(h) => h.clone(),
        WatchType::Expr(_) => "javascript".into(),
    }
}

/// Encodes `value` as the bytes of a scalar of type `ty` (`size` bytes) for
/// writing into a live process; refuses values that do not fit.
pub fn encode_scalar(ty: &WatchType, size: u64, value: &Value) -> Result<Vec<u8>, String> {
    enum Kind {
        Int(bool),
        Float,
        Bool,
        Pointer,
    }
    let kind = match ty {
        WatchType::Typed(t, table, _) => match table.get(table.strip(*t)) {
            Type::Int { signed, .. } => Kind::Int(*signed),
            Type::Float { size: 4 | 8, .. } => Kind::Float,
            Type::Bool { .. } => Kind::Bool,
            Type::Pointer { .. } => Kind::Pointer,
            Type::Enum {
                variants, signed, ..
            } => {
                if let Some(name) = value.as_str() {
                    let Some((v, _)) = variants.iter().find(|(_, n)| n == name) else {
                        let names: Vec<&str> = variants.iter().map(|(_, n)| n.as_str()).collect();
                        return Err(format!(
                            "{name:?} is not a variant of {}; it has {}",
                            table.name(*t),
                            names.join(", ")
                        ));
                    };
                    return Ok(v.to_le_bytes()[..size as usize].to_vec());
                }
                Kind::Int(*signed)
            }
            _ => {
                return Err(format!(
                    "only scalars (integers, floats, bools, enums, pointers) can be written; {} is not one",
                    table.name(*t)
                ));
            }
        },
        WatchType::Hint(h) => match h.as_str() {
            "i8" | "i16" | "i32" | "i64" => Kind::Int(true),
            "u8" | "u16" | "u32" | "u64" => Kind::Int(false),
            "f32" | "f64" => Kind::Float,
            "pointer" => Kind::Pointer,
            _ => return Err(format!("cannot write a value of type {h:?}")),
        },
        WatchType::Expr(_) => return Err("expressions cannot be written".into()),
    };
    if size == 0 || size > 8 {
        return Err(format!(
            "only scalars of up to 8 bytes can be written; {} has {size}",
            type_name(ty)
        ));
    }
    let bits = size * 8;
    let bytes = match kind {
        Kind::Int(signed) => {
            let v: i128 = match value {
                Value::Number(n) if n.is_i64() => i128::from(n.as_i64().expect("i64")),
                Value::Number(n) if n.is_u64() => i128::from(n.as_u64().expect("u64")),
                Value::Bool(b) => i128::from(*b),
                _ => return Err(format!("{value} is not an integer")),
            };
            let (lo, hi) = if signed {
                (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
            } else {
                (0, (1i128 << bits) - 1)
            };
            if v < lo || v > hi {
                return Err(format!(
                    "{v} does not fit in {} ({lo}..={hi})",
                    type_name(ty)
                ));
            }
            (v as i64).to_le_bytes()[..size as usize].to_vec()
        }
        Kind::Float => {
            let f = value
                .as_f64()
                .ok_or_else(|| format!("{value} is not a number"))?;
            if size == 4 {
                (f as f32).to_le_bytes().to_vec()
            } else {
                f.to_le_bytes().to_vec()
            }
        }
        Kind::Bool => match value {
            Value::Bool(b) => {
                let mut v = vec![0u8; size as usize];
                v[0] = u8::from(*b);
                v
            }
            _ => return Err(format!("{value} is not true or false")),
        },
        Kind::Pointer => {
            let p = match value {
                Value::Number(n) => n
                    .as_u64()
                    .ok_or_else(|| format!("{value} is not an address"))?,
                Value::String(h) => u64::from_str_radix(h.trim_start_matches("0x"), 16)
                    .map_err(|_| format!("{h:?} is not a hex address like \"0x1000\""))?,
                Value::Null => 0,
                _ => return Err(format!("{value} is not an address")),
            };
            p.to_le_bytes().to_vec()
        }
    };
    Ok(bytes)
}

/// Bytes a type hint reads; `None` for an unknown hint.
pub fn hint_size(hint: &str) -> Option<u64> {
    Some(match hint {
        "i8" | "u8" => 1,
        "i16" | "u16" => 2,
        "i32" | "u32" | "f32" => 4,
        "i64" | "u64" | "f64" | "pointer" => 8,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use strobe_symbols::Member;

    #[test]
    fn strings_mark_invalid_utf8_bytes() {
        assert_eq!(text(b"caf\xc3\xa9", false), "café");
        assert_eq!(text(b"caf\xe9 \xff!", false), "caf\\xe9 \\xff!");
        // Cut inside a character: the partial character is dropped.
        assert_eq!(text(b"ab\xc3", true), "ab…");
    }

    fn int(t: &mut TypeTable, name: &str, size: u8, signed: bool) -> TypeId {
        t.push(Type::Int {
            name: name.into(),
            size,
            signed,
            is_char: name == "char",
        })
    }

    fn ptr(t: &mut TypeTable, target: TypeId) -> TypeId {
        t.push(Type::Pointer {
            target,
            reference: false,
        })
    }

    fn member(name: &str, offset: u64, ty: TypeId) -> Member {
        Member {
            name: name.into(),
            offset,
            ty,
            bits: None,
        }
    }

    fn payload(regs: &[u64], stack: &[u8], blocks: &[(u64, u32, Vec<u8>)]) -> Vec<u8> {
        let mut p = vec![0u8; 8];
        for r in regs {
            p.extend_from_slice(&r.to_le_bytes());
        }
        p.extend_from_slice(stack);
        for (addr, status, data) in blocks {
            p.extend_from_slice(&addr.to_le_bytes());
            p.extend_from_slice(&(data.len() as u32).to_le_bytes());
            p.extend_from_slice(&status.to_le_bytes());
            p.extend_from_slice(data);
            p.resize(p.len().div_ceil(8) * 8, 0);
        }
        p
    }

    fn regs14(gp: &[u64], xmm: &[f64]) -> Vec<u64> {
        let mut r = vec![0u64; 14];
        r[..gp.len()].copy_from_slice(gp);
        for (i, x) in xmm.iter().enumerate() {
            r[6 + i] = x.to_bits();
        }
        r
    }

    #[test]
    fn arrays_cut_by_the_depth_limit_are_said_once() {
        let mut t = TypeTable::default();
        let i32t = int(&mut t, "int", 4, true);
        let account = t.push(Type::Struct {
            name: "account".into(),
            size: 8,
            members: vec![member("id", 0, i32t), member("balance", 4, i32t)],
            is_union: false,
            by_reference: false,
        });
        let spare = t.push(Type::Array {
            elem: account,
            count: Some(64),
        });
        let store = t.push(Type::Struct {
            name: "store".into(),
            size: 8 + 64 * 8,
            members: vec![member("n", 0, i32t), member("spare", 8, spare)],
            is_union: false,
            by_reference: false,
        });
        let t = std::sync::Arc::new(t);
        let bytes = vec![1u8; 8 + 64 * 8];
        let typed = |ty| WatchType::Typed(ty, t.clone(), 0);
        assert_eq!(
            render_memory(&typed(spare), &bytes[8..], 0x1008, 1, "store.spare"),
            "[64 × account] @0x1008 (depth limit: ask for store.spare[i] or depth 2)"
        );
        // Nested: the path and address of the member, the depth from the top.
        let v = render_memory(&typed(store), &bytes, 0x1000, 2, "store");
        assert_eq!(
            v["spare"],
            "[64 × account] @0x1008 (depth limit: ask for store.spare[i] or depth 3)"
        );
        // Deep enough: the elements themselves.
        let v = render_memory(&typed(spare), &bytes[8..], 0x1008, 2, "store.spare");
        assert_eq!(v[63]["balance"], 0x01010101);
        assert_eq!(v.as_array().unwrap().len(), 64);
        // Inside a slice (`T[n]` of stores), hints name elements by their
        // index in the array sliced, never the slice: both paths read.
        let mut t2 = (*t).clone();
        let two = t2.push(Type::Array {
            elem: store,
            count: Some(2),
        });
        let t2 = std::sync::Arc::new(t2);
        let bytes = vec![1u8; 2 * (8 + 64 * 8)];
        let slice = WatchType::Typed(two, t2, 0);
        let v = render_memory(&slice, &bytes, 0x1000, 3, "shops[4:6]");
        assert_eq!(
            v[1]["spare"],
            "[64 × account] @0x1210 (depth limit: ask for shops[5].spare[i] or depth 4)"
        );
        assert_eq!(
            render_memory(&slice, &bytes, 0x1000, 1, "shops[4:6]"),
            "[2 × store] @0x1000 (depth limit: ask for shops[i] or depth 2)"
        );
    }

    #[test]
    fn pointers_strings_enums_and_cycles() {
        let mut t = TypeTable::default();
        let i32t = int(&mut t, "int", 4, true);
        let ch = int(&mut t, "char", 1, true);
        let cstr = ptr(&mut t, ch);
        let color = t.push(Type::Enum {
            name: "color".into(),
            size: 4,
            signed: false,
            variants: vec![(1, "RED".into()), (4, "BLUE".into())],
        });
        let node = t.push(Type::Void);
        let node_ptr = ptr(&mut t, node);
        t.set(
            node,
            Type::Struct {
                name: "node".into(),
                size: 16,
                members: vec![member("value", 0, i32t), member("next", 8, node_ptr)],
                is_union: false,
                by_reference: false,
            },
        );
        let sig = Signature {
            params: vec![
                ("head".into(), node_ptr),
                ("label".into(), cstr),
                ("c".into(), color),
                ("bad".into(), cstr),
            ],
            ret: Some(i32t),
            variadic: false,
            ..Default::default()
        };
        let plan = FunctionPlan::build(1, &sig, &t, 3, &[]);
        // Level by level: head, label, bad; then head → node → node
        // (depth 3).
        let srcs: Vec<(u8, u16, u64)> = plan
            .enter
            .iter()
            .map(|n| (n.src, n.parent, n.arg))
            .collect();
        assert_eq!(
            srcs,
            [
                (SRC_GP, NO_PARENT, 0),
                (SRC_GP, NO_PARENT, 1),
                (SRC_GP, NO_PARENT, 3),
                (SRC_FIELD, 0, 8),
                (SRC_FIELD, 3, 8)
            ]
        );
        let node_bytes = |v: i32, next: u64| {
            let mut b = v.to_le_bytes().to_vec();
            b.extend_from_slice(&[0; 4]);
            b.extend_from_slice(&next.to_le_bytes());
            b
        };
        // a(0x100) -> b(0x200) -> a: a cycle.
        let p = payload(
            &regs14(&[0x100, 0x500, 4, 0x10], &[]),
            &[],
            &[
                (0x100, ST_OK, node_bytes(1, 0x200)),
                (0x500, ST_OK, b"tracer".to_vec()),
                (0x10, ST_UNREADABLE, vec![]),
                (0x200, ST_OK, node_bytes(2, 0x100)),
                (0x100, ST_OK, node_bytes(1, 0x200)),
            ],
        );
        let v = plan.decode_enter(&t, &p);
        let args = &v["arguments"];
        assert_eq!(args[0]["type"], "node *");
        assert_eq!(args[0]["value"]["value"], 1);
        assert_eq!(args[0]["value"]["@addr"], "0x100");
        assert_eq!(args[0]["value"]["next"]["value"], 2);
        assert_eq!(args[0]["value"]["next"]["next"], "<circular ref to 0x100>");
        assert_eq!(args[1]["value"], "tracer");
        assert_eq!(args[2]["value"], "BLUE");
        assert_eq!(args[3]["value"], "<unreadable 0x10>");

        // Exit: the int return value from rax.
        let mut x = vec![0u8; 8];
        x.extend_from_slice(&(-7i64 as u64).to_le_bytes());
        x.extend_from_slice(&[0; 24]);
        assert_eq!(plan.decode_exit(&t, &x)["returnValue"], -7);

        // Depth 1: the pointer target is read, its own pointers are not.
        let shallow = FunctionPlan::build(2, &sig, &t, 1, &[]);
        assert_eq!(shallow.enter.len(), 3);
    }

    /// SQLite's `sqlite3_prepare_v2(sqlite3 *db, const char *zSql, …)`:
    /// the struct graph behind `db` needs more reads than the budget, and
    /// the string after it must still be read.
    #[test]
    fn a_large_struct_graph_leaves_later_arguments_their_reads() {
        let mut t = TypeTable::default();
        let i32t = int(&mut t, "int", 4, true);
        let ch = int(&mut t, "char", 1, true);
        let cstr = ptr(&mut t, ch);
        let int_ptr = ptr(&mut t, i32t);
        let members: Vec<Member> = (0..ARG_NODES_MAX as u64 + 10)
            .map(|i| member(&format!("p{i}"), i * 8, int_ptr))
            .collect();
        let db = t.push(Type::Struct {
            name: "sqlite3".into(),
            size: members.len() as u64 * 8,
            members,
            is_union: false,
            by_reference: false,
        });
        let db_ptr = ptr(&mut t, db);
        let sig = Signature {
            params: vec![("db".into(), db_ptr), ("zSql".into(), cstr)],
            ret: Some(i32t),
            variadic: false,
            ..Default::default()
        };
        let plan = FunctionPlan::build(1, &sig, &t, 3, &[]);
        assert_eq!(plan.enter.len(), ARG_NODES_MAX);
        let sql = plan
            .enter
            .iter()
            .position(|n| (n.src, n.parent, n.arg) == (SRC_GP, NO_PARENT, 1))
            .expect("zSql is read");
        assert_eq!(plan.enter[sql].flags, FLAG_CSTRING);
        // Decoded: the text, and db's pointers as far as the budget went.
        let mut blocks = vec![(0x1000, ST_OK, vec![0u8; 8 * (ARG_NODES_MAX + 10)])];
        blocks.push((0x2000, ST_OK, b"SELECT 1".to_vec()));
        blocks.extend((2..ARG_NODES_MAX).map(|_| (0, ST_NULL, vec![])));
        let p = payload(&regs14(&[0x1000, 0x2000], &[]), &[], &blocks);
        let v = plan.decode_enter(&t, &p);
        assert_eq!(v["arguments"][1]["value"], "SELECT 1", "{v}");
        assert_eq!(v["arguments"][0]["value"]["p0"], Value::Null, "{v}");
    }

    #[test]
    fn abi_floats_small_structs_stack_and_memory_returns() {
        let mut t = TypeTable::default();
        let dbl = t.push(Type::Float {
            name: "double".into(),
            size: 8,
        });
        let flt = t.push(Type::Float {
            name: "float".into(),
            size: 4,
        });
        let long = int(&mut t, "long", 8, true);
        let i32t = int(&mut t, "int", 4, true);
        let vec2 = t.push(Type::Struct {
            name: "vec2".into(),
            size: 16,
            members: vec![member("x", 0, dbl), member("y", 8, dbl)],
            is_union: false,
            by_reference: false,
        });
        let big = t.push(Type::Struct {
            name: "big".into(),
            size: 32,
            members: vec![
                member("a", 0, long),
                member("b", 8, long),
                member("c", 16, long),
                member("d", 24, long),
            ],
            is_union: false,
            by_reference: false,
        });
        // double mix(double a, float b, int n): xmm0, xmm1, rdi.
        let mix = Signature {
            params: vec![("a".into(), dbl), ("b".into(), flt), ("n".into(), i32t)],
            ret: Some(dbl),
            variadic: false,
            ..Default::default()
        };
        let plan = FunctionPlan::build(1, &mix, &t, 3, &[]);
        let mut regs = regs14(&[41], &[1.5]);
        regs[7] = (2.0f32).to_bits() as u64;
        let v = plan.decode_enter(&t, &payload(&regs, &[], &[]));
        assert_eq!(v["arguments"][0]["value"], 1.5);
        assert_eq!(v["arguments"][1]["value"], 2.0);
        assert_eq!(v["arguments"][2]["value"], 41);
        let mut x = vec![0u8; 24];
        x.extend_from_slice(&3.25f64.to_bits().to_le_bytes());
        x.extend_from_slice(&[0; 8]);
        assert_eq!(plan.decode_exit(&t, &x)["returnValue"], 3.25);

        // struct vec2 offset(struct vec2 v, double dx): v in xmm0+xmm1, dx in xmm2;
        // returned in xmm0+xmm1.
        let off = Signature {
            params: vec![("v".into(), vec2), ("dx".into(), dbl)],
            ret: Some(vec2),
            variadic: false,
            ..Default::default()
        };
        let plan = FunctionPlan::build(1, &off, &t, 3, &[]);
        let v = plan.decode_enter(&t, &payload(&regs14(&[], &[1.0, 2.0, 0.25]), &[], &[]));
        assert_eq!(v["arguments"][0]["value"], json!({"x": 1.0, "y": 2.0}));
        assert_eq!(v["arguments"][1]["value"], 0.25);
        let mut x = vec![0u8; 24];
        x.extend_from_slice(&1.25f64.to_bits().to_le_bytes());
        x.extend_from_slice(&1.75f64.to_bits().to_le_bytes());
        assert_eq!(
            plan.decode_exit(&t, &x)["returnValue"],
            json!({"x": 1.25, "y": 1.75})
        );

        // long sum_big(struct big b, int scale): b on the stack, scale in rdi.
        let sb = Signature {
            params: vec![("b".into(), big), ("scale".into(), i32t)],
            ret: Some(long),
            variadic: false,
            ..Default::default()
        };
        let plan = FunctionPlan::build(1, &sb, &t, 3, &[]);
        assert_eq!(plan.stack_bytes, 32);
        let stack: Vec<u8> = [1i64, 2, 3, 4]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let v = plan.decode_enter(&t, &payload(&regs14(&[2], &[]), &stack, &[]));
        assert_eq!(
            v["arguments"][0]["value"],
            json!({"a": 1, "b": 2, "c": 3, "d": 4})
        );
        assert_eq!(v["arguments"][1]["value"], 2);

        // struct big make(int): returned in memory; rdi is the hidden pointer,
        // so the int is in rsi, and rax points at the result on exit.
        let mk = Signature {
            params: vec![("n".into(), i32t)],
            ret: Some(big),
            variadic: false,
            ..Default::default()
        };
        let plan = FunctionPlan::build(1, &mk, &t, 3, &[]);
        let v = plan.decode_enter(&t, &payload(&regs14(&[0x7000, 9], &[]), &[], &[]));
        assert_eq!(v["arguments"][0]["value"], 9);
        assert_eq!(plan.exit.len(), 1);
        let mut x = vec![0u8; 8];
        x.extend_from_slice(&0x7000u64.to_le_bytes());
        x.extend_from_slice(&[0; 24]);
        let body: Vec<u8> = [5i64, 6, 7, 8]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        x.extend_from_slice(&0x7000u64.to_le_bytes());
        x.extend_from_slice(&32u32.to_le_bytes());
        x.extend_from_slice(&0u32.to_le_bytes());
        x.extend_from_slice(&body);
        assert_eq!(
            plan.decode_exit(&t, &x)["returnValue"],
            json!({"a": 5, "b": 6, "c": 7, "d": 8})
        );
    }

    #[test]
    fn watches_read_chains_and_hints() {
        let mut t = TypeTable::default();
        let i32t = int(&mut t, "int", 4, true);
        let w = [
            WatchSpec {
                label: "count".into(),
                chain: vec![(0x1000, 0)],
                size: 4,
                ty: WatchType::Typed(i32t, std::sync::Arc::new(t.clone()), 0),
                string: false,
                slice: None,
            },
            WatchSpec {
                label: "cfg->level".into(),
                chain: vec![(0x2000, 0), (0, 8)],
                size: 4,
                ty: WatchType::Typed(i32t, std::sync::Arc::new(t.clone()), 0),
                string: false,
                slice: None,
            },
            WatchSpec {
                label: "raw".into(),
                chain: vec![(0x3000, 0)],
                size: 2,
                ty: WatchType::Hint("i16".into()),
                string: false,
                slice: None,
            },
        ];
        let sig = Signature::default();
        let plan = FunctionPlan::build(1, &sig, &t, 3, &w);
        assert_eq!(plan.enter.len(), 4);
        assert_eq!(plan.enter[2].src, SRC_FIELD);
        assert_eq!(plan.enter[2].addend, 8);
        let p = payload(
            &regs14(&[], &[]),
            &[],
            &[
                (0x1000, ST_OK, 5i32.to_le_bytes().to_vec()),
                (0x2000, ST_OK, 0x9000u64.to_le_bytes().to_vec()),
                (0x9008, ST_OK, 3i32.to_le_bytes().to_vec()),
                (0x3000, ST_OK, (-2i16).to_le_bytes().to_vec()),
            ],
        );
        let v = plan.decode_enter(&t, &p);
        assert_eq!(
            v["watchValues"],
            json!({"count": 5, "cfg->level": 3, "raw": -2})
        );
        // A record cut short marks the missing watches instead of failing.
        let short = &p[..p.len() - 16];
        let v = plan.decode_enter(&t, short);
        assert_eq!(v["watchValues"]["raw"], "<not captured: record truncated>");
    }
}
