//! `debug_query`'s arguments: the request type of the query service, read
//! the same way from MCP and from the web API's `…/query` body.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// String conditions on function names.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NameFilter {
    /// Demangled name.
    pub equals: Option<String>,
    /// Substring.
    #[schemars(description = "")]
    pub contains: Option<String>,
    /// Rust regex.
    pub matches: Option<String>,
}

/// String conditions on source files.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileFilter {
    /// Path as in DWARF.
    pub equals: Option<String>,
    /// Substring.
    #[schemars(description = "")]
    pub contains: Option<String>,
}

/// Conditions on a function's return value.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReturnFilter {
    /// Number, bool, "0x2a", enum name or C string.
    pub equals: Option<Value>,
    /// true: 0/NULL only; false: non-zero only.
    pub is_null: Option<bool>,
}

/// Conditions on thread names.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThreadFilter {
    /// Substring.
    #[schemars(description = "")]
    pub contains: Option<String>,
}

/// `debug_query` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueryParams {
    /// The session (live or retained).
    #[schemars(description = "")]
    pub session_id: String,
    /// Only this kind of event.
    #[schemars(description = "")]
    #[schemars(extend("enum" = EVENT_TYPES))]
    pub event_type: Option<String>,
    /// Function events by name.
    pub function: Option<NameFilter>,
    /// Function events by defining file.
    pub source_file: Option<FileFilter>,
    /// function_exit events by return value.
    pub return_value: Option<ReturnFilter>,
    /// By thread name.
    pub thread_name: Option<ThreadFilter>,
    /// ns since start, or back from the newest event: "-5s", "-500ms".
    #[schemars(extend("type" = ["integer", "string"]))]
    pub time_from: Option<Value>,
    /// Same forms.
    #[schemars(extend("type" = ["integer", "string"]))]
    pub time_to: Option<Value>,
    /// function_exit lasting at least this.
    pub min_duration_ns: Option<i64>,
    /// Only this process.
    #[schemars(description = "")]
    pub pid: Option<i64>,
    /// Output/logpoint text.
    pub text_contains: Option<String>,
    /// Ids from this (last seen + 1: only new).
    pub event_id_from: Option<i64>,
    /// Ids up to this.
    pub event_id_to: Option<i64>,
    /// 1-500 (default 50).
    pub limit: Option<i64>,
    /// For paging.
    pub offset: Option<i64>,
    /// All fields: thread, pid, raw bytes, typed values, watchValues.
    #[serde(default)]
    pub verbose: bool,
    /// Exact totalCount (else estimated past 6 ms, with bounds).
    #[serde(default)]
    pub exact_count: bool,
    /// ≤60000: when nothing matches yet, wait for a match, the exit or the time (wait says which).
    pub wait_ms: Option<u64>,
    /// Rows per traced function (calls, total/mean/max duration, returns of 0 and -1), slowest
    /// first.
    #[schemars(extend("enum" = ["function"]))]
    pub aggregate: Option<String>,
}

/// The `eventType` names, as `strobe_core::event::EventKind` spells them
/// (a unit test checks they agree).
pub const EVENT_TYPES: [&str; 17] = [
    "stdout",
    "stderr",
    "function_enter",
    "function_exit",
    "crash",
    "variable_snapshot",
    "process_exit",
    "logpoint",
    "exception",
    "ui_snapshot",
    "ui_action",
    "stdin",
    "file",
    "net",
    "midi",
    "audio",
    "scenario_step",
];
