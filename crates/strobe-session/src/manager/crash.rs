//! The crashing frame's locals: from the registers the agent's exception
//! handler reports, walk out (CFI from `.eh_frame`) to the innermost frame
//! of the program's own code (the executable, or source under the project
//! root) — the
//! faulting function itself, or the caller of `abort()` — and read its
//! parameters and locals through their DWARF locations while the crashing
//! thread is still blocked in the handler. Without such a frame, the
//! innermost frame with line info (a library's) is shown.
//!
//! Around that, the crash event is given what explains it: the real signal
//! of an access violation (Frida reports SIGBUS as one) and its cause from
//! the memory map, the uncaught C++ exception's type, the runtime's own
//! report from stderr (terminate message, Rust panic, sanitizer report,
//! see [`crate::diagnosis`]) with the ids of those stderr events, and the
//! last events of the process before it.

use super::breakpoints::{StoppedFrame, read_local};
use super::memory::Mem;
use super::stack_overflow;
use super::{Live, SessionManager};
use crate::diagnosis::{self, Diagnosis, StderrLine};
use crate::frames;
use crate::trace;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use strobe_core::event::{Event, EventKind};
use strobe_frida::agent_protocol::{CrashReport, DaemonMessage};
use strobe_store::{EventFilter, QueryPage, SessionUpdate};
use strobe_symbols::resolvers::dwarf::demangle_type_name;

/// Frames walked looking for one with debug info (a Rust `panic=abort`
/// passes a dozen frames of the panic machinery first).
const MAX_UNWIND: usize = 32;
/// Longest backtrace kept.
const MAX_BACKTRACE: usize = 64;
/// Source locations of code the toolchain links or inlines into the
/// executable (Rust's std, C++ headers): not the program's own frames.
const TOOLCHAIN_SOURCES: [&str; 3] = ["/rustc/", "/usr/include/", "/usr/lib/"];
/// Locals shown.
const MAX_LOCALS: usize = 32;
/// Events before a crash listed in it.
const PRECEDING_EVENTS: u64 = 10;
/// Stderr lines searched for the runtime's report.
const REPORT_LINES: u64 = 400;
/// Longest text of a listed preceding event.
const PRECEDING_TEXT: usize = 160;
/// How long a crash waits for the output already written to be stored.
const OUTPUT_SYNC: Duration = Duration::from_millis(500);

/// Makes sanitizer errors stop the process with `abort()` (a crash with a
/// backtrace and the faulting frame's locals) instead of a bare
/// `exit_group(1)` that leaves nothing to inspect, unless the user's
/// `ASAN_OPTIONS` already decides.
pub(super) fn sanitizers_abort_on_error(env: &mut BTreeMap<String, String>) {
    let options = env.entry("ASAN_OPTIONS".to_string()).or_default();
    if !options.contains("abort_on_error") {
        if !options.is_empty() {
            options.push(':');
        }
        options.push_str("abort_on_error=1");
    }
}

/// The signal behind an access violation and why it happened, from the
/// mapping of the fault address: no mapping (SIGSEGV), a mapping that
/// forbids the access (SIGSEGV), or a file mapping that allows it, so the
/// page lies past the end of the file (SIGBUS).
fn classify_fault(pid: u32, crash: &mut Value) {
    if crash["kind"] != "access-violation" {
        return;
    }
    if crash["stackOverflow"] == true {
        crash["memory"]["cause"] = json!(stack_overflow::CAUSE);
        return;
    }
    let Some(addr) = crash["memory"]["address"]
        .as_str()
        .and_then(trace::parse_hex_address)
    else {
        return;
    };
    let operation = crash["memory"]["operation"].as_str().unwrap_or("read");
    let mapping = crate::procfs::maps(pid)
        .unwrap_or_default()
        .into_iter()
        .find(|m| m.contains(addr))
        .map(|m| (m.perms, m.path));
    let cause = match mapping {
        None if addr < 4096 => "null pointer: nothing is mapped at this address".to_string(),
        None => "nothing is mapped at this address".to_string(),
        Some((perms, path)) => {
            let needed = match operation {
                "write" => 'w',
                "execute" => 'x',
                _ => 'r',
            };
            let what = if path.is_empty() {
                "anonymous memory"
            } else {
                path.as_str()
            };
            if perms.contains(needed) && path.starts_with('/') {
                crash["signal"] = json!("SIGBUS");
                format!(
                    "the page of {what} lies past the end of the file (it was truncated or is shorter than the mapping)"
                )
            } else {
                format!("{operation} not allowed: {what} is mapped {perms}")
            }
        }
    };
    crash["memory"]["cause"] = json!(cause);
}

impl SessionManager {
    /// Stores the crash event (with the crashing frame's locals), then lets
    /// the crashing thread go on dying.
    pub(super) fn on_crash(&self, live: &Arc<Live>, report: CrashReport) {
        // The report is the event's document, enriched below.
        let mut payload = serde_json::to_value(&report).expect("crash reports serialize");
        let summary = self.explain_crash(live, &mut payload);
        // The explanation may correct the signal (Frida reports SIGBUS as SIGSEGV).
        let signal = payload["signal"]
            .as_str()
            .map_or(report.signal, str::to_string);
        for image in std::iter::once(live.clone()).chain(live.root().filter(|r| r.pid == live.pid))
        {
            let mut life = image.life.lock().expect("lifecycle lock");
            life.signal = Some(signal.clone());
            life.crash_summary = summary.clone();
        }
        if let Some(walk) = self.unwind_crash(live, &payload) {
            if let Some(frame) = &walk.frame {
                payload["frame"] = frame.clone();
            }
            self.merge_backtrace(live, &mut payload["backtrace"], &walk);
        }
        self.refine_backtrace(live, &mut payload["backtrace"]);
        if payload["stackOverflow"] == true {
            stack_overflow::collapse_repeats(&mut payload["backtrace"]);
        }
        self.append_json_event(live, EventKind::Crash, report.pid, report.tid, &payload);
        let main = live.root().is_none_or(|r| r.pid == live.pid);
        if main {
            let _ = self.store.update_session(
                live.key,
                SessionUpdate {
                    exit_signal: Some(signal),
                    ..Default::default()
                },
            );
        }
        // The crash is on disk before the process may die.
        let _ = self.store.flush();
        let _ = live.post(&DaemonMessage::CrashAck);
    }

    /// Everything the crash event carries besides the frame: the real
    /// signal and cause, the exception type, the runtime's report and the
    /// events just before. Returns the one-line summary for the end reason.
    pub(super) fn explain_crash(&self, live: &Live, crash: &mut Value) -> Option<String> {
        classify_fault(live.pid, crash);
        if let Some(mangled) = crash
            .as_object_mut()
            .and_then(|o| o.remove("exceptionType"))
            .and_then(|v| v.as_str().map(demangle_type_name))
        {
            crash["exception"] = json!({"type": mangled});
        }
        self.sync_output(live);
        let reports = self.runtime_reports(live);
        let aborted = crash["signal"] == "SIGABRT";
        if aborted && let Some(e) = &reports.exception {
            let from_stderr = e.as_object().cloned().unwrap_or_default();
            let merged = crash["exception"].as_object_mut();
            match merged {
                Some(m) => {
                    for (k, v) in from_stderr {
                        // The runtime's own type name wins over none.
                        if k != "type" || m.get("type").is_none_or(Value::is_null) {
                            m.insert(k, v);
                        }
                    }
                }
                None => crash["exception"] = e.clone(),
            }
        }
        if aborted && let Some(p) = &reports.panic {
            crash["panic"] = p.clone();
        }
        if let Some(s) = &reports.sanitizer {
            crash["sanitizer"] = s.clone();
        }
        crash["precedingEvents"] = json!(self.preceding_events(live, live.pid));
        let shown = Diagnosis {
            exception: crash.get("exception").cloned(),
            panic: crash.get("panic").cloned(),
            sanitizer: crash.get("sanitizer").cloned(),
            ..Diagnosis::default()
        };
        shown.headline().or_else(|| {
            (crash["stackOverflow"] == true).then(|| stack_overflow::headline(&crash["backtrace"]))
        })
    }

    /// A Rust panic that unwound out of `main` exits with 101 and a
    /// sanitizer told not to abort leaves through `exit_group`: no signal,
    /// yet the process crashed. When the ended process's stderr holds such
    /// a report, a `crash` event (`signal: null`, `kind` "panic" or
    /// "sanitizer") is recorded and the session ends as crashed.
    pub(super) fn postmortem_crash(&self, live: &Live) {
        let (exit_code, skip) = {
            let life = live.life.lock().expect("lifecycle lock");
            (
                life.exit_code,
                life.ended || life.crash_seen || life.stopping,
            )
        };
        if skip || exit_code == Some(0) {
            return;
        }
        self.sync_output(live);
        let reports = self.runtime_reports(live);
        let uncaught = live
            .life
            .lock()
            .expect("lifecycle lock")
            .python_uncaught
            .take();
        if uncaught.is_some() || reports.python.is_some() {
            self.python_crash(live, exit_code, uncaught, reports.python);
            return;
        }
        if let Some(js) = reports.javascript.clone() {
            self.javascript_crash(live, exit_code, js, reports.headline());
            return;
        }
        let (kind, report) = match (&reports.sanitizer, &reports.panic) {
            (Some(s), _) => ("sanitizer", s),
            (None, Some(p)) if exit_code == Some(101) => ("panic", p),
            _ => return,
        };
        let shown = Diagnosis {
            sanitizer: (kind == "sanitizer").then(|| report.clone()),
            panic: (kind == "panic").then(|| report.clone()),
            ..Diagnosis::default()
        };
        let event = json!({
            "type": "crash",
            "pid": live.pid,
            "signal": null,
            "kind": kind,
            "exitCode": exit_code,
            kind: report,
            "precedingEvents": self.preceding_events(live, live.pid),
        });
        self.append_json_event(live, EventKind::Crash, live.pid, 0, &event);
        let mut life = live.life.lock().expect("lifecycle lock");
        life.crash_seen = true;
        life.crash_summary = shown.headline();
    }

    /// A Python program that ended unsuccessfully on an exception nothing
    /// caught: the crash event carries its type and message, the traceback
    /// with each frame's locals (from the agent, read before the
    /// interpreter printed it) and the stderr lines of that print; from
    /// stderr alone when the agent could not read it.
    fn python_crash(
        &self,
        live: &Live,
        exit_code: Option<i32>,
        uncaught: Option<(u32, Vec<u8>)>,
        printed: Option<Value>,
    ) {
        let read = uncaught
            .as_ref()
            .map(|(_, payload)| strobe_values::python::decode(payload));
        let mut exception = read
            .as_ref()
            .and_then(|r| r.get("exception").cloned())
            .unwrap_or_else(|| {
                let p = printed.clone().unwrap_or_default();
                json!({"type": p["type"], "message": p["message"]})
            });
        let traceback = read
            .as_ref()
            .and_then(|r| r.get("traceback").cloned())
            .or_else(|| printed.as_ref().map(|p| p["frames"].clone()))
            .unwrap_or_else(|| json!([]));
        if let Some(ids) = printed.as_ref().map(|p| p["stderrEventIds"].clone()) {
            exception["stderrEventIds"] = ids;
        }
        let headline = match exception["message"].as_str() {
            Some(m) if !m.is_empty() => {
                format!(
                    "uncaught {}: {m}",
                    exception["type"].as_str().unwrap_or("?")
                )
            }
            _ => format!("uncaught {}", exception["type"].as_str().unwrap_or("?")),
        };
        let tid = uncaught.as_ref().map_or(0, |(tid, _)| *tid);
        let event = json!({
            "type": "crash",
            "pid": live.pid,
            "tid": tid,
            "signal": null,
            "kind": "python-exception",
            "exitCode": exit_code,
            "exception": exception,
            "traceback": traceback,
            "precedingEvents": self.preceding_events(live, live.pid),
        });
        self.append_json_event(live, EventKind::Crash, live.pid, tid, &event);
        let mut life = live.life.lock().expect("lifecycle lock");
        life.crash_seen = true;
        life.crash_summary = Some(headline);
    }

    /// A Node.js program that ended on an exception or rejection nothing
    /// caught, as Node reported it on stderr: the crash event carries the
    /// error's type, message and own properties, where it was thrown, the
    /// stack and the ids of the stderr lines.
    fn javascript_crash(
        &self,
        live: &Live,
        exit_code: Option<i32>,
        mut report: Value,
        headline: Option<String>,
    ) {
        let locals = self.javascript_uncaught_locals(live, &report);
        crate::diagnosis::map_to_sources(&mut report);
        let mut exception =
            json!({"type": report["type"], "stderrEventIds": report["stderrEventIds"]});
        match locals {
            Some(locals) => exception["locals"] = json!(locals),
            None => {
                exception["localsHint"] = json!(
                    "the throwing frame's locals come with a crash when the program is launched with env STROBE_JS_CRASH_LOCALS=1 (or once a breakpoint was set)"
                )
            }
        }
        for key in ["message", "properties", "thrownAt"] {
            if !report[key].is_null() {
                exception[key] = report[key].clone();
            }
        }
        let event = json!({
            "type": "crash",
            "pid": live.pid,
            "tid": 0,
            "signal": null,
            "kind": "javascript-exception",
            "exitCode": exit_code,
            "exception": exception,
            "stack": report["frames"],
            "precedingEvents": self.preceding_events(live, live.pid),
        });
        self.append_json_event(live, EventKind::Crash, live.pid, 0, &event);
        let mut life = live.life.lock().expect("lifecycle lock");
        life.crash_seen = true;
        life.crash_summary = headline;
    }

    /// The locals of the frame that threw what ended the Node program, when
    /// its debugger worker saw the throw (`STROBE_JS_CRASH_LOCALS=1`, or a
    /// breakpoint was set): `uncaught-<pid>.json` in the session's runtime
    /// directory (agent/node/debugger.cjs `uncaught`), taken only when its
    /// frame is where `report` (Node's, not yet source-mapped) says the
    /// error was thrown, or the function its stack starts in, so an
    /// earlier throw a handler survived is not shown for this one. An
    /// async function's are its parameters and `var`s: V8 pauses where its
    /// probe rethrows, outside the block its `let`s and `const`s live in.
    fn javascript_uncaught_locals(&self, live: &Live, report: &Value) -> Option<Vec<Value>> {
        let dir = live.probed.as_ref()?.lock().ok()?.dir.clone();
        let text = std::fs::read_to_string(dir.join(format!("uncaught-{}.json", live.pid))).ok()?;
        let seen: Value = serde_json::from_str(&text).ok()?;
        let payload: Vec<u8> = serde_json::from_value(seen["payload"].clone()).ok()?;
        let (frames, locals) = strobe_values::python::paused(&payload)?;
        let top = frames.first()?;
        let here = |at: &Value| at["file"] == top["file"] && at["line"] == top["line"];
        // An async function's rejection pauses where its probe rethrows
        // (the end of its body), in the function the stack names.
        let same_function = |at: &Value| {
            let (Some(named), Some(paused)) = (at["function"].as_str(), top["function"].as_str())
            else {
                return false;
            };
            at["file"] == top["file"] && (named == paused || named.ends_with(&format!(".{paused}")))
        };
        let innermost = &report["frames"][0];
        (here(&report["thrownAt"]) || here(innermost) || same_function(innermost)).then_some(locals)
    }

    /// Stores what the target's pipes hold now (a crashing process is held,
    /// so its last words are in them), then commits.
    pub(super) fn sync_output(&self, live: &Live) {
        // A followed child may have pipes of its own; the root's are shared.
        let root = live.root();
        for owner in std::iter::once(live).chain(root.as_deref()) {
            if let Some(capture) = owner.capture.lock().expect("capture lock").as_ref()
                && !capture.sync(OUTPUT_SYNC)
            {
                tracing::debug!("session {}: output not synced before the crash", live.id);
            }
        }
        let _ = self.store.flush();
    }

    /// The runtime reports in the session's recent stderr.
    pub(super) fn runtime_reports(&self, live: &Live) -> Diagnosis {
        let filter = EventFilter {
            kinds: Some(EventKind::Stderr.bit()),
            ..Default::default()
        };
        let lines: Vec<StderrLine> = self
            .last_events(live, &filter, REPORT_LINES)
            .into_iter()
            .map(|e| StderrLine {
                id: e.seq,
                text: String::from_utf8_lossy(&e.payload).into_owned(),
            })
            .collect();
        diagnosis::diagnose(&lines)
    }

    /// The last `PRECEDING_EVENTS` events of process `pid`, in a short form:
    /// `{id, kind, tid, function?, text?}`.
    pub(super) fn preceding_events(&self, live: &Live, pid: u32) -> Vec<Value> {
        let filter = EventFilter {
            pid: Some(pid),
            ..Default::default()
        };
        let events = self.last_events(live, &filter, PRECEDING_EVENTS);
        let ids: Vec<u32> = events
            .iter()
            .map(|e| e.header.func_id)
            .filter(|id| *id != 0)
            .collect();
        let names: BTreeMap<u32, String> = self
            .store
            .functions(live.key, &ids)
            .unwrap_or_default()
            .into_iter()
            .map(|f| (f.func_id, f.name))
            .collect();
        events
            .iter()
            .map(|e| {
                let kind = e.kind().map_or("unknown", EventKind::name);
                let mut out = json!({"id": e.seq, "kind": kind, "tid": e.header.tid});
                if let Some(name) = names.get(&e.header.func_id) {
                    out["function"] = json!(name);
                }
                if matches!(
                    e.kind(),
                    Some(EventKind::Stdout | EventKind::Stderr | EventKind::Logpoint)
                ) {
                    let text = String::from_utf8_lossy(&e.payload);
                    out["text"] = json!(text.chars().take(PRECEDING_TEXT).collect::<String>());
                }
                out
            })
            .collect()
    }

    /// The newest `n` committed events matching `filter`, oldest first.
    fn last_events(&self, live: &Live, filter: &EventFilter, n: u64) -> Vec<Event> {
        let count = |page| self.store.query(live.key, filter, page);
        let Ok(all) = count(QueryPage {
            offset: 0,
            limit: 0,
        }) else {
            return Vec::new();
        };
        count(QueryPage {
            offset: all.total_count.saturating_sub(n),
            limit: n as usize,
        })
        .map(|r| r.events)
        .unwrap_or_default()
    }

    /// Re-reads each frame's function and file:line from the program's own
    /// DWARF (Frida's symbolizer picks the row after the address at times);
    /// a caller's frame is looked up at its call, one byte before the return
    /// address.
    pub(super) fn refine_backtrace(&self, live: &Live, frames: &mut Value) {
        let Some(list) = frames.as_array_mut() else {
            return;
        };
        let mut guard = live.tracer.lock().expect("tracer lock");
        let Some(tracer) = guard.as_mut() else { return };
        for (i, f) in list.iter_mut().enumerate() {
            let Some(addr) = f["address"].as_str().and_then(trace::parse_hex_address) else {
                continue;
            };
            let at = if i == 0 { addr } else { addr.wrapping_sub(1) };
            let Some((path, base)) = crate::images::image_at(live.pid, at) else {
                continue;
            };
            let Some(m) = tracer.module_index(&path) else {
                continue;
            };
            let loc = tracer.locate(m, at - base);
            if let (Some(file), Some(line)) = (loc.file, loc.line) {
                f["file"] = json!(file);
                f["line"] = json!(line);
                if let Some(name) = loc.function {
                    f["name"] = json!(name);
                }
            }
        }
    }

    /// Walks the crashed thread's stack with the CFI of each image (the
    /// agent's walk guesses through code without frame pointers, such as
    /// Rust's std): the frame to show (`{function, file, line, frameIndex,
    /// locals}` of the innermost frame of the program's own code, else the
    /// innermost with line info) and the return addresses walked.
    pub(super) fn unwind_crash(&self, live: &Live, crash: &Value) -> Option<CrashUnwind> {
        let mut regs = frames::registers_from(&crash["registers"]);
        let mem = Mem::open(live.pid, false).ok()?;
        let mut guard = live.tracer.lock().expect("tracer lock");
        if guard.is_none() {
            *guard = Some(self.new_tracer(live).ok()?);
        }
        let tracer = guard.as_mut()?;
        let root = tracer.project_root.clone();
        let executable = tracer.modules.first().map(|m| m.path().to_path_buf());
        let reported: Vec<u64> = crash["backtrace"]
            .as_array()
            .map(|frames| {
                frames
                    .iter()
                    .filter_map(|f| trace::parse_hex_address(f["address"].as_str()?))
                    .collect()
            })
            .unwrap_or_default();
        let mut fallback = None;
        let mut out = CrashUnwind::default();
        for depth in 0..MAX_BACKTRACE {
            let Some(pc) = regs.get(&16).copied() else {
                break;
            };
            // A return address points after its call: look the call up.
            let at = if depth == 0 { pc } else { pc.wrapping_sub(1) };
            let Some((path, base)) = crate::images::image_at(live.pid, at) else {
                break;
            };
            if out.rest_from.is_none() {
                out.pcs.push(pc);
            }
            let loc = tracer
                .module_index(&path)
                .map(|m| tracer.locate(m, at - base));
            if out.frame.is_none()
                && depth < MAX_UNWIND
                && let Some(loc) = &loc
                && let (Some(fi), Some(line)) = (loc.function_index, loc.line)
                && let Some(layout) = tracer.frame_layout(loc.module, fi, loc.offset)
            {
                let frame = StoppedFrame {
                    regs: regs.clone(),
                    image_base: base,
                };
                let locals: Vec<Value> = layout
                    .vars
                    .iter()
                    .take(MAX_LOCALS)
                    .map(|v| {
                        let mut out = read_local(&mem, &layout, &frame, &v.name, &[], 2)
                            .unwrap_or_else(|e| json!({"error": e}));
                        out["name"] = json!(v.name);
                        if v.parameter {
                            out["parameter"] = json!(true);
                        }
                        out
                    })
                    .collect();
                let found = json!({
                    "function": loc.function,
                    "file": loc.file,
                    "line": line,
                    "frameIndex": depth,
                    "locals": locals,
                });
                let file = loc.file.as_deref().unwrap_or("");
                let own = std::path::Path::new(file).starts_with(&root)
                    || (executable.as_deref() == Some(path.as_path())
                        && !TOOLCHAIN_SOURCES.iter().any(|p| file.starts_with(p)));
                if own {
                    out.frame = Some(found);
                } else {
                    fallback.get_or_insert(found);
                }
            }
            let Some(unwind) = tracer.unwind_rule(&path, at - base) else {
                break;
            };
            let Some(mut caller) = super::cfi::caller_frame(&unwind, &regs, &mem) else {
                break;
            };
            if crate::images::image_at(live.pid, caller.ret.wrapping_sub(1)).is_none() {
                // A return address Frida swapped for one of its trampolines
                // (it intercepts abort): the agent's backtrace has the real one.
                // Past it the frame sizes are not known for sure (the
                // tracer's hook adds a frame): the backtrace goes on with
                // the agent's walk.
                if out.rest_from.is_none() {
                    out.rest_from = Some(pc);
                }
                let Some(j) = reported.iter().position(|a| *a == pc) else {
                    break;
                };
                let Some(real) = reported.get(j + 1) else {
                    break;
                };
                caller.ret = *real;
            }
            caller.apply(&mut regs);
        }
        if out.frame.is_none() {
            out.frame = fallback;
        }
        Some(out)
    }

    /// Replaces the agent's backtrace by the CFI walk where that walk got
    /// past the crashing frame, keeping the agent's frames beyond a point
    /// the walk could not cross.
    pub(super) fn merge_backtrace(&self, live: &Live, backtrace: &mut Value, walk: &CrashUnwind) {
        if walk.pcs.len() < 2 {
            return;
        }
        let reported: Vec<Value> = backtrace.as_array().cloned().unwrap_or_default();
        let address_of = |f: &Value| f["address"].as_str().and_then(trace::parse_hex_address);
        let mut frames: Vec<Value> = walk
            .pcs
            .iter()
            .map(|pc| {
                reported
                    .iter()
                    .find(|f| address_of(f) == Some(*pc))
                    .cloned()
                    .unwrap_or_else(|| {
                        let module = crate::images::image_at(live.pid, pc.wrapping_sub(1))
                            .and_then(|(p, _)| {
                                p.file_name().map(|n| n.to_string_lossy().into_owned())
                            });
                        json!({"address": format!("{pc:#x}"), "module": module,
                               "name": null, "file": null, "line": null})
                    })
            })
            .collect();
        if let Some(stop) = walk.rest_from
            && let Some(j) = reported.iter().position(|f| address_of(f) == Some(stop))
        {
            frames.extend(reported.iter().skip(j + 1).cloned());
        }
        frames.truncate(MAX_BACKTRACE);
        *backtrace = Value::Array(frames);
    }
}

/// What [`SessionManager::unwind_crash`] found.
#[derive(Default)]
pub(super) struct CrashUnwind {
    /// The frame whose locals are shown.
    pub frame: Option<Value>,
    /// The pc, then the return addresses, while the walk is sure of them.
    pub pcs: Vec<u64>,
    /// The last sure pc, when the walk went on past a return address
    /// outside every image (a trampoline, the tracer's hook).
    pub rest_from: Option<u64>,
}
