//! Building a function's capture plan from its DWARF signature and the
//! watches that apply: the memory reads the agent runs per call.

use crate::abi::*;
use crate::place::*;
use crate::wire::*;
use std::collections::HashMap;
use strobe_symbols::{EntryLoc, Signature, Type, TypeId, TypeTable};

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
    pub(crate) params: Vec<(String, TypeId, Loc)>,
    pub(crate) ret: Option<(TypeId, Loc)>,
    pub(crate) enter: Vec<Node>,
    pub(crate) exit: Vec<Node>,
    pub(crate) enter_keys: HashMap<(u16, u8, u64), u16>,
    pub(crate) exit_keys: HashMap<(u16, u8, u64), u16>,
    /// (label, final node index in enter, in exit, type).
    pub(crate) watches: Vec<(String, u16, u16, WatchType)>,
    /// Expression watches read in this function: (label, agent id).
    pub(crate) exprs: Vec<(String, u16)>,
    pub(crate) stack_bytes: u64,
    pub(crate) depth: u32,
    /// Pointers left unfollowed because the node budget ran out.
    pub truncated: bool,
}

impl FunctionPlan {
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
}

pub(crate) struct Builder<'a> {
    pub(crate) types: &'a TypeTable,
    pub(crate) nodes: Vec<Node>,
    pub(crate) keys: HashMap<(u16, u8, u64), u16>,
    pub(crate) budget: usize,
    pub(crate) truncated: bool,
}

impl Builder<'_> {
    pub(crate) fn add(&mut self, key: (u16, u8, u64), flags: u8, size: u64) -> Option<u16> {
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
    pub(crate) fn value(&mut self, ty: TypeId, origin: Origin, depth: u32) {
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
pub(crate) fn pointee_depth(target: &Type, depth: u32) -> u32 {
    match target {
        Type::Struct { .. } | Type::Array { .. } => depth,
        _ => depth.saturating_sub(1),
    }
}

pub(crate) fn has_pointers(t: &TypeTable, ty: TypeId, depth: u32) -> bool {
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
pub(crate) fn rust_str_fields(
    name: &str,
    members: &[strobe_symbols::Member],
) -> Option<(u64, u64)> {
    if name != "&str" && name != "&mut str" {
        return None;
    }
    let p = members.iter().find(|m| m.name == "data_ptr")?;
    let l = members.iter().find(|m| m.name == "length")?;
    (l.offset == p.offset + 8).then_some((p.offset, l.offset))
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
}

/// Appends a watch's chain of reads; returns the index of the final node
/// (for a string watch, the node reading the string).
pub(crate) fn push_chain(nodes: &mut Vec<Node>, w: &WatchSpec) -> u16 {
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

pub(crate) fn push_reads(nodes: &mut Vec<Node>, w: &WatchSpec) -> u16 {
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
