//! Which thread of the candidate run is which thread of the baseline.
//!
//! Both runs name threads by order of first appearance (`p1 t2`), but the
//! order in which threads start is up to the scheduler: two workers started
//! back to back can swap between runs, and matching by order alone then
//! reports a divergence at their very first call. So within each process a
//! thread is matched by what it first did (the path of its first traced
//! call, e.g. `decoder_main`), in order of appearance among the threads that
//! began the same way; the threads left over are matched by order.

use super::calls::{Run, ThreadKey};
use std::collections::{BTreeMap, HashMap};

/// Renames `candidate`'s threads to the keys of the baseline threads they
/// match; a candidate thread with no counterpart gets a key past every
/// baseline thread of its process.
pub fn align(baseline: &Run, candidate: &mut Run) {
    let b = by_process(baseline);
    let c = by_process(candidate);
    let mut renamed: HashMap<ThreadKey, ThreadKey> = HashMap::new();
    for (pid, c_threads) in &c {
        let b_threads = b.get(pid).map(Vec::as_slice).unwrap_or(&[]);
        let mut taken = vec![false; b_threads.len()];
        let mut unmatched = Vec::new();
        for &(c_key, ref first) in c_threads {
            let same = b_threads
                .iter()
                .enumerate()
                .find(|(i, (_, b_first))| !taken[*i] && first.is_some() && b_first == first);
            match same {
                Some((i, (b_key, _))) => {
                    taken[i] = true;
                    renamed.insert(c_key, *b_key);
                }
                None => unmatched.push(c_key),
            }
        }
        let mut free = b_threads
            .iter()
            .zip(&taken)
            .filter(|(_, t)| !**t)
            .map(|((k, _), _)| *k);
        let mut next = b_threads.iter().map(|(k, _)| k.1).max().unwrap_or(0);
        for c_key in unmatched {
            let to = free.next().unwrap_or_else(|| {
                next += 1;
                (*pid, next)
            });
            renamed.insert(c_key, to);
        }
    }
    candidate.threads = std::mem::take(&mut candidate.threads)
        .into_iter()
        .map(|(k, calls)| (renamed.get(&k).copied().unwrap_or(k), calls))
        .collect();
}

/// Per process ordinal, its threads in order of appearance with the path
/// of each one's first call.
fn by_process(run: &Run) -> BTreeMap<u32, Vec<(ThreadKey, Option<String>)>> {
    let mut out: BTreeMap<u32, Vec<(ThreadKey, Option<String>)>> = BTreeMap::new();
    for (key, calls) in &run.threads {
        let first = calls.first().map(|c| run.paths[c.path as usize].clone());
        out.entry(key.0).or_default().push((*key, first));
    }
    for threads in out.values_mut() {
        threads.sort_by_key(|(k, _)| k.1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::calls::Call;

    /// A run whose threads (in order of appearance) each made one call of
    /// the given path.
    fn run(firsts: &[&str]) -> Run {
        let mut r = Run::default();
        for (i, path) in firsts.iter().enumerate() {
            let id = r.paths.len() as u32;
            r.paths.push(path.to_string());
            r.threads.insert(
                (1, i as u32 + 1),
                vec![Call {
                    path: id,
                    ordinal: 0,
                    enter_id: i as u64 + 1,
                    exit_id: None,
                    ts_ns: 0,
                    function: 0,
                    args: None,
                    ret: None,
                }],
            );
        }
        r
    }

    fn first_of(r: &Run, key: ThreadKey) -> &str {
        &r.paths[r.threads[&key][0].path as usize]
    }

    #[test]
    fn threads_that_started_in_another_order_are_matched_by_what_they_did_first() {
        let b = run(&["main", "decoder", "mixer"]);
        let mut c = run(&["main", "mixer", "decoder"]);
        align(&b, &mut c);
        for k in [(1, 1), (1, 2), (1, 3)] {
            assert_eq!(first_of(&b, k), first_of(&c, k), "{k:?}");
        }
    }

    #[test]
    fn alike_threads_keep_their_order_and_the_rest_are_matched_by_order() {
        // Two pool workers alike, then threads that began differently.
        let b = run(&["main", "worker", "worker", "old_io"]);
        let mut c = run(&["main", "worker", "new_io", "worker", "extra"]);
        align(&b, &mut c);
        assert_eq!(c.threads[&(1, 2)][0].enter_id, 2, "first worker");
        assert_eq!(c.threads[&(1, 3)][0].enter_id, 4, "second worker");
        assert_eq!(first_of(&c, (1, 4)), "new_io", "left over, by order");
        assert_eq!(first_of(&c, (1, 5)), "extra", "past every baseline thread");
        assert_eq!(c.threads.len(), 5);
    }
}
