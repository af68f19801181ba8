//! The first divergence of two runs: each thread's calls aligned by call
//! path and ordinal, in order, and the earliest event (in the candidate's
//! order) where a call is missing, another call was made instead, or a
//! call's arguments or return value differ.
//!
//! A return value is known only at the call's exit, after everything the
//! call did: it counts at its exit, so an argument that differs deep in a
//! call chain is found before the return values it changed on the way out.

use super::calls::{Call, Run, ThreadKey};

/// What differs at the divergence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Same call, different arguments.
    Arguments,
    /// Same call and arguments, different return value (or one did not return).
    ReturnValue,
    /// Each run made a different call here.
    DifferentCall,
    /// The baseline made this call; the candidate's thread had no more calls.
    OnlyInBaseline,
    /// The candidate made this call; the baseline's thread had no more calls.
    OnlyInCandidate,
}

impl Kind {
    /// The name the answer uses.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Arguments => "arguments",
            Kind::ReturnValue => "returnValue",
            Kind::DifferentCall => "differentCall",
            Kind::OnlyInBaseline => "onlyInBaseline",
            Kind::OnlyInCandidate => "onlyInCandidate",
        }
    }
}

/// One side's call at the divergence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side {
    /// The call's enter event id.
    pub enter_id: u64,
    /// Its exit event id, if it returned.
    pub exit_id: Option<u64>,
    /// When it was entered (ns since its session started).
    pub ts_ns: u64,
    /// Function name.
    pub function: String,
    /// Call path, outermost first.
    pub path: String,
    /// Which call of that path in its thread (0-based).
    pub ordinal: u32,
    /// Arguments, addresses masked.
    pub args: Option<String>,
    /// Return value, addresses masked.
    pub ret: Option<String>,
}

/// Where two runs first differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// What differs.
    pub kind: Kind,
    /// The thread, as (process ordinal, thread ordinal).
    pub thread: ThreadKey,
    /// Calls of that thread that matched before it.
    pub matched_before: usize,
    /// The baseline's call (absent for [`Kind::OnlyInCandidate`]).
    pub baseline: Option<Side>,
    /// The candidate's call (absent for [`Kind::OnlyInBaseline`]).
    pub candidate: Option<Side>,
}

fn side(run: &Run, c: &Call) -> Side {
    Side {
        enter_id: c.enter_id,
        exit_id: c.exit_id,
        ts_ns: c.ts_ns,
        function: run.functions[c.function as usize].clone(),
        path: run.paths[c.path as usize].clone(),
        ordinal: c.ordinal,
        args: c.args.clone(),
        ret: c.ret.clone(),
    }
}

/// The earliest divergence of `candidate` from `baseline`, if any.
pub fn first(baseline: &Run, candidate: &Run) -> Option<Divergence> {
    let mut threads: Vec<ThreadKey> = baseline
        .threads
        .keys()
        .chain(candidate.threads.keys())
        .copied()
        .collect();
    threads.sort_unstable();
    threads.dedup();
    let empty = Vec::new();
    threads
        .into_iter()
        .filter_map(|t| {
            let b = baseline.threads.get(&t).unwrap_or(&empty);
            let c = candidate.threads.get(&t).unwrap_or(&empty);
            in_thread(baseline, b, candidate, c, t)
        })
        // Earliest in the candidate's order; a call missing from it counts
        // just after the candidate's last matched call.
        .min_by_key(|(moment, _)| *moment)
        .map(|(_, d)| d)
}

/// The divergence of one thread and the moment (candidate event id, and a
/// tie-break) it happens at.
fn in_thread(
    br: &Run,
    b: &[Call],
    cr: &Run,
    c: &[Call],
    thread: ThreadKey,
) -> Option<((u64, u8), Divergence)> {
    let same_key = |x: &Call, y: &Call| {
        x.ordinal == y.ordinal && br.paths[x.path as usize] == cr.paths[y.path as usize]
    };
    let m = b
        .iter()
        .zip(c)
        .position(|(x, y)| !same_key(x, y) || x.args != y.args)
        .unwrap_or(b.len().min(c.len()));
    let make = |kind, i: usize, with_b: bool, with_c: bool| Divergence {
        kind,
        thread,
        matched_before: i,
        baseline: with_b.then(|| side(br, &b[i])),
        candidate: with_c.then(|| side(cr, &c[i])),
    };
    let after_last = |i: usize| if i == 0 { 0 } else { c[i - 1].enter_id };
    let call_div = if m < b.len() && m < c.len() {
        let kind = if same_key(&b[m], &c[m]) {
            Kind::Arguments
        } else {
            Kind::DifferentCall
        };
        Some(((c[m].enter_id, 0), make(kind, m, true, true)))
    } else if m < b.len() {
        Some((
            (after_last(m), 1),
            make(Kind::OnlyInBaseline, m, true, false),
        ))
    } else if m < c.len() {
        Some((
            (c[m].enter_id, 0),
            make(Kind::OnlyInCandidate, m, false, true),
        ))
    } else {
        None
    };
    // Among the calls that matched, the earliest exit (candidate's order)
    // whose return value differs.
    let ret_div = (0..m)
        .filter(|&i| b[i].ret != c[i].ret)
        .map(|i| {
            let at = c[i].exit_id.unwrap_or(u64::MAX);
            ((at, 0), make(Kind::ReturnValue, i, true, true))
        })
        .min_by_key(|(at, _)| *at);
    match (call_div, ret_div) {
        (Some(a), Some(r)) => Some(if r.0 < a.0 { r } else { a }),
        (a, r) => a.or(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A run of one thread from (path, args, ret, enter id, exit id).
    fn run(calls: &[(&str, &str, &str, u64, u64)]) -> Run {
        let mut r = Run::default();
        let mut ordinals: HashMap<String, u32> = HashMap::new();
        let mut list = Vec::new();
        for (path, args, ret, enter, exit) in calls {
            let p = r.paths.len() as u32;
            r.paths.push(path.to_string());
            let f = r.functions.len() as u32;
            r.functions
                .push(path.rsplit(" > ").next().unwrap().to_string());
            let o = ordinals.entry(path.to_string()).or_insert(0);
            list.push(Call {
                path: p,
                ordinal: *o,
                enter_id: *enter,
                exit_id: Some(*exit),
                ts_ns: *enter,
                function: f,
                args: Some(args.to_string()),
                ret: Some(ret.to_string()),
            });
            *o += 1;
        }
        r.threads.insert((1, 1), list);
        r
    }

    #[test]
    fn an_argument_deep_in_a_chain_comes_before_the_returns_it_changed() {
        let b = run(&[
            ("main", "[]", "0", 1, 10),
            ("main > stage", "[1]", "2", 2, 9),
            ("main > stage > leaf", "[1]", "2", 3, 8),
        ]);
        let c = run(&[
            ("main", "[]", "0", 1, 10),
            ("main > stage", "[1]", "4", 2, 9),
            ("main > stage > leaf", "[2]", "4", 3, 8),
        ]);
        let d = first(&b, &c).unwrap();
        assert_eq!(d.kind, Kind::Arguments);
        assert_eq!(d.candidate.as_ref().unwrap().function, "leaf");
        assert_eq!(d.matched_before, 2);
    }

    #[test]
    fn a_return_value_counts_at_its_exit() {
        let b = run(&[("main > a", "[]", "0", 1, 2), ("main > b", "[]", "0", 3, 4)]);
        let c = run(&[
            ("main > a", "[]", "-1", 1, 2),
            ("main > c", "[]", "0", 3, 4),
        ]);
        let d = first(&b, &c).unwrap();
        assert_eq!(d.kind, Kind::ReturnValue);
        assert_eq!(d.candidate.unwrap().ret.as_deref(), Some("-1"));
    }

    #[test]
    fn missing_and_extra_calls_and_identical_runs() {
        let b = run(&[("main > a", "[]", "0", 1, 2), ("main > b", "[]", "0", 3, 4)]);
        let c = run(&[("main > a", "[]", "0", 1, 2)]);
        let d = first(&b, &c).unwrap();
        assert_eq!(d.kind, Kind::OnlyInBaseline);
        assert_eq!(d.baseline.unwrap().function, "b");
        assert!(d.candidate.is_none());
        let d = first(&c, &b).unwrap();
        assert_eq!(d.kind, Kind::OnlyInCandidate);
        let d = first(
            &b,
            &run(&[("main > a", "[]", "0", 1, 2), ("main > x", "[]", "0", 3, 4)]),
        )
        .unwrap();
        assert_eq!(d.kind, Kind::DifferentCall);
        assert!(first(&b, &b).is_none());
    }
}
