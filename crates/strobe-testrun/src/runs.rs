//! The runs themselves: a framework's command started in the background,
//! its output parsed line by line as it arrives by the adapter's parser,
//! progress on request, and the finished result with every detail written
//! to a file under `STROBE_HOME/test-runs/`.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::instrumented::InstrumentedRun;
use serde_json::{Value, json};
use strobe_core::ToolError;
use strobe_testing::{OutputParser, Stream, TestAdapter, TestLevel, TestResult, TestTarget};

/// Longest a failure message is in the response (the details file has all).
const MESSAGE_CHARS: usize = 500;
/// Most output lines kept for the details file.
const MAX_LOG_LINES: usize = 200_000;
/// How long `status` waits for a run to finish before reporting progress.
pub const STATUS_WAIT: Duration = Duration::from_secs(15);

/// What to run.
#[derive(Debug, Clone)]
pub struct TestRunRequest {
    /// The project (absolute).
    pub project_root: String,
    /// An adapter name, to override detection.
    pub framework: Option<String>,
    /// Only this level.
    pub level: Option<TestLevel>,
    /// Only this test (the framework's name for it).
    pub test: Option<String>,
    /// The test program (Catch2 / Google Test binary) or, for the generic
    /// adapter, the command line.
    pub command: Option<String>,
    /// Variables added to the test command's environment.
    pub env: BTreeMap<String, String>,
    /// Trace patterns: the test program runs under Frida as a session.
    pub trace_patterns: Vec<String>,
    /// Watches, likewise.
    pub watches: Vec<strobe_session::trace::WatchRequest>,
    /// `rerun: "compare"`: the result names the last passing traced run of
    /// the same test to diff against (see `compare.rs`).
    pub compare: bool,
    /// Raised when the caller gives up on the request (an MCP cancellation):
    /// stops its preparing work (walks of the project). Shutdown stops it
    /// too, with or without this.
    pub cancel: Option<strobe_testing::walk::Cancel>,
}

/// The test runs of this daemon.
pub struct TestRuns {
    pub(crate) dir: PathBuf,
    pub(crate) symbol_cache: PathBuf,
    /// Where each test's recent durations are kept (its baseline).
    pub(crate) store: strobe_store::Store,
    pub(crate) runs: Mutex<HashMap<String, Arc<Run>>>,
    pub(crate) next: AtomicU64,
    /// Raised at shutdown: stops the work of requests still preparing a
    /// run (walks of a project tree), so the daemon never waits on them.
    pub(crate) cancel: strobe_testing::walk::Cancel,
}

/// Longest silence of a run still doing work (its stacks change) before
/// it is stopped, by level.
fn hard_timeout(level: Option<TestLevel>) -> Duration {
    Duration::from_secs(match level {
        Some(TestLevel::Unit) => 30,
        Some(TestLevel::Integration) | None => 120,
        Some(TestLevel::E2e) => 300,
    })
}

pub(crate) struct Run {
    pub(crate) id: String,
    pub(crate) framework: &'static str,
    /// The project, as baselines are keyed.
    pub(crate) project_root: String,
    /// Where its tests' durations go and their baselines come from.
    pub(crate) store: strobe_store::Store,
    pub(crate) command: String,
    /// The request's own environment (on top of the adapter's), which
    /// reruns for details get too.
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) started: Instant,
    /// The process group of the command (its pid).
    pub(crate) pgid: u32,
    pub(crate) state: Mutex<RunState>,
    pub(crate) finished: Condvar,
    /// What an instrumented run traced, for finding baselines to compare with.
    pub(crate) traced: std::sync::OnceLock<crate::compare::Traced>,
}

pub(crate) struct RunState {
    pub(crate) parser: Option<Box<dyn OutputParser>>,
    pub(crate) log: Vec<String>,
    pub(crate) result: Option<Value>,
    /// When the last line of output arrived.
    pub(crate) last_output: Instant,
    /// Tests the stuck detector stopped, as reported.
    pub(crate) stuck: Vec<Value>,
    /// What the stuck detector sees now, while it waits (silent but working).
    pub(crate) warning: Option<Value>,
    /// The unfinished last line of stdout and of stderr.
    pub(crate) partial: [String; 2],
    /// The Frida session of an instrumented run, once launched.
    pub(crate) session_id: Option<String>,
    /// When each test running now was first seen running.
    pub(crate) running_since: HashMap<String, Instant>,
    /// Durations Strobe measured (first seen running → gone), for tests
    /// whose framework reports none.
    pub(crate) measured_ms: HashMap<String, f64>,
    /// The last progress, kept while the ended run's result is completed
    /// (failures rerun for their details).
    pub(crate) final_progress: Option<strobe_testing::Progress>,
    /// The process group of such a rerun while it runs.
    pub(crate) rerun_pgid: Option<u32>,
}

impl TestRuns {
    /// Runs keep their details under `dir`; stack samples cache symbol
    /// indexes under `symbol_cache`; tests' durations go to `store`, which
    /// gives each test its baseline.
    pub fn new(dir: PathBuf, symbol_cache: PathBuf, store: strobe_store::Store) -> Self {
        Self {
            dir,
            symbol_cache,
            store,
            runs: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            cancel: Default::default(),
        }
    }

    /// The project, its adapter and the command a request runs; `Err(Ok(v))`
    /// is an answer without a run (no tests found).
    fn resolve(
        &self,
        req: &TestRunRequest,
    ) -> Result<(TestTarget, Box<dyn TestAdapter>), Result<Value, ToolError>> {
        let root =
            strobe_session::validate::project_root(&req.project_root).map_err(|e| Err(e.into()))?;
        for (k, v) in &req.env {
            strobe_session::validate::env_key(k, v).map_err(|e| Err(e.into()))?;
        }
        if req.test.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(Err(ToolError::validation(
                "'test' must not be empty; omit it to run the suite",
            )));
        }
        let target = TestTarget {
            root: root.clone(),
            command: req.command.clone(),
            cancel: req
                .cancel
                .as_ref()
                .map_or_else(|| self.cancel.clone(), |c| c.within(&self.cancel)),
        };
        match strobe_testing::choose(&target, req.framework.as_deref()) {
            Ok(a) => Ok((target, a)),
            // Nothing to run is an answer, not a mistake: say what the
            // project is and how to add a first test.
            Err(strobe_testing::TestingError::NotDetected { known, .. }) => {
                let info = strobe_testing::project::describe(&root);
                Err(Ok(json!({
                    "status": "noTests",
                    "language": info.language,
                    "buildSystem": info.build_system,
                    "hint": info.hint,
                    "frameworks": known,
                })))
            }
            Err(e) => Err(Err(ToolError::validation(e.to_string()))),
        }
    }

    /// Registers a new run.
    fn register(
        &self,
        adapter: &dyn TestAdapter,
        target: &TestTarget,
        command: String,
        env: &BTreeMap<String, String>,
        pgid: u32,
    ) -> Arc<Run> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let id = format!("test-{}-{n}", adapter.name());
        let run = Arc::new(Run {
            id: id.clone(),
            framework: adapter.name(),
            project_root: target.root.display().to_string(),
            store: self.store.clone(),
            command,
            env: env.clone(),
            started: Instant::now(),
            pgid,
            state: Mutex::new(RunState {
                parser: Some(adapter.parser()),
                log: Vec::new(),
                result: None,
                last_output: Instant::now(),
                stuck: Vec::new(),
                warning: None,
                partial: Default::default(),
                session_id: None,
                running_since: HashMap::new(),
                measured_ms: HashMap::new(),
                final_progress: None,
                rerun_pgid: None,
            }),
            finished: Condvar::new(),
            traced: std::sync::OnceLock::new(),
        });
        self.runs.lock().expect("runs lock").insert(id, run.clone());
        run
    }

    /// Prepares a run whose test program the session layer launches under
    /// Frida (`tracePatterns`, `watches`): the program to launch, and the
    /// handle its output and end go to. `Err(Ok(v))` is an answer without
    /// a run (no tests found).
    pub fn prepare_instrumented(
        &self,
        req: &TestRunRequest,
    ) -> Result<InstrumentedRun, Result<Value, ToolError>> {
        let (target, adapter) = self.resolve(req)?;
        let run = self.register(adapter.as_ref(), &target, String::new(), &req.env, 0);
        let _ = run.traced.set(crate::compare::Traced::of(req));
        Ok(InstrumentedRun {
            run,
            adapter,
            target,
            level: req.level,
            test: req.test.clone(),
            dir: self.dir.clone(),
        })
    }

    /// Starts a run and returns `{testRunId, status: "running", framework, command}` at once.
    pub fn start(&self, req: &TestRunRequest) -> Result<Value, ToolError> {
        let (target, adapter) = match self.resolve(req) {
            Ok(r) => r,
            Err(answer) => return answer,
        };
        let root = target.root.clone();
        let cmd = adapter
            .run_command(&target, req.level, req.test.as_deref())
            .map_err(|e| ToolError::validation(e.to_string()))?;
        let mut command = Command::new(&cmd.program);
        command
            .args(&cmd.args)
            .current_dir(&cmd.cwd)
            .envs(&cmd.env)
            .envs(&req.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so the whole tree can be stopped.
            .process_group(0);
        let mut child = command.spawn().map_err(|e| {
            ToolError::validation(format!(
                "could not start `{}` in {}: {e} (is {} installed and on the daemon's PATH?)",
                cmd.display(),
                cmd.cwd.display(),
                cmd.program
            ))
        })?;
        let run = self.register(
            adapter.as_ref(),
            &target,
            cmd.display(),
            &req.env,
            child.id(),
        );
        let id = run.id.clone();
        let readers = [
            (
                child
                    .stdout
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read + Send>),
                Stream::Stdout,
            ),
            (
                child
                    .stderr
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read + Send>),
                Stream::Stderr,
            ),
        ]
        .into_iter()
        .filter_map(|(pipe, stream)| {
            let pipe = pipe?;
            let run = run.clone();
            Some(std::thread::spawn(move || read_lines(&run, pipe, stream)))
        })
        .collect::<Vec<_>>();
        let watch = crate::watch::Watch {
            run: run.clone(),
            project_root: root.clone(),
            hard_timeout: hard_timeout(req.level),
            waits_for_build: adapter.builds_first(),
            stop_signal: adapter.stop_signal(),
            samplers: crate::stacks::samplers(
                Some(self.symbol_cache.clone()),
                Some(self.python_venv()),
            ),
        };
        std::thread::spawn(move || watch.run());
        let dir = self.dir.clone();
        let target_for_rerun = target.clone();
        let response = json!({
            "testRunId": id,
            "status": "running",
            "framework": run.framework,
            "command": run.command,
        });
        std::thread::spawn(move || {
            let status = child.wait().ok();
            for r in readers {
                let _ = r.join();
            }
            let exit_code = status.and_then(|s| s.code());
            finish(&run, adapter.as_ref(), &target_for_rerun, &dir, exit_code);
        });
        Ok(response)
    }

    /// Strobe's venv, found as the bridge finds it (`STROBE_VENV`, the
    /// `frida.venv` setting, `$STROBE_HOME/venv`): `strobe setup` puts
    /// py-spy there. The runs' directory is `$STROBE_HOME/test-runs`.
    fn python_venv(&self) -> PathBuf {
        let home = strobe_core::StrobeHome::at(self.dir.parent().unwrap_or(&self.dir));
        let (settings, _) = strobe_core::Settings::load(&home.settings_file(), None);
        strobe_frida::FridaPython::locate(settings.frida_venv.as_deref(), &home.default_venv()).venv
    }

    /// Every run, newest first, as [`TestRuns::status`] shows it now.
    pub fn list(&self) -> Vec<Value> {
        let mut runs: Vec<(Instant, String)> = {
            let runs = self.runs.lock().expect("runs lock");
            runs.values().map(|r| (r.started, r.id.clone())).collect()
        };
        runs.sort_by_key(|r| std::cmp::Reverse(r.0));
        runs.into_iter()
            .filter_map(|(_, id)| self.status(&id, Duration::ZERO).ok())
            .collect()
    }

    /// The finished result, after waiting up to `wait`; else the progress.
    pub fn status(&self, id: &str, wait: Duration) -> Result<Value, ToolError> {
        let found = {
            let runs = self.runs.lock().expect("runs lock");
            runs.get(id).cloned().ok_or_else(|| {
                let mut known: Vec<&str> = runs.keys().map(String::as_str).collect();
                known.sort();
                ToolError::validation(format!(
                    "no test run {id:?} in this daemon (runs: {}); start one with debug_test {{action: \"run\"}}",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ))
            })
        };
        let run = found?;
        let deadline = Instant::now() + wait;
        let mut state = run.state.lock().expect("run lock");
        while state.result.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = run.finished.wait_timeout(state, left).expect("run lock").0;
        }
        if let Some(result) = &state.result {
            return Ok(result.clone());
        }
        // The test running longest is the one worth a look.
        let current = state
            .running_since
            .iter()
            .min_by_key(|(_, since)| **since)
            .map(|(name, since)| (name.clone(), since.elapsed()));
        let progress = match (&state.parser, &state.final_progress) {
            (Some(p), _) => p.progress(),
            (None, Some(p)) => p.clone(),
            (None, None) => Default::default(),
        };
        let phase = if state.final_progress.is_some() {
            // The run ended; failures it lost the reports of run again.
            "details"
        } else if progress.summary.passed + progress.summary.failed + progress.summary.skipped > 0
            || progress.current_group.is_some()
        {
            "running"
        } else {
            "compiling"
        };
        let mut out = json!({
            "testRunId": run.id,
            "status": "running",
            "framework": run.framework,
            "phase": phase,
            "elapsedMs": run.started.elapsed().as_millis() as u64,
            "progress": {
                "passed": progress.summary.passed,
                "failed": progress.summary.failed,
                "skipped": progress.summary.skipped,
                "currentGroup": progress.current_group,
            },
            "sessionId": state.session_id,
            "failuresSoFar": progress.failures.iter().map(brief_failure).collect::<Vec<_>>(),
            "running": progress.running,
            "stuck": state.stuck,
            "stuckWarning": state.warning,
        });
        drop(state);
        if let Some((name, elapsed)) = current {
            let p = &mut out["progress"];
            p["currentTest"] = json!(name);
            p["currentTestElapsedMs"] = json!(elapsed.as_millis() as u64);
            let baseline = run
                .store
                .test_baseline(&run.project_root, run.framework, &name)
                .inspect_err(|e| tracing::warn!("reading the baseline of {name}: {e}"))
                .ok()
                .flatten();
            if let Some(b) = baseline {
                p["currentTestBaselineMs"] = json!(b.mean_ms.round() as u64);
                p["currentTestBaselineRuns"] = json!(b.runs);
            }
        }
        Ok(out)
    }

    /// Stops every run still going (daemon shutdown): their process groups
    /// are the commands Strobe started, and descendants that left them
    /// (cargo-nextest gives each test its own group) go too.
    pub fn stop_all(&self) {
        self.cancel.cancel();
        for run in self.runs.lock().expect("runs lock").values() {
            if let Some(pgid) = run.state.lock().expect("run lock").rerun_pgid {
                // SAFETY: the process group of a rerun this run started.
                unsafe { libc::kill(-(pgid as i32), libc::SIGKILL) };
            }
            if run.pgid != 0 && run.state.lock().expect("run lock").result.is_none() {
                let tree = crate::stuck::group_members(run.pgid);
                // SAFETY: signalling the process group this run created.
                unsafe { libc::kill(-(run.pgid as i32), libc::SIGKILL) };
                for m in tree {
                    // SAFETY: a process of that run's tree, found just before.
                    unsafe { libc::kill(m.pid as i32, libc::SIGKILL) };
                }
            }
        }
    }
}

/// Feeds a pipe to the parser line by line. The unfinished last line is
/// kept as the stream's partial line: a framework that prints a test's name
/// before running it and its outcome after (unittest, pytest) shows there
/// which test is hanging.
fn read_lines(run: &Run, mut pipe: Box<dyn Read + Send>, stream: Stream) {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let n = match pipe.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&chunk[..n]);
        let mut state = run.state.lock().expect("run lock");
        state.last_output = Instant::now();
        while let Some(end) = memchr::memchr(b'\n', &pending) {
            let raw: Vec<u8> = pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&raw);
            feed(&mut state, stream, line.trim_end_matches(['\n', '\r']));
        }
        let partial = String::from_utf8_lossy(&pending).into_owned();
        state.partial[stream as usize] = partial;
        track_running(&mut state);
    }
    let mut state = run.state.lock().expect("run lock");
    if !pending.is_empty() {
        let line = String::from_utf8_lossy(&pending).into_owned();
        feed(&mut state, stream, line.trim_end_matches('\r'));
    }
    state.partial[stream as usize].clear();
    track_running(&mut state);
}

/// Notes which tests started and which ended since the last look, timing
/// each from the first look that saw it running to the first that did not.
/// Looked at once per read of output, so a test is timed to within one
/// read; one that starts and ends within a read is not timed.
pub(crate) fn track_running(state: &mut RunState) {
    let Some(parser) = state.parser.as_ref() else {
        return;
    };
    let mut now_running = parser.running();
    for stream in [Stream::Stdout, Stream::Stderr] {
        if let Some(name) = parser.running_in_partial_line(stream, &state.partial[stream as usize])
            && !now_running.contains(&name)
        {
            now_running.push(name);
        }
    }
    let now = Instant::now();
    let measured = &mut state.measured_ms;
    state.running_since.retain(|name, since| {
        let still = now_running.contains(name);
        if !still {
            let ms = now.duration_since(*since).as_secs_f64() * 1000.0;
            measured.insert(name.clone(), ms);
        }
        still
    });
    for name in now_running {
        state.running_since.entry(name).or_insert(now);
    }
}

/// One line to the parser and the log.
pub(crate) fn feed(state: &mut RunState, stream: Stream, line: &str) {
    if let Some(p) = state.parser.as_mut() {
        p.line(stream, line);
    }
    if state.log.len() < MAX_LOG_LINES {
        let tag = if stream == Stream::Stdout {
            "out"
        } else {
            "err"
        };
        state.log.push(format!("{tag}| {line}"));
    }
}

/// The run ended: parse the rest, complete failures the run lost the
/// reports of, count stopped tests as failed, write the details file, keep
/// the small result for `status`. The run's lock is not held while
/// failures are rerun, so `status` answers meanwhile.
pub(crate) fn finish(
    run: &Run,
    adapter: &dyn TestAdapter,
    target: &TestTarget,
    dir: &Path,
    exit_code: Option<i32>,
) {
    let (mut result, stuck_names) = {
        let mut state = run.state.lock().expect("run lock");
        let Some(parser) = state.parser.take() else {
            return;
        };
        state.final_progress = Some(parser.progress());
        let names: Vec<String> = state
            .stuck
            .iter()
            .flat_map(|r| r["tests"].as_array().cloned().unwrap_or_default())
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect();
        (parser.finish(exit_code), names)
    };
    crate::details::fill_missing_details(
        adapter,
        target,
        &run.env,
        &mut result,
        &stuck_names,
        &|pgid| run.state.lock().expect("run lock").rerun_pgid = pgid,
    );
    let mut state = run.state.lock().expect("run lock");
    crate::details::count_stuck_as_failed(&mut result, &state.stuck, &target.root);
    for f in &mut result.failures {
        f.rerun = Some(adapter.single_test_command(target, &f.name).display());
    }
    let duration_ms = run.started.elapsed().as_millis() as u64;
    record_durations(run, &result, &state.measured_ms);
    let details = dir.join(format!("{}.json", run.id));
    let written = std::fs::create_dir_all(dir).and_then(|()| {
        let doc = json!({
            "testRunId": run.id,
            "command": run.command,
            "durationMs": duration_ms,
            "result": result,
            "stuck": state.stuck,
            // Nothing reads the log once it is on disk.
            "output": std::mem::take(&mut state.log),
        });
        strobe_core::files::write_atomically(&details, doc.to_string().as_bytes())
    });
    let stuck = std::mem::take(&mut state.stuck);
    let session_id = state.session_id.clone();
    let mut out = json!({
        "testRunId": run.id,
        "status": "completed",
        "framework": result.framework,
        "summary": {
            "passed": result.summary.passed,
            "failed": result.summary.failed,
            "skipped": result.summary.skipped,
            "stuck": stuck.len(),
            "durationMs": duration_ms,
        },
        "exitCode": result.exit_code,
        "failures": result.failures.iter().map(brief_failure).collect::<Vec<_>>(),
    });
    if !stuck.is_empty() {
        out["stuck"] = json!(stuck);
    }
    if let Some(id) = session_id {
        out["sessionId"] = json!(id);
    }
    if let Some(e) = &result.error {
        out["error"] = json!(e);
    } else if result.tests.is_empty() {
        let info = strobe_testing::project::describe(&target.root);
        out["noTests"] = json!(true);
        out["hint"] = json!(info.hint);
    }
    match written {
        Ok(()) => out["details"] = json!(details.display().to_string()),
        Err(e) => {
            out["detailsError"] = json!(format!("could not write {}: {e}", details.display()))
        }
    }
    crate::compare::record_pass(run, &out);
    state.result = Some(out);
    run.finished.notify_all();
}

/// Stores how long each passed test took (the framework's own duration,
/// else the one Strobe measured), for later runs' baselines. Failed tests
/// are left out: a failure cut short or a test stopped as stuck says
/// nothing about how long the test usually takes.
fn record_durations(run: &Run, result: &TestResult, measured_ms: &HashMap<String, f64>) {
    let tests: Vec<(String, f64)> = result
        .tests
        .iter()
        .filter(|t| t.status == strobe_testing::TestStatus::Passed)
        .filter_map(|t| {
            let ms = t
                .duration_ms
                .or_else(|| measured_ms.get(&t.name).copied())?;
            Some((t.name.clone(), ms))
        })
        .collect();
    if tests.is_empty() {
        return;
    }
    let durations = strobe_store::TestDurations {
        project_root: run.project_root.clone(),
        framework: run.framework.to_string(),
        finished_at: strobe_core::clock::unix_millis(),
        tests,
    };
    if let Err(e) = run.store.record_test_durations(durations) {
        tracing::warn!("storing the durations of test run {}: {e}", run.id);
    }
}

/// A failure as responses show it: the message cut short, the rest in the details.
fn brief_failure(f: &strobe_testing::TestFailure) -> Value {
    let message: String = f.message.chars().take(MESSAGE_CHARS).collect();
    json!({
        "name": f.name,
        "file": f.file,
        "line": f.line,
        "message": message,
        "suggestedTraces": f.suggested_traces,
        "rerun": f.rerun,
    })
}
