//! Node.js's report of an exception nothing caught (a throw, or a promise
//! rejection nobody handled), which it prints to stderr just before it
//! exits with code 1:
//!
//! ```text
//! /app/boom.js:4                       ← where it was thrown
//!   throw e;                           ← that line
//!   ^                                  ← the column
//!                                      ← (blank)
//! TypeError: bad input: 3              ← type and message (may span lines)
//!     at parse (/app/boom.js:2:13)     ← the stack, innermost first
//!     at /app/boom.js:7:14 {           ← `{`: the error's own properties follow
//!   code: 'E_BAD'
//! }
//!                                      ← (blank)
//! Node.js v20.20.2                     ← always last
//! ```
//!
//! A thrown value that is not an error prints the value, then a hint to
//! use `--trace-uncaught`, and no stack.

use super::StderrLine;
use serde_json::{Map, Value, json};
use std::path::Path;
use strobe_symbols::source_maps::SourceMaps;

/// The report, when the last lines of `lines` are one: `{type, message?,
/// thrownAt?: {file, line}, frames: [{function?, file, line, column}],
/// properties?: {name: value as printed}, stderrEventIds}`.
pub fn node_uncaught(lines: &[StderrLine]) -> Option<Value> {
    // Node prints this last when an inspector session (Strobe's debugger
    // worker) is still connected as it exits.
    let end = lines.iter().rposition(|l| {
        !l.text.trim().is_empty() && l.text != "Waiting for the debugger to disconnect..."
    })?;
    if !lines[end].text.starts_with("Node.js v") {
        return None;
    }
    // The caret line under the throw site, and the site two lines above it.
    let caret = (0..end).rev().find(|&i| lines[i].text.trim() == "^")?;
    let site = caret.checked_sub(2).map(|i| &lines[i]);
    let first = site.map_or(caret, |_| caret - 2);
    let mut at = caret + 1;
    while at < end && lines[at].text.trim().is_empty() {
        at += 1;
    }
    // Type and message: up to the first stack frame (or the end).
    let mut text = Vec::new();
    while at < end && !lines[at].text.starts_with("    at ") {
        text.push(lines[at].text.as_str());
        at += 1;
    }
    let mut frames = Vec::new();
    let mut properties = Map::new();
    while at < end && lines[at].text.starts_with("    at ") {
        let line = lines[at].text.trim_start();
        let opens_props = line.ends_with(" {");
        frames.push(frame(line.trim_end_matches(" {")));
        at += 1;
        if opens_props {
            while at < end && lines[at].text != "}" {
                if let Some((k, v)) = lines[at].text.trim().split_once(": ") {
                    properties.insert(k.to_string(), json!(v.trim_end_matches(',')));
                }
                at += 1;
            }
        }
    }
    let (ty, message) = headline(&text);
    let mut out = json!({
        "type": ty,
        "frames": frames,
        "stderrEventIds": lines[first..=end].iter().map(|l| l.id).collect::<Vec<_>>(),
    });
    if let Some(m) = message {
        out["message"] = json!(m);
    }
    if let Some((file, line)) = site.and_then(|s| s.text.rsplit_once(':'))
        && let Ok(line) = line.parse::<u64>()
    {
        out["thrownAt"] = json!({"file": file.trim_start_matches("file://"), "line": line});
    }
    if !properties.is_empty() {
        out["properties"] = Value::Object(properties);
    }
    Some(out)
}

/// Puts the report's stack and throw site in the terms of the sources its
/// generated files were compiled from (TypeScript, say), where a source
/// map says: each mapped frame's `file`/`line`/`column` become the
/// original's and the generated ones move to `generated`. Node prints
/// generated positions unless it runs with `--enable-source-maps`.
pub fn map_to_sources(report: &mut Value) {
    let mut maps = SourceMaps::default();
    let mut first: Option<(Value, Value)> = None;
    if let Some(frames) = report["frames"].as_array_mut() {
        for (i, f) in frames.iter_mut().enumerate() {
            let (Some(file), Some(line), Some(column)) =
                (f["file"].as_str(), f["line"].as_u64(), f["column"].as_u64())
            else {
                continue;
            };
            if !file.starts_with('/') {
                continue;
            }
            let Some(o) = maps.original(Path::new(file), line as u32, column as u32) else {
                continue;
            };
            f["generated"] = json!({"file": file, "line": line, "column": column});
            f["file"] = json!(o.file.display().to_string());
            f["line"] = json!(o.line);
            f["column"] = json!(o.column);
            if i == 0 {
                first = Some((f["generated"].clone(), f.clone()));
            }
        }
    }
    let at = &mut report["thrownAt"];
    let (Some(file), Some(line)) = (at["file"].as_str(), at["line"].as_u64()) else {
        return;
    };
    // The innermost frame is where it was thrown, to the column.
    let mapped = match &first {
        Some((g, f)) if g["file"] == file && g["line"] == line => {
            Some((f["file"].clone(), f["line"].clone()))
        }
        _ => maps
            .original(Path::new(file), line as u32, 1)
            .map(|o| (json!(o.file.display().to_string()), json!(o.line))),
    };
    if let Some((f, l)) = mapped {
        *at = json!({"file": f, "line": l, "generated": {"file": file, "line": line}});
    }
}

/// `Type: message` (an error), or a thrown value that is not one (its
/// printed form is the message, and `--trace-uncaught`'s hint is dropped).
fn headline(text: &[&str]) -> (String, Option<String>) {
    let text: Vec<&str> = text
        .iter()
        .copied()
        .filter(|l| !l.starts_with("(Use `node --trace-uncaught"))
        .collect();
    let joined = text.join("\n");
    let joined = joined.trim_end();
    match joined.split_once(": ") {
        Some((ty, msg)) if !ty.is_empty() && !ty.contains(char::is_whitespace) => {
            (ty.to_string(), Some(msg.to_string()))
        }
        _ if !joined.contains(char::is_whitespace) && joined.ends_with("Error") => {
            (joined.to_string(), None)
        }
        _ => ("(thrown value)".to_string(), Some(joined.to_string())),
    }
}

/// One stack line without its `at `: `fn (file:line:col)` or `file:line:col`.
fn frame(line: &str) -> Value {
    let line = line.trim_start_matches("at ");
    let (function, place) = match line.strip_suffix(')').and_then(|l| l.rsplit_once(" (")) {
        Some((f, p)) => (Some(f), p),
        None => (None, line),
    };
    let mut parts = place.rsplitn(3, ':');
    let column = parts.next().and_then(|c| c.parse::<u64>().ok());
    let line_no = parts.next().and_then(|l| l.parse::<u64>().ok());
    let file = match (column, line_no, parts.next()) {
        (Some(_), Some(_), Some(f)) => f,
        _ => place,
    };
    let mut out = json!({"file": file.trim_start_matches("file://")});
    if let Some(f) = function {
        out["function"] = json!(f);
    }
    if let (Some(l), Some(c)) = (line_no, column) {
        out["line"] = json!(l);
        out["column"] = json!(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<StderrLine> {
        super::super::test_lines(text, 10)
    }

    #[test]
    fn a_thrown_error_gives_type_message_site_stack_and_properties() {
        let r = node_uncaught(&lines(
            "/app/boom.js:4\n  throw e;\n  ^\n\nTypeError: bad input: 3\n    at parse (/app/boom.js:2:13)\n    at Loader.run (/app/boom.js:6:31)\n    at node:internal/main/run_main_module:28:49 {\n  code: 'E_BAD'\n}\n\nNode.js v20.20.2",
        ))
        .unwrap();
        assert_eq!(r["type"], "TypeError");
        assert_eq!(r["message"], "bad input: 3");
        assert_eq!(r["thrownAt"], json!({"file": "/app/boom.js", "line": 4}));
        assert_eq!(
            r["frames"][0],
            json!({"function": "parse", "file": "/app/boom.js", "line": 2, "column": 13})
        );
        assert_eq!(r["frames"][2]["file"], "node:internal/main/run_main_module");
        assert_eq!(r["properties"], json!({"code": "'E_BAD'"}));
        assert_eq!(r["stderrEventIds"][0], 10);
    }

    #[test]
    fn esm_urls_multi_line_messages_and_thrown_values() {
        let r = node_uncaught(&lines(
            "file:///app/rej.mjs:1\nasync function f() { throw new RangeError('x') }\n                     ^\n\nRangeError: too far\nsecond line\n    at f (file:///app/rej.mjs:1:47)\n\nNode.js v20.20.2\n",
        ))
        .unwrap();
        assert_eq!(r["message"], "too far\nsecond line");
        assert_eq!(r["thrownAt"]["file"], "/app/rej.mjs");
        assert_eq!(r["frames"][0]["file"], "/app/rej.mjs");
        let v = node_uncaught(&lines(
            "\n/app/str.js:1\nthrow \"plain string\";\n^\nplain string\n(Use `node --trace-uncaught ...` to show where the exception was thrown)\n\nNode.js v20.20.2",
        ))
        .unwrap();
        assert_eq!(
            (&v["type"], &v["message"]),
            (&json!("(thrown value)"), &json!("plain string"))
        );
    }

    #[test]
    fn the_debuggers_goodbye_after_the_version_line_is_not_output() {
        let r = node_uncaught(&lines(
            "/app/boom.js:4\n  throw e;\n  ^\n\nTypeError: bad\n    at parse (/app/boom.js:2:13)\n\nNode.js v20.20.2\nWaiting for the debugger to disconnect...\n",
        ))
        .expect("a report");
        assert_eq!(r["type"], "TypeError");
    }

    #[test]
    fn output_after_the_version_line_or_no_version_line_is_no_report() {
        assert!(node_uncaught(&lines("a\n  ^\n\nError: x\n\nNode.js v20.1.0\nmore")).is_none());
        assert!(node_uncaught(&lines("a\n  ^\n\nError: x\n")).is_none());
    }
}
