//! Turning results into `structuredContent` and a short text for humans
//! and for clients that only show text.

use base64::Engine;
use serde_json::{Map, Value, json};
use strobe_core::event::{Event, EventKind, FLAG_JSON, FLAG_PARTIAL_LINE, FLAG_SAMPLED};
use strobe_store::FunctionRow;

/// Renders one event. Summary form by default; `verbose` adds every field.
/// `func` names the function of function events.
pub fn event(e: &Event, verbose: bool, func: Option<&FunctionRow>, typed: Option<Value>) -> Value {
    let kind = e.kind();
    let mut o = Map::new();
    o.insert("id".into(), json!(e.seq));
    o.insert("timestampNs".into(), json!(e.header.ts_ns));
    o.insert(
        "eventType".into(),
        json!(kind.map_or("unknown", EventKind::name)),
    );
    match kind {
        Some(EventKind::Stdout | EventKind::Stderr | EventKind::Logpoint) => {
            match std::str::from_utf8(&e.payload) {
                Ok(t) => {
                    o.insert("text".into(), json!(t));
                }
                Err(_) => {
                    // Lossless: the exact bytes, plus a readable approximation.
                    o.insert("text".into(), json!(String::from_utf8_lossy(&e.payload)));
                    o.insert("nonUtf8".into(), json!(true));
                    o.insert(
                        "bytesBase64".into(),
                        json!(base64::engine::general_purpose::STANDARD.encode(&e.payload)),
                    );
                }
            }
            if e.header.flags & FLAG_PARTIAL_LINE != 0 {
                o.insert("partialLine".into(), json!(true));
            }
        }
        Some(k @ (EventKind::FunctionEnter | EventKind::FunctionExit)) => {
            match func {
                Some(f) => {
                    o.insert("function".into(), json!(f.name));
                    o.insert("sourceFile".into(), json!(f.file));
                    o.insert("line".into(), json!(f.line));
                    if verbose {
                        o.insert("functionRaw".into(), json!(f.name_raw));
                    }
                }
                None => {
                    o.insert("functionId".into(), json!(e.header.func_id));
                }
            }
            if e.header.flags & FLAG_SAMPLED != 0 {
                o.insert("sampled".into(), json!(true));
            }
            if k == EventKind::FunctionExit {
                o.insert("durationNs".into(), json!(e.header.duration_ns));
            }
            // Typed values (from DWARF) when the function has them; functions
            // without debug info or in light mode show the raw registers.
            let typed: Option<serde_json::Map<String, Value>> = match typed {
                Some(Value::Object(m)) => Some(m),
                _ => None,
            };
            match typed {
                Some(fields) => {
                    for (key, v) in fields {
                        // Summary keeps scalar return values; the rest is verbose.
                        if verbose || (key == "returnValue" && !v.is_object() && !v.is_array()) {
                            o.insert(key, v);
                        }
                    }
                }
                None if k == EventKind::FunctionExit => {
                    o.insert(
                        "returnValueRaw".into(),
                        json!(format!("{:#x}", e.header.value)),
                    );
                }
                None => {
                    o.insert(
                        "firstArgumentRaw".into(),
                        json!(format!("{:#x}", e.header.value)),
                    );
                }
            }
        }
        _ if e.header.flags & FLAG_JSON != 0 => {
            let data: Value = serde_json::from_slice(&e.payload).unwrap_or(Value::Null);
            if let Value::Object(fields) = data {
                for (k, v) in fields {
                    if k != "type" && (verbose || !matches!(k.as_str(), "registers")) {
                        o.insert(k, v);
                    }
                }
            }
        }
        _ => {}
    }
    if verbose {
        o.insert("pid".into(), json!(e.header.pid));
        o.insert("threadId".into(), json!(e.header.tid));
        if e.header.parent != 0 {
            o.insert("parentEventId".into(), json!(e.header.parent - 1));
        }
    }
    Value::Object(o)
}

/// One line of the text rendering of an event (at most ~200 chars).
pub fn event_line(e: &Event, func: Option<&FunctionRow>, typed: Option<Value>) -> String {
    let ms = e.header.ts_ns as f64 / 1e6;
    let kind = e.kind().map_or("unknown", EventKind::name);
    let name = func.map_or("?", |f| f.name.as_str());
    let body = match (e.kind(), typed) {
        (Some(EventKind::FunctionEnter), Some(t)) => {
            let args: Vec<String> = t["arguments"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|x| format!("{}={}", x["name"].as_str().unwrap_or("?"), x["value"]))
                        .collect()
                })
                .unwrap_or_default();
            format!("{name}({})", args.join(", "))
        }
        (Some(EventKind::FunctionExit), Some(t)) if t.get("returnValue").is_some() => {
            format!(
                "{name} -> {} in {} ns",
                t["returnValue"], e.header.duration_ns
            )
        }
        (Some(EventKind::FunctionEnter), _) => format!("{name}(arg0={:#x})", e.header.value),
        (Some(EventKind::FunctionExit), _) => {
            format!(
                "{name} -> {:#x} in {} ns",
                e.header.value, e.header.duration_ns
            )
        }
        _ => String::from_utf8_lossy(&e.payload).into_owned(),
    };
    let mut line = format!("#{} {ms:.3}ms {kind}: {body}", e.seq);
    if line.len() > 200 {
        let cut = (0..=200)
            .rev()
            .find(|i| line.is_char_boundary(*i))
            .unwrap_or(0);
        line.truncate(cut);
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use strobe_core::event::EventHeader;

    fn ev(kind: EventKind, flags: u8, payload: &[u8]) -> Event {
        Event {
            seq: 7,
            header: EventHeader {
                ts_ns: 1_500_000,
                kind: kind as u8,
                flags,
                pid: 9,
                ..Default::default()
            },
            payload: payload.to_vec(),
        }
    }

    #[test]
    fn output_is_lossless() {
        let v = event(
            &ev(EventKind::Stderr, FLAG_PARTIAL_LINE, b"bad \xff byte"),
            false,
            None,
            None,
        );
        assert_eq!(v["eventType"], "stderr");
        assert_eq!(v["nonUtf8"], true);
        assert_eq!(v["partialLine"], true);
        let raw = base64::engine::general_purpose::STANDARD
            .decode(v["bytesBase64"].as_str().unwrap())
            .unwrap();
        assert_eq!(raw, b"bad \xff byte");
        let v = event(&ev(EventKind::Stdout, 0, b"ok"), true, None, None);
        assert_eq!(v["text"], "ok");
        assert_eq!(v["pid"], 9);
        assert!(v.get("nonUtf8").is_none());
    }

    #[test]
    fn json_payloads_are_inlined() {
        let v = event(
            &ev(
                EventKind::Crash,
                FLAG_JSON,
                br#"{"type":"crash","signal":"SIGSEGV","registers":{}}"#,
            ),
            false,
            None,
            None,
        );
        assert_eq!(v["signal"], "SIGSEGV");
        assert!(v.get("registers").is_none(), "registers only in verbose");
        assert!(event_line(&ev(EventKind::Stdout, 0, &[b'x'; 500]), None, None).len() < 210);
    }
}
