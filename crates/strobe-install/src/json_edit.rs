//! Strobe's entry in a JSON or JSONC config, edited on the concrete syntax
//! tree: comments, spacing, key order and every other key stay as the
//! person wrote them.
//!
//! Two things a hostile or odd file holds are handled before any edit:
//! nesting deeper than [`MAX_DEPTH`] is refused before the (recursive)
//! parsers see it, and a key that appears twice in one object — which
//! agents' last-key-wins readers resolve to the last copy — is edited in
//! its last copy, with a note saying so.

use crate::InstallError;
use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstObjectProp, CstRootNode};
use serde_json::Value;

/// How deep a JSON config may nest, as MCP, DAP and the web UI allow
/// (serde_json's limit): no agent writes anything near it, and the
/// recursive parsers would overflow the stack on a file nested far deeper.
pub(crate) const MAX_DEPTH: usize = 128;

/// An edit made: the new text, and what the person should know about it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Edited {
    /// The file's new text.
    pub text: String,
    /// Notes for the outcome (a duplicated key).
    pub notes: Vec<String>,
}

/// The text with `table.name` set to `value`; `None` when it already is.
/// Empty text is a new file. With duplicated keys on the way, the last
/// copy is the one edited (the one agents read).
pub(crate) fn set_entry(
    text: &str,
    table: &[&str],
    name: &str,
    value: &Value,
    path: &str,
) -> Result<Option<Edited>, InstallError> {
    if current(text, table, name, path)?.as_ref() == Some(value) {
        return Ok(None);
    }
    let root = parse(if text.trim().is_empty() { "{}\n" } else { text }, path)?;
    let mut obj = root
        .object_value_or_create()
        .ok_or_else(|| not_object(path, "(the file)"))?;
    let mut notes = Vec::new();
    let mut at = Vec::new();
    for key in table {
        at.push(*key);
        let props = named(&obj, key);
        if props.len() > 1 {
            notes.push(duplicated(path, &at, props.len()));
        }
        obj = match props.last() {
            Some(prop) => prop.object_value().ok_or_else(|| not_object(path, key))?,
            None => obj
                .object_value_or_create(key)
                .ok_or_else(|| not_object(path, key))?,
        };
    }
    match named(&obj, name).last() {
        Some(prop) => prop.set_value(input(value)),
        None => {
            obj.append(name, input(value));
        }
    }
    Ok(Some(Edited {
        text: root.to_string(),
        notes,
    }))
}

/// The text without `table.name`, from every copy of a duplicated key (a
/// copy left would be read by some agent); `None` when it has none.
pub(crate) fn remove_entry(
    text: &str,
    table: &[&str],
    name: &str,
    path: &str,
) -> Result<Option<Edited>, InstallError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    // Refuses what is too deep or unparseable, as `set_entry` does.
    current(text, table, name, path)?;
    let root = parse(text, path)?;
    let Some(top) = root.object_value() else {
        return Ok(None);
    };
    let mut objs = vec![top];
    for key in table {
        objs = objs
            .iter()
            .flat_map(|o| named(o, key))
            .filter_map(|p| p.object_value())
            .collect();
    }
    let props: Vec<_> = objs.iter().flat_map(|o| named(o, name)).collect();
    if props.is_empty() {
        return Ok(None);
    }
    let notes = if props.len() > 1 {
        vec![format!(
            "{path} held {} copies of {}.{name}; every one was removed",
            props.len(),
            table.join(".")
        )]
    } else {
        Vec::new()
    };
    for prop in props {
        prop.remove();
    }
    Ok(Some(Edited {
        text: root.to_string(),
        notes,
    }))
}

/// The properties of `obj` called `key`, in order.
fn named(obj: &CstObject, key: &str) -> Vec<CstObjectProp> {
    obj.properties()
        .into_iter()
        .filter(|p| {
            p.name()
                .and_then(|n| n.decoded_value().ok())
                .is_some_and(|n| n == key)
        })
        .collect()
}

fn duplicated(path: &str, at: &[&str], n: usize) -> String {
    format!(
        "{path} has {n} \"{}\" keys; agents read the last one, so Strobe's entry went there (merge them into one to be sure every tool agrees)",
        at.join(".")
    )
}

/// Refuses `text` when its arrays and objects nest deeper than
/// [`MAX_DEPTH`]; brackets in strings and comments do not count. Scanned
/// the way jsonc-parser tokenizes (both quote kinds, `//` and `/* */`), so
/// the parsers never go deeper than this counts.
fn check_depth(text: &str, path: &str) -> Result<(), InstallError> {
    #[derive(PartialEq)]
    enum In {
        Code,
        Str(u8),
        Escape(u8),
        Line,
        Block,
    }
    let bytes = text.as_bytes();
    let (mut depth, mut state, mut i) = (0usize, In::Code, 0);
    while i < bytes.len() {
        let b = bytes[i];
        let next = bytes.get(i + 1).copied();
        state = match state {
            In::Code => match (b, next) {
                (b'{' | b'[', _) => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return Err(InstallError::TooDeep {
                            path: path.to_string(),
                            limit: MAX_DEPTH,
                        });
                    }
                    In::Code
                }
                (b'}' | b']', _) => {
                    depth = depth.saturating_sub(1);
                    In::Code
                }
                (b'"' | b'\'', _) => In::Str(b),
                (b'/', Some(b'/')) => {
                    i += 1;
                    In::Line
                }
                (b'/', Some(b'*')) => {
                    i += 1;
                    In::Block
                }
                _ => In::Code,
            },
            In::Str(q) if b == b'\\' => In::Escape(q),
            In::Str(q) if b == q => In::Code,
            In::Str(q) | In::Escape(q) => In::Str(q),
            In::Line if b == b'\n' => In::Code,
            In::Block if b == b'*' && next == Some(b'/') => {
                i += 1;
                In::Code
            }
            s => s,
        };
        i += 1;
    }
    Ok(())
}

/// The entry's value now, if the file has one; errors on a file that does
/// not parse or whose servers' key is not an object.
fn current(
    text: &str,
    table: &[&str],
    name: &str,
    path: &str,
) -> Result<Option<Value>, InstallError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    check_depth(text, path)?;
    let value =
        jsonc_parser::parse_to_serde_value(text, &ParseOptions::default()).map_err(|e| {
            InstallError::Unparseable {
                path: path.to_string(),
                why: e.to_string(),
            }
        })?;
    let mut at = match value {
        None => return Ok(None),
        Some(v @ Value::Object(_)) => v,
        Some(_) => return Err(not_object(path, "(the file)")),
    };
    for key in table {
        at = match at.get(*key) {
            None => return Ok(None),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => return Err(not_object(path, key)),
        };
    }
    Ok(at.get(name).cloned())
}

fn parse(text: &str, path: &str) -> Result<CstRootNode, InstallError> {
    check_depth(text, path)?;
    CstRootNode::parse(text, &ParseOptions::default()).map_err(|e| InstallError::Unparseable {
        path: path.to_string(),
        why: e.to_string(),
    })
}

fn not_object(path: &str, key: &str) -> InstallError {
    InstallError::NotATable {
        path: path.to_string(),
        key: key.to_string(),
    }
}

/// A serde value as the syntax tree takes it.
fn input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => {
            CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const WITH_COMMENTS: &str = r#"{
    // my servers
    "mcpServers": {
        "other":   { "command": "other-mcp" },   // keep me
    },
    "theme": "dark",
}
"#;

    #[test]
    fn an_entry_is_added_with_comments_and_other_servers_kept() {
        let e = json!({"command": "/bin/strobe", "args": ["mcp"]});
        let out = set_entry(WITH_COMMENTS, &["mcpServers"], "strobe", &e, "f")
            .unwrap()
            .unwrap()
            .text;
        assert!(
            out.contains("// my servers") && out.contains("// keep me"),
            "{out}"
        );
        assert!(
            out.contains(r#""other":   { "command": "other-mcp" }"#),
            "{out}"
        );
        assert!(out.contains(r#""theme": "dark""#));
        let v = jsonc_parser::parse_to_serde_value(&out, &ParseOptions::default())
            .unwrap()
            .unwrap();
        assert_eq!(v["mcpServers"]["strobe"], e);
        // Again: nothing to do.
        assert_eq!(
            set_entry(&out, &["mcpServers"], "strobe", &e, "f").unwrap(),
            None
        );
        // And removed: the file as it was, but for the entry.
        let back = remove_entry(&out, &["mcpServers"], "strobe", "f")
            .unwrap()
            .unwrap()
            .text;
        let v = jsonc_parser::parse_to_serde_value(&back, &ParseOptions::default())
            .unwrap()
            .unwrap();
        assert!(v["mcpServers"].get("strobe").is_none());
        assert!(back.contains("// keep me"));
        assert_eq!(
            remove_entry(&back, &["mcpServers"], "strobe", "f").unwrap(),
            None
        );
    }

    #[test]
    fn a_new_file_and_a_missing_table_are_made() {
        let e = json!({"command": "s"});
        let out = set_entry("", &["servers"], "strobe", &e, "f")
            .unwrap()
            .unwrap()
            .text;
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v, json!({"servers": {"strobe": {"command": "s"}}}));
        let out = set_entry("{\"a\": 1}", &["mcp"], "strobe", &e, "f")
            .unwrap()
            .unwrap()
            .text;
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v, json!({"a": 1, "mcp": {"strobe": {"command": "s"}}}));
    }

    #[test]
    fn an_old_entry_is_replaced() {
        let old = r#"{"mcpServers": {"strobe": {"command": "/old/strobe", "args": ["mcp"]}}}"#;
        let e = json!({"command": "/new/strobe", "args": ["mcp"]});
        let out = set_entry(old, &["mcpServers"], "strobe", &e, "f")
            .unwrap()
            .unwrap()
            .text;
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["mcpServers"]["strobe"], e);
    }

    #[test]
    fn broken_files_and_odd_shapes_are_refused() {
        let e = json!({});
        let err = set_entry(
            "{\"mcpServers\": {",
            &["mcpServers"],
            "strobe",
            &e,
            "cfg.json",
        )
        .unwrap_err();
        assert!(matches!(err, InstallError::Unparseable { .. }), "{err}");
        assert!(
            err.to_string().contains("cfg.json cannot be parsed"),
            "{err}"
        );
        let err =
            set_entry("{\"mcpServers\": []}", &["mcpServers"], "strobe", &e, "f").unwrap_err();
        assert!(matches!(err, InstallError::NotATable { .. }), "{err}");
        let err = set_entry("[1, 2]", &["mcpServers"], "strobe", &e, "f").unwrap_err();
        assert!(matches!(err, InstallError::NotATable { .. }), "{err}");
    }

    /// `[` and `{` nested `n` deep.
    fn deep(n: usize) -> String {
        format!("{{\"mcpServers\": {}{}}}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn nesting_past_the_limit_is_refused_before_any_parser_sees_it() {
        let e = json!({"command": "s"});
        // 200,000 deep: the recursive parsers would overflow the stack.
        for text in [deep(200_000), "{".repeat(200_000)] {
            let err =
                set_entry(&text, &["mcpServers"], "strobe", &e, "~/.claude.json").unwrap_err();
            assert!(matches!(err, InstallError::TooDeep { .. }), "{err}");
            assert!(
                err.to_string()
                    .contains("~/.claude.json nests more than 128 levels deep"),
                "{err}"
            );
            let err = remove_entry(&text, &["mcpServers"], "strobe", "f").unwrap_err();
            assert!(matches!(err, InstallError::TooDeep { .. }), "{err}");
        }
        // At the limit (the root object is one level) it is read.
        let text = deep(MAX_DEPTH - 1);
        assert!(set_entry(&text, &["x"], "strobe", &e, "f").is_ok());
        let err = set_entry(&deep(MAX_DEPTH), &["x"], "strobe", &e, "f").unwrap_err();
        assert!(matches!(err, InstallError::TooDeep { .. }), "{err}");
        // Brackets in strings and comments are not nesting.
        let text = format!(
            "{{\"a\": \"{}\", 'b': '\\'{}', // {}\n /* {} */ \"mcpServers\": {{}}}}",
            "[".repeat(500),
            "{".repeat(500),
            "[".repeat(500),
            "{".repeat(500)
        );
        let out = set_entry(&text, &["mcpServers"], "strobe", &e, "f")
            .unwrap()
            .unwrap()
            .text;
        assert!(out.contains("\"strobe\""), "{out}");
    }

    #[test]
    fn a_duplicated_table_key_gets_the_entry_in_its_last_copy() {
        let text = r#"{
  "mcpServers": {"old": {"command": "a"}},
  "mcpServers": {"github": {"command": "gh"}}
}"#;
        let e = json!({"command": "s"});
        let edited = set_entry(text, &["mcpServers"], "strobe", &e, "~/.claude.json")
            .unwrap()
            .unwrap();
        // What a last-key-wins reader (serde_json, JSON.parse) sees.
        let v: Value = serde_json::from_str(&edited.text).unwrap();
        assert_eq!(v["mcpServers"]["strobe"], e, "{}", edited.text);
        assert_eq!(v["mcpServers"]["github"]["command"], "gh");
        assert_eq!(
            edited.notes,
            [
                "~/.claude.json has 2 \"mcpServers\" keys; agents read the last one, so Strobe's entry went there (merge them into one to be sure every tool agrees)"
            ]
        );
        assert!(edited.text.contains(r#""old": {"command": "a"}"#));
        // Again: nothing to do.
        assert_eq!(
            set_entry(&edited.text, &["mcpServers"], "strobe", &e, "f").unwrap(),
            None
        );
        // An entry in the first copy only (as older Strobes wrote it) is
        // not the entry agents read: the last copy gets one.
        let first_only = r#"{"mcpServers": {"strobe": {"command": "s"}}, "mcpServers": {}}"#;
        let edited = set_entry(first_only, &["mcpServers"], "strobe", &e, "f")
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&edited.text).unwrap();
        assert_eq!(v["mcpServers"]["strobe"], e);
        // Uninstall takes it out of every copy.
        let gone = remove_entry(&edited.text, &["mcpServers"], "strobe", "f")
            .unwrap()
            .unwrap();
        assert!(!gone.text.contains("strobe"), "{}", gone.text);
        assert_eq!(gone.notes.len(), 1, "{:?}", gone.notes);
        assert_eq!(
            remove_entry(first_only, &["mcpServers"], "strobe", "f")
                .unwrap()
                .map(|e| e.text.contains("strobe")),
            Some(false)
        );
    }

    #[test]
    fn a_duplicated_entry_is_set_in_its_last_copy() {
        let text =
            r#"{"mcpServers": {"strobe": {"command": "old"}, "strobe": {"command": "older"}}}"#;
        let e = json!({"command": "s"});
        let out = set_entry(text, &["mcpServers"], "strobe", &e, "f")
            .unwrap()
            .unwrap()
            .text;
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["mcpServers"]["strobe"], e, "{out}");
    }
}
