//! System V x86-64 classification: which registers a DWARF register
//! number names, and how aggregates are passed and returned.

use strobe_symbols::{Type, TypeId, TypeTable};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Integer,
    Sse,
}

/// The argument register a DWARF x86-64 register number names, as
/// (is SSE, index): rdi, rsi, rdx, rcx, r8, r9 and xmm0-7 are captured.
pub(crate) fn dwarf_arg_register(r: u16) -> Option<(bool, u8)> {
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

/// Flattens scalar leaves (offset, size, is float) of a type, for ABI classification.
pub(crate) fn leaves(
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
pub(crate) fn classify(t: &TypeTable, ty: TypeId) -> Option<Vec<Class>> {
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

pub(crate) fn by_reference(t: &TypeTable, ty: TypeId) -> bool {
    matches!(
        t.get(t.strip(ty)),
        Type::Struct {
            by_reference: true,
            ..
        }
    )
}
