//! `debug_channel`: one tool for a session's I/O channels (list, add, send,
//! query, remove) instead of the spec's four, since every tool's
//! description is in every agent's context on every turn.

use std::sync::Arc;

use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use strobe_core::ToolError;
use strobe_session::{ChannelInfo, SessionManager};

use crate::params::{ChannelActionParam, ChannelParams};
use crate::reply::{blocking, fail, ok};

/// Events a query shows by default.
const DEFAULT_LIMIT: i64 = 20;

/// Runs `debug_channel`.
pub(crate) async fn debug_channel(mgr: Arc<SessionManager>, p: ChannelParams) -> CallToolResult {
    match run(mgr, p).await {
        Ok((v, text)) => ok(v, text),
        Err(e) => fail(e),
    }
}

fn need_channel(p: &ChannelParams, action: &str) -> Result<String, ToolError> {
    p.channel.clone().filter(|c| !c.is_empty()).ok_or_else(|| {
        ToolError::validation(format!(
            "'{action}' needs 'channel' (\"stdio\", \"net:8080\", \"file:*.ini\"); debug_channel {{action: \"list\"}} shows the open ones and the kinds"
        ))
    })
}

fn refuse_extra(p: &ChannelParams, action: &str, takes: &[&str]) -> Result<(), ToolError> {
    let given = [
        ("channel", p.channel.is_some()),
        ("data", p.data.is_some()),
        ("limit", p.limit.is_some()),
    ];
    for (field, set) in given {
        if set && !takes.contains(&field) {
            return Err(ToolError::validation(format!(
                "'{action}' takes no '{field}' (it takes sessionId{})",
                takes.iter().map(|t| format!(", {t}")).collect::<String>()
            )));
        }
    }
    Ok(())
}

fn channel_line(c: &ChannelInfo) -> String {
    let halves = match (c.sends, c.sees) {
        (true, true) => "sends+sees",
        (true, false) => "sends",
        (false, true) => "sees",
        (false, false) => "events only",
    };
    format!(
        "{} ({halves}; events: {}) — {}",
        c.name, c.event_type, c.about
    )
}

async fn run(mgr: Arc<SessionManager>, p: ChannelParams) -> Result<(Value, String), ToolError> {
    let id = p.session_id.clone();
    match p.action {
        ChannelActionParam::List => {
            refuse_extra(&p, "list", &[])?;
            let open = blocking({
                let mgr = mgr.clone();
                move || mgr.list_channels(&id)
            })
            .await?;
            let kinds = SessionManager::channel_kinds();
            let mut text = format!("{} channel(s) open:\n", open.len());
            for c in &open {
                text.push_str(&format!("  {}\n", channel_line(c)));
            }
            text.push_str("Kinds to add:\n");
            for k in &kinds {
                text.push_str(&format!("  {}: {}\n", k.kind, k.about));
            }
            Ok((json!({"channels": open, "kinds": kinds}), text))
        }
        ChannelActionParam::Add => {
            refuse_extra(&p, "add", &["channel"])?;
            let spec = need_channel(&p, "add")?;
            let c = blocking(move || mgr.add_channel(&id, &spec)).await?;
            let text = format!(
                "Opened {}. Send with debug_channel {{action: \"send\", channel: {:?}, data: …}}; what it sees is debug_query {{eventType: {:?}}}.",
                channel_line(&c),
                c.name,
                c.event_type
            );
            Ok((json!({"channel": c}), text))
        }
        ChannelActionParam::Remove => {
            refuse_extra(&p, "remove", &["channel"])?;
            let name = need_channel(&p, "remove")?;
            let c = blocking(move || mgr.remove_channel(&id, &name)).await?;
            let text = format!("Closed {}; what it saw stays queryable.", c.name);
            Ok((json!({"removed": c}), text))
        }
        ChannelActionParam::Send => {
            refuse_extra(&p, "send", &["channel", "data"])?;
            let name = need_channel(&p, "send")?;
            let data = p.data.clone().ok_or_else(|| {
                ToolError::validation(
                    "'send' needs 'data', the stimulus: stdio {line} / {text} / {eof: true}; net {method?, path, body?} or {data}; file {op, path?, text?}",
                )
            })?;
            let sent = blocking(move || mgr.channel_send(&id, &name, &data)).await?;
            let text = format!(
                "{}: {} ({} ms).",
                sent.channel, sent.summary, sent.elapsed_ms
            );
            Ok((serde_json::to_value(&sent).expect("serializable"), text))
        }
        ChannelActionParam::Query => {
            refuse_extra(&p, "query", &["channel", "limit"])?;
            let name = need_channel(&p, "query")?;
            let limit = p.limit.unwrap_or(DEFAULT_LIMIT);
            // By the channel's kind, so a closed channel (its program
            // ended, or removed) and a retained session still answer.
            let event_type = SessionManager::channel_event_type(&name).ok_or_else(|| {
                ToolError::validation(format!(
                    "{name:?} is not a channel: a kind ({}) or kind:target",
                    strobe_channels_kinds()
                ))
            })?;
            let kind = name.split(':').next().unwrap_or("").to_string();
            if kind == "trace" {
                return Err(ToolError::validation(
                    "the trace channel's events are function calls: debug_query {eventType: \"function_enter\"} (or function, threadName… filters) shows them",
                ));
            }
            let params: strobe_query::QueryParams = serde_json::from_value(json!({
                "sessionId": id,
                "eventType": event_type,
                "textContains": format!("\"channel\":{}", json!(name)),
                "limit": limit,
            }))
            .map_err(|e| ToolError::internal(e.to_string()))?;
            let (v, body) = blocking(move || strobe_query::run_query(&mgr, params)).await?;
            let mut text = format!("{event_type} events of channel {name}:\n{body}");
            if kind == "stdio" {
                text.push_str(
                    "\n(The program's output: debug_query {eventType: \"stdout\"} or \"stderr\".)",
                );
            }
            Ok((v, text))
        }
    }
}

/// The channel kinds, for errors.
fn strobe_channels_kinds() -> String {
    let mut kinds = vec!["stdio".to_string(), "trace".to_string()];
    kinds.extend(SessionManager::channel_kinds().into_iter().map(|k| k.kind));
    kinds.join(", ")
}

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
        return Ok(found.clone());
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
                let root = mgr.project_root_of(&id).ok_or_else(|| {
                    ToolError::validation(format!(
                        "session {id:?} is not live: a scenario runs in a running session (debug_launch first)"
                    ))
                })?;
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
        let report = strobe_scenario::run_document(&mgr, &id, &name, &doc, Some(ui))
            .map_err(|e| ToolError::validation(e.to_string()))?;
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
