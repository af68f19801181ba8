//! `debug_continue {action: "pause"}`: pausing a thread that runs. Strobe
//! has no all-stop and never stops a thread from outside (a ptrace stop
//! makes calls such as `epoll_wait` fail with EINTR in the program), so a
//! pause is cooperative: a thread waiting in a system call is paused where
//! that call returns into the program's own code. Its stack is walked from
//! the kernel's record of the call (`/proc/PID/task/TID/syscall`: stack
//! pointer and program counter) with each image's CFI, and a one-shot stop,
//! checked against the frame, is planted at each return address in the
//! program's own code (the innermost is reached first). A thread busy in
//! user code (not in a system call) cannot be paused this way: the error
//! says to set a breakpoint instead.

use super::*;
use strobe_frida::agent_protocol::PauseArmed;

/// Frames walked from the system call looking for the program's code.
const MAX_WALK: usize = 64;
/// Stops planted (the innermost frames of the program's own code).
const MAX_STOPS: usize = 4;

/// Where a thread waits: its stack pointer and program counter, or why it
/// has none (it runs user code).
fn syscall_registers(pid: u32, tid: u32) -> Result<(u64, u64), String> {
    let path = format!("/proc/{pid}/task/{tid}/syscall");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let fields: Vec<&str> = text.split_whitespace().collect();
    if fields.first() == Some(&"running") {
        return Err("running".into());
    }
    let hex = |s: &&str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    match (
        fields.len(),
        fields.iter().rev().nth(1).and_then(hex),
        fields.last().and_then(hex),
    ) {
        (n, Some(sp), Some(pc)) if n >= 3 => Ok((sp, pc)),
        _ => Err(format!("unexpected {path}: {text:?}")),
    }
}

impl SessionManager {
    /// Pauses running thread `tid` of session `id` where its current system
    /// call returns into the program's code; waits up to `timeout_ms` for
    /// it (a pause that has not happened by then stays armed).
    pub fn pause_thread(
        &self,
        id: &str,
        tid: Option<u32>,
        timeout_ms: Option<u64>,
    ) -> Result<ContinueResponse, SessionError> {
        let timeout_ms = continue_timeout(timeout_ms)?;
        let live = self.debug_live(id)?;
        let tid = tid.ok_or_else(|| {
            err("pause needs 'threadId' (Strobe pauses one thread; the others run on)")
        })?;
        if !std::path::Path::new(&format!("/proc/{}/task/{tid}", live.pid)).exists() {
            return Err(err(format!(
                "thread {tid} is not a thread of session '{id}' (process {})",
                live.pid
            )));
        }
        let before = {
            let st = live.debug.lock().expect("debug lock");
            if st.paused.contains_key(&tid) {
                return Err(err(format!("thread {tid} is already paused")));
            }
            st.pauses
        };
        let (sp, pc) = syscall_registers(live.pid, tid).map_err(|e| {
            if e == "running" {
                err(format!(
                    "thread {tid} is running the program's code, not waiting in a system call: Strobe pauses a \
                     thread where its system call returns and never stops it from outside; set a breakpoint \
                     (debug_breakpoint) in the code it runs instead"
                ))
            } else {
                SessionError::internal(e)
            }
        })?;
        let (stops, shown) = self.return_stops(&live, sp, pc)?;
        if stops.is_empty() {
            return Err(err(format!(
                "thread {tid} waits in a system call with none of the program's own code (with line info) on its \
                 stack within {MAX_WALK} frames: there is nowhere to pause it; set a breakpoint instead"
            )));
        }
        live.debug.lock().expect("debug lock").pausing.insert(tid);
        let armed = self.agent_request::<PauseArmed>(
            &live,
            |rid| DaemonMessage::PauseThread {
                id: rid,
                tid,
                stops,
            },
            Duration::from_secs(10),
        );
        let failure = match armed {
            Ok(PauseArmed { error: Some(e), .. }) => Some(e),
            Ok(PauseArmed { failed, .. }) if failed.len() == shown.len() => Some(failed.join("; ")),
            Ok(_) => None,
            Err(e) => Some(e.message().to_string()),
        };
        if let Some(e) = failure {
            live.debug.lock().expect("debug lock").pausing.remove(&tid);
            return Err(SessionError::internal(format!(
                "the pause could not be armed: {e}"
            )));
        }
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let mut st = live.debug.lock().expect("debug lock");
        loop {
            if let Some(p) = st.paused.get(&tid).filter(|p| p.seq > before).cloned() {
                let others = st.paused.keys().copied().filter(|t| *t != tid).collect();
                let message = format!("thread {tid} paused in {}", where_text(&p));
                return Ok(ContinueResponse {
                    status: "paused",
                    paused: Some(p),
                    resumed: Vec::new(),
                    other_paused: others,
                    message,
                });
            }
            if live.life.lock().expect("lifecycle lock").ended {
                return Ok(ContinueResponse::exited(
                    Vec::new(),
                    "the process ended before the thread paused",
                ));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(ContinueResponse {
                    status: "running",
                    paused: None,
                    resumed: Vec::new(),
                    other_paused: st.paused.keys().copied().collect(),
                    message: format!(
                        "thread {tid} still waits in its system call; the pause stays armed and happens when it returns to {} \
                         (debug_session status shows it then)",
                        shown.join(" or ")
                    ),
                });
            }
            st = wait_debug_change(&live, st, deadline);
        }
    }

    /// The one-shot stops of a pause: the return addresses in the program's
    /// own code of the frames above a system call at `sp`/`pc`, each checked
    /// against its frame (the stack pointer it returns with), innermost
    /// first; and each as `function (file:line)`.
    fn return_stops(
        &self,
        live: &Live,
        sp: u64,
        pc: u64,
    ) -> Result<(Vec<StepStop>, Vec<String>), SessionError> {
        let mem = Mem::open(live.pid, false)?;
        let mut guard = live.tracer.lock().expect("tracer lock");
        if guard.is_none() {
            *guard = Some(self.new_tracer(live)?);
        }
        let tracer = guard.as_mut().expect("just set");
        let root = tracer.project_root.clone();
        let executable = tracer.modules.first().map(|m| m.path().to_path_buf());
        let mut regs: Registers = [(7u16, sp), (16u16, pc)].into_iter().collect();
        let (mut stops, mut shown) = (Vec::new(), Vec::new());
        for depth in 0..MAX_WALK {
            let (Some(&pc), Some(&rsp)) = (regs.get(&16), regs.get(&7)) else {
                break;
            };
            let at = if depth == 0 { pc } else { pc.wrapping_sub(1) };
            let Some((path, base)) = crate::images::image_at(live.pid, at) else {
                break;
            };
            if depth > 0
                && let Some(m) = tracer.module_index(&path)
            {
                let loc = tracer.locate(m, at - base);
                let file = loc.file.clone().unwrap_or_default();
                let own = std::path::Path::new(&file).starts_with(&root)
                    || executable.as_deref() == Some(path.as_path());
                if own && loc.line.is_some() {
                    stops.push(StepStop(Hex(pc), Some(FrameCheck(7, 0, Hex(rsp))), false));
                    shown.push(format!(
                        "{} ({}:{})",
                        loc.function.as_deref().unwrap_or("??"),
                        file.rsplit('/').next().unwrap_or(&file),
                        loc.line.unwrap_or(0)
                    ));
                    if stops.len() == MAX_STOPS {
                        break;
                    }
                }
            }
            let Some(unwind) = tracer.unwind_rule(&path, at - base) else {
                break;
            };
            let Some(caller) = crate::manager::cfi::caller_frame(&unwind, &regs, &mem) else {
                break;
            };
            caller.apply(&mut regs);
        }
        Ok((stops, shown))
    }
}
