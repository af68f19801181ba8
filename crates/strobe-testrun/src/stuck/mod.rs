//! Stuck detection for test runs: output silence, the CPU time of the whole
//! process tree, and the thread stacks of the processes doing the work
//! sampled twice, turned into a verdict — deadlock (idle, stacks unchanged),
//! infinite loop (busy, stacks unchanged) or work (stacks changing) — with
//! the stacks kept for the report before anything is stopped.
//!
//! Everything here reads `/proc` as the test's own user; the stacks come
//! from [`crate::stacks`].

mod procs;
mod report;

pub use procs::*;
pub use report::*;

use crate::stacks::{self, StackSampler, ThreadStack};
use serde::Serialize;
use std::collections::HashMap;
use std::time::Duration;

/// Output silence after which the detector looks closer.
pub const SILENCE: Duration = Duration::from_secs(4);
/// Between the two stack samples.
pub const STACK_GAP: Duration = Duration::from_millis(1500);
/// Below this share of one core the tree counts as idle.
const IDLE_CPU: f64 = 0.05;
/// From this share of one core the tree counts as busy.
const BUSY_CPU: f64 = 0.5;
/// A thread asleep for at least this long is waiting on purpose.
const LONG_SLEEP: Duration = Duration::from_secs(1);
/// Frames kept per thread in a report.
const REPORT_FRAMES: usize = 16;
/// Calls a loop may make below its own frame between two samples and
/// still be in the same place (a helper, and the helper's helper: an
/// atomic load in a debug build is two calls deep).
const LEAF_FRAMES: usize = 2;

/// What the samples say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// Idle, every stack unchanged, nobody sleeping on a timer.
    Deadlock,
    /// Busy, every stack unchanged.
    InfiniteLoop,
    /// Stacks changing, or some thread in a long timed sleep: wait for the
    /// hard timeout.
    Working,
    /// Silent past the level's hard timeout.
    Timeout,
}

/// The decision matrix: `cpu` is the tree's busy share over the gap
/// between the samples, in cores (time running or ready to run, so load
/// from other processes does not make a spinning test look idle); `same`
/// whether every thread stayed in place; `sleeping` whether a thread is in
/// a long timed sleep.
pub fn judge(cpu: f64, same: bool, sleeping: bool) -> Verdict {
    if same && cpu >= BUSY_CPU {
        Verdict::InfiniteLoop
    } else if same && cpu < IDLE_CPU && !sleeping {
        Verdict::Deadlock
    } else {
        Verdict::Working
    }
}

/// The stacks of one process at one moment.
#[derive(Debug, Clone)]
pub struct ProcessStacks {
    /// The process.
    pub pid: u32,
    /// Its executable's name.
    pub exe: String,
    /// Which sampler took them ("native", "python").
    pub sampler: &'static str,
    /// Its threads, or why they could not be had.
    pub threads: Result<Vec<ThreadStack>, String>,
    /// What each thread waits in, by tid.
    pub waits: HashMap<u32, ThreadWait>,
}

/// Samples the waits and stacks of `pid`. The waits are read first: the
/// sample's ptrace stop interrupts a sleep, which the kernel then resumes
/// as `restart_syscall`, hiding how long it was.
pub fn sample_process(samplers: &[Box<dyn StackSampler>], pid: u32) -> ProcessStacks {
    let info = stacks::ProcessInfo::of(pid);
    let waits = strobe_session::procfs::threads(pid)
        .into_iter()
        .map(|tid| (tid, thread_wait(pid, tid)))
        .collect();
    let (threads, sampler) = stacks::sample(samplers, &info);
    ProcessStacks {
        pid,
        exe: info.exe_name().to_string(),
        sampler,
        threads: threads.map_err(|e| e.to_string()),
        waits,
    }
}

/// Whether two samples of a process show every thread in the same place
/// ([`same_place`]; threads only in one of them count as a change).
pub fn same_stacks(a: &ProcessStacks, b: &ProcessStacks) -> bool {
    let (Ok(a), Ok(b)) = (&a.threads, &b.threads) else {
        return false;
    };
    a.len() == b.len()
        && !a.is_empty()
        && a.iter().all(|t| {
            b.iter()
                .find(|u| u.tid == t.tid)
                .is_some_and(|u| same_place(t, u))
        })
}

/// Whether two samples of a thread are in the same place: one's chain of
/// functions (outermost first) is the other's, or the other's with at most
/// [`LEAF_FRAMES`] more calls inside. A loop that calls helpers is caught
/// in the loop's frame or in a helper's, and both are the same place; an
/// exact comparison called it work whenever the two samples fell on
/// different sides (a busy-loop verdict once took 17 s instead of 6.5).
/// A thread that moved on (another function at the same depth, or deeper
/// than a helper's helper) is in another place.
pub fn same_place(a: &ThreadStack, b: &ThreadStack) -> bool {
    let (mut x, mut y) = (a.signature(), b.signature());
    x.reverse();
    y.reverse();
    let (short, long) = if x.len() <= y.len() { (x, y) } else { (y, x) };
    !short.is_empty() && long.len() - short.len() <= LEAF_FRAMES && long.starts_with(&short)
}

/// Whether two samples of a process show every thread blocked in the same
/// wait (system call and arguments): what decides when no stacks could be
/// had (py-spy missing, ptrace refused). A thread running, or only in one
/// sample, is a change.
pub fn same_waits(a: &ProcessStacks, b: &ProcessStacks) -> bool {
    !a.waits.is_empty()
        && a.waits.len() == b.waits.len()
        && a.waits
            .iter()
            .all(|(tid, w)| w.blocked() && b.waits.get(tid).is_some_and(|v| v.raw == w.raw))
}

/// Whether a process kept still between two samples: every stack the
/// same when both samples have stacks, else every thread in the same
/// wait. The verdict never depends on stacks being available.
pub fn kept_still(a: &ProcessStacks, b: &ProcessStacks) -> bool {
    match (&a.threads, &b.threads) {
        (Ok(_), Ok(_)) => same_stacks(a, b),
        _ => same_waits(a, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decision_matrix() {
        assert_eq!(judge(0.0, true, false), Verdict::Deadlock);
        assert_eq!(judge(1.0, true, false), Verdict::InfiniteLoop);
        assert_eq!(judge(1.0, false, false), Verdict::Working);
        assert_eq!(judge(0.0, false, false), Verdict::Working);
        // A test sleeping on a timer is waiting on purpose, not deadlocked.
        assert_eq!(judge(0.0, true, true), Verdict::Working);
        // Some CPU, not busy: neither verdict is sure.
        assert_eq!(judge(0.2, true, false), Verdict::Working);
    }

    #[test]
    fn leaves_are_the_processes_without_children_in_the_group() {
        let m = |pid, ppid| Member {
            pid,
            ppid,
            cpu_ticks: 0,
            busy_ns: None,
        };
        // cargo (10) → test binary (11); a shell (12) → its child (13).
        let members = [m(10, 1), m(11, 10), m(12, 10), m(13, 12)];
        assert_eq!(leaves(&members), [11, 13]);
    }

    fn frame(function: &str, file: &str, line: u32) -> crate::stacks::StackFrame {
        crate::stacks::StackFrame {
            function: Some(function.into()),
            file: Some(file.into()),
            line: Some(line),
            module: None,
            address: None,
            image: None,
            entry: None,
        }
    }

    fn thread(tid: u32, name: &str, frames: Vec<crate::stacks::StackFrame>) -> ThreadStack {
        ThreadStack {
            tid,
            name: name.into(),
            frames,
        }
    }

    /// The cargo case: the test's thread name cut to 15 bytes, two
    /// threads of its own with names of their own.
    fn bank() -> ProcessStacks {
        let std = |f: &str| frame(f, "/rustc/abc/library/std/src/sync/mutex.rs", 1);
        ProcessStacks {
            pid: 10,
            exe: "ledger-1234".into(),
            sampler: "native",
            threads: Ok(vec![
                thread(10, "ledger-1234", vec![std("test::run_tests")]),
                thread(
                    11,
                    "bank::tests::op",
                    vec![
                        std("std::thread::JoinHandle::join"),
                        frame(
                            "ledger::bank::tests::opposite_transfers_complete",
                            "src/bank.rs",
                            40,
                        ),
                        frame(
                            "ledger::bank::tests::opposite_transfers_complete::{closure#0}",
                            "src/bank.rs",
                            30,
                        ),
                    ],
                ),
                thread(
                    12,
                    "transfer-a-b",
                    vec![
                        std("std::sync::Mutex::lock"),
                        frame("ledger::bank::transfer", "src/bank.rs", 12),
                    ],
                ),
                thread(
                    13,
                    "transfer-b-a",
                    vec![
                        std("std::sync::Mutex::lock"),
                        frame("ledger::bank::transfer", "/work/ledger/src/bank.rs", 12),
                    ],
                ),
            ]),
            waits: HashMap::new(),
        }
    }

    fn at(entries: &[&str]) -> ThreadStack {
        // Innermost first, as samplers give them.
        let frames = entries
            .iter()
            .rev()
            .map(|e| crate::stacks::StackFrame {
                function: None,
                file: None,
                line: None,
                module: Some("t".into()),
                address: Some("0x1".into()),
                image: None,
                entry: Some(e.to_string()),
            })
            .collect();
        thread(1, "t", frames)
    }

    #[test]
    fn a_loop_is_in_the_same_place_inside_its_helpers() {
        let spin = at(&["main", "test", "spin"]);
        // The sample fell into the helper the loop calls, or its helper.
        assert!(same_place(
            &spin,
            &at(&["main", "test", "spin", "black_box"])
        ));
        assert!(same_place(
            &at(&["main", "test", "spin", "load", "atomic_load"]),
            &spin
        ));
        assert!(same_place(&spin, &spin.clone()));
        // Moved on: another step of the test, or much deeper.
        assert!(!same_place(
            &at(&["main", "test", "step_a"]),
            &at(&["main", "test", "step_b"])
        ));
        assert!(!same_place(
            &spin,
            &at(&["main", "test", "spin", "a", "b", "c"])
        ));
    }

    #[test]
    fn busy_counts_time_waiting_for_a_core() {
        let m = |pid, ticks, busy| Member {
            pid,
            ppid: 1,
            cpu_ticks: ticks,
            busy_ns: busy,
        };
        let second = std::time::Duration::from_secs(1);
        // Half a core of CPU, but ready to run the whole second: busy.
        let share = busy_share(
            &[m(5, 0, Some(0))],
            &[m(5, 50, Some(1_000_000_000))],
            second,
            100.0,
        );
        assert!((share - 1.0).abs() < 1e-9, "{share}");
        // Without schedstat: CPU ticks; a process gone meanwhile is left out.
        let share = busy_share(
            &[m(5, 0, None), m(6, 0, None)],
            &[m(5, 50, None)],
            second,
            100.0,
        );
        assert!((share - 0.5).abs() < 1e-9, "{share}");
    }

    fn waiting(waits: &[(u32, &str, &str)]) -> ProcessStacks {
        ProcessStacks {
            pid: 1,
            exe: "python3".into(),
            sampler: "python",
            threads: Err("Python stacks need py-spy".into()),
            waits: waits
                .iter()
                .map(|(tid, state, raw)| {
                    let w = ThreadWait {
                        state: state.to_string(),
                        long_sleep: false,
                        raw: raw.to_string(),
                    };
                    (*tid, w)
                })
                .collect(),
        }
    }

    #[test]
    fn without_stacks_the_waits_decide() {
        let futex = |addr: &str| format!("202 {addr} 0x80 0x0 0x0 0x0 0x0 0x7ffc 0x7f00");
        let (a, b) = (futex("0x55a0"), futex("0x55b0"));
        let deadlocked = waiting(&[(1, "futex", &a), (2, "futex", &b)]);
        assert!(kept_still(&deadlocked, &deadlocked.clone()));
        // Another futex, a running thread, a thread gone: a change.
        let other = waiting(&[(1, "futex", &a), (2, "futex", &a)]);
        assert!(!kept_still(&deadlocked, &other));
        let busy = waiting(&[(1, "futex", &a), (2, "running", "running")]);
        assert!(!kept_still(&busy, &busy.clone()));
        let fewer = waiting(&[(1, "futex", &a)]);
        assert!(!kept_still(&deadlocked, &fewer));
    }

    #[test]
    fn a_libtest_thread_is_named_after_its_test_from_its_stack() {
        assert_eq!(
            tests_in_stacks(&bank()),
            ["bank::tests::opposite_transfers_complete"]
        );
    }

    #[test]
    fn a_stuck_test_is_placed_in_its_own_frame_and_its_threads_at_their_locks() {
        let root = std::path::Path::new("/work/ledger");
        let p = bank();
        let at = test_place(
            std::slice::from_ref(&p),
            "bank::tests::opposite_transfers_complete",
            root,
        )
        .unwrap();
        assert_eq!((at.file.as_str(), at.line), ("src/bank.rs", Some(40)));
        assert_eq!(
            wait_sites(&[p], root),
            [
                "src/bank.rs:40 (ledger::bank::tests::opposite_transfers_complete)",
                "src/bank.rs:12 (ledger::bank::transfer)"
            ]
        );
        // pytest node ids name the function last.
        assert_eq!(short_name("tests/t.py::TestX::test_y[1-2]"), "test_y");
        assert_eq!(short_name("m.Class.test_z"), "test_z");
    }

    #[test]
    fn this_process_is_seen_sleeping_and_its_stack_sampled() {
        // A thread of ours asleep for a minute: a long sleep, in nanosleep
        // or clock_nanosleep.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            tx.send(unsafe { libc::gettid() } as u32).unwrap();
            std::thread::sleep(Duration::from_secs(60));
        });
        let tid = rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let w = thread_wait(std::process::id(), tid);
        assert!(w.state.contains("nanosleep"), "{w:?}");
        assert!(w.long_sleep, "{w:?}");
    }
}
