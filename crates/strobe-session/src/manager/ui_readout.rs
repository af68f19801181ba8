//! Setting the value of a widget with no native route: a plan learned
//! once (strobe-ui's `motor::learn`) and kept in the store per (program,
//! role, name or visual signature), read back through the best readout
//! there is — the node's accessible value, a watched variable of the
//! program, or the number vision reads beside the widget.

use std::time::{Duration, Instant};

use strobe_ui::motor::learn::{self, Plan, Readout};
use strobe_ui::{Bounds, InputStep, UiError, UiNode, Window};

use super::Live;
use super::ui_action::{Outcome, Target, UiVerify, window_of};
use super::ui_motor::{Motor, show};
use crate::error::SessionError;

/// How long a readout waits for the value to move after input.
const SETTLE: Duration = Duration::from_millis(400);

/// Where the value is read from.
enum Source {
    /// The node's own accessible value.
    Accessible(strobe_ui::NodeHandle),
    /// A variable of the program (`verify: {watch}`).
    Watch(String),
    /// The number vision reads nearest the widget, in this window.
    Ocr(Window),
}

impl Source {
    fn label(&self) -> String {
        match self {
            Source::Accessible(_) => "its accessible value".into(),
            Source::Watch(w) => format!("the variable {w}"),
            Source::Ocr(_) => "the number vision reads beside it".into(),
        }
    }
}

/// A widget's value, read back after input.
struct WidgetReadout<'m, 'a> {
    motor: &'m Motor<'a>,
    source: Source,
    bounds: Bounds,
    /// Decimals the last reading showed (OCR), for the tolerance.
    decimals: u32,
    /// Where vision read the value, relative to the widget: the next
    /// reading crops just that.
    label: Option<Bounds>,
    /// Input refused (not a strategy's failure: the whole action's).
    refused: Option<SessionError>,
    reads: u32,
}

impl WidgetReadout<'_, '_> {
    fn read_now(&mut self) -> Option<f64> {
        self.reads += 1;
        let m = self.motor;
        match &self.source {
            Source::Accessible(h) => m
                .backend
                .read(m.display, h, false)
                .ok()?
                .value?
                .trim()
                .parse()
                .ok(),
            Source::Watch(w) => m.watch(w).ok()?.as_f64(),
            Source::Ocr(window) => {
                let (v, decimals, label) = ocr_number(m, window, &self.bounds, self.label)?;
                self.decimals = decimals;
                self.label = Some(label);
                Some(v)
            }
        }
    }

    fn tolerance(&self, current: f64, target: f64) -> f64 {
        match &self.source {
            Source::Ocr(_) => 0.5 * 10f64.powi(-(self.decimals as i32)),
            _ if current.fract() == 0.0 && target.fract() == 0.0 => 0.5,
            _ => (target.abs() * 0.01).max(1e-3),
        }
    }
}

impl Readout for WidgetReadout<'_, '_> {
    fn send(&mut self, steps: &[InputStep]) -> Result<(), UiError> {
        self.motor.send(steps).map_err(|e| {
            let msg = e.to_string();
            if self.refused.is_none() {
                self.refused = Some(e);
            }
            UiError::Input(msg)
        })
    }

    fn value(&mut self, previous: f64) -> Option<f64> {
        let deadline = Instant::now() + SETTLE;
        loop {
            let v = self.read_now();
            if v.is_some_and(|v| v != previous) || Instant::now() >= deadline {
                return v;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Sets `t`'s value to `target` with a cached plan, or learns one.
pub(super) fn set_by_plan(m: &Motor<'_>, t: &Target, target: f64) -> Result<Outcome, SessionError> {
    let bounds = t.node.bounds.ok_or_else(|| {
        SessionError::validation(format!(
            "{} has no geometry on screen, so input cannot reach it",
            t.id
        ))
    })?;
    let source = match (&m.req.verify, &t.node.handle, &t.node.value) {
        (Some(UiVerify::Watch(w)), _, _) => Source::Watch(w.clone()),
        (_, Some(h), Some(v)) if !t.vision_only && v.trim().parse::<f64>().is_ok() => {
            Source::Accessible(h.clone())
        }
        _ => Source::Ocr(
            window_of(m.windows, &bounds)
                .ok_or_else(|| {
                    SessionError::validation(format!(
                        "{} is in none of the session's windows",
                        t.id
                    ))
                })?
                .clone(),
        ),
    };
    let mut r = WidgetReadout {
        motor: m,
        source,
        bounds,
        decimals: 0,
        label: None,
        refused: None,
        reads: 0,
    };
    // Where a plan learned before found the value painted.
    let cached = m
        .mgr
        .store
        .motor_plan(&app_name(m.live), &t.node.role, &signature(&t.node))
        .map_err(|e| SessionError::internal(format!("motor plans: {e}")))?;
    let known: Option<Plan> = cached
        .as_ref()
        .and_then(|(row, _)| serde_json::from_str(&row.plan).ok());
    r.label = known
        .and_then(|p| p.readout)
        .map(|[x, y, width, height]| Bounds {
            x,
            y,
            width: width.max(1) as u32,
            height: height.max(1) as u32,
        });
    let Some(current) = r.read_now() else {
        return Err(SessionError::validation(format!(
            "{} ({} [{}]) has no value Strobe can read ({} gave none), so setting it cannot be learned or verified: pass verify: {{watch: \"<variable holding it>\"}}, or run debug_ui with vision: true to check that its value is painted as a number beside it",
            t.id,
            t.node.role,
            t.node.name,
            r.source.label()
        )));
    };
    let tolerance = r.tolerance(current, target);
    let app = app_name(m.live);
    let signature = signature(&t.node);
    // The value reached is this intent's own effect.
    let mut out = Outcome {
        definite: true,
        ..Default::default()
    };
    let mut value = current;
    if let (Some((row, exact)), Some(plan)) = (cached, known) {
        match learn::apply(&mut r, plan, &bounds, current, target, tolerance) {
            Ok((plan, v)) => {
                if let Some(e) = r.refused.take() {
                    return Err(e);
                }
                save(
                    m,
                    &app,
                    &t.node.role,
                    &signature,
                    &plan,
                    r.label,
                    row.uses + 1,
                );
                out.method = format!(
                    "cached plan ({}{})",
                    plan.describe(),
                    if exact {
                        ""
                    } else {
                        ", learned on a widget like it"
                    }
                );
                out.verified = true;
                out.observed = format!("{}: {} → {}", r.source.label(), show(current), show(v));
                out.steps = strobe_ui::motor::plan::describe(&plan.steps(&bounds, current, target));
                return Ok(out);
            }
            Err((why, v)) => {
                if let Some(e) = r.refused.take() {
                    return Err(e);
                }
                out.tried
                    .push(format!("cached plan ({}): {why}", plan.describe()));
                value = v;
            }
        }
    }
    match learn::learn(&mut r, &bounds, value, target, tolerance) {
        Ok(l) => {
            // A value that moves on by itself once the input stopped was
            // being moved by something else during the learning too: a plan
            // calibrated on that motion is wrong, so it is not kept.
            match learn::held(&mut r, l.value, tolerance) {
                Err(moved) => out.warnings.push(format!(
                    "after learning, the value moved on by itself ({} → {}): something else is changing it, so the plan was not kept and will be learned again next time",
                    show(l.value),
                    show(moved)
                )),
                Ok(()) => save(m, &app, &t.node.role, &signature, &l.plan, r.label, 0),
            }
            out.method = format!("learned plan ({})", l.plan.describe());
            out.verified = true;
            out.observed = format!(
                "{}: {} → {}",
                r.source.label(),
                show(current),
                show(l.value)
            );
            out.tried.extend(l.tried);
        }
        Err(e) => {
            if let Some(e) = r.refused.take() {
                return Err(e);
            }
            out.method = "input (no strategy reached the value)".into();
            out.observed = format!(
                "{}: {} → {}, aiming at {}",
                r.source.label(),
                show(current),
                show(e.value),
                show(target)
            );
            out.tried.extend(e.tried);
        }
    }
    Ok(out)
}

fn save(
    m: &Motor<'_>,
    app: &str,
    role: &str,
    signature: &str,
    plan: &Plan,
    label: Option<Bounds>,
    uses: i64,
) {
    let plan = Plan {
        readout: label.map(|b| [b.x, b.y, b.width as i32, b.height as i32]),
        ..*plan
    };
    let row = strobe_store::MotorPlan {
        app: app.into(),
        role: role.into(),
        signature: signature.into(),
        plan: serde_json::to_string(&plan).expect("a plan serializes"),
        uses,
        updated_at: strobe_core::clock::unix_millis(),
    };
    if let Err(e) = m.mgr.store.put_motor_plan(row) {
        tracing::warn!("storing a motor plan: {e}");
    }
}

/// The program a plan belongs to: a script's name for an interpreter, else
/// the executable's.
fn app_name(live: &Live) -> String {
    let base = |p: &str| {
        std::path::Path::new(p)
            .file_name()
            .map_or_else(|| p.to_string(), |n| n.to_string_lossy().into_owned())
    };
    let exe = base(&live.binary_path);
    let interpreter = ["python", "node", "ruby", "perl"]
        .iter()
        .any(|i| exe.starts_with(i));
    match live.program_args.first() {
        Some(script) if interpreter => base(script),
        _ => exe,
    }
}

/// How a widget is known again: its name, or for an unnamed one its size
/// (to 8 px), which a widget of the same kind shares.
fn signature(n: &UiNode) -> String {
    if !n.name.trim().is_empty() {
        return n.name.trim().to_string();
    }
    let b = n.bounds.unwrap_or_default();
    let r = |v: u32| (v + 4) / 8 * 8;
    format!("{}x{}", r(b.width), r(b.height))
}

/// The number vision reads nearest the widget at `b` (display pixels),
/// with the decimals it showed and where it was (relative to the widget):
/// the window is captured, the area around the widget cut out (a label
/// sits beside or below its knob), and read. Where the value was found
/// before (`label`), only that spot is read: a small image reads in a
/// fraction of the time.
fn ocr_number(
    m: &Motor<'_>,
    window: &Window,
    b: &Bounds,
    label: Option<Bounds>,
) -> Option<(f64, u32, Bounds)> {
    let shot = m.backend.capture(m.display, window).ok()?;
    let (wx, wy) = (window.bounds.x.max(0), window.bounds.y.max(0));
    let around = Bounds {
        x: b.x - wx - (b.width as i32) * 3 / 2,
        y: b.y - wy - b.height as i32,
        width: b.width * 4,
        height: b.height * 3,
    };
    let spot = label.map(|l| Bounds {
        x: b.x - wx + l.x - 16,
        y: b.y - wy + l.y - 10,
        width: l.width + 32,
        height: l.height + 20,
    });
    for area in spot.into_iter().chain(std::iter::once(around)) {
        if let Some(found) = read_number_in(m, &shot, area, b, (wx, wy)) {
            return Some(found);
        }
    }
    None
}

/// The number nearest the widget's middle in `area` of the window's image.
fn read_number_in(
    m: &Motor<'_>,
    shot: &strobe_ui::Capture,
    area: Bounds,
    b: &Bounds,
    (wx, wy): (i32, i32),
) -> Option<(f64, u32, Bounds)> {
    let crop = shot.crop(area)?;
    let origin = (area.x.max(0), area.y.max(0));
    let png = crop.png().ok()?;
    let dir = m.mgr.ui_dir(&m.live.id);
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join("readout.png");
    std::fs::write(&path, png).ok()?;
    let boxes = m.mgr.see(&path.to_string_lossy(), &m.req.vision).ok()?;
    let (cx, cy) = strobe_ui::motor::plan::center(b);
    let (cx, cy) = (cx - wx - origin.0, cy - wy - origin.1);
    boxes
        .iter()
        .filter_map(|v| {
            let (n, decimals) = last_number(v.text.as_deref()?)?;
            let (bx, by) = strobe_ui::motor::plan::center(&v.bounds);
            let d = i64::from(bx - cx).pow(2) + i64::from(by - cy).pow(2);
            // Where it is, relative to the widget.
            let at = Bounds {
                x: v.bounds.x + origin.0 + wx - b.x,
                y: v.bounds.y + origin.1 + wy - b.y,
                ..v.bounds
            };
            Some((d, n, decimals, at))
        })
        .min_by_key(|(d, ..)| *d)
        .map(|(_, n, decimals, at)| (n, decimals, at))
}

/// The last number in `text` ("GAIN 7" → 7, "-3.5 dB" → -3.5), with its
/// decimals.
fn last_number(text: &str) -> Option<(f64, u32)> {
    let chars: Vec<char> = text.chars().collect();
    let mut end = chars.len();
    while end > 0 && !chars[end - 1].is_ascii_digit() {
        end -= 1;
    }
    if end == 0 {
        return None;
    }
    let mut start = end;
    while start > 0 && (chars[start - 1].is_ascii_digit() || chars[start - 1] == '.') {
        start -= 1;
    }
    if start > 0 && chars[start - 1] == '-' {
        start -= 1;
    }
    let s: String = chars[start..end].iter().collect();
    let s = s.trim_start_matches('.');
    let decimals = s.split_once('.').map_or(0, |(_, d)| d.len() as u32);
    s.parse().ok().map(|v| (v, decimals))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_number_beside_a_widget_is_its_last_number() {
        assert_eq!(last_number("GAIN 7"), Some((7.0, 0)));
        assert_eq!(last_number("-3.5 dB"), Some((-3.5, 1)));
        assert_eq!(last_number("Track 2 of 10"), Some((10.0, 0)));
        assert_eq!(last_number("GAIN"), None);
    }

    #[test]
    fn an_unnamed_widget_is_known_by_its_size() {
        let n = UiNode {
            role: "knob".into(),
            bounds: Some(Bounds {
                x: 5,
                y: 5,
                width: 86,
                height: 83,
            }),
            ..Default::default()
        };
        assert_eq!(signature(&n), "88x80");
        let named = UiNode {
            name: " Gain ".into(),
            ..n
        };
        assert_eq!(signature(&named), "Gain");
    }
}
