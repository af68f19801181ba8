//! Per-function statistics of a chunk's calls and returns, stored beside the
//! chunk (table `chunk_func_stats`) so that `aggregate` answers every chunk a
//! filter covers whole from a few bytes instead of decoding it.
//!
//! Kept out of the `chunks` row for the same reason as the content index:
//! reading it must not walk the overflow pages of the chunk's data.

use crate::codec::{get_varint, put_varint};
use strobe_core::EventKind;

/// Per-function statistics (one chunk's, or a whole session's once merged).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FunctionStats {
    /// The function.
    pub func_id: u32,
    /// Calls entered.
    pub calls: u64,
    /// Calls that returned.
    pub returns: u64,
    /// Sum of durations of returned calls.
    pub total_duration_ns: u64,
    /// Longest returned call.
    pub max_duration_ns: u64,
    /// Returns whose raw value was 0 (NULL, false, 0).
    pub returned_zero: u64,
    /// Returns whose raw value was -1 as a 32- or 64-bit integer.
    pub returned_minus_one: u64,
}

impl FunctionStats {
    /// Counts one function event (enter or exit; other kinds are ignored).
    pub fn add_event(&mut self, kind: u8, duration_ns: u64, value: u64) {
        if kind == EventKind::FunctionEnter as u8 {
            self.calls += 1;
        } else if kind == EventKind::FunctionExit as u8 {
            self.add_return(duration_ns, value);
        }
    }

    /// Counts one return.
    pub fn add_return(&mut self, duration_ns: u64, value: u64) {
        self.returns += 1;
        self.total_duration_ns += duration_ns;
        self.max_duration_ns = self.max_duration_ns.max(duration_ns);
        self.returned_zero += u64::from(value == 0);
        self.returned_minus_one += u64::from(value == u64::MAX || value as u32 == u32::MAX);
    }

    /// Adds another set of the same function's statistics; `calls` only
    /// when `enters`, the returns' only when `exits` (a filter's kinds).
    pub fn merge(&mut self, other: &FunctionStats, enters: bool, exits: bool) {
        if enters {
            self.calls += other.calls;
        }
        if exits {
            self.returns += other.returns;
            self.total_duration_ns += other.total_duration_ns;
            self.max_duration_ns = self.max_duration_ns.max(other.max_duration_ns);
            self.returned_zero += other.returned_zero;
            self.returned_minus_one += other.returned_minus_one;
        }
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.calls == 0 && self.returns == 0
    }
}

/// Encodes a chunk's statistics (sorted by function) as varints, seven per
/// function.
pub fn to_blob(stats: &[FunctionStats]) -> Vec<u8> {
    let mut out = Vec::with_capacity(stats.len() * 12);
    for s in stats {
        for v in [
            u64::from(s.func_id),
            s.calls,
            s.returns,
            s.total_duration_ns,
            s.max_duration_ns,
            s.returned_zero,
            s.returned_minus_one,
        ] {
            put_varint(&mut out, v);
        }
    }
    out
}

/// Decodes a stored blob, calling `visit` for each function's statistics;
/// `None` when the blob is malformed (the chunk is then decoded instead).
pub fn for_each(blob: &[u8], mut visit: impl FnMut(FunctionStats)) -> Option<()> {
    let mut pos = 0;
    while pos < blob.len() {
        let mut v = [0u64; 7];
        for slot in &mut v {
            *slot = get_varint(blob, &mut pos).ok()?;
        }
        visit(FunctionStats {
            func_id: u32::try_from(v[0]).ok()?,
            calls: v[1],
            returns: v[2],
            total_duration_ns: v[3],
            max_duration_ns: v[4],
            returned_zero: v[5],
            returned_minus_one: v[6],
        });
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_round_trips_and_a_malformed_one_is_refused() {
        let mut a = FunctionStats {
            func_id: 7,
            ..Default::default()
        };
        a.add_event(EventKind::FunctionEnter as u8, 0, 0);
        a.add_event(EventKind::FunctionExit as u8, 30, 0);
        a.add_event(EventKind::FunctionExit as u8, 500, u64::MAX);
        a.add_event(EventKind::FunctionExit as u8, 10, u64::from(u32::MAX));
        let b = FunctionStats {
            func_id: u32::MAX,
            calls: u64::MAX,
            ..Default::default()
        };
        let blob = to_blob(&[a.clone(), b.clone()]);
        let mut back = Vec::new();
        assert_eq!(for_each(&blob, |s| back.push(s)), Some(()));
        assert_eq!(back, vec![a.clone(), b]);
        assert_eq!(
            (a.calls, a.returns, a.total_duration_ns, a.max_duration_ns),
            (1, 3, 540, 500)
        );
        assert_eq!((a.returned_zero, a.returned_minus_one), (1, 2));

        assert_eq!(for_each(&blob[..blob.len() - 1], |_| {}), None);
        assert_eq!(for_each(&[0xff; 11], |_| {}), None);
        assert_eq!(for_each(&[], |_| panic!("nothing to visit")), Some(()));
    }

    #[test]
    fn merging_takes_only_the_kinds_asked_for() {
        let one = FunctionStats {
            func_id: 1,
            calls: 2,
            returns: 2,
            total_duration_ns: 10,
            max_duration_ns: 8,
            returned_zero: 1,
            returned_minus_one: 0,
        };
        let mut all = FunctionStats::default();
        all.merge(&one, true, true);
        all.merge(&one, true, true);
        assert_eq!((all.calls, all.returns, all.total_duration_ns), (4, 4, 20));
        assert_eq!(all.max_duration_ns, 8);
        let mut enters = FunctionStats::default();
        enters.merge(&one, true, false);
        assert_eq!((enters.calls, enters.returns), (2, 0));
        let mut exits = FunctionStats::default();
        exits.merge(&one, false, true);
        assert_eq!((exits.calls, exits.returns, exits.returned_zero), (0, 2, 1));
    }
}
