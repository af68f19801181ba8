//! Stuck detection for test runs: output silence, the CPU time of the whole
//! process tree, and the thread stacks of the processes doing the work
//! sampled twice, turned into a verdict — deadlock (idle, stacks unchanged),
//! infinite loop (busy, stacks unchanged) or work (stacks changing) — with
//! the stacks kept for the report before anything is stopped.
//!
//! Everything here reads `/proc` as the test's own user; the stacks come
//! from [`crate::stacks`].

use crate::stacks::{self, StackSampler, ThreadStack};
use serde::Serialize;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
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

/// One process of a run's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// Its pid.
    pub pid: u32,
    /// Its parent.
    pub ppid: u32,
    /// User + system CPU time of all its threads, in clock ticks.
    pub cpu_ticks: u64,
    /// Nanoseconds its threads ran or were ready to run and waited for a
    /// core (`/proc/PID/task/TID/schedstat`), when the kernel keeps it.
    pub busy_ns: Option<u64>,
}

/// How long the threads of `pid` ran plus waited on a run queue, in ns: a
/// thread spinning on a loaded machine is busy all the time even when it
/// gets a fraction of a core (CPU time alone then read it as idle-ish:
/// under half a core, no verdict).
fn busy_ns(pid: u32) -> Option<u64> {
    let mut total = 0u64;
    for e in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let text = std::fs::read_to_string(e.path().join("schedstat")).ok()?;
        let mut f = text.split_whitespace().map(|v| v.parse::<u64>().ok());
        let (Some(Some(ran)), Some(Some(waited))) = (f.next(), f.next()) else {
            return None;
        };
        total += ran + waited;
    }
    Some(total)
}

/// The share of a core the processes present in both `before` and
/// `after` used (or waited for) over `elapsed`: from run + run-queue time
/// where every one of them has it, else from CPU ticks.
pub fn busy_share(
    before: &[Member],
    after: &[Member],
    elapsed: Duration,
    ticks_per_second: f64,
) -> f64 {
    let kept: Vec<(&Member, &Member)> = before
        .iter()
        .filter_map(|m| Some((m, after.iter().find(|n| n.pid == m.pid)?)))
        .collect();
    let secs = elapsed.as_secs_f64().max(0.001);
    let busy: Option<u64> = kept
        .iter()
        .map(|(m, n)| Some(n.busy_ns?.saturating_sub(m.busy_ns?)))
        .sum();
    match busy {
        Some(ns) => ns as f64 / 1e9 / secs,
        None => {
            let ticks: u64 = kept
                .iter()
                .map(|(m, n)| n.cpu_ticks.saturating_sub(m.cpu_ticks))
                .sum();
            ticks as f64 / ticks_per_second / secs
        }
    }
}

/// Every live process of a test run's tree: those in the process group
/// `pgid` the run's command started, and their descendants that moved to
/// groups of their own (cargo-nextest runs each test in one).
pub fn group_members(pgid: u32) -> Vec<Member> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let all: Vec<(Member, u32)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = crate::procfs::Stat::of(pid)?;
            let (ppid, pgrp) = (stat.ppid()?, stat.pgrp()?);
            if stat.state()? == 'Z' {
                return None;
            }
            let cpu_ticks = stat.cpu_ticks()?;
            Some((
                Member {
                    pid,
                    ppid,
                    cpu_ticks,
                    busy_ns: None,
                },
                pgrp,
            ))
        })
        .collect();
    let mut members: Vec<Member> = all
        .iter()
        .filter(|(_, pgrp)| *pgrp == pgid)
        .map(|(m, _)| *m)
        .collect();
    loop {
        let more: Vec<Member> = all
            .iter()
            .map(|(m, _)| *m)
            .filter(|m| {
                !members.iter().any(|k| k.pid == m.pid) && members.iter().any(|k| k.pid == m.ppid)
            })
            .collect();
        if more.is_empty() {
            for m in &mut members {
                m.busy_ns = busy_ns(m.pid);
            }
            return members;
        }
        members.extend(more);
    }
}

/// The members no other member is the parent of: the processes doing the
/// work (the test binary under `cargo`, the interpreter under a script).
pub fn leaves(members: &[Member]) -> Vec<u32> {
    members
        .iter()
        .filter(|m| !members.iter().any(|c| c.ppid == m.pid))
        .map(|m| m.pid)
        .collect()
}

/// Clock ticks per second.
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// What a thread is doing, from `/proc/PID/task/TID/syscall`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadWait {
    /// "running", or the system call it waits in ("futex", "read"…).
    pub state: String,
    /// A timed sleep of at least a second (nanosleep, clock_nanosleep).
    pub long_sleep: bool,
    /// The system call with its arguments, stack and code addresses, as
    /// the kernel shows them: the same text in two samples is the same
    /// wait (the same futex, the same descriptor).
    #[serde(skip)]
    pub raw: String,
}

impl ThreadWait {
    /// Waiting in a system call (not running, not in an unknown state).
    pub fn blocked(&self) -> bool {
        !matches!(self.state.as_str(), "running" | "unknown" | "stopped")
    }
}

/// The system calls a stuck thread usually sits in.
fn syscall_name(nr: i64) -> Option<&'static str> {
    Some(match nr {
        0 => "read",
        1 => "write",
        7 => "poll",
        23 => "select",
        35 => "nanosleep",
        43 => "accept",
        61 => "wait4",
        202 => "futex",
        219 => "restart_syscall",
        228 => "clock_gettime",
        230 => "clock_nanosleep",
        232 => "epoll_wait",
        247 => "waitid",
        270 => "pselect6",
        271 => "ppoll",
        281 => "epoll_pwait",
        288 => "accept4",
        _ => return None,
    })
}

/// What thread `tid` of `pid` waits in.
pub fn thread_wait(pid: u32, tid: u32) -> ThreadWait {
    let text =
        std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall")).unwrap_or_default();
    let raw = text.trim().to_string();
    let mut fields = text.split_whitespace();
    let Some(first) = fields.next() else {
        return ThreadWait {
            state: "unknown".into(),
            long_sleep: false,
            raw,
        };
    };
    let Ok(nr) = first.parse::<i64>() else {
        return ThreadWait {
            state: first.to_string(),
            long_sleep: false,
            raw,
        };
    };
    if nr < 0 {
        return ThreadWait {
            state: "stopped".into(),
            long_sleep: false,
            raw,
        };
    }
    let args: Vec<u64> = fields
        .take(6)
        .filter_map(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
        .collect();
    let long_sleep = match (nr, args.as_slice()) {
        (35, [req, ..]) => sleep_length(pid, *req, None).is_some_and(|d| d >= LONG_SLEEP),
        (230, [clock, flags, req, ..]) => {
            let absolute = (flags & 1 == 1).then_some(*clock as libc::clockid_t);
            sleep_length(pid, *req, absolute).is_some_and(|d| d >= LONG_SLEEP)
        }
        _ => false,
    };
    ThreadWait {
        state: syscall_name(nr).map_or_else(|| format!("syscall {nr}"), str::to_string),
        long_sleep,
        raw,
    }
}

/// The sleep a `struct timespec` at `addr` asks for: as given, or for an
/// absolute time on `clock`, what is left of it.
fn sleep_length(pid: u32, addr: u64, absolute: Option<libc::clockid_t>) -> Option<Duration> {
    let mem = File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut b = [0u8; 16];
    mem.read_exact_at(&mut b, addr).ok()?;
    let sec = i64::from_le_bytes(b[..8].try_into().ok()?);
    let nsec = i64::from_le_bytes(b[8..].try_into().ok()?);
    let asked = Duration::new(sec.max(0) as u64, nsec.clamp(0, 999_999_999) as u32);
    match absolute {
        None => Some(asked),
        Some(clock) => {
            // SAFETY: clock_gettime fills the timespec it is given.
            let mut now: libc::timespec = unsafe { std::mem::zeroed() };
            if unsafe { libc::clock_gettime(clock, &mut now) } != 0 {
                return None;
            }
            let now = Duration::new(now.tv_sec.max(0) as u64, now.tv_nsec as u32);
            Some(asked.saturating_sub(now))
        }
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
    let waits = crate::procfs::threads(pid)
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

/// Names the frames of a sample that is going into a report.
pub fn name_frames(samplers: &[Box<dyn StackSampler>], p: &mut ProcessStacks) {
    if let Ok(threads) = p.threads.as_mut() {
        stacks::name_frames(samplers, p.sampler, threads);
    }
}

/// A stuck process's threads as the report shows them.
pub fn report_threads(p: &ProcessStacks) -> serde_json::Value {
    match &p.threads {
        Ok(threads) => serde_json::Value::Array(
            threads
                .iter()
                .map(|t| {
                    let wait = p.waits.get(&t.tid);
                    serde_json::json!({
                        "tid": t.tid,
                        "name": t.name,
                        "state": wait.map(|w| w.state.as_str()),
                        "stack": t.frames.iter().take(REPORT_FRAMES).map(|f| f.display()).collect::<Vec<_>>(),
                    })
                })
                .collect(),
        ),
        Err(e) => {
            // No stacks: what each thread waits in still shows.
            let mut waits: Vec<(&u32, &ThreadWait)> = p.waits.iter().collect();
            waits.sort_by_key(|(tid, _)| **tid);
            serde_json::json!({
                "error": e,
                "waits": waits
                    .into_iter()
                    .map(|(tid, w)| serde_json::json!({"tid": tid, "state": w.state}))
                    .collect::<Vec<_>>(),
            })
        }
    }
}

/// The functions of the project's own code on the stuck threads, innermost
/// first: trace patterns for an instrumented rerun.
pub fn suggested_traces(p: &ProcessStacks, project_root: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Ok(threads) = &p.threads else {
        return out;
    };
    for t in threads {
        for f in &t.frames {
            let (Some(function), Some(file)) = (&f.function, &f.file) else {
                continue;
            };
            let own = std::path::Path::new(file).starts_with(project_root)
                || (!file.starts_with('/') && !file.starts_with('<'));
            if own && !out.contains(function) && out.len() < 8 {
                out.push(function.clone());
            }
        }
    }
    out
}

/// A function name without the closures it ends in
/// (`a::b::{{closure}}`, `a::b::{closure#0}` → `a::b`).
fn without_closures(function: &str) -> &str {
    let mut f = function;
    while let Some((head, last)) = f.rsplit_once("::") {
        if !last.starts_with('{') {
            break;
        }
        f = head;
    }
    f
}

/// The tests running in a process of a harness that names each test's
/// thread after the test (Rust's libtest), read from its stacks: Linux
/// keeps 15 bytes of a thread's name (`bank::tests::op`), and the
/// thread's frames hold the test function itself
/// (`ledger::bank::tests::opposite_transfers_complete`, the crate first),
/// whose path past the crate starts with that name. Threads the test
/// spawned inherit its name or have their own (`transfer-a-b`): they name
/// no test of their own.
pub fn tests_in_stacks(p: &ProcessStacks) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Ok(threads) = &p.threads else {
        return out;
    };
    for t in threads {
        if t.tid == p.pid || t.name.is_empty() {
            continue;
        }
        // Outermost first: the test function, not a helper whose name
        // shares the truncated prefix.
        let found = t.frames.iter().rev().find_map(|f| {
            let function = without_closures(f.function.as_deref()?);
            let (_crate, path) = function.split_once("::")?;
            let complete = t.name.len() < 15;
            let matches = if complete {
                path == t.name
            } else {
                path.starts_with(&t.name)
            };
            matches.then(|| path.to_string())
        });
        if let Some(name) = found
            && !out.contains(&name)
        {
            out.push(name);
        }
    }
    out.sort();
    out
}

/// A place in a stack: file (relative to the project when in it), line
/// and function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Place {
    /// The source file.
    pub file: String,
    /// The line.
    pub line: Option<u32>,
    /// The function.
    pub function: String,
}

impl Place {
    fn of(f: &crate::stacks::StackFrame, project_root: &std::path::Path) -> Option<Place> {
        let file = f.file.as_deref()?;
        let file = std::path::Path::new(file)
            .strip_prefix(project_root)
            .map_or_else(|_| file.to_string(), |p| p.display().to_string());
        Some(Place {
            file,
            line: f.line,
            function: f.function.clone()?,
        })
    }

    /// `file:line (function)`.
    pub fn display(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{l} ({})", self.file, self.function),
            None => format!("{} ({})", self.file, self.function),
        }
    }
}

/// Whether a frame's file is the project's own code: under its root, or
/// a relative path (Rust's DWARF names the crate's files relative to it);
/// not the standard library, a toolchain or an installed package.
fn own_frame(file: &str, project_root: &std::path::Path) -> bool {
    let own = std::path::Path::new(file).starts_with(project_root)
        || (!file.starts_with('/') && !file.starts_with('<'));
    own && !file.contains("site-packages") && !file.contains("/.cargo/registry/")
}

/// The last part of a test's or function's name: `tests::x` → `x`,
/// `mod.Class.test_x` → `test_x`, `file.py::test_x[1-2]` → `test_x`.
fn short_name(name: &str) -> &str {
    let name = name.split('[').next().unwrap_or(name);
    let name = without_closures(name);
    name.rsplit(['.', ':', '/']).next().unwrap_or(name)
}

/// Where the stuck test `test` is in its stacks: the innermost frame of
/// the test's own function (the call it waits in, as `join()` in the
/// test), else the outermost frame in the project's code.
pub fn test_place(
    processes: &[ProcessStacks],
    test: &str,
    project_root: &std::path::Path,
) -> Option<Place> {
    let threads: Vec<&ThreadStack> = processes
        .iter()
        .filter_map(|p| p.threads.as_ref().ok())
        .flatten()
        .collect();
    let want = short_name(test);
    threads
        .iter()
        .flat_map(|t| t.frames.iter())
        .find(|f| f.function.as_deref().is_some_and(|n| short_name(n) == want))
        .and_then(|f| Place::of(f, project_root))
        .or_else(|| {
            threads.iter().find_map(|t| {
                t.frames
                    .iter()
                    .rev()
                    .filter(|f| {
                        f.file
                            .as_deref()
                            .is_some_and(|x| own_frame(x, project_root))
                    })
                    .find_map(|f| Place::of(f, project_root))
            })
        })
}

/// Where each stuck thread is in the project's own code: its innermost
/// frame there (the lock it waits for, the loop it spins in), one per
/// place.
pub fn wait_sites(processes: &[ProcessStacks], project_root: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in processes {
        let Ok(threads) = &p.threads else { continue };
        for t in threads {
            let site = t
                .frames
                .iter()
                .filter(|f| {
                    f.file
                        .as_deref()
                        .is_some_and(|x| own_frame(x, project_root))
                })
                .find_map(|f| Place::of(f, project_root));
            if let Some(site) = site.map(|s| s.display())
                && !out.contains(&site)
            {
                out.push(site);
            }
        }
    }
    out
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
