//! A check's fields (`{"assert": "trace", "fn": …, "called": true}`, or a
//! `wait.until` condition) turned into a [`Check`], each kind's fields
//! known so a misspelt one is refused before the scenario runs.

use crate::compare::Compare;
use crate::spec::{Check, DEFAULT_WITHIN_MS, MAX_WAIT_MS, On};
use serde_json::{Map, Value};

/// The fields each check kind takes (besides since and withinMs).
fn fields_of(what: &str) -> Option<&'static [&'static str]> {
    Some(match what {
        "trace" => &["fn", "called", "count", "args", "returns", "any"],
        "stdout" | "stderr" => &["contains", "matches", "present"],
        "net" => &["channel", "status", "bodyContains"],
        "file" => &["path", "exists", "contains"],
        "stdin" | "files" => &["channel", "contains", "present"],
        "midi" => &[
            "channel",
            "type",
            "note",
            "velocity",
            "controller",
            "value",
            "program",
            "present",
        ],
        "audio" => &["channel", "rms", "peak", "frequency", "silence", "clipping"],
        "ui" => &["id", "value", "name", "exists"],
        _ => return None,
    })
}

pub(crate) fn check(obj: &Map<String, Value>, what: &str, at: &str) -> Result<Check, String> {
    let fields = fields_of(what).ok_or_else(|| {
        format!(
            "{at}: cannot check {what:?}; checks: trace, stdout, stderr, net, file, stdin, files (what a file channel saw), midi, audio, ui"
        )
    })?;
    for k in obj.keys() {
        let common = ["assert", "since", "withinMs"].contains(&k.as_str())
            || (at == "wait.until" && k == "channel");
        if !common && !fields.contains(&k.as_str()) {
            return Err(format!(
                "unknown field {k:?} for a {what} check (it takes {}, since, withinMs)",
                fields.join(", ")
            ));
        }
    }
    let str_of = |k: &str| -> Result<Option<String>, String> {
        match obj.get(k) {
            None => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(format!("{k:?} is a non-empty string")),
        }
    };
    let bool_of = |k: &str| -> Result<Option<bool>, String> {
        match obj.get(k) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(format!("{k:?} is true or false")),
        }
    };
    let since_start = match obj.get("since") {
        None => false,
        Some(Value::String(s)) if s == "start" => true,
        Some(Value::String(s)) if s == "step" => false,
        Some(_) => {
            return Err(
                "\"since\" is \"start\" or \"step\" (the default: since the previous do step)"
                    .into(),
            );
        }
    };
    let within_ms = match obj.get("withinMs") {
        None => DEFAULT_WITHIN_MS,
        Some(v) => v
            .as_u64()
            .filter(|ms| *ms <= MAX_WAIT_MS)
            .ok_or_else(|| format!("\"withinMs\" is 0 to {MAX_WAIT_MS}"))?,
    };
    let on = match what {
        "trace" => {
            let func = str_of("fn")?.ok_or("a trace check needs \"fn\", the function's name")?;
            let count = obj.get("count").map(Compare::parse).transpose()?;
            let returns = obj.get("returns").map(Compare::parse).transpose()?;
            let args =
                match obj.get("args") {
                    None => Vec::new(),
                    Some(Value::Object(a)) => a
                        .iter()
                        .map(|(k, v)| Ok((k.clone(), Compare::parse(v)?)))
                        .collect::<Result<_, String>>()?,
                    Some(_) => return Err(
                        "\"args\" maps an argument (index \"0\" or name) to a value or {\"<\": n}"
                            .into(),
                    ),
                };
            let called = bool_of("called")?;
            if called.is_none() && count.is_none() && args.is_empty() && returns.is_none() {
                return Err("a trace check needs one of called, count, args, returns".into());
            }
            On::Trace {
                func,
                called,
                count,
                args,
                returns,
                any: bool_of("any")?.unwrap_or(false),
            }
        }
        "stdout" | "stderr" => {
            let contains = str_of("contains")?;
            let matches = str_of("matches")?
                .map(|m| regex::Regex::new(&m).map_err(|e| format!("\"matches\": {e}")))
                .transpose()?;
            if contains.is_none() && matches.is_none() {
                return Err(format!("a {what} check needs \"contains\" or \"matches\""));
            }
            On::Output {
                stream: if what == "stdout" { "stdout" } else { "stderr" },
                contains,
                matches,
                present: bool_of("present")?.unwrap_or(true),
            }
        }
        "net" => {
            let status = obj.get("status").map(Compare::parse).transpose()?;
            let body_contains = str_of("bodyContains")?;
            if status.is_none() && body_contains.is_none() {
                return Err("a net check needs \"status\" or \"bodyContains\"".into());
            }
            On::Net {
                channel: str_of("channel")?.filter(|c| c.contains(':')),
                status,
                body_contains,
            }
        }
        "ui" => On::Ui {
            id: str_of("id")?.ok_or("a ui check needs \"id\", a node id from debug_ui")?,
            value: obj.get("value").map(Compare::parse).transpose()?,
            name: str_of("name")?,
            exists: bool_of("exists")?.unwrap_or(true),
        },
        "midi" => {
            let mut want = Map::new();
            for k in ["type", "note", "velocity", "controller", "value", "program"] {
                if let Some(v) = obj.get(k) {
                    if !(v.is_string() || v.is_u64()) {
                        return Err(format!(
                            "{k:?} is a MIDI value (a number, or the type's name)"
                        ));
                    }
                    want.insert(k.to_string(), v.clone());
                }
            }
            On::Midi {
                channel: str_of("channel")?.filter(|c| c.contains(':')),
                want,
                present: bool_of("present")?.unwrap_or(true),
            }
        }
        "audio" => {
            let mut levels = Vec::new();
            for k in ["rms", "peak", "frequency"] {
                if let Some(v) = obj.get(k) {
                    levels.push((k, Compare::parse(v)?));
                }
            }
            let silence = bool_of("silence")?;
            let clipping = bool_of("clipping")?;
            if levels.is_empty() && silence.is_none() && clipping.is_none() {
                return Err(
                    "an audio check needs rms, peak, frequency, silence or clipping".into(),
                );
            }
            On::Audio {
                channel: str_of("channel")?.filter(|c| c.contains(':')),
                levels,
                silence,
                clipping,
            }
        }
        "file" => On::File {
            path: str_of("path")?
                .ok_or("a file check needs \"path\" (relative to the project root)")?,
            exists: bool_of("exists")?.unwrap_or(true),
            contains: str_of("contains")?,
        },
        _ => On::Events {
            event_type: if what == "stdin" { "stdin" } else { "file" },
            channel: str_of("channel")?.filter(|c| c.contains(':')),
            contains: str_of("contains")?,
            present: bool_of("present")?.unwrap_or(true),
        },
    };
    Ok(Check {
        on,
        since_start,
        within_ms,
    })
}
