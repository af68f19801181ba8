//! Breakpoints staged before a launch, and `stopOnEntry`.
//!
//! A program that ends in a millisecond cannot be given a breakpoint once it
//! runs. `debug_breakpoint` without a session stages breakpoints and logpoints
//! the way `debug_trace` stages patterns: every later launch sets them before
//! the program's `main` runs (until they are removed), and reports how many
//! it set. `stopOnEntry` adds one on `main` and waits for the pause, so the
//! launch answers with the thread already stopped there.

use super::breakpoints::{
    BreakpointRequest, MAX_BREAKPOINTS, MAX_LOGPOINTS, PausedThread, validate_request,
};
use super::{Live, SessionManager};
use crate::SessionError;
use serde::Serialize;
use std::time::{Duration, Instant};

/// How long a launch with `stopOnEntry` waits for the pause in `main`.
pub const ENTRY_WAIT: Duration = Duration::from_secs(10);

/// A breakpoint or logpoint waiting for the next launch.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StagedBreakpoint {
    /// `staged-N`: what `remove` takes before a launch.
    pub id: String,
    /// `breakpoint` or `logpoint`.
    pub kind: &'static str,
    /// Where: the function pattern, or `file:line`.
    pub at: String,
    /// Its condition, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Pause from the Nth hit on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit_count: Option<u32>,
    /// A logpoint's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The staged breakpoints of a daemon (shared by its connections, like the
/// staged trace patterns).
#[derive(Debug, Default)]
pub(super) struct Staged {
    next: u32,
    items: Vec<(String, BreakpointRequest)>,
}

impl Staged {
    fn list(&self) -> Vec<StagedBreakpoint> {
        self.items
            .iter()
            .map(|(id, r)| StagedBreakpoint {
                id: id.clone(),
                kind: if r.message.is_some() {
                    "logpoint"
                } else {
                    "breakpoint"
                },
                at: match (&r.function, &r.file, r.line) {
                    (Some(f), _, _) => f.clone(),
                    (None, Some(file), Some(line)) => format!("{file}:{line}"),
                    _ => "?".to_string(),
                },
                condition: r.condition.clone(),
                hit_count: r.hit_count,
                message: r.message.clone(),
            })
            .collect()
    }
}

/// What a launch did with the staged breakpoints and `stopOnEntry`.
#[derive(Debug, Default)]
pub(super) struct EntryOutcome {
    /// Staged breakpoints set (None when none were staged).
    pub applied: Option<u32>,
    /// Problems, one per breakpoint that could not be set.
    pub warnings: Vec<String>,
    /// Whether `main` got a breakpoint for `stopOnEntry`.
    pub entry_set: bool,
}

impl SessionManager {
    /// Stages breakpoints and logpoints for every later launch, removes
    /// staged ones by id, and lists what is staged.
    ///
    /// # Errors
    /// A malformed request, an unknown id, or more than a session takes.
    pub fn stage_breakpoints(
        &self,
        add: &[BreakpointRequest],
        remove: &[String],
    ) -> Result<Vec<StagedBreakpoint>, SessionError> {
        for a in add {
            validate_request(a)?;
        }
        let mut staged = self.staged.lock().expect("staged lock");
        for r in remove {
            if !staged.items.iter().any(|(id, _)| id == r) {
                let ids: Vec<&str> = staged.items.iter().map(|(id, _)| id.as_str()).collect();
                return Err(SessionError::validation(format!(
                    "no staged breakpoint {r:?} (staged: {}); a running session's breakpoints are removed with its sessionId",
                    if ids.is_empty() {
                        "none".to_string()
                    } else {
                        ids.join(", ")
                    }
                )));
            }
        }
        let count = |log: bool| {
            staged
                .items
                .iter()
                .filter(|(id, r)| r.message.is_some() == log && !remove.contains(id))
                .count()
                + add.iter().filter(|a| a.message.is_some() == log).count()
        };
        if count(false) > MAX_BREAKPOINTS || count(true) > MAX_LOGPOINTS {
            return Err(SessionError::validation(format!(
                "at most {MAX_BREAKPOINTS} breakpoints and {MAX_LOGPOINTS} logpoints can be staged; remove some first"
            )));
        }
        staged.items.retain(|(id, _)| !remove.contains(id));
        for a in add {
            staged.next += 1;
            let id = format!("staged-{}", staged.next);
            staged.items.push((id, a.clone()));
        }
        Ok(staged.list())
    }

    /// The breakpoints staged for the next launch.
    pub fn staged_breakpoints(&self) -> Vec<StagedBreakpoint> {
        self.staged.lock().expect("staged lock").list()
    }

    /// Sets the staged breakpoints, and one on `main` for `stop_on_entry`,
    /// in a session that has not run yet. Each is set on its own, so one
    /// that matches nothing in this program leaves the others in place.
    pub(super) fn set_entry_breakpoints(&self, id: &str, stop_on_entry: bool) -> EntryOutcome {
        let staged: Vec<(String, BreakpointRequest)> =
            self.staged.lock().expect("staged lock").items.clone();
        let mut out = EntryOutcome::default();
        if !staged.is_empty() {
            let mut set = 0;
            for (staged_id, r) in &staged {
                match self.breakpoints(id, std::slice::from_ref(r), &[]) {
                    Ok(_) => set += 1,
                    Err(e) => out
                        .warnings
                        .push(format!("staged {staged_id} not set: {}", e.message())),
                }
            }
            out.applied = Some(set);
        }
        if stop_on_entry {
            // A Python or Node.js script stops at its first statement (the
            // first line with code); native code at main.
            let main = self.script(id).map_or_else(
                || BreakpointRequest {
                    function: Some("main".to_string()),
                    ..Default::default()
                },
                |(script, line)| BreakpointRequest {
                    file: Some(script.to_string_lossy().into_owned()),
                    line: Some(line),
                    ..Default::default()
                },
            );
            match self.breakpoints(id, &[main], &[]) {
                Ok(_) => out.entry_set = true,
                Err(e) => out.warnings.push(format!(
                    "stopOnEntry: no breakpoint on main ({}); the program runs on",
                    e.message()
                )),
            }
        }
        out
    }

    /// The script a Python or Node.js session runs (`python app.py`,
    /// `node app.js`), if it is one, and where it starts: line 1 (a Python
    /// breakpoint moves to the first line with code) or, in JavaScript, its
    /// first top-level statement that runs (V8 would move line 1 into the
    /// body of a function declared above it).
    fn script(&self, id: &str) -> Option<(std::path::PathBuf, u32)> {
        let live = self.live(id)?;
        let mut guard = live.tracer.lock().expect("tracer lock");
        if guard.is_none() {
            *guard = Some(self.new_tracer(&live).ok()?);
        }
        let tracer = guard.as_ref()?;
        if tracer.has_language(strobe_symbols::Language::JavaScript) {
            let script = strobe_symbols::resolvers::javascript::script_of(&live.program_args)?;
            let path = tracer.project_root.join(script);
            let text = std::fs::read_to_string(&path).ok()?;
            let line = strobe_symbols::resolvers::javascript::parse_source(&path, &text)
                .first_statement_line?;
            return Some((path, line));
        }
        if !tracer.has_language(strobe_symbols::Language::Python) {
            return None;
        }
        match strobe_symbols::resolvers::python::parse_args(&live.program_args).0 {
            strobe_symbols::resolvers::python::Program::Script(p) => {
                Some((tracer.project_root.join(p), 1))
            }
            _ => None,
        }
    }

    /// Waits until a thread of `live` pauses (or the program ends, or
    /// `timeout` passes); returns the first paused thread.
    pub(super) fn wait_for_first_pause(
        &self,
        live: &Live,
        timeout: Duration,
    ) -> Option<PausedThread> {
        let deadline = Instant::now() + timeout;
        let mut st = live.debug.lock().expect("debug lock");
        loop {
            if let Some(p) = st.summary().1.into_iter().next() {
                return Some(p);
            }
            let now = Instant::now();
            if now >= deadline || live.life.lock().expect("lifecycle lock").ended {
                return None;
            }
            st = super::breakpoints::wait_debug_change(live, st, deadline);
        }
    }
}
