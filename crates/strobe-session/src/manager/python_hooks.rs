//! The Python side of applying patterns: the targets and run-time patterns
//! the agent's Python tracer gets (agent/src/tracers/python/), and how its
//! failures are told apart from native ones.

use super::hooks::{Failure, HookOutcome, hook_outcome, split_failures};
use super::{Live, SessionManager};
use crate::SessionError;
use crate::trace::Tracer;
use std::time::Duration;
use strobe_core::Settings;
use strobe_frida::agent_protocol::{
    DaemonMessage, FunctionPlan, HookChange, HookFunctions, PlansUpdated, PyRuntimeMatch, PyTarget,
};
use strobe_symbols::Language;
use strobe_symbols::resolvers;

/// The agent's Python tracer (agent/src/tracers/python/).
pub(super) const PYTHON_TRACER: &str = "python";

/// Where a process image's run-time Python ids start, above its tracer's
/// (each image has `IDS_PER_IMAGE` = 2^18 ids from its `id_base`).
const RUNTIME_IDS_FROM: u32 = 1 << 17;

/// What the Python tracer hooks function `id` by: its file and
/// `co_qualname` (the resolver's raw name).
pub(super) fn py_target(tracer: &Tracer, id: u32) -> Result<PyTarget, Failure> {
    match tracer.info_of(id) {
        Some(f) => Ok(PyTarget(
            id,
            f.file.unwrap_or_default().to_string(),
            f.name_raw.unwrap_or(f.name).to_string(),
        )),
        None => Err((id, "unknown function".into())),
    }
}

/// The Python tracer's run-time matching for `live`: the active Python glob
/// patterns (dotted, no `::`, no selector), the main script's module name
/// and the image's run-time id range.
fn runtime_match(live: &Live, tracer: &Tracer) -> PyRuntimeMatch {
    let patterns = tracer
        .patterns()
        .into_iter()
        .filter(|p| !p.contains("::") && !p.starts_with('@'))
        .collect();
    let (program, _) = resolvers::python::parse_args(&live.program_args);
    let main_module = match program {
        resolvers::python::Program::Script(path) => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "__main__".into()),
        resolvers::python::Program::Module(m) => m,
        _ => "__main__".into(),
    };
    PyRuntimeMatch {
        patterns,
        main_module,
        first_id: live.id_base + RUNTIME_IDS_FROM + 1,
        max_ids: RUNTIME_IDS_FROM - 2,
    }
}

/// Native failures, and one warning for the Python ones (they fail for
/// reasons of their own, such as no supported interpreter, said as they
/// are).
pub(super) fn python_failures(
    tracer: &Tracer,
    failed: Vec<Failure>,
) -> (Vec<Failure>, Option<String>) {
    let (python, native) = split_failures(tracer, failed, Language::Python);
    let warning = python.first().map(|(_, why)| {
        format!(
            "{} matched Python functions cannot be traced: {why}",
            python.len()
        )
    });
    (native, warning)
}

impl SessionManager {
    /// Tells the Python tracer which expression watches each traced
    /// function (and each of `about_to_hook`, so their first calls read
    /// them too) reads.
    pub(super) fn python_watch_plans(
        &self,
        live: &Live,
        tracer: &Tracer,
        about_to_hook: &[u32],
        timeout: Duration,
    ) -> Result<(), SessionError> {
        let plans = tracer.dotted_watch_plans(Language::Python, about_to_hook);
        self.send_watch_plans(live, PYTHON_TRACER, plans, timeout)
    }

    /// Sends a source-level tracer (`tracer`) the expression watch ids each
    /// of its functions reads (every one listed, so an empty list takes its
    /// watches away); nothing when there are no functions.
    pub(super) fn send_watch_plans(
        &self,
        live: &Live,
        tracer: &str,
        plans: Vec<(u32, Vec<u8>)>,
        timeout: Duration,
    ) -> Result<(), SessionError> {
        let plans: Vec<FunctionPlan> = plans
            .into_iter()
            .map(|(id, ids)| FunctionPlan(id, (!ids.is_empty()).then_some(ids)))
            .collect();
        if plans.is_empty() {
            return Ok(());
        }
        self.agent_request::<PlansUpdated>(
            live,
            |id| DaemonMessage::Plans {
                id,
                tracer: Some(tracer.to_string()),
                plans,
            },
            timeout,
        )?;
        Ok(())
    }

    /// Sends the Python tracer its new targets and, while the program is
    /// Python, the whole set of run-time patterns (on every change, so
    /// removals reach it too). `None` when there is nothing to send.
    pub(super) fn hook_python(
        &self,
        live: &Live,
        tracer: &Tracer,
        targets: Vec<PyTarget>,
        watch_libraries: bool,
        settings: &Settings,
        timeout: Duration,
    ) -> Result<Option<HookOutcome>, SessionError> {
        let python_session = tracer.has_language(Language::Python);
        if targets.is_empty() && !python_session {
            return Ok(None);
        }
        let change = HookChange::Add {
            functions: HookFunctions::Python(targets),
            module: None,
            sampling: tracer.sampling,
            hot_calls_per_second: settings.hot_calls_per_second,
            library_wait_ms: settings.library_wait_ms,
            runtime: python_session.then(|| runtime_match(live, tracer)),
            depth: None,
        };
        let r = self.hooks_request(live, Some(PYTHON_TRACER), change, watch_libraries, timeout)?;
        Ok(Some(hook_outcome(&r)))
    }
}
