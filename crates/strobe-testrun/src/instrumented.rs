//! The front of debug_test: plain runs go to [`TestRuns`]; a run with
//! trace patterns or watches launches the test program itself under Frida
//! as a debug session of the [`SessionManager`] and feeds the session's
//! stored output to the same parser.

use crate::runs::{Run, TestRunRequest, TestRuns, feed, finish, track_running};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strobe_core::event::{EventKind, FLAG_PARTIAL_LINE};
use strobe_core::{Settings, ToolError};
use strobe_session::{LaunchRequest, SessionManager, SessionState};
use strobe_store::{EventFilter, QueryPage};
use strobe_testing::{Stream, TestAdapter, TestLevel, TestTarget};

/// The daemon's test runs, beside the session manager that instrumented
/// runs launch their programs with. One per daemon, shared by every MCP
/// connection and the web API.
pub struct TestRunner {
    runs: TestRuns,
    mgr: Arc<SessionManager>,
}

impl TestRunner {
    /// Test runs kept under `STROBE_HOME/test-runs/`, storing their
    /// durations in `mgr`'s store.
    pub fn new(mgr: Arc<SessionManager>) -> Self {
        let home = mgr.home().root().to_path_buf();
        let runs = TestRuns::new(
            home.join("test-runs"),
            home.join("symbol-cache"),
            mgr.store().clone(),
        );
        Self { runs, mgr }
    }

    /// Starts a test run (debug_test run): the framework's command as a
    /// plain subprocess, or with trace patterns or watches the test program
    /// itself under Frida as a debug session.
    pub fn run(&self, req: &TestRunRequest, settings: &Settings) -> Result<Value, ToolError> {
        let mut req = req.clone();
        if req.compare && req.trace_patterns.is_empty() {
            // Traced as the failure suggested, else the project's own code.
            req.trace_patterns = req
                .test
                .as_deref()
                .and_then(|t| crate::compare::suggested_patterns(&self.runs, &req.project_root, t))
                .unwrap_or_else(|| vec!["@usercode".to_string()]);
        }
        let req = &req;
        if req.trace_patterns.is_empty() && req.watches.is_empty() {
            return self.runs.start(req);
        }
        strobe_session::parse_patterns(&req.trace_patterns)?;
        let handle = match self.runs.prepare_instrumented(req) {
            Ok(h) => h,
            Err(answer) => return answer,
        };
        let response = handle.response();
        let (mgr, req, settings) = (self.mgr.clone(), req.clone(), settings.clone());
        std::thread::spawn(move || run_instrumented(&mgr, handle, &req, &settings));
        Ok(response)
    }

    /// A test run's result, or its progress after waiting up to `wait`. A
    /// finished `rerun: "compare"` run's result says which session to diff
    /// it against (`compare`).
    pub fn status(&self, id: &str, wait: Duration) -> Result<Value, ToolError> {
        let mut v = self.runs.status(id, wait)?;
        if v["status"] == "completed" {
            crate::compare::annotate(&self.runs, &self.mgr, id, &mut v);
        }
        Ok(v)
    }

    /// Every test run of this daemon, newest first, as `test_status` shows it now.
    pub fn list(&self) -> Vec<Value> {
        self.runs.list()
    }

    /// Stops every run (daemon shutdown).
    pub fn stop_all(&self) {
        self.runs.stop_all();
    }
}

/// Builds and launches an instrumented test run's program, feeds the
/// session's output to the run as it is stored, and ends the run with
/// the session. The session stays for debug_query (stop it as usual).
fn run_instrumented(
    mgr: &Arc<SessionManager>,
    handle: InstrumentedRun,
    req: &crate::runs::TestRunRequest,
    settings: &Settings,
) {
    let program = match handle.program() {
        Ok(p) => p,
        Err(e) => return handle.fail(&e),
    };
    let mut env = program.env.clone();
    env.extend(req.env.clone());
    let launched = mgr.launch(
        LaunchRequest {
            command: program.program.clone(),
            args: program.args.clone(),
            cwd: Some(program.cwd.display().to_string()),
            project_root: handle.target().root.display().to_string(),
            env,
            follow_children: true,
            attach_pid: None,
            trace_patterns: req.trace_patterns.clone(),
            watches: req.watches.clone(),
            staged_breakpoints: false,
            stop_on_entry: false,
            // A GUI test program with no display to inherit gets a
            // virtual one, as a launch does.
            display: None,
            env_unset: Vec::new(),
            stdin_pipe: false,
            channels: Vec::new(),
            jack_auto: false,
        },
        settings,
    );
    let session = match launched {
        Ok(r) => r.session_id,
        Err(e) => {
            return handle.fail(&format!(
                "could not launch `{}` under Frida: {}",
                program.display(),
                e.message()
            ));
        }
    };
    handle.set_session(&session);
    let filter = EventFilter {
        kinds: Some(EventKind::Stdout.bit() | EventKind::Stderr.bit()),
        ..Default::default()
    };
    let mut offset = 0u64;
    // Output can still be on its way to the store when the session ends:
    // the run ends after a quiet read past the end.
    let mut quiet_after_end = 0;
    // Pieces of a line still being written, per stream (stdout, stderr):
    // the parsers take whole lines, and a runner often writes one in parts
    // (pytest -v writes a test's id, runs it, then its outcome).
    let mut partial: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    loop {
        let ended = mgr
            .status(&session)
            .map(|s| !matches!(s.state, SessionState::Starting | SessionState::Running))
            .unwrap_or(true);
        let page = match mgr.query(
            &session,
            &filter,
            QueryPage {
                offset,
                limit: 1000,
            },
        ) {
            Ok(p) => p,
            Err(e) => {
                return handle.fail(&format!("reading the session's output: {}", e.message()));
            }
        };
        offset += page.events.len() as u64;
        for e in &page.events {
            let (stream, i) = match e.kind() {
                Some(EventKind::Stderr) => (strobe_testing::Stream::Stderr, 1),
                _ => (strobe_testing::Stream::Stdout, 0),
            };
            if e.header.flags & FLAG_PARTIAL_LINE != 0 {
                partial[i].extend_from_slice(&e.payload);
                continue;
            }
            if partial[i].is_empty() {
                handle.line(stream, &e.payload);
            } else {
                partial[i].extend_from_slice(&e.payload);
                handle.line(stream, &std::mem::take(&mut partial[i]));
            }
        }
        if ended && page.events.is_empty() {
            quiet_after_end += 1;
            if quiet_after_end >= 3 {
                // What was written last without a newline is a line too.
                for (i, stream) in [
                    strobe_testing::Stream::Stdout,
                    strobe_testing::Stream::Stderr,
                ]
                .into_iter()
                .enumerate()
                {
                    if !partial[i].is_empty() {
                        handle.line(stream, &std::mem::take(&mut partial[i]));
                    }
                }
                let code = mgr.status(&session).ok().and_then(|s| s.exit_code);
                return handle.finish(code);
            }
        }
        if !page.has_more {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// A run whose test program runs under Frida as a debug session: the
/// runner launches [`InstrumentedRun::program`] with the run's trace
/// patterns and hands the session's output and end back here.
pub struct InstrumentedRun {
    pub(crate) run: Arc<Run>,
    pub(crate) adapter: Box<dyn TestAdapter>,
    pub(crate) target: TestTarget,
    pub(crate) level: Option<TestLevel>,
    pub(crate) test: Option<String>,
    pub(crate) dir: PathBuf,
}

impl InstrumentedRun {
    /// `{testRunId, status: "running", framework, instrumented: true}`.
    pub fn response(&self) -> Value {
        json!({
            "testRunId": self.run.id,
            "status": "running",
            "framework": self.run.framework,
            "instrumented": true,
            "next": "debug_test {action: \"status\"} returns the sessionId once the test program runs under Frida; debug_query it while it runs",
        })
    }

    /// The project.
    pub fn target(&self) -> &TestTarget {
        &self.target
    }

    /// The test program itself (built first when the adapter must).
    pub fn program(&self) -> Result<strobe_testing::TestCommand, String> {
        self.adapter
            .test_program(&self.target, self.level, self.test.as_deref())
    }

    /// The session the program runs in.
    pub fn set_session(&self, id: &str) {
        self.run.state.lock().expect("run lock").session_id = Some(id.to_string());
    }

    /// One line the program wrote (the session stores output line by line).
    pub fn line(&self, stream: Stream, text: &[u8]) {
        let mut state = self.run.state.lock().expect("run lock");
        state.last_output = Instant::now();
        let line = String::from_utf8_lossy(text);
        feed(&mut state, stream, line.trim_end_matches(['\n', '\r']));
        track_running(&mut state);
    }

    /// The program ended with `exit_code` (`None`: killed or crashed).
    pub fn finish(self, exit_code: Option<i32>) {
        finish(
            &self.run,
            self.adapter.as_ref(),
            &self.target,
            &self.dir,
            exit_code,
        );
    }

    /// The run could not start: its result is the error.
    pub fn fail(self, error: &str) {
        let mut state = self.run.state.lock().expect("run lock");
        state.parser = None;
        state.result = Some(crate::details::failed_result(
            &self.run.id,
            self.run.framework,
            error,
            state.session_id.as_deref(),
        ));
        self.run.finished.notify_all();
    }
}
