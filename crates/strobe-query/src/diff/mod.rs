//! `debug_diff`: what differs between a run that works (the baseline) and
//! one that does not (the candidate), both stored sessions of one program.
//!
//! It answers, within `maxItems` per list: the first divergence of the two
//! call sequences (`divergence.rs`, over `calls.rs`' per-thread calls, the
//! candidate's threads matched to the baseline's by `threads.rs`),
//! functions called in only one run and call counts that differ, argument
//! and return values seen in only one run, the first differing output line
//! of each stream (`output.rs`), and the exits and crashes; and it says
//! what it could not compare (evicted, dropped, sampled or unread events).

mod calls;
mod divergence;
mod output;
mod render;
mod threads;
mod values;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use strobe_core::ToolError;
use strobe_session::SessionManager;

pub use divergence::{Divergence, Kind};

/// Longest list `maxItems` allows.
pub const MAX_ITEMS: i64 = 50;
/// Most `functions` patterns.
const MAX_PATTERNS: usize = 32;

/// `debug_diff` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DiffParams {
    /// Session of the run that works.
    pub baseline: String,
    /// Session of the run to explain.
    pub candidate: String,
    /// Only these functions: names or globs ("parse_*").
    pub functions: Option<Vec<String>>,
    /// Items per list, 1-50 (default 5).
    pub max_items: Option<i64>,
}

/// A function-name pattern: `*` matches any run of characters; without a
/// `*` the name must be equal.
fn glob_match(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(at) => rest = &rest[at + mid.len()..],
            None => return false,
        }
    }
    true
}

/// `debug_diff`: the structured answer and its short text.
pub fn run_diff(mgr: &SessionManager, p: DiffParams) -> Result<(Value, String), ToolError> {
    let max_items = p.max_items.unwrap_or(5);
    if !(1..=MAX_ITEMS).contains(&max_items) {
        return Err(ToolError::validation(format!(
            "'maxItems' must be 1–{MAX_ITEMS} (default 5), got {max_items}"
        )));
    }
    if p.baseline.is_empty() || p.candidate.is_empty() {
        return Err(ToolError::validation(
            "'baseline' and 'candidate' are session ids; debug_session {action: \"list\"} lists them",
        ));
    }
    if p.baseline == p.candidate {
        return Err(ToolError::validation(format!(
            "'baseline' and 'candidate' are both {}: a diff compares two runs; launch the program again \
             (or rerun the test) and pass the new session as 'candidate'",
            p.baseline
        )));
    }
    let patterns = p.functions.unwrap_or_default();
    if patterns.len() > MAX_PATTERNS || patterns.iter().any(|s| s.is_empty()) {
        return Err(ToolError::validation(format!(
            "'functions' takes 1–{MAX_PATTERNS} non-empty names or globs such as \"parse_*\""
        )));
    }
    let base = mgr.status(&p.baseline)?;
    let cand = mgr.status(&p.candidate)?;
    if base.binary_path != cand.binary_path {
        return Err(ToolError::validation(format!(
            "baseline {} ran {} but candidate {} ran {}: a diff compares two runs of one program. \
             Pick two sessions of the same program (debug_session {{action: \"list\"}}), such as a \
             passing and a failing run of one test",
            p.baseline, base.binary_path, p.candidate, cand.binary_path
        )));
    }
    let keep = |name: &str| patterns.is_empty() || patterns.iter().any(|p| glob_match(p, name));
    let b_calls = calls::read(mgr, &p.baseline, &keep)?;
    let mut c_calls = calls::read(mgr, &p.candidate, &keep)?;
    threads::align(&b_calls, &mut c_calls);
    let b_out = output::read(mgr, &p.baseline)?;
    let c_out = output::read(mgr, &p.candidate)?;
    let report = render::Report {
        base: &base,
        cand: &cand,
        b_calls: &b_calls,
        c_calls: &c_calls,
        b_out: &b_out,
        c_out: &c_out,
        divergence: divergence::first(&b_calls, &c_calls),
        max_items: max_items as usize,
        filtered: !patterns.is_empty(),
    };
    Ok(report.render())
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs_match_names() {
        assert!(glob_match("parse_*", "parse_header"));
        assert!(glob_match("*header", "parse_header"));
        assert!(glob_match("p*_*r", "parse_header"));
        assert!(glob_match("*", "anything"));
        assert!(!glob_match("parse_*", "unparse_x"));
        assert!(!glob_match("parse", "parse_header"));
        assert!(!glob_match("ab*ba", "aba"));
    }
}
