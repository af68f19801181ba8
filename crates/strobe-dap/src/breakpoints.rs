//! Breakpoints: the editor's (`setBreakpoints`, `setFunctionBreakpoints`,
//! each source's set replacing the last) as `debug_breakpoint` calls, and
//! the agent's announced to the editor as `breakpoint` events.

use crate::Tools;
use crate::adapter::Adapter;
use serde_json::{Value, json};

impl<T: Tools> Adapter<T> {
    /// Replaces the breakpoints set for `key` by `add` (debug_breakpoint's
    /// items); DAP breakpoints in the same order.
    pub(crate) async fn replace_breakpoints(
        &mut self,
        key: String,
        add: Vec<Value>,
    ) -> Result<Value, String> {
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

    pub(crate) async fn set_breakpoints(&mut self, args: &Value) -> Result<Value, String> {
        let path = args["source"]["path"]
            .as_str()
            .ok_or("setBreakpoints needs source.path")?
            .to_string();
        let add = requested(args, |b| json!({"file": path, "line": b["line"]}));
        self.replace_breakpoints(path, add).await
    }

    pub(crate) async fn set_function_breakpoints(&mut self, args: &Value) -> Result<Value, String> {
        let add = requested(args, |b| json!({"function": b["name"]}));
        self.replace_breakpoints("<functions>".into(), add).await
    }

    /// Breakpoints someone else (the agent) set or removed, as
    /// `breakpoint` events, so the editor shows them.
    pub(crate) fn announce_breakpoints(&mut self, status: &Value) {
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
}

/// A request's `breakpoints` as debug_breakpoint's items: where (`at`),
/// plus the condition, the hit condition (a count: "3" or ">= 3") and a
/// logpoint's message.
fn requested(args: &Value, at: impl Fn(&Value) -> Value) -> Vec<Value> {
    let items = args["breakpoints"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .map(|b| {
            let mut x = at(b);
            if let Some(c) = b["condition"].as_str().filter(|c| !c.is_empty()) {
                x["condition"] = json!(c);
            }
            if let Some(h) = b["hitCondition"].as_str() {
                let digits: String = h.chars().filter(char::is_ascii_digit).collect();
                if let Ok(n) = digits.parse::<u32>() {
                    x["hitCount"] = json!(n);
                }
            }
            if let Some(m) = b["logMessage"].as_str() {
                x["message"] = json!(m);
            }
            x
        })
        .collect()
}
