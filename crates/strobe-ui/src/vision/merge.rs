//! What a vision model found, put into the accessibility tree.
//!
//! Each box is matched to the smallest node that holds most of it (more
//! than 60% of the box's own area: ENGINEERING.md measured that plain IoU ≥
//! 0.5 drops half the matches of text boxes, while this rule matched 41 of
//! 41). Then:
//! - **text** read where the node already says it (its name or value
//!   contains it) confirms that node: it is marked `↻merged`; so does a
//!   single glyph on a control (a slider's thumb, a check mark);
//! - a **shape** on a node the tree already knows as a control (one with
//!   actions or a value), or covering its node (IoU at least the
//!   `vision.iouMergeThreshold` setting), confirms it the same way;
//! - anything else is new: a node of its own (`⚡vision`) under the node
//!   that holds it, after that node's own children, so the ids of the
//!   tree's nodes do not move. Its role is `ocr text` or the shape's kind,
//!   its name the text read; its id follows the same rule as any node's.

use super::VisionBox;
use crate::{Bounds, UiNode, VisionMark};

/// A box holds a node's share of it when more than this of its own area
/// lies inside the node.
const CONTAINED: f64 = 0.6;

/// Counts of what a merge did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Merged {
    /// Nodes confirmed.
    pub confirmed: usize,
    /// Vision nodes added.
    pub added: usize,
}

/// Merges `boxes` (in the image's pixels; the image's top-left corner is
/// at `origin` on the display) into `roots`.
pub fn merge(
    roots: &mut [UiNode],
    boxes: &[VisionBox],
    origin: (i32, i32),
    iou_threshold: f64,
) -> Merged {
    let mut out = Merged::default();
    for b in boxes {
        let on_screen = Bounds {
            x: b.bounds.x + origin.0,
            y: b.bounds.y + origin.1,
            ..b.bounds
        };
        let Some(path) = smallest_holding(roots, &on_screen) else {
            continue; // outside every window
        };
        let node = at_path(roots, &path);
        let known_control = !node.actions.is_empty() || node.value.is_some();
        let confirms = match &b.text {
            // One glyph on a control is its decoration (a slider's thumb, a
            // check mark, an arrow), not a word of its own.
            Some(text) if known_control && text.chars().count() == 1 => true,
            Some(text) => says(node, text),
            None => {
                !node.actions.is_empty()
                    || node.value.is_some()
                    || node
                        .bounds
                        .is_some_and(|nb| iou(&nb, &on_screen) >= iou_threshold)
            }
        };
        let mark = VisionMark {
            new: !confirms,
            confidence: b.confidence,
        };
        if confirms {
            let keep = node.vision.is_none_or(|m| m.confidence < b.confidence);
            if keep {
                node.vision = Some(mark);
            }
            out.confirmed += 1;
        } else {
            node.children.push(UiNode {
                role: if b.text.is_some() {
                    "ocr text".into()
                } else {
                    b.kind.clone()
                },
                name: b.text.clone().unwrap_or_default(),
                bounds: Some(on_screen),
                states: vec!["showing".into()],
                vision: Some(mark),
                ..Default::default()
            });
            out.added += 1;
        }
    }
    out
}

/// Whether `node`'s name or value already says `text` (case and spacing
/// aside; a check mark or bullet the OCR read before it does not count).
fn says(node: &UiNode, text: &str) -> bool {
    let norm = |s: &str| {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let t = norm(text);
    if t.is_empty() {
        return true; // a stray mark: nothing new to say
    }
    [Some(node.name.as_str()), node.value.as_deref()]
        .into_iter()
        .flatten()
        .map(norm)
        .any(|s| !s.is_empty() && (s.contains(&t) || t.contains(&s)))
}

fn area(b: &Bounds) -> f64 {
    f64::from(b.width) * f64::from(b.height)
}

fn intersection(a: &Bounds, b: &Bounds) -> f64 {
    let x0 = a.x.max(b.x);
    let y0 = a.y.max(b.y);
    let x1 = (a.x + a.width as i32).min(b.x + b.width as i32);
    let y1 = (a.y + a.height as i32).min(b.y + b.height as i32);
    if x1 <= x0 || y1 <= y0 {
        0.0
    } else {
        f64::from(x1 - x0) * f64::from(y1 - y0)
    }
}

fn iou(a: &Bounds, b: &Bounds) -> f64 {
    let i = intersection(a, b);
    i / (area(a) + area(b) - i)
}

/// The path (child indices) to the smallest showing node holding most of
/// `b`.
fn smallest_holding(roots: &[UiNode], b: &Bounds) -> Option<Vec<usize>> {
    fn walk(
        nodes: &[UiNode],
        b: &Bounds,
        path: &mut Vec<usize>,
        best: &mut Option<(f64, Vec<usize>)>,
    ) {
        for (i, n) in nodes.iter().enumerate() {
            if !n.states.iter().any(|s| s == "showing") {
                continue;
            }
            path.push(i);
            if let Some(nb) = n.bounds
                && intersection(&nb, b) > CONTAINED * area(b)
                && best.as_ref().is_none_or(|(a, _)| area(&nb) <= *a)
            {
                *best = Some((area(&nb), path.clone()));
            }
            walk(&n.children, b, path, best);
            path.pop();
        }
    }
    let mut best = None;
    walk(roots, b, &mut Vec::new(), &mut best);
    best.map(|(_, p)| p)
}

fn at_path<'a>(roots: &'a mut [UiNode], path: &[usize]) -> &'a mut UiNode {
    let mut node = &mut roots[path[0]];
    for &i in &path[1..] {
        node = &mut node.children[i];
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(x: i32, y: i32, width: u32, height: u32) -> Bounds {
        Bounds {
            x,
            y,
            width,
            height,
        }
    }

    fn node(role: &str, name: &str, bounds: Bounds, children: Vec<UiNode>) -> UiNode {
        UiNode {
            role: role.into(),
            name: name.into(),
            bounds: Some(bounds),
            states: vec!["showing".into()],
            children,
            ..Default::default()
        }
    }

    fn found(bounds: Bounds, kind: &str, text: Option<&str>) -> VisionBox {
        VisionBox {
            bounds,
            kind: kind.into(),
            confidence: 0.9,
            text: text.map(str::to_string),
        }
    }

    #[test]
    fn known_text_confirms_its_node_and_painted_things_become_nodes() {
        let mut tree = vec![node(
            "frame",
            "demo",
            b(100, 50, 600, 400),
            vec![
                node("push button", "Play", b(100, 50, 300, 34), vec![]),
                node("drawing area", "", b(400, 300, 260, 120), vec![]),
            ],
        )];
        // The window's image starts at (100, 50) on the display.
        let boxes = [
            found(b(110, 4, 41, 27), "text", Some("Play")),
            found(b(410, 296, 88, 32), "text", Some("GAIN 7")),
            found(b(303, 267, 86, 86), "knob", None),
        ];
        let m = merge(&mut tree, &boxes, (100, 50), 0.5);
        assert_eq!(
            m,
            Merged {
                confirmed: 1,
                added: 2
            }
        );
        let play = &tree[0].children[0];
        assert_eq!(
            play.vision,
            Some(VisionMark {
                new: false,
                confidence: 0.9
            })
        );
        let area = &tree[0].children[1];
        assert_eq!(area.children.len(), 2);
        assert_eq!(area.children[0].role, "ocr text");
        assert_eq!(area.children[0].name, "GAIN 7");
        assert_eq!(area.children[0].bounds, Some(b(510, 346, 88, 32)));
        assert_eq!(area.children[1].role, "knob");
        assert!(area.children[1].vision.unwrap().new);
    }

    #[test]
    fn a_shape_on_a_known_control_confirms_it() {
        let mut tree = vec![node(
            "frame",
            "demo",
            b(0, 0, 400, 300),
            vec![UiNode {
                actions: vec!["click".into()],
                ..node("check box", "Loop", b(0, 170, 300, 22), vec![])
            }],
        )];
        let m = merge(
            &mut tree,
            &[found(b(4, 173, 16, 16), "button", None)],
            (0, 0),
            0.5,
        );
        assert_eq!(
            m,
            Merged {
                confirmed: 1,
                added: 0
            }
        );
        // Text nowhere in the tree's words, on a node that holds it: new.
        let m = merge(
            &mut tree,
            &[found(b(30, 173, 40, 16), "text", Some("Loop!"))],
            (0, 0),
            0.5,
        );
        assert_eq!(m.confirmed, 1, "punctuation aside, it says Loop");
        let m = merge(
            &mut tree,
            &[found(b(500, 500, 10, 10), "text", Some("x"))],
            (0, 0),
            0.5,
        );
        assert_eq!(m, Merged::default(), "outside every window");
    }
}
