//! Turning results into `structuredContent` and a short text for humans
//! and for clients that only show text.

use base64::Engine;
use serde_json::{Map, Value, json};
use strobe_core::event::{
    Event, EventKind, FLAG_CAPTURE, FLAG_JSON, FLAG_PARTIAL_LINE, FLAG_SAMPLED,
};
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
pub fn event_line(e: &Event, func: Option<&FunctionRow>, typed: Option<&Value>) -> String {
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

/// What one `debug_query` page left out, so that an agent never mistakes a
/// partial answer for a complete one.
#[derive(Debug, Default, PartialEq)]
pub struct Truncation {
    /// Matching events after this page.
    pub more_events: u64,
    /// Oldest events evicted by `events.maxPerSession` (whole session).
    pub evicted: u64,
    /// Events dropped before the store (whole session).
    pub dropped: u64,
    /// Events on this page recorded by sampling (1 call in N).
    pub sampled: usize,
    /// Events on this page whose typed values were left out (summary form).
    pub values_omitted: usize,
    /// Values on this page cut at `serializationDepth`.
    pub depth_limited: usize,
    /// Strings on this page cut at 1 KiB.
    pub long_strings: usize,
    /// Arrays on this page cut at 100 elements.
    pub long_arrays: usize,
    /// Values on this page that were not captured (unreadable or over the
    /// per-call capture budget).
    pub not_captured: usize,
}

impl Truncation {
    /// Inspects a rendered page (`rendered[i]` is `events[i]`).
    pub fn of_page(
        events: &[Event],
        rendered: &[Value],
        verbose: bool,
        offset: u64,
        total: u64,
        evicted: u64,
        dropped: u64,
    ) -> Truncation {
        let mut t = Truncation {
            more_events: total.saturating_sub(offset + events.len() as u64),
            evicted,
            dropped,
            ..Default::default()
        };
        for (e, v) in events.iter().zip(rendered) {
            if e.header.flags & FLAG_SAMPLED != 0 {
                t.sampled += 1;
            }
            if !verbose && e.header.flags & FLAG_CAPTURE != 0 {
                t.values_omitted += 1;
            }
            for key in ["arguments", "returnValue", "watchValues"] {
                if let Some(x) = v.get(key) {
                    t.scan(x);
                }
            }
        }
        t
    }

    fn scan(&mut self, v: &Value) {
        match v {
            Value::String(s) => {
                if s.ends_with(": depth limit>") {
                    self.depth_limited += 1;
                } else if s.starts_with("<not captured") || s.starts_with("<unreadable ") {
                    self.not_captured += 1;
                } else if s.starts_with("… ") && s.ends_with(" more") {
                    self.long_arrays += 1;
                } else if s.ends_with('…') {
                    self.long_strings += 1;
                }
            }
            Value::Array(a) => a.iter().for_each(|x| self.scan(x)),
            Value::Object(o) => o.values().for_each(|x| self.scan(x)),
            _ => {}
        }
    }

    /// The `truncated` object of the response (empty when nothing was left
    /// out) and a one-line summary for the text form.
    pub fn report(&self, cut_lines: usize) -> (Value, Option<String>) {
        let mut obj = serde_json::Map::new();
        let mut said = Vec::new();
        let mut put = |key: &str, n: u64, what: String| {
            if n > 0 {
                obj.insert(key.into(), json!(n));
                said.push(what);
            }
        };
        put(
            "moreEvents",
            self.more_events,
            format!(
                "{} more matching events (page with offset)",
                self.more_events
            ),
        );
        put(
            "evictedEvents",
            self.evicted,
            format!(
                "{} oldest events evicted (events.maxPerSession)",
                self.evicted
            ),
        );
        put(
            "droppedEvents",
            self.dropped,
            format!("{} events dropped before the store", self.dropped),
        );
        put(
            "sampledEvents",
            self.sampled as u64,
            format!(
                "{} events come from sampling (1 call in N recorded; debug_trace sampling: false records all)",
                self.sampled
            ),
        );
        put(
            "valuesOmitted",
            self.values_omitted as u64,
            format!(
                "typed values of {} events omitted (verbose: true shows them)",
                self.values_omitted
            ),
        );
        put(
            "depthLimited",
            self.depth_limited as u64,
            format!(
                "{} values cut at serializationDepth (debug_trace serializationDepth, up to 10)",
                self.depth_limited
            ),
        );
        put(
            "longStrings",
            self.long_strings as u64,
            format!("{} strings cut at 1 KiB", self.long_strings),
        );
        put(
            "longArrays",
            self.long_arrays as u64,
            format!("{} arrays cut at 100 elements", self.long_arrays),
        );
        put(
            "notCaptured",
            self.not_captured as u64,
            format!(
                "{} values not captured (unreadable memory or the per-call capture budget)",
                self.not_captured
            ),
        );
        put(
            "summaryLines",
            cut_lines as u64,
            format!("{cut_lines} text lines cut at 200 characters (the JSON has them whole)"),
        );
        let summary = (!said.is_empty()).then(|| said.join("; "));
        (Value::Object(obj), summary)
    }
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

    #[test]
    fn truncation_names_every_kind_of_cut_and_nothing_else() {
        let e = ev(EventKind::FunctionEnter, FLAG_CAPTURE | FLAG_SAMPLED, b"");
        let rendered = json!({"arguments": [
            {"name": "a", "value": {"next": "<node * 0x10: depth limit>"}},
            {"name": "s", "value": "abc…"},
            {"name": "xs", "value": [1, 2, "… 5 more"]},
            {"name": "p", "value": "<unreadable 0x10>"},
            {"name": "n", "value": 3}
        ]});
        let t = Truncation::of_page(std::slice::from_ref(&e), &[rendered], false, 0, 4, 7, 0);
        let (report, text) = t.report(1);
        assert_eq!(
            report,
            json!({"moreEvents": 3, "evictedEvents": 7, "sampledEvents": 1, "valuesOmitted": 1,
                   "depthLimited": 1, "longStrings": 1, "longArrays": 1, "notCaptured": 1, "summaryLines": 1})
        );
        assert!(text.unwrap().contains("serializationDepth"));
        let plain = ev(EventKind::Stdout, 0, b"hi");
        let t = Truncation::of_page(&[plain], &[json!({})], false, 0, 1, 0, 0);
        assert_eq!(t.report(0), (json!({}), None));
    }
}
