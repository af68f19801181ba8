//! The crashing frame's locals: from the registers the agent's exception
//! handler reports, walk out (CFI from `.eh_frame`) to the innermost frame
//! of the program's own code (the executable, or source under the project
//! root) — the
//! faulting function itself, or the caller of `abort()` — and read its
//! parameters and locals through their DWARF locations while the crashing
//! thread is still blocked in the handler. Without such a frame, the
//! innermost frame with line info (a library's) is shown.

use super::breakpoints::{StoppedFrame, read_local};
use super::memory::Mem;
use super::{Live, SessionManager};
use crate::frames;
use crate::trace;
use serde_json::{Value, json};

/// Frames walked looking for one with debug info.
const MAX_UNWIND: usize = 16;
/// Locals shown.
const MAX_LOCALS: usize = 32;

impl SessionManager {
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
            let Some((path, base)) = super::hooks::image_at(live.pid, at) else {
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

    /// `{function, file, line, frameIndex, locals}` of the innermost frame
    /// with line info, or `None` when there is none (or memory is unreadable).
    pub(super) fn crash_frame(&self, live: &Live, crash: &Value) -> Option<Value> {
        let mut regs = frames::registers_from(&crash["registers"]);
        let mem = Mem::open(live.pid, false).ok()?;
        let mut guard = live.tracer.lock().expect("tracer lock");
        if guard.is_none() {
            *guard = Some(self.new_tracer(live).ok()?);
        }
        let tracer = guard.as_mut()?;
        let root = tracer.project_root.clone();
        let executable = tracer.modules.first().map(|m| m.index().path.clone());
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
        for depth in 0..MAX_UNWIND {
            let Some(pc) = regs.get(&16).copied() else {
                break;
            };
            // A return address points after its call: look the call up.
            let at = if depth == 0 { pc } else { pc.wrapping_sub(1) };
            let Some((path, base)) = super::hooks::image_at(live.pid, at) else {
                break;
            };
            let loc = tracer
                .module_index(&path)
                .map(|m| tracer.locate(m, at - base));
            if let Some(loc) = &loc
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
                let own = executable.as_deref() == Some(path.as_path())
                    || loc
                        .file
                        .as_deref()
                        .is_some_and(|f| std::path::Path::new(f).starts_with(&root));
                if own {
                    return Some(found);
                }
                fallback.get_or_insert(found);
            }
            let Some(unwind) = tracer.unwind_rule(&path, at - base) else {
                break;
            };
            let Some(cfa) = regs
                .get(&unwind.cfa.register)
                .map(|r| r.wrapping_add(unwind.cfa.offset as u64))
            else {
                break;
            };
            let Ok(mut ret) = mem.read_u64(cfa.wrapping_sub(8)) else {
                break;
            };
            if super::hooks::image_at(live.pid, ret.wrapping_sub(1)).is_none() {
                // A return address Frida swapped for one of its trampolines
                // (it intercepts abort): the agent's backtrace has the real one.
                let Some(j) = reported.iter().position(|a| *a == pc) else {
                    break;
                };
                let Some(real) = reported.get(j + 1) else {
                    break;
                };
                ret = *real;
            }
            if let Some(o) = unwind.rbp_saved_at {
                let Ok(rbp) = mem.read_u64(cfa.wrapping_add(o as u64)) else {
                    break;
                };
                regs.insert(6, rbp);
            }
            regs.insert(7, cfa);
            regs.insert(16, ret);
        }
        fallback
    }
}
