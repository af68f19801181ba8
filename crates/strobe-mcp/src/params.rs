//! Tool arguments as they arrive on the wire (camelCase), with the JSON
//! schemas agents see. Field doc comments become the schema's descriptions,
//! so they are terse and do not repeat the tool's description; `schema.rs`
//! compacts the rest and `tool_budget.rs` holds the list to its size budget.
//! The README keeps the long form. Unknown fields are rejected so a typo
//! (`sesionId`) is an error, not a silently ignored argument.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// `debug_launch` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LaunchParams {
    /// Executable: absolute, relative to cwd, or on PATH. Build C/C++ with -g.
    #[serde(default)]
    pub command: Option<String>,
    /// Attach to this running process instead; output not captured; stop detaches, hooks removed.
    pub attach_pid: Option<i64>,
    /// Trace forks/execs (default true; a Frida injection each); their events carry their pid.
    pub follow_children: Option<bool>,
    /// Program arguments.
    #[schemars(description = "")]
    #[serde(default)]
    pub args: Vec<String>,
    /// Absolute (default projectRoot).
    pub cwd: Option<String>,
    /// Absolute; defines @usercode; may hold .strobe/settings.json.
    pub project_root: String,
    /// Extra environment variables.
    #[schemars(description = "")]
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Pause in main before it runs.
    pub stop_on_entry: Option<bool>,
    /// virtual: private Xvfb for debug_ui (default inherit; virtual for a GUI program if no DISPLAY).
    #[schemars(description = "")]
    pub display: Option<DisplayParam>,
    /// pipe: for debug_channel (default EOF).
    #[schemars(description = "")]
    pub stdin: Option<StdinParam>,
    /// net:8080, file:*.ini…
    #[serde(default)]
    pub channels: Vec<String>,
    /// auto: a private JACK server (dummy driver) for midi/audio.
    #[schemars(description = "")]
    pub jack: Option<JackParam>,
    /// Stop the session when this MCP connection closes, however its
    /// client ended (`strobe dap` sends it, so nothing an editor launched
    /// outlives the adapter). Left out of the schema agents read: it is
    /// for clients that hold one connection per program.
    #[schemars(skip)]
    #[serde(default)]
    pub end_with_connection: bool,
}

/// auto: a private JACK server (dummy driver) for midi/audio.
#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum JackParam {
    #[allow(missing_docs)]
    Auto,
}

/// pipe: for debug_channel (default EOF).
#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StdinParam {
    #[allow(missing_docs)]
    Null,
    #[allow(missing_docs)]
    Pipe,
}

/// `debug_channel` action.
#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ChannelActionParam {
    #[allow(missing_docs)]
    List,
    #[allow(missing_docs)]
    Add,
    #[allow(missing_docs)]
    Send,
    #[allow(missing_docs)]
    Query,
    #[allow(missing_docs)]
    Remove,
}

/// `debug_test_scenario` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScenarioParams {
    /// The session.
    pub session_id: String,
    /// {channels?, steps: [{do}|{wait}|{assert}]}.
    pub scenario: Option<serde_json::Value>,
    /// Or a file: a name in .strobe/scenarios/, or a path.
    pub scenario_file: Option<String>,
}

/// `debug_channel` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChannelParams {
    /// The session.
    pub session_id: String,
    /// list: open channels and kinds.
    pub action: ChannelActionParam,
    /// add/send/query/remove: e.g. "stdio", "net:8080", "file:conf/*.ini".
    pub channel: Option<String>,
    /// send: the stimulus (list shows each kind's fields).
    pub data: Option<serde_json::Value>,
    /// query: events (default 20, max 500).
    pub limit: Option<i64>,
    /// add: reach files outside projectRoot.
    pub allow_outside_project: Option<bool>,
}

/// virtual: private Xvfb for debug_ui (default inherit; virtual for a GUI program if no DISPLAY).
#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DisplayParam {
    #[allow(missing_docs)]
    Inherit,
    #[allow(missing_docs)]
    Virtual,
}

/// `debug_ui` mode.
#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum UiModeParam {
    /// The accessibility tree.
    Tree,
    /// A PNG of the window.
    Screenshot,
    /// Both.
    Both,
}

/// `debug_ui` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiParams {
    /// The session.
    pub session_id: String,
    /// Default tree.
    pub mode: Option<UiModeParam>,
    /// Only this node's subtree.
    pub id: Option<String>,
    /// Default 200; cuts are named.
    pub max_nodes: Option<i64>,
    /// Include hidden nodes.
    #[serde(default)]
    pub all: bool,
    /// OCR + shape detection merged into the tree.
    pub vision: Option<bool>,
}

/// `debug_ui_action`'s action type.
#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum UiActionType {
    /// Click.
    Click,
    /// Set a value.
    SetValue,
    /// Type text.
    Type,
    /// Select an item.
    Select,
    /// Scroll.
    Scroll,
    /// Drag.
    Drag,
    /// Press a key.
    Key,
    /// Focus.
    Focus,
}

/// `debug_ui_action`'s action: `type` and the fields it takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiActionSpec {
    #[schemars(description = "")]
    #[serde(rename = "type")]
    pub kind: UiActionType,
    #[schemars(description = "")]
    pub id: Option<String>,
    /// left|right|middle
    pub button: Option<String>,
    #[schemars(description = "")]
    pub count: Option<i64>,
    /// number|bool|item
    pub value: Option<serde_json::Value>,
    #[schemars(description = "")]
    pub text: Option<String>,
    #[schemars(description = "")]
    pub replace: Option<bool>,
    #[schemars(description = "")]
    pub item: Option<String>,
    /// up|down|left|right
    pub direction: Option<String>,
    #[schemars(description = "")]
    pub amount: Option<i64>,
    #[schemars(description = "")]
    pub from: Option<String>,
    /// id or {x,y}
    pub to: Option<serde_json::Value>,
    #[schemars(description = "")]
    pub key: Option<String>,
    /// ctrl shift alt super
    pub modifiers: Option<Vec<String>>,
}

/// `debug_ui_action`'s program-side check.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiVerifySpec {
    #[schemars(description = "")]
    pub function: Option<String>,
    #[schemars(description = "")]
    pub watch: Option<String>,
}

/// `debug_ui_action` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UiActionParams {
    #[schemars(description = "")]
    pub session_id: String,
    /// by type: click id button count; set_value id value; type id text replace; select id item; scroll id direction amount; drag from to; key key modifiers id; focus id
    pub action: UiActionSpec,
    /// also via the program: function (a traced call) or watch (a variable changes)
    pub verify: Option<UiVerifySpec>,
    /// default 1000
    pub timeout_ms: Option<i64>,
}

/// `debug_session` action.
#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SessionAction {
    /// State, pid, exit code or signal, event counts (needs sessionId).
    Status,
    /// Stop the session: kill the program Strobe launched, delete its data unless `retain`.
    Stop,
    /// List live and retained sessions.
    List,
    /// Delete a retained (stopped) session and its data.
    Delete,
}

/// `debug_session` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionParams {
    /// What to do (the tool description says).
    #[schemars(description = "")]
    pub action: SessionAction,
    /// Needed except for list.
    pub session_id: Option<String>,
    /// stop: keep the data.
    #[serde(default)]
    pub retain: bool,
    /// status: first wait for this.
    #[schemars(extend("enum" = ["exit", "paused"]))]
    pub wait_for: Option<String>,
    /// ≤60000 (default 10000).
    pub wait_ms: Option<u64>,
}

// debug_diff's arguments belong to the query service too.
pub use strobe_query::diff::DiffParams;

// debug_query's arguments belong to the query service the web API shares.
pub use strobe_query::params::{
    EVENT_TYPES, FileFilter, NameFilter, QueryParams, ReturnFilter, ThreadFilter,
};

/// `debug_trace` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TraceParams {
    /// Running session; omit to stage for the next debug_launch.
    pub session_id: Option<String>,
    /// "ns::f" exact, "ns::*" one level, "ns::**" any depth, "@usercode", "@file:parser.c".
    #[serde(default)]
    pub add: Vec<String>,
    /// Active patterns.
    #[serde(default)]
    pub remove: Vec<String>,
    /// Absolute; its settings apply when staging.
    pub project_root: Option<String>,
    /// Default true: over trace.hotCallsPerSecond, record 1 call in N (marked sampled).
    pub sampling: Option<bool>,
    /// Depth of typed values (structs, pointers), 1-10 (default 3).
    pub serialization_depth: Option<u32>,
    /// Read at enter/exit of traced functions into watchValues (verbose queries); ≤32.
    pub watches: Option<WatchChanges>,
}

/// Watches to add and remove.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WatchChanges {
    /// Watches to add.
    #[schemars(description = "")]
    #[serde(default)]
    pub add: Vec<WatchTargetParam>,
    /// Labels.
    #[serde(default)]
    pub remove: Vec<String>,
}

/// One watch: a global/static `variable` (with `.field` / `->field` steps, ≤4 `->`),
/// or a raw `address` with a `type`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WatchTargetParam {
    /// Global/static, with .field/->field steps (≤4 ->): "gConfig->level", "main::calls".
    pub variable: Option<String>,
    /// Hex, with type.
    pub address: Option<String>,
    /// i8…u64, f32, f64, pointer (default u64).
    #[serde(rename = "type")]
    pub type_hint: Option<String>,
    /// Name (default: variable or address).
    pub label: Option<String>,
    /// JavaScript (≤256 chars) run at enter/exit with args (integer argument registers as
    /// NativePointers), retval and Frida's API: "args[1].readCString()". Scope it with on. Python
    /// programs: Python, with the arguments (exit: locals, retval).
    pub expr: Option<String>,
    /// Function patterns to read it in (traced too; default all).
    #[serde(default)]
    pub on: Vec<String>,
}

/// `debug_memory`: read, write or poll a running program's memory.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryParams {
    /// The session.
    #[schemars(description = "")]
    pub session_id: String,
    /// Default read; write returns previous and new values.
    #[schemars(extend("enum" = ["read", "write"]))]
    pub action: Option<String>,
    /// 1-16; each has its own error.
    pub targets: Vec<MemoryTargetParam>,
    /// Struct/array expansion, 1-5 (default 1); pointers inside show as addresses.
    pub depth: Option<u32>,
    /// Sample globals into variable_snapshot events; returns at once.
    pub poll: Option<PollParam>,
    /// Paused thread whose locals to use (default: the last paused).
    pub thread_id: Option<u32>,
    /// Permit writes into executable code (refused by default).
    pub allow_code_write: Option<bool>,
}

/// One memory target.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryTargetParam {
    /// Global/static; steps .field, ->field (≤4), [i], last [a:b]: "g->items[2].x", "main::calls"; or a
    /// paused thread's local (Python, JS: "module.NAME" too).
    pub variable: Option<String>,
    /// Hex, with type.
    pub address: Option<String>,
    /// i8…u64, f32, f64, pointer (default u64), or bytes (with size: saved to a file; path and hex
    /// preview returned).
    #[serde(rename = "type")]
    pub type_hint: Option<String>,
    /// Bytes for type bytes (≤64 MiB).
    pub size: Option<u64>,
    /// write: a scalar that fits: number, bool, enum name, hex for pointers.
    pub value: Option<Value>,
}

/// Poll timing.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PollParam {
    /// Ms between samples, 50-5000.
    pub interval_ms: u64,
    /// Ms in all, 100-30000.
    pub duration_ms: u64,
}

/// `debug_breakpoint`: add and remove breakpoints and logpoints.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BreakpointParams {
    /// Omit to stage for every later launch, set before main (ids staged-N).
    pub session_id: Option<String>,
    /// Breakpoints, or logpoints (with message).
    #[serde(default)]
    pub add: Vec<BreakpointParam>,
    /// Ids ("bp-1", "lp-2").
    #[serde(default)]
    pub remove: Vec<String>,
}

/// One breakpoint or logpoint.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BreakpointParam {
    /// Pattern as in debug_trace; stops after the prologue of each match (≤32).
    pub function: Option<String>,
    /// Path or its tail ("src/main.c"), with line.
    pub file: Option<String>,
    /// A line without code moves to the next one with code.
    pub line: Option<u32>,
    /// JavaScript (Python in Python programs); the hit counts if truthy. Names: parameters, locals, globals (char * as strings,
    /// structs as objects: "cfg.rate > 44100"), args.
    pub condition: Option<String>,
    /// Pause from the Nth counted hit on.
    pub hit_count: Option<u32>,
    /// Makes a logpoint: never pauses, stores a logpoint event per hit, {expr} parts as in
    /// condition: "n={args[0]}".
    pub message: Option<String>,
}

/// `debug_continue`: resume or step paused threads.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContinueParams {
    /// The session.
    #[schemars(description = "")]
    pub session_id: String,
    /// Default continue.
    #[schemars(description = "")]
    #[schemars(extend("enum" = ["continue", "step-over", "step-into", "step-out", "pause"]))]
    pub action: Option<String>,
    /// Default: continue resumes all; a step needs exactly one paused.
    pub thread_id: Option<u32>,
    /// 1-120000 (default 10000); then says running and the program goes on.
    pub timeout_ms: Option<u64>,
}

/// `debug_test`: run a project's tests and read the results.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestParams {
    /// run returns testRunId at once; status waits up to 15 s.
    #[schemars(extend("enum" = ["run", "status"]))]
    pub action: String,
    /// run: absolute; the framework is detected from it.
    pub project_root: Option<String>,
    /// run: overrides detection.
    #[schemars(extend("enum" = strobe_testing::framework_names()))]
    pub framework: Option<String>,
    /// run (cargo: e2e = integration = tests/).
    #[schemars(extend("enum" = ["unit", "integration", "e2e"]))]
    pub level: Option<String>,
    /// run: one test, as the framework names it.
    pub test: Option<String>,
    /// run: catch2/gtest binary (absolute or under projectRoot); generic: the command line.
    pub command: Option<String>,
    /// run: extra environment variables.
    #[schemars(description = "")]
    pub env: Option<std::collections::BTreeMap<String, String>>,
    /// run: with these or watches the test program (not cargo) runs under Frida; status gives its
    /// sessionId. Cargo: name a test if there are several binaries.
    pub trace_patterns: Option<Vec<String>>,
    /// run: as debug_trace watches.add.
    #[schemars(with = "Option<Vec<serde_json::Map<String, Value>>>")]
    pub watches: Option<Vec<WatchTargetParam>>,
    /// run: traced, diffed with its last passing traced run.
    #[schemars(extend("enum" = ["compare"]))]
    pub rerun: Option<String>,
    /// status: the run.
    pub test_run_id: Option<String>,
}
