//! Checks evaluated against what a session stored (through the same query
//! engine as `debug_query`) or against the file system.

use crate::compare::Compare;
use crate::spec::{Check, On};
use serde_json::{Value, json};
use strobe_session::SessionManager;

/// Events a check reads at most (the rest are counted, not read).
const MAX_READ: usize = 2_000;
/// Event ids a failure names at most.
const IDS_SHOWN: usize = 5;

/// What a check found.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// It holds.
    pub pass: bool,
    /// What was asked, in words.
    pub expected: String,
    /// What was found.
    pub actual: String,
    /// Events that show it (the ones that broke it, or the latest seen).
    pub event_ids: Vec<u64>,
}

impl Outcome {
    fn new(pass: bool, expected: String, actual: String, event_ids: Vec<u64>) -> Outcome {
        Outcome {
            pass,
            expected,
            actual,
            event_ids,
        }
    }
}

/// One `debug_query` page.
fn query(mgr: &SessionManager, id: &str, mut args: Value) -> Result<Value, String> {
    args["sessionId"] = json!(id);
    let p: strobe_query::QueryParams =
        serde_json::from_value(args).map_err(|e| format!("internal query: {e}"))?;
    strobe_query::query(mgr, p).map_err(|e| e.message)
}

/// Every matching event (at most MAX_READ, verbose) and the total.
fn events(mgr: &SessionManager, id: &str, args: Value) -> Result<(Vec<Value>, u64), String> {
    let mut out: Vec<Value> = Vec::new();
    loop {
        let mut page = args.clone();
        page["limit"] = json!(500);
        page["offset"] = json!(out.len());
        page["verbose"] = json!(true);
        let v = query(mgr, id, page)?;
        let total = v["totalCount"].as_u64().unwrap_or(0);
        let got = v["events"].as_array().cloned().unwrap_or_default();
        let empty = got.is_empty();
        out.extend(got);
        if v["hasMore"] != true || empty || out.len() >= MAX_READ {
            return Ok((out, total));
        }
    }
}

/// The newest page (up to 500) of the events matching `args`, oldest
/// first: the latest state without reading a long session from its start.
fn newest(mgr: &SessionManager, id: &str, args: Value) -> Result<Vec<Value>, String> {
    let mut head = args.clone();
    head["limit"] = json!(1);
    let total = query(mgr, id, head)?["totalCount"].as_u64().unwrap_or(0);
    let mut page = args;
    page["limit"] = json!(500);
    page["offset"] = json!(total.saturating_sub(500));
    page["verbose"] = json!(true);
    Ok(query(mgr, id, page)?["events"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

fn ids(events: &[&Value]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| e["id"].as_u64())
        .take(IDS_SHOWN)
        .collect()
}

fn last_ids(events: &[Value]) -> Vec<u64> {
    let n = events.len();
    events[n.saturating_sub(IDS_SHOWN)..]
        .iter()
        .filter_map(|e| e["id"].as_u64())
        .collect()
}

/// The name filter for `func`: exact, or a glob with `*`.
fn function_filter(func: &str) -> Value {
    if func.contains('*') {
        let re = func
            .split('*')
            .map(regex::escape)
            .collect::<Vec<_>>()
            .join(".*");
        json!({"matches": format!("^{re}$")})
    } else {
        json!({"equals": func})
    }
}

/// Evaluates `check` over events since session time `from_ns`.
pub fn evaluate(
    mgr: &SessionManager,
    id: &str,
    check: &Check,
    from_ns: u64,
    ui: Option<&dyn crate::UiDriver>,
) -> Result<Outcome, String> {
    let from = if check.since_start { 0 } else { from_ns };
    let window = if check.since_start {
        "since the start"
    } else {
        "since the previous do step"
    };
    match &check.on {
        On::Trace {
            func,
            called,
            count,
            args,
            returns,
            any,
        } => trace(
            mgr,
            id,
            from,
            window,
            func,
            *called,
            count.as_ref(),
            args,
            returns.as_ref(),
            *any,
        ),
        On::Output {
            stream,
            contains,
            matches,
            present,
        } => output(mgr, id, from, window, stream, contains, matches, *present),
        On::Net {
            channel,
            status,
            body_contains,
        } => net(mgr, id, from, window, channel, status, body_contains),
        On::File {
            path,
            exists,
            contains,
        } => file(mgr, id, path, *exists, contains),
        On::Ui {
            id: node,
            value,
            name,
            exists,
        } => ui_node(id, ui, node, value, name, *exists),
        On::Midi {
            channel,
            want,
            present,
        } => {
            let (evs, _) = events(mgr, id, json!({"eventType": "midi", "timeFrom": from}))?;
            let matches = |e: &&Value| {
                e["dir"] == "seen"
                    && channel.as_ref().is_none_or(|c| e["channel"] == json!(c))
                    && want.iter().all(|(k, v)| &e["message"][k] == v)
            };
            let hits: Vec<&Value> = evs.iter().filter(matches).collect();
            let expected = format!(
                "{} MIDI message from the program matching {} {window}",
                if *present { "a" } else { "no" },
                Value::Object(want.clone())
            );
            let received: Vec<&Value> = evs.iter().filter(|e| e["dir"] == "seen").collect();
            let actual = match (hits.first(), received.last()) {
                (Some(h), _) => format!(
                    "{} such message(s): {}",
                    hits.len(),
                    h["summary"].as_str().unwrap_or("")
                ),
                (None, Some(l)) => format!(
                    "none among {} received; the last: {}",
                    received.len(),
                    l["summary"].as_str().unwrap_or("")
                ),
                (None, None) => format!("the program sent no MIDI {window}"),
            };
            Ok(Outcome::new(
                hits.is_empty() != *present,
                expected,
                actual,
                ids(&hits),
            ))
        }
        On::Audio {
            channel,
            levels,
            silence,
            clipping,
        } => audio(mgr, id, channel, levels, *silence, *clipping),
        On::Events {
            event_type,
            channel,
            contains,
            present,
        } => {
            let mut q = json!({"eventType": event_type, "timeFrom": from});
            if let Some(c) = contains {
                q["textContains"] = json!(c);
            }
            let (evs, _) = events(mgr, id, q)?;
            let hits: Vec<&Value> = evs
                .iter()
                .filter(|e| channel.as_ref().is_none_or(|c| e["channel"] == json!(c)))
                .collect();
            let expected = format!(
                "{} {event_type} event{}{} {window}",
                if *present { "a" } else { "no" },
                channel
                    .as_ref()
                    .map(|c| format!(" of {c}"))
                    .unwrap_or_default(),
                contains
                    .as_ref()
                    .map(|c| format!(" containing {c:?}"))
                    .unwrap_or_default(),
            );
            let actual = match hits.last() {
                Some(h) => format!(
                    "{} such event(s), the latest: {}",
                    hits.len(),
                    h["summary"].as_str().unwrap_or("")
                ),
                None => format!("none ({} {event_type} event(s) in all {window})", evs.len()),
            };
            Ok(Outcome::new(
                hits.is_empty() != *present,
                expected,
                actual,
                ids(&hits),
            ))
        }
    }
}

/// An `assert: stdout`/`stderr`: a line of `stream` containing and matching
/// what is asked, or none.
#[allow(clippy::too_many_arguments)]
fn output(
    mgr: &SessionManager,
    id: &str,
    from: u64,
    window: &str,
    stream: &str,
    contains: &Option<String>,
    matches: &Option<regex::Regex>,
    present: bool,
) -> Result<Outcome, String> {
    // Every line of the window, so a failure can show the last one.
    let (evs, _) = events(mgr, id, json!({"eventType": stream, "timeFrom": from}))?;
    let hits: Vec<&Value> = evs
        .iter()
        .filter(|e| {
            let text = e["text"].as_str().unwrap_or("");
            contains.as_ref().is_none_or(|c| text.contains(c.as_str()))
                && matches.as_ref().is_none_or(|re| re.is_match(text))
        })
        .collect();
    let what = match (contains, matches) {
        (Some(c), Some(m)) => format!("containing {c:?} and matching /{m}/"),
        (Some(c), None) => format!("containing {c:?}"),
        (None, Some(m)) => format!("matching /{m}/"),
        (None, None) => "any".into(),
    };
    let expected = format!(
        "{} {stream} line {what} {window}",
        if present { "a" } else { "no" }
    );
    let actual = match hits.first() {
        Some(h) => format!(
            "{} such line(s), first: {:?}",
            hits.len(),
            h["text"].as_str().unwrap_or("")
        ),
        None => match evs.last() {
            Some(l) => format!(
                "none among {} {stream} line(s); the last: {:?}",
                evs.len(),
                l["text"].as_str().unwrap_or("")
            ),
            None => format!("no {stream} output {window}"),
        },
    };
    let shown = if hits.is_empty() {
        last_ids(&evs)
    } else {
        ids(&hits)
    };
    Ok(Outcome::new(
        hits.is_empty() != present,
        expected,
        actual,
        shown,
    ))
}

/// An `assert: net`: the latest request's answer.
fn net(
    mgr: &SessionManager,
    id: &str,
    from: u64,
    window: &str,
    channel: &Option<String>,
    status: &Option<Compare>,
    body_contains: &Option<String>,
) -> Result<Outcome, String> {
    // The newest page: the program's own socket I/O (also `net`
    // events) may fill the window well past the first pages.
    let evs = newest(mgr, id, json!({"eventType": "net", "timeFrom": from}))?;
    // Each request's outcome: its answer, or why it failed.
    let sent: Vec<&Value> = evs
        .iter()
        .filter(|e| e["dir"] == "answer" || e["dir"] == "failed")
        .filter(|e| channel.as_ref().is_none_or(|c| e["channel"] == json!(c)))
        .collect();
    let mut expected = Vec::new();
    if let Some(s) = status {
        expected.push(format!("status {s}"));
    }
    if let Some(b) = body_contains {
        expected.push(format!("a body containing {b:?}"));
    }
    let expected = format!(
        "the latest net request {window} answered with {}",
        expected.join(" and ")
    );
    let Some(last) = sent.last() else {
        return Ok(Outcome::new(
            false,
            expected,
            format!("no net request was sent {window}"),
            vec![],
        ));
    };
    let result = &last["result"];
    let ok_status = status.as_ref().is_none_or(|s| s.holds(&result["status"]));
    let body = result["body"]
        .as_str()
        .or_else(|| result["answer"].as_str())
        .unwrap_or("");
    let ok_body = body_contains
        .as_ref()
        .is_none_or(|b| body.contains(b.as_str()));
    let actual = match last.get("error") {
        Some(e) => format!(
            "{}: {}",
            last["summary"].as_str().unwrap_or("the request"),
            e.as_str().unwrap_or("failed")
        ),
        None => format!(
            "{} → status {}, body {:?}",
            result["request"].as_str().unwrap_or("request"),
            result["status"],
            crate::clip(body, 120)
        ),
    };
    Ok(Outcome::new(
        ok_status && ok_body && last.get("error").is_none(),
        expected,
        actual,
        ids(&[*last]),
    ))
}

/// An `assert: file`: a file of the project (never one outside it).
fn file(
    mgr: &SessionManager,
    id: &str,
    path: &str,
    exists: bool,
    contains: &Option<String>,
) -> Result<Outcome, String> {
    let root = mgr
        .project_root_of(id)
        .ok_or_else(|| format!("session {id} is not live"))?;
    let expected = match (exists, contains) {
        (false, _) => format!("{path} does not exist"),
        (true, Some(c)) => format!("{path} contains {c:?}"),
        (true, None) => format!("{path} exists"),
    };
    // Refused (outside the project): the check fails saying why,
    // and nothing of the file is read or shown.
    let found = match crate::files::look(&root, path, contains.is_some()) {
        Ok(f) => f,
        Err(why) => return Ok(Outcome::new(false, expected, why, vec![])),
    };
    use crate::files::Look;
    let (pass, actual) = match (&found, exists, contains) {
        (Look::Missing, false, _) => (true, format!("{path} does not exist")),
        (Look::Missing, true, _) => (false, format!("{path} does not exist")),
        (Look::Other(kind), false, _) => (false, format!("{path} exists ({kind})")),
        (Look::Other(kind), true, None) => (true, format!("{path} exists ({kind})")),
        (Look::Other(kind), true, Some(_)) => (
            false,
            format!("{path} is {kind}, not a regular file: it is not read"),
        ),
        (Look::File { len, .. }, false, _) => (false, format!("{path} exists ({len} bytes)")),
        (Look::File { len, text }, true, Some(c)) => {
            let text = text.as_deref().unwrap_or("");
            let head = if *len > crate::files::MAX_READ_BYTES {
                format!(
                    " (its first {} MiB of {len} bytes searched)",
                    crate::files::MAX_READ_BYTES >> 20
                )
            } else {
                String::new()
            };
            (
                text.contains(c.as_str()),
                format!("{path} holds {:?}{head}", crate::clip(text, 120)),
            )
        }
        (Look::File { len, .. }, true, None) => (true, format!("{path} exists ({len} bytes)")),
    };
    Ok(Outcome::new(pass, expected, actual, vec![]))
}

/// An `assert: ui`: a node of the GUI by its `debug_ui` id.
fn ui_node(
    id: &str,
    ui: Option<&dyn crate::UiDriver>,
    node: &str,
    value: &Option<Compare>,
    name: &Option<String>,
    exists: bool,
) -> Result<Outcome, String> {
    let ui = ui.ok_or("ui checks need a GUI driver (debug_test_scenario gives one)")?;
    let found = ui.node(id, node)?;
    let mut expected = vec![format!(
        "node {node} {}",
        if exists { "exists" } else { "does not exist" }
    )];
    if let Some(v) = value {
        expected.push(format!("its value {v}"));
    }
    if let Some(n) = name {
        expected.push(format!("its name contains {n:?}"));
    }
    let expected = expected.join(", ");
    let Some(n) = found else {
        return Ok(Outcome::new(
            !exists,
            expected,
            format!("no node {node} in the tree"),
            vec![],
        ));
    };
    let shown_value = n.get("value").cloned().unwrap_or(Value::Null);
    let shown_name = n["name"].as_str().unwrap_or("").to_string();
    let pass = exists
        && value.as_ref().is_none_or(|c| {
            c.holds(&shown_value)
                || shown_value
                    .as_str()
                    .and_then(|s| s.parse::<f64>().ok())
                    .is_some_and(|f| c.holds(&json!(f)))
        })
        && name
            .as_ref()
            .is_none_or(|t| shown_name.contains(t.as_str()));
    let actual = format!("{node} [{shown_name}] value {shown_value}");
    Ok(Outcome::new(pass, expected, actual, vec![]))
}

/// An `assert: audio`: the latest window measured (sound is a state, not an
/// occurrence).
fn audio(
    mgr: &SessionManager,
    id: &str,
    channel: &Option<String>,
    levels: &[(&'static str, Compare)],
    silence: Option<bool>,
    clipping: Option<bool>,
) -> Result<Outcome, String> {
    // Sound is a state, not an occurrence: the latest window measured.
    let evs = newest(
        mgr,
        id,
        json!({"eventType": "audio", "textContains": "\"rms\""}),
    )?;
    let latest = evs.iter().rev().find(|e| {
        e.get("rms").is_some() && channel.as_ref().is_none_or(|c| e["channel"] == json!(c))
    });
    let mut expected: Vec<String> = levels.iter().map(|(k, c)| format!("{k} {c}")).collect();
    if let Some(s) = silence {
        expected.push(if s { "silence".into() } else { "sound".into() });
    }
    if let Some(c) = clipping {
        expected.push(if c {
            "clipping".into()
        } else {
            "no clipping".into()
        });
    }
    let expected = format!("the program's latest audio window: {}", expected.join(", "));
    let Some(w) = latest else {
        return Ok(Outcome::new(false, expected, "no audio window was measured: is an audio channel open and the program's output linked (debug_channel list)?".into(), vec![]));
    };
    let pass = levels.iter().all(|(k, c)| c.holds(&w[*k]))
        && silence.is_none_or(|s| w["silence"] == json!(s))
        && clipping.is_none_or(|c| w["clipping"] == json!(c));
    let actual = w["summary"].as_str().unwrap_or("a window").to_string();
    Ok(Outcome::new(pass, expected, actual, ids(&[w])))
}

#[allow(clippy::too_many_arguments)]
fn trace(
    mgr: &SessionManager,
    id: &str,
    from: u64,
    window: &str,
    func: &str,
    called: Option<bool>,
    count: Option<&Compare>,
    args: &[(String, Compare)],
    returns: Option<&Compare>,
    any: bool,
) -> Result<Outcome, String> {
    let filter = function_filter(func);
    let head = query(
        mgr,
        id,
        json!({"eventType": "function_enter", "function": filter, "timeFrom": from, "limit": 1}),
    )?;
    let calls = head["totalCount"].as_u64().unwrap_or(0);
    let mut expected = Vec::new();
    let mut pass = true;
    let mut shown = Vec::new();
    let mut actual = vec![format!("{func} was called {calls} time(s) {window}")];
    if let Some(c) = called {
        expected.push(format!("{func} {}called", if c { "" } else { "not " }));
        pass &= (calls > 0) == c;
    }
    if let Some(c) = count {
        expected.push(format!("{func}'s call count {c}"));
        pass &= c.holds(&json!(calls));
    }
    let every = if any { "some call" } else { "every call" };
    if !args.is_empty() {
        let (enters, _) = events(
            mgr,
            id,
            json!({"eventType": "function_enter", "function": filter, "timeFrom": from}),
        )?;
        for (key, cond) in args {
            expected.push(format!("{every}'s argument {key} {cond}"));
            let value_of = |e: &Value| -> Value {
                let list = e["arguments"].as_array();
                let arg = match key.parse::<usize>() {
                    Ok(i) => list.and_then(|l| l.get(i)),
                    Err(_) => list.and_then(|l| l.iter().find(|a| a["name"] == json!(key))),
                };
                arg.map(|a| a["value"].clone()).unwrap_or(Value::Null)
            };
            let (ok, bad) = judge(&enters, any, |e| cond.holds(&value_of(e)));
            pass &= ok;
            if let Some(b) = bad {
                actual.push(format!(
                    "argument {key} was {} (event #{})",
                    value_of(b),
                    b["id"]
                ));
                shown.extend(b["id"].as_u64());
            }
        }
    }
    if let Some(cond) = returns {
        expected.push(format!("{every} of {func} returns {cond}"));
        let (exits, _) = events(
            mgr,
            id,
            json!({"eventType": "function_exit", "function": filter, "timeFrom": from}),
        )?;
        let ret = |e: &Value| e.get("returnValue").cloned().unwrap_or(Value::Null);
        let (ok, bad) = judge(&exits, any, |e| cond.holds(&ret(e)));
        pass &= ok;
        match bad {
            Some(b) => {
                actual.push(format!("it returned {} (event #{})", ret(b), b["id"]));
                shown.extend(b["id"].as_u64());
            }
            None if exits.is_empty() => actual.push("no call returned".into()),
            None => {}
        }
    }
    if shown.is_empty() {
        let (latest, _) = events(
            mgr,
            id,
            json!({"eventType": "function_enter", "function": filter, "timeFrom": from, "limit": 1}),
        )?;
        shown = latest
            .iter()
            .filter_map(|e| e["id"].as_u64())
            .take(IDS_SHOWN)
            .collect();
    }
    Ok(Outcome::new(
        pass,
        expected.join(", "),
        actual.join("; "),
        shown,
    ))
}

/// Whether every event (or, with `any`, one) satisfies `ok`; the first that
/// breaks it when it fails. No events: it fails.
fn judge(events: &[Value], any: bool, ok: impl Fn(&Value) -> bool) -> (bool, Option<&Value>) {
    if events.is_empty() {
        return (false, None);
    }
    if any {
        let pass = events.iter().any(&ok);
        (pass, if pass { None } else { events.last() })
    } else {
        match events.iter().find(|e| !ok(e)) {
            Some(bad) => (false, Some(bad)),
            None => (true, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_must_hold_unless_any() {
        let evs = vec![json!({"id": 1, "v": 1}), json!({"id": 2, "v": 5})];
        let small = |e: &Value| e["v"].as_i64().unwrap() < 3;
        assert_eq!(judge(&evs, false, small), (false, Some(&evs[1])));
        assert_eq!(judge(&evs, true, small), (true, None));
        assert_eq!(
            judge(&[], true, small),
            (false, None),
            "no call: nothing holds"
        );
    }

    #[test]
    fn globs_become_anchored_regexes() {
        assert_eq!(
            function_filter("Voice::free"),
            json!({"equals": "Voice::free"})
        );
        assert_eq!(
            function_filter("Voice::*"),
            json!({"matches": "^Voice::.*$"})
        );
    }
}
