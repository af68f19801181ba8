//! `debug_ui`'s arguments checked and its answer rendered: the compact tree
//! as the text (what was cut or hidden says how to get it), the structured
//! nodes, and the screenshot as PNG image content with its saved path.

use base64::Engine;
use rmcp::model::{CallToolResult, ContentBlock};
use std::sync::Arc;
use strobe_core::{Settings, ToolError};
use strobe_session::{SessionManager, UiMode, UiRequest, UiResponse};

use crate::params::{UiModeParam, UiParams};
use crate::reply::{blocking, fail, ok};

/// The most nodes one answer may ask for.
const MAX_NODES_LIMIT: i64 = 5_000;

/// The request `p` asks for under `settings`, or why it is not one.
pub(crate) fn request(p: &UiParams, settings: &Settings) -> Result<UiRequest, ToolError> {
    let max_nodes = match p.max_nodes {
        None => 200,
        Some(n) if (1..=MAX_NODES_LIMIT).contains(&n) => n as usize,
        Some(n) => {
            return Err(ToolError::validation(format!(
                "'maxNodes' must be between 1 and {MAX_NODES_LIMIT}, got {n}; ask for a subtree with 'id' instead of a bigger answer"
            )));
        }
    };
    if let Some(id) = &p.id
        && (id.is_empty() || id.len() > 64 || !id.contains('#'))
    {
        return Err(ToolError::validation(format!(
            "'id' {id:?} is not a node id: ids look like \"btn#5c8a12\" (role, #, six hex digits), as debug_ui's tree shows them"
        )));
    }
    Ok(UiRequest {
        mode: match p.mode.unwrap_or(UiModeParam::Tree) {
            UiModeParam::Tree => UiMode::Tree,
            UiModeParam::Screenshot => UiMode::Screenshot,
            UiModeParam::Both => UiMode::Both,
        },
        id: p.id.clone(),
        max_nodes,
        all: p.all,
        vision: p.vision.unwrap_or(settings.vision_enabled),
        min_confidence: settings.vision_confidence_threshold as f32,
        iou_threshold: settings.vision_iou_merge_threshold,
        vision_idle: std::time::Duration::from_secs(settings.vision_idle_timeout_s),
        venv: settings.frida_venv.clone(),
    })
}

/// Runs `debug_ui` for `p` under `settings` (the session's), with the
/// settings' own `warnings`.
pub(crate) async fn debug_ui(
    mgr: Arc<SessionManager>,
    p: UiParams,
    settings: Settings,
    warnings: Vec<String>,
) -> CallToolResult {
    let req = match request(&p, &settings) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let id = p.session_id.clone();
    match blocking(move || mgr.ui(&id, &req)).await {
        Ok(mut resp) => {
            resp.warnings.extend(warnings);
            reply(&p.session_id, resp)
        }
        Err(e) => fail(e),
    }
}

fn reply(session: &str, resp: UiResponse) -> CallToolResult {
    let text = text(session, &resp);
    let png = resp.screenshot.as_ref().map(|s| s.png.clone());
    let mut r = ok(serde_json::to_value(&resp).expect("serializable"), text);
    if let Some(png) = png {
        r.content.push(ContentBlock::image(
            base64::engine::general_purpose::STANDARD.encode(png),
            "image/png",
        ));
    }
    r
}

/// The short text: windows, the tree (or what replaced it), the changes
/// since the last look, the screenshot's path, and the warnings.
pub(crate) fn text(session: &str, r: &UiResponse) -> String {
    let mut out = String::new();
    let windows: Vec<String> = r
        .windows
        .iter()
        .map(|w| {
            format!(
                "\"{}\" (pid {}, {}x{}+{}+{})",
                w.title, w.pid, w.bounds[2], w.bounds[3], w.bounds[0], w.bounds[1]
            )
        })
        .collect();
    out.push_str(&format!(
        "Display {}: {}.\n",
        r.display,
        if windows.is_empty() {
            "no window".to_string()
        } else {
            format!("window {}", windows.join(", "))
        }
    ));
    if let Some(tree) = &r.tree {
        out.push_str(tree);
    }
    if let Some(c) = &r.changes {
        out.push_str(&changes_line(
            "Since the previous debug_ui",
            "No change since the previous debug_ui",
            c,
        ));
    }
    if let Some(s) = &r.screenshot {
        out.push_str(&format!(
            "Screenshot {}x{} (image below) saved at {}.\n",
            s.width, s.height, s.path
        ));
    }
    if let Some(v) = &r.vision {
        out.push_str(&format!(
            "Vision found {} things: {} confirmed nodes (↻merged), {} new nodes (⚡vision).\n",
            v["found"], v["confirmed"], v["added"]
        ));
    }
    for w in &r.warnings {
        out.push_str(&format!("Warning: {w}\n"));
    }
    out.push_str(&format!(
        "Recorded as a ui_snapshot event: debug_query {{sessionId: \"{session}\", eventType: \"ui_snapshot\"}}."
    ));
    out
}

/// One line for a tree diff: `{lead}: 1 added, 0 removed, 2 changed
/// (+id ~id ~id)`, or `none` when nothing changed.
pub(crate) fn changes_line(lead: &str, none: &str, c: &strobe_session::UiChanges) -> String {
    if c.added_count + c.removed_count + c.changed_count == 0 {
        return format!("{none}.\n");
    }
    format!(
        "{lead}: {} added, {} removed, {} changed ({}).\n",
        c.added_count,
        c.removed_count,
        c.changed_count,
        c.added
            .iter()
            .map(|i| format!("+{i}"))
            .chain(c.removed.iter().map(|i| format!("-{i}")))
            .chain(c.changed.iter().map(|i| format!("~{i}")))
            .take(12)
            .collect::<Vec<_>>()
            .join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(json: serde_json::Value) -> UiParams {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn arguments_are_checked_with_the_fix_named() {
        let s = Settings::default();
        let ask = |v: serde_json::Value, s: &Settings| request(&params(v), s);
        let r = ask(serde_json::json!({"sessionId": "s"}), &s).unwrap();
        assert_eq!(
            (r.mode, r.max_nodes, r.all, r.vision),
            (UiMode::Tree, 200, false, false)
        );
        // vision.enabled turns vision on unless the call says otherwise.
        let on = Settings {
            vision_enabled: true,
            ..Settings::default()
        };
        assert!(
            ask(serde_json::json!({"sessionId": "s"}), &on)
                .unwrap()
                .vision
        );
        let off = ask(serde_json::json!({"sessionId": "s", "vision": false}), &on);
        assert!(!off.unwrap().vision);
        let e = ask(serde_json::json!({"sessionId": "s", "maxNodes": 0}), &s).unwrap_err();
        assert!(e.message.contains("between 1 and 5000"), "{}", e.message);
        let e = ask(serde_json::json!({"sessionId": "s", "id": "Play"}), &s).unwrap_err();
        assert!(e.message.contains("btn#5c8a12"), "{}", e.message);
        let bad = serde_json::json!({"sessionId": "s", "mode": "video"});
        assert!(serde_json::from_value::<UiParams>(bad).is_err());
    }
}
