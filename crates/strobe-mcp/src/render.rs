//! debug_memory's and debug_session status's text rendering (event rendering is
//! `strobe_query::render`).

use serde_json::Value;

/// One line of debug_memory's text per target result: the value read,
/// previous and new value of a write, the error, or for `bytes` the hex
/// preview and the file holding all of them.
pub fn memory_line(r: &Value) -> String {
    let target = r["target"].as_str().unwrap_or("?");
    let address = r["address"].as_str().unwrap_or("?");
    if let Some(e) = r["error"].as_str() {
        return format!("{target}: error: {e}");
    }
    if let Some(n) = r.get("newValue") {
        return format!("{target} @ {address}: {} -> {n}", r["previousValue"]);
    }
    if let Some(file) = r["file"].as_str() {
        let size = r["size"].as_u64().unwrap_or(0);
        let preview = r["preview"].as_str().unwrap_or_default();
        let shown = preview.split(' ').filter(|b| !b.is_empty()).count() as u64;
        let more = if size > shown { " …" } else { "" };
        return format!("{target} @ {address} ({size} bytes): {preview}{more} (all in {file})");
    }
    let ty = r["type"].as_str().unwrap_or("?");
    format!("{target} @ {address} ({ty}): {}", r["value"])
}

/// `debug_session status`'s short text: state, how it ended, counts, the
/// paused threads, what was evicted or dropped.
pub fn status_text(s: &strobe_session::SessionStatus) -> String {
    let mut text = format!(
        "{}: {}",
        s.session_id,
        serde_json::to_value(s.state)
            .unwrap()
            .as_str()
            .unwrap_or("?")
    );
    if let Some(why) = &s.stopped {
        text.push_str(&format!(" but {why}"));
    }
    if let Some(c) = s.exit_code {
        text.push_str(&format!(", exit code {c}"));
    }
    if let Some(sig) = &s.signal {
        text.push_str(&format!(", signal {sig}"));
    }
    text.push_str(&format!(", {} events stored", s.events.stored));
    text.push_str(&threads_text(s));
    for t in &s.paused_threads {
        text.push_str(&format!(
            "; thread {} paused ({}) in {} {}:{}",
            t.thread_id,
            t.breakpoint_id.as_deref().unwrap_or(&t.reason),
            t.function.as_deref().unwrap_or("?"),
            t.file
                .as_deref()
                .map_or("?", |f| { f.rsplit('/').next().unwrap_or(f) }),
            t.line.map_or("?".to_string(), |l| l.to_string())
        ));
    }
    if s.events.evicted > 0 || s.events.dropped > 0 {
        text.push_str(&format!(
            " ({} evicted: {} calls by events.maxPerSession, {} output by \
                 events.maxOutputPerSession; {} dropped)",
            s.events.evicted,
            s.events.evicted.saturating_sub(s.events.evicted_output),
            s.events.evicted_output,
            s.events.dropped
        ));
    }
    if let Some(why) = s.trace.as_ref().and_then(|t| t.slow_hook.as_ref()) {
        text.push_str(&format!(
            "; every traced call takes the hook's slow path (1.5 to 2 times the cost per call): {why}"
        ));
    }
    if s.rejected_agent_messages > 0 {
        text.push_str(&format!(
            "; {} malformed agent messages rejected (the daemon's log names each)",
            s.rejected_agent_messages
        ));
    }
    text
}

/// How many threads a status's text names.
const THREADS_NAMED: usize = 4;

/// `, 3 threads (thr 101, worker 105, …)`: the live threads, the first few
/// named, what was left out and where to find it.
fn threads_text(s: &strobe_session::SessionStatus) -> String {
    if s.threads.is_empty() {
        return String::new();
    }
    let total = s.threads.len() + s.threads_omitted;
    let named: Vec<String> = s
        .threads
        .iter()
        .take(THREADS_NAMED)
        .map(|t| format!("{} {}", t.name, t.id))
        .collect();
    let mut text = format!(", {total} thread(s) ({}", named.join(", "));
    if total > named.len() {
        text.push_str(&format!(", {} more in `threads`", total - named.len()));
        if s.threads_omitted > 0 {
            text.push_str(&format!(", which lists {}", s.threads.len()));
        }
    }
    text.push(')');
    if let Some(note) = &s.threads_note {
        text.push_str(&format!(" [{note}]"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn memory_lines_show_values_writes_errors_and_byte_previews() {
        let read = json!({"target": "g", "address": "0x10", "type": "int", "value": 3});
        assert_eq!(memory_line(&read), "g @ 0x10 (int): 3");
        let write = json!({"target": "g", "address": "0x10", "previousValue": 3, "newValue": 4});
        assert_eq!(memory_line(&write), "g @ 0x10: 3 -> 4");
        let bad = json!({"target": "g", "error": "no such global"});
        assert_eq!(memory_line(&bad), "g: error: no such global");
        let bytes = json!({"target": "0x10", "address": "0x10", "type": "bytes", "size": 100,
                           "file": "/h/memory/x.bin", "preview": "2a 00 ff"});
        assert_eq!(
            memory_line(&bytes),
            "0x10 @ 0x10 (100 bytes): 2a 00 ff … (all in /h/memory/x.bin)"
        );
    }
}
