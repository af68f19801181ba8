//! DAP requests → the daemon's tools, and the session's state → DAP
//! events. One task: requests come through a channel (the reader is its
//! own task, so nothing is lost to a `select!`), and while the program
//! runs, `debug_session status` and the new output are polled every 50 ms.

use crate::Tools;
use crate::values::{Refs, text};
use crate::wire::{WireError, read_message, write_message};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncWrite};

/// How often a running session is polled.
const POLL: Duration = Duration::from_millis(50);
/// Frame ids: thread id × this + the frame's index.
const FRAMES_PER_THREAD: i64 = 1000;
/// A step waits this long for its pause.
const STEP_WAIT_MS: u64 = 10_000;

/// Serves one DAP client on `r`/`w` until it disconnects.
pub async fn serve<T, R, W>(tools: T, r: R, mut w: W) -> Result<(), WireError>
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
    let mut tick = tokio::time::interval(POLL);
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
                a.poll().await;
                a.flush(&mut w).await?;
            }
        }
    }
    Ok(())
}

struct Adapter<T> {
    tools: T,
    out: Vec<Value>,
    seq: i64,
    session: Option<String>,
    /// The session is this client's (launched here): disconnect stops it.
    owned: bool,
    pid: u64,
    stop_on_entry: bool,
    /// The thread paused on entry until configurationDone.
    entry_thread: Option<u64>,
    /// The breakpoint `stopOnEntry` made in `main`: removed at
    /// configurationDone, never shown as the user's.
    entry_breakpoint: Option<String>,
    configured: bool,
    ended: bool,
    /// Strobe's breakpoint ids set by each setBreakpoints source.
    set_by_source: HashMap<String, Vec<String>>,
    dap_ids: HashMap<String, i64>,
    /// The last DAP breakpoint id handed out.
    next_bp: i64,
    paused: BTreeMap<u64, Value>,
    refs: Refs,
    output_from: [i64; 3],
}

impl<T: Tools> Adapter<T> {
    fn new(tools: T) -> Self {
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
        }
    }

    fn running(&self) -> bool {
        self.session.is_some() && !self.ended && self.configured
    }

    fn next_seq(&mut self) -> i64 {
        self.seq += 1;
        self.seq
    }

    fn event(&mut self, name: &str, body: Value) {
        let seq = self.next_seq();
        self.out
            .push(json!({"seq": seq, "type": "event", "event": name, "body": body}));
    }

    fn respond(&mut self, req: &Value, result: Result<Value, String>) {
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

    fn session_id(&self) -> Result<String, String> {
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
        let result = match command.as_str() {
            "initialize" => Ok(capabilities()),
            "launch" => self.launch(&args).await,
            "attach" => self.attach(&args).await,
            "setBreakpoints" => self.set_breakpoints(&args).await,
            "setFunctionBreakpoints" => self.set_function_breakpoints(&args).await,
            "setExceptionBreakpoints" => Ok(json!({})),
            "configurationDone" => self.configuration_done().await,
            "threads" => self.threads().await,
            "stackTrace" => self.stack_trace(&args),
            "scopes" => self.scopes(&args),
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
            "pause" => Err("Strobe has no all-stop: a breakpoint pauses only its own thread while the others run on. Set a breakpoint (or a conditional one) where the thread should stop".into()),
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
        let path = std::path::Path::new(program);
        let cwd = args["cwd"].as_str().map(str::to_string).unwrap_or_else(|| {
            path.parent()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| ".".into())
        });
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
        let status = self.status().await?;
        self.entry_thread = status["pausedThreads"][0]["threadId"].as_u64();
        self.entry_breakpoint = status["pausedThreads"][0]["breakpointId"]
            .as_str()
            .map(str::to_string);
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

    async fn status(&mut self) -> Result<Value, String> {
        let id = self.session_id()?;
        self.tools
            .call(
                "debug_session",
                json!({"action": "status", "sessionId": id}),
            )
            .await
    }

    /// Replaces the breakpoints set for `key` by `add` (debug_breakpoint's
    /// items); DAP breakpoints in the same order.
    async fn replace_breakpoints(&mut self, key: String, add: Vec<Value>) -> Result<Value, String> {
        let id = self.session_id()?;
        let old = self.set_by_source.remove(&key).unwrap_or_default();
        for o in &old {
            self.dap_ids.remove(o);
        }
        if !old.is_empty() {
            self.tools
                .call("debug_breakpoint", json!({"sessionId": id, "remove": old}))
                .await?;
        }
        if add.is_empty() {
            return Ok(json!({"breakpoints": []}));
        }
        let n = add.len();
        let out = match self
            .tools
            .call("debug_breakpoint", json!({"sessionId": id, "add": add}))
            .await
        {
            Ok(v) => v,
            Err(e) => {
                let unverified = json!({"verified": false, "message": e});
                return Ok(json!({"breakpoints": vec![unverified; n]}));
            }
        };
        // The reply lists every breakpoint of the session (the agent's
        // too): the new ones are the last `n` not seen before.
        let all = out["breakpoints"].as_array().cloned().unwrap_or_default();
        let fresh: Vec<Value> = all
            .iter()
            .filter(|b| {
                !b["id"]
                    .as_str()
                    .is_some_and(|i| self.dap_ids.contains_key(i))
            })
            .cloned()
            .collect();
        let fresh = fresh[fresh.len().saturating_sub(n)..].to_vec();
        let mut ids = Vec::new();
        let mut dap = Vec::new();
        for b in fresh {
            let sid = b["id"].as_str().unwrap_or("").to_string();
            let num = match self.dap_ids.get(&sid) {
                Some(n) => *n,
                None => {
                    self.next_bp += 1;
                    self.dap_ids.insert(sid.clone(), self.next_bp);
                    self.next_bp
                }
            };
            ids.push(sid);
            let mut d = json!({"id": num, "verified": true});
            if let Some(l) = b["line"].as_u64() {
                d["line"] = json!(l);
            }
            if let Some(f) = b["file"].as_str() {
                d["source"] = json!({"path": f});
            }
            if let Some(m) = b["moved"].as_str().or(b["note"].as_str()) {
                d["message"] = json!(m);
            }
            dap.push(d);
        }
        self.set_by_source.insert(key, ids);
        Ok(json!({"breakpoints": dap}))
    }

    async fn set_breakpoints(&mut self, args: &Value) -> Result<Value, String> {
        let path = args["source"]["path"]
            .as_str()
            .ok_or("setBreakpoints needs source.path")?
            .to_string();
        let add = args["breakpoints"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|b| {
                let mut x = json!({"file": path, "line": b["line"]});
                add_conditions(&mut x, b);
                if let Some(m) = b["logMessage"].as_str() {
                    x["message"] = json!(m);
                }
                x
            })
            .collect();
        self.replace_breakpoints(path, add).await
    }

    async fn set_function_breakpoints(&mut self, args: &Value) -> Result<Value, String> {
        let add = args["breakpoints"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|b| {
                let mut x = json!({"function": b["name"]});
                add_conditions(&mut x, b);
                x
            })
            .collect();
        self.replace_breakpoints("<functions>".into(), add).await
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
            if self.stop_on_entry {
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

    /// Records thread `tid` as paused (from status) and says so.
    async fn stopped(&mut self, tid: u64, reason: &str, bp: Option<i64>) {
        if let Ok(s) = self.status().await {
            for p in s["pausedThreads"].as_array().cloned().unwrap_or_default() {
                if let Some(t) = p["threadId"].as_u64() {
                    self.paused.insert(t, p);
                }
            }
        }
        let mut body = json!({"reason": reason, "threadId": tid, "allThreadsStopped": false});
        if let Some(b) = bp {
            body["hitBreakpointIds"] = json!([b]);
        }
        self.event("stopped", body);
    }

    async fn threads(&mut self) -> Result<Value, String> {
        let mut threads = vec![json!({"id": self.pid, "name": "main"})];
        for (tid, p) in &self.paused {
            if *tid != self.pid {
                let name = p["function"].as_str().unwrap_or("thread");
                threads.push(json!({"id": tid, "name": format!("{tid} ({name})")}));
            }
        }
        Ok(json!({"threads": threads}))
    }

    fn stack_trace(&mut self, args: &Value) -> Result<Value, String> {
        let tid = args["threadId"]
            .as_u64()
            .ok_or("stackTrace needs threadId")?;
        let p = self.paused.get(&tid).ok_or_else(|| {
            format!("thread {tid} is not paused: only a paused thread has a stack to show")
        })?;
        let mut frames = Vec::new();
        let backtrace = p["backtrace"].as_array().cloned().unwrap_or_default();
        for (i, f) in backtrace.iter().enumerate() {
            // The paused frame's own function and line are exact.
            let (name, file, line) = if i == 0 {
                (
                    p["function"].as_str().or(f["name"].as_str()),
                    p["file"].as_str().or(f["file"].as_str()),
                    p["line"].as_u64().or(f["line"].as_u64()),
                )
            } else {
                (
                    f["name"].as_str().or(f["function"].as_str()),
                    f["file"].as_str(),
                    f["line"].as_u64(),
                )
            };
            let mut frame = json!({"id": tid as i64 * FRAMES_PER_THREAD + i as i64,
                                   "name": name.unwrap_or("??"), "line": line.unwrap_or(0), "column": 0});
            if let Some(file) = file {
                frame["source"] =
                    json!({"path": file, "name": file.rsplit('/').next().unwrap_or(file)});
                frame["column"] = json!(1);
            } else {
                frame["presentationHint"] = json!("subtle");
            }
            frames.push(frame);
        }
        if frames.is_empty() {
            frames.push(json!({"id": tid as i64 * FRAMES_PER_THREAD, "name": p["function"].as_str().unwrap_or("??"),
                               "line": p["line"].as_u64().unwrap_or(0), "column": 1,
                               "source": {"path": p["file"]}}));
        }
        let total = frames.len();
        let start = args["startFrame"].as_u64().unwrap_or(0) as usize;
        let levels = args["levels"].as_u64().unwrap_or(0) as usize;
        let end = if levels == 0 {
            total
        } else {
            (start + levels).min(total)
        };
        Ok(
            json!({"stackFrames": frames.get(start.min(total)..end).unwrap_or_default(), "totalFrames": total}),
        )
    }

    fn scopes(&mut self, args: &Value) -> Result<Value, String> {
        let frame = args["frameId"].as_i64().ok_or("scopes needs frameId")?;
        let (tid, index) = (
            (frame / FRAMES_PER_THREAD) as u64,
            frame % FRAMES_PER_THREAD,
        );
        let p = self
            .paused
            .get(&tid)
            .cloned()
            .ok_or("that frame's thread is not paused")?;
        if index != 0 {
            // Strobe reads the paused frame's variables; outer frames' are
            // not read yet.
            return Ok(json!({"scopes": []}));
        }
        let mut scopes = vec![json!({"name": "Arguments", "presentationHint": "arguments",
                                     "variablesReference": self.refs.hold(&p["arguments"], ""), "expensive": false})];
        if let Some(l) = p.get("locals").filter(|l| l.is_array()) {
            scopes.push(json!({"name": "Locals", "presentationHint": "locals",
                               "variablesReference": self.refs.hold(l, ""), "expensive": false}));
        }
        Ok(json!({"scopes": scopes}))
    }

    fn variables(&mut self, args: &Value) -> Result<Value, String> {
        let r = args["variablesReference"]
            .as_i64()
            .ok_or("variables needs variablesReference")?;
        let start = args["start"].as_u64().unwrap_or(0) as usize;
        let count = args["count"].as_u64().unwrap_or(0) as usize;
        let vars = self.refs.variables(r, start, count).ok_or(
            "that variablesReference is gone: the program ran on since (ask for the scopes again)",
        )?;
        Ok(json!({"variables": vars}))
    }

    async fn evaluate(&mut self, args: &Value) -> Result<Value, String> {
        let id = self.session_id()?;
        let expr = args["expression"]
            .as_str()
            .ok_or("evaluate needs expression")?;
        // Nested structs three levels deep: what an editor shows unfolded.
        let mut call = json!({"sessionId": id, "targets": [{"variable": expr}], "depth": 3});
        if let Some(f) = args["frameId"].as_i64() {
            call["threadId"] = json!(f / FRAMES_PER_THREAD);
        }
        let v = self.tools.call("debug_memory", call).await?;
        let r = &v["results"][0];
        if let Some(e) = r["error"].as_str() {
            return Err(e.to_string());
        }
        let value = r["value"].clone();
        Ok(
            json!({"result": text(&value), "type": r["type"], "variablesReference": self.refs.hold(&value, expr)}),
        )
    }

    /// Writes a variable (a paused frame's argument or local, or a global's
    /// field reached through evaluate) with `debug_memory`.
    async fn set_variable(&mut self, args: &Value) -> Result<Value, String> {
        let id = self.session_id()?;
        let r = args["variablesReference"]
            .as_i64()
            .ok_or("setVariable needs variablesReference")?;
        let name = args["name"].as_str().ok_or("setVariable needs name")?;
        let path = self.refs.path_of(r, name).ok_or(
            "that variablesReference is gone: the program ran on since (ask for the scopes again)",
        )?;
        let text = args["value"].as_str().ok_or("setVariable needs value")?;
        // Numbers and booleans as such; anything else (an enum's name) as text.
        let value = serde_json::from_str::<Value>(text.trim()).unwrap_or_else(|_| json!(text));
        let mut call = json!({"sessionId": id, "action": "write", "targets": [{"variable": path, "value": value}]});
        if let Some(tid) = self.paused.keys().next() {
            call["threadId"] = json!(tid);
        }
        let v = self.tools.call("debug_memory", call).await?;
        let w = &v["results"][0];
        if let Some(e) = w["error"].as_str() {
            return Err(e.to_string());
        }
        Ok(json!({"value": crate::values::text(&w["newValue"])}))
    }

    async fn resume(&mut self) -> Result<Value, String> {
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

    /// While it runs: new pauses, new output, and its end.
    async fn poll(&mut self) {
        self.pump_output().await;
        let Ok(s) = self.status().await else { return };
        // First: a stop names its breakpoint by the id announced here.
        self.announce_breakpoints(&s);
        let paused = s["pausedThreads"].as_array().cloned().unwrap_or_default();
        let now: Vec<u64> = paused
            .iter()
            .filter_map(|p| p["threadId"].as_u64())
            .collect();
        self.paused.retain(|t, _| now.contains(t));
        for p in paused {
            let Some(tid) = p["threadId"].as_u64() else {
                continue;
            };
            if self.paused.contains_key(&tid) {
                continue;
            }
            let bp = p["breakpointId"]
                .as_str()
                .and_then(|b| self.dap_ids.get(b))
                .copied();
            let reason = if p["reason"] == "step" {
                "step"
            } else {
                "breakpoint"
            };
            self.paused.insert(tid, p);
            let mut body = json!({"reason": reason, "threadId": tid, "allThreadsStopped": false});
            if let Some(b) = bp {
                body["hitBreakpointIds"] = json!([b]);
            }
            self.event("stopped", body);
        }
        let state = s["state"].as_str().unwrap_or("running");
        if state != "running" && state != "starting" {
            self.pump_output().await;
            self.ended = true;
            self.event("exited", json!({"exitCode": s["exitCode"].as_i64().unwrap_or(if state == "exited" { 0 } else { 1 })}));
            self.event("terminated", json!({}));
        }
    }

    /// Breakpoints someone else (the agent) set or removed, as
    /// `breakpoint` events, so the editor shows them.
    fn announce_breakpoints(&mut self, status: &Value) {
        let listed = status["breakpoints"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for b in &listed {
            let Some(sid) = b["id"].as_str() else {
                continue;
            };
            if self.dap_ids.contains_key(sid) {
                continue;
            }
            self.next_bp += 1;
            let num = self.next_bp;
            self.dap_ids.insert(sid.to_string(), num);
            let mut bp = json!({"id": num, "verified": true, "line": b["line"]});
            if let Some(f) = b["file"].as_str() {
                bp["source"] = json!({"path": f});
            }
            self.event("breakpoint", json!({"reason": "new", "breakpoint": bp}));
        }
        let gone: Vec<(String, i64)> = self
            .dap_ids
            .iter()
            .filter(|(sid, _)| !listed.iter().any(|b| b["id"] == sid.as_str()))
            .map(|(s, n)| (s.clone(), *n))
            .collect();
        for (sid, num) in gone {
            self.dap_ids.remove(&sid);
            self.event(
                "breakpoint",
                json!({"reason": "removed", "breakpoint": {"id": num, "verified": false}}),
            );
        }
    }

    /// The program's new stdout and stderr lines as `output` events.
    async fn pump_output(&mut self) {
        let Ok(id) = self.session_id() else { return };
        for (i, kind) in ["stdout", "stderr", "logpoint"].into_iter().enumerate() {
            let q = json!({"sessionId": id, "eventType": kind, "eventIdFrom": self.output_from[i], "limit": 500});
            let Ok(v) = self.tools.call("debug_query", q).await else {
                continue;
            };
            for e in v["events"].as_array().cloned().unwrap_or_default() {
                if let Some(n) = e["id"].as_i64() {
                    self.output_from[i] = self.output_from[i].max(n + 1);
                }
                let raw = e["text"].as_str().unwrap_or("");
                // A logpoint's text is its JSON; the line is its message.
                let message = (kind == "logpoint")
                    .then(|| serde_json::from_str::<Value>(raw).ok())
                    .flatten()
                    .and_then(|v| v["message"].as_str().map(str::to_string));
                let text = message.as_deref().unwrap_or(raw);
                let category = if kind == "logpoint" { "console" } else { kind };
                self.event(
                    "output",
                    json!({"category": category, "output": format!("{text}\n")}),
                );
            }
        }
    }
}

/// A DAP breakpoint's condition and hit condition, as debug_breakpoint
/// takes them (a hit condition is a count: "3" or ">= 3").
fn add_conditions(x: &mut Value, b: &Value) {
    if let Some(c) = b["condition"].as_str().filter(|c| !c.is_empty()) {
        x["condition"] = json!(c);
    }
    if let Some(h) = b["hitCondition"].as_str() {
        let digits: String = h.chars().filter(char::is_ascii_digit).collect();
        if let Ok(n) = digits.parse::<u32>() {
            x["hitCount"] = json!(n);
        }
    }
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
        "exceptionBreakpointFilters": [],
    })
}
