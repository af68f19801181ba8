//! A thread that ran off the end of its stack. The agent gives the
//! program's threads signal stacks (agent/src/native/signal_stack.ts), so
//! the fault is reported like any crash, and tells it from others by where
//! it is: next to the stack pointer, in memory that cannot be read. Here it
//! is named, and the recursion's run of identical frames is shown once.

use serde_json::{Value, json};

/// The cause of a fault the agent found next to the stack pointer.
pub(super) const CAUSE: &str = "stack overflow: the thread ran off the end of its stack (deep or endless recursion; the backtrace shows the repeating frames)";

/// "stack overflow in f (file:line)", from the innermost frame with a name.
pub(super) fn headline(backtrace: &Value) -> String {
    let frame = backtrace
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["name"].is_string());
    let place = frame.map(|f| {
        let name = f["name"].as_str().unwrap_or_default();
        match (f["file"].as_str(), f["line"].as_u64()) {
            (Some(file), Some(line)) => {
                let file = file.rsplit('/').next().unwrap_or(file);
                format!(" in {name} ({file}:{line})")
            }
            _ => format!(" in {name}"),
        }
    });
    format!(
        "stack overflow{}: the thread ran off the end of its stack (deep or endless recursion)",
        place.unwrap_or_default()
    )
}

/// Runs of one return address (a recursion) as their first frame with
/// `repeated`: how many frames in a row it stands for.
pub(super) fn collapse_repeats(backtrace: &mut Value) {
    let Some(frames) = backtrace.as_array_mut() else {
        return;
    };
    let mut out: Vec<Value> = Vec::with_capacity(frames.len());
    for frame in frames.drain(..) {
        match out.last_mut() {
            Some(last) if last["address"] == frame["address"] && frame["address"].is_string() => {
                let n = last["repeated"].as_u64().unwrap_or(1);
                last["repeated"] = json!(n + 1);
            }
            _ => out.push(frame),
        }
    }
    *frames = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(address: &str, name: &str, line: u64) -> Value {
        json!({"address": address, "name": name, "file": "/src/walk.c", "line": line})
    }

    #[test]
    fn a_recursions_frames_are_one_frame_with_a_count() {
        let mut backtrace = json!([
            frame("0x10", "walk", 3),
            frame("0x20", "walk", 4),
            frame("0x20", "walk", 4),
            frame("0x20", "walk", 4),
            frame("0x30", "main", 9),
            frame("0x30", "main", 9),
        ]);
        collapse_repeats(&mut backtrace);
        let rows: Vec<(String, u64)> = backtrace
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["address"].as_str().unwrap().to_string(),
                    f["repeated"].as_u64().unwrap_or(1),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [("0x10".into(), 1), ("0x20".into(), 3), ("0x30".into(), 2)]
        );
    }

    #[test]
    fn the_headline_names_the_innermost_named_frame_and_its_line() {
        let backtrace = json!([{"address": "0x1"}, frame("0x10", "walk", 3)]);
        assert!(
            headline(&backtrace).starts_with("stack overflow in walk (walk.c:3): "),
            "{}",
            headline(&backtrace)
        );
        assert!(headline(&json!([])).starts_with("stack overflow: "));
    }
}
