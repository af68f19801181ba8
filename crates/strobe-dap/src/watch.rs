//! While the program runs: the session's state polled (every 50 ms) into
//! `stopped`, `breakpoint`, `output`, `exited` and `terminated` events.

use crate::Tools;
use crate::adapter::Adapter;
use serde_json::{Value, json};

impl<T: Tools> Adapter<T> {
    /// While it runs: new pauses, new output, and its end.
    pub(crate) async fn poll(&mut self) {
        self.pump_output().await;
        let Ok(s) = self.status().await else { return };
        // First: a stop names its breakpoint by the id announced here.
        self.announce_breakpoints(&s);
        self.announce_threads(&s);
        let paused = s["pausedThreads"].as_array().cloned().unwrap_or_default();
        let now: Vec<u64> = paused
            .iter()
            .filter_map(|p| p["threadId"].as_u64())
            .collect();
        // Threads someone else (the agent) resumed.
        let resumed: Vec<u64> = self
            .paused
            .keys()
            .filter(|t| !now.contains(t))
            .copied()
            .collect();
        for tid in resumed {
            self.paused.remove(&tid);
            self.refs.clear();
            self.event(
                "continued",
                json!({"threadId": tid, "allThreadsContinued": false}),
            );
        }
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
            let reason = match p["reason"].as_str() {
                Some("step") => "step",
                Some("pause") => "pause",
                _ => "breakpoint",
            };
            // A thread that started and paused between two polls.
            if tid != self.pid && self.known_threads.insert(tid) {
                self.event("thread", json!({"reason": "started", "threadId": tid}));
            }
            self.paused.insert(tid, p);
            self.stopped_event(tid, reason, bp);
        }
        if self.stop_at_crash(&s).await {
            self.pump_output().await;
            self.post_mortem = true;
            return;
        }
        let state = s["state"].as_str().unwrap_or("running");
        if state != "running" && state != "starting" {
            self.pump_output().await;
            self.ended = true;
            self.event("exited", json!({"exitCode": s["exitCode"].as_i64().unwrap_or(if state == "exited" { 0 } else { 1 })}));
            self.event("terminated", json!({}));
        }
    }

    /// The threads that started or ended since the last poll, from the
    /// status's list of the program's threads (Frida's left out), as
    /// `thread` events; the list answers the next `threads` request.
    pub(crate) fn announce_threads(&mut self, s: &Value) {
        let Some(listed) = s["threads"].as_array() else {
            return;
        };
        // A list cut short says nothing of the threads past its end: none
        // of those is taken for ended, and the last whole list stays.
        let whole = s["threadsOmitted"].as_u64().unwrap_or(0) == 0;
        let live: std::collections::BTreeSet<u64> =
            listed.iter().filter_map(|t| t["id"].as_u64()).collect();
        if whole {
            let ended: Vec<u64> = self.known_threads.difference(&live).copied().collect();
            for tid in ended {
                self.known_threads.remove(&tid);
                self.event("thread", json!({"reason": "exited", "threadId": tid}));
            }
            self.live_threads = listed.clone();
        }
        for &tid in &live {
            if tid != self.pid && self.known_threads.insert(tid) {
                self.event("thread", json!({"reason": "started", "threadId": tid}));
            }
        }
    }

    /// The program's new stdout and stderr lines as `output` events.
    pub(crate) async fn pump_output(&mut self) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Tools that are never called (the thread announcements use only
    /// the status they are given).
    struct NoTools;

    impl Tools for NoTools {
        async fn call(&mut self, tool: &str, _: Value) -> Result<Value, String> {
            Err(format!("{tool} called"))
        }
    }

    fn threads_events(a: &mut Adapter<NoTools>) -> Vec<(String, u64)> {
        a.out
            .drain(..)
            .filter(|e| e["event"] == "thread")
            .map(|e| {
                let b = &e["body"];
                (
                    b["reason"].as_str().unwrap().to_string(),
                    b["threadId"].as_u64().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn threads_are_announced_as_they_start_and_end_but_not_past_a_cut_list() {
        let mut a = Adapter::new(NoTools);
        a.pid = 10;
        let list = |ids: &[u64], omitted: u64| {
            let t: Vec<Value> = ids.iter().map(|i| json!({"id": i, "name": "w"})).collect();
            json!({"threads": t, "threadsOmitted": omitted})
        };
        a.announce_threads(&list(&[10, 11, 12], 0));
        assert_eq!(
            threads_events(&mut a),
            [("started".into(), 11), ("started".into(), 12)]
        );
        a.announce_threads(&list(&[10, 12], 0));
        assert_eq!(threads_events(&mut a), [("exited".into(), 11)]);
        // A cut list (thread 12 past its end) ends nobody, and the last
        // whole list answers `threads`.
        a.announce_threads(&list(&[10, 13], 5));
        assert_eq!(threads_events(&mut a), [("started".into(), 13)]);
        assert_eq!(a.live_threads.len(), 2);
        assert_eq!(a.live_threads[1]["id"], 12);
        a.announce_threads(&list(&[10], 0));
        let mut gone = threads_events(&mut a);
        gone.sort();
        assert_eq!(gone, [("exited".into(), 12), ("exited".into(), 13)]);
    }
}
