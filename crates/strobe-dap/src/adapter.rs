//! DAP requests → the daemon's tools, and the session's state → DAP
//! events. One task: requests come through a channel (the reader is its
//! own task, so nothing is lost to a `select!`), and while the program
//! runs, `debug_session status` and the new output are polled every 50 ms.

use crate::Tools;
use crate::values::Refs;
use crate::wire::{WireError, read_message, write_message};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncWrite};

/// How often a running session is polled.
const POLL: Duration = Duration::from_millis(50);
/// While a thread the client looks at is stopped, every this many ticks
/// (250 ms): the client's stack and variable requests then seldom wait
/// behind a poll, and other threads' stops still arrive.
const POLL_WHILE_STOPPED: u32 = 5;
/// Frame ids: thread id × this + the frame's index.
pub(crate) const FRAMES_PER_THREAD: i64 = 1000;
/// A step waits this long for its pause.
const STEP_WAIT_MS: u64 = 10_000;

/// Serves one DAP client on `r`/`w` until it disconnects.
pub async fn serve<T, R, W>(tools: T, r: R, w: W) -> Result<(), WireError>
where
    T: Tools,
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin,
{
    serve_with_token(tools, r, w, None).await
}

/// [`serve`], for a client on a loopback port: its `launch` or `attach`
/// must carry `"token"` (the daemon's), and nothing but `initialize` is
/// answered before. A wrong or missing token ends the connection.
pub async fn serve_with_token<T, R, W>(
    tools: T,
    r: R,
    mut w: W,
    token: Option<String>,
) -> Result<(), WireError>
where
    T: Tools,
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin,
{
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Value, WireError>>(64);
    tokio::spawn(async move {
        let mut r = r;
        loop {
            let m = read_message(&mut r).await;
            let last = m.is_err();
            if tx.send(m).await.is_err() || last {
                break;
            }
        }
    });
    let mut a = Adapter::new(tools);
    a.required_token = token;
    let mut tick = tokio::time::interval(POLL);
    let mut ticks = 0u32;
    loop {
        tokio::select! {
            m = rx.recv() => {
                let msg = match m {
                    Some(Ok(msg)) => msg,
                    Some(Err(WireError::Closed)) | None => break,
                    Some(Err(e)) => {
                        a.event("output", json!({"category": "important", "output": format!("strobe dap: {e}\n")}));
                        a.flush(&mut w).await?;
                        break;
                    }
                };
                let done = a.handle(&msg).await;
                a.flush(&mut w).await?;
                if done {
                    break;
                }
            }
            _ = tick.tick(), if a.running() => {
                ticks = ticks.wrapping_add(1);
                if a.paused.is_empty() || ticks.is_multiple_of(POLL_WHILE_STOPPED) {
                    a.poll().await;
                    a.flush(&mut w).await?;
                }
            }
        }
    }
    Ok(())
}

pub(crate) struct Adapter<T> {
    pub(crate) tools: T,
    pub(crate) out: Vec<Value>,
    pub(crate) seq: i64,
    pub(crate) session: Option<String>,
    /// The session is this client's (launched here): disconnect stops it.
    pub(crate) owned: bool,
    pub(crate) pid: u64,
    pub(crate) stop_on_entry: bool,
    /// The thread paused on entry until configurationDone.
    pub(crate) entry_thread: Option<u64>,
    /// The breakpoint `stopOnEntry` made in `main`: removed at
    /// configurationDone, never shown as the user's.
    pub(crate) entry_breakpoint: Option<String>,
    pub(crate) configured: bool,
    pub(crate) ended: bool,
    /// Strobe's breakpoint ids set by each setBreakpoints source.
    pub(crate) set_by_source: HashMap<String, Vec<String>>,
    pub(crate) dap_ids: HashMap<String, i64>,
    /// The last DAP breakpoint id handed out.
    pub(crate) next_bp: i64,
    pub(crate) paused: BTreeMap<u64, Value>,
    pub(crate) refs: Refs,
    pub(crate) output_from: [i64; 3],
    /// The `crash` exception filter is on (the default).
    pub(crate) break_on_crash: bool,
    /// The crash event, once the program crashed and that was shown.
    pub(crate) crash: Option<Value>,
    /// Stopped at a crash (the process gone): the session is not polled
    /// until the client continues, which ends it.
    pub(crate) post_mortem: bool,
    /// Threads announced with a `thread` event.
    pub(crate) known_threads: std::collections::BTreeSet<u64>,
    /// The program's threads as the last status listed them.
    pub(crate) live_threads: Vec<Value>,
    /// On a port: the token `launch`/`attach` must carry (taken once
    /// they did).
    pub(crate) required_token: Option<String>,
}

impl<T: Tools> Adapter<T> {
    pub(crate) fn new(tools: T) -> Self {
        Adapter {
            tools,
            out: Vec::new(),
            seq: 0,
            session: None,
            owned: false,
            pid: 0,
            stop_on_entry: false,
            entry_thread: None,
            entry_breakpoint: None,
            configured: false,
            ended: false,
            set_by_source: HashMap::new(),
            dap_ids: HashMap::new(),
            next_bp: 0,
            paused: BTreeMap::new(),
            refs: Refs::default(),
            output_from: [0, 0, 0],
            break_on_crash: true,
            crash: None,
            post_mortem: false,
            known_threads: Default::default(),
            live_threads: Vec::new(),
            required_token: None,
        }
    }

    fn running(&self) -> bool {
        self.session.is_some() && !self.ended && self.configured && !self.post_mortem
    }

    fn next_seq(&mut self) -> i64 {
        self.seq += 1;
        self.seq
    }

    pub(crate) fn event(&mut self, name: &str, body: Value) {
        let seq = self.next_seq();
        self.out
            .push(json!({"seq": seq, "type": "event", "event": name, "body": body}));
    }

    /// `stopped` for thread `tid` (only it: no all-stop), naming the
    /// breakpoint it hit.
    pub(crate) fn stopped_event(&mut self, tid: u64, reason: &str, bp: Option<i64>) {
        let mut body = json!({"reason": reason, "threadId": tid, "allThreadsStopped": false});
        if let Some(b) = bp {
            body["hitBreakpointIds"] = json!([b]);
        }
        self.event("stopped", body);
    }

    pub(crate) fn respond(&mut self, req: &Value, result: Result<Value, String>) {
        let seq = self.next_seq();
        let mut m = json!({"seq": seq, "type": "response", "request_seq": req["seq"],
                           "command": req["command"], "success": result.is_ok()});
        match result {
            Ok(body) => m["body"] = body,
            Err(message) => {
                m["message"] = json!(message);
                m["body"] = json!({"error": {"id": 1, "format": message, "showUser": true}});
            }
        }
        self.out.push(m);
    }

    async fn flush<W: AsyncWrite + Unpin>(&mut self, w: &mut W) -> Result<(), WireError> {
        for m in std::mem::take(&mut self.out) {
            write_message(w, &m).await?;
        }
        Ok(())
    }

    pub(crate) fn session_id(&self) -> Result<String, String> {
        self.session
            .clone()
            .ok_or_else(|| "no program yet: send launch or attach first".to_string())
    }

    /// Handles one request; true when the client is done.
    async fn handle(&mut self, req: &Value) -> bool {
        let args = req.get("arguments").cloned().unwrap_or(json!({}));
        let command = req["command"].as_str().unwrap_or("").to_string();
        if req["type"] != "request" {
            return false;
        }
        if let Some(token) = self.required_token.clone() {
            match command.as_str() {
                "initialize" => {}
                "launch" | "attach" => {
                    let given = args["token"].as_str().unwrap_or("");
                    if !same_secret(given.as_bytes(), token.as_bytes()) {
                        let why = if given.is_empty() {
                            "needs"
                        } else {
                            "has the wrong"
                        };
                        self.respond(req, Err(format!(
                            "this strobe dap listens on a port: {command} {why} \"token\" (the daemon's, the `token=` of the URL `strobe ui` prints); closing the connection"
                        )));
                        return true;
                    }
                    self.required_token = None;
                }
                _ => {
                    self.respond(
                        req,
                        Err(format!(
                            "send launch or attach with the daemon's \"token\" before '{command}'"
                        )),
                    );
                    return command == "disconnect";
                }
            }
        }
        let result = match command.as_str() {
            "initialize" => Ok(capabilities()),
            "launch" => self.launch(&args).await,
            "attach" => self.attach(&args).await,
            "setBreakpoints" => self.set_breakpoints(&args).await,
            "setFunctionBreakpoints" => self.set_function_breakpoints(&args).await,
            "setExceptionBreakpoints" => self.set_exception_breakpoints(&args),
            "exceptionInfo" => self.exception_info(&args),
            "readMemory" => self.read_memory(&args).await,
            "writeMemory" => self.write_memory(&args).await,
            "configurationDone" => self.configuration_done().await,
            "threads" => self.threads().await,
            "stackTrace" => self.stack_trace(&args),
            "scopes" => self.scopes(&args).await,
            "variables" => self.variables(&args),
            "evaluate" => self.evaluate(&args).await,
            "setVariable" => self.set_variable(&args).await,
            "continue" => self.resume().await,
            "next" | "stepIn" | "stepOut" => {
                let action = match command.as_str() {
                    "next" => "step-over",
                    "stepIn" => "step-into",
                    _ => "step-out",
                };
                return self.step(req, &args, action).await;
            }
            "pause" => self.pause(&args).await,
            "disconnect" | "terminate" => {
                let r = self.disconnect(&args).await;
                self.respond(req, r);
                if command == "disconnect" {
                    return true;
                }
                self.event("terminated", json!({}));
                return false;
            }
            other => Err(format!("strobe dap does not support the '{other}' request")),
        };
        let launched = command == "launch" || command == "attach";
        let ok = result.is_ok();
        self.respond(req, result);
        if launched && ok {
            self.event("process", json!({"name": "program", "systemProcessId": self.pid,
                                          "startMethod": if self.owned { "launch" } else { "attach" }}));
            self.event("initialized", json!({}));
        }
        false
    }

    async fn launch(&mut self, args: &Value) -> Result<Value, String> {
        let program = args["program"]
            .as_str()
            .filter(|p| !p.is_empty())
            .ok_or("launch needs 'program': the path of the program to debug")?;
        // A bare name (`python3`, `node`) is looked up on PATH, as a shell
        // would; the program then runs in the adapter's folder unless
        // `cwd` says otherwise (a path runs in its own folder).
        let bare = !program.contains('/');
        let resolved = if bare {
            on_path(program).ok_or_else(|| {
                format!("launch: '{program}' is not on PATH; give its full path as 'program'")
            })?
        } else {
            std::path::PathBuf::from(program)
        };
        let program = resolved.display().to_string();
        let program = program.as_str();
        let cwd = match args["cwd"].as_str().filter(|c| !c.is_empty()) {
            Some(c) => c.to_string(),
            None if bare => std::env::current_dir()
                .map(|d| d.display().to_string())
                .map_err(|e| {
                    format!("launch: no 'cwd' given and the adapter's folder is unknown: {e}")
                })?,
            None => resolved
                .parent()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "/".into()),
        };
        if let Some(patterns) = args.get("tracePatterns").filter(|p| p.is_array()) {
            self.tools
                .call("debug_trace", json!({"add": patterns}))
                .await?;
        }
        let mut launch =
            json!({"command": program, "projectRoot": cwd, "cwd": cwd, "stopOnEntry": true});
        if let Some(a) = args.get("args").filter(|a| a.is_array()) {
            launch["args"] = a.clone();
        }
        if let Some(e) = args.get("env").filter(|e| e.is_object()) {
            launch["env"] = e.clone();
        }
        let v = self.tools.call("debug_launch", launch).await?;
        self.session = v["sessionId"].as_str().map(str::to_string);
        self.pid = v["pid"].as_u64().unwrap_or(0);
        self.owned = true;
        self.stop_on_entry = args["stopOnEntry"] == true;
        // The launch answers once the main thread is paused, naming it.
        let entry = match v.get("paused").filter(|p| p.is_object()) {
            Some(p) => p.clone(),
            None => self.status().await?["pausedThreads"][0].clone(),
        };
        self.entry_thread = entry["threadId"].as_u64();
        self.entry_breakpoint = entry["breakpointId"].as_str().map(str::to_string);
        Ok(json!({}))
    }

    async fn attach(&mut self, args: &Value) -> Result<Value, String> {
        if let Some(id) = args["sessionId"].as_str() {
            self.session = Some(id.to_string());
            let s = self.status().await?;
            self.pid = s["pid"].as_u64().unwrap_or(0);
            // What was paused before the editor came is shown at once.
            return Ok(json!({}));
        }
        let pid = args["pid"]
            .as_u64()
            .or_else(|| args["processId"].as_u64())
            .ok_or("attach needs 'sessionId' (a session an agent started) or 'pid'")?;
        let v = self
            .tools
            .call("debug_launch", json!({"attachPid": pid}))
            .await?;
        self.session = v["sessionId"].as_str().map(str::to_string);
        self.pid = pid;
        self.owned = true;
        Ok(json!({}))
    }

    pub(crate) async fn status(&mut self) -> Result<Value, String> {
        let id = self.session_id()?;
        self.tools
            .call(
                "debug_session",
                json!({"action": "status", "sessionId": id}),
            )
            .await
    }

    async fn configuration_done(&mut self) -> Result<Value, String> {
        self.configured = true;
        if let Some(bp) = self.entry_breakpoint.take() {
            let id = self.session_id()?;
            self.tools
                .call("debug_breakpoint", json!({"sessionId": id, "remove": [bp]}))
                .await?;
        }
        if let Some(tid) = self.entry_thread {
            // One status answers both: is an editor's breakpoint where the
            // program waits, and what the stop shows.
            let status = self.status().await.ok();
            let at_entry = status.as_ref().and_then(|s| self.breakpoint_at_entry(s));
            if let (Some(bp), Some(s)) = (at_entry, &status) {
                // The editor's own breakpoint where the program waits (on
                // main): resuming would run past it, so this is its hit.
                self.stopped_as_in(s, tid, "breakpoint", Some(bp));
            } else if let (true, Some(s)) = (self.stop_on_entry, &status) {
                self.stopped_as_in(s, tid, "entry", None);
            } else if self.stop_on_entry {
                self.stopped(tid, "entry", None).await;
            } else {
                let id = self.session_id()?;
                self.tools
                    .call("debug_continue", json!({"sessionId": id, "action": "continue", "threadId": tid, "timeoutMs": 1}))
                    .await?;
            }
        }
        Ok(json!({}))
    }

    /// The DAP id of an unconditional breakpoint of the editor's at the
    /// address the entry thread waits at, by status `s`.
    fn breakpoint_at_entry(&self, s: &Value) -> Option<i64> {
        let at = s["pausedThreads"]
            .as_array()?
            .iter()
            .find(|p| p["threadId"].as_u64() == self.entry_thread)?["address"]
            .as_str()?
            .to_string();
        s["breakpoints"].as_array()?.iter().find_map(|b| {
            let here = b["addresses"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(at.as_str())));
            let plain = b["kind"] == "breakpoint"
                && b["condition"].is_null()
                && b["hitCount"].as_u64().unwrap_or(1) <= 1;
            (here && plain)
                .then(|| self.dap_ids.get(b["id"].as_str()?).copied())
                .flatten()
        })
    }

    async fn resume(&mut self) -> Result<Value, String> {
        if self.post_mortem {
            // Past a crash there is nothing to resume: the next poll
            // reports the end.
            self.post_mortem = false;
            self.paused.clear();
            self.refs.clear();
            return Ok(json!({"allThreadsContinued": true}));
        }
        let id = self.session_id()?;
        self.tools
            .call(
                "debug_continue",
                json!({"sessionId": id, "action": "continue", "timeoutMs": 1}),
            )
            .await?;
        self.paused.clear();
        self.refs.clear();
        Ok(json!({"allThreadsContinued": true}))
    }

    /// A step: answered at once, then `stopped` when it ends (or the end).
    async fn step(&mut self, req: &Value, args: &Value, action: &str) -> bool {
        let Some(tid) = args["threadId"].as_u64() else {
            self.respond(req, Err(format!("{} needs threadId", req["command"])));
            return false;
        };
        let id = match self.session_id() {
            Ok(id) => id,
            Err(e) => {
                self.respond(req, Err(e));
                return false;
            }
        };
        self.respond(req, Ok(json!({})));
        if self.post_mortem {
            let _ = self.resume().await;
            return false;
        }
        self.paused.remove(&tid);
        self.refs.clear();
        let r = self
            .tools
            .call("debug_continue", json!({"sessionId": id, "action": action, "threadId": tid, "timeoutMs": STEP_WAIT_MS}))
            .await;
        match r {
            Ok(v) if v["status"] == "paused" => self.stopped(tid, "step", None).await,
            Ok(_) => {}
            Err(e) => self.event(
                "output",
                json!({"category": "important", "output": format!("{action} failed: {e}\n")}),
            ),
        }
        false
    }

    /// Pauses one thread where its system call returns into the program's
    /// code (no all-stop; a thread busy in user code is refused with the
    /// reason); the `stopped` event follows from the poll.
    async fn pause(&mut self, args: &Value) -> Result<Value, String> {
        let id = self.session_id()?;
        let tid = args["threadId"].as_u64().ok_or("pause needs threadId")?;
        self.tools
            .call(
                "debug_continue",
                json!({"sessionId": id, "action": "pause", "threadId": tid, "timeoutMs": 1}),
            )
            .await?;
        Ok(json!({}))
    }

    async fn disconnect(&mut self, args: &Value) -> Result<Value, String> {
        let Some(id) = self.session.clone() else {
            return Ok(json!({}));
        };
        // A session an agent started goes on unless the editor asks.
        let stop = args["terminateDebuggee"].as_bool().unwrap_or(self.owned);
        if stop && !self.ended {
            self.tools
                .call("debug_session", json!({"action": "stop", "sessionId": id}))
                .await?;
        }
        self.ended = true;
        Ok(json!({}))
    }
}

/// `name` in a folder of PATH, as an executable file.
fn on_path(name: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Compares without stopping at the first difference, so the answer's time
/// does not tell how much of a guess was right.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What the adapter does, said honestly.
fn capabilities() -> Value {
    json!({
        "supportsConfigurationDoneRequest": true,
        "supportsFunctionBreakpoints": true,
        "supportsConditionalBreakpoints": true,
        "supportsHitConditionalBreakpoints": true,
        "supportsLogPoints": true,
        "supportsEvaluateForHovers": true,
        "supportsSetVariable": true,
        "supportsTerminateRequest": true,
        "supportTerminateDebuggee": true,
        "supportsDelayedStackTraceLoading": true,
        "supportsExceptionInfoRequest": true,
        "supportsReadMemoryRequest": true,
        "supportsWriteMemoryRequest": true,
        "exceptionBreakpointFilters": crate::exceptions::filters(),
    })
}
