//! The rmcp server: one per client connection, all sharing one SessionManager.

use crate::args::Args;
use crate::malformed::{argument_error_as_tool_error, custom_request_error};
use crate::params::{
    BreakpointParams, ChannelParams, ContinueParams, DiffParams, DisplayParam, LaunchParams,
    MemoryParams, QueryParams, ScenarioParams, SessionAction, SessionParams, TestParams,
    TraceParams, UiActionParams, UiParams,
};
use crate::render;
use crate::reply::{blocking, fail, ok, watch_request, with_warnings};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData as McpError, ServerHandler, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use strobe_core::{Settings, StrobeHome, ToolError};
use strobe_session::{LaunchRequest, SessionManager};
use strobe_testrun::TestRunner;

pub use crate::instructions::INSTRUCTIONS;

/// One client connection's MCP server.
#[derive(Clone)]
pub struct StrobeServer {
    mgr: Arc<SessionManager>,
    /// The daemon's test runs (debug_test), shared by every connection.
    tests: Arc<TestRunner>,
    home: StrobeHome,
    tool_router: ToolRouter<Self>,
    /// This connection's record of what the agent did.
    audit: Arc<crate::audit::Audit>,
    /// Sessions launched with `endWithConnection`: stopped when the
    /// connection closes.
    tied: Arc<crate::connection::TiedSessions>,
}

impl StrobeServer {
    /// A server for one connection.
    pub fn new(mgr: Arc<SessionManager>, tests: Arc<TestRunner>, home: StrobeHome) -> Self {
        Self {
            tests,
            home,
            tool_router: Self::tool_router(),
            audit: Arc::default(),
            tied: Arc::new(crate::connection::TiedSessions::new(mgr.clone())),
            mgr,
        }
    }

    /// The tools as `tools/list` lists them (no session manager needed).
    #[cfg(test)]
    pub(crate) fn tool_list() -> Vec<rmcp::model::Tool> {
        Self::tool_router().list_all()
    }

    /// Settings for a call, re-read from disk every time, with warnings.
    fn settings(&self, project_root: Option<&Path>) -> (Settings, Vec<String>) {
        let (s, w) = Settings::load(&self.home.settings_file(), project_root);
        (s, w.into_iter().map(|w| w.to_string()).collect())
    }

    /// Settings for an existing session (its project's file applies).
    fn settings_for_session(&self, id: &str) -> (Settings, Vec<String>) {
        self.mgr.session_settings(id)
    }
}

#[tool_router]
impl StrobeServer {
    #[tool(
        description = "Run a program under Frida (or attach: attachPid); returns sessionId. stdout/stderr are always \
        recorded, nothing is traced. Best: launch clean, read stderr/stdout (debug_query), then trace only if needed.",
        input_schema = crate::schema::input::<LaunchParams>()
    )]
    async fn debug_launch(&self, Args(p): Args<LaunchParams>) -> Result<CallToolResult, McpError> {
        let (settings, warnings) =
            self.settings(Some(Path::new(&p.project_root)).filter(|r| r.is_absolute()));
        let mgr = self.mgr.clone();
        let attach_pid = match p.attach_pid {
            None => None,
            Some(pid) if pid > 0 && pid <= i64::from(i32::MAX) => Some(pid as u32),
            Some(pid) => {
                return Ok(fail(ToolError::validation(format!(
                    "'attachPid' must be a process id (a positive integer), got {pid}"
                ))));
            }
        };
        let req = LaunchRequest {
            command: p.command.unwrap_or_default(),
            args: p.args,
            cwd: p.cwd,
            project_root: p.project_root,
            env: p.env,
            follow_children: p.follow_children.unwrap_or(true),
            attach_pid,
            staged_breakpoints: true,
            stop_on_entry: p.stop_on_entry.unwrap_or(false),
            display: p.display.map(|d| match d {
                DisplayParam::Inherit => strobe_session::DisplayChoice::Inherit,
                DisplayParam::Virtual => strobe_session::DisplayChoice::Virtual,
            }),
            stdin_pipe: p.stdin == Some(crate::params::StdinParam::Pipe),
            channels: p.channels,
            jack_auto: p.jack == Some(crate::params::JackParam::Auto),
            ..Default::default()
        };
        // Tied inside the blocking task, which runs to its end even if this
        // call is dropped with its connection: the session is then still
        // stopped when the connection's last holder goes.
        let tied = p.end_with_connection.then(|| self.tied.clone());
        let r = blocking(move || {
            let resp = mgr.launch(req, &settings)?;
            if let Some(t) = tied {
                t.tie(resp.session_id.clone());
            }
            Ok::<_, strobe_session::SessionError>(resp)
        })
        .await;
        Ok(match r {
            Ok(resp) => {
                let staged = resp
                    .pending_breakpoints_applied
                    .map(|n| format!(" {n} staged breakpoint(s) set."))
                    .unwrap_or_default();
                let text = format!(
                    "Launched {} (pid {}).{staged} {}",
                    resp.session_id, resp.pid, resp.next_steps
                );
                ok(
                    with_warnings(
                        serde_json::to_value(&resp).expect("serializable"),
                        &warnings,
                    ),
                    text,
                )
            }
            Err(e) => fail(e),
        })
    }

    #[tool(
        description = "status: state (running/exited/crashed/stopped/failed), pid, exit code or signal, reason, \
        event counts, paused threads. stop: end (kills only what Strobe launched; attached: detaches) and delete the data \
        unless retain. list. delete: a retained session.",
        input_schema = crate::schema::input::<SessionParams>()
    )]
    async fn debug_session(
        &self,
        Args(p): Args<SessionParams>,
    ) -> Result<CallToolResult, McpError> {
        let need_id = |p: &SessionParams| -> Result<String, ToolError> {
            p.session_id.clone().filter(|s| !s.is_empty()).ok_or_else(|| {
                ToolError::validation(
                    "'sessionId' is required for this action; call debug_session {action: \"list\"} to see session ids",
                )
            })
        };
        let mgr = self.mgr.clone();
        let r: Result<(Value, String), ToolError> = match p.action {
            SessionAction::List => blocking(move || mgr.list()).await.map(|list| {
                let text = if list.is_empty() {
                    "No sessions.".to_string()
                } else {
                    list.iter()
                        .map(|s| {
                            format!(
                                "{} [{}{}] {} events",
                                s.session_id,
                                serde_json::to_value(s.state)
                                    .unwrap()
                                    .as_str()
                                    .unwrap_or("?"),
                                if s.retained { ", retained" } else { "" },
                                s.events.stored
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                (json!({ "sessions": list }), text)
            }),
            SessionAction::Status => match need_id(&p).and_then(|id| {
                crate::waits::state_wait(p.wait_for.as_deref(), p.wait_ms).map(|w| (id, w))
            }) {
                Ok((id, wait)) => {
                    let (_, warnings) = self.settings_for_session(&id);
                    blocking(move || {
                        let started = std::time::Instant::now();
                        let waited = match wait {
                            Some((what, timeout)) => {
                                Some((what, mgr.wait_for_state(&id, what, timeout)?))
                            }
                            None => None,
                        };
                        Ok::<_, ToolError>((
                            mgr.status_with_threads(&id)?,
                            waited,
                            started.elapsed(),
                        ))
                    })
                    .await
                    .map(|(s, waited, took)| {
                        let mut text = render::status_text(&s);
                        let mut v = serde_json::to_value(&s).expect("serializable");
                        if let Some((what, outcome)) = waited {
                            let (w, line) = crate::waits::state_wait_report(what, outcome, took);
                            v["wait"] = w;
                            text = format!("{line}\n{text}");
                        }
                        (with_warnings(v, &warnings), text)
                    })
                }
                Err(e) => Err(e),
            },
            SessionAction::Stop => match need_id(&p) {
                Ok(id) => {
                    let retain = p.retain;
                    blocking(move || mgr.stop(&id, retain)).await.map(|r| {
                        let text = format!(
                            "Stopped ({} events collected); data {}.",
                            r.events_collected,
                            if r.retained { "retained" } else { "deleted" }
                        );
                        (serde_json::to_value(&r).expect("serializable"), text)
                    })
                }
                Err(e) => Err(e),
            },
            SessionAction::Delete => match need_id(&p) {
                Ok(id) => blocking(move || mgr.delete(&id))
                    .await
                    .map(|()| (json!({ "success": true }), "Deleted.".to_string())),
                Err(e) => Err(e),
            },
        };
        if p.retain && p.action != SessionAction::Stop {
            // Harmless, but say so: an agent may believe it kept data.
            return Ok(match r {
                Ok((v, t)) => ok(
                    with_warnings(
                        v,
                        &["'retain' only applies to action \"stop\"; ignored".into()],
                    ),
                    t,
                ),
                Err(e) => fail(e),
            });
        }
        Ok(match r {
            Ok((v, t)) => ok(v, t),
            Err(e) => fail(e),
        })
    }

    #[tool(
        description = "Add/remove function trace patterns, live (sessionId) or staged for the next debug_launch (hooked \
        before main). Hooked calls (libraries, dlopen too) become function_enter/function_exit events with thread, parent, \
        duration, typed arguments and return value.",
        input_schema = crate::schema::input::<TraceParams>()
    )]
    async fn debug_trace(&self, Args(p): Args<TraceParams>) -> Result<CallToolResult, McpError> {
        if let Some(root) = &p.project_root
            && !Path::new(root).is_absolute()
        {
            return Ok(fail(ToolError::validation(format!(
                "'projectRoot' must be an absolute path, got {root:?}"
            ))));
        }
        let (settings, warnings) = match &p.session_id {
            Some(id) => self.settings_for_session(id),
            None => self.settings(p.project_root.as_deref().map(Path::new)),
        };
        let mgr = self.mgr.clone();
        let watches = p.watches.unwrap_or(crate::params::WatchChanges {
            add: Vec::new(),
            remove: Vec::new(),
        });
        let opts = strobe_session::trace::TraceOptions {
            sampling: p.sampling,
            serialization_depth: p.serialization_depth,
            watch_add: watches.add.into_iter().map(watch_request).collect(),
            watch_remove: watches.remove,
            lenient_watches: false,
        };
        let r = blocking(move || {
            mgr.trace(p.session_id.as_deref(), &p.add, &p.remove, &opts, &settings)
        })
        .await;
        Ok(match r {
            Ok(mut resp) => {
                resp.warnings.extend(warnings);
                let text = format!(
                    "{} mode: {} pattern(s) active, {} function(s) hooked. {}{}",
                    resp.mode,
                    resp.active_patterns.len(),
                    resp.hooked_functions,
                    resp.status,
                    if resp.warnings.is_empty() {
                        String::new()
                    } else {
                        format!(" Warnings: {}", resp.warnings.join(" | "))
                    }
                );
                ok(serde_json::to_value(&resp).expect("serializable"), text)
            }
            Err(e) => fail(e),
        })
    }

    #[tool(
        description = "See a GUI program as its user does: the accessibility tree (one node a line: id [name] \
        (WxH+X+Y) actions val= states; ids stay stable), a screenshot, or both. Each call is a ui_snapshot event.",
        input_schema = crate::schema::input::<UiParams>()
    )]
    async fn debug_ui(&self, Args(p): Args<UiParams>) -> Result<CallToolResult, McpError> {
        let (settings, warnings) = self.settings_for_session(&p.session_id);
        Ok(crate::ui::debug_ui(self.mgr.clone(), p, settings, warnings).await)
    }

    #[tool(
        description = "Act on a GUI node (a debug_ui id) by intent. Native accessibility first, else input; each \
        action verified. A custom widget's set_value learns a cached plan. Input only on virtual displays \
        unless ui.allowInputOnUserDisplay.",
        input_schema = crate::schema::input::<UiActionParams>()
    )]
    async fn debug_ui_action(
        &self,
        Args(p): Args<UiActionParams>,
    ) -> Result<CallToolResult, McpError> {
        let (settings, warnings) = self.settings_for_session(&p.session_id);
        Ok(crate::ui_action::debug_ui_action(self.mgr.clone(), p, settings, warnings).await)
    }

    #[tool(
        description = "A session's I/O channels: list, add \"net:8080\" / \"file:*.ini\", \
        send data (stdio: {line} or {eof: true}; net: {path} or {data}; file: {op, text}), query, remove. \
        Stimuli and observations are timeline events; a net channel (bare \"net\": only this) also records the \
        program's socket I/O.",
        input_schema = crate::schema::input::<ChannelParams>()
    )]
    async fn debug_channel(
        &self,
        Args(p): Args<ChannelParams>,
    ) -> Result<CallToolResult, McpError> {
        Ok(crate::channel::debug_channel(self.mgr.clone(), p).await)
    }

    #[tool(
        description = "Run a scenario in a session: steps {do: \"stdio.send\", line} | {wait: ms | {until: check, \
        timeoutMs}} | {assert: trace|stdout|stderr|net|file, …}, checked server-side; stops at the first failure \
        with expected/actual and event ids, program left running. Format: README \"Scenarios\".",
        input_schema = crate::schema::input::<ScenarioParams>()
    )]
    async fn debug_test_scenario(
        &self,
        Args(p): Args<ScenarioParams>,
    ) -> Result<CallToolResult, McpError> {
        let (settings, _) = self.settings_for_session(&p.session_id);
        Ok(crate::scenario::debug_test_scenario(self.mgr.clone(), p, settings).await)
    }

    #[tool(
        description = "Read, write or poll a running program's memory without pausing it: globals, statics, addresses, \
        a paused thread's locals (read-only in registers).",
        input_schema = crate::schema::input::<MemoryParams>()
    )]
    async fn debug_memory(&self, Args(p): Args<MemoryParams>) -> Result<CallToolResult, McpError> {
        let mgr = self.mgr.clone();
        let targets: Vec<strobe_session::MemoryTarget> = p
            .targets
            .into_iter()
            .map(|t| strobe_session::MemoryTarget {
                variable: t.variable,
                address: t.address,
                type_hint: t.type_hint,
                size: t.size,
                value: t.value,
            })
            .collect();
        let depth = p.depth.unwrap_or(1);
        let thread = p.thread_id;
        let allow_code = p.allow_code_write.unwrap_or(false);
        let id = p.session_id.clone();
        let action = p.action.unwrap_or_else(|| "read".into());
        let poll = p.poll.map(|q| strobe_session::Poll {
            interval_ms: q.interval_ms,
            duration_ms: q.duration_ms,
        });
        let r = blocking(move || match (action.as_str(), poll) {
            ("read", None) => Ok(mgr
                .memory_read(&id, &targets, depth, thread)
                .map(|results| json!({ "results": results }))?),
            ("read", Some(poll)) => Ok(mgr.memory_poll(&id, &targets, depth, poll)?),
            ("write", None) => Ok(mgr
                .memory_write(&id, &targets, thread, allow_code)
                .map(|results| json!({ "results": results }))?),
            ("write", Some(_)) => Err(ToolError::validation("'poll' is for reads, not writes")),
            (other, _) => Err(ToolError::validation(format!(
                "'action' {other:?} is not \"read\" or \"write\""
            ))),
        })
        .await;
        Ok(match r {
            Ok(v) => {
                let text = match v.get("results").and_then(Value::as_array) {
                    Some(rs) => rs
                        .iter()
                        .map(render::memory_line)
                        .collect::<Vec<_>>()
                        .join("\n"),
                    None => v["hint"].as_str().unwrap_or_default().to_string(),
                };
                ok(v, text)
            }
            Err(e) => fail(e),
        })
    }

    #[tool(
        description = "Add/remove breakpoints (≤50) and logpoints (≤100) in a running session. A hit pauses only its \
        thread: debug_session status lists it (function, file:line, arguments, backtrace), debug_memory reads/writes its \
        locals, debug_continue resumes or steps.",
        input_schema = crate::schema::input::<BreakpointParams>()
    )]
    async fn debug_breakpoint(
        &self,
        Args(p): Args<BreakpointParams>,
    ) -> Result<CallToolResult, McpError> {
        let mgr = self.mgr.clone();
        let add: Vec<strobe_session::BreakpointRequest> = p
            .add
            .into_iter()
            .map(|a| strobe_session::BreakpointRequest {
                function: a.function,
                file: a.file,
                line: a.line,
                condition: a.condition,
                hit_count: a.hit_count,
                message: a.message,
            })
            .collect();
        let remove = p.remove;
        let Some(id) = p.session_id else {
            let r = blocking(move || mgr.stage_breakpoints(&add, &remove)).await;
            return Ok(match r {
                Ok(list) => {
                    let mut text = format!(
                        "{} staged; each later debug_launch sets them before main runs (remove: [\"staged-N\"] to drop one).",
                        list.len()
                    );
                    for b in &list {
                        text.push_str(&format!("\n{} {} at {}", b.id, b.kind, b.at));
                    }
                    ok(json!({ "mode": "staged", "staged": list }), text)
                }
                Err(e) => fail(e),
            });
        };
        if add.is_empty() && remove.is_empty() {
            return Ok(fail(ToolError::validation(
                "give 'add' (breakpoints or logpoints) and/or 'remove' (their ids)",
            )));
        }
        let r = blocking(move || mgr.breakpoints(&id, &add, &remove)).await;
        Ok(match r {
            Ok(list) => {
                let text = if list.is_empty() {
                    "No breakpoints.".to_string()
                } else {
                    list.iter()
                        .map(|b| {
                            let at = match (&b.file, b.line) {
                                (Some(f), Some(l)) => format!(
                                    " at {}:{l}",
                                    std::path::Path::new(f)
                                        .file_name()
                                        .map_or(f.clone(), |n| n.to_string_lossy().into_owned())
                                ),
                                _ => String::new(),
                            };
                            let note = b
                                .note
                                .as_ref()
                                .map(|n| format!(" ({n})"))
                                .unwrap_or_default();
                            format!(
                                "{} {} in {}{at}, {} hits{note}",
                                b.id, b.kind, b.function, b.hits
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                ok(json!({ "breakpoints": list }), text)
            }
            Err(e) => fail(e),
        })
    }

    #[tool(
        description = "Run a project's tests. status gives the result (counts; failures with file:line, message, \
        suggested trace patterns, rerun command; stuck tests; details file) or progress (phase, counts, running and failed \
        tests, stuck warning, currentTest's elapsed and usual ms; progress notifications given a progress token). A \
        deadlock or infinite loop is reported within seconds with every thread's stack, then stopped.",
        input_schema = crate::schema::input::<TestParams>()
    )]
    async fn debug_test(
        &self,
        Args(p): Args<TestParams>,
        meta: rmcp::model::RequestMetaObject,
        peer: rmcp::Peer<rmcp::RoleServer>,
        ct: tokio_util::sync::CancellationToken,
    ) -> Result<CallToolResult, McpError> {
        let (settings, _) = self.settings(p.project_root.as_deref().map(Path::new));
        let token = meta.get_progress_token();
        Ok(crate::test_tool::debug_test(
            self.mgr.clone(),
            self.tests.clone(),
            settings,
            p,
            token,
            peer,
            ct,
        )
        .await)
    }

    #[tool(
        description = "Resume or step paused threads, wait for the next pause or the end, and say where. step-over: \
        next line here; step-into: into this line's call if it has debug info; step-out: to the caller. Steps stop only \
        in the stepping thread's frame. pause: threadId, where its system call returns into your code.",
        input_schema = crate::schema::input::<ContinueParams>()
    )]
    async fn debug_continue(
        &self,
        Args(p): Args<ContinueParams>,
    ) -> Result<CallToolResult, McpError> {
        let mgr = self.mgr.clone();
        let action = p.action.unwrap_or_else(|| "continue".into());
        let id = p.session_id.clone();
        let thread = p.thread_id;
        let timeout = p.timeout_ms;
        let r = blocking(move || {
            if action == "pause" {
                mgr.pause_thread(&id, thread, timeout)
            } else {
                mgr.continue_execution(&id, &action, thread, timeout)
            }
        })
        .await;
        Ok(match r {
            Ok(resp) => {
                let text = resp.message.clone();
                ok(serde_json::to_value(&resp).expect("serializable"), text)
            }
            Err(e) => fail(e),
        })
    }

    #[tool(
        description = "What differs between two stored runs of one program (baseline works, candidate not): \
        the first divergence of the call sequences (both sides' event ids), functions called in one run only, \
        call counts, argument/return values seen in one run only, first differing output line, exits. Trace both \
        runs alike.",
        input_schema = crate::schema::input::<DiffParams>()
    )]
    async fn debug_diff(&self, Args(p): Args<DiffParams>) -> Result<CallToolResult, McpError> {
        let mgr = self.mgr.clone();
        let r = blocking(move || strobe_query::diff::run_diff(&mgr, p)).await;
        Ok(match r {
            Ok((v, t)) => ok(v, t),
            Err(e) => fail(e),
        })
    }

    #[tool(
        description = "A session's timeline, oldest first: output, crashes, exits; calls and snapshots once traced. \
        Filters combine. truncated says what the answer left out.",
        input_schema = crate::schema::input::<QueryParams>()
    )]
    async fn debug_query(
        &self,
        Args(p): Args<QueryParams>,
        meta: rmcp::model::RequestMetaObject,
        peer: rmcp::Peer<rmcp::RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let (_, warnings) = self.settings_for_session(&p.session_id);
        let r = crate::waits::query(self.mgr.clone(), p, meta.get_progress_token(), peer).await;
        Ok(match r {
            Ok((v, t)) => ok(with_warnings(v, &warnings), t),
            Err(e) => fail(e),
        })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for StrobeServer {
    /// Routes a call; an unknown tool name gets an error listing the real ones.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, McpError> {
        if !self.tool_router.has_route(&request.name) {
            let names: Vec<String> = self
                .tool_router
                .list_all()
                .iter()
                .map(|t| t.name.to_string())
                .collect();
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool '{}'; Strobe's tools are: {}",
                    strobe_core::error::excerpt(&request.name),
                    names.join(", ")
                ),
                None,
            ));
        }
        let tool = request.name.to_string();
        let client = context
            .peer
            .peer_info()
            .map(|i| i.client_info.name.clone())
            .unwrap_or_default();
        let args = crate::audit::CallArgs::of(request.arguments.as_ref(), client);
        let started = std::time::SystemTime::now();
        let clock = std::time::Instant::now();
        let tcc = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        let reply = argument_error_as_tool_error(self.tool_router.call(tcc).await);
        self.audit.record(
            self.mgr.store(),
            &tool,
            args,
            started,
            clock.elapsed(),
            &reply,
        );
        reply
    }

    /// A request rmcp could not read as one of MCP's is handed here as a
    /// custom request. For MCP's own methods that means malformed params
    /// (`tools/call` with `arguments: []`): invalid params, saying what the
    /// params must be, not "method not found".
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        Err(custom_request_error(
            &request.method,
            request.params.as_ref(),
        ))
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("strobe", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}
