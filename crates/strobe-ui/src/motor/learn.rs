//! Setting the value of a widget that has no native route (a knob drawn
//! on a canvas): strategies tried in order until one moves the value,
//! calibrated from what it did, and kept as a [`Plan`] for the next time.
//!
//! Pure logic over a [`Readout`] (send input, read the value back), so the
//! search and the calibration are tested here against simulated widgets;
//! the session supplies the real readout (the accessibility value, the
//! number vision reads beside the widget, or a watched variable).

use serde::{Deserialize, Serialize};

use super::plan;
use crate::{Bounds, Button, InputStep, Key, UiError};

/// A way to move a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Press on the widget and drag up or down.
    VerticalDrag,
    /// Press on the widget and drag left or right.
    HorizontalDrag,
    /// Turn the wheel over it.
    Wheel,
    /// Click at the position along it that stands for the value.
    ClickAt,
    /// Click it for focus, then press the arrow keys.
    ArrowKeys,
}

/// The strategies in the order they are tried.
pub const ORDER: [Strategy; 5] = [
    Strategy::VerticalDrag,
    Strategy::HorizontalDrag,
    Strategy::Wheel,
    Strategy::ClickAt,
    Strategy::ArrowKeys,
];

impl Strategy {
    /// How the reply names it.
    pub fn label(self) -> &'static str {
        match self {
            Strategy::VerticalDrag => "vertical drag",
            Strategy::HorizontalDrag => "horizontal drag",
            Strategy::Wheel => "wheel",
            Strategy::ClickAt => "click at position",
            Strategy::ArrowKeys => "arrow keys",
        }
    }
}

/// A learned way to set a widget's value, with its calibration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// How.
    pub strategy: Strategy,
    /// Input per unit of value, signed so that a positive amount raises
    /// it: pixels along the axis (screen coordinates, +x right, +y down)
    /// for drags and click positions, wheel notches up, arrow presses up.
    pub per_unit: f64,
    /// Click at position: the value at the widget's left (or top) edge.
    #[serde(default)]
    pub origin: f64,
    /// Click at position: along the vertical axis.
    #[serde(default)]
    pub vertical: bool,
    /// Where the widget's value is painted, relative to its top-left
    /// corner (`[x, y, width, height]`), once a readout found it: the next
    /// reading looks there only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readout: Option<[i32; 4]>,
}

impl Plan {
    /// How the reply names it: `vertical drag, 10 px/unit`.
    pub fn describe(&self) -> String {
        let unit = match self.strategy {
            Strategy::Wheel => "notches",
            Strategy::ArrowKeys => "presses",
            _ => "px",
        };
        let v = self.per_unit.abs();
        let v = if v >= 10.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.2}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        };
        format!("{}, {v} {unit}/unit", self.strategy.label())
    }

    /// The input that moves the value of the widget at `bounds` from
    /// `current` to `target`.
    pub fn steps(&self, bounds: &Bounds, current: f64, target: f64) -> Vec<InputStep> {
        let (cx, cy) = plan::center(bounds);
        let delta = target - current;
        match self.strategy {
            Strategy::VerticalDrag => {
                plan::drag((cx, cy), (cx, cy + (delta * self.per_unit).round() as i32))
            }
            Strategy::HorizontalDrag => {
                plan::drag((cx, cy), (cx + (delta * self.per_unit).round() as i32, cy))
            }
            Strategy::Wheel => {
                let n = (delta * self.per_unit).round() as i64;
                let b = if n > 0 {
                    Button::WheelUp
                } else {
                    Button::WheelDown
                };
                plan::scroll(cx, cy, b, n.unsigned_abs().min(1_000) as u32)
            }
            Strategy::ClickAt => {
                let at = ((target - self.origin) * self.per_unit).round() as i32;
                if self.vertical {
                    let y = (bounds.y + at).clamp(bounds.y, bounds.y + bounds.height as i32 - 1);
                    plan::click(cx, y, Button::Left, 1)
                } else {
                    let x = (bounds.x + at).clamp(bounds.x, bounds.x + bounds.width as i32 - 1);
                    plan::click(x, cy, Button::Left, 1)
                }
            }
            Strategy::ArrowKeys => {
                let n = (delta * self.per_unit).round() as i64;
                let key = Key::Named(if n > 0 { "up" } else { "down" });
                let mut s = plan::click(cx, cy, Button::Left, 1);
                for _ in 0..n.unsigned_abs().min(1_000) {
                    s.push(InputStep::KeyDown(key.clone()));
                    s.push(InputStep::KeyUp(key.clone()));
                }
                s
            }
        }
    }
}

/// A widget as the learner sees it: input in, its value back.
pub trait Readout {
    /// Sends input to the widget.
    fn send(&mut self, steps: &[InputStep]) -> Result<(), UiError>;
    /// The value now, waiting a little for it to move off `previous`
    /// (the program needs a moment to react and repaint). `None`: it
    /// cannot be read.
    fn value(&mut self, previous: f64) -> Option<f64>;
}

/// What learning found.
#[derive(Debug, Clone, PartialEq)]
pub struct Learned {
    /// The plan that reached the target, calibrated.
    pub plan: Plan,
    /// The value read at the end.
    pub value: f64,
    /// What each strategy tried did, in order (`vertical drag: moved
    /// 7 → 9, 10 px/unit`).
    pub tried: Vec<String>,
}

/// Why no plan was learned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no strategy moved the value: {}", tried.join("; "))]
pub struct NotLearned {
    /// What each strategy did.
    pub tried: Vec<String>,
    /// The value read at the end.
    pub value: f64,
}

/// How far a drag probes (pixels): small, so a value near its end is not
/// pushed far past it.
const PROBE_PX: f64 = 30.0;

/// Corrections after the first move, each calibrated on all the motion so
/// far (a readout that shows whole numbers calibrates coarsely at first).
const CORRECTIONS: usize = 3;

/// Whether the value stays where learning left it now that the input has
/// stopped: `Err` with where it went when it moves on by itself. Something
/// else was then moving it during the learning too (another client's input,
/// the program animating it), and a plan calibrated on that motion is wrong:
/// it must not be kept.
pub fn held(w: &mut dyn Readout, reached: f64, tolerance: f64) -> Result<(), f64> {
    match w.value(reached) {
        Some(v) if (v - reached).abs() > tolerance => Err(v),
        _ => Ok(()),
    }
}

/// Learns how to move the widget at `bounds` from `current` to `target`
/// (within `tolerance`), trying [`ORDER`] until one verifies.
pub fn learn(
    w: &mut dyn Readout,
    bounds: &Bounds,
    current: f64,
    target: f64,
    tolerance: f64,
) -> Result<Learned, NotLearned> {
    let mut tried = Vec::new();
    let mut value = current;
    for strategy in ORDER {
        match attempt(w, strategy, bounds, value, target, tolerance) {
            Ok((plan, v)) => {
                tried.push(format!(
                    "{}: reached {}",
                    strategy.label(),
                    super::format_value(v)
                ));
                return Ok(Learned {
                    plan,
                    value: v,
                    tried,
                });
            }
            Err((why, v)) => {
                tried.push(format!("{}: {why}", strategy.label()));
                value = v;
            }
        }
    }
    Err(NotLearned { tried, value })
}

/// Moves the widget from `current` to `target` with `plan`, correcting
/// the calibration from what each move did. The plan returned is the
/// corrected one; `Err` holds why and the value read last.
pub fn apply(
    w: &mut dyn Readout,
    plan: Plan,
    bounds: &Bounds,
    current: f64,
    target: f64,
    tolerance: f64,
) -> Result<(Plan, f64), (String, f64)> {
    let mut plan = plan;
    let mut value = current;
    if (current - target).abs() <= tolerance {
        return Ok((plan, current)); // already there: nothing to send
    }
    for round in 0..=CORRECTIONS {
        let before = value;
        w.send(&plan.steps(bounds, before, target))
            .map_err(|e| (e.to_string(), value))?;
        value = w
            .value(before)
            .ok_or_else(|| ("the value could not be read back".to_string(), before))?;
        if (value - target).abs() <= tolerance {
            return Ok((plan, value));
        }
        if round == CORRECTIONS {
            break;
        }
        // Recalibrate on this move alone (absolute click positions and a
        // move that did nothing teach nothing).
        let moved = value - before;
        if plan.strategy != Strategy::ClickAt && moved.abs() > f64::EPSILON {
            // The input actually sent: whole pixels, notches, presses.
            let rounded = ((target - before) * plan.per_unit).round();
            if rounded.abs() > 0.0 {
                plan.per_unit = rounded / moved;
            }
        } else if plan.strategy != Strategy::ClickAt {
            return Err(("the value did not move".into(), value));
        }
    }
    Err((
        format!(
            "stopped at {} after {} corrections, aiming at {}",
            super::format_value(value),
            CORRECTIONS,
            super::format_value(target)
        ),
        value,
    ))
}

/// One strategy: a probe to find its direction and scale, then the move.
fn attempt(
    w: &mut dyn Readout,
    strategy: Strategy,
    bounds: &Bounds,
    current: f64,
    target: f64,
    tolerance: f64,
) -> Result<(Plan, f64), (String, f64)> {
    let (cx, cy) = plan::center(bounds);
    let up = target >= current;
    let mut value = current;
    if strategy == Strategy::ClickAt {
        // Two clicks along the long axis give the line value = origin +
        // offset / per_unit.
        let vertical = bounds.height > bounds.width;
        let len = f64::from(if vertical {
            bounds.height
        } else {
            bounds.width
        });
        let mut reads = Vec::new();
        for frac in [0.25, 0.75] {
            let at = (len * frac).round() as i32;
            let (x, y) = if vertical {
                (cx, bounds.y + at)
            } else {
                (bounds.x + at, cy)
            };
            w.send(&plan::click(x, y, Button::Left, 1))
                .map_err(|e| (e.to_string(), value))?;
            let v = w
                .value(value)
                .ok_or_else(|| ("the value could not be read".to_string(), value))?;
            reads.push((f64::from(at), v));
            value = v;
        }
        let (a, b) = (reads[0], reads[1]);
        if (b.1 - a.1).abs() <= f64::EPSILON {
            return Err(("clicks did not move the value".into(), value));
        }
        let per_unit = (b.0 - a.0) / (b.1 - a.1);
        let plan = Plan {
            strategy,
            per_unit,
            origin: a.1 - a.0 / per_unit,
            vertical,
            readout: None,
        };
        return apply(w, plan, bounds, value, target, tolerance)
            .map_err(|(why, v)| (format!("calibrated, then {why}"), v));
    }
    // Probe toward the target first (up raises, by the usual convention),
    // then the other way (the value may sit at the end of its range).
    for towards in [up, !up] {
        let sign = if towards { 1.0 } else { -1.0 };
        let (steps, amount) = match strategy {
            Strategy::VerticalDrag => {
                let dy = -sign * PROBE_PX;
                (plan::drag((cx, cy), (cx, cy + dy as i32)), dy)
            }
            Strategy::HorizontalDrag => {
                let dx = sign * PROBE_PX;
                (plan::drag((cx, cy), (cx + dx as i32, cy)), dx)
            }
            Strategy::Wheel => {
                let b = if towards {
                    Button::WheelUp
                } else {
                    Button::WheelDown
                };
                (plan::scroll(cx, cy, b, 2), 2.0 * sign)
            }
            Strategy::ArrowKeys => {
                let probe = Plan {
                    strategy,
                    per_unit: 2.0,
                    origin: 0.0,
                    vertical: false,
                    readout: None,
                };
                (probe.steps(bounds, 0.0, sign), 2.0 * sign)
            }
            Strategy::ClickAt => unreachable!("handled above"),
        };
        w.send(&steps).map_err(|e| (e.to_string(), value))?;
        let Some(v) = w.value(value) else {
            return Err(("the value could not be read".into(), value));
        };
        let moved = v - value;
        value = v;
        if moved.abs() > f64::EPSILON {
            let plan = Plan {
                strategy,
                per_unit: amount / moved,
                origin: 0.0,
                vertical: false,
                readout: None,
            };
            if (value - target).abs() <= tolerance {
                return Ok((plan, value));
            }
            return apply(w, plan, bounds, value, target, tolerance)
                .map_err(|(why, v)| (format!("moved the value, then {why}"), v));
        }
    }
    Err(("did not move the value".into(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A simulated widget: a knob 0–10 shown as a whole number, moved by
    /// one of the strategies only.
    struct Knob {
        value: f64,
        responds: Strategy,
        /// Pixels (or notches, presses) per unit, signed as `Plan`'s.
        scale: f64,
        pressed_at: Option<(i32, i32)>,
        pressed_value: f64,
        pointer: (i32, i32),
        sent: usize,
    }

    impl Knob {
        fn new(responds: Strategy, scale: f64) -> Knob {
            Knob {
                value: 7.0,
                responds,
                scale,
                pressed_at: None,
                pressed_value: 7.0,
                pointer: (0, 0),
                sent: 0,
            }
        }
        fn set(&mut self, v: f64) {
            self.value = v.clamp(0.0, 10.0);
        }
    }

    impl Readout for Knob {
        fn send(&mut self, steps: &[InputStep]) -> Result<(), UiError> {
            self.sent += 1;
            for s in steps {
                match s {
                    InputStep::MoveTo { x, y } => {
                        self.pointer = (*x, *y);
                        if let Some((px, py)) = self.pressed_at {
                            let moved = match self.responds {
                                Strategy::VerticalDrag => f64::from(y - py),
                                Strategy::HorizontalDrag => f64::from(x - px),
                                _ => continue,
                            };
                            let v = self.pressed_value + (moved / self.scale).trunc();
                            self.set(v);
                        }
                    }
                    InputStep::Press(Button::Left) => {
                        self.pressed_at = Some(self.pointer);
                        self.pressed_value = self.value;
                        if self.responds == Strategy::ClickAt {
                            // 100 px wide from x = 0: value = x / 10.
                            self.set((f64::from(self.pointer.0) / self.scale).round());
                        }
                    }
                    InputStep::Release(Button::Left) => self.pressed_at = None,
                    InputStep::Press(Button::WheelUp) if self.responds == Strategy::Wheel => {
                        self.set(self.value + 1.0 / self.scale)
                    }
                    InputStep::Press(Button::WheelDown) if self.responds == Strategy::Wheel => {
                        self.set(self.value - 1.0 / self.scale)
                    }
                    InputStep::KeyDown(Key::Named(k)) if self.responds == Strategy::ArrowKeys => {
                        match *k {
                            "up" => self.set(self.value + 1.0),
                            "down" => self.set(self.value - 1.0),
                            _ => {}
                        }
                    }
                    _ => {}
                }
            }
            Ok(())
        }
        fn value(&mut self, _previous: f64) -> Option<f64> {
            Some(self.value.round())
        }
    }

    /// A widget something else keeps moving: one unit up at every look.
    struct Drifting(f64);

    impl Readout for Drifting {
        fn send(&mut self, _: &[InputStep]) -> Result<(), UiError> {
            Ok(())
        }
        fn value(&mut self, _previous: f64) -> Option<f64> {
            self.0 += 1.0;
            Some(self.0)
        }
    }

    #[test]
    fn a_value_that_moves_on_by_itself_after_learning_was_not_held() {
        let mut still = Knob::new(Strategy::VerticalDrag, 10.0);
        assert_eq!(held(&mut still, 7.0, 0.5), Ok(()));
        let mut moving = Drifting(3.0);
        assert_eq!(held(&mut moving, 3.0, 0.5), Err(4.0));
    }

    fn area() -> Bounds {
        Bounds {
            x: 0,
            y: 0,
            width: 100,
            height: 80,
        }
    }

    #[test]
    fn a_knob_moved_by_vertical_drag_is_learned_calibrated_and_reused() {
        // Up raises: -10 px per unit.
        let mut k = Knob::new(Strategy::VerticalDrag, -10.0);
        let l = learn(&mut k, &area(), 7.0, 3.0, 0.5).unwrap();
        assert_eq!(l.plan.strategy, Strategy::VerticalDrag);
        assert_eq!(k.value, 3.0);
        assert!(
            (l.plan.per_unit + 10.0).abs() < 2.5,
            "per unit {}",
            l.plan.per_unit
        );
        assert!(l.plan.describe().starts_with("vertical drag, "));
        // Already at the target: nothing is sent.
        k.sent = 0;
        apply(&mut k, l.plan, &area(), 3.0, 3.0, 0.5).unwrap();
        assert_eq!(k.sent, 0);
        // The plan, reused, reaches a new target in one move.
        let (_, v) = apply(&mut k, l.plan, &area(), 3.0, 8.0, 0.5).unwrap();
        assert_eq!(v, 8.0);
        assert!(k.sent <= 2, "{} sends", k.sent);
    }

    #[test]
    fn strategies_that_do_nothing_are_skipped_and_named() {
        let mut k = Knob::new(Strategy::Wheel, 1.0);
        let l = learn(&mut k, &area(), 7.0, 2.0, 0.5).unwrap();
        assert_eq!(l.plan.strategy, Strategy::Wheel);
        assert_eq!(k.value, 2.0);
        assert!(
            l.tried[0].starts_with("vertical drag: did not move"),
            "{:?}",
            l.tried
        );
        assert!(l.tried[1].starts_with("horizontal drag: did not move"));
        assert_eq!(l.plan.describe(), "wheel, 1 notches/unit");
    }

    #[test]
    fn a_value_at_the_end_of_its_range_is_probed_the_other_way() {
        // Right raises, and the knob is at 10 with the target 10 - 4.
        let mut k = Knob::new(Strategy::HorizontalDrag, 5.0);
        k.value = 10.0;
        let l = learn(&mut k, &area(), 10.0, 6.0, 0.5).unwrap();
        assert_eq!(l.plan.strategy, Strategy::HorizontalDrag);
        assert_eq!(k.value, 6.0);
    }

    #[test]
    fn click_at_position_and_arrow_keys_are_the_last_resorts() {
        let mut k = Knob::new(Strategy::ClickAt, 10.0);
        let l = learn(&mut k, &area(), 7.0, 4.0, 0.5).unwrap();
        assert_eq!(l.plan.strategy, Strategy::ClickAt);
        assert_eq!(k.value, 4.0);
        let mut k = Knob::new(Strategy::ArrowKeys, 1.0);
        let l = learn(&mut k, &area(), 7.0, 9.0, 0.5).unwrap();
        assert_eq!(l.plan.strategy, Strategy::ArrowKeys);
        assert_eq!(k.value, 9.0);
    }

    #[test]
    fn a_widget_nothing_moves_is_not_learned_and_says_what_was_tried() {
        struct Dead;
        impl Readout for Dead {
            fn send(&mut self, _: &[InputStep]) -> Result<(), UiError> {
                Ok(())
            }
            fn value(&mut self, p: f64) -> Option<f64> {
                Some(p)
            }
        }
        let e = learn(&mut Dead, &area(), 1.0, 2.0, 0.1).unwrap_err();
        assert_eq!(e.tried.len(), ORDER.len());
        assert!(e.to_string().contains("arrow keys: did not move"), "{e}");
    }

    #[test]
    fn plans_round_trip_through_json_for_the_cache() {
        let p = Plan {
            strategy: Strategy::VerticalDrag,
            per_unit: -2.1,
            origin: 0.0,
            vertical: false,
            readout: None,
        };
        let j = serde_json::to_string(&p).unwrap();
        assert!(j.contains("vertical_drag"), "{j}");
        assert_eq!(serde_json::from_str::<Plan>(&j).unwrap(), p);
        assert_eq!(p.describe(), "vertical drag, 2.1 px/unit");
    }
}
