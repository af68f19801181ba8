//! The motor layer's platform-independent half: what an agent asks for
//! ([`Intent`]), the input plans that carry it out (`plan.rs`), key names
//! (`keys.rs`), and learning to set the value of a widget with no native
//! route (`learn.rs`).
//!
//! The session decides the route (native first, input second), checks
//! that input may be sent, verifies, and keeps learned plans; this module
//! holds what needs no session and no display, so it is tested alone.

pub mod keys;
pub mod learn;
pub mod plan;

use crate::Button;

/// Where a drag ends.
#[derive(Debug, Clone, PartialEq)]
pub enum DragTarget {
    /// On this node (its middle).
    Node(String),
    /// At this point of the display.
    Point {
        /// Display x.
        x: i32,
        /// Display y.
        y: i32,
    },
}

/// A value to set.
#[derive(Debug, Clone, PartialEq)]
pub enum SetTo {
    /// A number (sliders, spin buttons, knobs).
    Number(f64),
    /// On or off (check boxes, toggles).
    Bool(bool),
    /// An item's text (combo boxes).
    Text(String),
}

/// A scroll direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Up.
    Up,
    /// Down.
    Down,
    /// Left.
    Left,
    /// Right.
    Right,
}

impl Direction {
    /// The wheel button that scrolls this way.
    pub fn button(self) -> Button {
        match self {
            Direction::Up => Button::WheelUp,
            Direction::Down => Button::WheelDown,
            Direction::Left => Button::WheelLeft,
            Direction::Right => Button::WheelRight,
        }
    }
}

/// What an agent wants done: the intent, not the input.
#[derive(Debug, Clone, PartialEq)]
pub enum Intent {
    /// Click a node.
    Click {
        /// The node.
        id: String,
        /// Which button.
        button: Button,
        /// 1 or 2.
        count: u8,
    },
    /// Set a node's value.
    SetValue {
        /// The node.
        id: String,
        /// To what.
        value: SetTo,
    },
    /// Type into a node.
    Type {
        /// The node.
        id: String,
        /// What to type.
        text: String,
        /// Replace its text rather than insert at the caret.
        replace: bool,
    },
    /// Select an item of a list, combo box or menu by its text.
    Select {
        /// The list, combo box or menu.
        id: String,
        /// The item's text.
        item: String,
    },
    /// Scroll over a node.
    Scroll {
        /// The node.
        id: String,
        /// Which way.
        direction: Direction,
        /// Wheel notches.
        amount: u32,
    },
    /// Drag from one node to another node or a point.
    Drag {
        /// Where the drag starts.
        from: String,
        /// Where it ends.
        to: DragTarget,
    },
    /// Press a key, with modifiers held, optionally after focusing a node.
    Key {
        /// The key.
        key: crate::Key,
        /// Modifiers held ("ctrl", "shift", "alt", "super").
        modifiers: Vec<&'static str>,
        /// Focus this node first.
        id: Option<String>,
    },
    /// Give a node keyboard focus.
    Focus {
        /// The node.
        id: String,
    },
}

impl Intent {
    /// Its `type`, as the tool names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Intent::Click { .. } => "click",
            Intent::SetValue { .. } => "set_value",
            Intent::Type { .. } => "type",
            Intent::Select { .. } => "select",
            Intent::Scroll { .. } => "scroll",
            Intent::Drag { .. } => "drag",
            Intent::Key { .. } => "key",
            Intent::Focus { .. } => "focus",
        }
    }

    /// The node it acts on, if any (a key with no `id` goes wherever
    /// focus is).
    pub fn node(&self) -> Option<&str> {
        match self {
            Intent::Click { id, .. }
            | Intent::SetValue { id, .. }
            | Intent::Type { id, .. }
            | Intent::Select { id, .. }
            | Intent::Scroll { id, .. }
            | Intent::Focus { id } => Some(id),
            Intent::Drag { from, .. } => Some(from),
            Intent::Key { id, .. } => id.as_deref(),
        }
    }
}

/// A number as a person writes it: `0.5`, `3`, not `0.500000`; a huge or
/// tiny one in exponent form (`1e308`, `2.5e-7`), never hundreds of digits.
pub fn format_value(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        format!("{v}")
    } else if a >= 1e15 || (a != 0.0 && a < 1e-4) {
        // Shortest digits that read back as `v`, as Rust's `{:e}` gives.
        format!("{v:e}")
    } else if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Whether `text` can be typed: no control character but a new line or a
/// tab (which have keys of their own). A NUL in particular cannot go
/// through the accessibility bus at all (D-Bus strings cannot hold one:
/// the bus drops the connection that sends it), and no key types it.
pub fn typeable(text: &str) -> Result<(), String> {
    match text
        .chars()
        .enumerate()
        .find(|(_, c)| c.is_control() && *c != '\n' && *c != '\t')
    {
        None => Ok(()),
        Some((at, c)) => Err(format!(
            "'text' holds the control character U+{:04X}{} at character {}: no key types it{}. Type only text (new lines as \\n, tabs as \\t), and press other keys with {{type: \"key\", key: \"enter\"}} (or escape, backspace, …)",
            c as u32,
            if c == '\0' { " (NUL)" } else { "" },
            at + 1,
            if c == '\0' {
                ", and the accessibility bus cannot carry it"
            } else {
                ""
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_intent_names_its_type_and_node() {
        let i = Intent::Drag {
            from: "btn#1".into(),
            to: DragTarget::Point { x: 1, y: 2 },
        };
        assert_eq!((i.kind(), i.node()), ("drag", Some("btn#1")));
        let k = Intent::Key {
            key: crate::Key::Char('a'),
            modifiers: vec!["ctrl"],
            id: None,
        };
        assert_eq!((k.kind(), k.node()), ("key", None));
        assert_eq!(format_value(0.5), "0.5");
        assert_eq!(format_value(3.0), "3");
    }

    #[test]
    fn huge_and_tiny_numbers_are_written_short() {
        assert_eq!(format_value(1e308), "1e308");
        assert_eq!(format_value(-1.5e20), "-1.5e20");
        assert_eq!(format_value(2.5e-7), "2.5e-7");
        assert_eq!(format_value(123_456_789.0), "123456789");
        assert_eq!(format_value(0.0), "0");
        assert_eq!(format_value(0.25), "0.25");
    }

    #[test]
    fn text_with_a_nul_or_a_control_character_cannot_be_typed() {
        assert!(typeable("two\nlines\tand a tab, é✓").is_ok());
        let e = typeable("a\0b").unwrap_err();
        assert!(
            e.contains("U+0000 (NUL) at character 2") && e.contains("accessibility bus"),
            "{e}"
        );
        let e = typeable("\u{7}").unwrap_err();
        assert!(e.contains("U+0007 at character 1"), "{e}");
    }
}
