//! Tool arguments as they arrive on the wire (camelCase), with the JSON
//! schemas agents see. Doc comments become the schema's field descriptions.
//! Unknown fields are rejected so a typo (`sesionId`) is an error, not a
//! silently ignored argument.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// `debug_launch` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LaunchParams {
    /// Executable to run: an absolute path (recommended), a path relative to `cwd`, or a
    /// program name found on PATH. Build C/C++ with -g (Rust debug builds have symbols).
    /// Leave out when `attachPid` is given.
    #[serde(default)]
    pub command: Option<String>,
    /// Instead of `command`: the pid of a process that is already running, to attach to.
    /// Every tool works on it afterwards; its stdout/stderr are not captured (they stay
    /// wherever they go), and `debug_session stop` detaches, leaving it running with all
    /// hooks and breakpoints removed.
    pub attach_pid: Option<i64>,
    /// Follow forks and execs (default true): each child is suspended until it has the
    /// session's trace patterns and watches, then runs on; its events carry its own pid.
    /// Each followed child costs a Frida injection (tens to hundreds of ms); false
    /// leaves children untraced (they run on with inherited hooks disabled).
    pub follow_children: Option<bool>,
    /// Command-line arguments passed to the program.
    #[serde(default)]
    pub args: Vec<String>,
    /// Absolute working directory for the program (default: projectRoot).
    pub cwd: Option<String>,
    /// Absolute path of the project the program belongs to; used to tell user code from
    /// libraries and to find `<projectRoot>/.strobe/settings.json`.
    pub project_root: String,
    /// Extra environment variables for the program, added to the daemon's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
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
    /// What to do: "status", "stop", "list" or "delete".
    pub action: SessionAction,
    /// The session (required for status, stop and delete).
    pub session_id: Option<String>,
    /// With "stop": keep the session's data for later queries (default false: delete it).
    #[serde(default)]
    pub retain: bool,
}

/// String conditions on function names.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NameFilter {
    /// Exact demangled name, e.g. "audio::Mixer::process".
    pub equals: Option<String>,
    /// Substring of the name.
    pub contains: Option<String>,
    /// Regular expression (Rust regex syntax) matched against the name.
    pub matches: Option<String>,
}

/// String conditions on source files.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileFilter {
    /// Exact source path as recorded from DWARF.
    pub equals: Option<String>,
    /// Substring of the source path, e.g. "parser.c".
    pub contains: Option<String>,
}

/// Conditions on a function's return value.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReturnFilter {
    /// The return value must equal this: an integer (negative ones as two's complement),
    /// a hex string like "0x2a", or a boolean. Compared with the raw return register.
    pub equals: Option<Value>,
    /// true: only 0/NULL returns; false: only non-zero returns.
    pub is_null: Option<bool>,
}

/// Conditions on thread names.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThreadFilter {
    /// Substring of the thread's name.
    pub contains: Option<String>,
}

/// `debug_query` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueryParams {
    /// The session to query (live or retained).
    pub session_id: String,
    /// Only this kind of event: "stdout", "stderr", "function_enter", "function_exit",
    /// "crash", "variable_snapshot", "process_exit" or "logpoint".
    pub event_type: Option<String>,
    /// Only events of functions whose name matches (function events).
    pub function: Option<NameFilter>,
    /// Only events of functions defined in matching source files.
    pub source_file: Option<FileFilter>,
    /// Only function_exit events whose return value matches.
    pub return_value: Option<ReturnFilter>,
    /// Only events of threads whose name matches.
    pub thread_name: Option<ThreadFilter>,
    /// Earliest event time: nanoseconds since session start (number), or relative to the
    /// newest recorded event: "-5s", "-500ms", "-1m".
    pub time_from: Option<Value>,
    /// Latest event time, same forms as timeFrom.
    pub time_to: Option<Value>,
    /// Only events that lasted at least this many nanoseconds (function_exit).
    pub min_duration_ns: Option<i64>,
    /// Only events of this process id (multi-process sessions).
    pub pid: Option<i64>,
    /// Only output/log events whose text contains this substring.
    pub text_contains: Option<String>,
    /// Only events with this id or a later one (e.g. the last id seen plus one, to read only what is new).
    pub event_id_from: Option<i64>,
    /// Only events with this id or an earlier one.
    pub event_id_to: Option<i64>,
    /// Most events to return: 1–500, default 50.
    pub limit: Option<i64>,
    /// Matching events to skip (for paging), default 0.
    pub offset: Option<i64>,
    /// Include every field (thread, pid, raw bytes, flags) instead of the summary form.
    #[serde(default)]
    pub verbose: bool,
    /// Summarize instead of listing events: "function" returns one row per traced function
    /// (calls, returns, total/mean/max duration, returns of 0 and -1), slowest total first;
    /// limit/offset page through the rows and the other filters still apply.
    pub aggregate: Option<String>,
}

/// `debug_trace` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TraceParams {
    /// The running session to change live. Omit to stage patterns for the next debug_launch.
    pub session_id: Option<String>,
    /// Patterns to add: "ns::func" (exact), "ns::*" (one level, * never crosses ::),
    /// "ns::**" (any depth), "@usercode" (functions in projectRoot), "@file:parser.c".
    #[serde(default)]
    pub add: Vec<String>,
    /// Active patterns to remove (as written when added).
    #[serde(default)]
    pub remove: Vec<String>,
    /// Absolute project root, for settings when no session is given.
    pub project_root: Option<String>,
    /// Hot-function sampling (default true): functions called more than
    /// `trace.hotCallsPerSecond` times a second record only 1 call in N, marked
    /// `sampled: true`. false records every call, slowing the program instead.
    pub sampling: Option<bool>,
    /// How deep typed arguments and return values are serialized: struct nesting
    /// and pointer targets (1–10, default 3). Arrays show ≤100 elements, strings ≤1 KB.
    pub serialization_depth: Option<u32>,
    /// Variable watches, read at enter and exit of traced functions and shown as
    /// `watchValues` on their events (verbose queries). At most 32 per session.
    pub watches: Option<WatchChanges>,
}

/// Watches to add and remove.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WatchChanges {
    /// Watches to add.
    #[serde(default)]
    pub add: Vec<WatchTargetParam>,
    /// Labels of watches to remove.
    #[serde(default)]
    pub remove: Vec<String>,
}

/// One watch: a global/static `variable` (with `.field` / `->field` steps, ≤4 `->`),
/// or a raw `address` with a `type`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WatchTargetParam {
    /// Global or static variable, optionally with member steps: "gCounter", "gConfig->level",
    /// "ns::state.count", "main::calls" (a function's static).
    pub variable: Option<String>,
    /// Hex address of raw memory, e.g. "0x7ffd1234" (use with `type`).
    pub address: Option<String>,
    /// Type of `address`: i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 or pointer (default u64).
    #[serde(rename = "type")]
    pub type_hint: Option<String>,
    /// Label the values are stored under (default: the variable or address).
    pub label: Option<String>,
    /// JavaScript expression (≤ 256 chars) evaluated by the agent in the traced thread at each enter
    /// and exit of the watched functions, with `args` (the six integer argument registers as
    /// NativePointers; enter only) and `retval` (rax; exit only) in scope and Frida's API available,
    /// e.g. "args[1].readCString()" or "ptr('0x5678').readU32()". Costs a call into JavaScript per
    /// traced call of those functions: scope it with `on`.
    pub expr: Option<String>,
    /// Function patterns the watch is read in ("audio::*"); those functions are traced too.
    /// Omit to read it in every traced function.
    #[serde(default)]
    pub on: Vec<String>,
}

/// `debug_memory`: read, write or poll a running program's memory.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryParams {
    /// The session whose program to read.
    pub session_id: String,
    /// "read" (default) or "write".
    pub action: Option<String>,
    /// 1–16 targets; each one's error is reported in its own result.
    pub targets: Vec<MemoryTargetParam>,
    /// Struct and array expansion depth for reads, 1–5 (default 1). Pointers inside are shown as
    /// addresses; read them with a `->` chain.
    pub depth: Option<u32>,
    /// Sample the targets repeatedly into `variable_snapshot` events instead of reading once;
    /// returns at once (globals only).
    pub poll: Option<PollParam>,
    /// While threads are paused (debug_breakpoint), variable names are looked up first among
    /// the parameters and locals of a paused frame: this thread's, else the thread that paused
    /// last.
    pub thread_id: Option<u32>,
    /// Permit writes into executable code (refused by default).
    pub allow_code_write: Option<bool>,
}

/// One memory target.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryTargetParam {
    /// Global or static variable with optional member steps (≤ 4 `->`): "gCounter",
    /// "gConfig->level", "gConfig.name", "main::calls"; while a thread is paused, also its
    /// parameters and locals ("count", "node->next").
    pub variable: Option<String>,
    /// Hex address of raw memory, e.g. "0x7ffd1234" (with `type`).
    pub address: Option<String>,
    /// Type of `address`: i8, u8, i16, u16, i32, u32, i64, u64, f32, f64, pointer (default u64),
    /// or bytes (with `size`: written to a file whose path is returned, plus a hex preview).
    #[serde(rename = "type")]
    pub type_hint: Option<String>,
    /// Bytes to read for type "bytes" (≤ 64 MiB).
    pub size: Option<u64>,
    /// For action "write": the new value — a number, true/false, an enum variant's name, or a hex
    /// string for pointers. Only scalars; a value that does not fit the type is refused.
    pub value: Option<Value>,
}

/// Poll timing.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PollParam {
    /// Milliseconds between samples, 50–5000.
    pub interval_ms: u64,
    /// Milliseconds to sample for, 100–30000.
    pub duration_ms: u64,
}

/// `debug_breakpoint`: add and remove breakpoints and logpoints.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BreakpointParams {
    /// The session.
    pub session_id: String,
    /// Breakpoints (or logpoints, with `message`) to add.
    #[serde(default)]
    pub add: Vec<BreakpointParam>,
    /// Ids to remove ("bp-1", "lp-2").
    #[serde(default)]
    pub remove: Vec<String>,
}

/// One breakpoint or logpoint.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BreakpointParam {
    /// Function pattern, as in debug_trace ("parse_header", "audio::*"): stops where the body
    /// starts, after the prologue (every matching function, up to 32).
    pub function: Option<String>,
    /// Source file, a path or its tail ("src/main.c"), with `line`.
    pub file: Option<String>,
    /// Line number; a line without code moves to the next line that has some (the answer says so).
    pub line: Option<u32>,
    /// JavaScript expression evaluated in the target at each hit; the hit counts only when it is
    /// truthy. In scope: the function's parameters and locals and the program's globals by name
    /// (numbers, booleans, enum names, strings for char *, objects for structs and pointers to
    /// structs, so `cfg.rate > 44100` works on `struct config *cfg`), and `args` (the parameters in
    /// order). Example: "n == 1 && gDepth > 3".
    pub condition: Option<String>,
    /// Pause from the Nth hit on (hits whose condition holds); earlier hits only count.
    pub hit_count: Option<u32>,
    /// Makes this a logpoint: never pauses; at each hit the message is rendered with `{expr}`
    /// parts (same JavaScript and names as `condition`, e.g. "tempo={args[0]} name={cfg.name}") and
    /// stored as a `logpoint` event (debug_query eventType "logpoint").
    pub message: Option<String>,
}

/// `debug_continue`: resume or step paused threads.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContinueParams {
    /// The session.
    pub session_id: String,
    /// "continue" (default), "step-over", "step-into" or "step-out".
    pub action: Option<String>,
    /// The paused thread to resume or step. "continue" without it resumes every paused thread;
    /// a step without it needs exactly one paused thread.
    pub thread_id: Option<u32>,
    /// How long to wait for the next pause or the process's end, 1–120000 ms (default 10000).
    /// On timeout the answer says "running" and the program goes on.
    pub timeout_ms: Option<u64>,
}

/// `debug_test`: run a project's tests and read the results.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestParams {
    /// "run" (start a run; returns testRunId at once) or "status" (waits up to 15 s for the
    /// run to finish, then returns the result or the progress so far).
    pub action: String,
    /// run: absolute project root; the test framework is detected from it.
    pub project_root: Option<String>,
    /// run: the framework, overriding detection: cargo, nextest, pytest, unittest, go, gtest, catch2,
    /// jest, vitest, mocha, bun, deno or generic.
    pub framework: Option<String>,
    /// run: only "unit", "integration" or "e2e" tests (cargo: e2e = integration = tests/).
    pub level: Option<String>,
    /// run: only this test, by the name the framework reports (e.g. "tests::parses_header").
    pub test: Option<String>,
    /// run: the compiled test program for Catch2 / Google Test (path, absolute or relative to
    /// projectRoot), or for framework "generic" the command line to run.
    pub command: Option<String>,
    /// run: environment variables added for the test command, e.g. {"RUST_LOG": "debug"}.
    pub env: Option<std::collections::BTreeMap<String, String>>,
    /// run: trace patterns (as debug_trace takes them). Given this or 'watches', the test
    /// program itself (the test binary, not cargo) runs under Frida as a debug session:
    /// status returns its sessionId for debug_query / debug_trace while it runs. Cargo builds
    /// first and traces one test binary: name a 'test' when the project has several.
    pub trace_patterns: Option<Vec<String>>,
    /// run: watches (as debug_trace's watches.add), read at traced functions.
    pub watches: Option<Vec<WatchTargetParam>>,
    /// status: the run.
    pub test_run_id: Option<String>,
}
