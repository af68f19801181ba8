//! Decoding a captured payload into typed JSON with the plan it was
//! captured with (cycles marked by address, unreadable memory said).

use crate::memory::*;
use crate::place::*;
use crate::plan::*;
use crate::wire::*;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use strobe_symbols::{Type, TypeId, TypeTable};

impl FunctionPlan {
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
    pub(crate) fn with_exprs(
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

    pub(crate) fn watch_values(&self, blocks: &[Block<'_>], enter: bool) -> Option<Value> {
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

#[derive(Debug, Clone, Copy)]
pub(crate) struct Block<'a> {
    pub(crate) addr: u64,
    pub(crate) status: u32,
    pub(crate) data: &'a [u8],
}

/// Ends a payload that carries expression watch values: the JSON object of
/// values, then u32 its length, then u32 this magic.
pub(crate) const EXPR_MAGIC: u32 = 0x5250_5845;

/// Splits the expression watch values off the end of a payload body.
pub(crate) fn split_exprs(body: &[u8]) -> (&[u8], Option<Map<String, Value>>) {
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

pub(crate) fn parse_blocks(mut b: &[u8], n: usize) -> Vec<Block<'_>> {
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

pub(crate) fn status_text(status: u32, addr: u64) -> Value {
    match status {
        ST_NULL => Value::Null,
        ST_UNREADABLE => json!(format!("<unreadable {addr:#x}>")),
        ST_NO_PARENT => json!("<not captured: the pointer before it was unreadable>"),
        _ => json!(format!(
            "<not captured: record size limit reached at {addr:#x}>"
        )),
    }
}

pub(crate) struct Ctx<'a> {
    pub(crate) types: &'a TypeTable,
    pub(crate) nodes: &'a [Node],
    pub(crate) blocks: &'a [Block<'a>],
    pub(crate) keys: &'a HashMap<(u16, u8, u64), u16>,
}

pub(crate) fn le(bytes: &[u8], size: usize) -> u64 {
    let mut b = [0u8; 8];
    let n = size.min(8).min(bytes.len());
    b[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(b)
}

pub(crate) fn sign_extend(v: u64, size: usize) -> i64 {
    if size >= 8 {
        return v as i64;
    }
    let shift = 64 - size * 8;
    ((v << shift) as i64) >> shift
}

pub(crate) fn float_json(f: f64) -> Value {
    if f.is_finite() {
        json!(f)
    } else {
        json!(f.to_string())
    }
}

/// A string read from the target: bytes that are not UTF-8 are shown as
/// `\xNN` (a lossy U+FFFD would hide which bytes they were); `…` marks a
/// string cut at the read limit.
pub fn text(data: &[u8], cut: bool) -> Value {
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
    pub(crate) fn by_node(&self, ty: TypeId, key: (u16, u8, u64), depth: u32, name: &str) -> Value {
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
    pub(crate) fn cut_array(&self, elem: TypeId, n: u64, origin: Origin, path: &Trail) -> String {
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

    pub(crate) fn render(
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

    pub(crate) fn node_flags(&self, idx: u16) -> u8 {
        self.nodes.get(idx as usize).map_or(0, |n| n.flags)
    }
}
