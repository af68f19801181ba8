//! The output half of `debug_diff`: each run's stdout and stderr lines in
//! order, the first line that differs in each stream, and each run's first
//! crash.

use strobe_core::event::EventKind;
use strobe_core::{Event, ToolError};
use strobe_session::SessionManager;
use strobe_store::{EventFilter, QueryPage};

/// Most output lines read from one run.
pub const MAX_LINES: usize = 200_000;

/// One run's output lines, per stream.
#[derive(Debug, Default)]
pub struct Output {
    /// (event id, text) of each stdout line.
    pub stdout: Vec<(u64, String)>,
    /// (event id, text) of each stderr line.
    pub stderr: Vec<(u64, String)>,
    /// More lines were there than read.
    pub unread: bool,
    /// The first crash: (event id, its summary).
    pub crash: Option<(u64, String)>,
}

/// The first line that differs in one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineDiff {
    /// "stdout" or "stderr".
    pub stream: &'static str,
    /// 0-based line number in the stream.
    pub line: usize,
    /// The baseline's line, if it had that many.
    pub baseline: Option<(u64, String)>,
    /// The candidate's line, if it had that many.
    pub candidate: Option<(u64, String)>,
}

/// Reads `session`'s output lines (up to [`MAX_LINES`]) and first crash.
pub fn read(mgr: &SessionManager, session: &str) -> Result<Output, ToolError> {
    let mut out = Output::default();
    let mut from = 0u64;
    loop {
        let page = mgr.query(
            session,
            &EventFilter {
                kinds: Some(EventKind::Stdout.bit() | EventKind::Stderr.bit()),
                seq_from: Some(from),
                ..Default::default()
            },
            QueryPage {
                offset: 0,
                limit: 10_000,
            },
        )?;
        let Some(last) = page.events.last() else {
            break;
        };
        from = last.seq + 1;
        for e in &page.events {
            if out.stdout.len() + out.stderr.len() >= MAX_LINES {
                out.unread = true;
                break;
            }
            let text = String::from_utf8_lossy(&e.payload)
                .trim_end_matches('\n')
                .to_string();
            if e.header.kind == EventKind::Stdout as u8 {
                out.stdout.push((e.seq, text));
            } else {
                out.stderr.push((e.seq, text));
            }
        }
        if out.unread || !page.has_more {
            break;
        }
    }
    let crash = mgr.query(
        session,
        &EventFilter {
            kinds: Some(EventKind::Crash.bit()),
            ..Default::default()
        },
        QueryPage {
            offset: 0,
            limit: 1,
        },
    )?;
    out.crash = crash.events.first().map(|e| (e.seq, crash_summary(e)));
    Ok(out)
}

/// A crash event's one-line summary: its signal or exception and message.
fn crash_summary(e: &Event) -> String {
    let v: serde_json::Value = serde_json::from_slice(&e.payload).unwrap_or_default();
    let what = v["signal"]
        .as_str()
        .or(v["exception"]["type"].as_str())
        .unwrap_or("crash");
    let detail = v["exception"]["message"]
        .as_str()
        .or(v["memory"]["cause"].as_str())
        .unwrap_or("");
    super::values::cut(&if detail.is_empty() {
        what.to_string()
    } else {
        format!("{what}: {detail}")
    })
}

/// The first differing line of each stream, earliest in the candidate first.
pub fn first_differences(b: &Output, c: &Output) -> Vec<LineDiff> {
    let mut found: Vec<LineDiff> = [
        ("stdout", &b.stdout, &c.stdout),
        ("stderr", &b.stderr, &c.stderr),
    ]
    .into_iter()
    .filter_map(|(stream, bl, cl)| {
        let n = bl.len().max(cl.len());
        (0..n)
            .find(|&i| bl.get(i).map(|l| &l.1) != cl.get(i).map(|l| &l.1))
            .map(|i| LineDiff {
                stream,
                line: i,
                baseline: bl.get(i).cloned(),
                candidate: cl.get(i).cloned(),
            })
    })
    .collect();
    found.sort_by_key(|d| d.candidate.as_ref().map_or(u64::MAX, |l| l.0));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(stdout: &[&str], stderr: &[&str]) -> Output {
        let lines = |l: &[&str], base: u64| {
            l.iter()
                .enumerate()
                .map(|(i, t)| (base + i as u64, t.to_string()))
                .collect()
        };
        Output {
            stdout: lines(stdout, 1),
            stderr: lines(stderr, 100),
            ..Default::default()
        }
    }

    #[test]
    fn the_first_differing_line_of_each_stream() {
        let b = out(&["a", "b", "c"], &["warn"]);
        let c = out(&["a", "B", "c"], &["warn", "error: x"]);
        let d = first_differences(&b, &c);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].stream, "stdout");
        assert_eq!(d[0].line, 1);
        assert_eq!(d[0].candidate.as_ref().unwrap().1, "B");
        assert_eq!(d[1].stream, "stderr");
        assert_eq!(d[1].baseline, None, "the baseline had one stderr line");
        assert!(first_differences(&b, &b).is_empty());
    }
}
