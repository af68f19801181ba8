//! Reading a Python payload: the header, names, and self-describing
//! values (see [`Tag`]) into JSON.

use super::Tag;
use serde_json::{Map, Value, json};

pub(super) struct Reader<'a> {
    data: &'a [u8],
    pub(super) at: usize,
    pub(super) cut: bool,
    /// The payload is the JavaScript tracer's (version 3): types take
    /// JavaScript's names.
    javascript: bool,
}

/// Containers deeper than this in a payload are not followed (the agent's
/// depth limit is far lower: this guards against a corrupt payload).
const MAX_NESTING: usize = 64;

impl<'a> Reader<'a> {
    /// Past the header; the body ends at the payload's recorded length.
    pub(super) fn new(payload: &'a [u8]) -> Self {
        let len = payload
            .get(4..8)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
            .unwrap_or(0)
            .min(payload.len());
        Reader {
            data: payload.get(..len).unwrap_or(&[]),
            at: 9,
            cut: false,
            javascript: payload.get(8) == Some(&super::JAVASCRIPT_VERSION),
        }
    }

    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.data.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    pub(super) fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    pub(super) fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4")))
    }
    pub(super) fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8")))
    }
    pub(super) fn name(&mut self) -> Option<String> {
        let n = u16::from_le_bytes(self.take(2)?.try_into().expect("2")) as usize;
        Some(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    /// A value and its type's name (Python's, or JavaScript's in a
    /// JavaScript payload).
    pub(super) fn typed(&mut self) -> (String, Value) {
        let at = self.at;
        let ty = self.data.get(at).and_then(|b| Tag::from_u8(*b));
        let value = self.value(0);
        let js = match ty {
            _ if !self.javascript => None,
            Some(Tag::None) => Some("null"),
            Some(Tag::Undefined) => Some("undefined"),
            Some(Tag::True | Tag::False) => Some("boolean"),
            Some(Tag::Int | Tag::Float) => Some("number"),
            Some(Tag::BigInt) => Some("bigint"),
            Some(Tag::Str) => Some("string"),
            Some(Tag::Bytes) => Some("Uint8Array"),
            Some(Tag::List) => Some("Array"),
            Some(Tag::Dict) => Some("Map"),
            Some(Tag::Set) => Some("Set"),
            Some(Tag::Class) => Some("class"),
            _ => None,
        };
        if let Some(name) = js {
            return (name.to_string(), value);
        }
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
                    javascript: self.javascript,
                };
                peek.name().unwrap_or_else(|| "?".into())
            }
        };
        (name, value)
    }

    /// The optional watch section after a call's values: `u8 count`, then
    /// `name` label and `value` each, as `watchValues` {label: value}.
    pub(super) fn watches(&mut self, out: &mut Map<String, Value>) {
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

    pub(super) fn value(&mut self, nesting: usize) -> Value {
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
            Tag::None | Tag::Undefined => Value::Null,
            Tag::True => Value::Bool(true),
            Tag::False => Value::Bool(false),
            Tag::Int => json!(self.u64().unwrap_or(0) as i64),
            Tag::BigInt if self.javascript => {
                // `u8 flags` (1 negative, 2 over 64 bits), `u64` magnitude.
                let flags = self.u8().unwrap_or(0);
                let magnitude = self.u64().unwrap_or(0);
                let sign = if flags & 1 != 0 { "-" } else { "" };
                if flags & 2 != 0 {
                    json!(format!("<{sign}bigint over 64 bits>"))
                } else {
                    json!(format!("{sign}{magnitude}n"))
                }
            }
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
                } else if self.javascript {
                    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
                    format!("<Buffer {}>", hex.join(" "))
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
                // A JavaScript object literal's type goes without saying.
                if !(self.javascript && ty == "Object") {
                    m.insert("$type".into(), Value::String(ty));
                }
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
                match self.u64().unwrap_or(0) {
                    // The JavaScript tracer has no addresses to give.
                    0 => json!(format!("<{ty}>")),
                    addr => json!(format!("<{ty} object at {addr:#x}>")),
                }
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
