//! A stopped thread looked at: threads, its stack, the paused frame's
//! scopes and variables, `evaluate` and `setVariable` (through
//! `debug_memory`).

use crate::Tools;
use crate::adapter::{Adapter, FRAMES_PER_THREAD};
use crate::values::text;
use serde_json::{Value, json};

/// The path a caller frame's variables are held under (never a valid
/// `debug_memory` path, so never written by mistake).
const OUTER_PREFIX: &str = "<frame ";
/// How many times `scopes` asks again for a caller's variables (5 ms
/// apart) before showing the frame without them.
const CALLER_WAITS: usize = 4;

impl<T: Tools> Adapter<T> {
    /// Records thread `tid` as paused (from status) and says so (naming
    /// breakpoint `bp` when one was hit).
    pub(crate) async fn stopped(&mut self, tid: u64, reason: &str, bp: Option<i64>) {
        match self.status().await {
            Ok(s) => self.stopped_as_in(&s, tid, reason, bp),
            Err(_) => self.stopped_event(tid, reason, bp),
        }
    }

    /// [`Adapter::stopped`] with a status already in hand.
    pub(crate) fn stopped_as_in(&mut self, s: &Value, tid: u64, reason: &str, bp: Option<i64>) {
        for p in s["pausedThreads"].as_array().cloned().unwrap_or_default() {
            if let Some(t) = p["threadId"].as_u64() {
                self.paused.insert(t, p);
            }
        }
        self.stopped_event(tid, reason, bp);
    }

    /// The program's threads (as the last poll's status listed them), and
    /// any paused thread that list did not have yet.
    pub(crate) async fn threads(&mut self) -> Result<Value, String> {
        let mut threads = vec![json!({"id": self.pid, "name": "main"})];
        let mut shown = std::collections::BTreeSet::from([self.pid]);
        for t in &self.live_threads {
            let Some(tid) = t["id"].as_u64() else {
                continue;
            };
            if shown.insert(tid) {
                let name = t["name"].as_str().unwrap_or("thread");
                let name = match t["pid"].as_u64() {
                    Some(pid) => format!("{name} ({tid}, process {pid})"),
                    None => format!("{name} ({tid})"),
                };
                threads.push(json!({"id": tid, "name": name}));
            }
        }
        for (tid, p) in &self.paused {
            if shown.insert(*tid) {
                let name = p["function"].as_str().unwrap_or("thread");
                threads.push(json!({"id": tid, "name": format!("{tid} ({name})")}));
            }
        }
        Ok(json!({"threads": threads}))
    }

    pub(crate) fn stack_trace(&mut self, args: &Value) -> Result<Value, String> {
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

    pub(crate) async fn scopes(&mut self, args: &Value) -> Result<Value, String> {
        let frame = args["frameId"].as_i64().ok_or("scopes needs frameId")?;
        let (tid, index) = (
            (frame / FRAMES_PER_THREAD) as u64,
            frame % FRAMES_PER_THREAD,
        );
        let mut p = self
            .paused
            .get(&tid)
            .cloned()
            .ok_or("that frame's thread is not paused")?;
        // A caller's variables land on the pause just after it is shown:
        // ask again (briefly) when they are not there yet.
        for _ in 0..CALLER_WAITS {
            let has = |p: &Value| !p["backtrace"][index as usize]["locals"].is_null();
            if index == 0 || p["reason"] == "exception" || has(&p) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let Ok(s) = self.status().await else { break };
            let Some(fresh) = s["pausedThreads"]
                .as_array()
                .and_then(|a| a.iter().find(|q| q["threadId"].as_u64() == Some(tid)))
                .cloned()
            else {
                break;
            };
            self.paused.insert(tid, fresh.clone());
            p = fresh;
        }
        // Locals are read in one frame: the paused one, or at a crash the
        // frame of the program's own code Strobe read them in.
        let locals_frame = p["localsFrame"].as_i64().unwrap_or(0);
        let mut scopes = Vec::new();
        if index == 0 && p["arguments"].as_array().is_some_and(|a| !a.is_empty()) {
            scopes.push(json!({"name": "Arguments", "presentationHint": "arguments",
                               "variablesReference": self.refs.hold(&p["arguments"], ""), "expensive": false}));
        }
        // A caller's variables, as Strobe read them at the stop (shown,
        // not writable: a write would name the paused frame's variable).
        let outer = &p["backtrace"][index as usize]["locals"];
        if index != locals_frame && (outer.is_array() || outer.is_object()) {
            let path = format!("{OUTER_PREFIX}{index}>");
            scopes.push(json!({"name": "Locals", "presentationHint": "locals",
                               "variablesReference": self.refs.hold(outer, &path), "expensive": false}));
        }
        if index == locals_frame
            && let Some(l) = p.get("locals").filter(|l| l.is_array())
        {
            scopes.push(json!({"name": "Locals", "presentationHint": "locals",
                               "variablesReference": self.refs.hold(l, ""), "expensive": false}));
        }
        Ok(json!({"scopes": scopes}))
    }

    pub(crate) fn variables(&mut self, args: &Value) -> Result<Value, String> {
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

    pub(crate) async fn evaluate(&mut self, args: &Value) -> Result<Value, String> {
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
        let mut out = json!({"result": text(&value), "type": r["type"], "variablesReference": self.refs.hold(&value, expr)});
        if let Some(a) = r["address"].as_str() {
            out["memoryReference"] = json!(a);
        }
        Ok(out)
    }

    /// Writes a variable (a paused frame's argument or local, or a global's
    /// field reached through evaluate) with `debug_memory`.
    pub(crate) async fn set_variable(&mut self, args: &Value) -> Result<Value, String> {
        let id = self.session_id()?;
        let r = args["variablesReference"]
            .as_i64()
            .ok_or("setVariable needs variablesReference")?;
        let name = args["name"].as_str().ok_or("setVariable needs name")?;
        let path = self.refs.path_of(r, name).ok_or(
            "that variablesReference is gone: the program ran on since (ask for the scopes again)",
        )?;
        if path.starts_with(OUTER_PREFIX) {
            return Err(format!(
                "{name} belongs to a caller's frame, shown as read at the stop; only the paused frame's variables and globals can be set"
            ));
        }
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
}
