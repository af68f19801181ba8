//! The agent protocol: every message between the daemon and the agent it
//! injects (agent/src/*.ts), typed once for both directions.
//!
//! The bridge carries these undecoded (a POST frame's JSON to the agent's
//! `recv()`, the agent's `send()` back in a MESSAGE frame, see
//! [`crate::protocol`]); they belong to this crate because the agent's
//! sources do. Each direction is one enum, internally tagged on `type`,
//! with the field names the wire has always had:
//! [`AgentMessage`] (agent → daemon) and [`DaemonMessage`] (daemon → agent).
//! agent/src/protocol.ts declares the same two unions in TypeScript; the
//! test in `fixtures/` writes one example of every variant into
//! agent/test/protocol.fixtures.{agent,daemon}.ts, which the TypeScript compiler checks
//! against those unions (agent/test/protocol_check.ts), so the two sides
//! cannot drift apart unnoticed.
//!
//! [`decode`] turns what the bridge delivered into an [`AgentMessage`], or a
//! [`Rejected`] message (not JSON, an unknown `type`, a missing or
//! ill-typed field): never a message with made-up defaults.

mod answers;
mod from_agent;
mod to_agent;
pub mod wire;

#[cfg(test)]
mod fixtures;

pub use answers::*;
pub use from_agent::*;
pub use to_agent::*;

use serde::Deserialize;
use serde_json::Value;

/// What an agent's message delivered.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A message the agent sent.
    Message(AgentMessage),
    /// Text the agent's script logged (`console.log`, e.g. from an
    /// expression watch or a breakpoint condition): Frida's `log` envelope.
    Log {
        /// `info`, `warning` or `error`.
        level: String,
        /// What was logged.
        text: String,
    },
    /// The agent's script threw where nothing caught it (Frida's `error`
    /// envelope).
    ScriptError {
        /// The exception's text.
        description: String,
        /// Its JavaScript stack, when Frida has one.
        stack: String,
    },
}

/// A message that does not fit the protocol.
#[derive(Debug, thiserror::Error)]
#[error("{reason}")]
pub struct Rejected {
    /// What is wrong with it.
    pub reason: String,
    /// Its `type`, when it had a string one.
    pub type_name: Option<String>,
    /// The answer an agent thread blocked on this message waits for, when
    /// the message tells which thread that is: sent anyway so that a
    /// malformed message never leaves the target hanging.
    pub release: Option<Box<DaemonMessage>>,
}

/// Frida's message envelope: `{"type": "send", "payload": …}` for what the
/// agent sent, `{"type": "log", …}` for what its script logged,
/// `{"type": "error", …}` for an uncaught exception.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Envelope {
    Send {
        payload: Value,
    },
    Log {
        #[serde(default)]
        level: String,
        payload: Value,
    },
    Error {
        #[serde(default)]
        description: String,
        #[serde(default)]
        stack: String,
    },
}

/// Decodes the text of a message the bridge forwarded from an agent.
pub fn decode(text: &[u8]) -> Result<Incoming, Rejected> {
    let reject = |reason: String, type_name: Option<String>, release| Rejected {
        reason,
        type_name,
        release,
    };
    let envelope: Envelope = serde_json::from_slice(text)
        .map_err(|e| reject(format!("not a Frida message envelope: {e}"), None, None))?;
    let payload = match envelope {
        Envelope::Send { payload } => payload,
        Envelope::Log { level, payload } => {
            let text = match payload {
                Value::String(text) => text,
                other => other.to_string(),
            };
            return Ok(Incoming::Log { level, text });
        }
        Envelope::Error { description, stack } => {
            return Ok(Incoming::ScriptError { description, stack });
        }
    };
    AgentMessage::deserialize(&payload)
        .map(Incoming::Message)
        .map_err(|e| {
            let type_name = payload["type"].as_str().map(str::to_string);
            let what = match &type_name {
                Some(t) => format!("{t:?} message"),
                None => "message without a string type".to_string(),
            };
            reject(
                format!("{what} does not fit the protocol: {e}"),
                type_name,
                release_for(&payload).map(Box::new),
            )
        })
}

/// The neutral answer to a malformed message whose sender blocks until it
/// is answered (see the waits in agent/src/lifecycle.ts, breakpoints.ts and
/// tracers/native.ts): the exit and crash acks, the fork barrier's, a
/// trace chunk's (flow control), no hooks for a library, continue for a
/// paused thread, no callee body for a step.
fn release_for(payload: &Value) -> Option<DaemonMessage> {
    let tid = || payload["tid"].as_u64().and_then(|t| u32::try_from(t).ok());
    match payload["type"].as_str()? {
        "exit" => Some(DaemonMessage::ExitAck),
        "crash" => Some(DaemonMessage::CrashAck),
        "fork_barrier" => Some(DaemonMessage::ForkBarrierAck),
        "trace" => Some(DaemonMessage::TraceAck { tracer: None }),
        // The agent ships nothing until the offer is answered.
        "ring" => Some(DaemonMessage::RingAttached {
            ok: false,
            reason: Some("the offer did not fit the protocol".into()),
        }),
        "module_loaded" if payload["wait"] != false => {
            Some(DaemonMessage::ModuleHooks(ModuleHooks {
                module: payload["path"].as_str().unwrap_or_default().to_string(),
                functions: Vec::new(),
            }))
        }
        "paused" => Some(DaemonMessage::Resume(Resume {
            tid: tid()?,
            order: ResumeOrder::Continue,
        })),
        "step_call" => Some(DaemonMessage::Callee(Callee {
            tid: tid()?,
            address: None,
        })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn send(payload: Value) -> Vec<u8> {
        json!({"type": "send", "payload": payload})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn an_exit_message_without_a_valid_code_is_rejected_not_exit_code_zero() {
        for (code, want) in [(json!(3), 3), (json!(-1), -1)] {
            assert_eq!(
                decode(&send(json!({"type": "exit", "pid": 7, "code": code}))).unwrap(),
                Incoming::Message(AgentMessage::Exit(ExitReport { pid: 7, code: want }))
            );
        }
        for bad in [
            json!({"type": "exit", "pid": 7}),
            json!({"type": "exit", "pid": 7, "code": "3"}),
            json!({"type": "exit", "pid": 7, "code": 1.5}),
            json!({"type": "exit", "pid": 7, "code": 4_294_967_296u64}),
            json!({"type": "exit", "pid": 7, "code": null}),
        ] {
            let r = decode(&send(bad.clone())).expect_err(&bad.to_string());
            assert_eq!(r.type_name.as_deref(), Some("exit"), "{bad}");
            // The exiting thread still gets its ack (it blocks until then).
            assert_eq!(r.release.as_deref(), Some(&DaemonMessage::ExitAck), "{bad}");
        }
    }

    #[test]
    fn unknown_types_missing_fields_and_garbage_are_rejected() {
        for (text, type_name) in [
            (
                send(json!({"type": "exitt", "pid": 1, "code": 0})),
                Some("exitt"),
            ),
            (send(json!({"pid": 1})), None),
            (send(json!("exit")), None),
            (
                send(json!({"type": "module_base", "id": 3})),
                Some("module_base"),
            ),
            (
                send(json!({"type": "inherited", "id": 3, "undone": 1})),
                Some("inherited"),
            ),
            (
                send(
                    json!({"type": "hooks_updated", "id": 1, "installed": ["x"], "failed": [], "activeCount": 0, "ms": 1}),
                ),
                Some("hooks_updated"),
            ),
            (
                send(
                    json!({"type": "paused", "tid": 5, "pid": 1, "ts": "x", "reason": "breakpoint",
                    "breakpoint": null, "hits": 0, "address": "0x10", "registers": {}, "backtrace": []}),
                ),
                Some("paused"),
            ),
            (b"{not json".to_vec(), None),
            (br#"{"type": "lag", "payload": 1}"#.to_vec(), None),
        ] {
            let r = decode(&text).expect_err(&String::from_utf8_lossy(&text));
            assert_eq!(r.type_name.as_deref(), type_name, "{}", r.reason);
        }
    }

    #[test]
    fn what_the_script_logs_is_a_log_not_a_rejected_message() {
        assert_eq!(
            decode(br#"{"type": "log", "level": "info", "payload": "x = 3"}"#).unwrap(),
            Incoming::Log {
                level: "info".into(),
                text: "x = 3".into()
            }
        );
    }

    #[test]
    fn a_rejected_message_whose_sender_waits_still_releases_it() {
        let release = |v: Value| decode(&send(v)).unwrap_err().release.map(|r| *r);
        assert_eq!(
            release(json!({"type": "paused", "tid": 12})),
            Some(DaemonMessage::Resume(Resume {
                tid: 12,
                order: ResumeOrder::Continue
            }))
        );
        assert_eq!(
            release(json!({"type": "step_call", "tid": 12, "target": "nowhere"})),
            Some(DaemonMessage::Callee(Callee {
                tid: 12,
                address: None
            }))
        );
        assert_eq!(
            release(json!({"type": "module_loaded", "path": "/lib/x.so", "wait": "yes"})),
            Some(DaemonMessage::ModuleHooks(ModuleHooks {
                module: "/lib/x.so".into(),
                functions: vec![]
            }))
        );
        assert_eq!(
            release(json!({"type": "crash", "pid": 1})),
            Some(DaemonMessage::CrashAck)
        );
        assert_eq!(
            release(json!({"type": "trace"})),
            Some(DaemonMessage::TraceAck { tracer: None })
        );
        assert_eq!(
            release(json!({"type": "fork_barrier"})),
            Some(DaemonMessage::ForkBarrierAck)
        );
        assert_eq!(
            release(json!({"type": "ring", "fd": "x"})),
            Some(DaemonMessage::RingAttached {
                ok: false,
                reason: Some("the offer did not fit the protocol".into())
            })
        );
        // Nobody waits for these.
        assert_eq!(
            release(json!({"type": "module_loaded", "wait": false})),
            None
        );
        assert_eq!(release(json!({"type": "modules"})), None);
        assert_eq!(release(json!({"type": "paused"})), None);
    }

    #[test]
    fn script_errors_are_told_apart_from_messages() {
        let text = br#"{"type":"error","description":"ReferenceError: x","stack":"at f","fileName":"a.js","lineNumber":1}"#;
        assert_eq!(
            decode(text).unwrap(),
            Incoming::ScriptError {
                description: "ReferenceError: x".into(),
                stack: "at f".into()
            }
        );
    }

    #[test]
    fn posts_carry_thread_tags_and_the_wire_names() {
        let resume = DaemonMessage::Resume(Resume {
            tid: 42,
            order: ResumeOrder::Continue,
        });
        assert_eq!(
            String::from_utf8(resume.to_json()).unwrap(),
            r#"{"type":"resume-42","action":"continue"}"#
        );
        assert_eq!(
            String::from_utf8(DaemonMessage::ExitAck.to_json()).unwrap(),
            r#"{"type":"exit-ack"}"#
        );
        let hooks = DaemonMessage::Hooks(HooksRequest {
            id: 3,
            tracer: None,
            change: HookChange::Remove {
                functions: vec![1, 2],
            },
            watch_libraries: false,
        });
        assert_eq!(
            serde_json::to_value(&hooks).unwrap(),
            json!({"type": "hooks", "id": 3, "action": "remove", "functions": [1, 2], "watchLibraries": false})
        );
    }
}
