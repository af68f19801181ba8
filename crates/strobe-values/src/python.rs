//! Python values in trace records: the payload the agent's Python tracer
//! writes (agent/src/tracers/python/cmodule.ts) → JSON.
//!
//! Unlike a native capture, a Python payload describes itself (argument
//! names and value types are in it), so it needs no plan to be read, by
//! this daemon or a later one. Layout (little-endian):
//!
//! `u32 0xFFFF (PY_PAYLOAD_MARK), u32 length, u8 version (1), u8 what`, then
//! for `what` 0 (enter) `u8 count` and per argument `name, value`; 1
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

use serde_json::{Map, Value, json};

/// First word of a Python payload, where a native one has its plan id (a
/// plan id is a u16 counter and never reaches it).
pub const PY_PAYLOAD_MARK: u32 = 0xFFFF;

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
}

impl Tag {
    fn from_u8(b: u8) -> Option<Tag> {
        use Tag::*;
        const ALL: [Tag; 21] = [
            None, True, False, Int, BigInt, Float, Str, Bytes, List, Tuple, Dict, Set, FrozenSet,
            Object, Deep, Opaque, Cut, Subclass, Exception, Class, Function,
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
    match r.u8() {
        Some(0) => {
            let n = r.u8().unwrap_or(0);
            let mut args = Vec::new();
            for _ in 0..n {
                let Some(name) = r.name() else { break };
                let (ty, value) = r.typed();
                args.push(json!({"name": name, "type": ty, "value": value}));
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

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
    cut: bool,
}

/// Containers deeper than this in a payload are not followed (the agent's
/// depth limit is far lower: this guards against a corrupt payload).
const MAX_NESTING: usize = 64;

impl<'a> Reader<'a> {
    /// Past the header; the body ends at the payload's recorded length.
    fn new(payload: &'a [u8]) -> Self {
        let len = payload
            .get(4..8)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
            .unwrap_or(0)
            .min(payload.len());
        Reader {
            data: payload.get(..len).unwrap_or(&[]),
            at: 9,
            cut: false,
        }
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.data.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4")))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8")))
    }
    fn name(&mut self) -> Option<String> {
        let n = u16::from_le_bytes(self.take(2)?.try_into().expect("2")) as usize;
        Some(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    /// A value and its Python type name.
    fn typed(&mut self) -> (String, Value) {
        let at = self.at;
        let ty = self.data.get(at).and_then(|b| Tag::from_u8(*b));
        let value = self.value(0);
        let name = match ty {
            Some(Tag::None) => "NoneType".to_string(),
            Some(Tag::True | Tag::False) => "bool".into(),
            Some(Tag::Int | Tag::BigInt) => "int".into(),
            Some(Tag::Float) => "float".into(),
            Some(Tag::Str) => "str".into(),
            Some(Tag::Bytes) => "bytes".into(),
            Some(Tag::List) => "list".into(),
            Some(Tag::Tuple) => "tuple".into(),
            Some(Tag::Dict) => "dict".into(),
            Some(Tag::Set) => "set".into(),
            Some(Tag::FrozenSet) => "frozenset".into(),
            Some(Tag::Class) => "type".into(),
            Some(Tag::Function) => "function".into(),
            _ => {
                // Object, Deep, Opaque, Subclass, Exception: the type name follows the tag.
                let mut peek = Reader {
                    data: self.data,
                    at: at + 1,
                    cut: false,
                };
                peek.name().unwrap_or_else(|| "?".into())
            }
        };
        (name, value)
    }

    /// The optional watch section after a call's values: `u8 count`, then
    /// `name` label and `value` each, as `watchValues` {label: value}.
    fn watches(&mut self, out: &mut Map<String, Value>) {
        if self.cut || self.at >= self.data.len() {
            return;
        }
        let Some(n) = self.u8() else { return };
        let mut w = Map::new();
        for _ in 0..n {
            let Some(label) = self.name() else { break };
            let v = self.value(0);
            w.insert(label, v);
        }
        if !w.is_empty() {
            out.insert("watchValues".into(), Value::Object(w));
        }
    }

    fn value(&mut self, nesting: usize) -> Value {
        if self.cut {
            return Value::Null;
        }
        let Some(tag) = self.u8().and_then(Tag::from_u8) else {
            self.cut = true;
            return json!("<unreadable>");
        };
        if nesting > MAX_NESTING {
            self.cut = true;
            return json!("<nested too deep>");
        }
        let items = |r: &mut Self| -> (u32, u32) { (r.u32().unwrap_or(0), r.u32().unwrap_or(0)) };
        let more = |total: u32, shown: u32| format!("… {} more", total - shown);
        match tag {
            Tag::None => Value::Null,
            Tag::True => Value::Bool(true),
            Tag::False => Value::Bool(false),
            Tag::Int => json!(self.u64().unwrap_or(0) as i64),
            Tag::BigInt => {
                let neg = self.u8().unwrap_or(0) != 0;
                let bits = self.u64().unwrap_or(0);
                json!(format!(
                    "<{}int of {bits} bits>",
                    if neg { "negative " } else { "" }
                ))
            }
            Tag::Float => {
                let f = f64::from_bits(self.u64().unwrap_or(0));
                serde_json::Number::from_f64(f).map_or_else(|| json!(f.to_string()), Value::Number)
            }
            Tag::Str | Tag::Bytes => {
                let (total, shown) = items(self);
                let bytes = self.take(shown as usize).unwrap_or(&[]);
                let mut s = if tag == Tag::Str {
                    String::from_utf8_lossy(bytes).into_owned()
                } else {
                    bytes_literal(bytes)
                };
                if total > shown {
                    s.push_str(&format!("… ({total} bytes)"));
                }
                Value::String(s)
            }
            Tag::List | Tag::Tuple | Tag::Set | Tag::FrozenSet => {
                let (total, shown) = items(self);
                let mut out: Vec<Value> = (0..shown).map(|_| self.value(nesting + 1)).collect();
                if total > shown {
                    out.push(json!(more(total, shown)));
                }
                Value::Array(out)
            }
            Tag::Dict => {
                let (total, shown) = items(self);
                let mut m = Map::new();
                for _ in 0..shown {
                    let k = self.value(nesting + 1);
                    let v = self.value(nesting + 1);
                    let key = match k {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    m.insert(key, v);
                }
                if total > shown {
                    m.insert("…".into(), json!(more(total, shown)));
                }
                Value::Object(m)
            }
            Tag::Object => {
                let ty = self.name().unwrap_or_default();
                let (total, shown) = items(self);
                let mut m = Map::new();
                m.insert("$type".into(), Value::String(ty));
                for _ in 0..shown {
                    let k = self.name().unwrap_or_default();
                    let v = self.value(nesting + 1);
                    m.insert(k, v);
                }
                if total > shown {
                    m.insert("…".into(), json!(more(total, shown)));
                }
                Value::Object(m)
            }
            Tag::Deep => {
                let ty = self.name().unwrap_or_default();
                match self.u64().unwrap_or(u64::MAX) {
                    u64::MAX => json!(format!("<{ty}: deeper than serializationDepth>")),
                    n => json!(format!("<{ty} of {n}: deeper than serializationDepth>")),
                }
            }
            Tag::Opaque => {
                let ty = self.name().unwrap_or_default();
                let addr = self.u64().unwrap_or(0);
                json!(format!("<{ty} object at {addr:#x}>"))
            }
            Tag::Cut => {
                self.cut = true;
                json!("<cut: the call's values exceed one record>")
            }
            Tag::Subclass => {
                let ty = self.name().unwrap_or_default();
                json!({"$type": ty, "value": self.value(nesting + 1)})
            }
            Tag::Exception => {
                let ty = self.name().unwrap_or_default();
                json!({"$type": ty, "args": self.value(nesting + 1)})
            }
            Tag::Class => json!(format!("<class {}>", self.name().unwrap_or_default())),
            Tag::Function => json!(format!("<function {}>", self.name().unwrap_or_default())),
        }
    }
}

/// Bytes as Python writes a bytes literal: `b'a\x00'`.
fn bytes_literal(b: &[u8]) -> String {
    let mut s = String::from("b'");
    for &c in b {
        match c {
            b'\\' => s.push_str("\\\\"),
            b'\'' => s.push_str("\\'"),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s.push('\'');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    struct W(Vec<u8>);
    impl W {
        fn new(what: u8) -> Self {
            let mut v = Vec::new();
            v.extend_from_slice(&PY_PAYLOAD_MARK.to_le_bytes());
            v.extend_from_slice(&0u32.to_le_bytes());
            v.extend_from_slice(&[1, what]);
            W(v)
        }
        fn u8(mut self, b: u8) -> Self {
            self.0.push(b);
            self
        }
        fn u32(mut self, v: u32) -> Self {
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        fn u64(mut self, v: u64) -> Self {
            self.0.extend_from_slice(&v.to_le_bytes());
            self
        }
        fn name(mut self, s: &str) -> Self {
            self.0.extend_from_slice(&(s.len() as u16).to_le_bytes());
            self.0.extend_from_slice(s.as_bytes());
            self
        }
        fn raw(mut self, b: &[u8]) -> Self {
            self.0.extend_from_slice(b);
            self
        }
        fn done(mut self) -> Vec<u8> {
            let n = self.0.len() as u32;
            self.0[4..8].copy_from_slice(&n.to_le_bytes());
            self.0
        }
    }

    #[test]
    fn a_pause_decodes_frames_and_typed_locals() {
        let key = |w: W, k: &str| {
            w.u8(Tag::Str as u8)
                .u32(k.len() as u32)
                .u32(k.len() as u32)
                .raw(k.as_bytes())
        };
        let w = W::new(6)
            .u32(2)
            .name("compute")
            .name("/app/a.py")
            .u32(20)
            .name("<module>")
            .name("/app/a.py")
            .u32(31)
            .u8(Tag::Dict as u8)
            .u32(3)
            .u32(2);
        let w = key(w, "x").u8(Tag::Int as u8).u64(6);
        let p = key(w, "ok").u8(Tag::True as u8).done();
        let (frames, locals) = paused(&p).expect("a pause");
        assert_eq!(
            frames,
            [
                json!({"function": "compute", "file": "/app/a.py", "line": 20}),
                json!({"function": "<module>", "file": "/app/a.py", "line": 31})
            ]
        );
        assert_eq!(
            locals,
            [
                json!({"name": "x", "type": "int", "value": 6}),
                json!({"name": "ok", "type": "bool", "value": true}),
                json!({"name": "…", "omitted": 1})
            ]
        );
        assert!(paused(&W::new(4).name("t").done()).is_none());
    }

    #[test]
    fn a_global_read_decodes_its_value_or_why_not() {
        let ok = W::new(7)
            .u8(0)
            .name("shop.LIMIT")
            .u8(Tag::Int as u8)
            .u64(5)
            .done();
        assert_eq!(global(&ok), Some(Ok(("int".to_string(), json!(5)))));
        let missing = W::new(7).u8(2).name("NOPE").u8(Tag::None as u8).done();
        assert_eq!(global(&missing), Some(Err((2, "NOPE".to_string()))));
    }

    #[test]
    fn raises_and_watch_values_decode() {
        let raised_here = W::new(8)
            .name("ValueError")
            .u8(Tag::Str as u8)
            .u32(3)
            .u32(3)
            .raw(b"bad")
            .u32(28)
            .done();
        assert_eq!(
            raised(&raised_here),
            Some(("ValueError".to_string(), Some("bad".to_string()), 28))
        );
        let left = |origin: u8| {
            W::new(2)
                .name("KeyError")
                .u8(Tag::None as u8)
                .u8(origin)
                .u8(1)
                .name("twice")
                .u8(Tag::Int as u8)
                .u64(6)
                .done()
        };
        assert!(raised_in_frame(&left(1)));
        assert!(!raised_in_frame(&left(0)));
        assert_eq!(decode(&left(0))["watchValues"], json!({"twice": 6}));
        let ret = W::new(1)
            .u8(Tag::Int as u8)
            .u64(3)
            .u8(1)
            .name("w")
            .u8(Tag::True as u8)
            .done();
        let v = decode(&ret);
        assert_eq!(v["returnValue"], 3);
        assert_eq!(v["watchValues"], json!({"w": true}));
        assert!(
            decode(&W::new(1).u8(Tag::None as u8).done())
                .get("watchValues")
                .is_none()
        );
    }

    #[test]
    fn arguments_decode_with_names_and_types() {
        let p = W::new(0)
            .u8(3)
            .name("item")
            .u8(Tag::Object as u8)
            .name("Item")
            .u32(2)
            .u32(2)
            .name("name")
            .u8(Tag::Str as u8)
            .u32(6)
            .u32(6)
            .raw(b"widget")
            .name("tags")
            .u8(Tag::List as u8)
            .u32(30)
            .u32(1)
            .u8(Tag::Int as u8)
            .u64(7)
            .name("percent")
            .u8(Tag::Float as u8)
            .u64(15.5f64.to_bits())
            .name("k")
            .u8(Tag::Bytes as u8)
            .u32(2)
            .u32(2)
            .raw(&[0, 0xff])
            .done();
        assert!(is_python(&p));
        let v = decode(&p);
        let args = v["arguments"].as_array().unwrap();
        assert_eq!(args[0]["name"], "item");
        assert_eq!(args[0]["type"], "Item");
        assert_eq!(args[0]["value"]["$type"], "Item");
        assert_eq!(args[0]["value"]["name"], "widget");
        assert_eq!(args[0]["value"]["tags"], json!([7, "… 29 more"]));
        assert_eq!(args[1]["value"], json!(15.5));
        assert_eq!(args[2]["value"], json!("b'\\x00\\xff'"));
    }

    #[test]
    fn exits_give_values_keys_and_exceptions() {
        let ret = W::new(1).u8(Tag::Int as u8).u64(-3i64 as u64).done();
        assert_eq!(decode(&ret)["returnValue"], json!(-3));
        assert_eq!(return_key(&ret), Some(-3i64 as u64));
        let none = W::new(1).u8(Tag::None as u8).done();
        assert_eq!(decode(&none)["returnType"], "NoneType");
        let exc = W::new(2)
            .name("ValueError")
            .u8(Tag::Tuple as u8)
            .u32(1)
            .u32(1)
            .u8(Tag::Str as u8)
            .u32(3)
            .u32(3)
            .raw(b"bad")
            .done();
        assert_eq!(decode(&exc)["exception"]["message"], "bad");
        assert_eq!(
            exception_of(&exc),
            Some(("ValueError".into(), Some("bad".into())))
        );
        assert_eq!(return_key(&exc), None);
    }

    #[test]
    fn uncaught_exceptions_carry_their_traceback_and_locals() {
        let p = W::new(3)
            .name("KeyError")
            .u8(Tag::Tuple as u8)
            .u32(1)
            .u32(1)
            .u8(Tag::Str as u8)
            .u32(6)
            .u32(6)
            .raw(b"gadget")
            .u32(1)
            .u32(2)
            .name("checkout")
            .name("/p/inventory.py")
            .u32(40)
            .u8(Tag::Dict as u8)
            .u32(1)
            .u32(1)
            .u8(Tag::Str as u8)
            .u32(3)
            .u32(3)
            .raw(b"sku")
            .u8(Tag::Str as u8)
            .u32(6)
            .u32(6)
            .raw(b"gadget")
            .done();
        let v = decode(&p);
        assert_eq!(v["exception"]["message"], "gadget");
        assert_eq!(v["traceback"][0]["function"], "checkout");
        assert_eq!(v["traceback"][0]["line"], 40);
        assert_eq!(v["traceback"][0]["locals"]["sku"], "gadget");
        assert_eq!(v["tracebackOmitted"], 2);
    }

    #[test]
    fn truncated_and_corrupt_payloads_never_panic() {
        let p = W::new(0).u8(2).name("a").u8(Tag::Cut as u8).done();
        let v = decode(&p);
        assert!(v["arguments"][0]["value"].as_str().unwrap().contains("cut"));
        for n in 0..p.len() {
            let _ = decode(&p[..n]);
        }
        let mut junk = W::new(0).u8(5).raw(&[0xff; 40]).done();
        junk[12] = 200;
        let _ = decode(&junk);
    }
}
