//! Input plans: what a click, a drag, a scroll, typing or a chord is as
//! steps of input. Pure: the steps are sent by a backend.

use std::time::Duration;

use crate::{Bounds, Button, InputStep, Key};

/// The point at the middle of `b`.
pub fn center(b: &Bounds) -> (i32, i32) {
    (b.x + (b.width / 2) as i32, b.y + (b.height / 2) as i32)
}

/// How long a toolkit is given between steps that must not merge: the
/// press and the first motion of a drag (GTK starts a drag only after its
/// threshold is crossed in a separate motion event), the clicks of a
/// double click (well inside every toolkit's double-click time).
const SETTLE: Duration = Duration::from_millis(20);

/// `count` clicks of `button` at (`x`, `y`).
pub fn click(x: i32, y: i32, button: Button, count: u8) -> Vec<InputStep> {
    let mut steps = vec![InputStep::MoveTo { x, y }];
    for i in 0..count.max(1) {
        if i > 0 {
            steps.push(InputStep::Pause(SETTLE));
        }
        steps.push(InputStep::Press(button));
        steps.push(InputStep::Release(button));
    }
    steps
}

/// A drag with the left button from `from` to `to`, through intermediate
/// motion events (a toolkit that follows motion sees a path, not a jump).
pub fn drag(from: (i32, i32), to: (i32, i32)) -> Vec<InputStep> {
    let (dx, dy) = (to.0 - from.0, to.1 - from.1);
    let n = ((dx.abs().max(dy.abs()) / 8) as usize).clamp(4, 40);
    let mut steps = vec![
        InputStep::MoveTo {
            x: from.0,
            y: from.1,
        },
        InputStep::Press(Button::Left),
        InputStep::Pause(SETTLE),
    ];
    for i in 1..=n {
        steps.push(InputStep::MoveTo {
            x: from.0 + dx * i as i32 / n as i32,
            y: from.1 + dy * i as i32 / n as i32,
        });
        steps.push(InputStep::Pause(Duration::from_millis(2)));
    }
    steps.push(InputStep::Pause(SETTLE));
    steps.push(InputStep::Release(Button::Left));
    steps
}

/// `amount` notches of the wheel in `button`'s direction at (`x`, `y`).
pub fn scroll(x: i32, y: i32, button: Button, amount: u32) -> Vec<InputStep> {
    let mut steps = vec![InputStep::MoveTo { x, y }];
    for _ in 0..amount {
        steps.push(InputStep::Press(button));
        steps.push(InputStep::Release(button));
    }
    steps
}

/// The keys that type `text`: each character's key (named for a newline
/// or a tab).
pub fn type_text(text: &str) -> Vec<InputStep> {
    text.chars()
        .flat_map(|c| {
            let key = match c {
                '\n' => Key::Named("enter"),
                '\t' => Key::Named("tab"),
                ' ' => Key::Named("space"),
                c => Key::Char(c),
            };
            [
                InputStep::KeyDown(key.clone()),
                InputStep::KeyUp(key),
                InputStep::Pause(Duration::from_millis(5)),
            ]
        })
        .collect()
}

/// `key` pressed with `modifiers` held.
pub fn chord(key: Key, modifiers: &[&'static str]) -> Vec<InputStep> {
    let mut steps: Vec<InputStep> = modifiers
        .iter()
        .map(|m| InputStep::KeyDown(Key::Named(m)))
        .collect();
    steps.push(InputStep::KeyDown(key.clone()));
    steps.push(InputStep::KeyUp(key));
    steps.extend(
        modifiers
            .iter()
            .rev()
            .map(|m| InputStep::KeyUp(Key::Named(m))),
    );
    steps
}

/// A plan as the reply shows it: `move 110,40; press left; release left`,
/// with pauses and runs of motion folded.
pub fn describe(steps: &[InputStep]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut moves = 0usize;
    let flush = |out: &mut Vec<String>, moves: &mut usize, last: Option<(i32, i32)>| {
        if *moves > 1 {
            if let Some((x, y)) = last {
                out.push(format!("move through {} points to {x},{y}", *moves));
            }
        } else if *moves == 1
            && let Some((x, y)) = last
        {
            out.push(format!("move to {x},{y}"));
        }
        *moves = 0;
    };
    let mut last = None;
    for s in steps {
        match s {
            InputStep::MoveTo { x, y } => {
                moves += 1;
                last = Some((*x, *y));
            }
            InputStep::Pause(_) => {}
            other => {
                flush(&mut out, &mut moves, last);
                out.push(match other {
                    InputStep::Press(b) => format!("press {}", button_name(*b)),
                    InputStep::Release(b) => format!("release {}", button_name(*b)),
                    InputStep::KeyDown(k) => format!("key down {}", key_name(k)),
                    InputStep::KeyUp(k) => format!("key up {}", key_name(k)),
                    InputStep::FocusWindow(w) => format!("focus window {w:#x}"),
                    InputStep::MoveTo { .. } | InputStep::Pause(_) => unreachable!(),
                });
            }
        }
    }
    flush(&mut out, &mut moves, last);
    out
}

fn button_name(b: Button) -> &'static str {
    match b {
        Button::Left => "left",
        Button::Middle => "middle",
        Button::Right => "right",
        Button::WheelUp => "wheel up",
        Button::WheelDown => "wheel down",
        Button::WheelLeft => "wheel left",
        Button::WheelRight => "wheel right",
    }
}

fn key_name(k: &Key) -> String {
    match k {
        Key::Named(n) => (*n).to_string(),
        Key::Char(c) => format!("{c:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_double_right_click_presses_twice_with_a_pause() {
        let s = click(10, 20, Button::Right, 2);
        assert_eq!(s[0], InputStep::MoveTo { x: 10, y: 20 });
        let presses = s
            .iter()
            .filter(|x| **x == InputStep::Press(Button::Right))
            .count();
        assert_eq!(presses, 2);
        assert_eq!(
            describe(&s),
            vec![
                "move to 10,20",
                "press right",
                "release right",
                "press right",
                "release right"
            ]
        );
    }

    #[test]
    fn a_drag_moves_through_points_between_press_and_release() {
        let s = drag((0, 0), (0, 100));
        let moves: Vec<_> = s
            .iter()
            .filter_map(|x| match x {
                InputStep::MoveTo { x, y } => Some((*x, *y)),
                _ => None,
            })
            .collect();
        assert!(moves.len() >= 5, "{moves:?}");
        assert_eq!(moves.last(), Some(&(0, 100)));
        assert!(moves.windows(2).all(|w| w[1].1 >= w[0].1));
        let d = describe(&s);
        assert_eq!(d[0], "move to 0,0");
        assert_eq!(d[1], "press left");
        assert!(d[2].starts_with("move through"), "{d:?}");
        assert_eq!(d[3], "release left");
    }

    #[test]
    fn typing_and_chords_press_and_release_every_key() {
        let t = type_text("a b\n");
        assert_eq!(t.len(), 12);
        assert_eq!(t[3], InputStep::KeyDown(Key::Named("space")));
        assert_eq!(t[9], InputStep::KeyDown(Key::Named("enter")));
        let c = chord(Key::Char('c'), &["ctrl", "shift"]);
        assert_eq!(c.first(), Some(&InputStep::KeyDown(Key::Named("ctrl"))));
        assert_eq!(c.last(), Some(&InputStep::KeyUp(Key::Named("ctrl"))));
        assert_eq!(c[2], InputStep::KeyDown(Key::Char('c')));
        assert_eq!(scroll(1, 2, Button::WheelDown, 3).len(), 7);
    }
}
