//! The compact text of an accessibility tree `debug_ui` replies with: one
//! node a line, indented two spaces a level,
//!
//! ```text
//! w#a3f2b9 [Strobe demo] (800x600+0+0)
//!   btn#5c8a12 [Play] (120x40+100+100) press
//!   sld#d4e1f3 [Volume] (200x20+100+200) val=0.5
//! ```
//!
//! id, [name], geometry (`WxH+X+Y`), actions, then `val=` and the states
//! that matter (focused, checked, disabled, …). Hidden nodes (no
//! "showing" state) are left out unless asked for. A cap on the nodes
//! shown keeps the upper levels first (breadth first); every cut is said,
//! with the id to ask for: nothing is dropped silently.

use crate::ids::Identified;

/// What to show.
#[derive(Debug, Clone, Copy)]
pub struct Shown {
    /// At most this many nodes.
    pub max_nodes: usize,
    /// Hidden nodes too.
    pub all: bool,
}

/// A rendering: the lines, and what was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The tree, one node a line, then one line per cut.
    pub text: String,
    /// Nodes shown.
    pub shown: usize,
    /// Nodes cut by the cap.
    pub cut: usize,
    /// Hidden nodes left out.
    pub hidden: usize,
    /// The ids of the nodes shown, in the text's order.
    pub shown_ids: Vec<String>,
}

/// States worth a word on a node's line.
const STATES_SHOWN: [&str; 8] = [
    "focused", "checked", "pressed", "selected", "expanded", "disabled", "editable", "modal",
];

/// Whether `n` is left out as hidden.
fn hidden(n: &Identified<'_>, all: bool) -> bool {
    !all && !n.node.states.iter().any(|s| s == "showing")
}

/// The subtree rooted at the node with id `id`, if there is one.
pub fn find<'t, 'a>(roots: &'t [Identified<'a>], id: &str) -> Option<&'t Identified<'a>> {
    roots.iter().find_map(|r| {
        if r.id == id {
            Some(r)
        } else {
            find(&r.children, id)
        }
    })
}

/// Counts the nodes under `n` (itself included) that are not hidden, and
/// those that are.
fn size(n: &Identified<'_>, all: bool) -> (usize, usize) {
    if hidden(n, all) {
        let (a, b) = n
            .children
            .iter()
            .map(|c| size(c, true))
            .fold((0, 0), |x, y| (x.0 + y.0, x.1 + y.1));
        return (0, 1 + a + b);
    }
    n.children
        .iter()
        .map(|c| size(c, all))
        .fold((1, 0), |x, y| (x.0 + y.0, x.1 + y.1))
}

/// Renders `roots` (a whole tree, or the subtree `find` gave).
pub fn render(roots: &[&Identified<'_>], shown: Shown) -> Rendered {
    // Breadth first: which nodes fit under the cap.
    let mut picked = std::collections::HashSet::new();
    let mut level: Vec<&Identified<'_>> = roots
        .iter()
        .copied()
        .filter(|n| !hidden(n, shown.all))
        .collect();
    while !level.is_empty() && picked.len() < shown.max_nodes {
        let mut next = Vec::new();
        for n in level {
            if picked.len() >= shown.max_nodes {
                break;
            }
            picked.insert(n.id.as_str());
            next.extend(n.children.iter().filter(|c| !hidden(c, shown.all)));
        }
        level = next;
    }
    let mut out = Rendered {
        text: String::new(),
        shown: 0,
        cut: 0,
        hidden: 0,
        shown_ids: Vec::new(),
    };
    let mut cuts = Vec::new();
    for r in roots {
        let (visible, hid) = size(r, shown.all);
        out.hidden += hid;
        if visible > 0 && !picked.contains(r.id.as_str()) {
            out.cut += visible;
            cuts.push(format!(
                "{visible} nodes of window {} not shown; ask with id: \"{}\"",
                r.id, r.id
            ));
            continue;
        }
        walk(r, 0, shown.all, &picked, &mut out, &mut cuts);
    }
    for c in cuts {
        out.text.push_str(&c);
        out.text.push('\n');
    }
    if out.hidden > 0 {
        out.text.push_str(&format!(
            "{} hidden nodes left out (all: true shows them)\n",
            out.hidden
        ));
    }
    out
}

fn walk(
    n: &Identified<'_>,
    depth: usize,
    all: bool,
    picked: &std::collections::HashSet<&str>,
    out: &mut Rendered,
    cuts: &mut Vec<String>,
) {
    if hidden(n, all) {
        return;
    }
    out.shown += 1;
    out.shown_ids.push(n.id.clone());
    out.text.push_str(&"  ".repeat(depth));
    out.text.push_str(&line(n));
    out.text.push('\n');
    let mut unshown = 0;
    for c in &n.children {
        if hidden(c, all) {
            continue;
        }
        if picked.contains(c.id.as_str()) {
            walk(c, depth + 1, all, picked, out, cuts);
        } else {
            unshown += size(c, all).0;
        }
    }
    if unshown > 0 {
        out.cut += unshown;
        cuts.push(format!(
            "{unshown} nodes under {} not shown; ask with id: \"{}\"",
            n.id, n.id
        ));
    }
}

/// One node's line (without its indentation).
pub fn line(n: &Identified<'_>) -> String {
    let node = n.node;
    let mut s = format!("{} [{}]", n.id, node.name);
    if let Some(b) = node.bounds {
        s.push_str(&format!(" ({}x{}+{}+{})", b.width, b.height, b.x, b.y));
    }
    for a in &node.actions {
        s.push(' ');
        s.push_str(a);
    }
    if let Some(v) = &node.value {
        s.push_str(&format!(" val={v}"));
    }
    for st in node
        .states
        .iter()
        .filter(|s| STATES_SHOWN.contains(&s.as_str()))
    {
        s.push(' ');
        s.push_str(st);
    }
    if let Some(m) = node.vision {
        let mark = if m.new { "⚡vision" } else { "↻merged" };
        s.push_str(&format!(" {mark}({:.1})", m.confidence));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::identify;
    use crate::{Bounds, UiNode};

    fn n(role: &str, name: &str, showing: bool, children: Vec<UiNode>) -> UiNode {
        UiNode {
            role: role.into(),
            name: name.into(),
            states: if showing {
                vec!["showing".into()]
            } else {
                vec![]
            },
            children,
            ..UiNode::default()
        }
    }

    fn demo(rows: usize) -> Vec<UiNode> {
        let mut play = n("push button", "Play", true, vec![]);
        play.bounds = Some(Bounds {
            x: 100,
            y: 100,
            width: 120,
            height: 40,
        });
        play.actions = vec!["press".into()];
        let mut volume = n("slider", "Volume", true, vec![]);
        volume.value = Some("0.5".into());
        volume.states.push("focused".into());
        let list = (0..rows)
            .map(|i| n("list item", &format!("row {i}"), true, vec![]))
            .collect();
        let mut frame = n(
            "frame",
            "Strobe demo",
            true,
            vec![
                play,
                volume,
                n("list", "tracks", true, list),
                n("label", "secret", false, vec![]),
            ],
        );
        frame.bounds = Some(Bounds {
            x: 0,
            y: 0,
            width: 800,
            height: 600,
        });
        vec![frame]
    }

    #[test]
    fn nodes_render_one_a_line_with_geometry_actions_values_and_states() {
        let roots = demo(2);
        let tree = identify(&roots);
        let r = render(
            &tree.iter().collect::<Vec<_>>(),
            Shown {
                max_nodes: 200,
                all: false,
            },
        );
        let lines: Vec<&str> = r.text.lines().collect();
        assert!(
            lines[0].starts_with("w#") && lines[0].ends_with("[Strobe demo] (800x600+0+0)"),
            "{}",
            r.text
        );
        assert!(
            lines[1].starts_with("  btn#") && lines[1].ends_with("[Play] (120x40+100+100) press"),
            "{}",
            r.text
        );
        assert!(lines[2].ends_with("[Volume] val=0.5 focused"), "{}", r.text);
        assert!(lines[4].starts_with("    li#"), "{}", r.text);
        assert_eq!((r.shown, r.cut, r.hidden), (6, 0, 1));
        assert_eq!(
            lines.last().unwrap(),
            &"1 hidden nodes left out (all: true shows them)"
        );
        let all = render(
            &tree.iter().collect::<Vec<_>>(),
            Shown {
                max_nodes: 200,
                all: true,
            },
        );
        assert!(
            all.text.contains("[secret]") && all.hidden == 0,
            "{}",
            all.text
        );
    }

    #[test]
    fn a_cap_keeps_the_upper_levels_and_says_what_it_cut_and_how_to_ask() {
        let roots = demo(412);
        let tree = identify(&roots);
        let r = render(
            &tree.iter().collect::<Vec<_>>(),
            Shown {
                max_nodes: 5,
                all: false,
            },
        );
        assert_eq!(r.shown, 5, "{}", r.text);
        assert_eq!(
            r.shown + r.cut,
            416,
            "every visible node shown or counted: {}",
            r.text
        );
        let list = find(&tree, &tree[0].children[2].id).unwrap();
        assert!(
            r.text.contains(&format!(
                "411 nodes under {} not shown; ask with id: \"{}\"",
                list.id, list.id
            )),
            "{}",
            r.text
        );
        // Asked for by id: that subtree alone.
        let sub = render(
            &[list],
            Shown {
                max_nodes: 1000,
                all: false,
            },
        );
        assert_eq!((sub.shown, sub.cut), (413, 0));
        assert!(sub.text.starts_with("lst#"), "{}", sub.text);
    }
}
