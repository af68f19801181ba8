//! Launching a target: validation, the bridge from the pool, spawn (or
//! attach), the agent, pending patterns and breakpoints, capture, resume;
//! and giving a launch up cleanly when a step fails.

use super::*;

impl SessionManager {
    /// Launches a target under Frida.
    pub fn launch(
        self: &Arc<Self>,
        req: LaunchRequest,
        settings: &Settings,
    ) -> Result<LaunchResponse, SessionError> {
        let project_root = validate::project_root(&req.project_root)?;
        let cwd = validate::cwd(req.cwd.as_deref(), &project_root)?;
        let launch_patterns = parse_patterns(&req.trace_patterns)?;
        if req.stdin_pipe && req.attach_pid.is_some() {
            return Err(SessionError::validation(
                "stdin \"pipe\" is for launches: an attached process keeps the stdin it was started with",
            ));
        }
        if req.jack_auto && req.attach_pid.is_some() {
            return Err(SessionError::validation(
                "jack \"auto\" is for launches: an attached process is already on the JACK server it chose",
            ));
        }
        if req.stop_on_entry && req.attach_pid.is_some() {
            return Err(SessionError::validation(
                "stopOnEntry is for launches: an attached process is already past main; set a breakpoint with \
                 debug_breakpoint instead",
            ));
        }
        let binary = match req.attach_pid {
            Some(_) if !req.command.trim().is_empty() || !req.args.is_empty() => {
                return Err(SessionError::validation(
                    "give either 'command' (to launch a program) or 'attachPid' (to attach to a running one), not both",
                ));
            }
            Some(pid) => validate::attach_target(pid)?,
            None if req.command.trim().is_empty() => {
                return Err(SessionError::validation(
                    "give 'command' (the executable to launch, e.g. \"/abs/path/to/app\") or 'attachPid' (the pid \
                     of a running process to attach to)",
                ));
            }
            None => validate::resolve_command(
                &req.command,
                &cwd,
                req.env.get("PATH").map(String::as_str),
            )?,
        };
        validate::args(&req.args)?;
        for (k, v) in &req.env {
            validate::env_key(k, v)?;
        }
        // A private JACK server starts first: the program's environment
        // names it. Dropped (stopped) by any failure below until `Live`
        // owns it.
        let mut req = req;
        let jack = if req.jack_auto {
            static SERVERS: AtomicU32 = AtomicU32::new(0);
            let name = format!(
                "strobe-{}-{}",
                std::process::id(),
                SERVERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            );
            // Its log: what it says of clients it throws out.
            let log = self.home.logs_dir().join(format!("jackd-{name}.log"));
            let server = strobe_channels::JackServer::start(&name, Some(&log))
                .map_err(SessionError::validation)?;
            let record = super::display::record_kept_process(
                &self.home,
                &format!("jackd-{name}"),
                "jackd",
                server.pid(),
            );
            req.env.insert("JACK_DEFAULT_SERVER".into(), name);
            Some(super::channels::PrivateJack {
                _server: server,
                _record: record,
            })
        } else {
            None
        };
        // A Python program runs as its real interpreter with the script in
        // its arguments (crate::language): shims and shebangs are followed
        // here, so the agent lands in the interpreter itself.
        let program = match req.attach_pid {
            Some(pid) => crate::language::attached(pid, &binary),
            None => {
                let mut env: BTreeMap<String, String> = std::env::vars().collect();
                env.extend(req.env.clone());
                crate::language::detect(&binary, &req.args, &env)
            }
        };
        let binary = program.command.clone();
        // A virtual display is started before anything else of the session:
        // it is dropped (stopped) by any failure below until `Live` owns it.
        let (virtual_display, display_note, display) = match req.attach_pid {
            Some(pid) => {
                if req.display == Some(DisplayChoice::Virtual) {
                    return Err(SessionError::validation(
                        "display \"virtual\" is for a program Strobe launches: an attached process keeps the display it was started on",
                    ));
                }
                (None, None, attached_display(pid))
            }
            None => {
                let (vd, note) = display::prepare(&self.home, req.display, &program, &req.env)?;
                let display = match &vd {
                    Some(vd) => Some(vd.display()),
                    None => {
                        let mut env: BTreeMap<String, String> = std::env::vars().collect();
                        env.extend(req.env.clone());
                        strobe_ui::Display::from_env(
                            env.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                        )
                    }
                };
                (vd, note, display)
            }
        };
        let python = FridaPython::locate(settings.frida_venv.as_deref(), &self.home.default_venv())
            .check()
            .map_err(SessionError::frida_unavailable)?;
        let timeout = Duration::from_millis(settings.bridge_request_timeout_ms);
        // Compiling the agent (first launch after an upgrade) and spawning are
        // legitimately slower than the hang-detection limit on a loaded machine.
        let launch_timeout = timeout.max(LAUNCH_STEP_TIMEOUT);

        let binary_name = binary
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let launch_json = json!({
            "command": binary, "args": program.args, "cwd": cwd,
            "language": program.language.as_str(),
            "envKeys": req.env.keys().collect::<Vec<_>>(),
        })
        .to_string();
        let (id, key, stats) = {
            // Id choice and row creation must not interleave between launches.
            let _guard = self.launch_lock.lock().expect("launch lock");
            // Every id ever issued, deleted sessions' too: an old id never
            // names a new program.
            let existing = self.store.issued_session_ids().map_err(store_err)?;
            let id = make_session_id(&binary_name, chrono::Local::now(), |c| existing.contains(c));
            let (key, stats) = self
                .store
                .create_session(NewSession {
                    id: id.clone(),
                    binary_path: binary.display().to_string(),
                    project_root: project_root.display().to_string(),
                    launch_json,
                    started_at: unix_millis(),
                    caps: event_caps(settings),
                })
                .map_err(store_err)?;
            (id, key, stats)
        };

        let fail = |e: SessionError| {
            let _ = self.store.delete_session(key);
            e
        };
        let bridge = Arc::new(self.pool.take(&python).map_err(|e| fail(bridge_error(e)))?);
        let agent_js = bridge
            .ensure_agent(&self.home.agent_cache_dir(), launch_timeout)
            .map_err(|e| fail(bridge_error(e)))?;
        let output = bridge
            .take_output()
            .expect("a fresh bridge has its output pipes");
        // A Node.js program loads its sources with probes written in
        // (javascript_hooks.rs); an attached one gets them for what it
        // loads from now on, and its scripts already loaded are swapped for
        // their probed copies when a pattern names them.
        let node_options = req
            .env
            .get("NODE_OPTIONS")
            .cloned()
            .or_else(|| std::env::var("NODE_OPTIONS").ok());
        let node_refused = (program.language == strobe_symbols::Language::JavaScript
            && req.attach_pid.is_none())
        .then(|| javascript_hooks::runtime_refused(&program.args, node_options.as_deref()))
        .flatten();
        let node =
            if program.language == strobe_symbols::Language::JavaScript && node_refused.is_none() {
                let pending = self.pending.lock().expect("pending lock").clone();
                let patterns: Vec<_> = pending.iter().chain(&launch_patterns).collect();
                let dir = self.home.session_dir(&id).join("js");
                Some(
                    javascript_hooks::NodeLaunch::prepare(
                        &dir,
                        self.home.root(),
                        &patterns,
                        &project_root,
                        &cwd,
                        &program.args,
                        &req.env,
                    )
                    .map_err(|e| {
                        bridge.terminate();
                        fail(e)
                    })?,
                )
            } else {
                None
            };
        let origin_ns = monotonic_ns();
        // The wall-clock time of the same zero: the store's started_at, so
        // the agent's calls (wall-clock timed) line up with the events.
        let origin_unix_ms = unix_millis();
        // Without `stdin: "pipe"` the write end goes now: the program reads EOF.
        let mut output = output;
        let stdin = output.stdin.take().filter(|_| req.stdin_pipe);
        let (pid, output) = match req.attach_pid {
            Some(pid) => {
                // One tracer at a time: a Frida that detached from it a
                // moment ago may still be freeing its agent under ptrace,
                // and Frida's fallback when ptrace is refused can hang.
                if let Some(tracer) = crate::procfs::wait_untraced(pid, TRACED_WAIT) {
                    bridge.terminate();
                    return Err(fail(SessionError::attach(format!(
                        "process {pid} is being traced by {}: Linux allows one tracer per process, and \
                         attaching needs it. Detach that debugger (gdb, strace, another Strobe session) and \
                         attach again",
                        tracer_name(tracer)
                    ))));
                }
                bridge
                    .attach(pid, &agent_js, req.follow_children, launch_timeout)
                    .map_err(|e| {
                        bridge.terminate();
                        fail(match e {
                            BridgeError::Failed { message, .. } => SessionError::attach(format!(
                                    "Frida could not attach to pid {pid} ({}): {message}. Attaching needs \
                                     ptrace rights over the process: same user, and \
                                     /proc/sys/kernel/yama/ptrace_scope 0 (or the daemon as its parent).",
                                    binary.display()
                                ),
                            ),
                            other => bridge_error(other),
                        })
                    })?;
                // An attached process keeps its own stdout/stderr.
                (pid, None)
            }
            None => (
                {
                    // What the launch adds for Node.js goes with the
                    // program's own environment.
                    let mut spawned = req.clone();
                    if let Some(node) = &node {
                        spawned.env.extend(node.env.clone());
                    }
                    if let Some(vd) = &virtual_display {
                        spawned.env_unset = display::apply(vd, &mut spawned.env);
                    }
                    self.spawn_target(
                        &spawned,
                        &program,
                        cwd.clone(),
                        agent_js,
                        &bridge,
                        launch_timeout,
                    )
                    .map_err(fail)?
                },
                Some(output),
            ),
        };
        let attached = req.attach_pid.is_some();
        let _ = self.store.update_session(
            key,
            SessionUpdate {
                pid: Some(pid),
                started_at: Some(origin_unix_ms),
                ..Default::default()
            },
        );

        let live = Arc::new(Live {
            key,
            id: id.clone(),
            pid,
            origin_ns,
            start_time: proc_start_time(pid),
            binary_path: binary.display().to_string(),
            program_args: program.args.clone(),
            program_env: req.env.clone().into_iter().collect(),
            project_root: project_root.display().to_string(),
            started_at: origin_unix_ms,
            stats,
            life: Mutex::new(Lifecycle::default()),
            ended: Condvar::new(),
            bridge: bridge.clone(),
            captured_pipes: Mutex::new(
                output
                    .iter()
                    .flat_map(|o| {
                        [
                            capture::pipe_inode(&o.stdout),
                            capture::pipe_inode(&o.stderr),
                        ]
                    })
                    .flatten()
                    .collect(),
            ),
            capture: Mutex::new(output.map(|output| {
                Capture::start(
                    self.store.clone(),
                    key,
                    pid,
                    origin_ns,
                    Some(output.stdout),
                    Some(output.stderr),
                )
            })),
            tracer: Mutex::new(None),
            replies: Mutex::new(HashMap::new()),
            fork_gate: Default::default(),
            slow_hook: Mutex::new(None),
            next_request: AtomicU64::new(1),
            known_threads: Mutex::new(std::collections::HashSet::new()),
            thread_owners: Mutex::new(Default::default()),
            ring: Mutex::new(Default::default()),
            modules: Mutex::new(Vec::new()),
            trace_stats: Mutex::new(trace::TraceStats::default()),
            late_hooks: Mutex::new(Vec::new()),
            decoders: Arc::new(std::sync::RwLock::new(HashMap::new())),
            unsaved: Mutex::new(UnsavedCaptures::default()),
            debug: Mutex::new(breakpoints::DebugState::default()),
            debug_changed: Condvar::new(),
            root: None,
            children: Mutex::new(HashMap::new()),
            followed: AtomicU32::new(0),
            desired: Mutex::new(processes::Desired::default()),
            settings: settings.clone(),
            origin: if attached {
                processes::Origin::Attach
            } else {
                processes::Origin::Launch
            },
            parent_pid: None,
            journal: Mutex::new(None),
            gone: AtomicBool::new(false),
            set_up: AtomicBool::new(true),
            replaced: AtomicBool::new(false),
            probed: node.as_ref().map(|n| n.probed.clone()),
            id_base: 0,
            exit_watch: Mutex::new(crate::exit_watch::ExitWatch::open(pid)),
            rejected_messages: messages::RejectedMessages::default(),
            ui: Mutex::new(super::ui::UiState::new(display, virtual_display)),
            channels: Mutex::new(super::channels::Channels::with_stdin(
                stdin.map(|w| {
                    strobe_channels::StdinPort::new(std::fs::File::from(
                        std::os::fd::OwnedFd::from(w),
                    ))
                }),
                jack,
            )),
        });
        self.live
            .lock()
            .expect("live lock")
            .insert(id.clone(), live.clone());
        self.captures
            .lock()
            .expect("captures lock")
            .insert(id.clone(), live.decoders.clone());
        let events = bridge.events();
        let (mgr, l) = (self.clone(), live.clone());
        if let Err(e) = std::thread::Builder::new()
            .name(format!("strobe-session-{pid}"))
            .spawn(move || mgr.event_loop(&l, events))
        {
            return Err(self.abandon_launch(
                &live,
                SessionError::internal(format!("cannot start the session thread: {e}")),
            ));
        }

        // Pending patterns are hooked now, before the program's main runs.
        let mut pending: Vec<strobe_symbols::Pattern> =
            self.pending.lock().expect("pending lock").clone();
        pending.extend(launch_patterns);
        let mut pending_options = self.pending_options.lock().expect("pending lock").clone();
        pending_options
            .watch_add
            .extend(req.watches.iter().cloned());
        pending_options.lenient_watches = true;
        live.desired
            .lock()
            .expect("desired lock")
            .update(&pending, &[], &pending_options);
        let mut warnings: Vec<String> = program.note.iter().cloned().collect();
        warnings.extend(display_note);
        let virtual_display = live
            .ui
            .lock()
            .expect("ui lock")
            .virtual_display
            .as_ref()
            .map(|vd| vd.name().to_string());
        warnings.extend(node.and_then(|n| n.warning));
        warnings.extend(node_refused);
        if attached && program.language == strobe_symbols::Language::JavaScript {
            let dir = self.home.session_dir(&id).join("js");
            warnings.extend(self.load_node_runtime(&live, &dir, launch_timeout));
        }
        let pending_applied = if pending.is_empty() && pending_options.watch_add.is_empty() {
            // Node's own symbols (a 100 MB binary) are not what a first
            // pattern names; indexing them would take the CPU the
            // program's start-up needs.
            if program.language != strobe_symbols::Language::JavaScript {
                self.index_in_background(&binary, &project_root);
            }
            None
        } else {
            match self.apply_patterns(&live, &pending, &[], &pending_options, settings) {
                Ok(r) => {
                    warnings.extend(r.warnings);
                    Some(pending.len() as u32)
                }
                Err(e) => {
                    return Err(self.abandon_launch(
                        &live,
                        e.map(|m| format!("could not install the pending patterns: {m}")),
                    ));
                }
            }
        };

        let entry = if req.staged_breakpoints || req.stop_on_entry {
            let e = self.set_entry_breakpoints(&id, req.stop_on_entry);
            warnings.extend(e.warnings.iter().cloned());
            e
        } else {
            staged::EntryOutcome::default()
        };
        if req.follow_children {
            self.guard_forks(&live, launch_timeout);
        }
        // Before the program runs: a file channel sees its first writes.
        if let Err(e) = self.open_launch_channels(&live, &req.channels) {
            return Err(self.abandon_launch(&live, e));
        }
        if !attached && let Err(e) = bridge.request("resume", json!({}), launch_timeout) {
            return Err(self.abandon_launch(
                &live,
                SessionError::attach(format!("could not resume the target: {e}")),
            ));
        }
        {
            // Under the lifecycle lock, and only if nothing ended the session
            // meanwhile: a fast exit must not be overwritten with "running".
            let mut life = live.life.lock().expect("lifecycle lock");
            if life.state.is_none() {
                life.state = Some(SessionState::Running);
                let _ = self.store.update_session(
                    key,
                    SessionUpdate {
                        status: Some("running".into()),
                        ..Default::default()
                    },
                );
            }
        }
        let (mgr, l) = (self.clone(), live.clone());
        std::thread::spawn(move || mgr.watchdog(&l, timeout));
        self.pool.refill(&python);
        let paused = if entry.entry_set {
            let p = self.wait_for_first_pause(&live, staged::ENTRY_WAIT);
            if p.is_none() {
                warnings.push(format!(
                    "stopOnEntry: no thread paused at the start (main, or a script's first statement) within {} s (it may have ended or not reached it)",
                    staged::ENTRY_WAIT.as_secs()
                ));
            }
            p
        } else {
            None
        };

        Ok(LaunchResponse {
            session_id: id.clone(),
            pid,
            pending_patterns_applied: pending_applied,
            pending_breakpoints_applied: entry.applied,
            next_steps: if let Some(p) = &paused {
                format!(
                    "Paused in {} at {}:{} (thread {}, {}) before its first line ran; its stdout/stderr are being \
                     recorded. Read locals and globals with debug_memory {{sessionId: \"{id}\", threadId: {}}}, step with \
                     debug_continue {{action: \"step-over\"}}, or run on with debug_continue.",
                    p.function.as_deref().unwrap_or("main"),
                    p.file
                        .as_deref()
                        .map_or("?", |f| f.rsplit('/').next().unwrap_or(f)),
                    p.line.map_or("?".to_string(), |l| l.to_string()),
                    p.thread_id,
                    p.breakpoint_id.as_deref().unwrap_or("breakpoint"),
                    p.thread_id
                )
            } else if attached {
                format!(
                    "Attached to pid {pid} ({}). Its stdout/stderr are NOT captured (they stay where the process \
                     writes them). Add trace patterns with debug_trace {{sessionId: \"{id}\", add: [...]}}, set \
                     breakpoints, read memory; debug_session {{action: \"stop\"}} detaches and leaves it running.",
                    binary.display()
                )
            } else {
                format!(
                    "The program is running and its stdout/stderr are being recorded. Read them first: \
                 debug_query {{sessionId: \"{id}\", eventType: \"stderr\"}} (then \"stdout\"). \
                 Check debug_session {{action: \"status\"}} for exit code or crash. Add trace patterns \
                 only if the output does not explain the problem."
                )
            },
            paused,
            warnings,
            virtual_display,
            jack_server: req
                .jack_auto
                .then(|| req.env.get("JACK_DEFAULT_SERVER").cloned())
                .flatten(),
        })
    }

    /// Indexes `binary`'s symbols on a thread of its own, so that a first
    /// debug_trace is quick.
    fn index_in_background(&self, binary: &std::path::Path, project_root: &std::path::Path) {
        let (cache, bin, root) = (
            self.symbol_cache_dir(),
            binary.to_path_buf(),
            project_root.to_path_buf(),
        );
        std::thread::spawn(move || {
            let image = Image {
                path: &bin,
                kind: ImageKind::Program,
                project_root: &root,
                args: &[],
                env: &[],
            };
            let _ = resolvers::open(&image, Some(&cache), Some(strobe_symbols::Language::Native));
        });
    }

    /// Spawns `binary` suspended, with the agent loaded; returns its pid.
    pub(super) fn spawn_target(
        &self,
        req: &LaunchRequest,
        program: &crate::language::Program,
        cwd: std::path::PathBuf,
        agent_js: std::path::PathBuf,
        bridge: &Bridge,
        timeout: Duration,
    ) -> Result<u32, SessionError> {
        let mut env: BTreeMap<String, String> = std::env::vars().collect();
        for k in &req.env_unset {
            env.remove(k);
        }
        env.extend(req.env.clone());
        crash::sanitizers_abort_on_error(&mut env);
        let binary = &program.command;
        let mut argv = vec![binary.display().to_string()];
        argv.extend(program.args.iter().cloned());
        bridge
            .spawn(
                &SpawnRequest {
                    argv,
                    env: env.into_iter().collect(),
                    cwd: Some(cwd),
                    agent_js,
                    follow_children: req.follow_children,
                },
                timeout,
            )
            .map_err(|e| {
                bridge.terminate();
                match e {
                    BridgeError::Failed { message, .. } => SessionError::attach(format!(
                        "Frida could not spawn {}: {message}",
                        binary.display()
                    )),
                    other => bridge_error(other),
                }
            })
    }

    /// A launch that failed after the target was spawned: kill it (never
    /// resumed), drop the bridge and the session, and say why.
    pub(super) fn abandon_launch(&self, live: &Arc<Live>, cause: SessionError) -> SessionError {
        let reason = cause.message();
        self.fail_session(live, reason.clone());
        Self::close_channels(live);
        self.live.lock().expect("live lock").remove(&live.id);
        let _ = self.store.delete_session(live.key);
        cause.map(|_| format!("{reason}; the launch was abandoned and the process killed"))
    }
}

/// How long an attach waits for another tracer to let the process go.
const TRACED_WAIT: Duration = Duration::from_secs(5);

/// `pid N (comm)` of a tracer thread, for an error.
fn tracer_name(tid: u32) -> String {
    match std::fs::read_to_string(format!("/proc/{tid}/comm")) {
        Ok(comm) => format!("pid {tid} ({})", comm.trim()),
        Err(_) => format!("pid {tid}"),
    }
}

/// The display an attached process is on, from its environment.
fn attached_display(pid: u32) -> Option<strobe_ui::Display> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let pairs: Vec<(String, String)> = environ
        .split(|&b| b == 0)
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect();
    strobe_ui::Display::from_env(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}
