//! Tracing on a live session: patterns in, hooks out through the agent, and
//! what the agent reports back (see `crate::trace` for the pure planning).

use super::{Live, SessionManager, parse_patterns, store_err, watch_target};
use super::{javascript_hooks, python_hooks};
use crate::SessionError;
use crate::trace::{self, TraceOptions, TraceResponse, Tracer};
use std::path::{Path, PathBuf};
use std::time::Duration;
use strobe_core::Settings;
use strobe_frida::agent_protocol::{
    DaemonMessage, ExprsUpdated, FunctionPlan, HookChange, HookFunctions, HookTarget, HooksRequest,
    HooksUpdated, JsTarget, PlansUpdated, PyTarget,
};
use strobe_symbols::Language;

impl SessionManager {
    pub(super) fn symbol_cache_dir(&self) -> PathBuf {
        self.home.root().join("symbol-cache")
    }

    /// Resolves and applies pattern (and watch, sampling, depth) changes on
    /// a live session.
    pub(super) fn apply_patterns(
        &self,
        live: &Live,
        add: &[strobe_symbols::Pattern],
        remove: &[String],
        opts: &TraceOptions,
        settings: &Settings,
    ) -> Result<ApplyResult, SessionError> {
        let timeout = Duration::from_millis(settings.bridge_request_timeout_ms);
        let mut guard = live.tracer.lock().expect("tracer lock");
        if guard.is_none() {
            *guard = Some(self.new_tracer(live)?);
        }
        let tracer = guard.as_mut().expect("just set");
        self.catch_up(live, tracer);
        if let Some(on) = opts.sampling {
            tracer.sampling = on;
        }
        let mut replan = false;
        if let Some(d) = opts.serialization_depth
            && d != tracer.depth
        {
            tracer.depth = d;
            replan = true;
        }
        let mut warnings = Vec::new();
        for missing in tracer.remove_watches(&opts.watch_remove) {
            warnings.push(format!("watch {missing:?} was not active; nothing removed"));
        }
        replan |= !opts.watch_remove.is_empty();
        let base = |path: &Path| self.image_base(live, path, timeout);
        for w in &opts.watch_add {
            let target = watch_target(w)?;
            let on = parse_patterns(&w.on)?;
            match tracer.add_watch(w.label.clone(), target, on, &base) {
                Ok(()) => replan = true,
                Err(e) if opts.lenient_watches => {
                    warnings.push(format!("staged watch not applied: {e}"))
                }
                Err(e) => return Err(SessionError::validation(e)),
            }
        }
        if replan || !opts.watch_remove.is_empty() {
            // Expression watches are compiled by the agent; one that does not
            // compile is refused (or, staged, dropped with a warning).
            // In a Python program they are Python, for the Python tracer.
            // In a Node program, JavaScript run by Node's runtime.
            let exprs = tracer.expr_watches();
            let to = if tracer.has_language(Language::Python) {
                Some(python_hooks::PYTHON_TRACER.to_string())
            } else if live.probed.is_some() {
                Some(javascript_hooks::JAVASCRIPT_TRACER.to_string())
            } else {
                None
            };
            let r: ExprsUpdated = self.agent_request(
                live,
                |id| DaemonMessage::Exprs {
                    id,
                    tracer: to,
                    exprs,
                },
                timeout,
            )?;
            let bad = r.errors;
            if !bad.is_empty() {
                let labels: Vec<String> = bad.iter().map(|b| b.0.clone()).collect();
                tracer.remove_watches(&labels);
                let text = bad
                    .iter()
                    .map(|(l, e)| format!("watch {l:?}: the expression does not compile ({e})"))
                    .collect::<Vec<_>>()
                    .join("; ");
                if opts.lenient_watches {
                    warnings.push(format!("staged watch not applied: {text}"));
                } else {
                    return Err(SessionError::validation(text));
                }
            }
        }
        if let Some(probed) = &live.probed {
            let root = Path::new(&live.project_root);
            warnings.extend(javascript_hooks::probe_named_packages(probed, add, root));
        }
        let plan = tracer.plan(add, remove);
        if !plan.new_rows.is_empty() {
            self.store
                .register_functions(live.key, plan.new_rows.clone())
                .map_err(store_err)?;
        }
        warnings.extend(plan.warnings);
        if plan.to_hook.len() > trace::LIGHT_MODE_ABOVE {
            let ids: Vec<u32> = plan.to_hook.iter().map(|h| h.id).collect();
            tracer.set_light(&ids);
            warnings.push(format!(
                "{} functions matched: they are traced in light mode (name, timing, thread, raw first argument \
                 and return register; no typed arguments or watches). Narrow the pattern (under {}) for typed values.",
                plan.to_hook.len(),
                trace::LIGHT_MODE_ABOVE
            ));
        }
        let mut installed = Vec::new();
        let mut failed: Vec<(u32, String)> = Vec::new();
        let watch = tracer.needs_library_watch();
        // One request per image; always at least one, which also tells the
        // agent whether libraries loaded later need checking.
        let mut groups: Vec<(Option<String>, Vec<HookTarget>)> = Vec::new();
        let mut planned = 0usize;
        let mut python: Vec<PyTarget> = Vec::new();
        let mut javascript: Vec<JsTarget> = Vec::new();
        for h in &plan.to_hook {
            if h.language == Language::JavaScript {
                match javascript_hooks::js_target(live.probed.as_deref(), tracer, h.id) {
                    Ok(t) => javascript.push(t),
                    Err(f) => failed.push(f),
                }
                continue;
            }
            if h.language == Language::Python {
                match python_hooks::py_target(tracer, h.id) {
                    Ok(t) => python.push(t),
                    Err(f) => failed.push(f),
                }
                continue;
            }
            let m = h.module.to_string_lossy().into_owned();
            let key = (m != live.binary_path).then_some(m);
            let target = match hook_target(live, tracer, h) {
                Ok((target, planned_with)) => {
                    if let Some(truncated) = planned_with {
                        planned += 1;
                        if truncated {
                            warnings.push(format!(
                                "{}: arguments have more pointers than one call captures; some are shown as addresses",
                                tracer.name_of(h.id).unwrap_or("?")
                            ));
                        }
                    }
                    target
                }
                Err(why) => {
                    failed.push((h.id, why));
                    continue;
                }
            };
            match groups.iter_mut().find(|g| g.0 == key) {
                Some(g) => g.1.push(target),
                None => groups.push((key, vec![target])),
            }
        }
        tracing::debug!("session {}: {planned} typed capture plans", live.id);
        if groups.is_empty() {
            groups.push((None, Vec::new()));
        }
        for (module, functions) in groups {
            let change = HookChange::Add {
                functions: HookFunctions::Native(functions),
                module,
                sampling: tracer.sampling,
                hot_calls_per_second: settings.hot_calls_per_second,
                library_wait_ms: settings.library_wait_ms,
                runtime: None,
                depth: None,
            };
            let sent = std::time::Instant::now();
            let r = self.hooks_request(live, None, change, watch, timeout)?;
            tracing::debug!(
                "session {}: agent hooked {} functions in {} ms ({} ms round trip)",
                live.id,
                r.installed.len(),
                r.ms,
                sent.elapsed().as_millis()
            );
            let (ok, bad) = hook_outcome(&r);
            installed.extend(ok);
            failed.extend(bad);
        }
        if !python.is_empty() && !tracer.expr_watches().is_empty() {
            // The new functions' watch lists first: their first calls read them.
            let ids: Vec<u32> = python.iter().map(|t| t.0).collect();
            self.python_watch_plans(live, tracer, &ids, timeout)?;
        }
        if let Some((ok, bad)) = self.hook_python(live, tracer, python, watch, settings, timeout)? {
            installed.extend(ok);
            failed.extend(bad);
        }
        if live.probed.is_some() && !javascript.is_empty() && !tracer.expr_watches().is_empty() {
            // The new functions' watch lists first: their first calls read them.
            let ids: Vec<u32> = javascript.iter().map(|t| t.0).collect();
            self.javascript_watch_plans(live, tracer, &ids, timeout)?;
        }
        if let Some((ok, bad)) = self.hook_javascript(
            live,
            tracer,
            javascript,
            replan && live.probed.is_some(),
            watch,
            settings,
            timeout,
        )? {
            installed.extend(ok);
            failed.extend(bad);
        }
        let (mut py_unhook, mut js_unhook, mut native_unhook) =
            (Vec::new(), Vec::new(), Vec::new());
        for id in &plan.to_unhook {
            match tracer.language_of(*id) {
                Some(Language::Python) => py_unhook.push(*id),
                Some(Language::JavaScript) => js_unhook.push(*id),
                _ => native_unhook.push(*id),
            }
        }
        for (name, functions) in [
            (None, native_unhook),
            (Some(python_hooks::PYTHON_TRACER), py_unhook),
            (Some(javascript_hooks::JAVASCRIPT_TRACER), js_unhook),
        ] {
            if !functions.is_empty() {
                let change = HookChange::Remove { functions };
                self.hooks_request(live, name, change, watch, timeout)?;
            }
        }
        let fresh: std::collections::HashSet<u32> = plan.to_hook.iter().map(|h| h.id).collect();
        tracer.applied(&installed, &failed, &plan.to_unhook);
        if replan {
            // Watches or depth changed: every other hooked function gets a new plan.
            let mut plans = Vec::new();
            for id in tracer.planned_functions() {
                if fresh.contains(&id)
                    || matches!(
                        tracer.language_of(id),
                        Some(Language::Python | Language::JavaScript)
                    )
                {
                    continue;
                }
                let wire = register_plan(live, tracer, id).map(|(wire, _)| wire);
                plans.push(FunctionPlan(id, wire));
            }
            if !plans.is_empty() {
                self.agent_request::<PlansUpdated>(
                    live,
                    |id| DaemonMessage::Plans {
                        id,
                        tracer: None,
                        plans,
                    },
                    timeout,
                )?;
            }
        }
        if tracer.has_language(Language::Python) && replan {
            self.python_watch_plans(live, tracer, &[], timeout)?;
        }
        if live.probed.is_some() && replan {
            self.javascript_watch_plans(live, tracer, &[], timeout)?;
        }
        save_captures(&self.store, live, tracer);
        if !tracer.active_watches().is_empty() && tracer.hooked_count() == 0 {
            warnings.push(
                "watches are read when traced functions enter and exit, and no function is traced: add a \
                 pattern, or give the watch an `on` pattern"
                    .into(),
            );
        }
        let (failed, python_warning) = python_hooks::python_failures(tracer, failed);
        warnings.extend(python_warning);
        let (failed, js_warning) = javascript_hooks::javascript_failures(tracer, failed);
        warnings.extend(js_warning);
        if !failed.is_empty() {
            let examples: Vec<String> = failed
                .iter()
                .take(5)
                .map(|(id, why)| format!("{} ({why})", tracer.name_of(*id).unwrap_or("?")))
                .collect();
            warnings.push(format!(
                "{} matched functions could not be hooked, usually because they are too small to patch \
                 (a few bytes, e.g. at -O2); trace their callers instead. Examples: {}",
                failed.len(),
                examples.join("; ")
            ));
        }
        let stats = live.trace_stats.lock().expect("stats lock");
        let drops = tracer.drops(&stats);
        let sampled: Vec<trace::SampledFunction> = tracer.sampled(&stats);
        if !sampled.is_empty() {
            warnings.push(format!(
                "{} hot function(s) (over {} calls/s) are sampled: only 1 in N calls is recorded and those \
                 events carry sampled: true (see sampledFunctions). Narrow the pattern, or pass sampling: false \
                 to record every call at the cost of slowing the program (hot calls are then recorded without \
                 typed values, by name, timing and raw registers).",
                sampled.len(),
                settings.hot_calls_per_second
            ));
        }
        Ok(ApplyResult {
            matched: plan.matched,
            hooked: tracer.hooked_count(),
            patterns: tracer.patterns(),
            watches: tracer.active_watches(),
            light: tracer.light_count(),
            warnings,
            drops,
            sampled,
        })
    }

    /// Sends one hooks change to the agent's `tracer` (None: the native
    /// one) and waits for its answer.
    pub(super) fn hooks_request(
        &self,
        live: &Live,
        tracer: Option<&str>,
        change: HookChange,
        watch_libraries: bool,
        timeout: Duration,
    ) -> Result<HooksUpdated, SessionError> {
        self.agent_request(
            live,
            |id| {
                DaemonMessage::Hooks(HooksRequest {
                    id,
                    tracer: tracer.map(str::to_string),
                    change,
                    watch_libraries,
                })
            },
            timeout,
        )
    }

    /// `debug_trace`: with a session, changes its hooks live; without one,
    /// stages patterns (and options, watches) for the next launch.
    pub fn trace(
        &self,
        session_id: Option<&str>,
        add: &[String],
        remove: &[String],
        opts: &TraceOptions,
        settings: &Settings,
    ) -> Result<TraceResponse, SessionError> {
        let parsed = parse_patterns(add)?;
        if let Some(d) = opts.serialization_depth
            && !(1..=10).contains(&d)
        {
            return Err(SessionError::validation(format!(
                "'serializationDepth' must be 1–10 (default 3), got {d}"
            )));
        }
        for w in &opts.watch_add {
            watch_target(w)?;
            parse_patterns(&w.on)?;
        }
        if opts.watch_add.len() > trace::MAX_WATCHES {
            return Err(SessionError::validation(format!(
                "at most {} watches per session",
                trace::MAX_WATCHES
            )));
        }
        let Some(id) = session_id else {
            let mut staged = self.pending_options.lock().expect("pending lock");
            if opts.sampling.is_some() {
                staged.sampling = opts.sampling;
            }
            if opts.serialization_depth.is_some() {
                staged.serialization_depth = opts.serialization_depth;
            }
            let mut warnings = Vec::new();
            for l in &opts.watch_remove {
                let before = staged.watch_add.len();
                staged.watch_add.retain(|w| {
                    w.label
                        .as_ref()
                        .or(w.variable.as_ref())
                        .or(w.address.as_ref())
                        .or(w.expr.as_ref())
                        != Some(l)
                });
                if staged.watch_add.len() == before {
                    warnings.push(format!("watch {l:?} was not pending; nothing removed"));
                }
            }
            staged.watch_add.extend(opts.watch_add.iter().cloned());
            if staged.watch_add.len() > trace::MAX_WATCHES {
                staged.watch_add.truncate(trace::MAX_WATCHES);
                return Err(SessionError::validation(format!(
                    "at most {} watches per session; the extra ones were not staged",
                    trace::MAX_WATCHES
                )));
            }
            let active_watches = staged
                .watch_add
                .iter()
                .map(|w| trace::ActiveWatch {
                    label: w
                        .label
                        .clone()
                        .or(w.variable.clone())
                        .or(w.address.clone())
                        .or(w.expr.clone())
                        .unwrap_or_default(),
                    target: w
                        .variable
                        .clone()
                        .or(w.address.clone())
                        .or(w.expr.clone())
                        .unwrap_or_default(),
                    ty: if w.expr.is_some() {
                        "javascript".into()
                    } else {
                        w.type_hint
                            .clone()
                            .unwrap_or_else(|| "(from debug info at launch)".into())
                    },
                    on: w.on.clone(),
                })
                .collect();
            drop(staged);
            let mut pending = self.pending.lock().expect("pending lock");
            for r in remove {
                let before = pending.len();
                pending.retain(|p| p.text() != *r);
                if pending.len() == before {
                    warnings.push(format!("pattern {r:?} was not pending; nothing removed"));
                }
            }
            for p in parsed {
                if !pending.contains(&p) {
                    pending.push(p);
                }
            }
            return Ok(TraceResponse {
                mode: "pending",
                active_patterns: pending.iter().map(|p| p.text()).collect(),
                hooked_functions: 0,
                matched_functions: None,
                active_watches,
                warnings,
                event_limit: settings.max_events_per_session,
                dropped_events: Vec::new(),
                sampled_functions: Vec::new(),
                light_mode_functions: None,
                status: "Staged: these patterns are hooked before main() at the next debug_launch. \
                         Recommended instead: launch without patterns, read stderr/stdout, then add \
                         patterns to the running session with sessionId."
                    .into(),
            });
        };
        let live = self.live(id).ok_or_else(|| match self.store.session(id) {
            Ok(Some(_)) => SessionError::exited(format!("session '{id}' is not running any more; its events can still be queried. Launch again to trace."),
            ),
            _ => SessionError::session_not_found(id),
        })?;
        // Every process of the session takes the change (forked and exec'd
        // ones too); the first one's answer is the response.
        let images = self.active_images(&live);
        let Some(first) = images.first() else {
            return Err(SessionError::exited(format!(
                "the program of session '{id}' has ended; its events can still be queried. Launch again to trace."
            )));
        };
        let mut r = self.apply_patterns(first, &parsed, remove, opts, settings)?;
        live.desired
            .lock()
            .expect("desired lock")
            .update(&parsed, remove, opts);
        for other in &images[1..] {
            match self.apply_patterns(other, &parsed, remove, opts, settings) {
                Ok(o) => r.warnings.extend(
                    o.warnings
                        .into_iter()
                        .filter(|w| !r.warnings.contains(w))
                        .collect::<Vec<_>>(),
                ),
                Err(SessionError::Exited(_)) => {}
                Err(e) => r.warnings.push(format!(
                    "process {} ({}): {}",
                    other.pid,
                    other.origin,
                    e.message()
                )),
            }
        }
        let status = if r.hooked == 0 && !r.patterns.is_empty() && r.matched > 0 {
            format!(
                "No function is hooked: the patterns matched {} function(s), but none could be hooked; the \
                 warnings say why.",
                r.matched
            )
        } else if r.hooked == 0 && !r.patterns.is_empty() {
            "No function is hooked: the patterns matched nothing hookable (see warnings). Check names with a \
             wider pattern such as \"**::name\" or \"@file:part.c\"; functions inlined by the optimizer \
             cannot be hooked (build with -O0 or trace the caller)."
                .to_string()
        } else if r.patterns.is_empty() && r.hooked == 0 {
            "No patterns active; tracing is off.".to_string()
        } else {
            format!(
                "Hooked {} function(s); their calls are recorded from now on with typed arguments and return \
                 values (verbose: true shows them). Query with debug_query {{sessionId: \"{id}\", eventType: \
                 \"function_exit\"}} (durations, returns), filter by function {{function: {{contains: \"...\"}}}}, \
                 or summarize with aggregate: \"function\".",
                r.hooked
            )
        };
        Ok(TraceResponse {
            mode: "runtime",
            active_patterns: r.patterns,
            hooked_functions: r.hooked,
            matched_functions: (r.matched != r.hooked).then_some(r.matched),
            active_watches: r.watches,
            warnings: r.warnings,
            event_limit: settings.max_events_per_session,
            status,
            dropped_events: r.drops,
            sampled_functions: r.sampled,
            light_mode_functions: (r.light > 0).then_some(r.light),
        })
    }
}

/// Function ids the agent installed, and those that failed with the reason.
pub(super) type HookOutcome = (Vec<u32>, Vec<(u32, String)>);

/// Installed ids and failures from an agent's `hooks_updated` answer.
pub(super) fn hook_outcome(r: &HooksUpdated) -> HookOutcome {
    (r.installed.clone(), r.failed.clone())
}

/// What applying pattern changes did.
pub(super) struct ApplyResult {
    pub(super) matched: usize,
    pub(super) hooked: usize,
    pub(super) patterns: Vec<String>,
    pub(super) warnings: Vec<String>,
    pub(super) watches: Vec<trace::ActiveWatch>,
    pub(super) light: usize,
    pub(super) drops: Vec<trace::FunctionDrops>,
    pub(super) sampled: Vec<trace::SampledFunction>,
}

/// What the agent needs to hook function `id` at `off` in its image
/// (see [`HookTarget`]), and, when it has a
/// capture plan, whether that plan left pointers unfollowed.
pub(super) fn hook_target(
    live: &Live,
    tracer: &mut Tracer,
    h: &trace::HookTarget,
) -> Result<(HookTarget, Option<bool>), String> {
    if h.language != Language::Native {
        // Only native code has a tracer in the agent so far.
        return Err(format!("the agent cannot trace {} code yet", h.language));
    }
    let (id, off) = (h.id, h.offset);
    let copy = tracer.stack_copy_bytes(id).ok_or_else(|| {
        "its arguments may take more than 64 KiB of stack, more than the hook copies per call"
            .to_string()
    })?;
    let extent = tracer.entry_extent(id);
    Ok(match register_plan(live, tracer, id) {
        Some((wire, truncated)) => (
            HookTarget(id, off, Some(wire), copy, extent),
            Some(truncated),
        ),
        None => (HookTarget(id, off, None, copy, extent), None),
    })
}

/// Builds a function's capture plan and registers it for decoding; returns
/// the plan's bytes for the agent and whether pointers were left unfollowed
/// (`None`: traced by name and timing only).
fn register_plan(live: &Live, tracer: &mut Tracer, id: u32) -> Option<(Vec<u8>, bool)> {
    let d = tracer.decoder_for(id)?;
    let out = (d.plan.wire(), d.plan.truncated);
    live.decoders
        .write()
        .expect("decoders lock")
        .insert((id, d.plan.id), d.clone());
    live.unsaved
        .lock()
        .expect("unsaved lock")
        .plans
        .push((id, d));
    Some(out)
}

/// Stores the plans registered since the last call, with the type tables of
/// their images where those grew, so that the session's typed values can be
/// rendered by a later daemon too. Called once per change of hooks or plans
/// (not per plan: a table is written whole, at most once per change).
pub(super) fn save_captures(store: &strobe_store::Store, live: &Live, tracer: &mut Tracer) {
    let (plans, grown) = {
        let mut unsaved = live.unsaved.lock().expect("unsaved lock");
        let plans = std::mem::take(&mut unsaved.plans);
        if plans.is_empty() {
            return;
        }
        let mut modules: Vec<u32> = plans
            .iter()
            .flat_map(|(_, d)| d.module.into_iter().chain(d.plan.watch_modules()))
            .collect();
        modules.sort_unstable();
        modules.dedup();
        let mut grown = Vec::new();
        for m in modules {
            if let Some(t) = tracer.latest_types(m)
                && unsaved.table_lens.get(&m).is_none_or(|len| *len < t.len())
            {
                unsaved.table_lens.insert(m, t.len());
                grown.push((m, t));
            }
        }
        (plans, grown)
    };
    let blobs = trace::decoders_to_blobs(&plans, &grown);
    if let Err(e) = store.put_captures(live.key, blobs) {
        tracing::warn!(
            "session {}: capture plans not stored ({e}); typed values will show only while this daemon runs",
            live.id
        );
    }
}

/// A function the agent could not trace, and why.
pub(super) type Failure = (u32, String);

/// The failures of functions of `language`, and the rest.
pub(super) fn split_failures(
    tracer: &Tracer,
    failed: Vec<Failure>,
    language: Language,
) -> (Vec<Failure>, Vec<Failure>) {
    failed
        .into_iter()
        .partition(|(id, _)| tracer.language_of(*id) == Some(language))
}
