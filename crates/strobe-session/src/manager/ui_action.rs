//! `debug_ui_action`: an agent says what it wants done to the program's
//! GUI; this finds the node, checks that the action suits it and that
//! input may be sent, has the motor layer (`ui_motor.rs`) do it and
//! verify it, and records a `ui_action` event between the `ui_snapshot`s
//! taken before and after.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;
use strobe_core::event::EventKind;
use strobe_ui::ids::{Identified, identify};
use strobe_ui::motor::{Intent, SetTo};
use strobe_ui::render::{self, Shown};
use strobe_ui::{Bounds, UiNode, Window};

use super::ui::{UiChanges, UiRequest};
use super::ui_tree::{all_lines, diff, unknown_id};
use super::{Live, SessionManager};
use crate::error::SessionError;

/// How an action's effect is checked through the program itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UiVerify {
    /// A traced function whose name ends with this must be called.
    Function(String),
    /// This variable (as `debug_memory` reads it) must change.
    Watch(String),
}

/// A `debug_ui_action` request.
#[derive(Debug, Clone)]
pub struct UiActionRequest {
    /// What to do.
    pub intent: Intent,
    /// Also verify through the program.
    pub verify: Option<UiVerify>,
    /// How long to wait for the effect.
    pub timeout: Duration,
    /// `ui.allowInputOnUserDisplay`.
    pub allow_input_on_user_display: bool,
    /// Vision's settings, for reading a value painted beside a widget.
    pub vision: UiRequest,
}

/// A node as an action found it and left it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeState {
    /// Its id.
    pub id: String,
    /// Its role.
    pub role: String,
    /// Its name.
    pub name: String,
    /// Its value or text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Its states.
    pub states: Vec<String>,
}

/// `debug_ui_action`'s answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UiActionResponse {
    /// The action was carried out (sent). Not a claim that it worked:
    /// that is `verified`.
    pub ok: bool,
    /// The action's type.
    #[serde(rename = "type")]
    pub kind: String,
    /// How it was done: a native accessibility action, the value or text
    /// interface, an input plan, a learned or cached plan.
    pub method: String,
    /// The intended effect was observed.
    pub verified: bool,
    /// What verification saw.
    pub observed: String,
    /// The node before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<NodeState>,
    /// The node after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<NodeState>,
    /// What changed in the tree between the snapshots before and after.
    pub changes: UiChanges,
    /// The input sent, step by step (empty for a native action).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<String>,
    /// What learning tried, strategy by strategy.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tried: Vec<String>,
    /// From the request to the verified (or given up) effect.
    pub elapsed_ms: u64,
    /// Of which doing it took (native calls, sending input); the rest is
    /// reading the tree before and after, and verifying.
    pub action_ms: f64,
    /// Problems worth knowing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The `ui_snapshot` taken before (its `snapshot` number).
    pub snapshot_before: u32,
    /// The `ui_snapshot` taken after.
    pub snapshot_after: u32,
}

/// The node an action is aimed at.
#[derive(Debug, Clone)]
pub(super) struct Target {
    /// Its id.
    pub id: String,
    /// The node as read just before the action (with its subtree).
    pub node: UiNode,
    /// Only vision knows it: no native route, and its geometry is from
    /// the last look with vision.
    pub vision_only: bool,
}

impl Target {
    pub(super) fn state(&self, node: &UiNode) -> NodeState {
        NodeState {
            id: self.id.clone(),
            role: node.role.clone(),
            name: node.name.clone(),
            value: node.value.clone(),
            states: node.states.clone(),
        }
    }
}

/// What the motor layer did.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    pub method: String,
    pub verified: bool,
    pub observed: String,
    pub steps: Vec<String>,
    pub tried: Vec<String>,
    pub warnings: Vec<String>,
    /// The node after, when the motor layer read it.
    pub after: Option<UiNode>,
    /// The intent has an effect of its own to wait for (a state, a value,
    /// text); without one, any change counts, and a `verify` decides.
    pub definite: bool,
}

/// Roles whose click toggles a "checked" state.
pub(super) const CHECKABLE: [&str; 5] = [
    "check box",
    "toggle button",
    "radio button",
    "check menu item",
    "switch",
];

/// Roles that take typed text.
const TEXT_ROLES: [&str; 5] = ["text", "entry", "password text", "terminal", "editbar"];

/// Roles whose items `select` picks.
pub(super) const SELECTABLE: [&str; 9] = [
    "combo box",
    "list",
    "list box",
    "menu",
    "menu bar",
    "page tab list",
    "tree",
    "tree table",
    "table",
];

impl SessionManager {
    /// `debug_ui_action`: does `req.intent` to session `id`'s GUI, verifies
    /// it, and records it.
    pub fn ui_action(
        &self,
        id: &str,
        req: &UiActionRequest,
    ) -> Result<UiActionResponse, SessionError> {
        let (live, display, backend) = self.gui_of(id)?;
        // One action at a time per session (see `UiState::acting`): from
        // the look before to the look after, nothing else acts on it.
        let turn = live.ui.lock().expect("ui lock").acting.clone();
        let mut queued = Vec::new();
        let _turn = match turn.try_lock() {
            Ok(t) => t,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                let waiting = Instant::now();
                let t = turn
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                // The session may have ended while this action waited.
                if let Some(e) = super::ui::gui_lost(&live) {
                    return Err(e);
                }
                queued.push(format!(
                    "waited {} ms for another action on this session to finish first (actions on one session run one at a time, so each one's evidence is its own)",
                    waiting.elapsed().as_millis()
                ));
                t
            }
        };
        let started = Instant::now();
        let pids = self.gui_pids(&live);
        let (windows, trees) = self.look(&live, backend.as_ref(), &display, &pids, true, false)?;
        let roots = super::ui_tree::roots_of(&trees);
        let identified = identify(&roots);
        let target = match req.intent.node() {
            Some(node) => Some(self.target(&live, node, &identified)?),
            None => None,
        };
        check(&req.intent, target.as_ref())?;
        let inherited = live.ui.lock().expect("ui lock").virtual_display.is_none();
        if inherited
            && let Intent::Key { modifiers, .. } = &req.intent
            && modifiers.contains(&"super")
        {
            return Err(SessionError::validation(format!(
                "session '{id}' is on a display it did not start ({}), where super is the desktop's key, not the program's: it is refused there. Launch the program with display: \"virtual\" to send it",
                display.label()
            )));
        }
        let before_lines = all_lines(&identified);
        let snapshot_before = self.action_snapshot(&live, &identified, &windows, &before_lines);

        let mut ctx = super::ui_motor::Motor {
            mgr: self,
            live: &live,
            display: &display,
            backend: backend.as_ref(),
            windows: &windows,
            req,
            inherited,
            since_ts: Self::now_ts(&live),
            acting: Default::default(),
            pixels_before: None,
        };
        let mut outcome = match ctx.perform(target.as_ref(), &identified) {
            Ok(o) => o,
            Err(e) => return Err(self.action_failed(&live, req, e, snapshot_before)),
        };
        let action_ms = (ctx.acting.get().as_secs_f64() * 1e4).round() / 10.0;
        outcome.warnings.splice(0..0, queued);

        // The tree after, compared with the one before: what the action did.
        // An action may close the window (a Quit button): that is an
        // answer, not an error.
        let (after_windows, after_trees) = match self.look(
            &live,
            backend.as_ref(),
            &display,
            &pids,
            true,
            false,
        ) {
            Ok(found) => found,
            Err(e) => {
                outcome.warnings.push(format!(
                        "after the action the window could not be read ({e}): the program may have closed it or exited"
                    ));
                (Vec::new(), Vec::new())
            }
        };
        let after_roots = super::ui_tree::roots_of(&after_trees);
        let after_ids = identify(&after_roots);
        let after_lines = all_lines(&after_ids);
        let changes = diff(&before_lines, &after_lines);
        let snapshot_after = self.action_snapshot(&live, &after_ids, &after_windows, &after_lines);

        let after = target.as_ref().map(|t| {
            let node = outcome
                .after
                .clone()
                .or_else(|| find_again(t, &after_ids))
                .unwrap_or_else(|| t.node.clone());
            t.state(&node)
        });
        let before = target.as_ref().map(|t| t.state(&t.node));
        let resp = UiActionResponse {
            ok: true,
            kind: req.intent.kind().to_string(),
            method: outcome.method,
            verified: outcome.verified,
            observed: outcome.observed,
            before,
            after,
            changes,
            steps: outcome.steps,
            tried: outcome.tried,
            elapsed_ms: started.elapsed().as_millis() as u64,
            action_ms,
            warnings: outcome.warnings,
            snapshot_before,
            snapshot_after,
        };
        self.append_json_event(
            &live,
            EventKind::UiAction,
            live.pid,
            0,
            &json!({
                "action": resp.kind,
                "node": req.intent.node(),
                "ok": resp.ok,
                "method": resp.method,
                "verified": resp.verified,
                "observed": resp.observed,
                "before": resp.before,
                "after": resp.after,
                "steps": resp.steps,
                "tried": resp.tried,
                "elapsedMs": resp.elapsed_ms,
                "actionMs": resp.action_ms,
                "snapshotBefore": snapshot_before,
                "snapshotAfter": snapshot_after,
                "changed": resp.changes.changed_count + resp.changes.added_count + resp.changes.removed_count,
            }),
        );
        Ok(resp)
    }

    /// An action that was refused or failed: a failure because the program
    /// or its display went away (a broken pipe to the display, a bus gone)
    /// is told as that, and it is on the timeline too, with why.
    fn action_failed(
        &self,
        live: &Live,
        req: &UiActionRequest,
        e: SessionError,
        snapshot_before: u32,
    ) -> SessionError {
        let e = super::ui::gui_lost(live).unwrap_or(e);
        self.append_json_event(
            live,
            EventKind::UiAction,
            live.pid,
            0,
            &json!({
                "action": req.intent.kind(),
                "node": req.intent.node(),
                "ok": false,
                "verified": false,
                "error": e.to_string(),
                "snapshotBefore": snapshot_before,
            }),
        );
        e
    }

    /// The node `id` names: in the tree just read, or among what vision
    /// found in the last look that ran it.
    fn target(
        &self,
        live: &Live,
        id: &str,
        roots: &[Identified<'_>],
    ) -> Result<Target, SessionError> {
        if let Some((n, visible)) = roots.iter().find_map(|r| visible_part(r, id, None)) {
            // Input aims at the part of it that shows: a long list's middle
            // may be far outside its scrolled window.
            let mut node = n.node.clone();
            if node.bounds.is_some() {
                node.bounds = visible;
            }
            return Ok(Target {
                id: id.to_string(),
                node,
                vision_only: false,
            });
        }
        if let Some(n) = live.ui.lock().expect("ui lock").vision_nodes.get(id) {
            return Ok(Target {
                id: id.to_string(),
                node: n.clone(),
                vision_only: true,
            });
        }
        Err(SessionError::validation(unknown_id(id, roots)))
    }

    /// Records a `ui_snapshot` of the tree an action saw; returns its number.
    fn action_snapshot(
        &self,
        live: &Live,
        roots: &[Identified<'_>],
        windows: &[Window],
        lines: &BTreeMap<String, String>,
    ) -> u32 {
        let all: Vec<&Identified<'_>> = roots.iter().collect();
        let rendered = render::render(
            &all,
            Shown {
                max_nodes: 200,
                all: false,
            },
        );
        let (number, changes) = {
            let mut ui = live.ui.lock().expect("ui lock");
            ui.snapshots += 1;
            let changes = ui.previous.as_ref().map(|p| diff(p, lines));
            ui.previous = Some(lines.clone());
            (ui.snapshots, changes)
        };
        let mut doc = json!({
            "snapshot": number,
            "tree": rendered.text,
            "nodes": rendered.shown + rendered.cut,
            "windows": windows.iter().map(|w| &w.title).collect::<Vec<_>>(),
            "byAction": true,
        });
        if let Some(c) = changes {
            doc["added"] = json!(c.added);
            doc["removed"] = json!(c.removed);
            doc["changed"] = json!(c.changed);
        }
        self.append_json_event(live, EventKind::UiSnapshot, live.pid, 0, &doc);
        number
    }
}

/// The node `id` under `n`, with the part of its bounds that shows:
/// inside every scrolled area and window around it (`clip`, so far).
/// Only those clip: other containers' extents are not always in screen
/// coordinates (WebKit's embedded page reports its own).
fn visible_part<'a, 'b>(
    n: &'a Identified<'b>,
    id: &str,
    clip: Option<Bounds>,
) -> Option<(&'a Identified<'b>, Option<Bounds>)> {
    if n.id == id {
        let b = match (clip, n.node.bounds) {
            (Some(c), Some(b)) => intersect(&c, &b).or(Some(b)),
            (_, b) => b,
        };
        return Some((n, b));
    }
    let clips = matches!(
        n.node.role.as_str(),
        "frame" | "window" | "dialog" | "scroll pane" | "viewport"
    );
    let inner = match (clip, n.node.bounds) {
        (c, Some(b)) if clips => c.map_or(Some(b), |c| intersect(&c, &b).or(Some(c))),
        (c, _) => c,
    };
    n.children.iter().find_map(|c| visible_part(c, id, inner))
}

fn intersect(a: &Bounds, b: &Bounds) -> Option<Bounds> {
    let x0 = a.x.max(b.x);
    let y0 = a.y.max(b.y);
    let x1 = (a.x + a.width as i32).min(b.x + b.width as i32);
    let y1 = (a.y + a.height as i32).min(b.y + b.height as i32);
    (x1 > x0 && y1 > y0).then(|| Bounds {
        x: x0,
        y: y0,
        width: (x1 - x0) as u32,
        height: (y1 - y0) as u32,
    })
}

/// The target node in the tree read after the action: by its handle (the
/// same object, whatever its name became), else by id.
fn find_again(t: &Target, roots: &[Identified<'_>]) -> Option<UiNode> {
    fn by_handle(n: &Identified<'_>, h: &strobe_ui::NodeHandle) -> Option<UiNode> {
        if n.node.handle.as_ref() == Some(h) {
            return Some(n.node.clone());
        }
        n.children.iter().find_map(|c| by_handle(c, h))
    }
    match &t.node.handle {
        Some(h) => roots.iter().find_map(|r| by_handle(r, h)),
        None => render::find(roots, &t.id).map(|n| n.node.clone()),
    }
}

/// What a node can be asked to do, for the error that says it cannot.
fn supported(n: &UiNode, vision_only: bool) -> Vec<&'static str> {
    let mut out = vec!["click", "scroll", "drag", "key"];
    if !vision_only {
        out.push("focus");
    }
    if n.value.is_some() && n.range.is_some()
        || CHECKABLE.contains(&n.role.as_str())
        || n.role == "combo box"
        || vision_only
    {
        out.push("set_value");
    }
    if is_text(n) {
        out.push("type");
    }
    if SELECTABLE.contains(&n.role.as_str()) {
        out.push("select");
    }
    out
}

/// Whether `n` takes typed text.
pub(super) fn is_text(n: &UiNode) -> bool {
    n.states.iter().any(|s| s == "editable") || TEXT_ROLES.contains(&n.role.as_str())
}

/// Whether the action suits the node: visible, enabled, and able to take it.
fn check(intent: &Intent, target: Option<&Target>) -> Result<(), SessionError> {
    let Some(t) = target else {
        return Ok(());
    };
    let n = &t.node;
    let label = format!("{} ({} [{}])", t.id, n.role, n.name);
    if !n.states.iter().any(|s| s == "showing") {
        return Err(SessionError::validation(format!(
            "{label} is not visible (not showing): open what holds it first (a menu, a tab, a collapsed row), or scroll it into view, then ask debug_ui for its id again"
        )));
    }
    if n.states.iter().any(|s| s == "disabled") && !matches!(intent, Intent::Scroll { .. }) {
        return Err(SessionError::validation(format!(
            "{label} is disabled: the program does not take input on it now (debug_ui shows its states)"
        )));
    }
    let cannot = |what: &str| {
        SessionError::validation(format!(
            "{label} cannot {what}; it supports: {}",
            supported(n, t.vision_only).join(", ")
        ))
    };
    let needs_bounds = matches!(
        intent,
        Intent::Scroll { .. } | Intent::Drag { .. } | Intent::Click { .. }
    ) || t.vision_only;
    if needs_bounds && n.bounds.is_none() {
        return Err(SessionError::validation(format!(
            "{label} has no geometry on screen, so input cannot reach it"
        )));
    }
    match intent {
        Intent::Type { text, .. } => {
            strobe_ui::motor::typeable(text).map_err(SessionError::validation)?;
            if is_text(n) {
                Ok(())
            } else {
                Err(cannot("take typed text"))
            }
        }
        Intent::Select { .. } if !SELECTABLE.contains(&n.role.as_str()) => Err(cannot(
            "select an item (it is not a list, combo box or menu)",
        )),
        Intent::Focus { .. } if t.vision_only => Err(cannot(
            "take focus (only vision knows it; click it instead)",
        )),
        Intent::SetValue { value, .. } => check_value(&label, n, t.vision_only, value, cannot),
        _ => Ok(()),
    }
}

fn check_value(
    label: &str,
    n: &UiNode,
    vision_only: bool,
    value: &SetTo,
    cannot: impl Fn(&str) -> SessionError,
) -> Result<(), SessionError> {
    match value {
        SetTo::Bool(_) if CHECKABLE.contains(&n.role.as_str()) => Ok(()),
        SetTo::Bool(_) => Err(cannot(
            "be set to true/false (it is not a check box or toggle)",
        )),
        SetTo::Text(_) if n.role == "combo box" => Ok(()),
        SetTo::Text(_) if is_text(n) => Err(cannot(
            "be set to text with set_value: use type (with replace: true)",
        )),
        SetTo::Text(_) => Err(cannot("be set to text (only a combo box's item is)")),
        SetTo::Number(v) => {
            if let Some(r) = n.range
                && (*v < r.min || *v > r.max)
            {
                return Err(SessionError::validation(format!(
                    "{label} takes values from {} to {}{}; {} is outside",
                    strobe_ui::motor::format_value(r.min),
                    strobe_ui::motor::format_value(r.max),
                    if r.step > 0.0 {
                        format!(" in steps of {}", strobe_ui::motor::format_value(r.step))
                    } else {
                        String::new()
                    },
                    strobe_ui::motor::format_value(*v)
                )));
            }
            if n.range.is_some() || vision_only || n.value.is_none() {
                Ok(())
            } else {
                Err(cannot("be set to a number (it has no numeric value)"))
            }
        }
    }
}

/// Whether the point is inside one of `windows`.
pub(super) fn in_windows(windows: &[Window], (x, y): (i32, i32)) -> bool {
    windows.iter().any(|w| contains(&w.bounds, x, y))
}

/// The window of `windows` that shows the middle of `b`, else the first.
pub(super) fn window_of<'w>(windows: &'w [Window], b: &Bounds) -> Option<&'w Window> {
    let (x, y) = strobe_ui::motor::plan::center(b);
    windows
        .iter()
        .find(|w| contains(&w.bounds, x, y))
        .or(windows.first())
}

fn contains(b: &Bounds, x: i32, y: i32) -> bool {
    x >= b.x && y >= b.y && x < b.x + b.width as i32 && y < b.y + b.height as i32
}
