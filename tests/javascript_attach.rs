//! Attaching to running Node.js programs and detaching from them, end to
//! end on real Node.js 20 under Frida, through MCP: Strobe's runtime is
//! loaded into a program idle in its event loop and into one that never
//! leaves JavaScript; breakpoints pause it, memory reads, and a detach
//! leaves it running with no thread of Strobe's left, ready for the next
//! attach. Functions it compiled before the attach are traced once a
//! pattern names them (their script swapped for its probed copy), and the
//! detach gives them their own code back. A program whose main thread is
//! blocked gets a clear warning, and runs on unharmed once it unblocks.

mod support;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Lines};
use std::path::PathBuf;
use std::process::{ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};
use support::{Client, Env, Spawned};

fn attachee() -> PathBuf {
    support::javascript_fixture("attachee")
}

/// The line of fixture `file` holding `@marker`.
fn line_of(file: &str, marker: &str) -> u64 {
    let src = std::fs::read_to_string(attachee().join(file)).unwrap();
    let tag = format!("@{marker}");
    src.lines()
        .position(|l| l.ends_with(&tag))
        .unwrap_or_else(|| panic!("no marker {marker}")) as u64
        + 1
}

/// `node <script> <args>` started in the fixture directory: the child,
/// its pid and its stdout's lines.
fn node(script: &str, args: &[&str]) -> (Spawned, u32, Lines<BufReader<ChildStdout>>) {
    node_with(&[], script, args)
}

/// [`node`] with node's own options `options` before the script. Its
/// stderr goes to a file a failure shows ([`how_it_ended`]).
fn node_with(
    options: &[&str],
    script: &str,
    args: &[&str],
) -> (Spawned, u32, Lines<BufReader<ChildStdout>>) {
    let stderr = std::fs::File::create(stderr_file_of(script)).unwrap();
    let mut target = Spawned::start(
        Command::new("node")
            .args(options)
            .arg(script)
            .args(args)
            .current_dir(attachee())
            .stdout(Stdio::piped())
            .stderr(stderr),
    );
    std::fs::rename(stderr_file_of(script), stderr_file(target.id())).unwrap();
    let pid = target.id();
    let lines = BufReader::new(target.0.stdout.take().unwrap()).lines();
    (target, pid, lines)
}

fn threads_of(pid: u32) -> usize {
    thread_names(pid).len()
}

/// The names (`comm`) of `pid`'s threads, sorted.
fn thread_names(pid: u32) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .unwrap_or_default()
                .trim()
                .to_string()
        })
        .collect();
    names.sort();
    names
}

/// Waits until `pid` has `count` threads again (Strobe's are gone). Once
/// in about ten runs of this file one thread was still there after 10 s
/// (its name not recorded then; the message now names them all): the
/// wait is 20 s.
async fn wait_threads(pid: u32, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while threads_of(pid) != count {
        assert!(
            Instant::now() < deadline,
            "pid {pid} kept {} threads after the detach, {count} before the attach: {:?}",
            threads_of(pid),
            thread_names(pid)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Attaches; asserts no warning says the runtime could not be loaded.
async fn attach(c: &Client, pid: u32) -> String {
    let v = c
        .ok(
            "debug_launch",
            json!({"attachPid": pid, "projectRoot": attachee()}),
        )
        .await;
    assert!(
        !v["warnings"].to_string().contains("not available"),
        "the runtime loaded: {v}"
    );
    v["sessionId"].as_str().unwrap().to_string()
}

/// Attaches to a program Strobe's runtime cannot be loaded into: the
/// session id and the warnings, which say the debugger is not available.
async fn attach_without_runtime(c: &Client, pid: u32) -> (String, String) {
    let v = c
        .ok(
            "debug_launch",
            json!({"attachPid": pid, "projectRoot": attachee()}),
        )
        .await;
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("not available"), "{v}");
    (v["sessionId"].as_str().unwrap().to_string(), warnings)
}

/// Sets a breakpoint at `file`'s `marker`, waits for the pause, removes
/// the breakpoint and returns the pause.
async fn pause_at(c: &Client, id: &str, file: &str, marker: &str) -> Value {
    let v = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"file": file, "line": line_of(file, marker)}]}),
        )
        .await;
    let bp = v["breakpoints"][0]["id"].as_str().unwrap().to_string();
    let p = c.wait_paused(id).await;
    assert_eq!(p["breakpointId"], bp.as_str(), "{p}");
    assert_eq!(p["line"], line_of(file, marker), "{p}");
    c.ok("debug_breakpoint", json!({"sessionId": id, "remove": [bp]}))
        .await;
    p
}

fn tick_number(lines: &mut Lines<BufReader<ChildStdout>>) -> i64 {
    let line = lines.next().expect("the program still prints").unwrap();
    line.split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a tick: {line}"))
}

/// Asks ticker.js (SIGUSR2) whether `tick` runs probed code, reading past
/// the ticks printed meanwhile (the pipe holds those printed while the
/// test waited) to the answer to this signal: ticker.js numbers them, and
/// `asked` counts the signals sent.
fn tick_is_probed(pid: u32, asked: &mut u32, lines: &mut Lines<BufReader<ChildStdout>>) -> bool {
    *asked += 1;
    support::signal(pid, libc::SIGUSR2);
    let prefix = format!("probed {asked} ");
    for line in lines.by_ref() {
        if let Some(answer) = line.unwrap().strip_prefix(&prefix) {
            return answer == "true";
        }
    }
    panic!(
        "ticker.js ended without answering SIGUSR2: {}",
        how_it_ended(pid)
    )
}

/// Where the stderr of the test's child `pid` goes (cargo's scratch
/// directory for integration tests, under target/).
fn stderr_file(pid: u32) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("strobe-attachee-{pid}.stderr"))
}

/// Where a child's stderr goes until it has a pid.
fn stderr_file_of(script: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "strobe-attachee-{}-{script}-{:?}.stderr",
        std::process::id(),
        std::thread::current().id()
    ))
}

/// How the test's child `pid` ended (its wait status), once it has, and
/// what it printed on stderr.
fn how_it_ended(pid: u32) -> String {
    let mut status = 0;
    let printed = || std::fs::read_to_string(stderr_file(pid)).unwrap_or_default();
    for _ in 0..50 {
        // SAFETY: pid is this test's own child; WNOHANG never blocks.
        if unsafe { libc::waitpid(pid as i32, &mut status, libc::WNOHANG) } == pid as i32 {
            let how = if libc::WIFSIGNALED(status) {
                format!("killed by signal {}", libc::WTERMSIG(status))
            } else {
                format!("exit code {}", libc::WEXITSTATUS(status))
            };
            return format!("{how}; its stderr: {}", printed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    format!(
        "still running (its stdout closed); its stderr: {}",
        printed()
    )
}

/// Waits (up to 30 s) for `count` exits of `function`.
async fn wait_exits(c: &Client, id: &str, function: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let seen = c.calls_of(id, "function_exit", function).await;
        if seen.len() >= count {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "{function} was not traced: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn functions_compiled_before_the_attach_are_traced_and_the_detach_restores_them() {
    let env = Env::new();
    let c = env.client().await;
    let (mut target, pid, mut lines) = node("ticker.js", &[]);
    tick_number(&mut lines);
    let mut asked = 0;
    assert!(!tick_is_probed(pid, &mut asked, &mut lines));

    // Twice: the second session probes the script the first one gave back.
    for round in 0..2 {
        let id = attach(&c, pid).await;
        let added = c
            .ok(
                "debug_trace",
                json!({"sessionId": id, "add": ["ticker.tick"]}),
            )
            .await;
        assert_eq!(added["hookedFunctions"], 1, "round {round}: {added}");
        let exits = wait_exits(&c, &id, "ticker.tick", 3).await;
        let enters = c.calls_of(&id, "function_enter", "ticker.tick").await;
        let arg = &enters[0]["arguments"][0];
        assert_eq!(arg["name"], "n", "round {round}: {enters:?}");
        assert_eq!(arg["type"], "number", "round {round}: {enters:?}");
        assert_eq!(exits[0]["returnType"], "undefined", "{exits:?}");
        assert!(tick_is_probed(pid, &mut asked, &mut lines), "round {round}");
        c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
            .await;
        // The detach put tick's own code back, and it runs on.
        let deadline = Instant::now() + Duration::from_secs(10);
        while tick_is_probed(pid, &mut asked, &mut lines) {
            assert!(
                Instant::now() < deadline,
                "round {round}: still probed after the detach"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(target.0.try_wait().unwrap().is_none());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn attaching_to_an_idle_node_program_pauses_it_and_detach_leaves_it_as_it_was() {
    let env = Env::new();
    let c = env.client().await;
    let (mut target, pid, mut lines) = node("ticker.js", &[]);
    tick_number(&mut lines);
    let threads = threads_of(pid);

    // Twice: a second attach finds the runtime the first one loaded.
    for round in 0..2 {
        let id = attach(&c, pid).await;
        let p = pause_at(&c, &id, "ticker.js", "tick-body").await;
        assert_eq!(p["function"], "ticker.tick", "{p}");
        let n = support::local(&p, "n");
        assert_eq!(n["type"], "number", "{p}");
        // The module's binding, seen from the paused frame.
        let r = c
            .ok(
                "debug_memory",
                json!({"sessionId": id, "targets": [{"variable": "ticks"}]}),
            )
            .await;
        assert_eq!(r["results"][0]["value"], n["value"], "round {round}: {r}");
        c.ok("debug_continue", json!({"sessionId": id})).await;
        c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
            .await;
        // Running on, unpaused, with no thread of Strobe's (its agent's nor
        // the debugger worker's).
        wait_threads(pid, threads).await;
        let before = tick_number(&mut lines);
        let after = (0..5).map(|_| tick_number(&mut lines)).last().unwrap();
        assert!(after > before, "round {round}: still ticking");
        assert!(target.0.try_wait().unwrap().is_none());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn attaching_to_a_node_program_busy_in_javascript_reaches_it_there() {
    // Its breakpoints work; a trace pattern on a function of the script
    // that is running is refused, with the reason.
    let env = Env::new();
    let c = env.client().await;
    let (mut target, pid, mut lines) = node("spinner.js", &[]);
    assert_eq!(lines.next().unwrap().unwrap(), "spinning");

    let id = attach(&c, pid).await;
    let p = pause_at(&c, &id, "spinner.js", "work-body").await;
    assert_eq!(p["function"], "spinner.work", "{p}");
    assert_eq!(support::local(&p, "i")["type"], "number", "{p}");
    c.ok("debug_continue", json!({"sessionId": id})).await;
    // spinner.js's top-level loop never returns: V8 cannot swap its script.
    let r = c
        .reply(
            "debug_trace",
            json!({"sessionId": id, "add": ["spinner.work"]}),
        )
        .await;
    assert!(
        r.text.contains("running on the main thread") && r.text.contains("spinner.js"),
        "{}",
        r.text
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    // Still computing: its CPU time goes on growing.
    let cpu = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<u64> = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .skip(11)
            .take(2)
            .map(|f| f.parse().unwrap())
            .collect();
        fields[0] + fields[1]
    };
    let first = cpu();
    // (Frida may still be unloading its agent, the process stopped under
    // ptrace, a moment after the detach: the loop gets up to 5 s.)
    let deadline = Instant::now() + Duration::from_secs(5);
    while cpu() == first {
        assert!(
            Instant::now() < deadline,
            "the loop runs on after the detach: {} (state {:?})",
            how_it_ended(pid),
            std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(target.0.try_wait().unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_program_whose_main_thread_is_blocked_gets_a_warning_and_runs_on_unharmed() {
    let env = Env::new();
    let c = env.client().await;
    let (mut target, pid, mut lines) = node("blocked.js", &["9"]);
    assert_eq!(lines.next().unwrap().unwrap(), "blocking");

    let (id, warnings) = attach_without_runtime(&c, pid).await;
    assert!(warnings.contains("did not run JavaScript"), "{warnings}");
    // Breakpoints say why they cannot be set.
    let e = c
        .reply(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"file": "blocked.js", "line": 9}]}),
        )
        .await;
    assert!(
        e.is_error && e.error_text().contains("did not run JavaScript"),
        "{}",
        e.text
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    // The interrupt V8 still holds for the main thread does nothing once
    // the agent is gone: the program wakes and ticks.
    assert_eq!(lines.next().unwrap().unwrap(), "woke");
    for _ in 0..5 {
        assert!(lines.next().unwrap().unwrap().starts_with("tick "));
    }
    assert!(target.0.try_wait().unwrap().is_none());
}

/// A program started under Node's permission model would refuse Strobe's
/// runtime: the attach says so at once, naming the flag, instead of
/// waiting for a load that cannot happen; the program runs on.
#[tokio::test(flavor = "multi_thread")]
async fn attaching_to_a_node_program_under_the_permission_model_says_why_at_once() {
    let env = Env::new();
    let c = env.client().await;
    let read = format!("--allow-fs-read={}", attachee().display());
    let (mut target, pid, mut lines) =
        node_with(&["--experimental-permission", &read], "ticker.js", &[]);
    tick_number(&mut lines);
    let (id, warnings) = attach_without_runtime(&c, pid).await;
    assert!(
        warnings.contains("permission model (--experimental-permission)")
            && !warnings.contains("did not run JavaScript"),
        "{warnings}"
    );
    let e = c
        .reply(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"file": "ticker.js", "line": line_of("ticker.js", "tick-body")}]}),
        )
        .await;
    assert!(
        e.is_error && e.error_text().contains("permission model"),
        "{}",
        e.text
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    tick_number(&mut lines);
    assert!(target.0.try_wait().unwrap().is_none());
}

/// An ES module the program imports after the attach would load unprobed
/// (an attached program has no loader hooks, whose thread would outlive
/// the session, and V8 refuses to swap an ES module's code): a pattern on
/// it says so instead of tracing nothing; the program runs on.
#[tokio::test(flavor = "multi_thread")]
async fn a_pattern_on_an_es_module_not_loaded_in_an_attached_program_says_why() {
    let env = Env::new();
    let c = env.client().await;
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let (_target, pid, mut lines) = node("esm_later.js", &[go.to_str().unwrap()]);
    assert_eq!(lines.next().unwrap().unwrap(), "waiting");
    let id = attach(&c, pid).await;
    let added = c
        .ok(
            "debug_trace",
            json!({"sessionId": id, "add": ["late.shout"]}),
        )
        .await;
    assert_eq!(added["hookedFunctions"], 0, "{added}");
    let said = added["warnings"].to_string();
    assert!(
        said.contains("late.mjs cannot be probed: it is an ES module"),
        "{added}"
    );
    std::fs::write(&go, "").unwrap();
    assert_eq!(lines.next().unwrap().unwrap(), "late 1");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}
