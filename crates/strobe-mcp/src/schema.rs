//! The tools' input schemas, generated from the argument types in
//! [`crate::params`] and then compacted: every agent pays for the tool list
//! on every turn, so the schema carries only what a client validates with
//! and what the descriptions do not already say.
//!
//! Compaction keeps the meaning: optional fields are those not listed in
//! `required` (so `["string", "null"]` becomes `"string"`), integer widths
//! (`format`) and `minimum: 0` go (the bounds that matter are in the
//! descriptions), a type used once is written where it is used and one used
//! more than once stays in `$defs`, and an enum whose variants carry doc
//! comments becomes a plain `enum` list. `additionalProperties: false` is
//! kept at the top level only: the server rejects unknown fields at every
//! level anyway, and names the field.

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The compact input schema of a tool whose arguments are `T`.
pub fn input<T: JsonSchema>() -> Arc<JsonObject> {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    let mut root = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    compact_root(&mut root);
    match root {
        Value::Object(map) => Arc::new(map),
        other => panic!("the schema of a tool's arguments is an object, got {other}"),
    }
}

/// Compacts a root schema in place (see the module docs).
fn compact_root(root: &mut Value) {
    let Some(obj) = root.as_object_mut() else {
        return;
    };
    // rmcp strips these too; the tool's own description says it all.
    obj.remove("title");
    obj.remove("description");
    obj.remove("$schema");
    let mut defs: BTreeMap<String, Value> = match obj.remove("$defs") {
        Some(Value::Object(d)) => d.into_iter().collect(),
        _ => BTreeMap::new(),
    };
    // A type's own doc comment is for Rust readers; where it is used, the
    // field's description says what it is for.
    for def in defs.values_mut() {
        if let Some(d) = def.as_object_mut() {
            d.remove("description");
            d.remove("title");
        }
    }
    // Write single-use types in place until none is left (a single-use type
    // may itself use another single-use one).
    loop {
        let mut uses = BTreeMap::new();
        count_refs(root, &mut uses);
        for def in defs.values() {
            count_refs(def, &mut uses);
        }
        let once: Vec<String> = defs
            .keys()
            .filter(|k| uses.get(*k).copied().unwrap_or(0) <= 1)
            .cloned()
            .collect();
        if once.is_empty() {
            break;
        }
        for name in once {
            let def = defs.remove(&name).expect("listed above");
            if !inline(root, &name, &def) {
                for other in defs.values_mut() {
                    if inline(other, &name, &def) {
                        break;
                    }
                }
            }
        }
    }
    simplify(root);
    let keep_strict = root.get("additionalProperties").cloned();
    drop_strictness(root);
    if let Some(strict) = keep_strict {
        root.as_object_mut()
            .expect("checked above")
            .insert("additionalProperties".into(), strict);
    }
    for def in defs.values_mut() {
        drop_strictness(def);
    }
    if !defs.is_empty() {
        let mut kept = Map::new();
        for (k, mut v) in defs {
            simplify(&mut v);
            kept.insert(k, v);
        }
        root.as_object_mut()
            .expect("checked above")
            .insert("$defs".into(), Value::Object(kept));
    }
}

fn ref_name(v: &Map<String, Value>) -> Option<&str> {
    v.get("$ref")?.as_str()?.strip_prefix("#/$defs/")
}

fn count_refs(v: &Value, uses: &mut BTreeMap<String, usize>) {
    match v {
        Value::Object(m) => {
            if let Some(name) = ref_name(m) {
                *uses.entry(name.to_string()).or_default() += 1;
            }
            m.values().for_each(|c| count_refs(c, uses));
        }
        Value::Array(a) => a.iter().for_each(|c| count_refs(c, uses)),
        _ => {}
    }
}

/// Replaces the one `$ref` to `name` under `v` by the definition, keeping
/// the referring object's own keys (its description wins). True if found.
fn inline(v: &mut Value, name: &str, def: &Value) -> bool {
    match v {
        Value::Object(m) => {
            if ref_name(m) == Some(name) {
                m.remove("$ref");
                if let Value::Object(d) = def {
                    for (k, dv) in d {
                        m.entry(k.clone()).or_insert_with(|| dv.clone());
                    }
                }
                return true;
            }
            m.values_mut().any(|c| inline(c, name, def))
        }
        Value::Array(a) => a.iter_mut().any(|c| inline(c, name, def)),
        _ => false,
    }
}

/// Removes `additionalProperties: false` everywhere under `v`.
fn drop_strictness(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.get("additionalProperties") == Some(&Value::Bool(false)) {
                m.remove("additionalProperties");
            }
            m.values_mut().for_each(drop_strictness);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_strictness),
        _ => {}
    }
}

/// The per-node rewrites, applied everywhere.
fn simplify(v: &mut Value) {
    match v {
        Value::Object(m) => {
            // Optional-ness is `required`'s job.
            if let Some(Value::Array(types)) = m.get("type") {
                let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                match kept.len() {
                    0 => {}
                    1 => {
                        m.insert("type".into(), kept.into_iter().next().expect("one"));
                    }
                    _ => {
                        m.insert("type".into(), Value::Array(kept));
                    }
                }
            }
            if let Some(Value::Array(alts)) = m.get("anyOf") {
                let kept: Vec<Value> = alts
                    .iter()
                    .filter(|a| a.get("type") != Some(&Value::from("null")))
                    .cloned()
                    .collect();
                if kept.len() == 1 && kept.len() < alts.len() {
                    m.remove("anyOf");
                    if let Value::Object(only) = kept.into_iter().next().expect("one") {
                        for (k, ov) in only {
                            m.entry(k).or_insert(ov);
                        }
                    }
                }
            }
            // Enum variants with doc comments: the tool's description
            // explains them; the list of names is what a client checks.
            if let Some(Value::Array(alts)) = m.get("oneOf") {
                let names: Option<Vec<Value>> =
                    alts.iter().map(|a| a.get("const").cloned()).collect();
                if let Some(names) = names {
                    m.remove("oneOf");
                    m.insert("type".into(), Value::from("string"));
                    m.insert("enum".into(), Value::Array(names));
                }
            }
            // An enum listed on an optional field is written as [values..., null].
            if let Some(Value::Array(names)) = m.get_mut("enum") {
                names.retain(|n| !n.is_null());
            }
            m.remove("format");
            m.remove("title");
            // Unsigned widths: the server's error names a negative number's
            // field, and the descriptions give the real ranges.
            if m.get("minimum") == Some(&Value::from(0)) {
                m.remove("minimum");
            }
            // Any map value goes (`{"type": "object"}` says it).
            if m.get("additionalProperties") == Some(&Value::Bool(true)) {
                m.remove("additionalProperties");
            }
            // Empty, null or false defaults are what leaving the field out means.
            if m.get("default").is_some_and(|d| {
                d.is_null()
                    || d == &Value::Bool(false)
                    || d.as_array().is_some_and(|a| a.is_empty())
                    || d.as_object().is_some_and(|o| o.is_empty())
            }) {
                m.remove("default");
            }
            // Doc comments are wrapped for Rust readers.
            if let Some(Value::String(d)) = m.get_mut("description")
                && d.contains('\n')
            {
                *d = d.split('\n').map(str::trim).collect::<Vec<_>>().join(" ");
            }
            m.values_mut().for_each(simplify);
        }
        Value::Array(a) => a.iter_mut().for_each(simplify),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// A shared type.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Leaf {
        /// A number.
        n: u32,
    }

    /// Arguments.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        /// First.
        a: Option<Leaf>,
        /// Second,
        /// wrapped.
        b: Option<Leaf>,
        /// Used once.
        c: Option<Once>,
        /// Flag.
        #[serde(default)]
        f: bool,
        /// Kind.
        k: Option<Kind>,
    }

    /// Used once.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Once {
        s: Option<String>,
    }

    /// Kinds.
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Kind {
        /// One.
        One,
        /// Two.
        Two,
    }

    #[test]
    fn shared_types_stay_in_defs_and_the_rest_is_written_in_place() {
        let s = Value::Object(input::<Args>().as_ref().clone());
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "a": {"description": "First.", "$ref": "#/$defs/Leaf"},
                    "b": {"description": "Second, wrapped.", "$ref": "#/$defs/Leaf"},
                    "c": {"description": "Used once.", "type": "object",
                          "properties": {"s": {"type": "string"}}},
                    "f": {"description": "Flag.", "type": "boolean"},
                    "k": {"description": "Kind.", "type": "string", "enum": ["one", "two"]},
                },
                "additionalProperties": false,
                "$defs": {
                    "Leaf": {"type": "object",
                             "properties": {"n": {"description": "A number.", "type": "integer"}},
                             "required": ["n"]}
                }
            })
        );
    }
}
