//! `debug_ui_action`'s arguments checked (each field the action type
//! takes, and none it does not) and its answer rendered: one line saying
//! what was done, how, and whether it was seen to work, then what changed.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::CallToolResult;
use serde_json::Value;
use strobe_core::{Settings, ToolError};
use strobe_session::{SessionManager, UiActionRequest, UiActionResponse, UiVerify};
use strobe_ui::Button;
use strobe_ui::motor::{self, Direction, DragTarget, Intent, SetTo, keys};

use crate::params::{UiActionParams, UiActionSpec, UiActionType, UiModeParam, UiParams};
use crate::reply::{blocking, fail, ok};

/// The longest an action may wait for its effect.
const MAX_TIMEOUT_MS: i64 = 30_000;

fn invalid(msg: String) -> ToolError {
    ToolError::validation(msg)
}

/// The fields each action type takes, for the errors.
fn fields_of(kind: UiActionType) -> &'static str {
    match kind {
        UiActionType::Click => "id, button (left|right|middle), count (1|2)",
        UiActionType::SetValue => "id, value (a number, true/false, or a combo item's text)",
        UiActionType::Type => "id, text, replace",
        UiActionType::Select => "id, item",
        UiActionType::Scroll => "id, direction (up|down|left|right), amount",
        UiActionType::Drag => "from (an id), to (an id or {x, y})",
        UiActionType::Key => "key, modifiers, id (focused first)",
        UiActionType::Focus => "id",
    }
}

fn type_name(kind: UiActionType) -> &'static str {
    match kind {
        UiActionType::Click => "click",
        UiActionType::SetValue => "set_value",
        UiActionType::Type => "type",
        UiActionType::Select => "select",
        UiActionType::Scroll => "scroll",
        UiActionType::Drag => "drag",
        UiActionType::Key => "key",
        UiActionType::Focus => "focus",
    }
}

fn node_id(field: &str, v: &Option<String>, kind: UiActionType) -> Result<String, ToolError> {
    let Some(id) = v else {
        return Err(invalid(format!(
            "{} needs '{field}': a node id from debug_ui (like \"btn#5c8a12\"); it takes {}",
            type_name(kind),
            fields_of(kind)
        )));
    };
    if id.is_empty() || id.len() > 64 || !id.contains('#') {
        return Err(invalid(format!(
            "'{field}' {id:?} is not a node id: ids look like \"btn#5c8a12\" (role, #, six hex digits), as debug_ui's tree shows them"
        )));
    }
    Ok(id.clone())
}

/// The intent `a` asks for, or why it is not one.
pub(crate) fn intent(a: &UiActionSpec) -> Result<Intent, ToolError> {
    use UiActionType as T;
    let kind = a.kind;
    let takes = fields_of(kind);
    refuse_fields_not_taken(a, takes)?;
    let required = |field: &str, v: &Option<String>| {
        v.clone().ok_or_else(|| {
            invalid(format!(
                "{} needs '{field}'; it takes {takes}",
                type_name(kind)
            ))
        })
    };
    Ok(match kind {
        T::Click => Intent::Click {
            id: node_id("id", &a.id, kind)?,
            button: match a.button.as_deref() {
                None | Some("left") => Button::Left,
                Some("right") => Button::Right,
                Some("middle") => Button::Middle,
                Some(other) => {
                    return Err(invalid(format!(
                        "'button' {other:?} is not a button: left, right or middle"
                    )));
                }
            },
            count: match a.count {
                None | Some(1) => 1,
                Some(2) => 2,
                Some(n) => {
                    return Err(invalid(format!(
                        "'count' must be 1 or 2 (a double click), got {n}"
                    )));
                }
            },
        },
        T::SetValue => Intent::SetValue {
            id: node_id("id", &a.id, kind)?,
            value: match &a.value {
                Some(Value::Number(n)) => match n.as_f64().filter(|v| v.is_finite()) {
                    Some(v) => SetTo::Number(v),
                    None => return Err(invalid(format!("'value' {n} is not a finite number"))),
                },
                Some(Value::Bool(b)) => SetTo::Bool(*b),
                Some(Value::String(s)) if !s.is_empty() => SetTo::Text(s.clone()),
                Some(other) => {
                    return Err(invalid(format!(
                        "'value' {other} is not a number, true/false, or an item's text"
                    )));
                }
                None => {
                    return Err(invalid(
                        "set_value needs 'value': a number (sliders, spin buttons, knobs), true/false (check boxes, toggles) or an item's text (combo boxes)".into(),
                    ));
                }
            },
        },
        T::Type => {
            let text = required("text", &a.text)?;
            if text.chars().count() > 10_000 {
                return Err(invalid(format!(
                    "'text' is {} characters; at most 10000 are typed in one action",
                    text.chars().count()
                )));
            }
            motor::typeable(&text).map_err(invalid)?;
            Intent::Type {
                id: node_id("id", &a.id, kind)?,
                text,
                replace: a.replace.unwrap_or(false),
            }
        }
        T::Select => Intent::Select {
            id: node_id("id", &a.id, kind)?,
            item: required("item", &a.item)?,
        },
        T::Scroll => Intent::Scroll {
            id: node_id("id", &a.id, kind)?,
            direction: match a.direction.as_deref() {
                Some("up") => Direction::Up,
                Some("down") => Direction::Down,
                Some("left") => Direction::Left,
                Some("right") => Direction::Right,
                Some(other) => {
                    return Err(invalid(format!(
                        "'direction' {other:?} is not a direction: up, down, left or right"
                    )));
                }
                None => {
                    return Err(invalid(
                        "scroll needs 'direction': up, down, left or right".into(),
                    ));
                }
            },
            amount: match a.amount {
                None => 3,
                Some(n) if (1..=100).contains(&n) => n as u32,
                Some(n) => {
                    return Err(invalid(format!(
                        "'amount' is wheel notches, 1–100 (default 3), got {n}"
                    )));
                }
            },
        },
        T::Drag => Intent::Drag {
            from: node_id("from", &a.from, kind)?,
            to: drag_target(&a.to, kind)?,
        },
        T::Key => {
            let key = keys::parse(&required("key", &a.key)?).map_err(invalid)?;
            let mut modifiers = Vec::new();
            for m in a.modifiers.iter().flatten() {
                let m = keys::modifier(m).map_err(invalid)?;
                if !modifiers.contains(&m) {
                    modifiers.push(m);
                }
            }
            Intent::Key {
                key,
                modifiers,
                id: match &a.id {
                    Some(_) => Some(node_id("id", &a.id, kind)?),
                    None => None,
                },
            }
        }
        T::Focus => Intent::Focus {
            id: node_id("id", &a.id, kind)?,
        },
    })
}

/// Fields `a`'s type does not take are mistakes worth naming.
fn refuse_fields_not_taken(a: &UiActionSpec, takes: &str) -> Result<(), ToolError> {
    let kind = a.kind;
    let given: [(&str, bool); 14] = [
        ("id", a.id.is_some()),
        ("button", a.button.is_some()),
        ("count", a.count.is_some()),
        ("value", a.value.is_some()),
        ("text", a.text.is_some()),
        ("replace", a.replace.is_some()),
        ("item", a.item.is_some()),
        ("direction", a.direction.is_some()),
        ("amount", a.amount.is_some()),
        ("from", a.from.is_some()),
        ("to", a.to.is_some()),
        ("key", a.key.is_some()),
        ("modifiers", a.modifiers.is_some()),
        ("type", true),
    ];
    for (name, present) in given {
        let known = name == "type" || takes.split(", ").any(|f| f.split(' ').next() == Some(name));
        if present && !known {
            return Err(invalid(format!(
                "{} does not take '{name}'; it takes {takes}",
                type_name(kind)
            )));
        }
    }
    Ok(())
}

/// Where a drag ends: a node id, or a point `{x, y}` on the display.
fn drag_target(to: &Option<Value>, kind: UiActionType) -> Result<DragTarget, ToolError> {
    Ok(match to {
        Some(Value::String(s)) => DragTarget::Node(node_id("to", &Some(s.clone()), kind)?),
        Some(Value::Object(o)) => {
            let coord = |k: &str| {
                o.get(k)
                    .and_then(Value::as_i64)
                    .filter(|v| (-32_768..=32_767).contains(v))
                    .map(|v| v as i32)
            };
            match (coord("x"), coord("y"), o.len()) {
                (Some(x), Some(y), 2) => DragTarget::Point { x, y },
                _ => {
                    return Err(invalid(
                        "'to' as a point is {x, y}: whole display pixels, as debug_ui's geometry gives them".into(),
                    ));
                }
            }
        }
        _ => {
            return Err(invalid(
                "drag needs 'to': a node id, or a point {x, y} on the display".into(),
            ));
        }
    })
}

/// The request `p` asks for under `settings`, or why it is not one.
pub(crate) fn request(
    p: &UiActionParams,
    settings: &Settings,
) -> Result<UiActionRequest, ToolError> {
    let intent = intent(&p.action)?;
    let verify = match &p.verify {
        None => None,
        Some(v) => match (&v.function, &v.watch) {
            (Some(f), None) if !f.trim().is_empty() => Some(UiVerify::Function(f.trim().into())),
            (None, Some(w)) if !w.trim().is_empty() => Some(UiVerify::Watch(w.trim().into())),
            _ => {
                return Err(invalid(
                    "'verify' is one of {function: \"name\"} (a traced call must follow) or {watch: \"variable\"} (it must change)".into(),
                ));
            }
        },
    };
    let timeout = match p.timeout_ms {
        None => 1_000,
        Some(ms) if (1..=MAX_TIMEOUT_MS).contains(&ms) => ms,
        Some(ms) => {
            return Err(invalid(format!(
                "'timeoutMs' must be 1–{MAX_TIMEOUT_MS} (default 1000), got {ms}"
            )));
        }
    };
    let look = UiParams {
        session_id: p.session_id.clone(),
        mode: Some(UiModeParam::Tree),
        id: None,
        max_nodes: None,
        all: false,
        vision: None,
    };
    Ok(UiActionRequest {
        intent,
        verify,
        timeout: Duration::from_millis(timeout as u64),
        allow_input_on_user_display: settings.ui_allow_input_on_user_display,
        vision: crate::ui::request(&look, settings)?,
    })
}

/// Runs `debug_ui_action` for `p` under `settings` (the session's).
pub(crate) async fn debug_ui_action(
    mgr: Arc<SessionManager>,
    p: UiActionParams,
    settings: Settings,
    warnings: Vec<String>,
) -> CallToolResult {
    let req = match request(&p, &settings) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let id = p.session_id.clone();
    match blocking(move || mgr.ui_action(&id, &req)).await {
        Ok(mut resp) => {
            resp.warnings.extend(warnings);
            let text = text(&p.session_id, &resp);
            ok(serde_json::to_value(&resp).expect("serializable"), text)
        }
        Err(e) => fail(e),
    }
}

/// The short text: what was done to what, how, whether it was seen to
/// work, and what changed.
pub(crate) fn text(session: &str, r: &UiActionResponse) -> String {
    let mut out = String::new();
    let target = r
        .before
        .as_ref()
        .map(|b| format!(" {} [{}]", b.id, b.name))
        .unwrap_or_default();
    out.push_str(&format!(
        "{}{target} by {}: {} in {} ms — {}.\n",
        r.kind,
        r.method,
        if r.verified {
            "verified"
        } else {
            "sent, NOT verified"
        },
        r.elapsed_ms,
        r.observed
    ));
    if let (Some(b), Some(a)) = (&r.before, &r.after)
        && (b.value != a.value || b.states != a.states)
    {
        out.push_str(&format!(
            "Node: {} {:?} → {} {:?}.\n",
            b.value.as_deref().unwrap_or("-"),
            b.states,
            a.value.as_deref().unwrap_or("-"),
            a.states
        ));
    }
    if !r.steps.is_empty() {
        out.push_str(&format!("Input: {}.\n", r.steps.join("; ")));
    }
    if !r.tried.is_empty() {
        out.push_str(&format!("Tried: {}.\n", r.tried.join("; ")));
    }
    out.push_str(&crate::ui::changes_line(
        "Tree",
        "The tree did not change",
        &r.changes,
    ));
    for w in &r.warnings {
        out.push_str(&format!("Warning: {w}\n"));
    }
    out.push_str(&format!(
        "Recorded as a ui_action event between ui_snapshots {} and {}: debug_query {{sessionId: \"{session}\", eventType: \"ui_action\"}}; debug_ui shows the tree now.",
        r.snapshot_before, r.snapshot_after
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(v: Value) -> Result<UiActionParams, serde_json::Error> {
        serde_json::from_value(v)
    }

    fn ask(v: Value) -> Result<UiActionRequest, String> {
        request(&params(v).map_err(|e| e.to_string())?, &Settings::default()).map_err(|e| e.message)
    }

    #[test]
    fn each_action_type_is_checked_with_the_fix_named() {
        use serde_json::json;
        let r = ask(json!({"sessionId": "s", "action": {"type": "click", "id": "btn#000001"}}))
            .unwrap();
        assert_eq!(
            r.intent,
            Intent::Click {
                id: "btn#000001".into(),
                button: Button::Left,
                count: 1
            }
        );
        assert_eq!(r.timeout, Duration::from_secs(1));
        assert!(!r.allow_input_on_user_display);
        let e =
            ask(json!({"sessionId": "s", "action": {"type": "click", "text": "x", "id": "btn#1"}}))
                .unwrap_err();
        assert!(
            e.contains("click does not take 'text'; it takes id, button"),
            "{e}"
        );
        let e =
            ask(json!({"sessionId": "s", "action": {"type": "type", "id": "txt#1"}})).unwrap_err();
        assert!(e.contains("type needs 'text'"), "{e}");
        let e = ask(
            json!({"sessionId": "s", "action": {"type": "set_value", "id": "Play", "value": 1}}),
        )
        .unwrap_err();
        assert!(e.contains("is not a node id"), "{e}");
        let e = ask(
            json!({"sessionId": "s", "action": {"type": "set_value", "id": "sld#1", "value": [1]}}),
        )
        .unwrap_err();
        assert!(e.contains("not a number, true/false"), "{e}");
        let e = ask(json!({"sessionId": "s", "action": {"type": "scroll", "id": "lst#1", "direction": "sideways"}})).unwrap_err();
        assert!(e.contains("up, down, left or right"), "{e}");
        // Said as a person writes it, not as Rust debug-prints an Option.
        assert!(
            e.contains("'direction' \"sideways\" is not") && !e.contains("Some("),
            "{e}"
        );
        let e = ask(json!({"sessionId": "s", "action": {"type": "scroll", "id": "lst#1"}}))
            .unwrap_err();
        assert!(
            e.contains("scroll needs 'direction'") && !e.contains("None"),
            "{e}"
        );
        // A NUL cannot be typed (nor carried by the accessibility bus).
        let e = ask(
            json!({"sessionId": "s", "action": {"type": "type", "id": "txt#1", "text": "a\u{0}b"}}),
        )
        .unwrap_err();
        assert!(e.contains("U+0000 (NUL)"), "{e}");
        let e = ask(json!({"sessionId": "s", "action": {"type": "key", "key": "a", "modifiers": ["hyper"]}})).unwrap_err();
        assert!(e.contains("ctrl, shift, alt, super"), "{e}");
        let e = ask(
            json!({"sessionId": "s", "action": {"type": "drag", "from": "btn#1", "to": {"x": 1}}}),
        )
        .unwrap_err();
        assert!(e.contains("{x, y}"), "{e}");
        let r = ask(json!({"sessionId": "s", "action": {"type": "drag", "from": "btn#1", "to": {"x": 1, "y": 2}}})).unwrap();
        assert!(matches!(
            r.intent,
            Intent::Drag {
                to: DragTarget::Point { x: 1, y: 2 },
                ..
            }
        ));
        let e = ask(json!({"sessionId": "s", "action": {"type": "click", "id": "btn#1"}, "verify": {"function": "a", "watch": "b"}})).unwrap_err();
        assert!(e.contains("one of {function"), "{e}");
        let e = ask(
            json!({"sessionId": "s", "action": {"type": "click", "id": "btn#1"}, "timeoutMs": 0}),
        )
        .unwrap_err();
        assert!(e.contains("1–30000"), "{e}");
        assert!(
            params(json!({"sessionId": "s", "action": {"type": "hover", "id": "btn#1"}})).is_err()
        );
    }
}
