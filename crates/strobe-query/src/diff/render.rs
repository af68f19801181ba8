//! `debug_diff`'s answer: the structured report and its short text, every
//! list cut to `maxItems` and saying how much it left out.

use super::calls::{FunctionValues, Run, Seen};
use super::divergence::{Divergence, Side};
use super::output::{self, Output};
use serde_json::{Value, json};
use std::collections::HashMap;
use strobe_session::SessionStatus;

/// Everything a report is made from.
pub(super) struct Report<'a> {
    pub base: &'a SessionStatus,
    pub cand: &'a SessionStatus,
    pub b_calls: &'a Run,
    pub c_calls: &'a Run,
    pub b_out: &'a Output,
    pub c_out: &'a Output,
    pub divergence: Option<Divergence>,
    pub max_items: usize,
    /// Only some functions were compared (`functions`).
    pub filtered: bool,
}

/// Calls per function name.
fn counts(run: &Run) -> HashMap<&str, u64> {
    run.values
        .iter()
        .map(|(f, v)| (run.functions[*f as usize].as_str(), v.calls))
        .collect()
}

fn values_of<'r>(run: &'r Run, name: &str) -> Option<&'r FunctionValues> {
    let i = run.functions.iter().position(|f| f == name)?;
    run.values.get(&(i as u32))
}

/// How a session ended, in words.
fn ending(s: &SessionStatus) -> String {
    let state = serde_json::to_value(s.state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    match (&s.exit_code, &s.signal) {
        (_, Some(sig)) => format!("{state} ({sig})"),
        (Some(code), None) => format!("{state} with code {code}"),
        (None, None) => state,
    }
}

fn side_json(s: &Side) -> Value {
    json!({
        "eventId": s.enter_id, "exitEventId": s.exit_id, "timestampNs": s.ts_ns, "function": s.function,
        "path": s.path, "ordinal": s.ordinal, "arguments": s.args, "returnValue": s.ret,
    })
}

/// A list cut to `max`, with how many were left out.
fn cut<T>(mut items: Vec<T>, max: usize) -> (Vec<T>, usize) {
    let more = items.len().saturating_sub(max);
    items.truncate(max);
    (items, more)
}

impl Report<'_> {
    pub(super) fn render(&self) -> (Value, String) {
        let mut text = format!(
            "Diff of {} (candidate) against {} (baseline), {}:",
            self.cand.session_id, self.base.session_id, self.cand.binary_path
        );
        let mut v = json!({
            "baseline": self.session_json(self.base, self.b_calls),
            "candidate": self.session_json(self.cand, self.c_calls),
        });
        let mut more = serde_json::Map::new();

        // The first divergence.
        match &self.divergence {
            Some(d) => {
                v["firstDivergence"] = self.divergence_json(d);
                text.push_str(&format!("\n{}", divergence_line(d)));
            }
            None => {
                v["firstDivergence"] = Value::Null;
                text.push_str(&format!(
                    "\nNo divergence in the {} calls compared{}.",
                    self.c_calls.threads.values().map(Vec::len).sum::<usize>(),
                    if self.filtered {
                        " (of the functions asked for)"
                    } else {
                        ""
                    }
                ));
            }
        }

        // Exits and crashes.
        let (be, ce) = (ending(self.base), ending(self.cand));
        let same_exit = be == ce;
        let crash = |o: &Output| {
            o.crash
                .as_ref()
                .map(|(id, s)| json!({"eventId": id, "summary": s}))
        };
        v["exit"] = json!({
            "same": same_exit && self.b_out.crash.as_ref().map(|c| &c.1) == self.c_out.crash.as_ref().map(|c| &c.1),
            "baseline": be, "candidate": ce,
            "baselineCrash": crash(self.b_out), "candidateCrash": crash(self.c_out),
        });
        text.push_str(&if same_exit {
            format!("\nExit: both {be}.")
        } else {
            format!("\nExit: baseline {be}, candidate {ce}.")
        });
        if let Some((id, s)) = &self.c_out.crash {
            text.push_str(&format!(" Candidate crash #{id}: {s}."));
        }

        // Output.
        let lines = output::first_differences(self.b_out, self.c_out);
        v["output"] = json!({
            "baselineLines": {"stdout": self.b_out.stdout.len(), "stderr": self.b_out.stderr.len()},
            "candidateLines": {"stdout": self.c_out.stdout.len(), "stderr": self.c_out.stderr.len()},
            "firstDifferences": lines.iter().map(|d| json!({
                "stream": d.stream, "line": d.line,
                "baseline": d.baseline.as_ref().map(|(id, t)| json!({"eventId": id, "text": t})),
                "candidate": d.candidate.as_ref().map(|(id, t)| json!({"eventId": id, "text": t})),
            })).collect::<Vec<_>>(),
        });
        if lines.is_empty() {
            text.push_str("\nOutput: the same.");
        }
        for d in &lines {
            let show = |l: &Option<(u64, String)>| match l {
                Some((id, t)) => format!("{:?} (#{id})", super::values::cut(t)),
                None => "nothing".to_string(),
            };
            text.push_str(&format!(
                "\nOutput: {} line {} differs: baseline {}, candidate {}.",
                d.stream,
                d.line + 1,
                show(&d.baseline),
                show(&d.candidate)
            ));
        }

        // Call counts.
        let (bc, cc) = (counts(self.b_calls), counts(self.c_calls));
        let only = |a: &HashMap<&str, u64>, b: &HashMap<&str, u64>| {
            let mut l: Vec<(String, u64)> = a
                .iter()
                .filter(|(n, c)| **c > 0 && !b.contains_key(*n))
                .map(|(n, c)| (n.to_string(), *c))
                .collect();
            l.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            l
        };
        let (only_b, more_b) = cut(only(&bc, &cc), self.max_items);
        let (only_c, more_c) = cut(only(&cc, &bc), self.max_items);
        let mut differ: Vec<(String, u64, u64)> = cc
            .iter()
            .filter_map(|(n, c)| {
                bc.get(n)
                    .filter(|b| *b != c)
                    .map(|b| (n.to_string(), *b, *c))
            })
            .collect();
        differ.sort_by(|x, y| {
            x.2.abs_diff(x.1)
                .cmp(&y.2.abs_diff(y.1))
                .reverse()
                .then(x.0.cmp(&y.0))
        });
        let (differ, more_d) = cut(differ, self.max_items);
        let named = |l: &[(String, u64)]| {
            l.iter()
                .map(|(n, c)| json!({"function": n, "calls": c}))
                .collect::<Vec<_>>()
        };
        v["calls"] = json!({
            "onlyInBaseline": named(&only_b),
            "onlyInCandidate": named(&only_c),
            "countsDiffer": differ.iter().map(|(n, b, c)| json!({"function": n, "baseline": b, "candidate": c})).collect::<Vec<_>>(),
        });
        let list = |l: &[(String, u64)], more: usize| {
            let mut s = l
                .iter()
                .map(|(n, c)| format!("{n} ({c})"))
                .collect::<Vec<_>>()
                .join(", ");
            if more > 0 {
                s.push_str(&format!(" +{more} more"));
            }
            s
        };
        if !only_c.is_empty() {
            text.push_str(&format!("\nOnly in candidate: {}.", list(&only_c, more_c)));
        }
        if !only_b.is_empty() {
            text.push_str(&format!("\nOnly in baseline: {}.", list(&only_b, more_b)));
        }
        if !differ.is_empty() {
            let mut s = differ
                .iter()
                .map(|(n, b, c)| format!("{n} {b} → {c}"))
                .collect::<Vec<_>>()
                .join(", ");
            if more_d > 0 {
                s.push_str(&format!(" +{more_d} more"));
            }
            text.push_str(&format!(
                "\nCall counts differ (baseline → candidate): {s}."
            ));
        }
        for (k, n) in [
            ("onlyInBaseline", more_b),
            ("onlyInCandidate", more_c),
            ("countsDiffer", more_d),
        ] {
            if n > 0 {
                more.insert(k.into(), json!(n));
            }
        }

        // Values seen in only one run.
        let (values, more_v) = cut(self.value_differences(), self.max_items);
        for item in &values {
            text.push_str(&format!("\n{}", item.1));
        }
        if more_v > 0 {
            more.insert("valueDifferences".into(), json!(more_v));
            text.push_str(&format!("\n(+{more_v} more value differences)"));
        }
        v["valueDifferences"] = Value::Array(values.into_iter().map(|(j, _)| j).collect());

        // What was not compared.
        let not = self.not_compared();
        for n in &not {
            text.push_str(&format!("\nNot compared: {n}"));
        }
        v["notCompared"] = json!(not);
        if !more.is_empty() {
            text.push_str(&format!(
                "\nLists cut to maxItems={}: raise it (≤50) for the rest.",
                self.max_items
            ));
        }
        v["truncated"] = Value::Object(more);
        (v, text)
    }

    fn session_json(&self, s: &SessionStatus, run: &Run) -> Value {
        json!({
            "sessionId": s.session_id, "program": s.binary_path, "ended": ending(s),
            "callsCompared": run.threads.values().map(Vec::len).sum::<usize>(),
            "threads": run.threads.len(),
        })
    }

    fn divergence_json(&self, d: &Divergence) -> Value {
        json!({
            "kind": d.kind.name(),
            "thread": format!("p{} t{}", d.thread.0, d.thread.1),
            "matchedBefore": d.matched_before,
            "baseline": d.baseline.as_ref().map(side_json),
            "candidate": d.candidate.as_ref().map(side_json),
        })
    }

    /// Argument lists and return values each run saw and the other never
    /// did, per function called in both: (JSON, line), candidate's first.
    fn value_differences(&self) -> Vec<(Value, String)> {
        let mut items: Vec<(u8, u64, Value, String)> = Vec::new();
        for (fi, cv) in &self.c_calls.values {
            let name = &self.c_calls.functions[*fi as usize];
            let Some(bv) = values_of(self.b_calls, name) else {
                continue;
            };
            for (what, verb, c_map, b_map, c_total, b_total) in [
                (
                    "returnValue",
                    "returned",
                    &cv.rets,
                    &bv.rets,
                    cv.returns,
                    bv.returns,
                ),
                (
                    "arguments",
                    "was called with",
                    &cv.args,
                    &bv.args,
                    cv.calls,
                    bv.calls,
                ),
            ] {
                // "Never" only holds where that run's values were all kept.
                let sides = [
                    (
                        "candidate",
                        "baseline",
                        c_map,
                        b_map,
                        c_total,
                        !bv.overflow,
                        0u8,
                    ),
                    (
                        "baseline",
                        "candidate",
                        b_map,
                        c_map,
                        b_total,
                        !cv.overflow,
                        1u8,
                    ),
                ];
                for (has, lacks, seen_map, other, total, other_whole, order) in sides {
                    if !other_whole {
                        continue;
                    }
                    for (value, Seen { count, first_id }) in seen_map {
                        if other.contains_key(value) {
                            continue;
                        }
                        let line = format!(
                            "{name} {verb} {value} in {count}/{total} calls in {has}, never in {lacks}; first at #{first_id} ({has})."
                        );
                        let j = json!({
                            "function": name, "what": what, "value": value, "in": has,
                            "calls": count, "of": total, "firstEventId": first_id,
                        });
                        items.push((order, *first_id, j, line));
                    }
                }
            }
        }
        items.sort_by_key(|(order, id, _, _)| (*order, *id));
        items.into_iter().map(|(_, _, j, l)| (j, l)).collect()
    }

    fn not_compared(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for (side, s, run, out) in [
            ("baseline", self.base, self.b_calls, self.b_out),
            ("candidate", self.cand, self.c_calls, self.c_out),
        ] {
            if s.events.evicted > 0 {
                notes.push(format!(
                    "{side}'s {} oldest events were evicted (events.maxPerSession): calls before them are \
                     missing, so the divergence may be earlier than shown",
                    s.events.evicted
                ));
            }
            if s.events.dropped > 0 {
                notes.push(format!(
                    "{side} dropped {} events before they were stored",
                    s.events.dropped
                ));
            }
            if run.events_unread {
                notes.push(format!(
                    "{side}'s function events past the first {} were not read; narrow with 'functions'",
                    super::calls::MAX_CALL_EVENTS
                ));
            }
            if run.sampled_skipped > 0 {
                notes.push(format!(
                    "{side} recorded {} calls of hot functions sampled (1 in N): left out of the alignment",
                    run.sampled_skipped
                ));
            }
            if out.unread {
                notes.push(format!(
                    "{side}'s output past the first {} lines",
                    output::MAX_LINES
                ));
            }
        }
        if self.b_calls.threads.is_empty() && self.c_calls.threads.is_empty() {
            notes.push(
                "calls: neither run has traced calls; trace both (debug_trace) to compare calls"
                    .into(),
            );
        } else if self.b_calls.threads.is_empty() || self.c_calls.threads.is_empty() {
            notes.push(
                "calls: only one run has traced calls; trace both with the same patterns".into(),
            );
        }
        notes
    }
}

/// The divergence in one line.
fn divergence_line(d: &Divergence) -> String {
    use super::divergence::Kind;
    let at = |s: &Side| format!("#{}", s.enter_id);
    let where_ = format!(
        "thread p{} t{}, after {} matching calls",
        d.thread.0, d.thread.1, d.matched_before
    );
    let (b, c) = (d.baseline.as_ref(), d.candidate.as_ref());
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "(not recorded)".into());
    let body = match (d.kind, b, c) {
        (Kind::Arguments, Some(b), Some(c)) => format!(
            "{} called with {} in candidate ({}), {} in baseline ({}); path {}",
            c.function,
            opt(&c.args),
            at(c),
            opt(&b.args),
            at(b),
            c.path
        ),
        (Kind::ReturnValue, Some(b), Some(c)) => format!(
            "{} returned {} in candidate ({}), {} in baseline ({}); path {}",
            c.function,
            c.ret
                .clone()
                .unwrap_or_else(|| "nothing (did not return)".into()),
            at(c),
            b.ret
                .clone()
                .unwrap_or_else(|| "nothing (did not return)".into()),
            at(b),
            c.path
        ),
        (Kind::DifferentCall, Some(b), Some(c)) => format!(
            "candidate called {} ({}) where baseline called {} ({})",
            c.path,
            at(c),
            b.path,
            at(b)
        ),
        (Kind::OnlyInBaseline, Some(b), _) => format!(
            "baseline called {} ({}); the candidate's thread made no more calls",
            b.path,
            at(b)
        ),
        (Kind::OnlyInCandidate, _, Some(c)) => format!(
            "candidate called {} ({}); the baseline's thread made no more calls",
            c.path,
            at(c)
        ),
        _ => "calls differ".into(),
    };
    format!("First divergence ({where_}): {body}.")
}
