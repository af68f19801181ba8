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
        ("allowOutsideProject", p.allow_outside_project.is_some()),
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
            refuse_extra(&p, "add", &["channel", "allowOutsideProject"])?;
            let spec = need_channel(&p, "add")?;
            let outside = p.allow_outside_project.unwrap_or(false);
            let c = blocking(move || mgr.add_channel_with(&id, &spec, outside)).await?;
            let reach = if c.outside_project {
                " It works on files outside the project root, as allowOutsideProject asked."
            } else {
                ""
            };
            let text = format!(
                "Opened {}. Send with debug_channel {{action: \"send\", channel: {:?}, data: …}}; what it sees is debug_query {{eventType: {:?}}}.{reach}",
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
                let respelled = SessionManager::channel_respelled(&name)
                    .map(|net| format!(" ({name:?} is an address: the channel is {net:?})"))
                    .unwrap_or_default();
                ToolError::validation(format!(
                    "{name:?} is not a channel: a kind ({}) or kind:target{respelled}",
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
