//! What the runtime said before the process died: the reports that language
//! runtimes and sanitizers write to stderr, recognized in the captured lines
//! so a crash can name its cause and link the lines that explain it.
//!
//! Recognized (the last of each kind wins):
//! - libstdc++'s verbose terminate handler: the uncaught exception's type
//!   and, when it is a `std::exception`, its `what()`;
//! - Rust's default panic hook: thread, location and message (the formats
//!   before and after Rust 1.73, with and without the thread id);
//! - AddressSanitizer, LeakSanitizer, ThreadSanitizer, MemorySanitizer and
//!   UndefinedBehaviorSanitizer reports, from their header to `SUMMARY:`;
//! - CPython's traceback of an exception nothing caught, from
//!   `Traceback (most recent call last):` to the `Type: message` line;
//! - Node.js's report of an exception or rejection nothing caught
//!   (`javascript.rs`), which ends with its `Node.js vX` line.

mod javascript;

pub use javascript::map_to_sources;

use serde_json::{Value, json};

/// One captured stderr line and its event id.
#[derive(Debug, Clone)]
pub struct StderrLine {
    /// The stderr event's id (sequence number).
    pub id: u64,
    /// The line, without its newline.
    pub text: String,
}

/// The runtime reports found in a stretch of stderr.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Diagnosis {
    /// An uncaught C++ exception: `{type, what?, stderrEventIds}`.
    pub exception: Option<Value>,
    /// A Rust panic: `{thread, message, file, line, column, stderrEventIds}`.
    pub panic: Option<Value>,
    /// A sanitizer report: `{tool, error, summary, firstEventId, lastEventId, topFrame?}`.
    pub sanitizer: Option<Value>,
    /// A Python traceback: `{type, message?, frames: [{file, line, function}],
    /// stderrEventIds}` (frames outermost first, as Python prints them).
    pub python: Option<Value>,
    /// A Node.js uncaught exception: `{type, message?, thrownAt?, frames:
    /// [{function?, file, line, column}], properties?, stderrEventIds}`
    /// (frames innermost first, as V8 prints them).
    pub javascript: Option<Value>,
}

impl Diagnosis {
    /// True when nothing was recognized.
    pub fn is_empty(&self) -> bool {
        self.exception.is_none()
            && self.panic.is_none()
            && self.sanitizer.is_none()
            && self.python.is_none()
            && self.javascript.is_none()
    }

    /// One line for a session's end reason, most specific report first.
    pub fn headline(&self) -> Option<String> {
        if let Some(s) = &self.sanitizer {
            return Some(format!(
                "{}: {}",
                s["tool"].as_str().unwrap_or("sanitizer"),
                s["error"].as_str().unwrap_or("error")
            ));
        }
        if let Some(p) = self.python.as_ref().or(self.javascript.as_ref()) {
            return Some(match p["message"].as_str() {
                Some(m) if !m.is_empty() => {
                    format!("uncaught {}: {m}", p["type"].as_str().unwrap_or("?"))
                }
                _ => format!("uncaught {}", p["type"].as_str().unwrap_or("?")),
            });
        }
        if let Some(p) = &self.panic {
            return Some(format!(
                "thread '{}' panicked at {}:{}: {}",
                p["thread"].as_str().unwrap_or("?"),
                p["file"].as_str().unwrap_or("?"),
                p["line"],
                p["message"].as_str().unwrap_or("")
            ));
        }
        self.exception.as_ref().map(|e| match e["what"].as_str() {
            Some(what) => format!(
                "uncaught exception {}: {what}",
                e["type"].as_str().unwrap_or("?")
            ),
            None => format!("uncaught exception {}", e["type"].as_str().unwrap_or("?")),
        })
    }
}

const SANITIZERS: [&str; 5] = [
    "AddressSanitizer",
    "LeakSanitizer",
    "ThreadSanitizer",
    "MemorySanitizer",
    "UndefinedBehaviorSanitizer",
];

/// Most lines of a panic message kept.
const MAX_PANIC_LINES: usize = 20;

/// Finds the runtime reports in `lines` (oldest first).
pub fn diagnose(lines: &[StderrLine]) -> Diagnosis {
    let mut d = Diagnosis::default();
    let mut python_end = 0;
    let mut i = 0;
    while i < lines.len() {
        let text = lines[i].text.as_str();
        if let Some(e) = terminate_report(lines, i) {
            d.exception = Some(e);
        } else if let Some((p, used)) = panic_report(lines, i) {
            d.panic = Some(p);
            i += used;
            continue;
        } else if let Some((p, used)) = python_traceback(lines, i) {
            d.python = Some(p);
            i += used;
            python_end = i;
            continue;
        } else if let Some((s, used)) = sanitizer_report(lines, i) {
            d.sanitizer = Some(s);
            i += used;
            continue;
        } else if text.contains(": runtime error: ") {
            // UBSan's one-line diagnostics (no SUMMARY unless configured).
            let (place, error) = text.split_once(": runtime error: ").unwrap_or((text, ""));
            d.sanitizer = Some(json!({
                "tool": "UndefinedBehaviorSanitizer",
                "error": error,
                "location": place,
                "firstEventId": lines[i].id,
                "lastEventId": lines[i].id,
            }));
        }
        i += 1;
    }
    // The interpreter prints an uncaught exception last, then exits: a
    // traceback with output after it was printed by the program and
    // handled (a test runner's failure report, a thread's exception).
    if d.python.is_some()
        && lines[python_end..]
            .iter()
            .any(|l| !l.text.trim().is_empty())
    {
        d.python = None;
    }
    d.javascript = javascript::node_uncaught(lines);
    d
}

/// A CPython traceback starting at line `i`, and how many lines it took.
fn python_traceback(lines: &[StderrLine], i: usize) -> Option<(Value, usize)> {
    if lines[i].text != "Traceback (most recent call last):" {
        return None;
    }
    let mut frames = Vec::new();
    let mut j = i + 1;
    while let Some(l) = lines.get(j)
        && l.text.starts_with("  ")
    {
        // `  File "/p/app.py", line 10, in <module>`; source and caret lines follow.
        if let Some(rest) = l.text.trim_start().strip_prefix("File \"")
            && let Some((file, rest)) = rest.split_once("\", line ")
        {
            let (line, function) = rest.split_once(", in ").unwrap_or((rest, ""));
            frames.push(json!({
                "file": file,
                "line": line.trim().parse::<u64>().ok(),
                "function": function,
            }));
        }
        j += 1;
    }
    let last = lines.get(j)?;
    let (ty, message) = match last.text.split_once(": ") {
        Some((t, m)) if !t.contains(' ') => (t.to_string(), Some(m.to_string())),
        _ if !last.text.contains(' ') && !last.text.is_empty() => (last.text.clone(), None),
        _ => return None,
    };
    let ids: Vec<u64> = lines[i..=j].iter().map(|l| l.id).collect();
    let report = json!({"type": ty, "message": message, "frames": frames, "stderrEventIds": ids});
    Some((report, j + 1 - i))
}

fn terminate_report(lines: &[StderrLine], i: usize) -> Option<Value> {
    let text = lines[i].text.as_str();
    if text.starts_with("terminate called without an active exception") {
        return Some(json!({"type": null, "stderrEventIds": [lines[i].id],
            "note": "std::terminate was called with no exception in flight"}));
    }
    let rest = text.strip_prefix("terminate called after throwing an instance of '")?;
    let ty = rest.strip_suffix('\'').unwrap_or(rest);
    let mut out = json!({"type": ty, "stderrEventIds": [lines[i].id]});
    if let Some(next) = lines.get(i + 1)
        && let Some(what) = next.text.strip_prefix("  what():  ")
    {
        out["what"] = json!(what);
        out["stderrEventIds"] = json!([lines[i].id, next.id]);
    }
    Some(out)
}

/// A panic header and its message lines; returns how many lines it used.
fn panic_report(lines: &[StderrLine], i: usize) -> Option<(Value, usize)> {
    let rest = lines[i].text.strip_prefix("thread '")?;
    let (thread, after) = rest.split_once('\'')?;
    let at = after.find("panicked at ")?;
    let (before, location) = after.split_at(at);
    let location = &location["panicked at ".len()..];
    // Since Rust 1.89 the header names the thread id: "thread 'main' (123) panicked".
    let thread_id = before
        .trim()
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .and_then(|s| s.parse::<u64>().ok());
    let mut ids = vec![lines[i].id];
    let (message, place) = if let Some(old) = location.strip_prefix('\'') {
        // Before Rust 1.73: panicked at 'message', src/main.rs:2:5
        let (msg, place) = old.rsplit_once("', ")?;
        (msg.to_string(), place.to_string())
    } else {
        let place = location.strip_suffix(':').unwrap_or(location).to_string();
        let mut message = Vec::new();
        for l in lines.iter().skip(i + 1).take(MAX_PANIC_LINES) {
            if l.text.starts_with("note: ")
                || l.text.starts_with("stack backtrace:")
                || l.text.starts_with("thread '")
            {
                break;
            }
            message.push(l.text.as_str());
            ids.push(l.id);
        }
        (message.join("\n"), place)
    };
    let mut parts = place.rsplitn(3, ':');
    let column = parts.next().and_then(|c| c.parse::<u64>().ok());
    let line = parts.next().and_then(|c| c.parse::<u64>().ok());
    let file = parts.next();
    let (file, line, column) = match (file, line, column) {
        (Some(f), Some(l), Some(c)) => (f.to_string(), Some(l), Some(c)),
        _ => (place.clone(), None, None),
    };
    let used = ids.len();
    Some((
        json!({
            "thread": thread,
            "threadId": thread_id,
            "message": message,
            "file": file,
            "line": line,
            "column": column,
            "stderrEventIds": ids,
        }),
        used,
    ))
}

/// A sanitizer report from its `==PID==ERROR:`/`WARNING:` header to its
/// `SUMMARY:` line; returns how many lines it used.
fn sanitizer_report(lines: &[StderrLine], i: usize) -> Option<(Value, usize)> {
    let text = lines[i].text.as_str();
    if !text.starts_with("==") {
        return None;
    }
    let (tool, error) = SANITIZERS.iter().find_map(|tool| {
        let marker = format!("{tool}: ");
        let at = text.find(&marker)?;
        let head = &text[..at];
        (head.ends_with("ERROR: ") || head.ends_with("WARNING: "))
            .then(|| (*tool, text[at + marker.len()..].to_string()))
    })?;
    let mut last = i;
    let mut summary = None;
    let mut top_frame = None;
    for (j, l) in lines.iter().enumerate().skip(i + 1) {
        last = j;
        let t = l.text.trim_start();
        if top_frame.is_none() && t.starts_with("#0 ") {
            top_frame = t.split_once(" in ").map(|(_, f)| f.to_string());
        }
        if let Some(s) = l.text.strip_prefix("SUMMARY: ") {
            summary = Some(s.to_string());
            break;
        }
        if l.text.starts_with("==") && l.text.contains("ABORTING") {
            break;
        }
    }
    Some((
        json!({
            "tool": tool,
            "error": error,
            "summary": summary,
            "topFrame": top_frame,
            "firstEventId": lines[i].id,
            "lastEventId": lines[last].id,
        }),
        last + 1 - i,
    ))
}

/// `text`'s lines as stderr events numbered from `first` (for tests).
#[cfg(test)]
pub(crate) fn test_lines(text: &str, first: u64) -> Vec<StderrLine> {
    text.lines()
        .enumerate()
        .map(|(i, t)| StderrLine {
            id: first + i as u64,
            text: t.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<StderrLine> {
        test_lines(text, 100)
    }

    #[test]
    fn libstdcxx_terminate_with_and_without_what() {
        let d = diagnose(&lines(
            "starting\nterminate called after throwing an instance of 'std::runtime_error'\n  what():  config missing\n",
        ));
        let e = d.exception.unwrap();
        assert_eq!(e["type"], "std::runtime_error");
        assert_eq!(e["what"], "config missing");
        assert_eq!(e["stderrEventIds"], json!([101, 102]));
        let d = diagnose(&lines(
            "terminate called after throwing an instance of 'int'",
        ));
        assert_eq!(d.exception.unwrap()["what"], Value::Null);
        assert_eq!(
            diagnose(&lines("terminate called without an active exception"))
                .exception
                .unwrap()["type"],
            Value::Null
        );
    }

    #[test]
    fn rust_panics_in_every_header_format() {
        let new = diagnose(&lines(
            "thread 'main' (22046) panicked at src/main.rs:10:5:\ndivision by zero: 4/0\nsecond line\nnote: run with `RUST_BACKTRACE=1`",
        ))
        .panic
        .unwrap();
        assert_eq!(new["thread"], "main");
        assert_eq!(new["threadId"], 22046);
        assert_eq!(new["file"], "src/main.rs");
        assert_eq!(new["line"], 10);
        assert_eq!(new["column"], 5);
        assert_eq!(new["message"], "division by zero: 4/0\nsecond line");
        assert_eq!(new["stderrEventIds"], json!([100, 101, 102]));
        let mid = diagnose(&lines(
            "thread 'worker-1' panicked at /x/y.rs:3:9:\nboom\nstack backtrace:",
        ))
        .panic
        .unwrap();
        assert_eq!(mid["thread"], "worker-1");
        assert_eq!(mid["threadId"], Value::Null);
        assert_eq!(mid["message"], "boom");
        let old = diagnose(&lines(
            "thread 'main' panicked at 'old style', src/lib.rs:2:5",
        ))
        .panic
        .unwrap();
        assert_eq!(old["message"], "old style");
        assert_eq!(old["file"], "src/lib.rs");
        assert_eq!(old["line"], 2);
    }

    #[test]
    fn sanitizer_report_spans_header_to_summary() {
        let d = diagnose(&lines(
            "before\n=================================================================\n==123==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602 at pc 0x55 bp 0x7f sp 0x7f\nWRITE of size 1 at 0x602 thread T0\n    #0 0x5555 in main /src/a.c:10\n    #1 0x7f in __libc_start_main\nSUMMARY: AddressSanitizer: heap-buffer-overflow /src/a.c:10 in main\n==123==ABORTING\nafter",
        ));
        let s = d.sanitizer.clone().unwrap();
        assert_eq!(s["tool"], "AddressSanitizer");
        assert!(
            s["error"]
                .as_str()
                .unwrap()
                .starts_with("heap-buffer-overflow on address")
        );
        assert_eq!(
            s["summary"],
            "AddressSanitizer: heap-buffer-overflow /src/a.c:10 in main"
        );
        assert_eq!(s["topFrame"], "main /src/a.c:10");
        assert_eq!(s["firstEventId"], 102);
        assert_eq!(s["lastEventId"], 106);
        assert!(
            d.headline()
                .unwrap()
                .starts_with("AddressSanitizer: heap-buffer-overflow")
        );
    }

    #[test]
    fn ubsan_runtime_errors_and_plain_output() {
        let d = diagnose(&lines("x.c:4:7: runtime error: signed integer overflow"));
        assert_eq!(d.sanitizer.unwrap()["location"], "x.c:4:7");
        assert!(diagnose(&lines("hello\nthread pool started\n== done ==")).is_empty());
    }

    #[test]
    fn python_tracebacks_give_type_message_frames_and_lines() {
        let text = [
            "Traceback (most recent call last):",
            "  File \"/p/app.py\", line 10, in <module>",
            "    inventory.checkout(cart)",
            "  File \"/p/inventory.py\", line 40, in checkout",
            "    raise KeyError(sku)",
            "    ^^^^^^^^^^^^^^^^^^^",
            "KeyError: 'gadget'",
        ];
        let lines: Vec<StderrLine> = text
            .iter()
            .enumerate()
            .map(|(i, t)| StderrLine {
                id: 100 + i as u64,
                text: t.to_string(),
            })
            .collect();
        let d = diagnose(&lines);
        let p = d.python.as_ref().unwrap();
        assert_eq!(p["type"], "KeyError");
        assert_eq!(p["message"], "'gadget'");
        assert_eq!(p["frames"][1]["function"], "checkout");
        assert_eq!(p["frames"][1]["line"], 40);
        assert_eq!(
            p["stderrEventIds"],
            json!([100, 101, 102, 103, 104, 105, 106])
        );
        assert_eq!(d.headline().unwrap(), "uncaught KeyError: 'gadget'");

        // The same traceback with a program's output after it (unittest's
        // failure report, then its summary): handled, not the exit's cause.
        let mut reported = lines.clone();
        for (k, t) in ["", "Ran 4 tests in 0.001s", "", "FAILED (failures=1)"]
            .iter()
            .enumerate()
        {
            reported.push(StderrLine {
                id: 200 + k as u64,
                text: t.to_string(),
            });
        }
        assert!(diagnose(&reported).python.is_none());
        // Blank lines after it do not count.
        let mut trailing = lines.clone();
        trailing.push(StderrLine {
            id: 300,
            text: String::new(),
        });
        assert!(diagnose(&trailing).python.is_some());
    }
}
