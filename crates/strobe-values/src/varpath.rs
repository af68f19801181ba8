//! Variable paths as debug_memory and watches name them: a variable, then
//! `.field`, `->field`, `[i]` and a final `[a:b]` slice, e.g.
//! `g_store.spare[12].name`, `p->items[3].name`, `g_scores[2:5]`. Parsed
//! here and resolved against DWARF types to a read chain: a constant index
//! is an offset into an array (bounds checked against its DWARF count) or,
//! on a pointer, a dereference and an offset, so the agent's plan reads
//! stay plain chains of pointer reads.

use crate::{ARRAY_MAX, WatchSpec, WatchType};
use std::sync::Arc;
use strobe_symbols::{Type, TypeId, TypeTable};

/// Most pointer dereferences in a path (`->` and indexing through a pointer).
pub const MAX_DEREFS: usize = 4;

/// The syntax, for parse errors.
const SYNTAX: &str = "paths are a variable with .field, ->field, [index] and a last [start:end] \
                      slice, indices being non-negative numbers: \"g_store.spare[12].name\", \
                      \"p->items[3]\", \"g_scores[2:5]\"";

/// One step after a path's variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `.field`, or `->field` (through a pointer) when `arrow`.
    Field {
        /// Reached through `->`.
        arrow: bool,
        /// The member.
        name: String,
    },
    /// `[i]`: element `i` of an array, or the `i`th one from where a pointer points.
    Index(u64),
    /// `[a:b]`, `[a:]`, `[:b]`: elements `a..b`; only as the last step.
    Slice(Option<u64>, Option<u64>),
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Field { arrow: true, name } => write!(f, "->{name}"),
            Step::Field { arrow: false, name } => write!(f, ".{name}"),
            Step::Index(i) => write!(f, "[{i}]"),
            Step::Slice(a, b) => {
                let n = |x: &Option<u64>| x.map(|v| v.to_string()).unwrap_or_default();
                write!(f, "[{}:{}]", n(a), n(b))
            }
        }
    }
}

/// Splits `a->b[2].c` into `a` and its steps; at most [`MAX_DEREFS`] arrows.
pub fn parse_chain(expr: &str) -> Result<(String, Vec<Step>), String> {
    let expr = expr.trim();
    if expr.is_empty() || expr.len() > 256 {
        return Err(
            "a variable path must be 1–256 characters, e.g. \"gCounter\", \"gConfig->level\" or \"g_store.spare[3]\""
                .into(),
        );
    }
    let is_break = |s: &str| s.starts_with('.') || s.starts_with("->") || s.starts_with('[');
    let word_end = |s: &str| {
        s.char_indices()
            .find(|(i, _)| is_break(&s[*i..]))
            .map_or(s.len(), |(i, _)| i)
    };
    let first_end = word_end(expr);
    let name = expr[..first_end].trim().to_string();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == ':')
    {
        return Err(format!("bad variable name {name:?} in {expr:?}; {SYNTAX}"));
    }
    let mut steps = Vec::new();
    let mut rest = &expr[first_end..];
    while !rest.is_empty() {
        if let Some(Step::Slice(..)) = steps.last() {
            return Err(format!(
                "{expr:?}: a slice [start:end] must end the path (for a member of one element, index it: a[3].name)"
            ));
        }
        if let Some(inner) = rest.strip_prefix('[') {
            let Some(close) = inner.find(']') else {
                return Err(format!("{expr:?}: '[' without ']'; {SYNTAX}"));
            };
            steps.push(parse_brackets(expr, inner[..close].trim())?);
            rest = inner[close + 1..].trim_start();
            continue;
        }
        let (arrow, after) = if let Some(r) = rest.strip_prefix("->") {
            (true, r)
        } else if let Some(r) = rest.strip_prefix('.') {
            (false, r)
        } else {
            return Err(format!("cannot parse {expr:?} near {rest:?}; {SYNTAX}"));
        };
        let end = word_end(after);
        let field = after[..end].trim();
        if field.is_empty() || !field.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return Err(format!("bad member name {field:?} in {expr:?}; {SYNTAX}"));
        }
        steps.push(Step::Field {
            arrow,
            name: field.to_string(),
        });
        rest = &after[end..];
    }
    let arrows = steps
        .iter()
        .filter(|s| matches!(s, Step::Field { arrow: true, .. }))
        .count();
    if arrows > MAX_DEREFS {
        return Err(format!(
            "{expr:?} dereferences more than {MAX_DEREFS} pointers"
        ));
    }
    Ok((name, steps))
}

/// What is between `[` and `]`: an index or a slice.
fn parse_brackets(expr: &str, text: &str) -> Result<Step, String> {
    let number = |t: &str| -> Result<u64, String> {
        let t = t.trim();
        let n = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => t.parse(),
        };
        n.map_err(|_| format!("bad index {t:?} in {expr:?}; {SYNTAX}"))
    };
    let Some((a, b)) = text.split_once(':') else {
        return Ok(Step::Index(number(text)?));
    };
    let a = (!a.trim().is_empty()).then(|| number(a)).transpose()?;
    let b = (!b.trim().is_empty()).then(|| number(b)).transpose()?;
    if let (Some(a), Some(b)) = (a, b)
        && a >= b
    {
        return Err(format!(
            "empty slice [{a}:{b}] in {expr:?}: a slice [start:end] reads elements start..end-1, so end must be greater than start"
        ));
    }
    Ok(Step::Slice(a, b))
}

/// The path `name` + `steps` as text.
pub fn path_text(name: &str, steps: &[Step]) -> String {
    std::iter::once(name.to_string())
        .chain(steps.iter().map(Step::to_string))
        .collect()
}

/// Gives the id of `T[n]` for a slice's value, adding it to the table the
/// spec renders with, and that table.
pub type ArrayOf<'a> = dyn FnMut(TypeId, u64) -> Result<(TypeId, Arc<TypeTable>), String> + 'a;

/// An [`ArrayOf`] for specs that are never stored (a debug_memory read of a
/// paused frame's local): `T[n]` goes into a copy of `types`.
pub fn array_in_copy(
    types: &Arc<TypeTable>,
) -> impl FnMut(TypeId, u64) -> Result<(TypeId, Arc<TypeTable>), String> + '_ {
    move |elem, n| {
        let mut table = (**types).clone();
        let id = table.intern(Type::Array {
            elem,
            count: Some(n),
        });
        Ok((id, Arc::new(table)))
    }
}

/// Where a path starts: a value in memory, or a pointer whose value is
/// already known (held in a register), which its first step goes through.
#[derive(Debug, Clone, Copy)]
pub enum Start {
    /// A value of this type at this address.
    At(u64, TypeId),
    /// A pointer of this type holding this address.
    Pointer(u64, TypeId),
}

/// Resolves `steps` from `start` to a read chain: `.field` adds its offset,
/// `->field` and indexing through a pointer read the pointer and continue
/// from its target, `[i]` on an array adds `i` elements (refused past the
/// array's DWARF count), and a slice reads its elements at once (at most
/// [`ARRAY_MAX`]; `spec.slice` keeps what was asked).
pub fn chain_spec(
    label: &str,
    expr: &str,
    start: Start,
    types: Arc<TypeTable>,
    module: u32,
    steps: &[Step],
    array_of: &mut ArrayOf<'_>,
) -> Result<WatchSpec, String> {
    let t = &*types;
    let (mut chain, mut ty, mut in_hand) = match start {
        Start::At(a, ty) => (vec![(a, 0i64)], ty, false),
        Start::Pointer(a, ty) => (vec![(a, 0i64)], ty, true),
    };
    let mut offset: i64 = 0;
    // The path so far, for messages.
    let mut so_far = expr
        .find(['.', '[', '-'])
        .map_or(expr, |i| &expr[..i])
        .trim()
        .to_string();
    let mut slice = None;
    // Through a pointer: read it (unless its value is known), continue at its target.
    fn deref(chain: &mut Vec<(u64, i64)>, offset: &mut i64, in_hand: &mut bool) {
        if std::mem::take(in_hand) {
            return;
        }
        chain.last_mut().expect("chain starts non-empty").1 += *offset;
        chain.push((0, 0));
        *offset = 0;
    }
    for step in steps {
        match step {
            Step::Field { arrow, name } => {
                if *arrow {
                    let Type::Pointer { target, .. } = t.get(t.strip(ty)) else {
                        return Err(format!(
                            "'->{name}' in {expr:?}: {so_far} ({}) is not a pointer{}",
                            t.name(ty),
                            if matches!(t.get(t.strip(ty)), Type::Struct { .. }) {
                                format!(": use {so_far}.{name}")
                            } else {
                                String::new()
                            }
                        ));
                    };
                    deref(&mut chain, &mut offset, &mut in_hand);
                    ty = *target;
                } else if in_hand {
                    return Err(format!("{so_far} is a pointer: use {so_far}->{name}"));
                }
                let Type::Struct { members, .. } = t.get(t.strip(ty)) else {
                    let hint = match t.get(t.strip(ty)) {
                        Type::Pointer { .. } => format!(" (a pointer: use {so_far}->{name})"),
                        Type::Array { .. } => format!(" (an array: index it, {so_far}[0].{name})"),
                        _ => String::new(),
                    };
                    return Err(format!(
                        "'{name}' in {expr:?}: {so_far} ({}) has no members{hint}",
                        t.name(ty)
                    ));
                };
                let Some(mem) = members.iter().find(|mm| &mm.name == name) else {
                    let names: Vec<&str> = members.iter().map(|mm| mm.name.as_str()).collect();
                    return Err(format!(
                        "{} has no member {name:?}; its members are {}",
                        t.name(ty),
                        names.join(", ")
                    ));
                };
                if mem.bits.is_some() {
                    return Err(format!(
                        "'{name}' in {expr:?} is a bitfield, which shares its bytes with other members: \
                         read the struct that holds it instead (its bitfields are decoded there)"
                    ));
                }
                offset += mem.offset as i64;
                ty = mem.ty;
            }
            Step::Index(_) | Step::Slice(..) => {
                let (elem, count) = match t.get(t.strip(ty)) {
                    Type::Array { elem, count } => (*elem, *count),
                    Type::Pointer { target, .. } => {
                        deref(&mut chain, &mut offset, &mut in_hand);
                        (*target, None)
                    }
                    _ => {
                        return Err(format!(
                            "{step} in {expr:?}: {so_far} ({}) is neither an array nor a pointer, so it cannot be indexed",
                            t.name(ty)
                        ));
                    }
                };
                let esize = t.size_of(elem).filter(|s| *s > 0).ok_or_else(|| {
                    format!(
                        "{step} in {expr:?}: the size of {so_far}'s elements ({}) is unknown",
                        t.name(elem)
                    )
                })?;
                let bounds = |n: u64| {
                    format!(
                        "{so_far} has {n} element{}{}",
                        if n == 1 { "" } else { "s" },
                        if n == 0 {
                            String::new()
                        } else {
                            format!(" (0..{})", n - 1)
                        }
                    )
                };
                let (first, n) = match *step {
                    Step::Index(i) => {
                        if let Some(n) = count.filter(|n| i >= *n) {
                            return Err(format!(
                                "{step} in {expr:?} is past the end: {}",
                                bounds(n)
                            ));
                        }
                        (i, None)
                    }
                    Step::Slice(a, b) => {
                        let a = a.unwrap_or(0);
                        let b = match (b, count) {
                            (Some(b), Some(n)) if b > n => {
                                let fits = if a < n {
                                    format!("; {so_far}[{a}:{n}] reads to the end")
                                } else {
                                    String::new()
                                };
                                return Err(format!(
                                    "{step} in {expr:?} ends past the end: {}{fits}",
                                    bounds(n)
                                ));
                            }
                            (Some(b), _) => b,
                            (None, Some(n)) if a < n => n,
                            (None, Some(n)) => {
                                return Err(format!(
                                    "{step} in {expr:?} starts past the end: {}",
                                    bounds(n)
                                ));
                            }
                            (None, None) => {
                                return Err(format!(
                                    "{step} in {expr:?}: {so_far} has no known length (a pointer or T[]), so a slice needs its end, e.g. {so_far}[{a}:{}]",
                                    a + 10
                                ));
                            }
                        };
                        slice = Some(a..b);
                        (a, Some((b - a).min(ARRAY_MAX)))
                    }
                    Step::Field { .. } => unreachable!("matched above"),
                };
                let delta = first
                    .checked_mul(esize)
                    .and_then(|d| i64::try_from(d).ok())
                    .and_then(|d| offset.checked_add(d))
                    .ok_or_else(|| format!("{step} in {expr:?}: the offset overflows"))?;
                offset = delta;
                ty = elem;
                if let Some(n) = n {
                    let (id, table) = array_of(elem, n)?;
                    chain.last_mut().expect("non-empty").1 += offset;
                    return finish(label, chain, id, table, module, slice);
                }
            }
        }
        so_far.push_str(&step.to_string());
        if chain.len() > MAX_DEREFS + 1 {
            return Err(format!(
                "{expr:?} goes through more than {MAX_DEREFS} pointers"
            ));
        }
    }
    if in_hand {
        return Err(format!(
            "{so_far} is held in a register here; read it without members"
        ));
    }
    chain.last_mut().expect("non-empty").1 += offset;
    finish(label, chain, ty, types, module, None)
}

fn finish(
    label: &str,
    chain: Vec<(u64, i64)>,
    ty: TypeId,
    types: Arc<TypeTable>,
    module: u32,
    slice: Option<std::ops::Range<u64>>,
) -> Result<WatchSpec, String> {
    let size = types.size_of(ty).unwrap_or(8);
    let string = match types.get(types.strip(ty)) {
        Type::Pointer { target, .. } => matches!(
            types.get(types.strip(*target)),
            Type::Int {
                size: 1,
                is_char: true,
                ..
            }
        ),
        _ => false,
    };
    Ok(WatchSpec {
        label: label.to_string(),
        chain,
        size,
        ty: WatchType::Typed(ty, types, module),
        string,
        slice,
    })
}

/// The path of element `i` of the array `names` names: `a[2:5]`'s element
/// 0 is `a[2]`, other arrays' are `a[0]`.
pub fn element_path(names: &str, i: u64) -> String {
    match slice_suffix(names) {
        Some((base, start)) => format!("{base}[{}]", start + i),
        None => format!("{names}[{i}]"),
    }
}

/// How to name any element of the array `names` names (`a[i]`, also for a slice of `a`).
pub fn any_element(names: &str) -> String {
    format!("{}[i]", slice_suffix(names).map_or(names, |(base, _)| base))
}

/// A path ending in a slice: (the path before it, the slice's start).
fn slice_suffix(names: &str) -> Option<(&str, u64)> {
    let body = names.strip_suffix(']')?;
    let open = body.rfind('[')?;
    let (a, _) = body[open + 1..].split_once(':')?;
    let a = a.trim();
    let start = if a.is_empty() { 0 } else { a.parse().ok()? };
    Some((&names[..open], start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(arrow: bool, name: &str) -> Step {
        Step::Field {
            arrow,
            name: name.into(),
        }
    }

    #[test]
    fn paths_parse_with_indices_and_slices() {
        assert_eq!(
            parse_chain("g_store.spare[12].name").unwrap(),
            (
                "g_store".into(),
                vec![field(false, "spare"), Step::Index(12), field(false, "name")]
            )
        );
        assert_eq!(
            parse_chain(" p->items[0x3] .name ").unwrap(),
            (
                "p".into(),
                vec![field(true, "items"), Step::Index(3), field(false, "name")]
            )
        );
        assert_eq!(
            parse_chain("grid[1][2]").unwrap().1,
            [Step::Index(1), Step::Index(2)]
        );
        assert_eq!(
            parse_chain("arr[2:5]").unwrap().1,
            [Step::Slice(Some(2), Some(5))]
        );
        assert_eq!(
            parse_chain("arr[:5]").unwrap().1,
            [Step::Slice(None, Some(5))]
        );
        assert_eq!(
            parse_chain("arr[ 2 : ]").unwrap().1,
            [Step::Slice(Some(2), None)]
        );
        assert_eq!(parse_chain("ns::g").unwrap(), ("ns::g".into(), vec![]));
        let (n, s) = parse_chain("a->b[1].c[2:4]").unwrap();
        assert_eq!(path_text(&n, &s), "a->b[1].c[2:4]");
    }

    #[test]
    fn bad_paths_say_the_accepted_syntax() {
        for bad in [
            "arr[-1]", "arr[i]", "arr[1.5]", "arr[]", "arr[2", "arr[1]x", "a.", "[3]", "a..b",
        ] {
            let e = parse_chain(bad).unwrap_err();
            assert!(e.contains("[start:end]"), "{bad}: {e}");
        }
        assert!(
            parse_chain("arr[-1]")
                .unwrap_err()
                .contains("bad index \"-1\"")
        );
        assert!(parse_chain("arr[5:2]").unwrap_err().contains("empty slice"));
        assert!(
            parse_chain("arr[2:5].x")
                .unwrap_err()
                .contains("must end the path")
        );
        assert!(
            parse_chain("a->b->c->d->e->f")
                .unwrap_err()
                .contains("more than 4")
        );
    }

    #[test]
    fn slice_paths_name_their_elements() {
        assert_eq!(element_path("g.spare", 3), "g.spare[3]");
        assert_eq!(element_path("g.spare[2:5]", 1), "g.spare[3]");
        assert_eq!(element_path("g.spare[:5]", 1), "g.spare[1]");
        assert_eq!(any_element("g.spare[2:5]"), "g.spare[i]");
        assert_eq!(any_element("g.spare"), "g.spare[i]");
        assert_eq!(any_element("g.spare[1]"), "g.spare[1][i]");
    }

    /// `struct account { const char *name; int balance; }`,
    /// `struct store { int count; struct account spare[4]; struct account *items; }`.
    fn store_types() -> (Arc<TypeTable>, TypeId, TypeId) {
        let mut t = TypeTable::default();
        let ch = t.push(Type::Int {
            name: "char".into(),
            size: 1,
            signed: true,
            is_char: true,
        });
        let int = t.push(Type::Int {
            name: "int".into(),
            size: 4,
            signed: true,
            is_char: false,
        });
        let name = t.push(Type::Pointer {
            target: ch,
            reference: false,
        });
        let account = t.push(Type::Struct {
            name: "account".into(),
            size: 16,
            members: vec![
                strobe_symbols::Member {
                    name: "name".into(),
                    offset: 0,
                    ty: name,
                    bits: None,
                },
                strobe_symbols::Member {
                    name: "balance".into(),
                    offset: 8,
                    ty: int,
                    bits: None,
                },
            ],
            is_union: false,
            by_reference: false,
        });
        let spare = t.push(Type::Array {
            elem: account,
            count: Some(4),
        });
        let items = t.push(Type::Pointer {
            target: account,
            reference: false,
        });
        let store = t.push(Type::Struct {
            name: "store".into(),
            size: 80,
            members: vec![
                strobe_symbols::Member {
                    name: "count".into(),
                    offset: 0,
                    ty: int,
                    bits: None,
                },
                strobe_symbols::Member {
                    name: "spare".into(),
                    offset: 8,
                    ty: spare,
                    bits: None,
                },
                strobe_symbols::Member {
                    name: "items".into(),
                    offset: 72,
                    ty: items,
                    bits: None,
                },
            ],
            is_union: false,
            by_reference: false,
        });
        let store_ptr = t.push(Type::Pointer {
            target: store,
            reference: false,
        });
        (Arc::new(t), store, store_ptr)
    }

    fn resolve(expr: &str, start: Start, types: &Arc<TypeTable>) -> Result<WatchSpec, String> {
        let (_, steps) = parse_chain(expr)?;
        chain_spec(
            expr,
            expr,
            start,
            types.clone(),
            0,
            &steps,
            &mut array_in_copy(types),
        )
    }

    #[test]
    fn indices_are_offsets_and_pointer_indices_dereference() {
        let (t, store, store_ptr) = store_types();
        let at = Start::At(0x1000, store);
        // spare[2].balance: 8 + 2 × 16 + 8.
        let s = resolve("g.spare[2].balance", at, &t).unwrap();
        assert_eq!((s.chain, s.size), (vec![(0x1000, 48)], 4));
        assert_eq!(s.slice, None);
        // The name is a char *: its string is read.
        assert!(resolve("g.spare[3].name", at, &t).unwrap().string);
        // items[2].balance: read items (at 72), then 2 × 16 + 8 from where it points.
        let s = resolve("g.items[2].balance", at, &t).unwrap();
        assert_eq!(s.chain, vec![(0x1000, 72), (0, 40)]);
        // Through a pointer to the store: p->spare[1] reads p, then offsets.
        let p = Start::At(0x2000, store_ptr);
        let s = resolve("p->spare[1]", p, &t).unwrap();
        assert_eq!((s.chain, s.size), (vec![(0x2000, 0), (0, 24)], 16));
        // p[0].count: indexing a pointer dereferences it.
        let s = resolve("p[0].count", p, &t).unwrap();
        assert_eq!(s.chain, vec![(0x2000, 0), (0, 0)]);
        // A pointer held in a register: its first step goes through it without a read.
        let reg = Start::Pointer(0x3000, store_ptr);
        let s = resolve("p->spare[1].balance", reg, &t).unwrap();
        assert_eq!(s.chain, vec![(0x3000, 32)]);
        let s = resolve("p[1]", reg, &t).unwrap();
        assert_eq!((s.chain, s.size), (vec![(0x3000, 80)], 80));
        assert!(
            resolve("p.count", reg, &t)
                .unwrap_err()
                .contains("use p->count")
        );
    }

    #[test]
    fn slices_read_a_range_as_an_array_cut_at_the_cap() {
        let (t, store, _) = store_types();
        let at = Start::At(0x1000, store);
        let s = resolve("g.spare[1:3]", at, &t).unwrap();
        assert_eq!(
            (s.chain.clone(), s.size, s.slice.clone()),
            (vec![(0x1000, 24)], 32, Some(1..3))
        );
        assert_eq!(crate::type_name(&s.ty), "account[2]");
        let s = resolve("g.spare[1:]", at, &t).unwrap();
        assert_eq!((s.size, s.slice), (48, Some(1..4)));
        // Through a pointer the end is needed, and a long slice is cut to ARRAY_MAX.
        let s = resolve("g.items[5:500]", at, &t).unwrap();
        assert_eq!(s.chain, vec![(0x1000, 72), (0, 80)]);
        assert_eq!((s.size, s.slice), (16 * ARRAY_MAX, Some(5..500)));
        assert!(
            resolve("g.items[5:]", at, &t)
                .unwrap_err()
                .contains("needs its end, e.g. g.items[5:15]")
        );
    }

    #[test]
    fn bounds_and_kinds_are_checked() {
        let (t, store, _) = store_types();
        let at = Start::At(0x1000, store);
        let e = resolve("g.spare[4]", at, &t).unwrap_err();
        assert_eq!(
            e,
            "[4] in \"g.spare[4]\" is past the end: g.spare has 4 elements (0..3)"
        );
        let e = resolve("g.spare[2:9]", at, &t).unwrap_err();
        assert!(
            e.contains("ends past the end: g.spare has 4 elements (0..3)"),
            "{e}"
        );
        let e = resolve("g.spare[4:]", at, &t).unwrap_err();
        assert!(e.contains("starts past the end"), "{e}");
        let e = resolve("g.count[1]", at, &t).unwrap_err();
        assert!(
            e.contains("g.count (int) is neither an array nor a pointer, so it cannot be indexed"),
            "{e}"
        );
        let e = resolve("g.spare.name", at, &t).unwrap_err();
        assert!(e.contains("an array: index it, g.spare[0].name"), "{e}");
        let e = resolve("g->count", at, &t).unwrap_err();
        assert!(e.contains("not a pointer: use g.count"), "{e}");
    }
}
