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
    FrameCheck, Logpoint, Paused, PyBreakpointsRequest, Resume, ResumeOrder, StepCall, StepStop,
    VarDesc,
};
use strobe_values::varpath::{self, Step};
use strobe_values::{self as values, WatchType};

/// Most breakpoints per session.
pub const MAX_BREAKPOINTS: usize = 50;
/// Most logpoints per session.
pub const MAX_LOGPOINTS: usize = 100;
/// Default and largest wait of `debug_continue`.
pub const CONTINUE_TIMEOUT_MS: (u64, u64) = (10_000, 120_000);
/// Arguments shown per paused thread.
const SHOWN_ARGUMENTS: usize = 8;
/// Other variables in scope shown per paused native thread.
const SHOWN_LOCALS: usize = 16;

mod events;
mod javascript;
mod locals;
mod outer;
mod pause;
mod python;
mod sites;

pub(super) use locals::{LocalSpec, StoppedFrame, local_spec, read_local};
pub(super) use sites::validate_request;
use sites::{agent_spec, plan_step, resolve_sites, where_text};

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
    /// Runtime addresses (Python: `file:line` of each place).
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
    /// Set by the agent's Python debugger.
    #[serde(skip)]
    pub python: bool,
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
    /// The paused frame's parameters (up to 8), typed (native code).
    pub arguments: Vec<Value>,
    /// The paused frame's locals, typed (`{name, type, value}`): a Python
    /// or JavaScript frame's, or a native frame's variables in scope other
    /// than its arguments (the first [`SHOWN_LOCALS`], one level deep).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locals: Option<Vec<Value>>,
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
    /// A Python thread (stepped by the agent's Python debugger).
    #[serde(skip)]
    pub(super) python: bool,
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

impl ContinueResponse {
    /// The process ended while waiting.
    fn exited(resumed: Vec<u32>, message: &str) -> Self {
        ContinueResponse {
            status: "exited",
            paused: None,
            resumed,
            other_paused: Vec::new(),
            message: message.into(),
        }
    }
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
    /// Threads asked to pause (`pause.rs`): their next step stop is shown
    /// as a pause.
    pausing: HashSet<u32>,
    /// Image bases by path.
    bases: HashMap<PathBuf, u64>,
    /// Notes the agent sent for breakpoints not listed yet (a logpoint can
    /// fail on its first hit before its `debug_breakpoint` call returns).
    early_notes: HashMap<String, String>,
}

impl DebugState {
    /// A paused Python thread's copy of its local `name` (`{name, type, value}`).
    pub(in crate::manager) fn paused_local_mut(
        &mut self,
        tid: u32,
        name: &str,
    ) -> Option<&mut Value> {
        self.paused
            .get_mut(&tid)?
            .locals
            .as_mut()?
            .iter_mut()
            .find(|l| l["name"] == name)
    }

    /// Breakpoints and paused threads, for status.
    pub(super) fn summary(&self) -> (Vec<BreakpointInfo>, Vec<PausedThread>) {
        (
            self.breakpoints.clone(),
            self.paused.values().cloned().collect(),
        )
    }
}

/// What one request to the agent sets: native breakpoints (planted by
/// agent/src/breakpoints.ts) or Python ones (its Python debugger).
enum AgentSpecs {
    Native(Option<Vec<BreakpointSpec>>),
    Python(Vec<strobe_frida::agent_protocol::PyBreakpointSpec>),
}

/// `debug_continue`'s `timeoutMs`, checked (default 10 s).
fn continue_timeout(timeout_ms: Option<u64>) -> Result<u64, SessionError> {
    let t = timeout_ms.unwrap_or(CONTINUE_TIMEOUT_MS.0);
    if !(1..=CONTINUE_TIMEOUT_MS.1).contains(&t) {
        return Err(err(format!(
            "'timeoutMs' must be 1–{} (default {})",
            CONTINUE_TIMEOUT_MS.1, CONTINUE_TIMEOUT_MS.0
        )));
    }
    Ok(t)
}

/// Waits for the next change of `live`'s debugger state: a pause, or the
/// process's end (both notify `debug_changed`); at most until `deadline`
/// and never over 100 ms, so the caller rechecks the end.
pub(in crate::manager) fn wait_debug_change<'a>(
    live: &'a Live,
    st: std::sync::MutexGuard<'a, DebugState>,
    deadline: Instant,
) -> std::sync::MutexGuard<'a, DebugState> {
    let wait = deadline
        .saturating_duration_since(Instant::now())
        .min(Duration::from_millis(100));
    live.debug_changed
        .wait_timeout(st, wait)
        .expect("debug lock")
        .0
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
        let mut py_specs = Vec::new();
        let mut created = Vec::new();
        if !add.is_empty() {
            let mut guard = live.tracer.lock().expect("tracer lock");
            if guard.is_none() {
                *guard = Some(self.new_tracer(&live)?);
            }
            let tracer = guard.as_mut().expect("created above");
            for a in add {
                let kind = if a.message.is_some() {
                    "logpoint"
                } else {
                    "breakpoint"
                };
                let next_id = || {
                    let mut st = live.debug.lock().expect("debug lock");
                    st.next_id += 1;
                    format!(
                        "{}-{}",
                        if a.message.is_some() { "lp" } else { "bp" },
                        st.next_id
                    )
                };
                // Source-level breakpoints (Python's debugger, or the
                // Node.js debugger worker, which speaks its protocol).
                let source_level = if python::is_python_request(tracer, a) {
                    Some(python::resolve_python(tracer, a)?)
                } else if javascript::is_javascript_request(tracer, a) {
                    Some(javascript::resolve_javascript(tracer, a)?)
                } else {
                    None
                };
                if let Some((sites, note)) = source_level {
                    let bp_id = next_id();
                    for (i, site) in sites.iter().enumerate() {
                        py_specs.push(site.spec(a, format!("{bp_id}@{i}")));
                    }
                    let mut functions: Vec<&str> =
                        sites.iter().map(|s| s.function.as_str()).collect();
                    functions.dedup();
                    created.push(BreakpointInfo {
                        id: bp_id,
                        kind,
                        function: functions.join(", "),
                        file: Some(sites[0].shown().0),
                        line: Some(sites[0].shown().1),
                        addresses: sites.iter().map(python::PySite::place).collect(),
                        condition: a.condition.clone(),
                        hit_count: a.hit_count,
                        message: a.message.clone(),
                        hits: 0,
                        note,
                        python: true,
                    });
                    continue;
                }
                let (sites, note) = resolve_sites(tracer, a)?;
                let bp_id = next_id();
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
                    python: false,
                });
            }
        }
        let agent_remove = |python: bool| -> Vec<String> {
            let st = live.debug.lock().expect("debug lock");
            st.breakpoints
                .iter()
                .filter(|b| remove.contains(&b.id) && b.python == python)
                .flat_map(|b| (0..b.addresses.len()).map(move |i| format!("{}@{i}", b.id)))
                .collect()
        };
        let (native_remove, py_remove) = (agent_remove(false), agent_remove(true));
        let mut failed = Vec::new();
        // (Python's?, agent ids set), to take back if anything failed.
        let mut installed = Vec::new();
        if !specs.is_empty() || !native_remove.is_empty() || py_specs.is_empty() {
            let a = self.set_in_agent(&live, AgentSpecs::Native(Some(specs)), native_remove)?;
            failed.extend(a.failed);
            installed.push((false, a.installed));
        }
        if !py_specs.is_empty() || !py_remove.is_empty() {
            let a = self.set_in_agent(&live, AgentSpecs::Python(py_specs), py_remove)?;
            failed.extend(a.failed);
            installed.push((true, a.installed));
        }
        if !failed.is_empty() {
            // Nothing half-set: take back what did go in.
            for (python, ids) in installed {
                if !ids.is_empty() {
                    let none = if python {
                        AgentSpecs::Python(Vec::new())
                    } else {
                        AgentSpecs::Native(None)
                    };
                    let _ = self.set_in_agent(&live, none, ids);
                }
            }
            let reasons: Vec<String> = failed
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
        for mut b in created {
            if let Some(note) = st.early_notes.remove(&b.id) {
                b.note = Some(note);
            }
            st.breakpoints.push(b);
        }
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
        let timeout_ms = continue_timeout(timeout_ms)?;
        if !matches!(action, "continue" | "step-over" | "step-into" | "step-out") {
            return Err(err(format!(
                "'action' must be continue, step-over, step-into, step-out or pause (got {action:?})"
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
            } else if p.python {
                python::python_step(action)
            } else {
                self.step_order(&live, &p, action)?
            };
            {
                let mut st = live.debug.lock().expect("debug lock");
                st.paused.remove(tid);
                if action != "continue" && !p.python {
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
                return Ok(ContinueResponse::exited(
                    resumed,
                    "the process ended; debug_session status says how",
                ));
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
            st = wait_debug_change(&live, st, deadline);
        }
    }

    /// Lets every paused thread go on (before a stop: a detached process
    /// must not keep threads blocked in the agent that is going away).
    pub(in crate::manager) fn release_paused(&self, live: &Live) {
        let paused: Vec<u32> = {
            let mut st = live.debug.lock().expect("debug lock");
            std::mem::take(&mut st.paused).into_keys().collect()
        };
        for tid in paused {
            self.resume(live, tid, ResumeOrder::Continue);
        }
    }

    /// Sets and removes breakpoints in the agent's native or Python debugger.
    fn set_in_agent(
        &self,
        live: &Live,
        set: AgentSpecs,
        remove: Vec<String>,
    ) -> Result<BreakpointsUpdated, SessionError> {
        self.agent_request(
            live,
            |id| match set {
                AgentSpecs::Native(set) => {
                    DaemonMessage::Breakpoints(BreakpointsRequest { id, set, remove })
                }
                AgentSpecs::Python(set) => {
                    DaemonMessage::PythonBreakpoints(PyBreakpointsRequest { id, set, remove })
                }
            },
            Duration::from_secs(10),
        )
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
}
