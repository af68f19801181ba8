//! What `debug_ui` and `debug_ui_action` derive from a tree once it is
//! read and identified: each node's line for the next snapshot's diff, the
//! diff, the structured nodes of an answer, the nodes only vision found,
//! and the error naming the ids closest to an unknown one.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use strobe_ui::UiNode;
use strobe_ui::ids::Identified;
use strobe_ui::render;

use super::ui::UiChanges;

/// The most ids each list of a snapshot's diff names.
const DIFF_IDS: usize = 50;

/// The nodes only vision found, by id, without their children.
pub(super) fn vision_only(roots: &[Identified<'_>]) -> BTreeMap<String, UiNode> {
    fn walk(n: &Identified<'_>, out: &mut BTreeMap<String, UiNode>) {
        if n.node.vision.is_some_and(|m| m.new) {
            out.insert(
                n.id.clone(),
                UiNode {
                    children: Vec::new(),
                    ..n.node.clone()
                },
            );
        }
        for c in &n.children {
            walk(c, out);
        }
    }
    let mut out = BTreeMap::new();
    for r in roots {
        walk(r, &mut out);
    }
    out
}

/// Every visible node's line by id, for the next snapshot's diff.
pub(super) fn all_lines(roots: &[Identified<'_>]) -> BTreeMap<String, String> {
    fn add(n: &Identified<'_>, out: &mut BTreeMap<String, String>) {
        out.insert(n.id.clone(), render::line(n));
        for c in &n.children {
            add(c, out);
        }
    }
    let mut out = BTreeMap::new();
    for r in roots {
        add(r, &mut out);
    }
    out
}

pub(super) fn diff(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> UiChanges {
    let added: Vec<String> = after
        .keys()
        .filter(|k| !before.contains_key(*k))
        .cloned()
        .collect();
    let removed: Vec<String> = before
        .keys()
        .filter(|k| !after.contains_key(*k))
        .cloned()
        .collect();
    let changed: Vec<String> = after
        .iter()
        .filter(|(k, v)| before.get(*k).is_some_and(|b| b != *v))
        .map(|(k, _)| k.clone())
        .collect();
    UiChanges {
        added_count: added.len(),
        removed_count: removed.len(),
        changed_count: changed.len(),
        added: added.into_iter().take(DIFF_IDS).collect(),
        removed: removed.into_iter().take(DIFF_IDS).collect(),
        changed: changed.into_iter().take(DIFF_IDS).collect(),
    }
}

/// The shown nodes as JSON, nested as in the tree.
pub(super) fn structured(roots: &[&Identified<'_>], shown: &[String]) -> Vec<Value> {
    let shown: std::collections::HashSet<&str> = shown.iter().map(String::as_str).collect();
    fn node(n: &Identified<'_>, shown: &std::collections::HashSet<&str>) -> Option<Value> {
        if !shown.contains(n.id.as_str()) {
            return None;
        }
        let u = n.node;
        let mut o = serde_json::Map::new();
        o.insert("id".into(), json!(n.id));
        o.insert("role".into(), json!(u.role));
        o.insert("name".into(), json!(u.name));
        if let Some(b) = u.bounds {
            o.insert(
                "bounds".into(),
                json!({"x": b.x, "y": b.y, "width": b.width, "height": b.height}),
            );
        }
        if !u.actions.is_empty() {
            o.insert("actions".into(), json!(u.actions));
        }
        if let Some(v) = &u.value {
            o.insert("value".into(), json!(v));
        }
        o.insert("states".into(), json!(u.states));
        if let Some(m) = u.vision {
            let confidence = (f64::from(m.confidence) * 100.0).round() / 100.0;
            o.insert(
                "vision".into(),
                json!({"new": m.new, "confidence": confidence}),
            );
        }
        let children: Vec<Value> = n.children.iter().filter_map(|c| node(c, shown)).collect();
        if !children.is_empty() {
            o.insert("children".into(), Value::Array(children));
        }
        Some(Value::Object(o))
    }
    roots.iter().filter_map(|r| node(r, &shown)).collect()
}

/// An unknown id's error, naming the closest ids there are.
pub(super) fn unknown_id(wanted: &str, roots: &[Identified<'_>]) -> String {
    let mut ids = Vec::new();
    fn collect<'a>(n: &'a Identified<'_>, out: &mut Vec<&'a str>) {
        out.push(n.id.as_str());
        for c in &n.children {
            collect(c, out);
        }
    }
    for r in roots {
        collect(r, &mut ids);
    }
    let prefix = wanted.split('#').next().unwrap_or("");
    let mut scored: Vec<(usize, &str)> = ids
        .iter()
        .map(|id| {
            let same_role = id.split('#').next() == Some(prefix);
            (distance(wanted, id) + if same_role { 0 } else { 4 }, *id)
        })
        .collect();
    scored.sort();
    let closest: Vec<String> = scored
        .iter()
        .take(3)
        .map(|(_, id)| format!("\"{id}\""))
        .collect();
    if closest.is_empty() {
        format!("no node has id \"{wanted}\": the window has no accessibility tree")
    } else {
        format!(
            "no node has id \"{wanted}\" (ids change when a node's role, name or ancestors change); closest: {}. Call debug_ui without id to see the tree",
            closest.join(", ")
        )
    }
}

/// Levenshtein distance (ids are short).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for j in 0..b.len() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != b[j]))
                .min(row[j] + 1)
                .min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Every tree a look read, its processes' roots together.
pub(super) fn roots_of(trees: &[(u32, Result<Vec<UiNode>, strobe_ui::UiError>)]) -> Vec<UiNode> {
    trees
        .iter()
        .filter_map(|(_, t)| t.as_ref().ok())
        .flatten()
        .cloned()
        .collect()
}

/// A window as `debug_ui` answers it.
pub(super) fn ui_window(w: &strobe_ui::Window) -> super::ui::UiWindow {
    super::ui::UiWindow {
        title: w.title.clone(),
        pid: w.pid,
        bounds: [
            i64::from(w.bounds.x),
            i64::from(w.bounds.y),
            i64::from(w.bounds.width),
            i64::from(w.bounds.height),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strobe_ui::ids::identify;

    #[test]
    fn the_diff_names_added_removed_and_changed_ids() {
        let before: BTreeMap<String, String> = [("a", "a [x]"), ("b", "b [y]"), ("c", "c [z]")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let after: BTreeMap<String, String> = [("a", "a [x]"), ("b", "b [y2]"), ("d", "d [w]")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let d = diff(&before, &after);
        assert_eq!(d.added, vec!["d"]);
        assert_eq!(d.removed, vec!["c"]);
        assert_eq!(d.changed, vec!["b"]);
    }

    #[test]
    fn an_unknown_id_names_the_closest_ones() {
        let tree = vec![UiNode {
            role: "frame".into(),
            name: "demo".into(),
            children: vec![
                UiNode {
                    role: "push button".into(),
                    name: "Play".into(),
                    ..Default::default()
                },
                UiNode {
                    role: "label".into(),
                    name: "Title".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }];
        let ids = identify(&tree);
        let play = &ids[0].children[0].id;
        let typo = format!("{}0", &play[..play.len() - 1]);
        let e = unknown_id(&typo, &ids);
        assert!(e.contains(&format!("closest: \"{play}\"")), "{e}");
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
