//! Typed values (as `debug_session status` and `debug_memory` give them)
//! as DAP variables: scalars as text, structs and arrays behind a
//! `variablesReference` that is expanded when the client asks, arrays in
//! pages (`start`/`count`).

use serde_json::{Value, json};

/// Children handed out by reference; a reference is the index plus one.
#[derive(Default)]
pub(crate) struct Refs {
    /// Each container, and the path its children are named under
    /// (`g_config`, `cfg.origin`; empty for a scope's list of variables).
    held: Vec<(Value, String)>,
}

impl Refs {
    /// Forgets every reference (the program ran on).
    pub(crate) fn clear(&mut self) {
        self.held.clear();
    }

    /// A reference to `container` (an object, an array, or a list of
    /// `{name, type, value}`); 0 for a scalar.
    pub(crate) fn hold(&mut self, container: &Value, path: &str) -> i64 {
        match container {
            Value::Object(o) if !o.is_empty() => {}
            Value::Array(a) if !a.is_empty() => {}
            _ => return 0,
        }
        self.held.push((container.clone(), path.to_string()));
        self.held.len() as i64
    }

    /// The `debug_memory` path of child `name` of reference `r`.
    pub(crate) fn path_of(&self, r: i64, name: &str) -> Option<String> {
        let (_, base) = self.held.get((r as usize).checked_sub(1)?)?;
        Some(child_path(base, name))
    }

    /// The variables of reference `r`, from `start`, at most `count` (0:
    /// all).
    pub(crate) fn variables(&mut self, r: i64, start: usize, count: usize) -> Option<Vec<Value>> {
        let (held, base) = self.held.get((r as usize).checked_sub(1)?)?.clone();
        let items: Vec<(String, Option<String>, Value)> = match &held {
            Value::Object(o) => o
                .iter()
                .map(|(k, v)| (k.clone(), None, v.clone()))
                .collect(),
            Value::Array(a) if a.iter().all(is_named) => a
                .iter()
                .map(|v| {
                    (
                        v["name"].as_str().unwrap_or("?").to_string(),
                        v["type"].as_str().map(str::to_string),
                        v["value"].clone(),
                    )
                })
                .collect(),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("[{i}]"), None, v.clone()))
                .collect(),
            _ => Vec::new(),
        };
        let end = if count == 0 {
            items.len()
        } else {
            (start + count).min(items.len())
        };
        Some(
            items
                .get(start.min(items.len())..end)
                .unwrap_or_default()
                .iter()
                .map(|(name, ty, v)| {
                    let path = child_path(&base, name);
                    self.variable(name, ty.as_deref(), v, &path)
                })
                .collect(),
        )
    }

    /// One variable: its text, and a reference when it has children.
    pub(crate) fn variable(
        &mut self,
        name: &str,
        ty: Option<&str>,
        v: &Value,
        path: &str,
    ) -> Value {
        let reference = self.hold(v, path);
        let mut out = json!({"name": name, "value": text(v), "variablesReference": reference});
        if let Some(t) = ty {
            out["type"] = json!(t);
            // A pointer opens in the editor's memory view.
            if t.trim_end().ends_with('*')
                && let Some(a) = v.as_str().filter(|a| a.starts_with("0x"))
            {
                out["memoryReference"] = json!(a);
            }
        }
        if let Value::Array(a) = v {
            out["indexedVariables"] = json!(a.len());
        }
        out
    }
}

/// `base.name`, `base[3]` (a child named `[3]`), or `name` at the top.
fn child_path(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else if name.starts_with('[') {
        format!("{base}{name}")
    } else {
        format!("{base}.{name}")
    }
}

/// `{name, type?, value}`: a named value as status lists arguments.
fn is_named(v: &Value) -> bool {
    v.get("name").is_some_and(Value::is_string) && v.get("value").is_some()
}

/// A value's one-line text: scalars as they are, containers summarized.
pub(crate) fn text(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Object(o) => format!("{{…}} ({} fields)", o.len()),
        Value::Array(a) => format!("[…] ({} elements)", a.len()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_expand_and_arrays_page() {
        let mut refs = Refs::default();
        let args = json!([{"name": "cfg", "type": "struct config", "value": {"rate": 48000, "tags": [1, 2, 3, 4, 5]}},
                          {"name": "n", "type": "int", "value": 3}]);
        let r = refs.hold(&args, "");
        let vars = refs.variables(r, 0, 0).unwrap();
        assert_eq!(
            vars[1],
            json!({"name": "n", "value": "3", "variablesReference": 0, "type": "int"})
        );
        let cfg = vars[0]["variablesReference"].as_i64().unwrap();
        assert!(cfg > 0);
        let fields = refs.variables(cfg, 0, 0).unwrap();
        assert_eq!(fields[0]["value"], "48000");
        assert_eq!(fields[1]["indexedVariables"], 5);
        let tags = fields[1]["variablesReference"].as_i64().unwrap();
        assert_eq!(refs.path_of(tags, "[2]").unwrap(), "cfg.tags[2]");
        assert_eq!(refs.path_of(cfg, "rate").unwrap(), "cfg.rate");
        let page = refs.variables(tags, 2, 2).unwrap();
        assert_eq!(
            page.iter()
                .map(|v| v["name"].as_str().unwrap())
                .collect::<Vec<_>>(),
            ["[2]", "[3]"]
        );
        assert!(refs.variables(999, 0, 0).is_none());
        refs.clear();
        assert!(refs.variables(r, 0, 0).is_none());
    }
}
