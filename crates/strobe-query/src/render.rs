//! Turning results into `structuredContent` and a short text for humans
//! and for clients that only show text.

use base64::Engine;
use serde_json::{Map, Value, json};
use strobe_core::event::{
    Event, EventKind, FLAG_CAPTURE, FLAG_JSON, FLAG_PARTIAL_LINE, FLAG_SAMPLED,
};
use strobe_store::FunctionRow;

pub use crate::exit_calls::{EventQuery, exit_calls};

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
                        if verbose
                            || key == "exception"
                            || (key == "returnValue" && !v.is_object() && !v.is_array())
                        {
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
        Some(EventKind::Exception) => {
            if let Some(f) = func {
                o.insert("function".into(), json!(f.name));
                o.insert("sourceFile".into(), json!(f.file));
                o.insert("line".into(), json!(f.line));
            }
            let data: Value = serde_json::from_slice(&e.payload).unwrap_or(Value::Null);
            if let Value::Object(fields) = data {
                o.extend(fields);
            }
        }
        _ if e.header.flags & FLAG_JSON != 0 => {
            let data: Value = serde_json::from_slice(&e.payload).unwrap_or(Value::Null);
            if let Value::Object(fields) = data {
                for (k, v) in fields {
                    // A UI snapshot's whole tree is kilobytes: verbose only
                    // (its diff and counts are in the summary).
                    if k != "type" && (verbose || !matches!(k.as_str(), "registers" | "tree")) {
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

/// Longest argument list an exit line repeats from its call (characters).
const CALL_ARGS_MAX: usize = 80;

/// The argument list of a function_enter event, `name="alice", n=3`
/// (typed), or the raw first argument register. A pointer to a struct
/// shows as its address and other aggregates as `{…}` / `[…]` (verbose
/// queries show them whole): printed in full, SQLite's `sqlite3 *db` took
/// the whole line and the `zSql` after it was never seen.
pub fn call_args(e: &Event, typed: Option<&Value>) -> String {
    let short = |v: &Value| match v {
        Value::Object(o) => match o.get("@addr").and_then(Value::as_str) {
            Some(addr) => addr.to_string(),
            None => "{…}".to_string(),
        },
        Value::Array(_) => "[…]".to_string(),
        other => other.to_string(),
    };
    match typed.and_then(|t| t["arguments"].as_array()) {
        Some(a) => a
            .iter()
            .map(|x| {
                let value = if x["type"] == "undefined" {
                    "undefined".to_string()
                } else {
                    short(&x["value"])
                };
                format!("{}={value}", x["name"].as_str().unwrap_or("?"))
            })
            .collect::<Vec<_>>()
            .join(", "),
        None => format!("arg0={:#x}", e.header.value),
    }
}

/// A duration for people: `850 ns`, `14 µs`, `3.2 ms`, `1.50 s`.
fn duration_text(ns: u64) -> String {
    let f = ns as f64;
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..10_000 => format!("{:.1} µs", f / 1e3),
        10_000..1_000_000 => format!("{:.0} µs", f / 1e3),
        1_000_000..10_000_000 => format!("{:.1} ms", f / 1e6),
        10_000_000..1_000_000_000 => format!("{:.0} ms", f / 1e6),
        _ => format!("{:.2} s", f / 1e9),
    }
}

/// One line of the text rendering of an event (at most ~200 chars). A
/// function_exit reads as its call, `f(name="alice") -> -52 (14 µs)`, with
/// `call` the arguments of its enter (see [`exit_calls`]) when known.
pub fn event_line(
    e: &Event,
    func: Option<&FunctionRow>,
    typed: Option<&Value>,
    call: Option<&str>,
) -> String {
    let ms = e.header.ts_ns as f64 / 1e6;
    let kind = e.kind().map_or("unknown", EventKind::name);
    let name = func.map_or("?", |f| f.name.as_str());
    let body = match e.kind() {
        Some(EventKind::FunctionEnter) => format!("{name}({})", call_args(e, typed)),
        Some(EventKind::Exception) => {
            let data: Value = serde_json::from_slice(&e.payload).unwrap_or(Value::Null);
            let ty = data["exceptionType"].as_str().unwrap_or("?");
            match data["message"].as_str() {
                Some(m) => format!("{ty}: {m} (raised out of {name})"),
                None => format!("{ty} (raised out of {name})"),
            }
        }
        Some(EventKind::FunctionExit) => {
            let ret = match typed {
                Some(t) if t.get("exception").is_some() => {
                    match t["exception"]["type"].as_str().unwrap_or("?") {
                        // What a JavaScript function threw is in the
                        // exception event where it was caught.
                        "" => "threw".to_string(),
                        ty => format!("raised {ty}"),
                    }
                }
                // JSON has no `undefined`: a JavaScript payload says it in
                // the value's type.
                Some(t) if t["returnType"] == "undefined" => "undefined".to_string(),
                _ => match typed.and_then(|t| t.get("returnValue")) {
                    Some(v) => v.to_string(),
                    None => format!("{:#x}", e.header.value),
                },
            };
            let call = match call {
                Some(args) if args.chars().count() > CALL_ARGS_MAX => {
                    let cut: String = args.chars().take(CALL_ARGS_MAX).collect();
                    format!("({cut}…)")
                }
                Some(args) => format!("({args})"),
                None => String::new(),
            };
            format!(
                "{name}{call} -> {ret} ({})",
                duration_text(e.header.duration_ns)
            )
        }
        Some(EventKind::UiSnapshot) => {
            let data: Value = serde_json::from_slice(&e.payload).unwrap_or(Value::Null);
            let n = |k: &str| data[k].as_array().map_or(0, Vec::len);
            let mut s = format!(
                "{} nodes, {} added, {} removed, {} changed",
                data["nodes"].as_u64().unwrap_or(0),
                n("added"),
                n("removed"),
                n("changed")
            );
            if let Some(p) = data["screenshot"].as_str() {
                s.push_str(&format!(", screenshot {p}"));
            }
            s
        }
        Some(EventKind::UiAction) => {
            let data: Value = serde_json::from_slice(&e.payload).unwrap_or(Value::Null);
            let what = [data["action"].as_str(), data["node"].as_str()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" ");
            let how = data["method"]
                .as_str()
                .map(|m| format!(" by {m}"))
                .unwrap_or_default();
            let verdict = match (data["ok"].as_bool(), data["verified"].as_bool()) {
                (Some(true), Some(true)) => "verified".to_string(),
                (Some(true), _) => "not verified".to_string(),
                _ => format!("failed: {}", data["error"].as_str().unwrap_or("?")),
            };
            format!("{what}{how}: {verdict}")
        }
        // Channel and scenario events carry their own one-line summary.
        Some(
            EventKind::Stdin
            | EventKind::File
            | EventKind::Net
            | EventKind::Midi
            | EventKind::Audio
            | EventKind::ScenarioStep,
        ) => {
            let data: Value = serde_json::from_slice(&e.payload).unwrap_or(Value::Null);
            match data["summary"].as_str() {
                Some(s) => s.to_string(),
                None => String::from_utf8_lossy(&e.payload).into_owned(),
            }
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
                if s.ends_with(": depth limit>") || s.contains(" (depth limit: ") {
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
    use strobe_core::ToolError;
    use strobe_core::event::EventHeader;
    use strobe_store::{EventFilter, QueryPage};

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
        assert!(event_line(&ev(EventKind::Stdout, 0, &[b'x'; 500]), None, None, None).len() < 210);
    }

    #[test]
    fn a_ui_action_line_says_what_was_done_how_and_whether_it_worked() {
        let line =
            |json: &[u8]| event_line(&ev(EventKind::UiAction, FLAG_JSON, json), None, None, None);
        let done = line(br#"{"action":"click","node":"btn#1","ok":true,"method":"native action (click)","verified":true}"#);
        assert!(
            done.ends_with("ui_action: click btn#1 by native action (click): verified"),
            "{done}"
        );
        let unseen = line(
            br#"{"action":"key","ok":true,"method":"input plan (key ctrl+a)","verified":false}"#,
        );
        assert!(
            unseen.ends_with("key by input plan (key ctrl+a): not verified"),
            "{unseen}"
        );
        let refused = line(br#"{"action":"click","node":"btn#1","ok":false,"error":"refused"}"#);
        assert!(
            refused.ends_with("click btn#1: failed: refused"),
            "{refused}"
        );
    }

    fn call(kind: EventKind, seq: u64, tid: u32, func: u32, ts: u64, dur: u64) -> Event {
        Event {
            seq,
            header: EventHeader {
                ts_ns: ts,
                kind: kind as u8,
                pid: 9,
                tid,
                func_id: func,
                duration_ns: dur,
                value: seq,
                ..Default::default()
            },
            payload: Vec::new(),
        }
    }

    #[test]
    fn exit_lines_read_as_their_call() {
        use EventKind::{FunctionEnter as In, FunctionExit as Out};
        // Exits of two threads, dense (as a busy timeline is), and of a
        // long call (main) that began long before.
        let stored = [
            call(In, 10, 1, 7, 1_000_001, 0),
            call(In, 999_998, 2, 8, 9_999_980, 0),
            call(In, 999_999, 1, 8, 9_999_990, 0),
            call(Out, 1_000_000, 1, 8, 10_000_000, 10),
            call(Out, 1_000_001, 1, 7, 10_000_001, 9_000_000),
            call(Out, 1_000_002, 2, 8, 10_000_002, 10),
        ];
        let page: Vec<Event> = stored[3..].to_vec();
        let mut queries = 0;
        let mut query = |f: &EventFilter, p: QueryPage| -> Result<Vec<Event>, ToolError> {
            queries += 1;
            Ok(stored
                .iter()
                .filter(|e| f.matches(&e.header, &e.payload))
                .take(p.limit)
                .cloned()
                .collect())
        };
        // Each enter's argument list names its event, to tell them apart.
        let typed = |e: &Event| Some(json!({"arguments": [{"name": "id", "value": e.seq}]}));
        let calls = exit_calls(&page, &mut query, &typed);
        assert_eq!(calls[&1_000_000], "id=999999");
        assert_eq!(calls[&1_000_001], "id=10");
        assert!(
            !calls.contains_key(&1_000_002),
            "thread 2's call began at 9_999_992, not at its enter's 9_999_980"
        );
        assert_eq!(
            queries, 2,
            "the close exits share one query, main gets its own"
        );
        let func = FunctionRow {
            func_id: 8,
            name: "account_slot".into(),
            name_raw: None,
            file: None,
            line: None,
        };
        let exit = call(Out, 4, 1, 8, 5_014_000, 14_000);
        let line = event_line(
            &exit,
            Some(&func),
            Some(&json!({"returnValue": -52})),
            Some("name=\"alice\""),
        );
        assert!(
            line.ends_with("function_exit: account_slot(name=\"alice\") -> -52 (14 µs)"),
            "{line}"
        );
        // Aggregates are summarized, so the arguments after them show.
        let sqlite = json!({"arguments": [
            {"name": "db", "value": {"@addr": "0x5610", "pVfs": {"@addr": "0x5620", "zName": "unix"}}},
            {"name": "zSql", "value": "SELECT 1"},
            {"name": "pt", "value": {"x": 1, "y": 2}},
            {"name": "v", "value": [1, 2, 3]},
        ]});
        assert_eq!(
            call_args(&exit, Some(&sqlite)),
            "db=0x5610, zSql=\"SELECT 1\", pt={…}, v=[…]"
        );
        let long = "x".repeat(300);
        let line = event_line(&exit, Some(&func), None, Some(&long));
        assert!(
            line.contains(&format!("({}…) -> 0x4 (14 µs)", "x".repeat(80))),
            "{line}"
        );
        assert_eq!(duration_text(850), "850 ns");
        assert_eq!(duration_text(3_200_000), "3.2 ms");
        assert_eq!(duration_text(1_500_000_000), "1.50 s");
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
