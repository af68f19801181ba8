//! Values as `debug_diff` compares and shows them: addresses masked (they
//! differ between runs without meaning anything), cut to a short excerpt.

use serde_json::Value;

/// Longest value text kept for comparison and display.
const MAX_CHARS: usize = 200;

/// `v` with every hex number of 6 digits or more (an address, in practice)
/// replaced by `0x…`, recursively.
pub fn mask_addresses(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(mask_text(s)),
        Value::Array(a) => Value::Array(a.iter().map(mask_addresses).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), mask_addresses(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `s` with hex numbers of 6 digits or more replaced by `0x…`.
pub fn mask_text(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'0' && i + 1 < b.len() && (b[i + 1] == b'x' || b[i + 1] == b'X') {
            let digits = b[i + 2..]
                .iter()
                .take_while(|c| c.is_ascii_hexdigit())
                .count();
            if digits >= 6 {
                out.push_str("0x…");
                i += 2 + digits;
                continue;
            }
        }
        let ch = s[i..].chars().next().expect("in bounds");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// The compact JSON of `v`, cut to [`MAX_CHARS`] with `…`.
pub fn short(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    cut(&s)
}

/// An argument list as `name=value, …` (typed arguments are objects with a
/// name and a value), else its compact JSON; cut like [`short`].
pub fn args_text(v: &Value) -> String {
    let Some(list) = v.as_array() else {
        return short(v);
    };
    let parts: Option<Vec<String>> = list
        .iter()
        .map(|a| {
            let name = a.get("name")?.as_str()?;
            let value = a.get("value")?;
            Some(match value {
                Value::String(s) => format!("{name}={s:?}"),
                other => format!("{name}={other}"),
            })
        })
        .collect();
    match parts {
        Some(p) => cut(&p.join(", ")),
        None => short(v),
    }
}

/// `s` cut to [`MAX_CHARS`] characters with `…`.
pub fn cut(s: &str) -> String {
    if s.chars().count() <= MAX_CHARS {
        return s.to_string();
    }
    let mut t: String = s.chars().take(MAX_CHARS - 1).collect();
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn addresses_are_masked_small_numbers_kept() {
        let v = json!({"p": "0x7ffd1234abcd", "n": 42, "s": ["node @0x55aa00112233", "0x2a"]});
        assert_eq!(
            mask_addresses(&v),
            json!({"p": "0x…", "n": 42, "s": ["node @0x…", "0x2a"]})
        );
        assert_eq!(mask_text("é0x123456é"), "é0x…é");
    }

    #[test]
    fn long_values_are_cut() {
        let s = "x".repeat(500);
        assert_eq!(cut(&s).chars().count(), MAX_CHARS);
        assert!(cut(&s).ends_with('…'));
        assert_eq!(short(&json!("abc")), "abc");
        assert_eq!(short(&json!([1, 2])), "[1,2]");
        let args = json!([{"name": "i", "type": "int", "value": 3}, {"name": "s", "value": "x"}]);
        assert_eq!(args_text(&args), "i=3, s=\"x\"");
        assert_eq!(args_text(&json!([1])), "[1]");
    }
}
