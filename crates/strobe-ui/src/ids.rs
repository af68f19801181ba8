//! Stable node ids: the same node gets the same id on every `debug_ui`
//! call while the UI around it is unchanged, on every platform.
//!
//! The rule: a node's id is its role's abbreviation, `#`, and six hex
//! digits of a hash of (its parent's id, its role, its name, its rank),
//! where the rank counts the siblings before it with the same role and
//! name. So an id depends only on the node's own chain of ancestors and on
//! the same-looking siblings before it: a row added to another panel, a
//! label renamed elsewhere, or a sibling of a different role or name
//! inserted before it leaves it unchanged. Two nodes that still get the
//! same id (a hash collision) are told apart by a suffix, `-2`, `-3`, in
//! tree order.

use crate::UiNode;
use std::collections::HashMap;

/// A node with its stable id, and its children likewise.
#[derive(Debug, Clone, PartialEq)]
pub struct Identified<'a> {
    /// Its id (`btn#5c8a12`).
    pub id: String,
    /// The node as the backend reported it (its `children` are not used:
    /// they are below, identified).
    pub node: &'a UiNode,
    /// Its children, in the platform's order.
    pub children: Vec<Identified<'a>>,
}

/// The short role names ids and the compact rendering use.
const ABBREVIATIONS: [(&str, &str); 46] = [
    ("frame", "w"),
    ("window", "w"),
    ("dialog", "dlg"),
    ("alert", "alr"),
    ("push button", "btn"),
    ("toggle button", "tgl"),
    ("check box", "chk"),
    ("radio button", "rad"),
    ("slider", "sld"),
    ("spin button", "spn"),
    ("scroll bar", "sb"),
    ("progress bar", "pb"),
    ("label", "lbl"),
    ("text", "txt"),
    ("entry", "txt"),
    ("password text", "pwd"),
    ("combo box", "cmb"),
    ("list", "lst"),
    ("list box", "lst"),
    ("list item", "li"),
    ("menu bar", "mb"),
    ("menu", "mnu"),
    ("menu item", "mi"),
    ("check menu item", "mi"),
    ("radio menu item", "mi"),
    ("tool bar", "tb"),
    ("status bar", "st"),
    ("page tab list", "tabs"),
    ("page tab", "tab"),
    ("table", "tbl"),
    ("table cell", "cell"),
    ("tree table", "tree"),
    ("tree", "tree"),
    ("tree item", "ti"),
    ("panel", "pnl"),
    ("filler", "pnl"),
    ("scroll pane", "scr"),
    ("separator", "sep"),
    ("image", "img"),
    ("link", "lnk"),
    ("drawing area", "draw"),
    ("heading", "h"),
    // Nodes vision found (vision/merge.rs).
    ("ocr text", "ocr"),
    ("knob", "knob"),
    ("toggle", "tgl"),
    ("button", "btn"),
];

/// The abbreviation of platform role `role`: a known one, else the first
/// letters of its words (at most three: "document web" → "dw").
pub fn abbreviate(role: &str) -> String {
    if let Some((_, a)) = ABBREVIATIONS.iter().find(|(r, _)| *r == role) {
        return (*a).to_string();
    }
    let initials: String = role
        .split_whitespace()
        .filter_map(|w| w.chars().next())
        .take(3)
        .collect();
    if initials.is_empty() {
        "n".to_string()
    } else {
        initials.to_lowercase()
    }
}

/// FNV-1a, 64-bit: stable across runs and platforms (std's hasher is not).
fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Gives every node of `roots` (one per window) its stable id.
pub fn identify(roots: &[UiNode]) -> Vec<Identified<'_>> {
    let mut seen = HashMap::new();
    siblings(roots, "", &mut seen)
}

fn siblings<'a>(
    nodes: &'a [UiNode],
    parent: &str,
    seen: &mut HashMap<String, u32>,
) -> Vec<Identified<'a>> {
    let mut ranks: HashMap<(&str, &str), u32> = HashMap::new();
    let mut out = Vec::with_capacity(nodes.len());
    for node in nodes {
        let rank = ranks
            .entry((node.role.as_str(), node.name.as_str()))
            .or_insert(0);
        let hash = fnv(&[parent, &node.role, &node.name, &rank.to_string()]);
        *rank += 1;
        let base = format!("{}#{:06x}", abbreviate(&node.role), hash & 0xff_ffff);
        let count = seen.entry(base.clone()).or_insert(0);
        *count += 1;
        let id = if *count == 1 {
            base
        } else {
            format!("{base}-{count}")
        };
        let children = siblings(&node.children, &id, seen);
        out.push(Identified { id, node, children });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(role: &str, name: &str, children: Vec<UiNode>) -> UiNode {
        UiNode {
            role: role.into(),
            name: name.into(),
            children,
            ..UiNode::default()
        }
    }

    fn ids(tree: &[Identified<'_>], out: &mut Vec<(String, String)>) {
        for i in tree {
            out.push((i.node.name.clone(), i.id.clone()));
            ids(&i.children, out);
        }
    }

    fn all_ids(roots: &[UiNode]) -> HashMap<String, String> {
        let mut out = Vec::new();
        ids(&identify(roots), &mut out);
        out.into_iter().collect()
    }

    fn window(rows: &[&str], extra: Option<&str>) -> Vec<UiNode> {
        let mut left: Vec<UiNode> = rows.iter().map(|r| n("list item", r, vec![])).collect();
        if let Some(e) = extra {
            left.insert(0, n("list item", e, vec![]));
        }
        vec![n(
            "frame",
            "demo",
            vec![
                n("list", "tracks", left),
                n(
                    "panel",
                    "",
                    vec![
                        n("push button", "Play", vec![]),
                        n("slider", "Volume", vec![]),
                    ],
                ),
            ],
        )]
    }

    #[test]
    fn ids_are_stable_and_survive_changes_elsewhere() {
        let before = all_ids(&window(&["a", "b"], None));
        assert_eq!(before, all_ids(&window(&["a", "b"], None)));
        assert!(before["Play"].starts_with("btn#"), "{before:?}");
        assert!(before["Volume"].starts_with("sld#"), "{before:?}");
        assert!(before["demo"].starts_with("w#"), "{before:?}");
        // A new row in the list: the panel's nodes and the other rows keep
        // their ids.
        let after = all_ids(&window(&["a", "b"], Some("new")));
        for name in ["Play", "Volume", "a", "b", "tracks", "demo"] {
            assert_eq!(before[name], after[name], "{name}");
        }
    }

    #[test]
    fn same_looking_siblings_differ_by_rank_and_collisions_get_a_suffix() {
        let roots = vec![n(
            "frame",
            "w",
            vec![
                n("push button", "OK", vec![]),
                n("push button", "OK", vec![]),
            ],
        )];
        let tree = identify(&roots);
        let (a, b) = (&tree[0].children[0].id, &tree[0].children[1].id);
        assert_ne!(a, b);
        // A forced collision: the same base twice gets -2.
        let mut seen = HashMap::new();
        let twice = [n("label", "x", vec![])];
        let first = siblings(&twice, "p", &mut seen);
        let second = siblings(&twice, "p", &mut seen);
        assert_eq!(second[0].id, format!("{}-2", first[0].id));
    }

    #[test]
    fn roles_are_abbreviated() {
        assert_eq!(abbreviate("push button"), "btn");
        assert_eq!(abbreviate("document web"), "dw");
        assert_eq!(abbreviate(""), "n");
    }
}
