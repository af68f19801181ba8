//! How `debug_ui_action` knows an action worked: the node re-read until
//! the intended state shows; for an action with no definite effect, a
//! change in the node or output from the program; and, when asked,
//! through the program itself — a traced call on the session's timeline,
//! a variable that changed in its memory. No UI tool can do the last.

use std::time::{Duration, Instant};

use strobe_core::event::EventKind;
use strobe_store::{EventFilter, QueryPage};
use strobe_ui::UiNode;

use super::ui_action::{Outcome, Target, UiVerify};
use super::ui_motor::{Motor, POLL, SETTLE};
use crate::error::SessionError;

impl Motor<'_> {
    /// Waits until `t` (re-read) satisfies `want`; sets `verified` and
    /// `observed` in `out`.
    pub(super) fn expect(
        &self,
        t: &Target,
        out: &mut Outcome,
        want: impl Fn(&UiNode) -> bool,
        seen: impl Fn(&UiNode) -> String,
    ) {
        match &t.node.handle {
            Some(h) => self.expect_subtree(h, out, want, seen),
            None => self.any_effect(t, out),
        }
    }

    pub(super) fn expect_subtree(
        &self,
        h: &strobe_ui::NodeHandle,
        out: &mut Outcome,
        want: impl Fn(&UiNode) -> bool,
        seen: impl Fn(&UiNode) -> String,
    ) {
        out.definite = true;
        let deadline = Instant::now() + self.req.timeout;
        loop {
            match self.backend.read(self.display, h, false) {
                Ok(n) => {
                    if want(&n) || Instant::now() >= deadline {
                        out.verified = want(&n);
                        out.observed = seen(&n);
                        out.after = Some(n);
                        return;
                    }
                }
                Err(e) => {
                    if Instant::now() >= deadline {
                        out.observed = format!("the node could not be read back: {e}");
                        return;
                    }
                }
            }
            std::thread::sleep(POLL);
        }
    }

    /// For actions with no definite effect: the node changed, or the
    /// program printed, within a short settle time.
    pub(super) fn any_effect(&self, t: &Target, out: &mut Outcome) {
        let before = t.node.handle.as_ref().map(|_| subtree_lines(&t.node));
        let deadline = Instant::now() + SETTLE.min(self.req.timeout);
        loop {
            if let (Some(before), Some(h)) = (&before, &t.node.handle)
                && let Ok(n) = self.backend.read(self.display, h, false)
            {
                let now = subtree_lines(&n);
                if &now != before {
                    out.verified = true;
                    out.observed = format!("the node changed: {}", node_summary(&t.node, &n));
                    out.after = Some(n);
                    return;
                }
            }
            if let Some(before) = &self.pixels_before
                && let Some(now) = self.widget_pixels(t)
                && let Some(share) = changed_share(before, &now)
            {
                out.verified = true;
                out.observed = format!(
                    "the widget's pixels changed ({:.0}% of its box)",
                    share * 100.0
                );
                return;
            }
            // A widget only vision knows is watched for its own pixels
            // until the deadline; the program's output counts after that.
            let late = Instant::now() >= deadline;
            if (self.pixels_before.is_none() || late)
                && let Some(seen) = self.output_since()
            {
                out.verified = true;
                out.observed = seen;
                return;
            }
            if late {
                out.observed = "no change seen in the node or the program's output within 250 ms (the tree diff below covers the rest of the window; pass verify: {function} to check that the program reacted)".into();
                return;
            }
            std::thread::sleep(POLL);
        }
    }

    /// The pixels of `t`'s box as shown now.
    pub(super) fn widget_pixels(&self, t: &Target) -> Option<strobe_ui::Capture> {
        let b = t.node.bounds?;
        let w = super::ui_action::window_of(self.windows, &b)?;
        let shot = self.backend.capture(self.display, w).ok()?;
        shot.crop(strobe_ui::Bounds {
            x: b.x - w.bounds.x.max(0),
            y: b.y - w.bounds.y.max(0),
            ..b
        })
    }

    pub(super) fn any_output(&self, out: &mut Outcome) {
        let deadline = Instant::now() + SETTLE.min(self.req.timeout);
        loop {
            if let Some(seen) = self.output_since() {
                out.verified = true;
                out.observed = seen;
                return;
            }
            if Instant::now() >= deadline {
                out.observed =
                    "no output within 250 ms (the tree diff below shows what changed)".into();
                return;
            }
            std::thread::sleep(POLL);
        }
    }

    /// The first event of `kinds` (of `func_ids`, when given) since the
    /// action began, and how many there are; the store is flushed first,
    /// so what the program did a moment ago counts.
    fn since(
        &self,
        kinds: u32,
        func_ids: Option<std::collections::HashSet<u32>>,
    ) -> Option<strobe_store::QueryResult> {
        let _ = self.mgr.store.flush();
        let filter = EventFilter {
            kinds: Some(kinds),
            time_from: Some(self.since_ts),
            func_ids,
            ..Default::default()
        };
        let page = QueryPage {
            offset: 0,
            limit: 1,
        };
        self.mgr.store.query(self.live.key, &filter, page).ok()
    }

    /// The program's output since the action began, as evidence.
    pub(super) fn output_since(&self) -> Option<String> {
        let r = self.since(EventKind::Stdout.bit() | EventKind::Stderr.bit(), None)?;
        let first = r.events.first()?;
        let line = String::from_utf8_lossy(&first.payload);
        let line: String = line.trim_end().chars().take(80).collect();
        Some(format!(
            "the program printed {} line{} ({line:?})",
            r.total_count,
            if r.total_count == 1 { "" } else { "s" }
        ))
    }

    /// Calls of functions named `name` (or ending `.name`, `::name`) since
    /// the action began.
    pub(super) fn calls_since(&self, name: &str) -> Result<u64, SessionError> {
        let ends = |n: &str| {
            n == name || n.ends_with(&format!(".{name}")) || n.ends_with(&format!("::{name}"))
        };
        let ids = self
            .mgr
            .function_ids(&self.live.id, |n, raw, _| ends(n) || raw.is_some_and(ends))?;
        // A Python function is registered when it first runs: a pattern
        // that would match it is enough to wait for its call.
        let patterns = self
            .live
            .desired
            .lock()
            .expect("desired lock")
            .pattern_texts();
        let pending = patterns
            .iter()
            .any(|p| ends(p) || p.contains('*') || p.starts_with('@'));
        if ids.is_empty() && pending {
            return Ok(0);
        }
        if ids.is_empty() {
            return Err(SessionError::validation(format!(
                "verify.function {name:?} names no traced function of session '{}': trace it first (debug_trace {{add: [\"{name}\"]}}, or its module-qualified name), then act",
                self.live.id
            )));
        }
        Ok(self
            .since(EventKind::FunctionEnter.bit(), Some(ids))
            .map_or(0, |r| r.total_count))
    }

    /// A watched variable's value now.
    pub(super) fn watch(&self, expr: &str) -> Result<serde_json::Value, SessionError> {
        let read = self.mgr.memory_read(
            &self.live.id,
            &[super::memory::MemoryTarget {
                variable: Some(expr.to_string()),
                address: None,
                type_hint: None,
                size: None,
                value: None,
            }],
            1,
            None,
        )?;
        let v = read.into_iter().next().unwrap_or_default();
        if let Some(e) = v.get("error") {
            return Err(SessionError::validation(format!(
                "verify.watch {expr:?} cannot be read: {}",
                e.as_str().unwrap_or("unknown error")
            )));
        }
        Ok(v.get("value").cloned().unwrap_or(serde_json::Value::Null))
    }

    /// Verification through the program: a traced call, a changed variable.
    pub(super) fn verify_program(
        &self,
        v: &UiVerify,
        watched: Option<serde_json::Value>,
        out: &mut Outcome,
    ) -> Result<(), SessionError> {
        let deadline = Instant::now() + self.req.timeout;
        let (ok, seen) = loop {
            let (ok, seen) = match v {
                UiVerify::Function(f) => {
                    let n = self.calls_since(f)?;
                    (
                        n > 0,
                        format!("{f} called {n} time{}", if n == 1 { "" } else { "s" }),
                    )
                }
                UiVerify::Watch(w) => {
                    let now = self.watch(w)?;
                    let before = watched.clone().unwrap_or_default();
                    (now != before, format!("{w}: {before} → {now}"))
                }
            };
            if ok || Instant::now() >= deadline {
                break (ok, seen);
            }
            std::thread::sleep(Duration::from_millis(25));
        };
        // The program's word decides an action with no definite effect of
        // its own; for the others both must hold.
        out.verified = if out.observed.starts_with("no change seen")
            || out.observed.starts_with("no output")
        {
            ok
        } else {
            out.verified && ok
        };
        out.observed = if out.observed.is_empty() || out.observed.starts_with("no ") {
            seen
        } else {
            format!("{}; {seen}", out.observed)
        };
        Ok(())
    }
}

/// Each node of a subtree as a line, for "did anything under it change".
pub(super) fn subtree_lines(n: &UiNode) -> Vec<String> {
    pub(super) fn walk(n: &UiNode, out: &mut Vec<String>) {
        out.push(format!(
            "{}|{}|{:?}|{:?}|{:?}",
            n.role, n.name, n.bounds, n.value, n.states
        ));
        for c in &n.children {
            walk(c, out);
        }
    }
    let mut out = Vec::new();
    walk(n, &mut out);
    out
}

pub(super) fn changed_lines(a: &[String], b: &[String]) -> usize {
    let n = a.len().max(b.len());
    (0..n).filter(|i| a.get(*i) != b.get(*i)).count()
}

fn node_summary(before: &UiNode, after: &UiNode) -> String {
    let mut parts = Vec::new();
    if before.value != after.value {
        parts.push(format!(
            "value {} → {}",
            before.value.clone().unwrap_or_default(),
            after.value.clone().unwrap_or_default()
        ));
    }
    if before.name != after.name {
        parts.push(format!("name {:?} → {:?}", before.name, after.name));
    }
    if before.states != after.states {
        parts.push(format!("states {:?} → {:?}", before.states, after.states));
    }
    if parts.is_empty() {
        parts.push(format!(
            "{} nodes under it changed",
            changed_lines(&subtree_lines(before), &subtree_lines(after))
        ));
    }
    parts.join(", ")
}

/// The share of pixels that differ between two images of the same box,
/// when it is more than noise (0.5%); `None` when they look the same or
/// are not the same size.
pub(super) fn changed_share(a: &strobe_ui::Capture, b: &strobe_ui::Capture) -> Option<f64> {
    if (a.width, a.height) != (b.width, b.height) || a.rgba.is_empty() {
        return None;
    }
    let differ = a
        .rgba
        .chunks_exact(4)
        .zip(b.rgba.chunks_exact(4))
        .filter(|(p, q)| p.iter().zip(q.iter()).any(|(x, y)| x.abs_diff(*y) > 24))
        .count();
    let share = differ as f64 / (a.rgba.len() / 4) as f64;
    (share > 0.005).then_some(share)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_widget_changed_when_more_than_noise_of_its_pixels_did() {
        let img = |v: u8, n: usize| strobe_ui::Capture {
            width: 10,
            height: 10,
            rgba: (0..100)
                .flat_map(|i| {
                    if i < n {
                        [v, v, v, 255]
                    } else {
                        [0, 0, 0, 255]
                    }
                })
                .collect(),
        };
        assert_eq!(changed_share(&img(0, 0), &img(200, 0)), None);
        // Ten of a hundred pixels turned light: a change.
        assert_eq!(changed_share(&img(0, 0), &img(200, 10)), Some(0.1));
        // A faint shift (anti-aliasing, a cursor's blink) is not.
        assert_eq!(changed_share(&img(0, 0), &img(10, 50)), None);
    }
}
