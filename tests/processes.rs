//! Sessions of several processes: forks and execs followed through Frida's
//! child gating (real targets, real Frida, through MCP).

mod support;

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use support::{Client, Env, fixture};

/// Pages through every event matching `filter`.
async fn all(c: &Client, id: &str, filter: Value) -> Vec<Value> {
    c.query_all(id, filter).await
}

/// First arguments of a function's calls, by pid.
async fn calls_by_pid(c: &Client, id: &str, name: &str) -> BTreeMap<u64, Vec<i64>> {
    let mut by_pid: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
    let events = all(
        c,
        id,
        json!({"eventType": "function_enter", "function": {"equals": name}}),
    )
    .await;
    for e in events {
        let arg = e["arguments"][0]["value"]
            .as_i64()
            .unwrap_or_else(|| panic!("typed first argument in {e}"));
        by_pid
            .entry(e["pid"].as_u64().unwrap())
            .or_default()
            .push(arg);
    }
    by_pid
}

#[tokio::test(flavor = "multi_thread")]
async fn forked_and_execed_children_are_traced_with_the_session_patterns() {
    let env = Env::new();
    let c = env.client().await;
    let execee = fixture("execee");
    let exe = fixture("forker");
    // Staged: in force before main, so every process gets them before it runs.
    c.ok(
        "debug_trace",
        json!({"add": ["work", "exec_work"], "sampling": false}),
    )
    .await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": [execee], "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let (id, root) = (
        v["sessionId"].as_str().unwrap().to_string(),
        v["pid"].as_u64().unwrap() as u32,
    );
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");

    // Each process's output under its own pid: the followed workers got
    // pipes of their own (the exec'd image writes to its worker's).
    let mut out: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for e in all(&c, &id, json!({"eventType": "stdout"})).await {
        out.entry(e["pid"].as_u64().unwrap())
            .or_default()
            .push(e["text"].as_str().unwrap().to_string());
    }
    assert_eq!(
        out.get(&(root as u64)),
        Some(&vec![
            "worker 0 exit 10".to_string(),
            "worker 1 exit 3".to_string()
        ]),
        "{out:?}"
    );

    // The parent's own calls, and each fork's, under their own pids.
    let work = calls_by_pid(&c, &id, "work").await;
    assert_eq!(work.get(&(root as u64)), Some(&vec![1, 2]), "{work:?}");
    let children: Vec<(&u64, &Vec<i64>)> =
        work.iter().filter(|(p, _)| **p != root as u64).collect();
    let mut child_calls: Vec<Vec<i64>> = children.iter().map(|(_, v)| (*v).clone()).collect();
    child_calls.sort();
    assert_eq!(
        child_calls,
        [vec![100, 101, 102], vec![200, 201, 202]],
        "each forked worker's calls, traced before it ran on: {work:?}"
    );
    // The exec'd image is resolved against its own symbols.
    let exec_work = calls_by_pid(&c, &id, "exec_work").await;
    assert_eq!(exec_work.len(), 1, "{exec_work:?}");
    let (exec_pid, args) = exec_work.iter().next().unwrap();
    assert_eq!(args, &(0..7).collect::<Vec<i64>>());
    let second_worker = work
        .iter()
        .find(|(_, v)| v.first() == Some(&200))
        .map(|(p, _)| *p)
        .unwrap();
    assert_eq!(*exec_pid, second_worker, "exec keeps the pid");
    assert_eq!(
        out.get(&second_worker),
        Some(&vec![
            "worker 1 running".to_string(),
            "execee sum 56".to_string()
        ]),
        "{out:?}"
    );
    let first_worker = work
        .iter()
        .find(|(_, v)| v.first() == Some(&100))
        .map(|(p, _)| *p)
        .unwrap();
    assert_eq!(
        out.get(&first_worker),
        Some(&vec!["worker 0 running".to_string()]),
        "{out:?}"
    );

    // The pid filter, and the pids every query response lists.
    let page = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "pid": second_worker, "eventType": "function_enter", "verbose": true}),
        )
        .await;
    let names: BTreeSet<String> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["pid"], second_worker);
            e["function"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        names,
        BTreeSet::from(["work".to_string(), "exec_work".to_string()])
    );
    let pids: BTreeSet<u64> = page["pids"]
        .as_array()
        .unwrap_or_else(|| panic!("pids listed: {page}"))
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert_eq!(pids.len(), 3, "{page}");
    assert!(pids.contains(&(root as u64)) && pids.contains(&second_worker));

    // Each process's end is on the timeline and in the status.
    let exits = all(&c, &id, json!({"eventType": "process_exit"})).await;
    let codes: BTreeMap<u64, Value> = exits
        .iter()
        .map(|e| (e["pid"].as_u64().unwrap(), e["exitCode"].clone()))
        .collect();
    assert_eq!(codes.get(&second_worker), Some(&json!(3)), "{exits:?}");
    assert_eq!(codes.get(&(root as u64)), Some(&json!(0)), "{exits:?}");
    assert!(codes.values().any(|c| c == 10), "{exits:?}");
    let processes = st["processes"].as_array().unwrap_or_else(|| panic!("{st}"));
    let origins: Vec<&str> = processes
        .iter()
        .map(|p| p["origin"].as_str().unwrap())
        .collect();
    assert_eq!(origins.iter().filter(|o| **o == "fork").count(), 1, "{st}");
    assert!(
        origins.contains(&"exec") && origins.contains(&"launch"),
        "{st}"
    );
    let exec_image = processes.iter().find(|p| p["origin"] == "exec").unwrap();
    assert_eq!(exec_image["binaryPath"], execee.to_str().unwrap());
    assert_eq!(exec_image["exitCode"], 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn attaching_to_a_running_process_traces_it_and_stop_leaves_it_running() {
    use std::io::{BufRead, BufReader};
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("attachee");
    let mut target = support::Spawned::start(
        std::process::Command::new(&exe).stdout(std::process::Stdio::piped()),
    );
    let pid = target.id();
    let mut lines = BufReader::new(target.stdout.take().unwrap()).lines();
    let mut next_tick = move || -> (i64, i64) {
        let line = lines.next().expect("the target still prints").unwrap();
        let mut parts = line
            .split_whitespace()
            .skip(1)
            .map(|p| p.parse::<i64>().unwrap());
        (parts.next().unwrap(), parts.next().unwrap())
    };
    next_tick();

    let bad = c
        .reply(
            "debug_launch",
            json!({"command": exe, "attachPid": pid, "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    assert!(
        bad.is_error && bad.text.contains("not both"),
        "{}",
        bad.text
    );
    let v = c
        .ok(
            "debug_launch",
            json!({"attachPid": pid, "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    assert_eq!(v["pid"], pid);
    assert!(
        v["nextSteps"].as_str().unwrap().contains("NOT captured"),
        "{v}"
    );
    c.ok("debug_trace", json!({"sessionId": id, "add": ["tick"]}))
        .await;
    // Calls recorded from now on, with typed arguments.
    let mut seen = Vec::new();
    for _ in 0..200 {
        seen = all(
            &c,
            &id,
            json!({"eventType": "function_exit", "function": {"equals": "tick"}}),
        )
        .await;
        if seen.len() >= 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(seen.len() >= 5, "{seen:?}");
    assert!(seen.iter().all(|e| e["pid"] == pid));
    let entered = all(
        &c,
        &id,
        json!({"eventType": "function_enter", "function": {"equals": "tick"}}),
    )
    .await;
    let n = entered[0]["arguments"][0]["value"]
        .as_i64()
        .unwrap_or_else(|| panic!("{}", entered[0]));
    assert!(
        seen.iter().any(|e| e["returnValue"] == n * 2),
        "typed return of tick({n}): {seen:?}"
    );
    // Live memory of the attached process.
    let m = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"variable": "g_ticks"}]}),
        )
        .await;
    assert!(m["results"][0]["value"].as_i64().unwrap() >= n, "{m}");

    let st = c
        .ok(
            "debug_session",
            json!({"action": "stop", "sessionId": id, "retain": true}),
        )
        .await;
    assert_eq!(st["state"], "stopped", "{st}");
    let status = c.status(&id).await;
    assert!(
        status["reason"]
            .as_str()
            .unwrap_or("")
            .contains("keeps running"),
        "{status}"
    );
    // Still alive, hooks gone: it goes on ticking correctly.
    for _ in 0..50 {
        let (n, twice) = next_tick();
        assert_eq!(twice, n * 2);
    }
    assert!(
        target.try_wait().unwrap().is_none(),
        "the process survived the detach"
    );
    // Frida unmaps its agent asynchronously once the detach completes.
    let agent_mapped =
        || std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|m| m.contains("frida"));
    assert!(
        support::wait_until(std::time::Duration::from_secs(10), || !agent_mapped()),
        "the agent is unloaded"
    );
    target.kill().unwrap();
    target.wait().unwrap();
}

/// Threads started while attached begin in the agent's signal-stack set-up
/// (agent/src/native/signal_stack.ts), and threads alive at the detach end
/// after the agent's code is gone: none of them may return into it or call
/// its destructor then. The target starts a thread lasting 300 ms every tick.
#[tokio::test(flavor = "multi_thread")]
async fn threads_started_while_attached_end_safely_after_the_detach() {
    use std::io::{BufRead, BufReader};
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("attachee");
    let mut target = support::Spawned::start(
        std::process::Command::new(&exe)
            .arg("threads")
            .stdout(std::process::Stdio::piped()),
    );
    let pid = target.id();
    let mut lines = BufReader::new(target.stdout.take().unwrap()).lines();
    let mut ticks = move |n: usize| {
        for _ in 0..n {
            lines.next().expect("the target still prints").unwrap();
        }
    };
    ticks(1);
    let v = c
        .ok(
            "debug_launch",
            json!({"attachPid": pid, "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    // About a second of ticks, each starting a thread under the agent.
    ticks(150);
    let st = c
        .ok(
            "debug_session",
            json!({"action": "stop", "sessionId": id, "retain": true}),
        )
        .await;
    assert_eq!(st["state"], "stopped", "{st}");
    let agent_mapped =
        || std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|m| m.contains("frida"));
    assert!(
        support::wait_until(std::time::Duration::from_secs(10), || !agent_mapped()),
        "the agent is unloaded"
    );
    // Well past the 300 ms the last threads started under the agent live.
    ticks(200);
    assert!(
        target.try_wait().unwrap().is_none(),
        "the process survived its threads ending after the detach"
    );
    target.kill().unwrap();
    target.wait().unwrap();
}

/// A process another tracer holds (here a Python helper that seized it
/// with ptrace) cannot be attached to: Frida would fall back to an
/// injection that can hang. The error names the tracer, after a wait long
/// enough for a Frida that just detached to let go; the process runs on.
#[tokio::test(flavor = "multi_thread")]
async fn attaching_to_a_process_another_tracer_holds_names_that_tracer() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("attachee");
    // Declared before its tracer, so dropped after it, panic or not: a
    // traced process's exit goes to its tracer before its parent can
    // collect it.
    let mut target = support::Spawned::start(
        std::process::Command::new(&exe).stdout(std::process::Stdio::null()),
    );
    let pid = target.id();
    // PTRACE_SEIZE (0x4206) leaves the target running, traced.
    let mut holder = support::Spawned::start(
        std::process::Command::new("python3")
            .arg("-c")
            .arg(format!(
                "import ctypes, sys, time\nlibc = ctypes.CDLL(None, use_errno=True)\n\
                 if libc.ptrace(0x4206, {pid}, None, None) != 0: sys.exit(ctypes.get_errno())\n\
                 print('held', flush=True)\ntime.sleep(120)\n"
            ))
            .stdout(std::process::Stdio::piped()),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "held", "the helper seized the target");
    let e = c
        .reply(
            "debug_launch",
            json!({"attachPid": pid, "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    assert!(e.is_error, "{}", e.text);
    let text = e.error_text();
    assert!(
        text.contains(&format!(
            "process {pid} is being traced by pid {}",
            holder.id()
        )) && text.contains("python")
            && text.contains("one tracer"),
        "{text}"
    );
    assert!(target.try_wait().unwrap().is_none(), "it runs on");
}

#[tokio::test(flavor = "multi_thread")]
async fn after_an_exec_the_tools_act_on_the_new_image() {
    let env = Env::new();
    let c = env.client().await;
    let execer = fixture("execer");
    let typed = fixture("typed");
    c.ok(
        "debug_trace",
        json!({"add": ["before_exec"], "projectRoot": execer.parent().unwrap()}),
    )
    .await;
    let (id, pid) = c
        .launch(&execer, &[typed.to_str().unwrap(), "0", "60"])
        .await;
    // The exec is followed: the same pid, a new image.
    assert!(support::wait_until(
        std::time::Duration::from_secs(10),
        || { std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p == typed) }
    ));
    let mut read = Value::Null;
    for _ in 0..50 {
        // Until the new image's symbols are loaded the read fails (an error).
        read = c
            .reply(
                "debug_memory",
                json!({"sessionId": id, "targets": [{"variable": "g_ratio"}]}),
            )
            .await
            .value;
        if read["results"][0]["value"] == 0.5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        read["results"][0]["value"], 0.5,
        "a global of the exec'd program: {read}"
    );
    let b = c
        .ok(
            "debug_breakpoint",
            json!({"sessionId": id, "add": [{"function": "main"}]}),
        )
        .await;
    assert_eq!(
        b["breakpoints"][0]["file"]
            .as_str()
            .map(|f| f.ends_with("typed.c")),
        Some(true),
        "{b}"
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn children_not_followed_run_without_frida_hooks_on_exit() {
    // A child Frida does not gate has its state but none of its threads: a
    // lock held at the fork would hang it in a hooked _exit. Not following,
    // Strobe puts the original bytes of exit/_exit/abort back in the child.
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("exit_bytes");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap(), "followChildren": false}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    let out: Vec<String> = c.stdout_lines(&id).await;
    let bytes = |who: &str| {
        out.iter()
            .find_map(|l| l.strip_prefix(&format!("{who} ")))
            .unwrap_or_else(|| panic!("no {who} line: {out:?}"))
            .to_string()
    };
    assert!(
        bytes("parent").starts_with("e9"),
        "hooked in the parent: {out:?}"
    );
    assert!(
        !bytes("child").starts_with("e9"),
        "restored in the child: {out:?}"
    );
    assert!(out.contains(&"child exit 7".to_string()), "{out:?}");
}

/// A target killed from outside says by which signal, in its status and its
/// process_exit event: Frida reaps it and reports only "process-terminated",
/// so the daemon reads the wait status from the kernel (a pidfd).
#[tokio::test(flavor = "multi_thread")]
async fn a_target_killed_from_outside_reports_the_signal() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("sleeper");
    for (sig, name) in [(9, "SIGKILL"), (15, "SIGTERM")] {
        let (id, pid) = c.launch(&exe, &["20"]).await;
        // Let it run (past its first output) before killing it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while c.events(&id, Some("stdout")).await.is_empty() {
            assert!(std::time::Instant::now() < deadline, "no output from {id}");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        support::signal(pid, sig);
        let s = c.wait_ended(&id).await;
        assert_eq!(s["state"], "exited", "{s}");
        assert_eq!(s["signal"], name, "{s}");
        assert_eq!(s["exitCode"], Value::Null, "{s}");
        let reason = s["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains(name) && reason.contains(&format!("signal {sig}")),
            "{reason}"
        );
        let exit = c.events(&id, Some("process_exit")).await;
        assert_eq!(exit.len(), 1, "{exit:?}");
        let text = exit[0].to_string();
        assert!(text.contains(name), "{text}");
        c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
            .await;
    }
}

/// Requests to the agent while the program forks: a message between the
/// agent and the daemon in flight at the moment of a fork crashes the
/// gated child inside Frida. The status polls of a waiting client did that
/// now and then (they ask the agent which threads are Frida's, and Frida's
/// threads are new after each fork): a worker of `forker` was lost in 4 runs
/// of 40 with the other tests of this file beside it. The daemon holds its
/// requests from the fork guard's barrier until the fork returned, and lets
/// the fork go only once those already sent are answered. Here a client
/// adds and removes a pattern (a request to the agent each time) and polls
/// the status while the program forks 60 times: without the hold, workers
/// died of SIGSEGV in 3 runs of 6 (of 30 forks each). The count of changes
/// also catches a request to a process that ended waiting for its agent's
/// answer until the 30 s timeout (it then made 2 to 4).
#[tokio::test(flavor = "multi_thread")]
async fn children_forked_while_the_agent_is_asked_things_all_live() {
    let env = Env::new();
    let c = env.client().await;
    c.ok("debug_trace", json!({"add": ["job"], "sampling": false}))
        .await;
    let exe = fixture("fork_workers");
    let (id, _) = c.launch(&exe, &["60"]).await;
    let mut changes = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let s = c.status(&id).await;
        if s["state"] != "running" && s["state"] != "starting" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "did not end: {s}");
        let change = if changes % 2 == 0 { "remove" } else { "add" };
        // A session that ended meanwhile refuses: that is fine here.
        let _ = c
            .reply("debug_trace", json!({"sessionId": id, change: ["job"]}))
            .await;
        changes += 1;
    }
    let out = c.stdout_lines(&id).await;
    assert_eq!(
        out,
        ["60 of 60 workers exited 7"],
        "every worker lived ({changes} pattern changes meanwhile): {out:?}"
    );
    assert!(changes >= 10, "the changes overlapped the forks: {changes}");
}

/// A followed child that closes every descriptor above 2 before exec'ing
/// (close_range, closefrom: what Python's subprocess and many spawners do)
/// would cut Frida's channel to it and hang in the exec; bulk closes leave
/// close-on-exec descriptors to the exec, so it runs, is followed through
/// the exec, and the program's own descriptors are closed all the same.
/// vfork()ed children (Frida makes them forks) get the fork guard too: with
/// traced calls in flight, about 1 in 3 crashed without it.
#[tokio::test(flavor = "multi_thread")]
async fn children_that_close_every_descriptor_before_exec_are_followed() {
    let env = Env::new();
    let c = env.client().await;
    let execee = fixture("execee");
    let exe = fixture("bulk_closer");
    c.ok("debug_trace", json!({"add": ["exec_work", "between"]}))
        .await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": [execee], "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    let out = c.stdout_lines(&id).await;
    assert_eq!(
        out.iter().filter(|l| *l == "child exit 3").count(),
        5,
        "every child exec'd and ended: {out:?}"
    );
    assert_eq!(
        out.iter().filter(|l| l.ends_with(" closed")).count(),
        10,
        "the program's descriptors, close-on-exec or not, did not reach execee: {out:?}"
    );
    let execs = st["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["origin"] == "exec")
        .count();
    assert_eq!(execs, 5, "followed through the exec: {st}");
    let calls = c.calls_of(&id, "function_enter", "exec_work").await;
    assert_eq!(calls.len(), 10, "traced in every exec'd image: {calls:?}");
}

/// The names in a status's thread list, the main thread (id == pid) as "main".
fn thread_names(status: &Value, pid: u32) -> BTreeSet<String> {
    status["threads"]
        .as_array()
        .unwrap_or_else(|| panic!("no thread list: {status}"))
        .iter()
        .map(|t| match t["id"].as_u64() == Some(pid as u64) {
            true => "main".to_string(),
            false => t["name"].as_str().unwrap().to_string(),
        })
        .collect()
}

/// `debug_session status` lists the program's live threads by name, none of
/// Frida's (`/proc` lists those among them, under the program's name), and
/// a thread that ended leaves the list.
#[tokio::test(flavor = "multi_thread")]
async fn status_lists_the_programs_threads_and_none_of_fridas() {
    let env = Env::new();
    let c = env.client().await;
    let exe = support::fixture_with("threads", &["-pthread"]);
    let (id, pid) = c.launch(&exe, &["2000"]).await;
    let want = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<BTreeSet<_>>();
    let args = json!({"action": "status", "sessionId": id});

    // Before "go": main and keeper; then brief too.
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let three = loop {
        let r = c.reply("debug_session", args.clone()).await;
        let names = thread_names(&r.value, pid);
        if seen.last() != Some(&names) {
            seen.push(names.clone());
        }
        if names == want(&["main", "keeper", "brief"]) {
            break r;
        }
        assert!(Instant::now() < deadline, "never listed brief: {seen:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        seen.contains(&want(&["main", "keeper"])),
        "keeper alone was never listed before brief: {seen:?}"
    );
    // Frida runs threads of its own in the program: they were left out.
    let in_proc = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .count();
    assert!(
        in_proc > 3,
        "/proc lists only {in_proc} threads: the check proves nothing"
    );
    assert!(three.text.contains("3 thread(s) ("), "{}", three.text);
    assert!(three.text.contains("keeper "), "{}", three.text);

    // brief ends after 2 s: it leaves the list.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = c.status(&id).await;
        if thread_names(&s, pid) == want(&["main", "keeper"]) {
            break;
        }
        assert!(Instant::now() < deadline, "brief stayed listed: {s}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}
