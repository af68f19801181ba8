//! Building tool replies: structured content with its short text, the
//! error shape every refusal has, blocking work off the async threads (where
//! the layers' typed errors become the agent's codes), warnings.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};
use strobe_core::ToolError;

/// A watch parameter as the session layer takes it.
pub(crate) fn watch_request(
    w: crate::params::WatchTargetParam,
) -> strobe_session::trace::WatchRequest {
    strobe_session::trace::WatchRequest {
        variable: w.variable,
        address: w.address,
        type_hint: w.type_hint,
        label: w.label,
        expr: w.expr,
        on: w.on,
    }
}

pub(crate) fn ok(value: Value, text: String) -> CallToolResult {
    let mut r = CallToolResult::structured(value);
    r.content = vec![ContentBlock::text(text)];
    r
}

pub(crate) fn fail(e: ToolError) -> CallToolResult {
    let mut r = CallToolResult::structured_error(json!({
        "error": { "code": e.code.as_str(), "message": e.message }
    }));
    r.content = vec![ContentBlock::text(format!(
        "{}: {}",
        e.code.as_str(),
        e.message
    ))];
    r
}

pub(crate) async fn blocking<T: Send + 'static, E: Into<ToolError> + Send + 'static>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, ToolError> {
    // The session layer's errors become the agent's codes here
    // (`From<SessionError> for ToolError`, strobe-session's error.rs).
    let f = move || f().map_err(Into::into);
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(ToolError::internal(format!(
            "the request handler panicked: {e}"
        )))
    })
}

pub(crate) fn with_warnings(mut v: Value, warnings: &[String]) -> Value {
    if !warnings.is_empty() {
        v["warnings"] = json!(warnings);
    }
    v
}
