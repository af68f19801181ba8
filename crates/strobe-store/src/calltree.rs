//! Call-tree reconstruction.
//!
//! The store's writer is the only place that knows each event's sequence
//! number, so it links calls: an enter event's `parent` is the enter event of
//! the call that is open on the same thread (0 at the top), and an exit event
//! gets the same parent plus its duration. Records of one thread arrive in the
//! order that thread produced them, which is all this needs.

use std::collections::VecDeque;
use strobe_core::event::{EventHeader, EventKind, FLAG_DETACHED};
use strobe_core::fast_hash::IntMap;

struct Open {
    seq: u64,
    ts: u64,
    func: u32,
    parent: u64,
}

/// Deepest call stack tracked per thread (deeper calls are still stored,
/// unlinked).
const MAX_DEPTH: usize = 4096;

/// Most detached calls (generators, coroutines) kept open per session: one
/// never finished (a generator dropped half-consumed) is forgotten, oldest
/// first, past this many.
const MAX_DETACHED: usize = 65_536;

/// Per-thread stacks of open calls for one session, and the open detached
/// calls ([`FLAG_DETACHED`]: an enter and exit that pair by `value`, the
/// generator's or coroutine's address, wherever and whenever they happen).
#[derive(Default)]
pub struct CallTree {
    /// Open calls per thread, indexed through `threads`.
    stacks: Vec<Vec<Open>>,
    /// (pid, tid) → index in `stacks`.
    threads: IntMap<(u32, u32), usize>,
    /// The thread of the previous event: runs of one thread's events skip
    /// the lookup.
    last: Option<((u32, u32), usize)>,
    detached: IntMap<(u32, u64), Open>,
    detached_order: VecDeque<(u32, u64)>,
}

impl CallTree {
    /// The index of the open-call stack of thread `key`, created if new.
    fn stack_of(&mut self, key: (u32, u32)) -> usize {
        if let Some((k, i)) = self.last
            && k == key
        {
            return i;
        }
        let next = self.stacks.len();
        let i = *self.threads.entry(key).or_insert(next);
        if i == next {
            self.stacks.push(Vec::new());
        }
        self.last = Some((key, i));
        i
    }

    /// Fills `parent` (and `duration_ns` for exits) of an event about to get `seq`.
    pub fn link(&mut self, h: &mut EventHeader, seq: u64) {
        let enter = h.kind == EventKind::FunctionEnter as u8;
        let exit = h.kind == EventKind::FunctionExit as u8;
        if !enter && !exit {
            return;
        }
        let i = self.stack_of((h.pid, h.tid));
        let stack = &mut self.stacks[i];
        if h.flags & FLAG_DETACHED != 0 {
            let key = (h.pid, h.value);
            if enter {
                // Its parent is the call that created it; it is never
                // anyone's parent (what runs inside is linked to whoever
                // resumes it).
                h.parent = stack.last().map_or(0, |o| o.seq + 1);
                let open = Open {
                    seq,
                    ts: h.ts_ns,
                    func: h.func_id,
                    parent: h.parent,
                };
                if self.detached.insert(key, open).is_none() {
                    self.detached_order.push_back(key);
                }
                while self.detached.len() > MAX_DETACHED {
                    match self.detached_order.pop_front() {
                        Some(old) => {
                            self.detached.remove(&old);
                        }
                        None => break,
                    }
                }
            } else if let Some(open) = self.detached.remove(&key)
                && open.func == h.func_id
            {
                h.parent = open.parent;
                h.duration_ns = h.ts_ns.saturating_sub(open.ts);
            }
            return;
        }
        if enter {
            let parent = stack.last().map_or(0, |o| o.seq + 1);
            h.parent = parent;
            if stack.len() < MAX_DEPTH {
                stack.push(Open {
                    seq,
                    ts: h.ts_ns,
                    func: h.func_id,
                    parent,
                });
            }
            return;
        }
        // An exit closes the innermost open call of the same function;
        // calls above it that never returned (longjmp, unwinding) are dropped.
        if let Some(pos) = stack.iter().rposition(|o| o.func == h.func_id) {
            let open = &stack[pos];
            h.parent = open.parent;
            h.duration_ns = h.ts_ns.saturating_sub(open.ts);
            stack.truncate(pos);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: EventKind, func: u32, ts: u64) -> EventHeader {
        EventHeader {
            kind: kind as u8,
            func_id: func,
            ts_ns: ts,
            pid: 1,
            tid: 1,
            ..Default::default()
        }
    }

    #[test]
    fn nested_calls_get_parents_and_durations() {
        let mut t = CallTree::default();
        let mut seq = 1;
        let mut run = |kind, func, ts| {
            let mut h = ev(kind, func, ts);
            t.link(&mut h, seq);
            seq += 1;
            h
        };
        let a = run(EventKind::FunctionEnter, 1, 100); // seq 1
        let b = run(EventKind::FunctionEnter, 2, 110); // seq 2
        let bx = run(EventKind::FunctionExit, 2, 150); // seq 3
        let ax = run(EventKind::FunctionExit, 1, 200); // seq 4
        assert_eq!(a.parent, 0);
        assert_eq!(b.parent, 2, "seq 1 + 1");
        assert_eq!((bx.parent, bx.duration_ns), (2, 40));
        assert_eq!((ax.parent, ax.duration_ns), (0, 100));
    }

    #[test]
    fn detached_calls_pair_by_value_across_threads_and_other_calls() {
        let mut t = CallTree::default();
        let mut caller = ev(EventKind::FunctionEnter, 1, 0);
        t.link(&mut caller, 1);
        let mut created = ev(EventKind::FunctionEnter, 2, 10);
        created.flags = FLAG_DETACHED;
        created.value = 0xabc;
        t.link(&mut created, 2);
        assert_eq!(created.parent, 2, "created by the open call");
        let mut caller_exit = ev(EventKind::FunctionExit, 1, 20);
        t.link(&mut caller_exit, 3);
        assert_eq!(
            caller_exit.duration_ns, 20,
            "the generator is not on the stack"
        );
        let mut finished = ev(EventKind::FunctionExit, 2, 110);
        finished.flags = FLAG_DETACHED;
        finished.value = 0xabc;
        finished.tid = 7;
        t.link(&mut finished, 4);
        assert_eq!((finished.parent, finished.duration_ns), (2, 100));
        let mut again = finished;
        again.duration_ns = 0;
        t.link(&mut again, 5);
        assert_eq!(again.duration_ns, 0, "a second exit finds nothing to close");
    }

    #[test]
    fn threads_are_independent_and_unmatched_exits_are_harmless() {
        let mut t = CallTree::default();
        let mut h1 = ev(EventKind::FunctionEnter, 1, 0);
        t.link(&mut h1, 1);
        let mut h2 = ev(EventKind::FunctionEnter, 1, 0);
        h2.tid = 2;
        t.link(&mut h2, 2);
        assert_eq!(h2.parent, 0, "another thread's open call is not a parent");
        let mut stray = ev(EventKind::FunctionExit, 9, 5);
        t.link(&mut stray, 3);
        assert_eq!((stray.parent, stray.duration_ns), (0, 0));
    }
}
