//! `debug_breakpoint` and `debug_continue`: breakpoints and logpoints
//! resolved through debug info (function body starts, line tables), paused
//! threads as the agent reports them, and stepping. The agent plants and
//! catches the traps (agent/src/breakpoints.ts); every decision that needs
//! DWARF is made here, off the session's event thread (which must never wait
//! for the tracer).

use super::memory::Mem;
use super::{Live, SessionManager};
use crate::SessionError;
use crate::frames::{self, BreakSite, CodeLocation, FrameLayout, Registers, Resolved};
use crate::trace::Tracer;
use crate::values::{self, WatchType};
use crate::varpath::{self, Step};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strobe_core::clock::monotonic_ns;
use strobe_core::event::EventKind;
use strobe_frida::agent_protocol::wire::Hex;
use strobe_frida::agent_protocol::{
    BreakpointError, BreakpointSpec, BreakpointsRequest, BreakpointsUpdated, Callee, DaemonMessage,
    FrameCheck, Logpoint, Paused, Resume, ResumeOrder, StepCall, StepStop, VarDesc,
};

/// Most breakpoints per session.
pub const MAX_BREAKPOINTS: usize = 50;
/// Most logpoints per session.
pub const MAX_LOGPOINTS: usize = 100;
/// Default and largest wait of `debug_continue`.
pub const CONTINUE_TIMEOUT_MS: (u64, u64) = (10_000, 120_000);
/// Arguments shown per paused thread.
const SHOWN_ARGUMENTS: usize = 8;

/// One `add` entry of `debug_breakpoint`.
#[derive(Debug, Clone, Default)]
pub struct BreakpointRequest {
    /// Function pattern (breaks where its body starts).
    pub function: Option<String>,
    /// Source file (with `line`).
    pub file: Option<String>,
    /// Source line.
    pub line: Option<u32>,
    /// JavaScript condition.
    pub condition: Option<String>,
    /// Pause from the Nth hit on.
    pub hit_count: Option<u32>,
    /// A logpoint's message template (makes this a logpoint).
    pub message: Option<String>,
}

/// A breakpoint or logpoint as reported.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BreakpointInfo {
    /// `bp-N` or `lp-N`.
    pub id: String,
    /// `breakpoint` or `logpoint`.
    pub kind: &'static str,
    /// The function it is in (every function, when a pattern matched several).
    pub function: String,
    /// Source file of the (first) address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Line it stops at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Runtime addresses.
    pub addresses: Vec<String>,
    /// Condition, as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Hit count, as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit_count: Option<u32>,
    /// Logpoint message, as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Hits so far (those whose condition held).
    pub hits: u64,
    /// Something worth knowing (a line moved, a condition that failed to evaluate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A thread stopped at a breakpoint or at the end of a step.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PausedThread {
    /// Thread id.
    pub thread_id: u32,
    /// `breakpoint` or `step`.
    pub reason: String,
    /// The breakpoint hit (for `breakpoint`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakpoint_id: Option<String>,
    /// Function.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// Source file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Source line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Instruction address.
    pub address: String,
    /// The paused frame's parameters (up to 8), typed.
    pub arguments: Vec<Value>,
    /// Frames, innermost first.
    pub backtrace: Value,
    /// Session time of the hit (ns).
    pub paused_at_ns: u64,
    /// From the trap to this pause being visible to the agent (µs).
    pub hit_to_visible_us: f64,
    #[serde(skip)]
    pub(super) seq: u64,
    #[serde(skip)]
    pub(super) regs: Registers,
    #[serde(skip)]
    pub(super) location: Option<CodeLocation>,
    #[serde(skip)]
    pub(super) image_base: u64,
}

/// What `debug_continue` returns.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContinueResponse {
    /// `paused`, `running` or `exited`.
    pub status: &'static str,
    /// Where it stopped (when paused).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub paused: Option<PausedThread>,
    /// Threads resumed by this call.
    pub resumed: Vec<u32>,
    /// Other threads still paused.
    pub other_paused: Vec<u32>,
    /// What happened, in a sentence.
    pub message: String,
}

/// Debugger state of a live session.
#[derive(Debug, Default)]
pub(super) struct DebugState {
    breakpoints: Vec<BreakpointInfo>,
    next_id: u32,
    paused: BTreeMap<u32, PausedThread>,
    /// Bumped at every pause (waiters compare against it).
    pauses: u64,
    /// Threads running a step that ends on a statement start.
    settling: HashSet<u32>,
    /// Image bases by path.
    bases: HashMap<PathBuf, u64>,
}

impl DebugState {
    /// Breakpoints and paused threads, for status.
    pub(super) fn summary(&self) -> (Vec<BreakpointInfo>, Vec<PausedThread>) {
        (
            self.breakpoints.clone(),
            self.paused.values().cloned().collect(),
        )
    }
}

fn hex(a: u64) -> String {
    format!("{a:#x}")
}

fn err(msg: impl Into<String>) -> SessionError {
    SessionError::validation(msg)
}

impl SessionManager {
    fn debug_live(&self, id: &str) -> Result<Arc<Live>, SessionError> {
        self.running_live(id, "its threads and breakpoints are gone", "debug it")
    }

    /// Runtime base of an image (cached per session).
    fn base_of(&self, live: &Live, path: &std::path::Path) -> Option<u64> {
        if let Some(b) = live.debug.lock().expect("debug lock").bases.get(path) {
            return Some(*b);
        }
        let b = self.image_base(live, path, Duration::from_secs(5))?;
        live.debug
            .lock()
            .expect("debug lock")
            .bases
            .insert(path.to_path_buf(), b);
        Some(b)
    }

    /// Adds and removes breakpoints and logpoints; lists them all.
    pub fn breakpoints(
        &self,
        id: &str,
        add: &[BreakpointRequest],
        remove: &[String],
    ) -> Result<Vec<BreakpointInfo>, SessionError> {
        let live = self.debug_live(id)?;
        {
            let st = live.debug.lock().expect("debug lock");
            for r in remove {
                if !st.breakpoints.iter().any(|b| &b.id == r) {
                    let ids: Vec<&str> = st.breakpoints.iter().map(|b| b.id.as_str()).collect();
                    return Err(err(format!(
                        "no breakpoint or logpoint {r:?} in session '{id}' (it has: {})",
                        if ids.is_empty() {
                            "none".to_string()
                        } else {
                            ids.join(", ")
                        }
                    )));
                }
            }
            let count = |log: bool| {
                st.breakpoints
                    .iter()
                    .filter(|b| (b.kind == "logpoint") == log && !remove.contains(&b.id))
                    .count()
                    + add.iter().filter(|a| a.message.is_some() == log).count()
            };
            if count(false) > MAX_BREAKPOINTS {
                return Err(err(format!(
                    "a session takes at most {MAX_BREAKPOINTS} breakpoints; remove some first"
                )));
            }
            if count(true) > MAX_LOGPOINTS {
                return Err(err(format!(
                    "a session takes at most {MAX_LOGPOINTS} logpoints; remove some first"
                )));
            }
        }
        for a in add {
            validate_request(a)?;
        }
        let mut specs = Vec::new();
        let mut created = Vec::new();
        if !add.is_empty() {
            let mut guard = live.tracer.lock().expect("tracer lock");
            if guard.is_none() {
                *guard = Some(self.new_tracer(&live)?);
            }
            let tracer = guard.as_mut().expect("created above");
            for a in add {
                let (sites, note) = resolve_sites(tracer, a)?;
                let kind = if a.message.is_some() {
                    "logpoint"
                } else {
                    "breakpoint"
                };
                let n = {
                    let mut st = live.debug.lock().expect("debug lock");
                    st.next_id += 1;
                    st.next_id
                };
                let bp_id = format!("{}-{n}", if a.message.is_some() { "lp" } else { "bp" });
                let mut addresses = Vec::new();
                for (i, site) in sites.iter().enumerate() {
                    let path = tracer.modules[site.module].path().to_path_buf();
                    let base = self.base_of(&live, &path).ok_or_else(|| {
                        SessionError::internal(format!(
                            "cannot find where {} is loaded",
                            path.display()
                        ))
                    })?;
                    let address = base + site.offset;
                    addresses.push(hex(address));
                    let bases = |p: &std::path::Path| self.base_of(&live, p);
                    specs.push(agent_spec(
                        tracer,
                        a,
                        &format!("{bp_id}@{i}"),
                        site,
                        address,
                        base,
                        &bases,
                    ));
                }
                let mut functions: Vec<&str> = sites.iter().map(|s| s.function.as_str()).collect();
                functions.dedup();
                created.push(BreakpointInfo {
                    id: bp_id,
                    kind,
                    function: functions.join(", "),
                    file: sites[0].file.clone(),
                    line: sites[0].line,
                    addresses,
                    condition: a.condition.clone(),
                    hit_count: a.hit_count,
                    message: a.message.clone(),
                    hits: 0,
                    note,
                });
            }
        }
        let agent_remove: Vec<String> = {
            let st = live.debug.lock().expect("debug lock");
            st.breakpoints
                .iter()
                .filter(|b| remove.contains(&b.id))
                .flat_map(|b| (0..b.addresses.len()).map(move |i| format!("{}@{i}", b.id)))
                .collect()
        };
        let answer: BreakpointsUpdated = self.agent_request(
            &live,
            |id| {
                DaemonMessage::Breakpoints(BreakpointsRequest {
                    id,
                    set: Some(specs),
                    remove: agent_remove,
                })
            },
            Duration::from_secs(10),
        )?;
        if !answer.failed.is_empty() {
            // Nothing half-set: take back what did go in.
            let installed = answer.installed;
            if !installed.is_empty() {
                let _ = self.agent_request::<BreakpointsUpdated>(
                    &live,
                    |id| {
                        DaemonMessage::Breakpoints(BreakpointsRequest {
                            id,
                            set: None,
                            remove: installed,
                        })
                    },
                    Duration::from_secs(10),
                );
            }
            let reasons: Vec<String> = answer
                .failed
                .iter()
                .map(|(agent_id, why)| {
                    let which = agent_id.split('@').next().unwrap_or("?").to_string();
                    let what = created
                        .iter()
                        .find(|b| b.id == which)
                        .map_or(which.clone(), |b| format!("{} in {}", b.kind, b.function));
                    format!("{what}: {why}")
                })
                .collect();
            return Err(err(format!(
                "could not set {}: {}",
                if reasons.len() == 1 { "it" } else { "them" },
                reasons.join("; ")
            )));
        }
        let mut st = live.debug.lock().expect("debug lock");
        st.breakpoints.retain(|b| !remove.contains(&b.id));
        st.breakpoints.extend(created);
        Ok(st.breakpoints.clone())
    }

    /// Resumes or steps paused threads and waits (bounded) until a thread
    /// pauses again or the process ends.
    pub fn continue_execution(
        &self,
        id: &str,
        action: &str,
        thread: Option<u32>,
        timeout_ms: Option<u64>,
    ) -> Result<ContinueResponse, SessionError> {
        let timeout_ms = timeout_ms.unwrap_or(CONTINUE_TIMEOUT_MS.0);
        if !(1..=CONTINUE_TIMEOUT_MS.1).contains(&timeout_ms) {
            return Err(err(format!(
                "'timeoutMs' must be 1–{} (default {})",
                CONTINUE_TIMEOUT_MS.1, CONTINUE_TIMEOUT_MS.0
            )));
        }
        if !matches!(action, "continue" | "step-over" | "step-into" | "step-out") {
            return Err(err(format!(
                "'action' must be continue, step-over, step-into or step-out (got {action:?})"
            )));
        }
        let live = self.debug_live(id)?;
        let (targets, before) = {
            let st = live.debug.lock().expect("debug lock");
            let paused: Vec<u32> = st.paused.keys().copied().collect();
            if paused.is_empty() {
                return Err(SessionError::validation(format!(
                    "no thread of session '{id}' is paused; set a breakpoint (debug_breakpoint) and wait for a hit (debug_session status lists paused threads)"
                )));
            }
            let targets = match thread {
                Some(t) if !st.paused.contains_key(&t) => {
                    return Err(err(format!(
                        "thread {t} is not paused; paused threads: {paused:?}"
                    )));
                }
                Some(t) => vec![t],
                None if action == "continue" => paused.clone(),
                None if paused.len() == 1 => paused.clone(),
                None => {
                    return Err(err(format!(
                        "several threads are paused ({paused:?}); say which one to step with 'threadId'"
                    )));
                }
            };
            (targets, st.pauses)
        };
        let mut resumed = Vec::new();
        for tid in &targets {
            let p = live
                .debug
                .lock()
                .expect("debug lock")
                .paused
                .get(tid)
                .cloned()
                .expect("checked above");
            let order = if action == "continue" {
                ResumeOrder::Continue
            } else {
                self.step_order(&live, &p, action)?
            };
            {
                let mut st = live.debug.lock().expect("debug lock");
                st.paused.remove(tid);
                if action != "continue" {
                    st.settling.insert(*tid);
                } else {
                    st.settling.remove(tid);
                }
            }
            self.resume(&live, *tid, order);
            resumed.push(*tid);
        }
        let step_thread = (action != "continue").then(|| targets[0]);
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let mut st = live.debug.lock().expect("debug lock");
        loop {
            let hit = st
                .paused
                .values()
                .filter(|p| p.seq > before && step_thread.is_none_or(|t| p.thread_id == t))
                .max_by_key(|p| p.seq)
                .cloned();
            if let Some(p) = hit {
                let others = st
                    .paused
                    .keys()
                    .copied()
                    .filter(|t| *t != p.thread_id)
                    .collect();
                let message = match p.reason.as_str() {
                    "breakpoint" => format!(
                        "thread {} hit {} in {}",
                        p.thread_id,
                        p.breakpoint_id.as_deref().unwrap_or("a breakpoint"),
                        where_text(&p)
                    ),
                    _ => format!(
                        "thread {} stopped after {action} in {}",
                        p.thread_id,
                        where_text(&p)
                    ),
                };
                return Ok(ContinueResponse {
                    status: "paused",
                    paused: Some(p),
                    resumed,
                    other_paused: others,
                    message,
                });
            }
            if live.life.lock().expect("lifecycle lock").ended {
                return Ok(ContinueResponse {
                    status: "exited",
                    paused: None,
                    resumed,
                    other_paused: Vec::new(),
                    message: "the process ended; debug_session status says how".into(),
                });
            }
            let now = Instant::now();
            if now >= deadline {
                let others = st.paused.keys().copied().collect();
                return Ok(ContinueResponse {
                    status: "running",
                    paused: None,
                    resumed,
                    other_paused: others,
                    message: format!(
                        "no thread paused within {timeout_ms} ms; the program runs on (breakpoints and any step stop stay armed: call debug_session status or debug_continue again later)"
                    ),
                });
            }
            // Woken by pauses and by the end of the process (lifecycle).
            let wait = (deadline - now).min(Duration::from_millis(100));
            st = live
                .debug_changed
                .wait_timeout(st, wait)
                .expect("debug lock")
                .0;
        }
    }

    fn resume(&self, live: &Live, tid: u32, order: ResumeOrder) {
        let _ = live.post(&DaemonMessage::Resume(Resume { tid, order }));
    }

    /// The stops of a step from where `p` is paused.
    fn step_order(
        &self,
        live: &Live,
        p: &PausedThread,
        action: &str,
    ) -> Result<ResumeOrder, SessionError> {
        let mem = Mem::open(live.pid, false)?;
        let mut guard = live.tracer.lock().expect("tracer lock");
        let tracer = guard
            .as_mut()
            .ok_or_else(|| SessionError::internal("no symbols loaded"))?;
        Ok(plan_step(tracer, &mem, p, action))
    }

    /// The agent reported a paused thread: resolve where, then either show
    /// it or (a step that ended mid-line) step on to the next statement.
    pub(super) fn on_paused(&self, live: &Live, paused: &Paused) {
        let tid = paused.tid;
        let address = paused.address.0;
        let hit_ns = paused.ts;
        let regs = frames::registers_from(&json!(paused.registers));
        let reason = paused.reason.as_str().to_string();
        let breakpoint = paused
            .breakpoint
            .as_deref()
            .map(|s| s.split('@').next().unwrap_or(s).to_string());
        let mut p = PausedThread {
            thread_id: tid,
            reason: reason.clone(),
            breakpoint_id: breakpoint.clone(),
            function: None,
            file: None,
            line: None,
            address: hex(address),
            arguments: Vec::new(),
            backtrace: json!(paused.backtrace),
            paused_at_ns: hit_ns.saturating_sub(live.origin_ns),
            hit_to_visible_us: 0.0,
            seq: 0,
            regs,
            location: None,
            image_base: 0,
        };
        let settling = live
            .debug
            .lock()
            .expect("debug lock")
            .settling
            .contains(&tid);
        if let Some((path, base)) = super::hooks::image_at(live.pid, address) {
            let mem = Mem::open(live.pid, false).ok();
            let mut guard = live.tracer.lock().expect("tracer lock");
            if let Some(tracer) = guard.as_mut()
                && let Some(m) = tracer.module_index(&path)
            {
                let loc = tracer.locate(m, address - base);
                p.function = loc.function.clone();
                p.file = loc.file.clone();
                p.line = loc.line;
                p.image_base = base;
                p.location = Some(loc.clone());
                if reason == "step"
                    && settling
                    && let Some(fi) = loc.function_index
                {
                    let stmts = tracer.statements(m, fi);
                    let on_statement = stmts.iter().any(|s| s.offset == loc.offset);
                    if !stmts.is_empty()
                        && !on_statement
                        && let Some(mem) = &mem
                    {
                        // Mid-line after a return: finish the line first.
                        let order = plan_step(tracer, mem, &p, "step-over");
                        drop(guard);
                        self.resume(live, tid, order);
                        return;
                    }
                }
                if let (Some(fi), Some(mem)) = (loc.function_index, &mem)
                    && let Some(layout) = tracer.frame_layout(m, fi, loc.offset)
                {
                    p.arguments = layout
                        .vars
                        .iter()
                        .filter(|v| v.parameter)
                        .take(SHOWN_ARGUMENTS)
                        .map(|v| {
                            let mut out = read_local(mem, &layout, &p.frame(), &v.name, &[], 2)
                                .unwrap_or_else(|e| json!({"error": e}));
                            out["name"] = json!(v.name);
                            out
                        })
                        .collect();
                }
            }
        }
        self.refine_backtrace(live, &mut p.backtrace);
        let hits = paused.hits;
        let mut st = live.debug.lock().expect("debug lock");
        st.settling.remove(&tid);
        if let Some(id) = &breakpoint
            && let Some(b) = st.breakpoints.iter_mut().find(|b| &b.id == id)
        {
            b.hits = b.hits.max(hits);
        }
        st.pauses += 1;
        p.seq = st.pauses;
        p.hit_to_visible_us = monotonic_ns().saturating_sub(hit_ns) as f64 / 1000.0;
        st.paused.insert(tid, p);
        drop(st);
        live.debug_changed.notify_all();
    }

    /// A step into reached a call: where the callee's body starts, if it has line info.
    pub(super) fn on_step_call(&self, live: &Live, call: &StepCall) {
        let target = call.target.0;
        let mut answer = None;
        if let Some((path, base)) = super::hooks::image_at(live.pid, target) {
            let mut guard = live.tracer.lock().expect("tracer lock");
            if let Some(tracer) = guard.as_mut()
                && let Some(m) = tracer.module_index(&path)
                && let Some(body) = tracer.body_of_function_at(m, target - base)
            {
                answer = Some(Hex(base + body));
            }
        }
        let _ = live.post(&DaemonMessage::Callee(Callee {
            tid: call.tid,
            address: answer,
        }));
    }

    /// A logpoint fired: its message goes on the timeline.
    pub(super) fn on_logpoint(&self, live: &Live, logpoint: &Logpoint) {
        let id = logpoint.id.split('@').next().unwrap_or(&logpoint.id);
        let doc = json!({"logpointId": id, "message": logpoint.message});
        self.append_json_event_at(
            live,
            EventKind::Logpoint,
            logpoint.ts.saturating_sub(live.origin_ns),
            logpoint.pid,
            logpoint.tid,
            &doc,
        );
        let mut st = live.debug.lock().expect("debug lock");
        if let Some(b) = st.breakpoints.iter_mut().find(|b| b.id == id) {
            b.hits += 1;
        }
    }

    /// A condition or message failed to evaluate in the target.
    pub(super) fn on_breakpoint_error(&self, live: &Live, error: &BreakpointError) {
        let id = error.id.split('@').next().unwrap_or(&error.id);
        let mut st = live.debug.lock().expect("debug lock");
        if let Some(b) = st.breakpoints.iter_mut().find(|b| b.id == id) {
            b.note = Some(format!(
                "the condition threw in the target (the hit does not pause): {}",
                error.error
            ));
        }
    }

    /// The paused frame to read locals from: `thread`, else the only (or
    /// latest) paused thread. `None` when nothing is paused.
    pub(super) fn paused_frame(
        &self,
        live: &Live,
        thread: Option<u32>,
    ) -> Result<Option<PausedThread>, String> {
        let st = live.debug.lock().expect("debug lock");
        match thread {
            Some(t) => st.paused.get(&t).cloned().map(Some).ok_or_else(|| {
                format!(
                    "thread {t} is not paused (paused: {:?})",
                    st.paused.keys().collect::<Vec<_>>()
                )
            }),
            None => Ok(st.paused.values().max_by_key(|p| p.seq).cloned()),
        }
    }
}

fn where_text(p: &PausedThread) -> String {
    match (&p.function, &p.file, p.line) {
        (Some(f), Some(file), Some(l)) => format!(
            "{f} at {}:{l}",
            std::path::Path::new(file)
                .file_name()
                .map_or(file.clone(), |n| n.to_string_lossy().into_owned())
        ),
        (Some(f), _, _) => format!("{f} ({})", p.address),
        _ => p.address.clone(),
    }
}

pub(super) fn validate_request(a: &BreakpointRequest) -> Result<(), SessionError> {
    match (&a.function, &a.file, a.line) {
        (Some(_), None, None) | (None, Some(_), Some(_)) => {}
        (Some(_), _, _) => {
            return Err(err("give either 'function' or 'file' + 'line', not both"));
        }
        (None, Some(_), None) => return Err(err("'file' needs 'line'")),
        (None, None, Some(_)) => {
            return Err(err(
                "'line' needs 'file' (a path or its tail, e.g. \"src/main.c\")",
            ));
        }
        (None, None, None) => {
            return Err(err(
                "each breakpoint needs 'function' (a pattern like \"audio::process\") or 'file' + 'line'",
            ));
        }
    }
    if a.line == Some(0) {
        return Err(err("'line' counts from 1"));
    }
    if a.hit_count == Some(0) {
        return Err(err("'hitCount' counts from 1 (pause from the Nth hit on)"));
    }
    if a.message.as_deref().is_some_and(str::is_empty) {
        return Err(err("a logpoint's 'message' is empty"));
    }
    if a.message.is_some() && a.hit_count.is_some() {
        return Err(err(
            "'hitCount' is for breakpoints; a logpoint logs every hit whose condition holds",
        ));
    }
    Ok(())
}

fn resolve_sites(
    tracer: &mut Tracer,
    a: &BreakpointRequest,
) -> Result<(Vec<BreakSite>, Option<String>), SessionError> {
    let (sites, note) = if let Some(f) = &a.function {
        let pattern = strobe_symbols::Pattern::parse(f)
            .map_err(|e| err(format!("'function' {f:?} is not a valid pattern: {e}")))?;
        let sites = tracer.function_sites(&pattern);
        if sites.is_empty() {
            return Err(err(format!(
                "no function matches {f:?} in the program or its loaded libraries (check the spelling, or use a wider pattern like \"**::{f}\")"
            )));
        }
        (sites, None)
    } else {
        let file = a.file.as_deref().expect("validated");
        let line = a.line.expect("validated");
        let (sites, at) = tracer.line_sites(file, line);
        if sites.is_empty() {
            return Err(err(format!(
                "no code at or after {file}:{line} in the line tables (is the file part of the program, built with -g? give its name or a path tail like \"src/main.c\")"
            )));
        }
        let note = (at != line).then(|| {
            format!("line {line} has no code; moved to line {at}, the next line that has")
        });
        (sites, note)
    };
    if sites.len() > frames::MAX_SITES {
        return Err(err(format!(
            "it matches {} places (at most {}); narrow the pattern",
            sites.len(),
            frames::MAX_SITES
        )));
    }
    Ok((sites, note))
}

/// The agent's description of one breakpoint address: CFA rule and the
/// variables its condition and message mention.
fn agent_spec(
    tracer: &mut Tracer,
    a: &BreakpointRequest,
    agent_id: &str,
    site: &BreakSite,
    address: u64,
    image_base: u64,
    bases: &dyn Fn(&std::path::Path) -> Option<u64>,
) -> BreakpointSpec {
    let text = format!(
        "{} {}",
        a.condition.as_deref().unwrap_or(""),
        a.message.as_deref().unwrap_or("")
    );
    let layout = tracer.modules[site.module]
        .native()
        .and_then(|index| index.function_containing(site.offset))
        .and_then(|fi| tracer.frame_layout(site.module, fi, site.offset));
    let mut vars = Vec::new();
    let mut cfa = None;
    if let Some(l) = &layout {
        cfa = l.cfa.map(|c| (c.register, c.offset));
        let uses_args = frames::mentions(&text, "args");
        for v in &l.vars {
            if frames::mentions(&text, &v.name) || (uses_args && v.parameter) {
                vars.push(VarDesc {
                    name: v.name.clone(),
                    param: v.parameter,
                    loc: frames::agent_location(&v.place, l.frame_base, image_base),
                    ty: frames::agent_type(&l.types, v.ty, 3),
                });
            }
        }
    }
    tracer.globals_for(&text, &mut vars, bases);
    BreakpointSpec {
        id: agent_id.to_string(),
        address: Hex(address),
        cfa,
        vars,
        condition: a.condition.clone(),
        message: a.message.clone(),
        hit_count: a.hit_count,
    }
}

/// Step stops from `p`: see [`frames::step_targets`]; the return address
/// ends the step when the function returns (stack pointer back at the CFA).
fn plan_step(tracer: &mut Tracer, mem: &Mem, p: &PausedThread, action: &str) -> ResumeOrder {
    let mut stops = Vec::new();
    let mut scan = None;
    let mut scan_frame = None;
    if let Some(loc) = &p.location {
        let rule = tracer.cfa_rule(loc.module, loc.offset);
        let cfa = frames::cfa_value(rule, &p.regs);
        if let Some(cfa) = cfa
            && let Ok(ret) = mem.read_u64(cfa.wrapping_sub(8))
        {
            stops.push(StepStop(Hex(ret), Some(FrameCheck(7, 0, Hex(cfa))), false));
        }
        if action != "step-out"
            && let Some(fi) = loc.function_index
        {
            let stmts = tracer.statements(loc.module, fi);
            let (targets, range) = frames::step_targets(&stmts, loc.offset);
            for t in targets {
                let check = match (tracer.cfa_rule(loc.module, t), cfa) {
                    (Some(r), Some(c)) => Some(FrameCheck(r.register, r.offset, Hex(c))),
                    _ => None,
                };
                stops.push(StepStop(Hex(p.image_base + t), check, false));
            }
            if action == "step-into" {
                let f_end = tracer.modules[loc.module]
                    .native()
                    .and_then(|index| {
                        index.functions[fi]
                            .ranges
                            .iter()
                            .find(|(s, e)| (*s..*e).contains(&loc.offset))
                    })
                    .map_or(range.1, |r| r.1);
                scan = Some((
                    Hex(p.image_base + range.0),
                    Hex(p.image_base + range.1.min(f_end)),
                ));
                if let (Some(r), Some(c)) = (rule, cfa) {
                    scan_frame = Some(FrameCheck(r.register, r.offset, Hex(c)));
                }
            }
        }
    }
    ResumeOrder::Step {
        stops,
        scan,
        scan_frame,
    }
}

/// A stopped frame's registers and its image's load address.
pub(super) struct StoppedFrame {
    /// Registers by DWARF number.
    pub(super) regs: Registers,
    /// Load address of the frame's image.
    pub(super) image_base: u64,
}

impl PausedThread {
    pub(super) fn frame(&self) -> StoppedFrame {
        StoppedFrame {
            regs: self.regs.clone(),
            image_base: self.image_base,
        }
    }
}

/// Reads a local (with `.field` / `->field` / `[i]` steps) of a stopped frame.
pub(super) fn read_local(
    mem: &Mem,
    layout: &FrameLayout,
    frame: &StoppedFrame,
    name: &str,
    steps: &[Step],
    depth: u32,
) -> Result<Value, String> {
    let spec = local_spec(layout, frame, name, steps)?;
    match spec {
        LocalSpec::Memory(spec) => {
            let addr = mem.locate(&spec)?;
            let bytes = mem.read(addr, spec.size)?;
            let value = if spec.string {
                mem.c_string(u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")))
            } else {
                values::render_memory(
                    &spec.ty,
                    &bytes,
                    addr,
                    depth,
                    &varpath::path_text(name, steps),
                )
            };
            Ok(json!({"address": hex(addr), "type": values::type_name(&spec.ty), "value": value}))
        }
        LocalSpec::Value { bytes, ty, string } => {
            let value = if string {
                mem.c_string(u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")))
            } else {
                values::render_memory(&ty, &bytes, 0, depth, &varpath::path_text(name, steps))
            };
            Ok(json!({"register": true, "type": values::type_name(&ty), "value": value}))
        }
    }
}

/// Where a local lives: memory (readable and writable) or a value only.
pub(super) enum LocalSpec {
    /// In memory, as a read chain.
    Memory(values::WatchSpec),
    /// A register or constant's value.
    Value {
        /// Little-endian bytes of the value (its type's size).
        bytes: Vec<u8>,
        /// Its type.
        ty: WatchType,
        /// A `char *` (the string is read too).
        string: bool,
    },
}

/// Resolves a paused frame's variable `name` with `steps` (errors name the
/// variables in scope when it is not one of them).
pub(super) fn local_spec(
    layout: &FrameLayout,
    frame: &StoppedFrame,
    name: &str,
    steps: &[Step],
) -> Result<LocalSpec, String> {
    let Some(v) = layout.vars.iter().find(|v| v.name == name) else {
        let names: Vec<&str> = layout.vars.iter().map(|v| v.name.as_str()).collect();
        return Err(format!(
            "no variable {name:?} in scope here (in scope: {})",
            names.join(", ")
        ));
    };
    let rule_cfa = frames::cfa_value(layout.cfa, &frame.regs);
    let label = varpath::path_text(name, steps);
    let types = &layout.types;
    // A slice's `T[n]` goes into a copy of the frame's types: what a
    // paused frame reads is never stored.
    let mut array_of = varpath::array_in_copy(types);
    let mut spec = |start| {
        varpath::chain_spec(
            &label,
            &label,
            start,
            types.clone(),
            layout.module as u32,
            steps,
            &mut array_of,
        )
        .map(LocalSpec::Memory)
    };
    match frames::resolve_place(
        &v.place,
        layout.frame_base,
        rule_cfa,
        &frame.regs,
        frame.image_base,
    ) {
        Resolved::Address(a) => spec(varpath::Start::At(a, v.ty)),
        Resolved::Value(value) => {
            if steps.is_empty() {
                let size = types.size_of(v.ty).unwrap_or(8).min(8) as usize;
                let string = matches!(
                    types.get(types.strip(v.ty)),
                    strobe_symbols::Type::Pointer { target, .. }
                        if matches!(types.get(types.strip(*target)), strobe_symbols::Type::Int { size: 1, is_char: true, .. })
                );
                return Ok(LocalSpec::Value {
                    bytes: value.to_le_bytes()[..size].to_vec(),
                    ty: WatchType::Typed(v.ty, types.clone(), layout.module as u32),
                    string,
                });
            }
            // A pointer held in a register: its first step goes through it.
            if !matches!(
                types.get(types.strip(v.ty)),
                strobe_symbols::Type::Pointer { .. }
            ) {
                return Err(format!(
                    "{name} is held in a register here; read it without members"
                ));
            }
            spec(varpath::Start::Pointer(value, v.ty))
        }
        Resolved::Unavailable(why) => Err(format!("{name} cannot be read here: {why}")),
    }
}
