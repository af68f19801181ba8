//! Python values in trace records: the payload the agent's Python tracer
//! writes (agent/src/tracers/python/cmodule.ts) → JSON.
//!
//! Unlike a native capture, a Python payload describes itself (argument
//! names and value types are in it), so it needs no plan to be read, by
//! this daemon or a later one. Layout (little-endian):
//!
//! `u32 0xFFFF (PY_PAYLOAD_MARK), u32 length, u8 version (2), u8 what`, then
//! for `what` 0 (enter) `u8 count`, the arguments' `count` names, then their
//! `count` values (version 1, in sessions stored before: per argument
//! `name, value`); 1
//! (return) `value`; 2 (exception) `name` of its type and `value` (its
//! `args`, or the message when it was never instantiated); 3 (uncaught) as
//! 2, then `u32 frames, u32 omitted` and per traceback entry (outermost
//! first) `name` function, `name` file, `u32 line`, `value` locals; 4
//! (thread name) `name`; 5 (a function matched at run time) `name` full
//! name, `name` file, `u32 line`; 6 (a paused thread) `u32 frames` and per
//! frame (innermost first) `name` function, `name` file, `u32 line`, then
//! `value` the paused frame's locals (a dict); 7 (a global read) `u8
//! status` (0 read, 1 no module, 2 no such name), `name`, `value`; 8 (an
//! exception raised in a traced function) as 2, then `u32 line`. An
//! exception exit (2) ends with `u8` 1 when it was raised in that frame.
//! Enter (0), return (1) and exception (2) payloads may end with the
//! call's watch values: `u8 count`, then `name` label and `value` each.
//!
//! A `name` is `u16 length` + UTF-8. A `value` is a tag byte and its body:
//! see [`Tag`]. Containers give their full size and how many items follow;
//! a value deeper than the depth limit is its type name and size only; a
//! payload that ran out of room ends with [`Tag::Cut`].
//!
//! Version 3 is the JavaScript tracer's: see [`JAVASCRIPT_VERSION`].
//!
//! This is the stored form. In the record ring the agent writes a more
//! compact one, which the daemon restores as it decodes: see [`ring_form`].

use serde_json::{Map, Value, json};

/// First word of a Python payload, where a native one has its plan id (a
/// plan id is a u16 counter and never reaches it).
pub const PY_PAYLOAD_MARK: u32 = 0xFFFF;

/// The version byte of the JavaScript tracer's payloads (agent/node/
/// preload.cjs): version 2's layout, with `undefined` ([`Tag::Undefined`])
/// and JavaScript's type names (`number`, `string`, `Array`, `Map`, a class
/// instance's constructor name).
pub const JAVASCRIPT_VERSION: u8 = 3;

/// Value tags, in the agent's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Tag {
    /// `None`.
    None = 0,
    /// `True`.
    True,
    /// `False`.
    False,
    /// An int that fits 64 bits: `i64`.
    Int,
    /// A larger int: `u8 negative, u64 bits`.
    BigInt,
    /// `f64`.
    Float,
    /// `u32 length in bytes, u32 bytes shown`, UTF-8.
    Str,
    /// `u32 length, u32 shown`, the bytes.
    Bytes,
    /// `u32 length, u32 shown`, items.
    List,
    /// As a list.
    Tuple,
    /// `u32 length, u32 shown`, key and value per item.
    Dict,
    /// As a list.
    Set,
    /// As a list.
    FrozenSet,
    /// `name` type, `u32 attributes, u32 shown`, `name` + value per attribute.
    Object,
    /// Past the depth limit: `name` type, `u64 size` (all ones: none).
    Deep,
    /// Nothing readable without running its code: `name` type, `u64 address`.
    Opaque,
    /// The payload ran out of room here.
    Cut,
    /// A subclass of int or str: `name` type, then the builtin value.
    Subclass,
    /// An exception instance: `name` type, then its `args`.
    Exception,
    /// A class: `name`.
    Class,
    /// A function: `name` (its qualified name).
    Function,
    /// JavaScript's `undefined` (`None` is its `null`).
    Undefined,
}

impl Tag {
    fn from_u8(b: u8) -> Option<Tag> {
        use Tag::*;
        const ALL: [Tag; 22] = [
            None, True, False, Int, BigInt, Float, Str, Bytes, List, Tuple, Dict, Set, FrozenSet,
            Object, Deep, Opaque, Cut, Subclass, Exception, Class, Function, Undefined,
        ];
        ALL.get(b as usize).copied()
    }
}

/// Is this stored capture a Python payload?
pub fn is_python(payload: &[u8]) -> bool {
    payload.len() >= 10 && payload[..4] == PY_PAYLOAD_MARK.to_le_bytes()
}

/// Decodes a Python enter payload into `{"arguments": [{name, type,
/// value}]}`, an exit into `{"returnValue": …, "returnType": …}` or
/// `{"exception": {"type", "message"?, "args"}}`.
pub fn decode(payload: &[u8]) -> Value {
    let mut r = Reader::new(payload);
    let mut out = Map::new();
    let version = payload.get(8).copied().unwrap_or(0);
    match r.u8() {
        Some(0) => {
            let n = r.u8().unwrap_or(0);
            let mut args = Vec::new();
            if version == 1 {
                for _ in 0..n {
                    let Some(name) = r.name() else { break };
                    let (ty, value) = r.typed();
                    args.push(json!({"name": name, "type": ty, "value": value}));
                }
            } else {
                let names: Vec<String> = (0..n).map_while(|_| r.name()).collect();
                for name in names {
                    let (ty, value) = r.typed();
                    args.push(json!({"name": name, "type": ty, "value": value}));
                }
            }
            out.insert("arguments".into(), Value::Array(args));
            r.watches(&mut out);
        }
        Some(1) => {
            let (ty, value) = r.typed();
            out.insert("returnValue".into(), value);
            out.insert("returnType".into(), Value::String(ty));
            r.watches(&mut out);
        }
        Some(what @ (2 | 3)) => {
            let ty = r.name().unwrap_or_else(|| "?".into());
            let (_, args) = r.typed();
            let mut e = Map::new();
            e.insert("type".into(), Value::String(ty));
            if let Some(m) = exception_message(&args) {
                e.insert("message".into(), Value::String(m));
            }
            e.insert("args".into(), args);
            out.insert("exception".into(), Value::Object(e));
            if what == 2 {
                let _raised_here = r.u8();
                r.watches(&mut out);
            }
            if what == 3 {
                let (n, skipped) = (r.u32().unwrap_or(0), r.u32().unwrap_or(0));
                let mut frames = Vec::new();
                for _ in 0..n {
                    let (Some(function), Some(file), Some(line)) = (r.name(), r.name(), r.u32())
                    else {
                        break;
                    };
                    let locals = r.value(0);
                    frames.push(
                        json!({"function": function, "file": file, "line": line, "locals": locals}),
                    );
                }
                out.insert("traceback".into(), Value::Array(frames));
                if skipped > 0 {
                    out.insert("tracebackOmitted".into(), json!(skipped));
                }
            }
        }
        _ => {
            out.insert("error".into(), json!("unreadable Python payload"));
        }
    }
    Value::Object(out)
}

/// The message of an exception whose args are one string (or a bare
/// string: an exception set from C and never instantiated).
fn exception_message(args: &Value) -> Option<String> {
    match args {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) if a.len() == 1 => a[0].as_str().map(str::to_string),
        _ => None,
    }
}

/// The thread name a `what` 4 payload carries (threading's name of the
/// thread that wrote it).
pub fn thread_name(payload: &[u8]) -> Option<String> {
    let mut r = Reader::new(payload);
    if r.u8()? != 4 {
        return None;
    }
    r.name()
}

/// The function a `what` 5 payload defines: its full name, file and line.
pub fn defined_function(payload: &[u8]) -> Option<(String, String, u32)> {
    let mut r = Reader::new(payload);
    if r.u8()? != 5 {
        return None;
    }
    Some((r.name()?, r.name()?, r.u32()?))
}

/// Where a paused Python thread is (a `what` 6 payload): its frames,
/// innermost first, as `{function, file, line}`, and the paused frame's
/// locals as `{name, type, value}` (with a last `{"name": "…", "omitted":
/// N}` when the payload held only some).
pub fn paused(payload: &[u8]) -> Option<(Vec<Value>, Vec<Value>)> {
    let mut r = Reader::new(payload);
    if r.u8()? != 6 {
        return None;
    }
    let n = r.u32()?;
    let mut frames = Vec::new();
    for _ in 0..n {
        let (function, file, line) = (r.name()?, r.name()?, r.u32()?);
        frames.push(json!({"function": function, "file": file, "line": line}));
    }
    let mut locals = Vec::new();
    if r.u8().and_then(Tag::from_u8) == Some(Tag::Dict) {
        let (total, shown) = (r.u32()?, r.u32()?);
        for _ in 0..shown {
            let name = match r.value(1) {
                Value::String(s) => s,
                other => other.to_string(),
            };
            let (ty, value) = r.typed();
            locals.push(json!({"name": name, "type": ty, "value": value}));
        }
        if total > shown {
            locals.push(json!({"name": "…", "omitted": total - shown}));
        }
    }
    Some((frames, locals))
}

/// A global read (a `what` 7 payload): `Ok((type, value))`, or
/// `Err((status, name))` with status 1 (no module of that name is loaded)
/// or 2 (no such name; `name` is where the lookup stopped).
#[allow(clippy::type_complexity)]
pub fn global(payload: &[u8]) -> Option<Result<(String, Value), (u8, String)>> {
    let mut r = Reader::new(payload);
    if r.u8()? != 7 {
        return None;
    }
    let status = r.u8()?;
    let name = r.name()?;
    if status != 0 {
        return Some(Err((status, name)));
    }
    Some(Ok(r.typed()))
}

/// The exception type and message of an exit payload that raised.
pub fn exception_of(payload: &[u8]) -> Option<(String, Option<String>)> {
    let v = decode(payload);
    let e = v.get("exception")?;
    Some((
        e.get("type")?.as_str()?.to_string(),
        e.get("message").and_then(Value::as_str).map(str::to_string),
    ))
}

/// Whether an exit payload's exception was raised in the frame it left
/// (then a `what` 8 record reported it where it was raised).
pub fn raised_in_frame(payload: &[u8]) -> bool {
    let mut r = Reader::new(payload);
    if r.u8() != Some(2) {
        return false;
    }
    let _ = r.name();
    let _ = r.typed();
    !r.cut && r.u8() == Some(1)
}

/// An exception raised in a traced function (a `what` 8 payload): its
/// type, message and the line it was raised at.
pub fn raised(payload: &[u8]) -> Option<(String, Option<String>, u32)> {
    let mut r = Reader::new(payload);
    if r.u8()? != 8 {
        return None;
    }
    let ty = r.name()?;
    let (_, args) = r.typed();
    let line = r.u32()?;
    Some((ty, exception_message(&args), line))
}

/// The return value of an exit payload as the chunk indexes compare it
/// (see `strobe_core::event::FLAG_VALUE_TYPED`): ints as i64 bits, floats
/// as f64 bits, bools 0/1, None 0; `None` for anything else.
pub fn return_key(payload: &[u8]) -> Option<u64> {
    let mut r = Reader::new(payload);
    if r.u8()? != 1 {
        return None;
    }
    match Tag::from_u8(r.u8()?)? {
        Tag::Int => r.u64(),
        Tag::Float => r.u64(),
        Tag::True => Some(1),
        Tag::False | Tag::None => Some(0),
        _ => None,
    }
}

mod reader;
pub mod ring_form;
#[cfg(test)]
mod tests;

use reader::Reader;
