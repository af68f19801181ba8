//! What the stuck detector reads about a run's processes from `/proc`: the
//! process tree and its CPU (and run-queue) time, and what each thread waits
//! in (its system call, and how long a sleep was asked for).

use super::LONG_SLEEP;
use serde::Serialize;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Duration;

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
pub(crate) fn busy_ns(pid: u32) -> Option<u64> {
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
            let stat = strobe_session::procfs::Stat::of(pid)?;
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
pub(crate) fn syscall_name(nr: i64) -> Option<&'static str> {
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
pub(crate) fn sleep_length(
    pid: u32,
    addr: u64,
    absolute: Option<libc::clockid_t>,
) -> Option<Duration> {
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
