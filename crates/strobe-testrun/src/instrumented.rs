//! The front of debug_test: plain runs go to [`TestRuns`]; a run with
//! trace patterns or watches launches the test program itself under Frida
//! as a debug session of the [`SessionManager`] and feeds the session's
//! stored output to the same parser.

use crate::runs::{InstrumentedRun, TestRunRequest, TestRuns};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use strobe_core::event::EventKind;
use strobe_core::{Settings, ToolError};
use strobe_session::{LaunchRequest, SessionManager, SessionState};
use strobe_store::{EventFilter, QueryPage};

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

    /// A test run's result, or its progress after waiting up to `wait`.
    pub fn status(&self, id: &str, wait: Duration) -> Result<Value, ToolError> {
        self.runs.status(id, wait)
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
        },
        settings,
    );
    let session = match launched {
        Ok(r) => r.session_id,
        Err(e) => {
            return handle.fail(&format!(
                "could not launch `{}` under Frida: {}",
                program.display(),
                e.message
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
                return handle.fail(&format!("reading the session's output: {}", e.message));
            }
        };
        offset += page.events.len() as u64;
        for e in &page.events {
            let stream = match e.kind() {
                Some(EventKind::Stderr) => strobe_testing::Stream::Stderr,
                _ => strobe_testing::Stream::Stdout,
            };
            handle.line(stream, &e.payload);
        }
        if ended && page.events.is_empty() {
            quiet_after_end += 1;
            if quiet_after_end >= 3 {
                let code = mgr.status(&session).ok().and_then(|s| s.exit_code);
                return handle.finish(code);
            }
        }
        if !page.has_more {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
