//! Crashes as DAP exceptions. Strobe stores a crash (signal, abort, Rust
//! panic, sanitizer error, uncaught C++ or Python exception) with its
//! backtrace and the crashing frame's locals before the process dies, so
//! the editor is shown a post-mortem stop: `stopped` reason `exception` on
//! the crashing thread, its stack and locals from the crash event, and
//! `exceptionInfo`. The process is already gone (or going); the next
//! `continue` (or step) ends the debug session with `exited`.

use crate::Tools;
use crate::adapter::Adapter;
use serde_json::{Value, json};

/// The one exception filter: Strobe reports every crash the same way.
pub(crate) const CRASH_FILTER: &str = "crash";

/// The filters `initialize` offers.
pub(crate) fn filters() -> Value {
    json!([{
        "filter": CRASH_FILTER,
        "label": "Crashes and uncaught exceptions",
        "description": "Stop (post-mortem) where the program crashed: a signal, an abort, a panic, a sanitizer error or an uncaught exception. The process has ended; its stack and the crashing frame's locals are what Strobe stored.",
        "default": true,
    }])
}

impl<T: Tools> Adapter<T> {
    pub(crate) fn set_exception_breakpoints(&mut self, args: &Value) -> Result<Value, String> {
        let filters: Vec<&str> = args["filters"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(bad) = filters.iter().find(|f| **f != CRASH_FILTER) {
            return Err(format!(
                "unknown exception filter '{bad}': the one filter is '{CRASH_FILTER}'"
            ));
        }
        self.break_on_crash = filters.contains(&CRASH_FILTER);
        Ok(
            json!({"breakpoints": filters.iter().map(|_| json!({"verified": true})).collect::<Vec<_>>()}),
        )
    }

    /// When the session crashed: shows the crash as a stop; true if it did
    /// (the end is then reported after the client continues).
    pub(crate) async fn stop_at_crash(&mut self, status: &Value) -> bool {
        if status["state"] != "crashed" || !self.break_on_crash || self.crash.is_some() {
            return false;
        }
        let Ok(id) = self.session_id() else {
            return false;
        };
        let q = json!({"sessionId": id, "eventType": "crash", "limit": 1});
        let Some(crash) = self
            .tools
            .call("debug_query", q)
            .await
            .ok()
            .and_then(|v| v["events"].get(0).cloned())
        else {
            return false;
        };
        let tid = crash["threadId"].as_u64().unwrap_or(self.pid);
        let paused = paused_at_crash(&crash, tid);
        self.paused.insert(tid, paused);
        let (id_text, description) = headline(&crash, status);
        let body = json!({"reason": "exception", "threadId": tid, "allThreadsStopped": true,
                              "description": format!("Crashed: {id_text}"), "text": description});
        self.event("stopped", body);
        self.crash = Some(crash);
        true
    }

    /// `exceptionInfo` for the crashed thread.
    pub(crate) fn exception_info(&mut self, args: &Value) -> Result<Value, String> {
        let crash = self
            .crash
            .as_ref()
            .ok_or("no exception: the program has not crashed")?;
        if let Some(t) = args["threadId"].as_u64()
            && crash["threadId"].as_u64().is_some_and(|c| c != t)
        {
            return Err(format!(
                "thread {t} did not crash (thread {} did)",
                crash["threadId"]
            ));
        }
        let (id, description) = headline(crash, &Value::Null);
        let stack: Vec<String> = frames_of(crash)
            .iter()
            .map(|f| {
                let name = f["name"]
                    .as_str()
                    .or(f["function"].as_str())
                    .unwrap_or("??");
                match (f["file"].as_str(), f["line"].as_u64()) {
                    (Some(file), Some(line)) => format!("  at {name} ({file}:{line})"),
                    _ => format!("  at {name}"),
                }
            })
            .collect();
        let type_name = crash["exception"]["type"]
            .as_str()
            .or(crash["signal"].as_str())
            .unwrap_or("crash");
        Ok(json!({
            "exceptionId": id,
            "description": description,
            "breakMode": "unhandled",
            "details": {
                "message": description,
                "typeName": type_name,
                "stackTrace": stack.join("\n"),
                "evaluateName": Value::Null,
            },
        }))
    }
}

/// The crash's frames, innermost first: a native backtrace, or a Python
/// traceback (stored outermost first).
fn frames_of(crash: &Value) -> Vec<Value> {
    if let Some(bt) = crash["backtrace"].as_array().filter(|b| !b.is_empty()) {
        return bt.clone();
    }
    let mut tb = crash["traceback"].as_array().cloned().unwrap_or_default();
    tb.reverse();
    tb
}

/// The crashed thread as a paused one (`stackTrace` and `scopes` read it):
/// its frames, and the locals of the frame Strobe read them in.
fn paused_at_crash(crash: &Value, tid: u64) -> Value {
    let frames = frames_of(crash);
    let top = frames.first().cloned().unwrap_or(Value::Null);
    let mut p = json!({
        "threadId": tid,
        "reason": "exception",
        "function": top["name"].as_str().or(top["function"].as_str()),
        "file": top["file"],
        "line": top["line"],
        "backtrace": frames,
        "arguments": [],
    });
    if let Some(locals) = crash["frame"]["locals"].as_array() {
        p["locals"] = json!(locals);
        p["localsFrame"] = crash["frame"]["frameIndex"].clone();
    } else if let Some(l) = top["locals"].as_object() {
        // A Python frame's locals are a name → value map.
        let named: Vec<Value> = l
            .iter()
            .map(|(k, v)| json!({"name": k, "value": v}))
            .collect();
        p["locals"] = json!(named);
        p["localsFrame"] = json!(0);
    }
    p
}

/// A short id (`SIGSEGV`, `KeyError`) and the sentence saying what
/// happened.
fn headline(crash: &Value, status: &Value) -> (String, String) {
    let exception = &crash["exception"];
    let id = exception["type"]
        .as_str()
        .or(crash["panic"].as_object().map(|_| "panic"))
        .or(crash["signal"].as_str())
        .or(crash["kind"].as_str())
        .unwrap_or("crash")
        .to_string();
    let mut parts = Vec::new();
    if let Some(m) = exception["message"].as_str() {
        parts.push(m.to_string());
    }
    if let Some(m) = crash["panic"]["message"].as_str() {
        parts.push(format!("panicked: {m}"));
    }
    if let Some(k) = crash["sanitizer"]["kind"]
        .as_str()
        .or(crash["sanitizer"]["summary"].as_str())
    {
        parts.push(k.to_string());
    }
    if let Some(cause) = crash["memory"]["cause"].as_str() {
        let op = crash["memory"]["operation"].as_str().unwrap_or("access");
        let at = crash["memory"]["address"].as_str().unwrap_or("?");
        parts.push(format!("{op} at {at}: {cause}"));
    }
    if parts.is_empty()
        && let Some(r) = status["reason"].as_str()
    {
        parts.push(r.to_string());
    }
    let description = if parts.is_empty() {
        id.clone()
    } else {
        format!("{id}: {}", parts.join("; "))
    };
    (id, description)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_native_crash_reads_as_its_signal_and_cause_with_its_frames() {
        let crash = json!({"threadId": 9, "signal": "SIGSEGV", "kind": "access-violation",
            "memory": {"operation": "write", "address": "0x0", "cause": "null pointer: nothing is mapped at this address"},
            "backtrace": [{"name": "write_through", "file": "/s/crash.c", "line": 17}, {"name": "main", "file": "/s/crash.c", "line": 49}],
            "frame": {"function": "write_through", "frameIndex": 0, "locals": [{"name": "p", "value": "0x0"}]}});
        let (id, text) = headline(&crash, &Value::Null);
        assert_eq!(id, "SIGSEGV");
        assert_eq!(
            text,
            "SIGSEGV: write at 0x0: null pointer: nothing is mapped at this address"
        );
        let p = paused_at_crash(&crash, 9);
        assert_eq!(p["function"], "write_through");
        assert_eq!(p["line"], 17);
        assert_eq!(p["locals"][0]["name"], "p");
        assert_eq!(p["localsFrame"], 0);
    }

    #[test]
    fn a_python_exception_reads_innermost_first_with_its_locals() {
        let crash = json!({"kind": "python-exception", "exception": {"type": "KeyError", "message": "gadget"},
            "traceback": [{"function": "<module>", "file": "a.py", "line": 9},
                          {"function": "checkout", "file": "a.py", "line": 6, "locals": {"sku": "gadget"}}]});
        let (id, text) = headline(&crash, &Value::Null);
        assert_eq!(
            (id.as_str(), text.as_str()),
            ("KeyError", "KeyError: gadget")
        );
        let p = paused_at_crash(&crash, 1);
        assert_eq!(p["function"], "checkout");
        assert_eq!(p["locals"][0], json!({"name": "sku", "value": "gadget"}));
    }
}
