//! The JavaScript side of a session: at launch, the probed copy of the
//! program's sources and the environment that makes Node load them
//! (strobe_symbols::resolvers::javascript::probes, agent/node/preload.cjs);
//! on each pattern change, the probes the agent's JavaScript tracer turns
//! on (agent/src/tracers/javascript/).

use super::hooks::{Failure, HookOutcome, hook_outcome, split_failures};
use super::{Live, SessionManager};
use crate::SessionError;
use crate::trace::Tracer;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strobe_core::Settings;
use strobe_frida::agent::NODE_RUNTIME;
use strobe_frida::agent_protocol::{
    DaemonMessage, HookChange, HookFunctions, JsTarget, RuntimeLoaded,
};
use strobe_symbols::resolvers::javascript::probes::ProbedProgram;
use strobe_symbols::resolvers::javascript::{named_package, script_of};

/// The agent's JavaScript tracer.
pub(super) const JAVASCRIPT_TRACER: &str = "javascript";

/// What a Node.js program's launch adds: its probed sources and the
/// environment that makes Node load them.
pub(super) struct NodeLaunch {
    /// The probed program (the session's; every process shares it).
    pub probed: Arc<Mutex<ProbedProgram>>,
    /// `NODE_OPTIONS` (what the launch's environment, or the daemon's, had
    /// there, then `--require <runtime>`) and `STROBE_JS_DIR`.
    pub env: BTreeMap<String, String>,
    /// The files that could not be probed, as one warning.
    pub warning: Option<String>,
}

impl NodeLaunch {
    /// Writes the probed copy of the program into `dir` (never probing what
    /// is under `home`, Strobe's own directory; with the packages the
    /// pending `patterns` name) and Strobe's runtime beside it.
    pub(super) fn prepare(
        dir: &Path,
        home: &Path,
        patterns: &[&strobe_symbols::Pattern],
        project_root: &Path,
        cwd: &Path,
        args: &[String],
        launch_env: &BTreeMap<String, String>,
    ) -> Result<NodeLaunch, SessionError> {
        let started = std::time::Instant::now();
        let script = script_of(args).map(|s| cwd.join(s));
        let packages = named_packages(patterns.iter().copied(), project_root);
        let typescript = script.as_deref().is_some_and(compiles_typescript_itself);
        let probed = ProbedProgram::write(
            dir,
            project_root,
            script.as_deref(),
            home,
            &packages,
            typescript,
        )
        .map_err(|e| {
            SessionError::internal(format!(
                "could not write the probed sources to {}: {e}",
                dir.display()
            ))
        })?;
        write_runtime(dir)?;
        let preload = dir.join("preload.cjs");
        let require = format!("--require \"{}\"", preload.display());
        let before = launch_env
            .get("NODE_OPTIONS")
            .cloned()
            .or_else(|| std::env::var("NODE_OPTIONS").ok());
        let options = match before {
            Some(o) if !o.trim().is_empty() => format!("{o} {require}"),
            _ => require,
        };
        let mut env = BTreeMap::new();
        env.insert("NODE_OPTIONS".into(), options);
        env.insert("STROBE_JS_DIR".into(), dir.display().to_string());
        tracing::info!(
            "{} JavaScript files probed in {} ({} ms)",
            probed.file_count(),
            dir.display(),
            started.elapsed().as_millis()
        );
        Ok(NodeLaunch {
            warning: probe_summary(&probed.warnings),
            probed: Arc::new(Mutex::new(probed)),
            env,
        })
    }
}

/// Whether `script` is Vitest's (its command or a worker of its), which
/// reads the project's TypeScript and compiles it itself (Vite), so the
/// TypeScript sources get probed copies as they are.
fn compiles_typescript_itself(script: &Path) -> bool {
    script
        .components()
        .any(|c| c.as_os_str().to_string_lossy().starts_with("vitest"))
}

/// Why Node would refuse to load Strobe's runtime with these arguments
/// (node's own, before the script) and `NODE_OPTIONS`, or None: its
/// permission model (`--experimental-permission` on Node 20, `--permission`
/// from 22) denies reading any file it was not given, the runtime's
/// included, and Node then exits before the program starts.
pub(super) fn runtime_refused(args: &[String], node_options: Option<&str>) -> Option<String> {
    let script = script_of(args);
    let own = args
        .iter()
        .take_while(|a| Some(a.as_str()) != script)
        .map(String::as_str);
    let from_env = node_options.unwrap_or("").split_whitespace();
    let flag = own
        .chain(from_env)
        .find(|a| matches!(*a, "--experimental-permission" | "--permission"))?;
    Some(format!(
        "this Node.js program runs under Node's permission model ({flag}), which refuses to load \
         Strobe's runtime: it runs as it is, with its output, exit and native code recorded, but its \
         JavaScript is not traced and takes no breakpoints. Launch it without {flag} to debug its \
         JavaScript"
    ))
}

/// Writes Strobe's Node.js runtime (agent/node/) into `dir`.
fn write_runtime(dir: &Path) -> Result<(), SessionError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| SessionError::internal(format!("could not create {}: {e}", dir.display())))?;
    for (name, text) in NODE_RUNTIME {
        std::fs::write(dir.join(name), text).map_err(|e| {
            SessionError::internal(format!("could not write {}: {e}", dir.join(name).display()))
        })?;
    }
    Ok(())
}

/// One warning for the JavaScript files that could not be probed (they run,
/// untraced), naming the first few.
fn probe_summary(problems: &[String]) -> Option<String> {
    let first: Vec<&str> = problems.iter().take(3).map(String::as_str).collect();
    (!problems.is_empty()).then(|| {
        format!(
            "{} JavaScript file(s) were not probed and run untraced: {}{}",
            problems.len(),
            first.join("; "),
            if problems.len() > first.len() {
                "; …"
            } else {
                ""
            }
        )
    })
}

/// What the JavaScript tracer turns on for function `id`: its probe.
pub(super) fn js_target(
    probed: Option<&Mutex<ProbedProgram>>,
    tracer: &Tracer,
    id: u32,
) -> Result<JsTarget, Failure> {
    let f = tracer
        .info_of(id)
        .ok_or_else(|| (id, "unknown function".to_string()))?;
    let (file, qualname) = (f.file.unwrap_or_default(), f.name_raw.unwrap_or(f.name));
    let Some(probed) = probed else {
        return Err((
            id,
            "this Node.js process runs without Strobe's runtime (the launch's warnings say why), \
             so its JavaScript functions cannot be traced"
                .into(),
        ));
    };
    let probed = probed.lock().unwrap_or_else(|e| e.into_inner());
    match probed.probe_of(file, qualname, f.line.unwrap_or(0)) {
        Some(probe) => Ok(JsTarget(id, probe, probed.probed_late(probe))),
        None if !probed.has_file(file) => Err((
            id,
            format!(
                "{file} was not probed at launch (Node cannot load it as it is: TypeScript and JSX \
                 are traced through their compiled JavaScript, which is not mapped back yet)"
            ),
        )),
        None => Err((
            id,
            format!("{file} changed since launch; restart the session to trace it"),
        )),
    }
}

/// The JavaScript functions among `failed`, as one warning.
pub(super) fn javascript_failures(
    tracer: &Tracer,
    failed: Vec<Failure>,
) -> (Vec<Failure>, Option<String>) {
    let (js, rest) = split_failures(tracer, failed, strobe_symbols::Language::JavaScript);
    let warning = js.first().map(|(id, why)| {
        format!(
            "{} matched JavaScript function(s) cannot be traced; {}: {why}",
            js.len(),
            tracer.name_of(*id).unwrap_or("?")
        )
    });
    (rest, warning)
}

impl SessionManager {
    /// Loads Strobe's Node.js runtime, written into `dir`, into the attached
    /// process of `live` (agent/src/tracers/javascript/attach.ts), for its
    /// breakpoints, logpoints and debug_memory; the warning to give when
    /// it could not be loaded.
    pub(super) fn load_node_runtime(
        &self,
        live: &Live,
        dir: &Path,
        timeout: Duration,
    ) -> Option<String> {
        let unavailable = |why: &str| {
            format!(
                "breakpoints, logpoints and debug_memory are not available in this Node.js process: {why}"
            )
        };
        if let Err(e) = write_runtime(dir) {
            return Some(unavailable(&e.to_string()));
        }
        let _ = std::fs::remove_file(dir.join("attach-error.txt"));
        match self.agent_request::<RuntimeLoaded>(
            live,
            |id| DaemonMessage::LoadRuntime {
                id,
                tracer: JAVASCRIPT_TRACER.into(),
                dir: dir.display().to_string(),
            },
            timeout,
        ) {
            Ok(RuntimeLoaded {
                error: None, how, ..
            }) => {
                tracing::info!(
                    "session {}: Strobe's Node.js runtime loaded into pid {} (through its {})",
                    live.id,
                    live.pid,
                    how.as_deref().unwrap_or("?")
                );
                None
            }
            Ok(RuntimeLoaded { error: Some(e), .. }) => Some(unavailable(&e)),
            Err(e) => Some(unavailable(&e.message())),
        }
    }

    /// Tells the JavaScript tracer which expression watches each traced
    /// JavaScript function (and each of `about_to_hook`, sent before they
    /// are traced so their first calls read them) reads; every one listed,
    /// so an empty list takes its watches away.
    pub(super) fn javascript_watch_plans(
        &self,
        live: &Live,
        tracer: &Tracer,
        about_to_hook: &[u32],
        timeout: Duration,
    ) -> Result<(), SessionError> {
        let plans = tracer.dotted_watch_plans(strobe_symbols::Language::JavaScript, about_to_hook);
        self.send_watch_plans(live, JAVASCRIPT_TRACER, plans, timeout)
    }

    /// Sends the JavaScript tracer its new functions and the preview depth;
    /// `None` when there are no functions and the depth did not change
    /// (`replan`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn hook_javascript(
        &self,
        live: &Live,
        tracer: &Tracer,
        targets: Vec<JsTarget>,
        replan: bool,
        watch_libraries: bool,
        settings: &Settings,
        timeout: Duration,
    ) -> Result<Option<HookOutcome>, SessionError> {
        if targets.is_empty() && !replan {
            return Ok(None);
        }
        let change = HookChange::Add {
            functions: HookFunctions::JavaScript(targets),
            module: None,
            sampling: tracer.sampling,
            hot_calls_per_second: settings.hot_calls_per_second,
            library_wait_ms: settings.library_wait_ms,
            runtime: None,
            depth: Some(tracer.depth),
        };
        let r = self.hooks_request(
            live,
            Some(JAVASCRIPT_TRACER),
            change,
            watch_libraries,
            timeout,
        )?;
        Ok(Some(hook_outcome(&r)))
    }
}

/// Probes the packages `patterns` name that were not probed yet (a pattern
/// added while the program runs); one warning per package, since files
/// Node already loaded run unprobed until it restarts.
pub(super) fn probe_named_packages(
    probed: &Mutex<ProbedProgram>,
    patterns: &[strobe_symbols::Pattern],
    project_root: &Path,
) -> Vec<String> {
    let mut probed = probed.lock().unwrap_or_else(|e| e.into_inner());
    let mut warnings = Vec::new();
    for dir in named_packages(patterns.iter(), project_root) {
        if probed.has_package(&dir) {
            continue;
        }
        match probed.add_package(&dir) {
            Ok(n) => warnings.push(format!(
                "{} ({n} files) was probed now: its files Node loads from now on are traced, and \
                 those the main thread loaded already are swapped for their probed copies (V8's \
                 live edit, which turns the debugger on; a file V8 refuses is named with why). A \
                 pattern staged before debug_launch probes a package from the start",
                dir.display()
            )),
            Err(e) => warnings.push(format!("could not probe {}: {e}", dir.display())),
        }
    }
    warnings
}

/// The packages under the project's `node_modules` that `patterns` name.
fn named_packages<'a>(
    patterns: impl Iterator<Item = &'a strobe_symbols::Pattern>,
    project_root: &Path,
) -> Vec<std::path::PathBuf> {
    patterns
        .filter_map(|p| match p {
            strobe_symbols::Pattern::Glob { text, .. } => named_package(text, project_root),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::runtime_refused;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_permission_model_refuses_the_runtime_from_nodes_flags_or_node_options() {
        let flagged = args(&[
            "--experimental-permission",
            "--allow-fs-read=/app",
            "app.js",
        ]);
        let why = runtime_refused(&flagged, None).unwrap();
        assert!(
            why.contains("--experimental-permission") && why.contains("without"),
            "{why}"
        );
        assert!(
            runtime_refused(&args(&["app.js"]), Some("--permission --allow-fs-read=*")).is_some()
        );
        // The script's own arguments are not node's.
        assert!(runtime_refused(&args(&["app.js", "--permission"]), None).is_none());
        assert!(
            runtime_refused(
                &args(&["--inspect", "app.js"]),
                Some("--max-old-space-size=64")
            )
            .is_none()
        );
    }
}
