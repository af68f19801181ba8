//! The query service: `debug_query` (filters, paging, aggregation by
//! function, the page's rendering and what it left out) and one event by
//! id, shared by the MCP tool and the web API.

use crate::params::{FileFilter, NameFilter, QueryParams};
use crate::{render, timespec};
use serde_json::{Value, json};
use strobe_core::ToolError;
use strobe_core::event::EventKind;
use strobe_session::SessionManager;
use strobe_store::{EventFilter, QueryPage, ReturnValueFilter};

/// Largest page `debug_query` returns.
pub const MAX_LIMIT: i64 = 500;

/// How long a query works on an exact `totalCount` once its page is
/// filled; past it the count is estimated with exact bounds (the goal is
/// every filter in 10 ms at 10 M events; `exactCount` lifts it).
pub const COUNT_BUDGET: std::time::Duration = std::time::Duration::from_millis(6);

/// The distinct non-zero values of one id field over a page of events.
fn distinct_nonzero(
    events: &[strobe_core::Event],
    field: impl Fn(&strobe_core::Event) -> u32,
) -> Vec<u32> {
    let mut ids: Vec<u32> = events.iter().map(field).filter(|id| *id != 0).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The raw 64-bit register form of a JSON value (integers two's-complement).
fn raw_value(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| n.as_i64().map(|i| i as u64)),
        Value::Bool(b) => Some(*b as u64),
        Value::String(s) => {
            let s = s.trim();
            match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => s.parse::<i64>().ok().map(|i| i as u64),
            }
        }
        Value::Null => Some(0),
        _ => None,
    }
}

fn aggregate_by_function(
    mgr: &SessionManager,
    session: &str,
    filter: &EventFilter,
    offset: usize,
    limit: usize,
) -> Result<(Value, String), ToolError> {
    let stats = mgr.aggregate_functions(session, filter)?;
    let total = stats.len();
    let page: Vec<_> = stats.into_iter().skip(offset).take(limit).collect();
    let ids: Vec<u32> = page.iter().map(|s| s.func_id).collect();
    let names: std::collections::HashMap<u32, strobe_store::FunctionRow> = mgr
        .function_rows(session, &ids)?
        .into_iter()
        .map(|f| (f.func_id, f))
        .collect();
    let mut text = format!(
        "{} of {total} traced functions (slowest total first, offset {offset})",
        page.len()
    );
    let rows: Vec<Value> = page
        .iter()
        .map(|s| {
            let f = names.get(&s.func_id);
            let name = f.map_or("?", |f| f.name.as_str());
            let mean = s.total_duration_ns.checked_div(s.returns).unwrap_or(0);
            text.push_str(&format!(
                "\n{name}: {} calls, total {} ns, mean {mean} ns, max {} ns",
                s.calls, s.total_duration_ns, s.max_duration_ns
            ));
            json!({
                "function": name,
                "sourceFile": f.and_then(|f| f.file.clone()),
                "line": f.and_then(|f| f.line),
                "calls": s.calls,
                "returns": s.returns,
                "totalDurationNs": s.total_duration_ns,
                "meanDurationNs": mean,
                "maxDurationNs": s.max_duration_ns,
                "returnedZero": s.returned_zero,
                "returnedMinusOne": s.returned_minus_one,
            })
        })
        .collect();
    let truncated = offset + rows.len() < total;
    if truncated {
        text.push_str("\n(more functions with a larger offset)");
    }
    let cut = if truncated {
        json!({ "moreFunctions": total - offset - rows.len() })
    } else {
        json!({})
    };
    Ok((
        json!({ "aggregate": "function", "functions": rows, "totalFunctions": total, "hasMore": truncated, "truncated": cut }),
        text,
    ))
}

/// `debug_query` outside MCP (the web UI's event table): the same
/// validation, filters and rendering; the structured result.
pub fn query(mgr: &SessionManager, p: QueryParams) -> Result<Value, ToolError> {
    run_query(mgr, p).map(|(v, _)| v)
}

/// `debug_query`: the structured result and its short text rendering. With
/// `waitMs`, blocks until a match, the process's end or the time's end
/// (see [`crate::wait`]; MCP steps through the wait itself to report
/// progress).
pub fn run_query(mgr: &SessionManager, p: QueryParams) -> Result<(Value, String), ToolError> {
    if p.wait_ms.is_some() {
        return match crate::wait::begin(mgr, p)? {
            crate::wait::Begun::Answered(answer) => Ok(answer),
            crate::wait::Begun::Waiting(mut w) => {
                let how = loop {
                    if let Some(how) = w.step(mgr, w.deadline())? {
                        break how;
                    }
                };
                w.finish(mgr, how)
            }
        };
    }
    let prepared = prepare(mgr, &p)?;
    answer(mgr, &p, &prepared)
}

/// `debug_query`'s arguments checked and turned into the store's filter.
#[derive(Clone)]
pub(crate) struct Prepared {
    pub(crate) filter: EventFilter,
    offset: i64,
    limit: i64,
}

/// Checks `p` and builds its filter (function, thread and return-value
/// conditions resolved against the session).
pub(crate) fn prepare(mgr: &SessionManager, p: &QueryParams) -> Result<Prepared, ToolError> {
    let limit = p.limit.unwrap_or(50);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ToolError::validation(format!(
            "'limit' must be between 1 and {MAX_LIMIT}, got {limit}; page through larger results with 'offset'"
        )));
    }
    let offset = p.offset.unwrap_or(0);
    if offset < 0 {
        return Err(ToolError::validation(format!(
            "'offset' must be 0 or more, got {offset}"
        )));
    }
    let mut filter = EventFilter::default();
    if let Some(t) = &p.event_type {
        let kind = EventKind::from_name(t).ok_or_else(|| {
            let names: Vec<_> = EventKind::ALL.iter().map(|k| k.name()).collect();
            ToolError::validation(format!(
                "'eventType' {t:?} is not one of: {}",
                names.join(", ")
            ))
        })?;
        filter.kinds = Some(kind.bit());
    }
    if let Some(pid) = p.pid {
        filter.pid = Some(u32::try_from(pid).map_err(|_| {
            ToolError::validation(format!("'pid' {pid} is not a valid process id"))
        })?);
    }
    if let Some(d) = p.min_duration_ns {
        filter.min_duration_ns = Some(u64::try_from(d).map_err(|_| {
            ToolError::validation(format!("'minDurationNs' must be 0 or more, got {d}"))
        })?);
    }
    if let Some(t) = p.text_contains.as_ref().filter(|t| !t.is_empty()) {
        filter.payload_contains = Some(t.as_bytes().to_vec());
    }
    for (name, v, slot) in [
        ("eventIdFrom", p.event_id_from, &mut filter.seq_from),
        ("eventIdTo", p.event_id_to, &mut filter.seq_to),
    ] {
        if let Some(v) = v {
            *slot = Some(u64::try_from(v).map_err(|_| {
                ToolError::validation(format!("'{name}' must be 0 or more, got {v}"))
            })?);
        }
    }
    if p.time_from.is_some() || p.time_to.is_some() {
        let latest = mgr.latest_ts(&p.session_id)?;
        if let Some(v) = &p.time_from {
            filter.time_from =
                Some(timespec::resolve("timeFrom", v, latest).map_err(ToolError::validation)?);
        }
        if let Some(v) = &p.time_to {
            filter.time_to =
                Some(timespec::resolve("timeTo", v, latest).map_err(ToolError::validation)?);
        }
        if let (Some(a), Some(b)) = (filter.time_from, filter.time_to)
            && a > b
        {
            return Err(ToolError::validation(format!(
                "'timeFrom' ({a} ns) is after 'timeTo' ({b} ns)"
            )));
        }
    }
    if p.function.is_some() || p.source_file.is_some() {
        let none_f = NameFilter::default();
        let none_file = FileFilter::default();
        let f = p.function.as_ref().unwrap_or(&none_f);
        let file = p.source_file.as_ref().unwrap_or(&none_file);
        let re = match &f.matches {
            Some(m) => Some(regex::RegexBuilder::new(m).size_limit(1 << 20).build().map_err(|e| {
                ToolError::validation(format!("'function.matches' is not a usable regex (invalid, or over the 1 MiB compiled-size limit; the engine is linear-time): {e}"))
            })?),
            None => None,
        };
        let ids = mgr.function_ids(&p.session_id, |name, _raw, src| {
            f.equals.as_ref().is_none_or(|e| e == name)
                && f.contains
                    .as_ref()
                    .is_none_or(|c| name.contains(c.as_str()))
                && re.as_ref().is_none_or(|r| r.is_match(name))
                && file.equals.as_ref().is_none_or(|e| src == Some(e.as_str()))
                && file
                    .contains
                    .as_ref()
                    .is_none_or(|c| src.is_some_and(|s| s.contains(c.as_str())))
        })?;
        filter.func_ids = Some(ids);
    }
    if let Some(t) = &p.thread_name {
        let needle = t.contains.clone().unwrap_or_default();
        filter.tids = Some(mgr.thread_ids(&p.session_id, |name| name.contains(needle.as_str()))?);
    }
    if let Some(rv) = &p.return_value {
        if rv
            .equals
            .as_ref()
            .is_some_and(|v| v.is_object() || v.is_array())
        {
            return Err(ToolError::validation(
                "'returnValue.equals' compares scalars: a number, string (also enum names and C strings), \
                 boolean, null or hex string (\"0x2a\")",
            ));
        }
        // Typed events compare the JSON value; events without types (no
        // DWARF, light mode) compare the raw return register.
        // Always given: Python payloads are typed without capture plans.
        let caps = mgr.captures(&p.session_id);
        let typed: Option<strobe_store::query::TypedReturn> =
            Some(std::sync::Arc::new(move |h, payload| {
                let d = caps.as_ref().and_then(|c| c.read().ok());
                strobe_session::trace::typed_in(d.as_deref(), h, payload)
            }));
        filter.return_value = Some(ReturnValueFilter {
            equals: rv.equals.as_ref().and_then(raw_value),
            equals_json: rv.equals.clone(),
            is_null: rv.is_null,
            typed,
        });
    }
    if let Some(mode) = &p.aggregate
        && mode != "function"
    {
        return Err(ToolError::validation(format!(
            "'aggregate' {mode:?} is not supported; use \"function\" (one row per traced function)"
        )));
    }
    Ok(Prepared {
        filter,
        offset,
        limit,
    })
}

/// The answer to a prepared `debug_query`: a page of events (or rows per
/// function) and its text.
pub(crate) fn answer(
    mgr: &SessionManager,
    p: &QueryParams,
    prepared: &Prepared,
) -> Result<(Value, String), ToolError> {
    let Prepared {
        filter,
        offset,
        limit,
    } = prepared;
    let (offset, limit) = (*offset, *limit);
    if p.aggregate.is_some() {
        return aggregate_by_function(mgr, &p.session_id, filter, offset as usize, limit as usize);
    }
    let counting = if p.exact_count {
        strobe_store::Counting::Exact
    } else {
        strobe_store::Counting::Within(COUNT_BUDGET)
    };
    let result = mgr.query_counting(
        &p.session_id,
        filter,
        QueryPage {
            offset: offset as u64,
            limit: limit as usize,
        },
        counting,
    )?;
    let status = mgr.status(&p.session_id)?;
    let (events, lines) = render_events(mgr, &p.session_id, &result.events, p.verbose)?;
    let cut = render::Truncation::of_page(
        &result.events,
        &events,
        p.verbose,
        offset as u64,
        result.total_count,
        status.events.evicted,
        status.events.dropped,
    );
    let mut v = json!({
        "events": events,
        "totalCount": result.total_count,
        "hasMore": result.has_more,
    });
    if let Some((low, high)) = result.count_bounds {
        v["totalCountExact"] = json!(false);
        v["totalCountBounds"] = json!({"min": low, "max": high});
    }
    if status.pids.len() > 1 {
        v["pids"] = json!(status.pids);
    }
    let mut notes = Vec::new();
    if status.events.evicted > 0 {
        v["eventsEvicted"] = json!(status.events.evicted);
        notes.push(eviction_note(&status.events));
    }
    if status.events.dropped > 0 {
        v["eventsDropped"] = json!(status.events.dropped);
        notes.push(format!(
            "{} events were dropped before reaching the store",
            status.events.dropped
        ));
    }
    let count = match result.count_bounds {
        Some((low, high)) => format!(
            "about {} (estimated, between {low} and {high}; exactCount: true counts them)",
            result.total_count
        ),
        None => result.total_count.to_string(),
    };
    let mut text = format!(
        "{} of {count} matching events (offset {offset}){}",
        result.events.len(),
        if result.has_more {
            "; more with a larger offset"
        } else {
            ""
        }
    );
    let mut cut_lines = 0;
    for line in &lines {
        text.push('\n');
        cut_lines += usize::from(line.ends_with('…'));
        text.push_str(line);
    }
    for n in notes {
        text.push_str(&format!("\nNote: {n}"));
    }
    let (report, summary) = cut.report(cut_lines);
    v["truncated"] = report;
    if let Some(s) = summary {
        text.push_str(&format!("\nTruncated: {s}"));
    }
    Ok((v, text))
}

/// Renders stored events as debug_query shows them: the JSON of each and
/// its one-line text.
fn render_events(
    mgr: &SessionManager,
    session_id: &str,
    events: &[strobe_core::Event],
    verbose: bool,
) -> Result<(Vec<Value>, Vec<String>), ToolError> {
    let ids = distinct_nonzero(events, |e| e.header.func_id);
    let funcs: std::collections::HashMap<u32, strobe_store::FunctionRow> = mgr
        .function_rows(session_id, &ids)?
        .into_iter()
        .map(|f| (f.func_id, f))
        .collect();
    let func_of = |e: &strobe_core::Event| funcs.get(&e.header.func_id);
    // Typed values are decoded once per event, for both the JSON and the text.
    let captures = mgr.captures(session_id);
    let mut typed: Vec<Option<Value>> = {
        let caps = captures.as_ref().and_then(|c| c.read().ok());
        events
            .iter()
            .map(|e| strobe_session::trace::typed_in(caps.as_deref(), &e.header, &e.payload))
            .collect()
    };
    let calls = render::exit_calls(
        events,
        &mut |f, page| {
            mgr.query(session_id, f, page)
                .map(|r| r.events)
                .map_err(Into::into)
        },
        &|e| {
            let caps = captures.as_ref().and_then(|c| c.read().ok());
            strobe_session::trace::typed_in(caps.as_deref(), &e.header, &e.payload)
        },
    );
    let lines: Vec<String> = events
        .iter()
        .zip(&typed)
        .map(|(e, t)| {
            let call = calls.get(&e.seq).map(String::as_str);
            render::event_line(e, func_of(e), t.as_ref(), call)
        })
        .collect();
    let tids = distinct_nonzero(events, |e| e.header.tid);
    let names: std::collections::HashMap<u32, String> = if verbose {
        mgr.thread_names(session_id, &tids)?.into_iter().collect()
    } else {
        Default::default()
    };
    let rendered: Vec<Value> = events
        .iter()
        .zip(typed.iter_mut())
        .map(|(e, t)| {
            let mut v = render::event(e, verbose, func_of(e), t.take());
            if let Some(n) = names.get(&e.header.tid) {
                v["threadName"] = json!(n);
            }
            v
        })
        .collect();
    Ok((rendered, lines))
}

/// One event by id, in debug_query's verbose form, for the web UI's detail
/// view. A function_exit comes with its function_enter (the arguments)
/// under `enter`, found as the same thread's enter of the same function at
/// the exit's time minus its duration.
pub fn event(mgr: &SessionManager, session_id: &str, id: u64) -> Result<Value, ToolError> {
    let one = |filter: &EventFilter| {
        mgr.query(
            session_id,
            filter,
            QueryPage {
                offset: 0,
                limit: 1,
            },
        )
        .map(|r| r.events)
    };
    let found = one(&EventFilter {
        seq_from: Some(id),
        seq_to: Some(id),
        ..Default::default()
    })?;
    let Some(e) = found.first() else {
        return Err(ToolError::validation(format!(
            "session {session_id} has no event {id} (evicted, or not recorded yet)"
        )));
    };
    let mut out = json!({"event": render_events(mgr, session_id, &found, true)?.0.remove(0)});
    if e.header.kind == EventKind::FunctionExit as u8 {
        let start = e.header.ts_ns.saturating_sub(e.header.duration_ns);
        let enter = one(&EventFilter {
            kinds: Some(EventKind::FunctionEnter.bit()),
            func_ids: Some([e.header.func_id].into()),
            tids: Some([e.header.tid].into()),
            time_from: Some(start),
            time_to: Some(start),
            seq_to: Some(id),
            ..Default::default()
        })?;
        if !enter.is_empty() {
            out["enter"] = render_events(mgr, session_id, &enter, true)?.0.remove(0);
        }
    }
    Ok(out)
}

/// Says which events were evicted and which setting keeps more: function
/// calls go first, under their own cap, so output is evicted only by its own.
fn eviction_note(events: &strobe_session::EventCounts) -> String {
    let calls = events.evicted.saturating_sub(events.evicted_output);
    let mut parts = Vec::new();
    if calls > 0 {
        parts.push(format!(
            "{calls} oldest function calls were evicted (events.maxPerSession; output, crashes and exits are kept apart)"
        ));
    }
    if events.evicted_output > 0 {
        parts.push(format!(
            "{} oldest output/crash/exit events were evicted (events.maxOutputPerSession)",
            events.evicted_output
        ));
    }
    format!(
        "{}; raise it in settings.json to keep more",
        parts.join("; ")
    )
}
