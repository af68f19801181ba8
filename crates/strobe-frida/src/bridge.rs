//! One bridge process and the daemon's handle to it.
//!
//! Threads: a reader thread owns the socket's read side and routes frames —
//! responses to the waiting request, agent messages and notices to the
//! session's event channel. That channel is unbounded so the reader never
//! blocks: a response is never stuck behind queued events. Flow control is
//! end to end instead — the agent keeps only a bounded number of trace
//! chunks unacknowledged (see `trace-ack` in agent/src/tracers/native/drain.ts).
//! Rule for consumers: the thread that drains [`Bridge::events`] must never
//! wait on a [`Bridge::request`], or the two could wait on each other.

use crate::protocol::{self, MESSAGE, NOTICE, POST, REQUEST, RESPONSE};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded, unbounded};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{self, PipeReader};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

static BRIDGE_SCRIPT: &str = include_str!("../python/bridge.py");

/// Events a bridge delivers to its session.
#[derive(Debug, Clone, PartialEq)]
pub enum BridgeEvent {
    /// A message from an agent: Frida's message text (JSON) and raw data.
    AgentMessage {
        /// The process whose agent sent it.
        pid: u32,
        /// The message document as Frida sent it.
        text: Vec<u8>,
        /// Binary data attached with `send(msg, data)`.
        data: Vec<u8>,
    },
    /// Frida detached from a process (`process-terminated`,
    /// `process-replaced` when it called exec, …).
    Detached {
        /// The process.
        pid: u32,
        /// Frida's reason.
        reason: String,
        /// Crash report, where Frida produced one.
        crash: Option<Value>,
    },
    /// A followed process forked or exec'd: the new image is suspended until
    /// it is adopted (see [`Bridge::adopt`]) and resumed.
    Child {
        /// The new process (for exec: the same pid, a new image).
        pid: u32,
        /// The process it came from.
        parent_pid: u32,
        /// `fork`, `exec` or `spawn`.
        origin: String,
        /// The executable exec'd, when known.
        path: Option<String>,
        /// Its arguments, when known.
        argv: Vec<String>,
    },
    /// The bridge process itself ended or its channel broke.
    Gone {
        /// What happened, with the bridge's exit status and log location.
        reason: String,
    },
}

/// Failures talking to a bridge.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// Python or frida is missing or broken; the message says how to fix it.
    #[error("{0}")]
    Unavailable(String),
    /// The bridge answered an operation with an error.
    #[error("Frida bridge could not {op}: {message}")]
    Failed {
        /// The operation.
        op: String,
        /// Frida's error text.
        message: String,
    },
    /// The bridge did not answer in time (it is presumed hung).
    #[error("Frida bridge did not answer '{op}' within {ms} ms (presumed hung; log: {log})")]
    Timeout {
        /// The operation.
        op: String,
        /// The limit that passed.
        ms: u128,
        /// The bridge's log file.
        log: String,
    },
    /// The bridge process is gone.
    #[error("Frida bridge is gone: {0}")]
    Gone(String),
    /// An OS-level failure starting or talking to the bridge.
    #[error("Frida bridge I/O error: {0}")]
    Io(#[from] io::Error),
}

/// What `spawn` needs.
#[derive(Debug, Clone)]
pub struct SpawnRequest {
    /// argv, argv[0] being the absolute executable path.
    pub argv: Vec<String>,
    /// Full environment for the target.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// The compiled agent to load before the target runs.
    pub agent_js: PathBuf,
    /// Gate forks and execs of the target (and theirs) so they can be
    /// instrumented before they run on.
    pub follow_children: bool,
}

/// The target's pipes, handed out once: stdout and stderr (read ends) and
/// stdin (the write end; dropping it gives the target EOF).
pub struct TargetOutput {
    /// The target's stdin.
    pub stdin: Option<io::PipeWriter>,
    /// The target's stdout.
    pub stdout: PipeReader,
    /// The target's stderr.
    pub stderr: PipeReader,
}

type Pending = Arc<Mutex<HashMap<u64, Sender<Result<Value, String>>>>>;

struct Inner {
    writer: Mutex<UnixStream>,
    pending: Pending,
    next_id: AtomicU64,
    child: Mutex<Child>,
    gone: Arc<Mutex<Option<String>>>,
    terminated: AtomicBool,
    log_path: PathBuf,
    frida_version: String,
    /// Frida's temporary files; removed once the bridge is gone.
    _tmp: crate::bridge_tmp::BridgeTmp,
}

/// Handle to a running bridge process.
pub struct Bridge {
    inner: Arc<Inner>,
    events: Receiver<BridgeEvent>,
    output: Mutex<Option<TargetOutput>>,
}

impl Bridge {
    /// Starts a bridge with `python` and waits until Frida is imported.
    /// `work_dir` receives the bridge script; `log_path` its log.
    pub fn start(
        python: &Path,
        work_dir: &Path,
        log_path: &Path,
        ready_timeout: Duration,
    ) -> Result<Bridge, BridgeError> {
        if !python.is_file() {
            return Err(BridgeError::Unavailable(format!(
                "no Python interpreter at {}",
                python.display()
            )));
        }
        std::fs::create_dir_all(work_dir)?;
        let script = work_dir.join(format!(
            "bridge-{}.py",
            crate::agent::source_hash(BRIDGE_SCRIPT)
        ));
        if !script.is_file() {
            strobe_core::files::write_atomically(&script, BRIDGE_SCRIPT.as_bytes())?;
        }
        let (ours, theirs) = UnixStream::pair()?;
        let (out_r, out_w) = io::pipe()?;
        let (err_r, err_w) = io::pipe()?;
        let (in_r, in_w) = io::pipe()?;
        let theirs_fd = theirs.as_raw_fd();
        let tmp = crate::bridge_tmp::BridgeTmp::create(work_dir)?;
        let mut cmd = Command::new(python);
        cmd.arg("-u")
            .arg(&script)
            .arg(log_path)
            .stdin(in_r)
            .stdout(out_w)
            .stderr(err_w)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("TMPDIR", tmp.path());
        // SAFETY: only async-signal-safe calls (dup2) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(theirs_fd, 3) < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        drop(theirs);
        drop(cmd);
        ours.set_write_timeout(Some(Duration::from_secs(10)))?;
        let mut reader = ours.try_clone()?;

        // Handshake: the first frame is `ready` or `fatal`.
        reader.set_read_timeout(Some(ready_timeout))?;
        let first = protocol::read_frame(&mut reader);
        reader.set_read_timeout(None)?;
        let log = log_path.display().to_string();
        let frida_version = match first {
            Ok(Some((NOTICE, payload))) => {
                let v: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
                match v["event"].as_str() {
                    Some("ready") => v["fridaVersion"].as_str().unwrap_or("?").to_string(),
                    Some("fatal") => {
                        reap(child);
                        return Err(BridgeError::Unavailable(format!(
                            "the Frida bridge could not start: {} (python: {}). Run `strobe setup` to (re)install the pinned frida.",
                            v["error"].as_str().unwrap_or("unknown error"),
                            python.display()
                        )));
                    }
                    _ => {
                        reap(child);
                        return Err(BridgeError::Gone(format!(
                            "unexpected first notice {v}; log: {log}"
                        )));
                    }
                }
            }
            Ok(_) => {
                reap(child);
                return Err(BridgeError::Gone(format!(
                    "bridge exited during start-up; log: {log}"
                )));
            }
            Err(e) => {
                reap(child);
                return Err(BridgeError::Gone(format!(
                    "bridge did not become ready ({e}); log: {log}"
                )));
            }
        };

        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let gone = Arc::new(Mutex::new(None));
        let (etx, erx) = unbounded();
        let inner = Arc::new(Inner {
            writer: Mutex::new(ours),
            pending: pending.clone(),
            next_id: AtomicU64::new(1),
            child: Mutex::new(child),
            gone: gone.clone(),
            terminated: AtomicBool::new(false),
            log_path: log_path.to_path_buf(),
            frida_version,
            _tmp: tmp,
        });
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("strobe-bridge-reader".into())
            .spawn(move || read_loop(reader, pending, gone, etx, weak))?;
        Ok(Bridge {
            inner,
            events: erx,
            output: Mutex::new(Some(TargetOutput {
                stdin: Some(in_w),
                stdout: out_r,
                stderr: err_r,
            })),
        })
    }

    /// The Frida version the bridge imported.
    pub fn frida_version(&self) -> &str {
        &self.inner.frida_version
    }

    /// The bridge's log file.
    pub fn log_path(&self) -> &Path {
        &self.inner.log_path
    }

    /// The bridge process id.
    pub fn process_id(&self) -> u32 {
        self.inner.child.lock().expect("child lock").id()
    }

    /// Events from the bridge (see the module docs for the consumer rule).
    pub fn events(&self) -> Receiver<BridgeEvent> {
        self.events.clone()
    }

    /// The target's output pipes; `None` after the first call.
    pub fn take_output(&self) -> Option<TargetOutput> {
        self.output.lock().expect("output lock").take()
    }

    /// Why the bridge is gone, if it is.
    pub fn gone_reason(&self) -> Option<String> {
        self.inner.gone.lock().expect("gone lock").clone()
    }

    /// Sends a request and waits for its response.
    pub fn request(
        &self,
        op: &str,
        mut fields: Value,
        timeout: Duration,
    ) -> Result<Value, BridgeError> {
        if let Some(r) = self.gone_reason() {
            return Err(BridgeError::Gone(r));
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        fields["id"] = json!(id);
        fields["op"] = json!(op);
        let (tx, rx) = bounded(1);
        self.inner
            .pending
            .lock()
            .expect("pending lock")
            .insert(id, tx);
        let payload = serde_json::to_vec(&fields).expect("JSON values serialize");
        if let Err(e) = self.write(REQUEST, &payload) {
            self.inner.pending.lock().expect("pending lock").remove(&id);
            return Err(e);
        }
        match rx.recv_timeout(timeout) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(message)) => Err(BridgeError::Failed {
                op: op.into(),
                message,
            }),
            Err(RecvTimeoutError::Timeout) => {
                self.inner.pending.lock().expect("pending lock").remove(&id);
                Err(BridgeError::Timeout {
                    op: op.into(),
                    ms: timeout.as_millis(),
                    log: self.inner.log_path.display().to_string(),
                })
            }
            Err(RecvTimeoutError::Disconnected) => Err(BridgeError::Gone(
                self.gone_reason()
                    .unwrap_or_else(|| "the bridge closed its channel".into()),
            )),
        }
    }

    /// Posts a message to the root target's agent (`recv()` in the agent);
    /// `json` is sent as is.
    pub fn post(&self, json: &[u8], data: &[u8]) -> Result<(), BridgeError> {
        self.post_to(0, json, data)
    }

    /// Posts a message to the agent in process `pid` (0: the root target).
    pub fn post_to(&self, pid: u32, json: &[u8], data: &[u8]) -> Result<(), BridgeError> {
        let mut payload = Vec::with_capacity(8 + json.len() + data.len());
        payload.extend_from_slice(&pid.to_le_bytes());
        payload.extend_from_slice(&protocol::pack_pair(json, data));
        self.write(POST, &payload)
    }

    /// Loads the agent into a gated child reported by [`BridgeEvent::Child`]
    /// (it stays suspended until [`Bridge::resume`]).
    pub fn adopt(&self, pid: u32, timeout: Duration) -> Result<(), BridgeError> {
        self.request("adopt", json!({ "pid": pid }), timeout)
            .map(|_| ())
    }

    /// Lets a suspended (spawned or gated) process run.
    pub fn resume(&self, pid: u32, timeout: Duration) -> Result<(), BridgeError> {
        self.request("resume", json!({ "pid": pid }), timeout)
            .map(|_| ())
    }

    /// Attaches to a running process and loads the agent; it is never
    /// killed by this bridge, only detached from.
    pub fn attach(
        &self,
        pid: u32,
        agent_js: &Path,
        follow_children: bool,
        timeout: Duration,
    ) -> Result<(), BridgeError> {
        self.request(
            "attach",
            json!({"pid": pid, "agent": agent_js, "followChildren": follow_children}),
            timeout,
        )
        .map(|_| ())
    }

    /// Writes one frame. A failed or timed-out write may have left half a
    /// frame in the stream, so the channel is shut down: the reader sees the
    /// end, reports the bridge gone, and the session fails with that reason
    /// instead of talking on over a corrupt stream.
    fn write(&self, kind: u8, payload: &[u8]) -> Result<(), BridgeError> {
        let mut w = self.inner.writer.lock().expect("writer lock");
        protocol::write_frame(&mut *w, kind, payload).map_err(|e| {
            let _ = w.shutdown(std::net::Shutdown::Both);
            BridgeError::Gone(format!("cannot write to the bridge: {e}"))
        })
    }

    /// Compiles the embedded agent if the cache does not hold this version yet.
    pub fn ensure_agent(
        &self,
        cache_root: &Path,
        timeout: Duration,
    ) -> Result<PathBuf, BridgeError> {
        let build = crate::agent::prepare(cache_root, self.frida_version())?;
        if !build.is_compiled() {
            self.request(
                "compile",
                json!({
                    "entry": build.entry,
                    "projectRoot": build.dir,
                    "output": build.js,
                }),
                timeout,
            )?;
        }
        Ok(build.js)
    }

    /// Spawns the target suspended with the agent loaded; returns its pid.
    pub fn spawn(&self, req: &SpawnRequest, timeout: Duration) -> Result<u32, BridgeError> {
        let env: serde_json::Map<String, Value> =
            req.env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        let v = self.request(
            "spawn",
            json!({
                "argv": req.argv,
                "env": env,
                "cwd": req.cwd,
                "agent": req.agent_js,
                "followChildren": req.follow_children,
            }),
            timeout,
        )?;
        v["pid"]
            .as_u64()
            .map(|p| p as u32)
            .ok_or_else(|| BridgeError::Failed {
                op: "spawn".into(),
                message: format!("no pid in {v}"),
            })
    }

    /// Stops the bridge: asks it to shut down (it kills a target it launched),
    /// then makes sure the process is gone. Idempotent; every call returns
    /// only once the process is gone.
    pub fn terminate(&self) {
        let first = !self.inner.terminated.swap(true, Ordering::SeqCst);
        if first && self.gone_reason().is_none() {
            let _ = self.request("shutdown", json!({}), Duration::from_secs(3));
        }
        // Every caller returns only once the bridge is gone: a later one
        // waits here while the first holds the lock. (A bridge that just
        // detached may still be freeing its agent in the target under
        // ptrace; whoever attaches next must find it done.)
        let mut child = self.inner.child.lock().expect("child lock");
        for _ in 0..100 {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Our own child, never anyone else's.
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.terminate();
    }
}

fn reap(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

fn read_loop(
    mut reader: UnixStream,
    pending: Pending,
    gone: Arc<Mutex<Option<String>>>,
    events: Sender<BridgeEvent>,
    inner: std::sync::Weak<Inner>,
) {
    let end = loop {
        match protocol::read_frame(&mut reader) {
            Ok(Some((RESPONSE, payload))) => {
                let v: Value = match serde_json::from_slice(&payload) {
                    Ok(v) => v,
                    Err(e) => break format!("malformed response from the bridge: {e}"),
                };
                let Some(id) = v["id"].as_u64() else { continue };
                if let Some(tx) = pending.lock().expect("pending lock").remove(&id) {
                    let r = if v["ok"].as_bool() == Some(true) {
                        Ok(v)
                    } else {
                        Err(v["error"].as_str().unwrap_or("unknown error").to_string())
                    };
                    let _ = tx.send(r);
                }
            }
            Ok(Some((MESSAGE, payload))) => {
                let Some((pid, (text, data))) = payload.get(..4).and_then(|p| {
                    Some((
                        u32::from_le_bytes(p.try_into().ok()?),
                        protocol::unpack_pair(&payload[4..])?,
                    ))
                }) else {
                    break "malformed agent message frame".to_string();
                };
                let ev = BridgeEvent::AgentMessage {
                    pid,
                    text: text.to_vec(),
                    data: data.to_vec(),
                };
                if events.send(ev).is_err() {
                    // Nobody listens any more (session gone); keep draining responses.
                }
            }
            Ok(Some((NOTICE, payload))) => {
                let v: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
                let pid = v["pid"].as_u64().unwrap_or(0) as u32;
                if v["event"] == "detached" {
                    let _ = events.send(BridgeEvent::Detached {
                        pid,
                        reason: v["reason"].as_str().unwrap_or("unknown").to_string(),
                        crash: v.get("crash").filter(|c| !c.is_null()).cloned(),
                    });
                } else if v["event"] == "child" {
                    let _ = events.send(BridgeEvent::Child {
                        pid,
                        parent_pid: v["parentPid"].as_u64().unwrap_or(0) as u32,
                        origin: v["origin"].as_str().unwrap_or("fork").to_string(),
                        path: v["path"].as_str().map(str::to_string),
                        argv: v["argv"]
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(|x| x.as_str().map(str::to_string))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    });
                }
            }
            Ok(Some((kind, _))) => break format!("unknown frame kind {kind:#x} from the bridge"),
            Ok(None) => break "the bridge closed its channel".to_string(),
            Err(e) => break format!("reading from the bridge failed: {e}"),
        }
    };
    let mut reason = end;
    if let Some(inner) = inner.upgrade() {
        let mut child = inner.child.lock().expect("child lock");
        for _ in 0..25 {
            if let Ok(Some(status)) = child.try_wait() {
                reason = format!("{reason}; bridge exited with {status}");
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        reason = format!("{reason} (log: {})", inner.log_path.display());
    }
    *gone.lock().expect("gone lock") = Some(reason.clone());
    pending.lock().expect("pending lock").clear();
    let _ = events.send(BridgeEvent::Gone { reason });
}
