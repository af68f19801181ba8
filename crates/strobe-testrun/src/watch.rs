//! The stuck detector's loop for one run: every second it checks how long
//! the run has been silent; past [`stuck::SILENCE`] it samples the stacks of
//! the processes doing the work twice, [`stuck::STACK_GAP`] apart, with the
//! tree's CPU time between, and judges. A deadlock or an infinite loop is
//! reported with those stacks, then the stuck process is stopped (SIGINT,
//! so a framework can print what it knows, then SIGKILL): the framework
//! goes on with the tests it still has where it can (cargo runs the next
//! test binary). Work that is silent but changing waits for the level's
//! hard timeout.

use crate::runs::Run;
use crate::stacks::StackSampler;
use crate::stuck::{self, ProcessStacks, Verdict};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strobe_testing::Stream;

/// How often the detector looks at a run.
const TICK: Duration = Duration::from_secs(1);
/// After a "working" judgement, how long before sampling again.
const RECHECK: Duration = Duration::from_secs(2);
/// How long a stuck process gets to end after SIGINT.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);

/// One run's detector.
pub(super) struct Watch {
    pub run: Arc<Run>,
    pub project_root: PathBuf,
    pub hard_timeout: Duration,
    /// The command builds first: silence before the run starts is the build.
    pub waits_for_build: bool,
    /// The first signal a stuck process gets.
    pub stop_signal: i32,
    pub samplers: Vec<Box<dyn StackSampler>>,
}

impl Watch {
    /// Runs until the run finishes.
    pub fn run(self) {
        let ticks_per_second = stuck::ticks_per_second();
        let mut next_look = Instant::now();
        // Each judgement since the last stuck test, for the report.
        let mut looks: Vec<Value> = Vec::new();
        loop {
            let (silence, started, last_output) = {
                let state = self.run.state.lock().expect("run lock");
                let (state, _) = self
                    .run
                    .finished
                    .wait_timeout_while(state, TICK, |s| s.result.is_none())
                    .expect("run lock");
                if state.result.is_some() {
                    return;
                }
                let started = state.parser.as_ref().is_some_and(|p| {
                    let p = p.progress();
                    p.current_group.is_some()
                        || !p.running.is_empty()
                        || p.summary.passed + p.summary.failed + p.summary.skipped > 0
                });
                (state.last_output.elapsed(), started, state.last_output)
            };
            if self.waits_for_build && !started {
                continue;
            }
            if silence < stuck::SILENCE {
                self.run.state.lock().expect("run lock").warning = None;
                looks.clear();
                continue;
            }
            if Instant::now() < next_look {
                continue;
            }
            let Some(look) = self.look(ticks_per_second, last_output) else {
                continue;
            };
            let silence = last_output.elapsed();
            looks.push(json!({
                "atSilenceMs": silence.as_millis() as u64,
                "cpuPercent": (look.cpu * 1000.0).round() / 10.0,
                "stacksUnchanged": look.same,
                "longSleep": look.sleeping,
            }));
            let verdict = match look.verdict {
                Verdict::Working if silence >= self.hard_timeout => Verdict::Timeout,
                v => v,
            };
            if verdict == Verdict::Working {
                let warning = json!({
                    "silentForMs": silence.as_millis() as u64,
                    "cpuPercent": (look.cpu * 1000.0).round() / 10.0,
                    "stacksChanging": !look.same,
                    "sleeping": look.sleeping,
                    "hardTimeoutInMs": self.hard_timeout.saturating_sub(silence).as_millis() as u64,
                    "judgement": "silent but working: waiting for the hard timeout",
                });
                self.run.state.lock().expect("run lock").warning = Some(warning);
                next_look = Instant::now() + RECHECK;
                continue;
            }
            let mut look = look;
            for p in &mut look.second {
                stuck::name_frames(&self.samplers, p);
            }
            let mut report = self.report(verdict, &look, silence);
            report["judgements"] = json!(std::mem::take(&mut looks));
            {
                let mut state = self.run.state.lock().expect("run lock");
                state.stuck.push(report);
                state.warning = None;
                // What the framework does next is new progress.
                state.last_output = Instant::now();
            }
            for p in &look.second {
                stop(self.run.pgid, p.pid, self.stop_signal);
            }
        }
    }

    /// Samples the working processes twice and judges; `None` when output
    /// arrived meanwhile or nothing is left to sample.
    fn look(&self, ticks_per_second: f64, last_output: Instant) -> Option<Look> {
        let members = stuck::group_members(self.run.pgid);
        let leaves = stuck::leaves(&members);
        if leaves.is_empty() {
            return None;
        }
        let t0 = Instant::now();
        let first: Vec<ProcessStacks> = leaves
            .iter()
            .map(|pid| stuck::sample_process(&self.samplers, *pid))
            .collect();
        std::thread::sleep(stuck::STACK_GAP);
        {
            let state = self.run.state.lock().expect("run lock");
            if state.result.is_some() || state.last_output != last_output {
                return None;
            }
        }
        let members_after = stuck::group_members(self.run.pgid);
        // The tree's busy share over the gap (a process that ended took its
        // time with it).
        let cpu = stuck::busy_share(&members, &members_after, t0.elapsed(), ticks_per_second);
        let second: Vec<ProcessStacks> = leaves
            .iter()
            .map(|pid| stuck::sample_process(&self.samplers, *pid))
            .collect();
        // Stacks decide where there are any; where not (no py-spy, ptrace
        // refused), the threads' waits do: a verdict never waits for stacks.
        let same = first
            .iter()
            .zip(&second)
            .all(|(a, b)| stuck::kept_still(a, b));
        // The first sample sees a sleep as it was asked for; after its stop
        // the kernel resumes it as restart_syscall.
        let sleeping = first
            .iter()
            .chain(&second)
            .any(|p| p.waits.values().any(|w| w.long_sleep));
        Some(Look {
            verdict: stuck::judge(cpu, same, sleeping),
            cpu,
            same,
            sleeping,
            second,
        })
    }

    /// The stuck test as the result shows it.
    fn report(&self, verdict: Verdict, look: &Look, silence: Duration) -> Value {
        let secs = silence.as_secs_f64();
        let cpu = look.cpu * 100.0;
        let waits: Vec<String> = {
            let mut w: Vec<String> = look
                .second
                .iter()
                .flat_map(|p| p.waits.values().map(|w| w.state.clone()))
                .collect();
            w.sort();
            w.dedup();
            w
        };
        let stackless = look
            .second
            .iter()
            .find_map(|p| p.threads.as_ref().err().cloned());
        let unchanged = if stackless.is_some() {
            "every thread blocked in the same wait"
        } else {
            "every thread's stack unchanged"
        };
        let diagnosis = match verdict {
            Verdict::Deadlock => format!(
                "Deadlock: {cpu:.0}% CPU, no output for {secs:.1} s, {unchanged} across 2 samples {:.1} s apart; threads wait in {}",
                stuck::STACK_GAP.as_secs_f64(),
                waits.join(", ")
            ),
            Verdict::InfiniteLoop => format!(
                "Infinite loop: {cpu:.0}% CPU, no output for {secs:.1} s, every thread's stack unchanged across 2 samples {:.1} s apart",
                stuck::STACK_GAP.as_secs_f64()
            ),
            _ => format!(
                "Timeout: no output for {secs:.0} s (the hard timeout), though its stacks kept changing ({cpu:.0}% CPU)"
            ),
        };
        let (running, group) = {
            let state = self.run.state.lock().expect("run lock");
            let progress = state
                .parser
                .as_ref()
                .map(|p| p.progress())
                .unwrap_or_default();
            let mut running = progress.running;
            if running.is_empty()
                && let Some(p) = state.parser.as_ref()
            {
                running.extend(
                    [Stream::Stdout, Stream::Stderr]
                        .into_iter()
                        .filter_map(|s| p.running_in_partial_line(s, &state.partial[s as usize])),
                );
            }
            (running, progress.current_group)
        };
        let processes: Vec<Value> = look
            .second
            .iter()
            .map(|p| {
                json!({
                    "pid": p.pid,
                    "executable": p.exe,
                    "sampler": p.sampler,
                    "threads": stuck::report_threads(p),
                })
            })
            .collect();
        // The framework's running tests, else the tests the stacks name
        // (libtest reports a test only when it ends).
        let tests: Vec<String> = if running.is_empty() {
            let mut found: Vec<String> = Vec::new();
            for t in look.second.iter().flat_map(stuck::tests_in_stacks) {
                if !found.contains(&t) {
                    found.push(t);
                }
            }
            found
        } else {
            running
        };
        let name = if !tests.is_empty() {
            tests.join(", ")
        } else {
            thread_named_tests(&look.second).unwrap_or_else(|| {
                look.second
                    .first()
                    .map_or_else(String::new, |p| p.exe.clone())
            })
        };
        let tests: Vec<Value> = tests
            .iter()
            .map(|t| {
                let place = stuck::test_place(&look.second, t, &self.project_root);
                json!({
                    "name": t,
                    "file": place.as_ref().map(|p| &p.file),
                    "line": place.as_ref().and_then(|p| p.line),
                    "function": place.as_ref().map(|p| &p.function),
                })
            })
            .collect();
        let mut traces: Vec<String> = Vec::new();
        for p in &look.second {
            for t in stuck::suggested_traces(p, &self.project_root) {
                if !traces.contains(&t) {
                    traces.push(t);
                }
            }
        }
        let mut report = json!({
            "name": name,
            "tests": tests,
            "group": group,
            "waitsAt": stuck::wait_sites(&look.second, &self.project_root),
            "verdict": verdict,
            "diagnosis": diagnosis,
            "silentForMs": silence.as_millis() as u64,
            "cpuPercent": (cpu * 10.0).round() / 10.0,
            "threads": processes.first().map(|p| p["threads"].clone()).unwrap_or(Value::Null),
            "processes": processes,
            "suggestedTraces": traces,
        });
        if let Some(why) = stackless {
            // How to get them, for the reply (py-spy: `strobe setup`).
            report["stacksUnavailable"] = json!(why);
        }
        report
    }
}

/// What [`Watch::look`] saw.
struct Look {
    verdict: Verdict,
    /// The tree's CPU between the samples, in cores.
    cpu: f64,
    same: bool,
    sleeping: bool,
    /// The second sample of each working process.
    second: Vec<ProcessStacks>,
}

/// Test harnesses that name each test's thread after the test (Rust's
/// libtest; its threads' children inherit the name): the names of a
/// process's threads other than its main one. Linux keeps 15 characters.
fn thread_named_tests(processes: &[ProcessStacks]) -> Option<String> {
    let mut names: Vec<&str> = processes
        .iter()
        .filter_map(|p| p.threads.as_ref().ok().map(|t| (p, t)))
        .flat_map(|(p, threads)| {
            threads
                .iter()
                .filter(move |t| {
                    t.tid != p.pid && !t.name.is_empty() && !p.exe.starts_with(&t.name)
                })
                .map(|t| t.name.as_str())
        })
        .collect();
    names.sort();
    names.dedup();
    (!names.is_empty()).then(|| names.join(", "))
}

/// Stops a stuck process of the run's tree: the adapter's signal first
/// (pytest then prints its report, Go its goroutines), SIGKILL when it is
/// still there.
fn stop(pgid: u32, pid: u32, signal: i32) {
    let in_group = || stuck::group_members(pgid).iter().any(|m| m.pid == pid);
    if !in_group() {
        return;
    }
    // SAFETY: signalling a process of the group this run started.
    unsafe { libc::kill(pid as i32, signal) };
    let deadline = Instant::now() + INTERRUPT_GRACE;
    while Instant::now() < deadline {
        if !in_group() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if in_group() {
        // SAFETY: as above.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
}
