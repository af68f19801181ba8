//! Strobe's entry in a TOML config (Codex's `[mcp_servers.strobe]`),
//! edited with `toml_edit`: comments, layout and every other table stay.

use crate::InstallError;
use serde_json::Value;
use toml_edit::{Array, DocumentMut, Item, Table, value};

/// The text with `table.name` set to `entry` (a flat object of strings and
/// string arrays); `None` when it already is.
pub(crate) fn set_entry(
    text: &str,
    table: &[&str],
    name: &str,
    entry: &Value,
    path: &str,
) -> Result<Option<String>, InstallError> {
    let mut doc = parse(text, path)?;
    let mut at: &mut Table = doc.as_table_mut();
    for key in table {
        let item = at.entry(key).or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        });
        at = item.as_table_mut().ok_or_else(|| not_table(path, key))?;
    }
    let wanted = to_table(entry);
    if let Some(existing) = at.get(name).and_then(Item::as_table)
        && same(existing, &wanted)
    {
        return Ok(None);
    }
    at.insert(name, Item::Table(wanted));
    Ok(Some(doc.to_string()))
}

/// The text without `table.name`; `None` when it has none.
pub(crate) fn remove_entry(
    text: &str,
    table: &[&str],
    name: &str,
    path: &str,
) -> Result<Option<String>, InstallError> {
    let mut doc = parse(text, path)?;
    let mut at: &mut Table = doc.as_table_mut();
    for key in table {
        match at.get_mut(key).and_then(Item::as_table_mut) {
            Some(t) => at = t,
            None => return Ok(None),
        }
    }
    if at.remove(name).is_none() {
        return Ok(None);
    }
    Ok(Some(doc.to_string()))
}

fn parse(text: &str, path: &str) -> Result<DocumentMut, InstallError> {
    text.parse::<DocumentMut>()
        .map_err(|e| InstallError::Unparseable {
            path: path.to_string(),
            why: e.to_string().trim().replace('\n', " "),
        })
}

fn not_table(path: &str, key: &str) -> InstallError {
    InstallError::NotATable {
        path: path.to_string(),
        key: key.to_string(),
    }
}

/// A flat JSON object as a TOML table (strings, booleans, string arrays).
fn to_table(entry: &Value) -> Table {
    let mut t = Table::new();
    for (k, v) in entry.as_object().into_iter().flatten() {
        match v {
            Value::String(s) => t[k] = value(s.as_str()),
            Value::Bool(b) => t[k] = value(*b),
            Value::Array(a) => {
                let mut arr = Array::new();
                for x in a {
                    arr.push(x.as_str().unwrap_or_default());
                }
                t[k] = value(arr);
            }
            other => t[k] = value(other.to_string()),
        }
    }
    t
}

/// The same keys and values, whatever the layout.
fn same(a: &Table, b: &Table) -> bool {
    let flat = |t: &Table| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = t
            .iter()
            .map(|(k, i)| {
                (
                    k.to_string(),
                    i.as_value()
                        .map(|v| v.to_string().trim().to_string())
                        .unwrap_or_default(),
                )
            })
            .collect();
        v.sort();
        v
    };
    flat(a) == flat(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CODEX: &str = r#"# my Codex settings
model = "o4"   # the usual one

[mcp_servers.other]
command = "other"
args = ["--stdio"]   # keep

[profiles.fast]
model = "mini"
"#;

    #[test]
    fn a_table_is_added_with_comments_and_other_tables_kept() {
        let e = json!({"command": "/bin/strobe", "args": ["mcp"]});
        let out = set_entry(CODEX, &["mcp_servers"], "strobe", &e, "f")
            .unwrap()
            .unwrap();
        assert!(
            out.starts_with("# my Codex settings\nmodel = \"o4\"   # the usual one"),
            "{out}"
        );
        assert!(out.contains("args = [\"--stdio\"]   # keep"), "{out}");
        assert!(
            out.contains("[mcp_servers.strobe]\ncommand = \"/bin/strobe\"\nargs = [\"mcp\"]"),
            "{out}"
        );
        assert!(out.contains("[profiles.fast]"));
        assert_eq!(
            set_entry(&out, &["mcp_servers"], "strobe", &e, "f").unwrap(),
            None
        );
        let back = remove_entry(&out, &["mcp_servers"], "strobe", "f")
            .unwrap()
            .unwrap();
        assert_eq!(back, CODEX);
        assert_eq!(
            remove_entry(&back, &["mcp_servers"], "strobe", "f").unwrap(),
            None
        );
    }

    #[test]
    fn a_new_file_gets_the_table_and_a_broken_one_is_refused() {
        let e = json!({"command": "s", "args": ["mcp"]});
        let out = set_entry("", &["mcp_servers"], "strobe", &e, "f")
            .unwrap()
            .unwrap();
        assert_eq!(
            out,
            "[mcp_servers.strobe]\ncommand = \"s\"\nargs = [\"mcp\"]\n"
        );
        let err = set_entry("model = ", &["mcp_servers"], "strobe", &e, "config.toml").unwrap_err();
        assert!(
            err.to_string().contains("config.toml cannot be parsed"),
            "{err}"
        );
        let err = set_entry("mcp_servers = 3", &["mcp_servers"], "strobe", &e, "f").unwrap_err();
        assert!(matches!(err, InstallError::NotATable { .. }), "{err}");
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        // toml_edit caps nesting itself (unless its `unbounded` feature is
        // on): each of these is an error, never a crash.
        let n = 200_000;
        let dotted = vec!["a"; n].join(".");
        for text in [
            format!("a = {}{}", "[".repeat(n), "]".repeat(n)),
            format!("a = {}", "{b = ".repeat(n)),
            format!("{dotted} = 1"),
            format!("[{dotted}]"),
            format!("[[{dotted}]]"),
        ] {
            let e = json!({"command": "s"});
            let err = set_entry(&text, &["mcp_servers"], "strobe", &e, "config.toml").unwrap_err();
            assert!(matches!(err, InstallError::Unparseable { .. }), "{err}");
            assert!(err.to_string().contains("recursion"), "{err}");
        }
    }
}
