//! Tool arguments taken from a call: like rmcp's `Parameters`, but an
//! argument of the wrong type is reported with the tool and the field's
//! path (`debug_memory: poll.intervalMs: invalid value: integer -1, expected
//! a non-negative integer`), in words rather than Rust type names, and with
//! long values cut, so an error never echoes a megabyte back.

use rmcp::ErrorData as McpError;
use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use serde::de::DeserializeOwned;
use serde_json::Value;
use strobe_core::error::{cap_message, excerpt};

/// The start rmcp's router looks for to turn an argument error into a tool
/// error result (`isError: true`) instead of a JSON-RPC error; `call_tool`
/// then gives it Strobe's own error shape.
pub(crate) const ARGUMENT_ERROR_PREFIX: &str = "failed to deserialize parameters:";

/// A tool's arguments, deserialized from the call.
pub struct Args<P>(pub P);

impl<S, P: DeserializeOwned> FromContextPart<ToolCallContext<'_, S>> for Args<P> {
    fn from_context_part(context: &mut ToolCallContext<S>) -> Result<Self, McpError> {
        let arguments = context.arguments.take().unwrap_or_default();
        parse(&context.name, Value::Object(arguments))
            .map(Args)
            .map_err(|message| {
                McpError::invalid_params(format!("{ARGUMENT_ERROR_PREFIX} {message}"), None)
            })
    }
}

/// Deserializes `value` as `tool`'s arguments; the error names the tool and
/// the field.
pub(crate) fn parse<P: DeserializeOwned>(tool: &str, value: Value) -> Result<P, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let what = plain_words(&e.inner().to_string());
        if path == "." {
            cap_message(&format!("{tool}: {what}"))
        } else {
            cap_message(&format!("{tool}: {}: {what}", excerpt(&path)))
        }
    })
}

/// serde's messages in the words of JSON: `expected u32` says nothing to
/// a caller writing JSON.
fn plain_words(message: &str) -> String {
    let mut out = message.to_string();
    for (rust, json) in [
        (
            "expected u8",
            "expected a non-negative integer (at most 255)",
        ),
        (
            "expected u16",
            "expected a non-negative integer (at most 65535)",
        ),
        (
            "expected u32",
            "expected a non-negative integer (at most 4294967295)",
        ),
        ("expected u64", "expected a non-negative integer"),
        ("expected usize", "expected a non-negative integer"),
        ("expected i32", "expected an integer (32-bit)"),
        ("expected i64", "expected an integer"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected an array"),
        ("expected a map", "expected an object"),
        ("expected a boolean", "expected true or false"),
    ] {
        if let Some(at) = out.find(rust)
            && !out[at + rust.len()..].starts_with(|c: char| c.is_alphanumeric())
        {
            out.replace_range(at..at + rust.len(), json);
        }
    }
    // `expected struct LaunchParams` names a Rust type.
    if let Some(at) = out.find("expected struct ") {
        out.replace_range(at.., "expected an object");
    }
    // serde quotes numbers in backticks (`-1`); JSON writers do not.
    for (rust, json) in [("integer `", "integer "), ("floating point `", "number ")] {
        if let Some(at) = out.find(rust)
            && let Some(len) = out[at + rust.len()..].find('`')
        {
            let number = out[at + rust.len()..at + rust.len() + len].to_string();
            out.replace_range(at..at + rust.len() + len + 1, &format!("{json}{number}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{LaunchParams, MemoryParams, QueryParams};
    use serde_json::json;

    fn err<P: DeserializeOwned>(tool: &str, v: Value) -> String {
        match parse::<P>(tool, v) {
            Ok(_) => panic!("{tool} should refuse it"),
            Err(e) => e,
        }
    }

    #[test]
    fn errors_name_the_tool_and_the_field() {
        assert_eq!(
            err::<MemoryParams>(
                "debug_memory",
                json!({"sessionId": "s", "targets": [], "poll": {"intervalMs": -1, "durationMs": 5}})
            ),
            "debug_memory: poll.intervalMs: invalid value: integer -1, expected a non-negative integer"
        );
        assert_eq!(
            err::<MemoryParams>(
                "debug_memory",
                json!({"sessionId": "s", "targets": [{"size": "x"}]})
            ),
            "debug_memory: targets[0].size: invalid type: string \"x\", expected a non-negative integer"
        );
        assert_eq!(
            err::<QueryParams>("debug_query", json!({"sessionId": "s", "limit": "many"})),
            "debug_query: limit: invalid type: string \"many\", expected an integer"
        );
        assert_eq!(
            err::<QueryParams>("debug_query", json!({"limit": 5})),
            "debug_query: missing field `sessionId`"
        );
        let unknown = err::<LaunchParams>("debug_launch", json!({"projectRoot": "/", "comand": 1}));
        assert!(
            unknown.starts_with("debug_launch: comand: unknown field `comand`, expected one of"),
            "{unknown}"
        );
        assert_eq!(
            err::<LaunchParams>("debug_launch", json!({"projectRoot": "/", "args": "x"})),
            "debug_launch: args: invalid type: string \"x\", expected an array"
        );
        assert_eq!(
            err::<LaunchParams>("debug_launch", json!({"projectRoot": "/", "env": {"A": 1}})),
            "debug_launch: env.A: invalid type: integer 1, expected a string"
        );
    }

    #[test]
    fn long_values_are_not_echoed_whole() {
        let big = "x".repeat(1 << 20);
        let e = err::<QueryParams>("debug_query", json!({"sessionId": "s", "limit": big}));
        assert!(e.len() < 1_000, "{} bytes", e.len());
        assert!(
            e.starts_with("debug_query: limit: invalid type: string \"xxx"),
            "{e}"
        );
        let key = err::<LaunchParams>(
            "debug_launch",
            json!({"projectRoot": "/", "env": {big.clone(): 1}}),
        );
        assert!(key.len() < 1_000, "{} bytes", key.len());
    }
}
