//! Sessions of several processes: forks and execs followed through Frida's
//! child gating.
//!
//! Every process image of a session is a [`Live`]: the first one (the
//! launched or attached process) is the root and owns the session-wide parts
//! (output capture, lifecycle); each followed image shares its store session
//! and bridge, has its own agent, tracer and breakpoints, and hands out
//! function ids from its own range (`id_base`), so the images' events sit in
//! one timeline and one function table.
//!
//! A gated child is suspended until it is adopted: for a fork, its agent
//! first undoes the code patches it inherited (the parent's hooks and
//! breakpoint traps, listed in the parent agent's patch journal, point into
//! memory no agent of the child drains), then the session's patterns and
//! watches are applied as for a launch, then it runs on. An exec'd image is
//! resolved against its own executable.

use super::{Live, SessionManager, SessionState};
use crate::capture::{self, Capture};
use crate::trace::{TraceOptions, WatchRequest};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use strobe_core::event::EventKind;
use strobe_frida::agent_protocol::{
    DaemonMessage, FdsClosed, ForksGuarded, Inherited, OutputOwned,
};
use strobe_symbols::Pattern;

/// Function ids per process image: the agent's function table size, so an
/// image's ids never collide with another's and still index its table.
const IDS_PER_IMAGE: u32 = 1 << 18;

/// What every process of a session is traced with: the patterns and watches
/// in force, replayed into each followed child before it runs on.
#[derive(Debug, Default, Clone)]
pub(crate) struct Desired {
    patterns: Vec<Pattern>,
    watches: Vec<WatchRequest>,
    sampling: Option<bool>,
    depth: Option<u32>,
}

impl Desired {
    /// The trace patterns, as written.
    pub(crate) fn pattern_texts(&self) -> Vec<String> {
        self.patterns.iter().map(|p| p.text()).collect()
    }

    /// Records a `debug_trace` change.
    pub(crate) fn update(&mut self, add: &[Pattern], remove: &[String], opts: &TraceOptions) {
        self.patterns.retain(|p| !remove.contains(&p.text()));
        for p in add {
            if !self.patterns.contains(p) {
                self.patterns.push(p.clone());
            }
        }
        self.watches
            .retain(|w| !opts.watch_remove.iter().any(|l| Some(l) == watch_label(w)));
        self.watches.extend(opts.watch_add.iter().cloned());
        if opts.sampling.is_some() {
            self.sampling = opts.sampling;
        }
        if opts.serialization_depth.is_some() {
            self.depth = opts.serialization_depth;
        }
    }

    fn is_empty(&self) -> bool {
        self.patterns.is_empty() && self.watches.is_empty()
    }

    fn options(&self) -> TraceOptions {
        TraceOptions {
            sampling: self.sampling,
            serialization_depth: self.depth,
            watch_add: self.watches.clone(),
            watch_remove: Vec::new(),
            lenient_watches: true,
        }
    }
}

fn watch_label(w: &WatchRequest) -> Option<&String> {
    w.label
        .as_ref()
        .or(w.variable.as_ref())
        .or(w.address.as_ref())
        .or(w.expr.as_ref())
}

/// How a process image joined its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Launched by `debug_launch`.
    Launch,
    /// Attached to with `attachPid` (never signalled, only detached from).
    Attach,
    /// Forked by a followed process.
    Fork,
    /// Exec'd by a followed process (same pid, new image).
    Exec,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Origin::Launch => "launch",
            Origin::Attach => "attach",
            Origin::Fork => "fork",
            Origin::Exec => "exec",
        })
    }
}

/// A process of a session, as `debug_session status` lists it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessInfo {
    /// Process id.
    pub pid: u32,
    /// The process it forked from (for exec: the same pid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_pid: Option<u32>,
    /// How it joined the session.
    pub origin: Origin,
    /// Its executable.
    pub binary_path: String,
    /// running, exited, crashed or replaced (by exec).
    pub state: &'static str,
    /// Exit code, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Crash signal, when it crashed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// Functions hooked in it now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hooked_functions: Option<usize>,
}

impl Live {
    /// The session's root image; `None` for the root itself.
    pub(super) fn root(&self) -> Option<Arc<Live>> {
        self.root.as_ref().and_then(std::sync::Weak::upgrade)
    }

    /// A followed image of `root`'s session.
    fn child_image(
        root: &Arc<Live>,
        pid: u32,
        parent_pid: u32,
        binary_path: String,
        origin: Origin,
        id_base: u32,
    ) -> Live {
        // A fork runs the root's program; an exec'd one, arguments unknown here.
        let same = binary_path == root.binary_path;
        Live {
            key: root.key,
            id: root.id.clone(),
            pid,
            origin_ns: root.origin_ns,
            start_time: super::proc_start_time(pid),
            program_args: if same {
                root.program_args.clone()
            } else {
                Vec::new()
            },
            program_env: root.program_env.clone(),
            ui: Mutex::new(super::ui::UiState::default()),
            channels: Mutex::new(Default::default()),
            binary_path,
            project_root: root.project_root.clone(),
            started_at: strobe_core::clock::unix_millis(),
            stats: root.stats.clone(),
            life: Mutex::new(super::Lifecycle::default()),
            ended: Condvar::new(),
            bridge: root.bridge.clone(),
            capture: Mutex::new(None),
            captured_pipes: Mutex::new(Default::default()),
            tracer: Mutex::new(None),
            replies: Mutex::new(HashMap::new()),
            fork_gate: Default::default(),
            slow_hook: Mutex::new(None),
            next_request: AtomicU64::new(1),
            known_threads: Mutex::new(std::collections::HashSet::new()),
            thread_owners: Mutex::new(Default::default()),
            ring: Mutex::new(Default::default()),
            modules: Mutex::new(Vec::new()),
            trace_stats: Mutex::new(Default::default()),
            late_hooks: Mutex::new(Vec::new()),
            decoders: root.decoders.clone(),
            unsaved: Mutex::new(Default::default()),
            debug: Mutex::new(Default::default()),
            debug_changed: Condvar::new(),
            root: Some(Arc::downgrade(root)),
            children: Mutex::new(HashMap::new()),
            followed: AtomicU32::new(0),
            desired: Mutex::new(Desired::default()),
            settings: root.settings.clone(),
            origin,
            parent_pid: Some(parent_pid),
            journal: Mutex::new(None),
            gone: AtomicBool::new(false),
            set_up: AtomicBool::new(false),
            replaced: AtomicBool::new(false),
            probed: root.probed.clone(),
            id_base,
            exit_watch: Mutex::new(crate::exit_watch::ExitWatch::open(pid)),
            rejected_messages: super::messages::RejectedMessages::default(),
        }
    }
}

impl SessionManager {
    /// The image of `root`'s session that `pid` runs now.
    pub(super) fn image(&self, root: &Arc<Live>, pid: u32) -> Arc<Live> {
        root.children
            .lock()
            .expect("children lock")
            .get(&pid)
            .cloned()
            .unwrap_or_else(|| root.clone())
    }

    /// Followed images still running.
    pub(super) fn running_children(&self, root: &Live) -> Vec<Arc<Live>> {
        root.children
            .lock()
            .expect("children lock")
            .values()
            .filter(|c| !c.gone.load(Ordering::SeqCst))
            .cloned()
            .collect()
    }

    /// Every image that can take new hooks: the root unless exec replaced
    /// it or it ended, then the running children.
    pub(super) fn active_images(&self, root: &Arc<Live>) -> Vec<Arc<Live>> {
        let mut v = Vec::new();
        if !root.replaced.load(Ordering::SeqCst) && !root.gone.load(Ordering::SeqCst) {
            v.push(root.clone());
        }
        let mut children = self.running_children(root);
        children.sort_by_key(|c| c.id_base);
        v.extend(children);
        v
    }

    /// A process of the session was forked, or exec'd a new image: adopt it,
    /// trace it like the rest, and let it run on.
    pub(super) fn follow_child(
        &self,
        root: &Arc<Live>,
        pid: u32,
        parent_pid: u32,
        origin: &str,
        path: Option<&str>,
    ) {
        let timeout = Duration::from_millis(root.settings.bridge_request_timeout_ms.max(10_000));
        // A session being stopped takes no new process: it runs on untraced.
        let stopping = root.life.lock().expect("lifecycle lock").stopping;
        if stopping {
            let _ = root.bridge.resume(pid, timeout);
            return;
        }
        let parent = self.image(root, parent_pid);
        let exec = origin == "exec";
        let binary = if exec {
            std::fs::read_link(format!("/proc/{pid}/exe"))
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| path.unwrap_or_default().to_string())
        } else {
            parent.binary_path.clone()
        };
        let ordinal = root.followed.fetch_add(1, Ordering::SeqCst) + 1;
        let origin = if exec { Origin::Exec } else { Origin::Fork };
        let child = Arc::new(Live::child_image(
            root,
            pid,
            parent_pid,
            binary.clone(),
            origin,
            ordinal.saturating_mul(IDS_PER_IMAGE),
        ));
        // Registered first: the agent's first messages arrive while it loads.
        root.children
            .lock()
            .expect("children lock")
            .insert(pid, child.clone());
        let mut problems = Vec::new();
        match root.bridge.adopt(pid, timeout) {
            Ok(()) => {
                // Cloned first: the guard must not live across the agent's answer.
                let journal = parent.journal.lock().expect("journal lock").clone();
                if !exec && let Some(journal) = journal {
                    match self.agent_request::<Inherited>(
                        &child,
                        |id| DaemonMessage::Inherit { id, journal },
                        timeout,
                    ) {
                        Ok(Inherited { error: Some(e), .. }) => {
                            problems.push(format!("undoing inherited hooks failed: {e:?}"))
                        }
                        Ok(r) => tracing::debug!(
                            "session {}: fork {pid} undid {} inherited patches",
                            root.id,
                            r.undone
                        ),
                        Err(e) => problems
                            .push(format!("undoing inherited hooks failed: {}", e.message())),
                    }
                }
                let desired = root.desired.lock().expect("desired lock").clone();
                if !desired.is_empty() {
                    match self.apply_patterns(
                        &child,
                        &desired.patterns,
                        &[],
                        &desired.options(),
                        &root.settings,
                    ) {
                        Ok(r) => problems.extend(r.warnings),
                        Err(e) => problems.push(format!("tracing it failed: {}", e.message())),
                    }
                }
            }
            Err(e) => {
                child.gone.store(true, Ordering::SeqCst);
                problems.push(format!("Frida could not instrument it: {e}"));
            }
        }
        if !problems.is_empty() {
            tracing::warn!(
                "session {}: followed {origin} {pid} ({binary}): {}",
                root.id,
                problems.join("; ")
            );
        }
        if !child.gone.load(Ordering::SeqCst) {
            if exec {
                // Same process, same pipes: its capture goes on.
                if !Arc::ptr_eq(&parent, root) {
                    let moved = parent.capture.lock().expect("capture lock").take();
                    *child.capture.lock().expect("capture lock") = moved;
                }
            } else if let Err(e) = self.own_output(root, &child, timeout) {
                tracing::warn!(
                    "session {}: output of {pid} stays on the shared pipes: {e}",
                    root.id
                );
            }
            self.guard_forks(&child, timeout);
            let sockets = root.channels.lock().expect("channels lock").sockets_watched;
            if sockets && let Err(e) = self.watch_sockets(&child, true, timeout) {
                tracing::warn!(
                    "session {}: socket I/O of {pid} is not recorded: {e}",
                    root.id
                );
            }
        }
        if let Err(e) = root.bridge.resume(pid, timeout) {
            tracing::warn!("session {}: could not resume {pid}: {e}", root.id);
        }
        child.set_up.store(true, Ordering::SeqCst);
    }

    /// Gives a forked child pipes of its own for the stdout/stderr it shares
    /// with the session (a pipe does not say which process wrote): its agent
    /// makes the pipes and puts their write ends on fds 1 and 2, the daemon
    /// opens the read ends through /proc and captures them under the
    /// child's pid. Descriptors the child already pointed elsewhere are left.
    fn own_output(
        &self,
        root: &Arc<Live>,
        child: &Arc<Live>,
        timeout: Duration,
    ) -> Result<(), String> {
        let captured = root.captured_pipes.lock().expect("pipes lock").clone();
        let fds: Vec<i32> = [1, 2]
            .into_iter()
            .filter(|fd| {
                capture::pipe_inode_of(child.pid, *fd).is_some_and(|i| captured.contains(&i))
            })
            .collect();
        if fds.is_empty() {
            return Ok(());
        }
        let r: OutputOwned = self
            .agent_request(
                child,
                |id| DaemonMessage::OwnOutput {
                    id,
                    fds: fds.clone(),
                },
                timeout,
            )
            .map_err(|e| e.message())?;
        if let Some(e) = r.error {
            return Err(e);
        }
        let read_end = |fd: i32| r.read_fds.get(&fd).copied();
        let open = |fd: i32| -> Option<std::io::PipeReader> {
            let n = read_end(fd)?;
            let file = std::fs::File::open(format!("/proc/{}/fd/{n}", child.pid)).ok()?;
            Some(std::io::PipeReader::from(std::os::fd::OwnedFd::from(file)))
        };
        let (stdout, stderr) = (open(1), open(2));
        {
            let mut pipes = root.captured_pipes.lock().expect("pipes lock");
            pipes.extend(stdout.iter().filter_map(capture::pipe_inode));
            pipes.extend(stderr.iter().filter_map(capture::pipe_inode));
        }
        let opened = stdout.is_some() || stderr.is_some();
        if opened {
            *child.capture.lock().expect("capture lock") = Some(Capture::start(
                self.store.clone(),
                child.key,
                child.pid,
                child.origin_ns,
                stdout,
                stderr,
            ));
        }
        // The child keeps only the write ends.
        let read_ends: Vec<i32> = fds.iter().filter_map(|fd| read_end(*fd)).collect();
        let _ = self.agent_request::<FdsClosed>(
            child,
            |id| DaemonMessage::CloseFds { id, fds: read_ends },
            timeout,
        );
        if opened {
            Ok(())
        } else {
            Err("the read ends could not be opened through /proc".to_string())
        }
    }

    /// Puts the agent's fork guard in front of fork() (see `guardForks` in
    /// the agent): a followed process's forks wait until its messages are
    /// delivered, which Frida's handling of gated children needs.
    pub(super) fn guard_forks(&self, live: &Live, timeout: Duration) {
        match self.agent_request::<ForksGuarded>(
            live,
            |id| DaemonMessage::GuardForks { id },
            timeout,
        ) {
            Ok(ForksGuarded { error: Some(e), .. }) => {
                tracing::warn!("session {}: fork guard of {}: {e:?}", live.id, live.pid,)
            }
            Ok(r) => tracing::debug!(
                "session {}: fork guard of {} in {} GOT slots",
                live.id,
                live.pid,
                r.slots
            ),
            Err(e) => tracing::warn!(
                "session {}: fork guard of {}: {}",
                live.id,
                live.pid,
                e.message()
            ),
        }
    }

    /// Frida detached from process `pid` of `root`'s session.
    pub(super) fn on_detached(
        &self,
        root: &Arc<Live>,
        pid: u32,
        reason: &str,
        crash: Option<Value>,
    ) {
        let image = self.image(root, pid);
        image.gone.store(true, Ordering::SeqCst);
        // A fork it announced will not report back, and requests waiting
        // for its agent's answer get none: they end now (a dropped sender),
        // not at their timeout.
        image.fork_gate.open();
        image.replies.lock().expect("replies lock").clear();
        // What the image committed to its ring is stored before its end.
        Self::finish_ring(&image);
        if reason == "process-replaced" {
            // exec: the pid lives on; its new image is reported as a child.
            image.replaced.store(true, Ordering::SeqCst);
            return;
        }
        if pid == root.pid {
            if !Arc::ptr_eq(&image, root) {
                // The main pid exec'd: its last image says how it ended.
                let last = image.life.lock().expect("lifecycle lock");
                let mut life = root.life.lock().expect("lifecycle lock");
                life.exit_code = life.exit_code.or(last.exit_code);
                life.crash_seen |= last.crash_seen;
                life.signal = life.signal.clone().or(last.signal.clone());
            }
            root.gone.store(true, Ordering::SeqCst);
            self.finalize(root, reason, crash);
        } else {
            self.finalize_child(&image);
        }
        self.wind_down(root);
    }

    /// Records how a followed process ended.
    fn finalize_child(&self, image: &Arc<Live>) {
        let ended = self.how_it_ended(image);
        let mut life = image.life.lock().expect("lifecycle lock");
        if life.ended {
            return;
        }
        super::ended_by_signal(&mut life, ended);
        let state = if life.crash_seen {
            SessionState::Crashed
        } else {
            SessionState::Exited
        };
        life.state = Some(state);
        life.ended = true;
        life.ended_at = Some(strobe_core::clock::unix_millis());
        let info = json!({
            "state": state.as_str(), "exitCode": life.exit_code, "signal": life.signal,
            "origin": image.origin, "parentPid": image.parent_pid, "binary": image.binary_path,
        });
        drop(life);
        // Its own output pipes (if any) end with it; a grandchild still
        // holding them is given the usual grace, off the event thread.
        if let Some(c) = image.capture.lock().expect("capture lock").take() {
            std::thread::spawn(move || c.finish(super::OUTPUT_GRACE));
        }
        self.append_json_event(image, EventKind::ProcessExit, image.pid, 0, &info);
        let _ = self.store.flush();
        image.ended.notify_all();
        image.debug_changed.notify_all();
    }

    /// Once the root and every followed process ended: the output is
    /// drained and the bridge let go.
    fn wind_down(&self, root: &Arc<Live>) {
        if !root.life.lock().expect("lifecycle lock").ended
            || !self.running_children(root).is_empty()
        {
            return;
        }
        if let Some(c) = root.capture.lock().expect("capture lock").take() {
            c.finish(super::OUTPUT_GRACE);
        }
        let b = root.bridge.clone();
        std::thread::spawn(move || b.terminate());
    }

    /// The session's processes for `debug_session status` (empty when only
    /// the root ever ran).
    pub(super) fn processes(&self, root: &Live) -> Vec<ProcessInfo> {
        let mut children: Vec<Arc<Live>> = root
            .children
            .lock()
            .expect("children lock")
            .values()
            .cloned()
            .collect();
        if children.is_empty() {
            return Vec::new();
        }
        children.sort_by_key(|c| c.id_base);
        let describe = |l: &Live| {
            let life = l.life.lock().expect("lifecycle lock");
            let state = if l.replaced.load(Ordering::SeqCst) {
                "replaced"
            } else if !life.ended && !l.gone.load(Ordering::SeqCst) {
                "running"
            } else if life.crash_seen {
                "crashed"
            } else {
                "exited"
            };
            ProcessInfo {
                pid: l.pid,
                parent_pid: l.parent_pid,
                origin: l.origin,
                binary_path: l.binary_path.clone(),
                state,
                exit_code: life.exit_code,
                signal: life.signal.clone(),
                hooked_functions: l
                    .tracer
                    .try_lock()
                    .ok()
                    .and_then(|t| t.as_ref().map(|t| t.hooked_count())),
            }
        };
        let mut v = vec![describe(root)];
        v.extend(children.iter().map(|c| describe(c)));
        v
    }
}
