//! `debug_memory` on a Python or Node.js program: names are the
//! program's. A name that is a local of a paused frame is read from the
//! pause (its typed locals came with it). In Python anything else is a
//! module global by dotted name (`inventory.STOCK`, `app.config.limit`),
//! read and set by the agent's Python debugger holding the GIL
//! (agent/src/tracers/python/debugger.ts), through dicts only: no property
//! or `__getattr__` runs. In JavaScript it is a name the paused frame sees
//! (its module's bindings, closures, globals) or, while the program runs, a
//! global, with a path (`cart.items[0].sku`), read and set by the debugger
//! worker in the program (agent/node/debugger.cjs) through property
//! descriptors: no getter runs.

use super::memory::MemoryTarget;
use super::{Live, SessionManager};
use crate::SessionError;
use serde_json::{Value, json};
use std::time::Duration;
use strobe_frida::agent_protocol::{
    DaemonMessage, PyMemoryRequest, PythonMemory, Resume, ResumeOrder,
};
use strobe_symbols::Language;
use strobe_symbols::resolvers::python::{Program, parse_args};

/// The running script's module name (`python app.py` runs `app` as
/// `__main__`): names starting with it are looked up in `__main__`.
fn main_module(live: &Live) -> Option<String> {
    match parse_args(&live.program_args).0 {
        Program::Script(p) => p.file_stem().map(|s| s.to_string_lossy().into_owned()),
        Program::Module(m) => Some(m),
        _ => None,
    }
}

/// A value inside a local's JSON by `.attr` / `[key]` steps.
fn walk<'a>(mut v: &'a Value, path: &str) -> Option<&'a Value> {
    for step in path
        .split(['.', '[', ']'])
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_matches(['"', '\'']))
    {
        v = match v {
            Value::Object(m) => m.get(step)?,
            Value::Array(a) => a.get(step.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

impl SessionManager {
    /// Whether `targets` are Python names on a Python session: all named
    /// (no raw addresses), on a program with a Python interpreter.
    pub(super) fn is_python_memory(
        &self,
        live: &Live,
        targets: &[MemoryTarget],
    ) -> Result<bool, SessionError> {
        if targets.is_empty() || targets.iter().any(|t| t.variable.is_none()) {
            return Ok(false);
        }
        let mut guard = live.tracer.lock().expect("tracer lock");
        if guard.is_none() {
            *guard = Some(self.new_tracer(live)?);
        }
        Ok(guard.as_ref().is_some_and(|t| {
            t.has_language(Language::Python) || t.has_language(Language::JavaScript)
        }))
    }

    /// Reads (`write` false) or sets Python names; per-target errors in place.
    pub(super) fn python_memory(
        &self,
        live: &Live,
        targets: &[MemoryTarget],
        depth: u32,
        thread: Option<u32>,
        write: bool,
    ) -> Result<Vec<Value>, SessionError> {
        let paused = self
            .paused_frame(live, thread)
            .map_err(SessionError::validation)?
            .filter(|p| p.locals.is_some());
        let javascript = live
            .tracer
            .lock()
            .expect("tracer lock")
            .as_ref()
            .is_some_and(|t| t.has_language(Language::JavaScript));
        let language = if javascript { "JavaScript" } else { "Python" };
        // A Python script's own module runs as __main__.
        let main = if javascript { None } else { main_module(live) };
        let mut out: Vec<Option<Value>> = vec![None; targets.len()];
        let mut asks = Vec::new();
        for (i, t) in targets.iter().enumerate() {
            let name = t.variable.as_deref().expect("checked by is_python_memory");
            let head = name.split(['.', '[']).next().unwrap_or(name);
            if let Some(p) = &paused
                && let Some(local) = p
                    .locals
                    .as_ref()
                    .and_then(|l| l.iter().find(|v| v["name"] == head))
            {
                out[i] = Some(if write {
                    self.set_paused_local(live, p.thread_id, name, head, t.value.clone(), language)
                } else {
                    match walk(&local["value"], &name[head.len()..]) {
                        Some(v) => {
                            json!({"target": name, "type": if name == head { local["type"].clone() } else { Value::Null },
                                          "value": v, "local": true, "threadId": p.thread_id})
                        }
                        None => json!({"target": name, "error": format!(
                            "{name} is not in the pause's copy of {head} (it keeps {depth} levels; read {head} to see what it holds)",
                            depth = 3)}),
                    }
                });
                continue;
            }
            let dotted = match &main {
                Some(m) if name == m || name.starts_with(&format!("{m}.")) => {
                    format!("__main__{}", &name[m.len()..])
                }
                _ => name.to_string(),
            };
            let value = t.value.clone().unwrap_or(Value::Null);
            if write && !is_scalar(&value) {
                out[i] = Some(json!({"target": name, "error": scalar_only(language, "global")}));
                continue;
            }
            asks.push((i, (dotted, depth, write, value)));
        }
        if !asks.is_empty() {
            let answer: PythonMemory = self.agent_request(
                live,
                |id| {
                    DaemonMessage::PythonMemory(PyMemoryRequest {
                        id,
                        targets: asks.iter().map(|(_, t)| t.clone()).collect(),
                    })
                },
                Duration::from_secs(10),
            )?;
            for ((i, _), (now, before, error)) in asks.iter().zip(answer.results) {
                let name = targets[*i].variable.as_deref().unwrap_or("?");
                out[*i] = Some(render(name, now.as_deref(), before.as_deref(), error));
            }
        }
        Ok(out
            .into_iter()
            .map(|v| v.unwrap_or_else(|| json!({"error": "no answer"})))
            .collect())
    }
}

impl SessionManager {
    /// Sets a local of the paused Python frame of thread `tid` (by the
    /// thread itself, which stays paused); the pause's copy is updated.
    fn set_paused_local(
        &self,
        live: &Live,
        tid: u32,
        name: &str,
        head: &str,
        value: Option<Value>,
        language: &str,
    ) -> Value {
        if name != head {
            return json!({"target": name, "error": format!(
                "only a local itself is written ({head}), not a part of it"
            )});
        }
        let value = value.unwrap_or(Value::Null);
        if !is_scalar(&value) {
            return json!({"target": name, "error": scalar_only(language, "local")});
        }
        let answer: Result<PythonMemory, SessionError> = self.agent_request(
            live,
            |id| {
                DaemonMessage::Resume(Resume {
                    tid,
                    order: ResumeOrder::PySet {
                        id,
                        name: name.to_string(),
                        value,
                    },
                })
            },
            Duration::from_secs(10),
        );
        let (now, before, error) = match answer {
            Ok(mut a) if !a.results.is_empty() => a.results.remove(0),
            Ok(_) => (None, None, Some("no answer from the paused thread".into())),
            Err(e) => (None, None, Some(e.message().to_string())),
        };
        let mut v = render(name, now.as_deref(), before.as_deref(), error);
        if v.get("error").is_none() {
            v["local"] = json!(true);
            v["threadId"] = json!(tid);
            let mut st = live.debug.lock().expect("debug lock");
            if let Some(local) = st.paused_local_mut(tid, name) {
                local["value"] = v["newValue"].clone();
            }
        }
        v
    }
}

/// Why a value other than a scalar cannot be set.
fn scalar_only(language: &str, what: &str) -> String {
    if language == "Python" {
        format!("a Python {what} can be set to an int, float, string, boolean or null (None)")
    } else {
        format!("a JavaScript {what} can be set to a number, string, boolean or null")
    }
}

/// What a name can be set to: a number, string, boolean or null.
fn is_scalar(v: &Value) -> bool {
    matches!(
        v,
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_)
    )
}

/// One answer of the agent as a result entry.
fn render(name: &str, now: Option<&[u8]>, before: Option<&[u8]>, error: Option<String>) -> Value {
    if let Some(e) = error {
        return json!({"target": name, "error": e});
    }
    let decoded = now.and_then(strobe_values::python::global);
    match decoded {
        Some(Ok((ty, value))) => {
            let mut v = json!({"target": name, "type": ty, "value": value});
            if let Some(Some(Ok((_, old)))) = before.map(strobe_values::python::global) {
                v["previousValue"] = old;
                v["newValue"] = v["value"].take();
                v.as_object_mut().expect("an object").remove("value");
            }
            v
        }
        Some(Err((1, _))) => json!({"target": name, "error": format!(
            "no module of {name:?} is loaded (sys.modules has none of its prefixes); name it module.NAME, with the module as the program imports it"
        )}),
        Some(Err((_, part))) => json!({"target": name, "error": format!(
            "{part:?} is not a name there (looked up in module and instance dicts, no getattr)"
        )}),
        None => json!({"target": name, "error": "unreadable answer from the agent"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_walk_objects_and_lists() {
        let v = json!({"$type": "Cart", "items": [{"sku": "a"}, {"sku": "b"}], "total": 3});
        assert_eq!(walk(&v, ".items[1].sku"), Some(&json!("b")));
        assert_eq!(walk(&v, ".total"), Some(&json!(3)));
        assert_eq!(walk(&v, ""), Some(&v));
        assert_eq!(walk(&v, ".nope"), None);
    }
}
