//! The motor layer of `debug_ui_action`: each intent done natively when
//! the node offers a route (its action, value, text, selection, focus),
//! by input when it does not or the native route did nothing, and
//! verified by watching for the intended effect (`ui_verify.rs`). Values
//! of widgets with no route are set with a plan learned once and kept in
//! the store (`ui_readout.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use strobe_ui::ids::Identified;
use strobe_ui::motor::{DragTarget, Intent, SetTo, format_value, plan};
use strobe_ui::render;
use strobe_ui::{Button, Display, InputStep, Key, NativeAction, UiBackend, UiNode, Window};

use super::ui::ui_error;
use super::ui_action::{
    CHECKABLE, Outcome, Target, UiActionRequest, UiVerify, in_windows, window_of,
};
use super::ui_verify::{changed_lines, subtree_lines};
use super::{Live, SessionManager};
use crate::error::SessionError;

/// Between two looks for an effect.
pub(super) const POLL: Duration = Duration::from_millis(15);

/// Actions with no definite effect (a plain button, a key, a drag) are
/// given this long for one to show before the answer is "nothing seen"
/// (ENGINEERING.md: wait 100–200 ms for an AT-SPI change), unless
/// something shows sooner or the request waits for a traced call.
pub(super) const SETTLE: Duration = Duration::from_millis(250);

/// The native actions a click may be, in the order they are preferred.
const CLICK_ACTIONS: [&str; 8] = [
    "click", "press", "activate", "toggle", "check", "uncheck", "jump", "open",
];

/// One action's context.
pub(super) struct Motor<'a> {
    pub mgr: &'a SessionManager,
    pub live: &'a Arc<Live>,
    pub display: &'a Display,
    pub backend: &'a dyn UiBackend,
    pub windows: &'a [Window],
    pub req: &'a UiActionRequest,
    /// The display is not the session's own.
    pub inherited: bool,
    /// Session time when the action began: output and calls after it are
    /// its effects.
    pub since_ts: u64,
    /// Time spent doing (native calls, sending input), as opposed to
    /// looking and verifying.
    pub acting: std::cell::Cell<Duration>,
    /// A node with no accessibility handle (one only vision found): its
    /// pixels before the action, to see whether it changed.
    pub pixels_before: Option<strobe_ui::Capture>,
}

impl Motor<'_> {
    /// Does the request's intent on `target` and verifies it.
    pub fn perform(
        &mut self,
        target: Option<&Target>,
        roots: &[Identified<'_>],
    ) -> Result<Outcome, SessionError> {
        let watched = match &self.req.verify {
            Some(UiVerify::Watch(w)) => Some(self.watch(w)?),
            _ => None,
        };
        self.pixels_before = target
            .filter(|t| t.node.handle.is_none())
            .and_then(|t| self.widget_pixels(t));
        let mut out = match (&self.req.intent, target) {
            (Intent::Click { button, count, .. }, Some(t)) => self.click(t, *button, *count)?,
            (Intent::SetValue { value, .. }, Some(t)) => self.set_value(t, value)?,
            (Intent::Type { text, replace, .. }, Some(t)) => self.type_text(t, text, *replace)?,
            (Intent::Select { item, .. }, Some(t)) => self.select(t, item)?,
            (
                Intent::Scroll {
                    direction, amount, ..
                },
                Some(t),
            ) => self.scroll(t, direction.button(), *amount)?,
            (Intent::Drag { to, .. }, Some(t)) => self.drag(t, to, roots)?,
            (Intent::Focus { .. }, Some(t)) => self.focus(t)?,
            (Intent::Key { key, modifiers, .. }, t) => self.key(t, key, modifiers)?,
            (_, None) => unreachable!("every intent but key names a node"),
        };
        if let Some(v) = &self.req.verify {
            self.verify_program(v, watched, &mut out)?;
        }
        Ok(out)
    }

    // ----- the intents -----

    fn click(&self, t: &Target, button: Button, count: u8) -> Result<Outcome, SessionError> {
        let checkable = CHECKABLE.contains(&t.node.role.as_str());
        let was_checked = has(&t.node, "checked");
        let native = (button == Button::Left && count == 1 && !t.vision_only)
            .then(|| {
                CLICK_ACTIONS
                    .iter()
                    .find(|a| t.node.actions.iter().any(|x| x.eq_ignore_ascii_case(a)))
            })
            .flatten();
        let mut out = Outcome::default();
        let mut done = false;
        if let (Some(action), Some(h)) = (native, &t.node.handle) {
            match self.act(h, &NativeAction::Do(action.to_string())) {
                Ok(true) => {
                    out.method = format!("native action ({action})");
                    done = true;
                }
                Ok(false) => out.warnings.push(format!(
                    "its native action {action:?} refused; clicked by input"
                )),
                Err(e) => out.warnings.push(format!(
                    "its native action {action:?} failed ({e}); clicked by input"
                )),
            }
        }
        if !done {
            let (x, y) = self.center(t)?;
            let steps = plan::click(x, y, button, count);
            self.send(&steps)?;
            out.method = "input plan (click)".into();
            out.steps = plan::describe(&steps);
        }
        if checkable && button == Button::Left && count == 1 {
            let want = !was_checked || t.node.role == "radio button";
            self.expect(
                t,
                &mut out,
                |n| has(n, "checked") == want,
                |n| format!("checked: {} → {}", was_checked, has(n, "checked")),
            );
        } else {
            self.any_effect(t, &mut out);
        }
        Ok(out)
    }

    fn set_value(&self, t: &Target, value: &SetTo) -> Result<Outcome, SessionError> {
        match value {
            SetTo::Bool(on) => {
                if has(&t.node, "checked") == *on {
                    return Ok(Outcome {
                        method: "none needed".into(),
                        verified: true,
                        observed: format!("already {}", if *on { "checked" } else { "unchecked" }),
                        ..Default::default()
                    });
                }
                self.click(t, Button::Left, 1)
            }
            SetTo::Text(item) => self.select(t, item),
            SetTo::Number(v) => {
                if !t.vision_only
                    && t.node.range.is_some()
                    && let Some(h) = &t.node.handle
                {
                    let tolerance = t
                        .node
                        .range
                        .map_or(1e-6, |r| (r.step / 2.0).max((r.max - r.min) * 1e-6));
                    if let Ok(true) = self.act(h, &NativeAction::SetValue(*v)) {
                        let mut out = Outcome {
                            method: "value interface".into(),
                            ..Default::default()
                        };
                        let before = t.node.value.clone().unwrap_or_default();
                        self.expect(
                            t,
                            &mut out,
                            |n| number(n).is_some_and(|x| (x - v).abs() <= tolerance),
                            |n| {
                                format!(
                                    "value {} → {}",
                                    before,
                                    n.value.clone().unwrap_or_default()
                                )
                            },
                        );
                        if out.verified {
                            return Ok(out);
                        }
                    }
                }
                super::ui_readout::set_by_plan(self, t, *v)
            }
        }
    }

    fn type_text(&self, t: &Target, text: &str, replace: bool) -> Result<Outcome, SessionError> {
        let before = t.node.value.clone().unwrap_or_default();
        let want = |n: &UiNode| {
            let v = n.value.clone().unwrap_or_default();
            if replace {
                v == text
                    || (text.chars().count() > 200 && text.starts_with(v.trim_end_matches('…')))
            } else {
                v.contains(text) && v.chars().count() >= before.chars().count()
            }
        };
        let seen = |n: &UiNode| {
            format!(
                "text {:?} → {:?}",
                before,
                n.value.clone().unwrap_or_default()
            )
        };
        let mut out = Outcome::default();
        if let Some(h) = &t.node.handle {
            let action = if replace {
                NativeAction::SetText(text.to_string())
            } else {
                NativeAction::InsertText(text.to_string())
            };
            match self.act(h, &action) {
                Ok(true) => {
                    out.method = "text interface".into();
                    self.expect(t, &mut out, want, seen);
                    if out.verified {
                        return Ok(out);
                    }
                    out.warnings.push(
                        "the text interface took the text but it did not show; typed it by input"
                            .into(),
                    );
                }
                Ok(false) => out
                    .warnings
                    .push("its text interface refused the text; typed it by input".into()),
                Err(e) => out.warnings.push(format!(
                    "its text interface failed ({e}); typed it by input"
                )),
            }
        }
        // By input: a click gives it focus (the window's and the toolkit's:
        // a web page's field takes keys only once clicked), then select all
        // to replace, and type.
        let mut steps = self.focus_window_steps(t);
        match t.node.bounds {
            Some(b) => {
                let (x, y) = plan::center(&b);
                steps.extend(plan::click(x, y, Button::Left, 1));
                steps.push(InputStep::Pause(Duration::from_millis(50)));
            }
            None => self.grab_focus(t, &mut out)?,
        }
        if replace {
            steps.extend(plan::chord(Key::Char('a'), &["ctrl"]));
        }
        steps.extend(plan::type_text(text));
        self.send(&steps)?;
        out.method = "input plan (type)".into();
        out.steps = plan::describe(&steps);
        self.expect(t, &mut out, want, seen);
        Ok(out)
    }

    fn select(&self, t: &Target, item: &str) -> Result<Outcome, SessionError> {
        let h = t.node.handle.as_ref().ok_or_else(|| {
            SessionError::validation(format!(
                "{} is known only to vision: click its item instead",
                t.id
            ))
        })?;
        // The items, hidden ones included (a combo box's sit in a closed menu).
        let full = self.backend.read(self.display, h, true).map_err(ui_error)?;
        let items = items_of(&full);
        let wanted = item.trim().to_lowercase();
        let found = items
            .iter()
            .position(|(_, text)| text.to_lowercase() == wanted)
            .or_else(|| {
                items
                    .iter()
                    .position(|(_, text)| text.to_lowercase().contains(&wanted))
            });
        let Some(index) = found else {
            let names: Vec<String> = items
                .iter()
                .take(20)
                .map(|(_, text)| format!("{text:?}"))
                .collect();
            return Err(SessionError::validation(format!(
                "{} has no item {item:?}; its items: {}{}",
                t.id,
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                },
                if items.len() > 20 {
                    format!(" and {} more", items.len() - 20)
                } else {
                    String::new()
                }
            )));
        };
        let (child, text) = items[index].clone();
        let mut out = Outcome::default();
        let is_menu = matches!(t.node.role.as_str(), "menu" | "menu bar");
        let selected = |n: &UiNode| {
            if t.node.role == "combo box" {
                n.value.as_deref() == Some(text.as_str())
            } else {
                n.children.get(child).is_some_and(|c| has(c, "selected"))
            }
        };
        let seen = |n: &UiNode| {
            if t.node.role == "combo box" {
                format!("shows {:?}", n.value.clone().unwrap_or_default())
            } else {
                let chosen: Vec<String> = items_of(n)
                    .iter()
                    .filter(|(i, _)| n.children.get(*i).is_some_and(|c| has(c, "selected")))
                    .map(|(_, s)| format!("{s:?}"))
                    .collect();
                format!(
                    "selected: {}",
                    if chosen.is_empty() {
                        "none".into()
                    } else {
                        chosen.join(", ")
                    }
                )
            }
        };
        if is_menu {
            if let Some(ih) = full.children.get(child).and_then(|c| c.handle.clone())
                && let Ok(true) = self.act(&ih, &NativeAction::Do("click".into()))
            {
                out.method = format!("native action (click) on item {text:?}");
                self.any_effect(t, &mut out);
                return Ok(out);
            }
            return Err(SessionError::validation(format!(
                "the menu item {text:?} of {} did not take its click action",
                t.id
            )));
        }
        if let Ok(true) = self.act(h, &NativeAction::SelectChild(child as i32)) {
            out.method = format!("selection interface (item {index}: {text:?})");
            self.expect_subtree(h, &mut out, selected, seen);
            if out.verified {
                return Ok(out);
            }
        }
        // By input: click the item, where it shows.
        if let Some(b) = full
            .children
            .get(child)
            .and_then(|c| c.bounds)
            .filter(|_| t.node.role != "combo box")
        {
            let (x, y) = plan::center(&b);
            let steps = plan::click(x, y, Button::Left, 1);
            self.send(&steps)?;
            out.method = format!("input plan (click on item {text:?})");
            out.steps = plan::describe(&steps);
            self.expect_subtree(h, &mut out, selected, seen);
        }
        Ok(out)
    }

    fn scroll(&self, t: &Target, button: Button, amount: u32) -> Result<Outcome, SessionError> {
        let (x, y) = self.center(t)?;
        let steps = plan::scroll(x, y, button, amount);
        let before = t
            .node
            .handle
            .as_ref()
            .and_then(|h| self.backend.read(self.display, h, false).ok());
        self.send(&steps)?;
        let mut out = Outcome {
            method: "input plan (wheel)".into(),
            steps: plan::describe(&steps),
            ..Default::default()
        };
        match (before, &t.node.handle) {
            (Some(before), Some(h)) => {
                let lines = subtree_lines(&before);
                self.expect_subtree(
                    h,
                    &mut out,
                    |n| subtree_lines(n) != lines,
                    |n| {
                        let moved = changed_lines(&lines, &subtree_lines(n));
                        format!("{moved} nodes under it moved or changed")
                    },
                );
                if !out.verified {
                    self.any_effect(t, &mut out);
                }
            }
            _ => self.any_effect(t, &mut out),
        }
        // Scrolling has no state of its own to reach: any movement counts.
        out.definite = false;
        Ok(out)
    }

    fn drag(
        &self,
        t: &Target,
        to: &DragTarget,
        roots: &[Identified<'_>],
    ) -> Result<Outcome, SessionError> {
        let from = self.center(t)?;
        let end = match to {
            DragTarget::Point { x, y } => (*x, *y),
            DragTarget::Node(id) => {
                let n = render::find(roots, id)
                    .map(|n| n.node.clone())
                    .or_else(|| {
                        self.live
                            .ui
                            .lock()
                            .expect("ui lock")
                            .vision_nodes
                            .get(id)
                            .cloned()
                    })
                    .ok_or_else(|| {
                        SessionError::validation(super::ui_tree::unknown_id(id, roots))
                    })?;
                let b = n.bounds.ok_or_else(|| {
                    SessionError::validation(format!("{id} has no geometry on screen to drag to"))
                })?;
                plan::center(&b)
            }
        };
        let steps = plan::drag(from, end);
        self.send(&steps)?;
        let mut out = Outcome {
            method: "input plan (drag)".into(),
            steps: plan::describe(&steps),
            ..Default::default()
        };
        self.any_effect(t, &mut out);
        Ok(out)
    }

    fn focus(&self, t: &Target) -> Result<Outcome, SessionError> {
        let mut out = Outcome::default();
        self.grab_focus(t, &mut out)?;
        self.expect(
            t,
            &mut out,
            |n| has(n, "focused"),
            |n| format!("focused: {}", has(n, "focused")),
        );
        Ok(out)
    }

    fn key(
        &self,
        t: Option<&Target>,
        key: &Key,
        modifiers: &[&'static str],
    ) -> Result<Outcome, SessionError> {
        let mut out = Outcome::default();
        if let Some(t) = t {
            self.grab_focus(t, &mut out)?;
        }
        let mut steps = match t {
            Some(t) => self.focus_window_steps(t),
            None => self
                .windows
                .first()
                .map(|w| vec![InputStep::FocusWindow(w.handle)])
                .unwrap_or_default(),
        };
        steps.extend(plan::chord(key.clone(), modifiers));
        self.send(&steps)?;
        out.method = format!(
            "input plan (key {})",
            strobe_ui::motor::keys::describe(key, modifiers)
        );
        out.steps = plan::describe(&steps);
        match t {
            Some(t) => self.any_effect(t, &mut out),
            None => self.any_output(&mut out),
        }
        Ok(out)
    }

    // ----- helpers -----

    /// Gives `t` focus: natively, else by a click on it. Says how in `out`.
    fn grab_focus(&self, t: &Target, out: &mut Outcome) -> Result<(), SessionError> {
        if has(&t.node, "focused") {
            out.method = "none needed (already focused)".into();
            return Ok(());
        }
        if let Some(h) = &t.node.handle
            && let Ok(true) = self.act(h, &NativeAction::Focus)
        {
            out.method = "native focus".into();
            return Ok(());
        }
        let (x, y) = self.center(t)?;
        let steps = plan::click(x, y, Button::Left, 1);
        self.send(&steps)?;
        out.method = "input plan (click for focus)".into();
        out.steps = plan::describe(&steps);
        Ok(())
    }

    /// Keys go to the window that shows `t`: its window gets the X focus.
    fn focus_window_steps(&self, t: &Target) -> Vec<InputStep> {
        let w = match t.node.bounds {
            Some(b) => window_of(self.windows, &b),
            None => self.windows.first(),
        };
        w.map(|w| vec![InputStep::FocusWindow(w.handle)])
            .unwrap_or_default()
    }

    pub(super) fn center(&self, t: &Target) -> Result<(i32, i32), SessionError> {
        t.node.bounds.map(|b| plan::center(&b)).ok_or_else(|| {
            SessionError::validation(format!(
                "{} has no geometry on screen, so input cannot reach it",
                t.id
            ))
        })
    }

    /// Asks the node natively, timing it.
    fn act(&self, h: &strobe_ui::NodeHandle, a: &NativeAction) -> Result<bool, strobe_ui::UiError> {
        let t = Instant::now();
        let r = self.backend.act(self.display, h, a);
        self.acting.set(self.acting.get() + t.elapsed());
        r
    }

    /// Sends input, if input may go to this display.
    pub(super) fn send(&self, steps: &[InputStep]) -> Result<(), SessionError> {
        if self.inherited {
            if !self.req.allow_input_on_user_display {
                return Err(SessionError::validation(format!(
                    "this action needs input (a click, keys), and session '{}' is on display {}, which it did not start: input there could land on your own desktop, so it is refused. Launch the program with display: \"virtual\" (a private display, where input is always allowed), or set ui.allowInputOnUserDisplay to true in settings.json to allow input aimed at the session's own window",
                    self.live.id,
                    self.display.label()
                )));
            }
            for s in steps {
                if let InputStep::MoveTo { x, y } = s
                    && !in_windows(self.windows, (*x, *y))
                {
                    return Err(SessionError::validation(format!(
                        "the input would reach {x},{y}, outside the session's windows on your display: refused (ui.allowInputOnUserDisplay allows input aimed at the session's own window only)"
                    )));
                }
            }
        }
        let t = Instant::now();
        let r = self.backend.input(self.display, steps).map_err(ui_error);
        self.acting.set(self.acting.get() + t.elapsed());
        r
    }
}

/// Whether `n` has state `s`.
pub(super) fn has(n: &UiNode, s: &str) -> bool {
    n.states.iter().any(|x| x == s)
}

/// A node's value as a number.
fn number(n: &UiNode) -> Option<f64> {
    n.value.as_deref()?.trim().parse().ok()
}

/// The selectable items of a list, combo box or menu: (index among the
/// children of the node that holds them, their text). A combo box's items
/// are under its menu child; an item's text is its name or, for a row,
/// the first named node inside it.
fn items_of(n: &UiNode) -> Vec<(usize, String)> {
    let holder = if n.role == "combo box" {
        n.children.iter().find(|c| c.role == "menu").unwrap_or(n)
    } else {
        n
    };
    fn text(n: &UiNode) -> Option<String> {
        if !n.name.trim().is_empty() {
            return Some(n.name.trim().to_string());
        }
        n.children.iter().find_map(text)
    }
    holder
        .children
        .iter()
        .enumerate()
        .filter_map(|(i, c)| text(c).map(|t| (i, t)))
        .collect()
}

/// `format_value` for messages, re-exported for `ui_readout.rs`.
pub(super) fn show(v: f64) -> String {
    format_value(v)
}
