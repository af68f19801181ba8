//! Requests rmcp could not read the way a tool wanted: arguments that do
//! not deserialize get Strobe's error shape, and MCP methods with
//! malformed params get invalid params instead of "method not found".

use crate::reply::fail;
use rmcp::ErrorData as McpError;
use serde_json::Value;
use strobe_core::ToolError;

/// rmcp's router turns an argument that does not deserialize into a bare
/// error result; this gives it Strobe's error shape (code, message, in both
/// the text and structuredContent) like every other refusal.
pub(crate) fn argument_error_as_tool_error(
    reply: Result<rmcp::model::CallToolResponse, McpError>,
) -> Result<rmcp::model::CallToolResponse, McpError> {
    let Ok(rmcp::model::CallToolResponse::Complete(result)) = &reply else {
        return reply;
    };
    let message = match result.content.as_slice() {
        [only] if result.is_error == Some(true) => only
            .as_text()
            .and_then(|t| t.text.strip_prefix(crate::args::ARGUMENT_ERROR_PREFIX))
            .map(|m| m.trim_start().to_string()),
        _ => None,
    };
    match message {
        Some(m) => Ok(fail(ToolError::validation(m)).into()),
        None => reply,
    }
}

/// The error for a request rmcp could not read as any MCP request.
pub(crate) fn custom_request_error(method: &str, params: Option<&Value>) -> McpError {
    let method = strobe_core::error::excerpt(method);
    let expected = match method.as_ref() {
        "tools/call" => Some("{\"name\": string, \"arguments\": object}"),
        "tools/list" | "prompts/list" | "resources/list" => Some("{\"cursor\": string} or nothing"),
        "initialize" => Some("{\"protocolVersion\", \"capabilities\", \"clientInfo\"}"),
        "ping" => Some("nothing"),
        _ => None,
    };
    let Some(expected) = expected else {
        return McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!(
                "unknown method '{method}'; Strobe serves MCP's tools (tools/list, tools/call)"
            ),
            None,
        );
    };
    let got = match params.and_then(|p| p.get("arguments")) {
        Some(a) if method == "tools/call" && !a.is_object() => format!(
            "'arguments' must be an object of the tool's arguments, got {}",
            json_kind(a)
        ),
        _ => format!(
            "got {}",
            params.map_or("no params".to_string(), |p| json_kind(p).to_string())
        ),
    };
    McpError::invalid_params(
        format!("{method}: invalid params: {got}; the params of {method} are {expected}"),
        None,
    )
}

/// What kind of JSON value `v` is, in words.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;
    use serde_json::json;

    #[test]
    fn malformed_mcp_requests_are_invalid_params() {
        let e = custom_request_error(
            "tools/call",
            Some(&json!({"name": "debug_session", "arguments": []})),
        );
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(
            e.message.contains("'arguments' must be an object") && e.message.contains("an array"),
            "{}",
            e.message
        );
        let e = custom_request_error("tools/call", Some(&json!({"name": 5})));
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        let e = custom_request_error("no/such", None);
        assert_eq!(e.code, rmcp::model::ErrorCode::METHOD_NOT_FOUND);
        assert!(e.message.contains("no/such"), "{}", e.message);
        let long = "m".repeat(1 << 20);
        assert!(custom_request_error(&long, None).message.len() < 1_000);
    }

    #[test]
    fn argument_errors_get_strobes_error_shape() {
        let raw = Ok(
            rmcp::model::CallToolResult::error(vec![ContentBlock::text(format!(
                "{} debug_query: limit: invalid type: string \"x\", expected an integer",
                crate::args::ARGUMENT_ERROR_PREFIX
            ))])
            .into(),
        );
        let Ok(rmcp::model::CallToolResponse::Complete(r)) = argument_error_as_tool_error(raw)
        else {
            panic!("a tool result")
        };
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            r.content[0].as_text().unwrap().text,
            "VALIDATION_ERROR: debug_query: limit: invalid type: string \"x\", expected an integer"
        );
        assert_eq!(
            r.structured_content.unwrap()["error"]["code"],
            "VALIDATION_ERROR"
        );
    }
}
