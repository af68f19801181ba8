//! Native actions over AT-SPI: a node's own action (`Action.DoAction`),
//! its value (`Value.CurrentValue`), its text (`EditableText`), a child of
//! its selection (`Selection.SelectChild`), and focus
//! (`Component.GrabFocus`). No input is involved: the application does
//! what it is asked through its accessibility implementation.

use zbus::Connection;
use zbus::zvariant::Value;

use super::tree::{call, property};
use crate::{NativeAction, UiError};

fn failed(what: &'static str) -> impl Fn(zbus::Error) -> UiError {
    move |e| UiError::Unreachable {
        what: what.to_string(),
        why: e.to_string(),
    }
}

/// Asks the node at `path` of application `dest` to do `action`.
/// `Ok(false)`: it refused (no such action, a read-only value).
pub(super) async fn act(
    conn: &Connection,
    dest: &str,
    path: &str,
    action: &NativeAction,
) -> Result<bool, UiError> {
    if let NativeAction::SetText(t) | NativeAction::InsertText(t) = action
        && t.contains('\0')
    {
        // D-Bus strings cannot hold a NUL: the bus would drop the whole
        // connection (every later call on it fails), so it is never sent.
        return Err(UiError::Input(
            "the text holds a NUL, which the accessibility bus cannot carry".into(),
        ));
    }
    match action {
        NativeAction::Do(name) => {
            let n = property(conn, dest, path, "org.a11y.atspi.Action", "NActions")
                .await
                .ok()
                .and_then(|v| i32::try_from(v).ok())
                .unwrap_or(0);
            for i in 0..n.clamp(0, 16) {
                let got: String =
                    match call(conn, dest, path, "org.a11y.atspi.Action", "GetName", &(i,)).await {
                        Ok(g) => g,
                        Err(_) => continue,
                    };
                if got.eq_ignore_ascii_case(name) {
                    return call::<_, bool>(
                        conn,
                        dest,
                        path,
                        "org.a11y.atspi.Action",
                        "DoAction",
                        &(i,),
                    )
                    .await
                    .map_err(failed("the node's action"));
                }
            }
            Ok(false)
        }
        NativeAction::SetValue(v) => {
            let set = call::<_, ()>(
                conn,
                dest,
                path,
                "org.freedesktop.DBus.Properties",
                "Set",
                &("org.a11y.atspi.Value", "CurrentValue", Value::F64(*v)),
            )
            .await;
            Ok(set.is_ok())
        }
        NativeAction::SetText(text) => call::<_, bool>(
            conn,
            dest,
            path,
            "org.a11y.atspi.EditableText",
            "SetTextContents",
            &(text.as_str(),),
        )
        .await
        .map_err(failed("the node's editable text")),
        NativeAction::InsertText(text) => {
            let caret = property(conn, dest, path, "org.a11y.atspi.Text", "CaretOffset")
                .await
                .ok()
                .and_then(|v| i32::try_from(v).ok())
                .unwrap_or(-1);
            let at = if caret >= 0 {
                caret
            } else {
                property(conn, dest, path, "org.a11y.atspi.Text", "CharacterCount")
                    .await
                    .ok()
                    .and_then(|v| i32::try_from(v).ok())
                    .unwrap_or(0)
            };
            // The length is in bytes, as ATK's and GTK's insert take it.
            call::<_, bool>(
                conn,
                dest,
                path,
                "org.a11y.atspi.EditableText",
                "InsertText",
                &(at, text.as_str(), text.len() as i32),
            )
            .await
            .map_err(failed("the node's editable text"))
        }
        NativeAction::SelectChild(i) => call::<_, bool>(
            conn,
            dest,
            path,
            "org.a11y.atspi.Selection",
            "SelectChild",
            &(*i,),
        )
        .await
        .map_err(failed("the node's selection")),
        NativeAction::Focus => call::<_, bool>(
            conn,
            dest,
            path,
            "org.a11y.atspi.Component",
            "GrabFocus",
            &(),
        )
        .await
        .map_err(failed("the node's component")),
    }
}
