//! `debug_test_scenario`: a scenario (inline or a file in
//! `.strobe/scenarios/`) run by strobe-scenario in a live session, with
//! `ui.*` steps and `ui` checks done as `debug_ui_action` and `debug_ui`
//! do them.

use std::sync::Arc;

use rmcp::model::CallToolResult;
use serde_json::Value;
use strobe_core::ToolError;
use strobe_session::SessionManager;

use crate::reply::{blocking, fail, ok};

/// Finds a scenario file: a path (absolute, or relative to the project
/// root), or a name in `<projectRoot>/.strobe/scenarios/` (".json" optional).
fn scenario_path(root: &std::path::Path, file: &str) -> Result<std::path::PathBuf, ToolError> {
    let dir = root.join(".strobe").join("scenarios");
    let named = if file.ends_with(".json") {
        file.to_string()
    } else {
        format!("{file}.json")
    };
    let candidates = [root.join(file), dir.join(&named)];
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return inside(root, file, found);
    }
    let mut known: Vec<String> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect();
    known.sort();
    Err(ToolError::validation(format!(
        "no scenario file {file:?} (looked at {} and {}); {}",
        candidates[0].display(),
        candidates[1].display(),
        if known.is_empty() {
            format!("{} holds none", dir.display())
        } else {
            format!("{} holds: {}", dir.display(), known.join(", "))
        }
    )))
}

/// `found` when it stays inside the project with links resolved, or was
/// named by an absolute path (the agent's own choice). A repository's
/// `.strobe/scenarios/x.json` linking out of the tree, or a relative path
/// climbing out of it, is refused before it is read: its steps would be
/// echoed in the reply.
fn inside(
    root: &std::path::Path,
    file: &str,
    found: &std::path::Path,
) -> Result<std::path::PathBuf, ToolError> {
    if std::path::Path::new(file).is_absolute() {
        return Ok(found.to_path_buf());
    }
    let resolved = found.canonicalize().ok();
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match resolved {
        Some(r) if r.starts_with(&root) => Ok(found.to_path_buf()),
        _ => Err(ToolError::validation(format!(
            "scenario file {file:?} ({}) leads out of the project {} (through a symbolic link or \
             \"..\"): a scenario named relative to the project is read only inside it; give an \
             absolute path to run one from elsewhere",
            found.display(),
            root.display()
        ))),
    }
}

/// Runs `debug_test_scenario`.
pub(crate) async fn debug_test_scenario(
    mgr: Arc<SessionManager>,
    p: crate::params::ScenarioParams,
    settings: strobe_core::Settings,
) -> CallToolResult {
    let r = blocking(move || -> Result<(Value, String), ToolError> {
        let id = p.session_id;
        let (name, doc) = match (p.scenario, p.scenario_file) {
            (Some(_), Some(_)) => {
                return Err(ToolError::validation(
                    "give 'scenario' (the steps inline) or 'scenarioFile', not both",
                ));
            }
            (None, None) => {
                return Err(ToolError::validation(
                    "give 'scenario' ({channels?, steps: [...]}) or 'scenarioFile' (a name in .strobe/scenarios/)",
                ));
            }
            (Some(doc), None) => ("inline".to_string(), doc),
            (None, Some(file)) => {
                let Some(root) = mgr.project_root_of(&id) else {
                    // An unknown id is SESSION_NOT_FOUND; a kept one is not live.
                    mgr.status(&id)?;
                    return Err(ToolError::validation(format!(
                        "session {id:?} has ended and is only kept for reading: a scenario runs in a live session (debug_launch first)"
                    )));
                };
                let path = scenario_path(&root, &file)?;
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    ToolError::validation(format!("{}: {e}", path.display()))
                })?;
                let doc: Value = serde_json::from_str(&text).map_err(|e| {
                    ToolError::validation(format!("{} is not JSON: {e}", path.display()))
                })?;
                let stem = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (stem, doc)
            }
        };
        let ui: Arc<dyn strobe_scenario::UiDriver> = Arc::new(McpUi {
            mgr: mgr.clone(),
            settings,
        });
        // The session's own errors keep their codes (SESSION_NOT_FOUND);
        // a malformed scenario or a check that could not be read is a
        // validation error.
        let report = strobe_scenario::run_document(&mgr, &id, &name, &doc, Some(ui))
            .map_err(|e| match e {
                strobe_scenario::ScenarioError::Session(s) => ToolError::from(s),
                other => ToolError::validation(other.to_string()),
            })?;
        let text = strobe_scenario::render(&report);
        Ok((serde_json::to_value(&report).expect("serializable"), text))
    })
    .await;
    match r {
        Ok((v, text)) => ok(v, text),
        Err(e) => fail(e),
    }
}

/// `ui.*` scenario steps and `ui` checks, done as `debug_ui_action` and
/// `debug_ui` do them (the same checks, the same verification).
struct McpUi {
    mgr: Arc<SessionManager>,
    settings: strobe_core::Settings,
}

impl McpUi {
    fn params(
        &self,
        session: &str,
        action: &Value,
    ) -> Result<crate::params::UiActionParams, String> {
        let spec: crate::params::UiActionSpec =
            serde_json::from_value(action.clone()).map_err(|e| e.to_string())?;
        Ok(crate::params::UiActionParams {
            session_id: session.to_string(),
            action: spec,
            verify: None,
            timeout_ms: None,
        })
    }
}

impl strobe_scenario::UiDriver for McpUi {
    fn check(&self, action: &Value) -> Result<(), String> {
        let p = self.params("", action)?;
        crate::ui_action::intent(&p.action)
            .map(|_| ())
            .map_err(|e| e.message)
    }

    fn act(&self, session: &str, action: &Value) -> Result<String, String> {
        let p = self.params(session, action)?;
        let req = crate::ui_action::request(&p, &self.settings).map_err(|e| e.message)?;
        let resp = self.mgr.ui_action(session, &req).map_err(|e| e.message())?;
        let line = crate::ui_action::text(session, &resp)
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        if resp.verified {
            Ok(line)
        } else {
            Err(format!("sent but not seen to take effect: {line}"))
        }
    }

    fn node(&self, session: &str, id: &str) -> Result<Option<Value>, String> {
        let look = crate::params::UiParams {
            session_id: session.to_string(),
            mode: Some(crate::params::UiModeParam::Tree),
            id: Some(id.to_string()),
            max_nodes: Some(1),
            all: true,
            vision: None,
        };
        let req = crate::ui::request(&look, &self.settings).map_err(|e| e.message)?;
        match self.mgr.ui(session, &req) {
            Ok(r) => Ok(r.nodes.into_iter().next()),
            Err(e) if e.message().starts_with("no node has id") => Ok(None),
            Err(e) => Err(e.message()),
        }
    }
}
