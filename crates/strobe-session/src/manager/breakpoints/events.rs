//! What the agent reports about breakpoints: a thread paused (resolved
//! off the event thread into a location, typed arguments and a backtrace),
//! a step reaching a call, a logpoint's message, a breakpoint that failed.

use super::*;

impl SessionManager {
    /// The agent reported a paused thread: resolve where, then either show
    /// it or (a step that ended mid-line) step on to the next statement.
    pub(in crate::manager) fn on_paused(&self, live: &Live, paused: &Paused) {
        let tid = paused.tid;
        let address = paused.address.0;
        let hit_ns = paused.ts;
        let regs = frames::registers_from(&json!(paused.registers));
        let mut reason = paused.reason.as_str().to_string();
        // Any stop of a thread asked to pause answers that; a step's stop
        // planted for it is shown as the pause.
        let was_pausing = live.debug.lock().expect("debug lock").pausing.remove(&tid);
        if reason == "step" && was_pausing {
            reason = "pause".into();
        }
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
            locals: None,
            backtrace: json!(paused.backtrace),
            paused_at_ns: hit_ns.saturating_sub(live.origin_ns),
            hit_to_visible_us: 0.0,
            seq: 0,
            regs,
            location: None,
            image_base: 0,
            python: false,
        };
        let settling = live
            .debug
            .lock()
            .expect("debug lock")
            .settling
            .contains(&tid);
        if let Some((path, base)) = crate::images::image_at(live.pid, address) {
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
                    let frame = p.frame();
                    let read = |v: &strobe_symbols::ScopeVariable, depth| {
                        let mut out = read_local(mem, &layout, &frame, &v.name, &[], depth)
                            .unwrap_or_else(|e| json!({"error": e}));
                        out["name"] = json!(v.name);
                        out
                    };
                    p.arguments = layout
                        .vars
                        .iter()
                        .filter(|v| v.parameter)
                        .take(SHOWN_ARGUMENTS)
                        .map(|v| read(v, 2))
                        .collect();
                    // The other variables in scope, one level deep (an
                    // editor expands them through debug_memory).
                    let locals: Vec<Value> = layout
                        .vars
                        .iter()
                        .filter(|v| !v.parameter)
                        .take(SHOWN_LOCALS)
                        .map(|v| read(v, 1))
                        .collect();
                    if !locals.is_empty() {
                        p.locals = Some(locals);
                    }
                }
            }
        }
        self.refine_backtrace(live, &mut p.backtrace);
        let (tid, regs, native) = (p.thread_id, p.regs.clone(), p.location.is_some());
        let seq = self.publish_pause(live, p, paused.hits, hit_ns);
        // The callers' variables cost more than the rest of the pause
        // (about 1.5 ms): added once the pause is visible.
        if native {
            self.add_callers_locals(live, tid, seq, &regs);
        }
    }

    /// Puts the variables of paused thread `tid`'s callers on its
    /// backtrace, if it is still the pause `seq`.
    fn add_callers_locals(&self, live: &Live, tid: u32, seq: u64, regs: &Registers) {
        let Ok(mem) = Mem::open(live.pid, false) else {
            return;
        };
        let found = {
            let mut guard = live.tracer.lock().expect("tracer lock");
            let Some(tracer) = guard.as_mut() else { return };
            outer::callers_locals(live.pid, tracer, &mem, regs)
        };
        if found.is_empty() {
            return;
        }
        let mut st = live.debug.lock().expect("debug lock");
        let Some(p) = st.paused.get_mut(&tid).filter(|p| p.seq == seq) else {
            return;
        };
        for entry in p.backtrace.as_array_mut().into_iter().flatten() {
            let at = entry["address"]
                .as_str()
                .and_then(crate::trace::parse_hex_address);
            if let Some((_, locals)) = found.iter().find(|(a, _)| Some(*a) == at) {
                entry["locals"] = locals.clone();
            }
        }
    }

    /// Makes a paused thread visible (debug_continue's waiters wake up);
    /// the pause's sequence number.
    pub(in crate::manager) fn publish_pause(
        &self,
        live: &Live,
        mut p: PausedThread,
        hits: u64,
        hit_ns: u64,
    ) -> u64 {
        let mut st = live.debug.lock().expect("debug lock");
        st.settling.remove(&p.thread_id);
        if let Some(id) = &p.breakpoint_id
            && let Some(b) = st.breakpoints.iter_mut().find(|b| &b.id == id)
        {
            b.hits = b.hits.max(hits);
        }
        st.pauses += 1;
        p.seq = st.pauses;
        p.hit_to_visible_us = monotonic_ns().saturating_sub(hit_ns) as f64 / 1000.0;
        let seq = p.seq;
        st.paused.insert(p.thread_id, p);
        drop(st);
        live.debug_changed.notify_all();
        seq
    }

    /// A step into reached a call: where the callee's body starts, if it has line info.
    pub(in crate::manager) fn on_step_call(&self, live: &Live, call: &StepCall) {
        let target = call.target.0;
        let mut answer = None;
        if let Some((path, base)) = crate::images::image_at(live.pid, target) {
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
    pub(in crate::manager) fn on_logpoint(&self, live: &Live, logpoint: &Logpoint) {
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
    pub(in crate::manager) fn on_breakpoint_error(&self, live: &Live, error: &BreakpointError) {
        let id = error.id.split('@').next().unwrap_or(&error.id);
        let note = format!(
            "the condition or message failed in the target (the hit does not pause): {}",
            error.error
        );
        let mut st = live.debug.lock().expect("debug lock");
        match st.breakpoints.iter_mut().find(|b| b.id == id) {
            Some(b) => b.note = Some(note),
            // Hit before the call that set it returned: noted as it is listed.
            None => {
                st.early_notes.insert(id.to_string(), note);
            }
        }
    }

    /// The paused frame to read locals from: `thread`, else the only (or
    /// latest) paused thread. `None` when nothing is paused.
    pub(in crate::manager) fn paused_frame(
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
