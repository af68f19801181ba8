//! Strobe's entry in a JSON or JSONC config, edited on the concrete syntax
//! tree: comments, spacing, key order and every other key stay as the
//! person wrote them.

use crate::InstallError;
use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use serde_json::Value;

/// The text with `table.name` set to `value`; `None` when it already is.
/// Empty text is a new file.
pub(crate) fn set_entry(
    text: &str,
    table: &[&str],
    name: &str,
    value: &Value,
    path: &str,
) -> Result<Option<String>, InstallError> {
    if current(text, table, name, path)?.as_ref() == Some(value) {
        return Ok(None);
    }
    let root = parse(if text.trim().is_empty() { "{}\n" } else { text }, path)?;
    let mut obj = root
        .object_value_or_create()
        .ok_or_else(|| not_object(path, "(the file)"))?;
    for key in table {
        obj = obj
            .object_value_or_create(key)
            .ok_or_else(|| not_object(path, key))?;
    }
    match obj.get(name) {
        Some(prop) => prop.set_value(input(value)),
        None => {
            obj.append(name, input(value));
        }
    }
    Ok(Some(root.to_string()))
}

/// The text without `table.name`; `None` when it has none.
pub(crate) fn remove_entry(
    text: &str,
    table: &[&str],
    name: &str,
    path: &str,
) -> Result<Option<String>, InstallError> {
    if text.trim().is_empty() || current(text, table, name, path)?.is_none() {
        return Ok(None);
    }
    let root = parse(text, path)?;
    let Some(mut obj) = root.object_value() else {
        return Ok(None);
    };
    for key in table {
        let Some(inner) = obj.object_value(key) else {
            return Ok(None);
        };
        obj = inner;
    }
    match obj.get(name) {
        Some(prop) => {
            prop.remove();
            Ok(Some(root.to_string()))
        }
        None => Ok(None),
    }
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
            .unwrap();
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
            .unwrap();
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
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v, json!({"servers": {"strobe": {"command": "s"}}}));
        let out = set_entry("{\"a\": 1}", &["mcp"], "strobe", &e, "f")
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v, json!({"a": 1, "mcp": {"strobe": {"command": "s"}}}));
    }

    #[test]
    fn an_old_entry_is_replaced() {
        let old = r#"{"mcpServers": {"strobe": {"command": "/old/strobe", "args": ["mcp"]}}}"#;
        let e = json!({"command": "/new/strobe", "args": ["mcp"]});
        let out = set_entry(old, &["mcpServers"], "strobe", &e, "f")
            .unwrap()
            .unwrap();
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
}
