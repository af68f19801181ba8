//! Values read from memory outside a traced call (debug_memory, watches
//! by hint): rendering, type names and encoding a value to write.

use crate::decode::*;
use crate::place::*;
use crate::plan::*;
use serde_json::{Value, json};
use std::collections::HashMap;
use strobe_symbols::Type;

pub(crate) fn hex(bytes: &[u8]) -> String {
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
