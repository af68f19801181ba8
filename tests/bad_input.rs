//! Bad input: every tool answers malformed or impossible requests with a
//! readable, actionable error, and the daemon keeps answering afterwards.

mod support;

use serde_json::{Value, json};
use support::{Env, fixture};

async fn expect_error(c: &support::Client, tool: &str, args: Value, needles: &[&str]) {
    let r = c.reply(tool, args.clone()).await;
    assert!(r.is_error, "{tool} {args} should fail, got {}", r.value);
    for n in needles {
        assert!(
            r.text.contains(n),
            "{tool} {args}: error {:?} should mention {n:?}",
            r.text
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn launch_arguments_are_validated() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("output");
    let root = exe.parent().unwrap().to_str().unwrap().to_string();
    let data = env.path().join("settings.json");
    expect_error(
        &c,
        "debug_launch",
        json!({"projectRoot": root}),
        &["VALIDATION_ERROR", "'command'", "'attachPid'"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"attachPid": -3, "projectRoot": root}),
        &["VALIDATION_ERROR", "positive integer"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"attachPid": 999_999_999, "projectRoot": root}),
        &["VALIDATION_ERROR", "no process with pid"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"attachPid": 1, "command": exe, "projectRoot": root}),
        &["VALIDATION_ERROR", "not both"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"command": exe}),
        &["missing field `projectRoot`"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"command": 42, "projectRoot": root}),
        &["invalid type"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"command": exe, "projectRoot": root, "args": "x"}),
        &["invalid type"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"command": exe, "projectRoot": "rel/dir"}),
        &["VALIDATION_ERROR", "absolute"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"command": exe, "projectRoot": "/no/such/dir"}),
        &["VALIDATION_ERROR", "not an existing directory"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"command": "/no/such/prog", "projectRoot": root}),
        &["VALIDATION_ERROR", "/no/such/prog"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"command": "no-such-program-xyz", "projectRoot": root}),
        &["VALIDATION_ERROR", "PATH"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"command": data, "projectRoot": root}),
        &["VALIDATION_ERROR", "not executable"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"command": root, "projectRoot": root}),
        &["VALIDATION_ERROR", "directory"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"command": exe, "projectRoot": root, "cwd": "relative"}),
        &["VALIDATION_ERROR", "cwd"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"command": exe, "projectRoot": root, "env": {"A=B": "1"}}),
        &["VALIDATION_ERROR", "env"],
    )
    .await;
    expect_error(
        &c,
        "debug_launch",
        json!({"command": exe, "projectRoot": root, "comand": "typo"}),
        &["unknown field `comand`"],
    )
    .await;
    // Still serving after all that.
    c.ok("debug_session", json!({"action": "list"})).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn session_and_query_arguments_are_validated() {
    let env = Env::new();
    let c = env.client().await;
    expect_error(&c, "debug_session", json!({}), &["missing field `action`"]).await;
    expect_error(
        &c,
        "debug_session",
        json!({"action": "explode"}),
        &["unknown variant `explode`"],
    )
    .await;
    for action in ["status", "stop", "delete"] {
        expect_error(
            &c,
            "debug_session",
            json!({"action": action}),
            &["VALIDATION_ERROR", "sessionId", "list"],
        )
        .await;
        expect_error(
            &c,
            "debug_session",
            json!({"action": action, "sessionId": "nope"}),
            &["SESSION_NOT_FOUND", "nope"],
        )
        .await;
    }
    expect_error(
        &c,
        "debug_session",
        json!({"action": "list", "sessionId": 5}),
        &["invalid type"],
    )
    .await;

    let (id, _) = c.launch(&fixture("sleeper"), &["50"]).await;
    expect_error(
        &c,
        "debug_session",
        json!({"action": "delete", "sessionId": id}),
        &["VALIDATION_ERROR", "stop it first"],
    )
    .await;
    expect_error(&c, "debug_query", json!({}), &["missing field `sessionId`"]).await;
    expect_error(
        &c,
        "debug_query",
        json!({"sessionId": "nope"}),
        &["SESSION_NOT_FOUND"],
    )
    .await;
    let q = |extra: Value| {
        let mut a = json!({"sessionId": id});
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    expect_error(
        &c,
        "debug_query",
        q(json!({"limit": 100000})),
        &["VALIDATION_ERROR", "limit", "500"],
    )
    .await;
    expect_error(
        &c,
        "debug_query",
        q(json!({"limit": 0})),
        &["VALIDATION_ERROR", "limit"],
    )
    .await;
    expect_error(
        &c,
        "debug_query",
        q(json!({"offset": -1})),
        &["VALIDATION_ERROR", "offset"],
    )
    .await;
    expect_error(
        &c,
        "debug_query",
        q(json!({"offset": "x"})),
        &["invalid type"],
    )
    .await;
    expect_error(
        &c,
        "debug_query",
        q(json!({"eventType": "bogus"})),
        &["VALIDATION_ERROR", "stdout"],
    )
    .await;
    expect_error(
        &c,
        "debug_query",
        q(json!({"timeFrom": "yesterday"})),
        &["VALIDATION_ERROR", "-5s"],
    )
    .await;
    expect_error(
        &c,
        "debug_query",
        q(json!({"timeFrom": 10, "timeTo": 5})),
        &["VALIDATION_ERROR", "after"],
    )
    .await;
    expect_error(
        &c,
        "debug_query",
        q(json!({"pid": -1})),
        &["VALIDATION_ERROR", "pid"],
    )
    .await;
    expect_error(
        &c,
        "debug_query",
        q(json!({"minDurationNs": -1})),
        &["VALIDATION_ERROR", "minDurationNs"],
    )
    .await;
    expect_error(
        &c,
        "debug_query",
        q(json!({"function": {"matches": "("}})),
        &["VALIDATION_ERROR", "regex"],
    )
    .await;
    expect_error(
        &c,
        "debug_query",
        q(json!({"function": {"startsWith": "x"}})),
        &["unknown field"],
    )
    .await;
    expect_error(
        &c,
        "debug_query",
        q(json!({"function": {"matches": "(a{1000}){1000}"}})),
        &["VALIDATION_ERROR", "size limit"],
    )
    .await;
    // Valid but exotic filters answer normally.
    let v = c
        .ok(
            "debug_query",
            q(json!({"timeFrom": "-1m", "timeTo": "-0s", "function": {"contains": "x"}})),
        )
        .await;
    assert_eq!(
        v["totalCount"], 0,
        "no function events before tracing exists"
    );

    let unknown = c
        .raw("debug_nonexistent", json!({}))
        .await
        .expect_err("unknown tools are MCP errors");
    let msg = unknown.to_string();
    assert!(
        msg.contains("debug_nonexistent") && msg.contains("debug_launch"),
        "{msg}"
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    c.ok("debug_session", json!({"action": "list"})).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_frida_says_exactly_how_to_fix_it() {
    let mut env = Env::new();
    env.venv = env.path().join("no-venv-here");
    let c = env.client().await;
    let exe = fixture("output");
    expect_error(
        &c,
        "debug_launch",
        json!({"command": exe, "projectRoot": exe.parent().unwrap()}),
        &[
            "FRIDA_UNAVAILABLE",
            "strobe setup",
            "no-venv-here",
            "pip install frida==",
        ],
    )
    .await;
    assert_eq!(
        c.ok("debug_session", json!({"action": "list"})).await["sessions"],
        json!([]),
        "a failed launch leaves no session"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn nul_bytes_in_what_becomes_a_c_string_are_refused() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("output");
    let root = exe.parent().unwrap().to_str().unwrap().to_string();
    // "a\0b" used to run as "a", silently.
    expect_error(
        &c,
        "debug_launch",
        json!({"command": exe, "projectRoot": root, "args": ["ok", "a\u{0}b"]}),
        &["VALIDATION_ERROR", "'args[1]'", "NUL"],
    )
    .await;
    for (field, value) in [
        ("cwd", format!("{root}\u{0}x")),
        ("projectRoot", format!("{root}\u{0}x")),
        ("command", format!("{}\u{0}x", exe.display())),
    ] {
        let mut args = json!({"command": exe, "projectRoot": root});
        args[field] = json!(value);
        expect_error(
            &c,
            "debug_launch",
            args,
            &["VALIDATION_ERROR", &format!("'{field}'"), "NUL"],
        )
        .await;
    }
    expect_error(
        &c,
        "debug_launch",
        json!({"command": exe, "projectRoot": root, "env": {"K": "v\u{0}w"}}),
        &["VALIDATION_ERROR", "'env' value of \"K\"", "NUL"],
    )
    .await;
    expect_error(
        &c,
        "debug_test",
        json!({"action": "run", "projectRoot": root, "framework": "generic", "command": "true\u{0}x"}),
        &["VALIDATION_ERROR", "'command'", "NUL"],
    )
    .await;
    assert_eq!(
        c.ok("debug_session", json!({"action": "list"})).await["sessions"],
        json!([]),
        "nothing was launched"
    );
}

/// The size of a tool reply as the client received it (text and structured
/// content).
fn reply_size(r: &support::Reply) -> usize {
    r.text.len() + r.value.to_string().len()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_megabyte_bad_value_is_not_echoed_back_or_logged() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("output");
    let root = exe.parent().unwrap().to_str().unwrap().to_string();
    let big = "v".repeat(1 << 20);
    let log = env.path().join("logs/daemon.log");
    let log_size = || std::fs::metadata(&log).map_or(0, |m| m.len());
    let before = log_size();
    // Each path that quotes what the caller sent: the session layer's
    // validation, a session id, a type error, an unknown field, a map key.
    let cases = [
        ("debug_launch", json!({"command": big, "projectRoot": root})),
        (
            "debug_launch",
            json!({"command": format!("/{big}"), "projectRoot": root}),
        ),
        (
            "debug_session",
            json!({"action": "status", "sessionId": big}),
        ),
        ("debug_query", json!({"sessionId": "s", "limit": big})),
        ("debug_query", json!({"sessionId": "s", big.clone(): 1})),
        ("debug_session", json!({"action": big})),
        ("debug_trace", json!({"add": [big], "projectRoot": root})),
    ];
    for (tool, args) in cases {
        let r = c.reply(tool, args).await;
        assert!(r.is_error, "{tool} should fail");
        assert!(
            reply_size(&r) < 4_096,
            "{tool}: a {} byte reply echoes the value: {}…",
            reply_size(&r),
            &r.text[..200.min(r.text.len())]
        );
        assert!(
            r.text.contains("bytes in all"),
            "{tool}: {}",
            &r.text[..r.text.len().min(300)]
        );
    }
    // An unknown tool's name comes back in a JSON-RPC error, which rmcp also logs.
    let e = c
        .raw(&big, json!({}))
        .await
        .expect_err("unknown tools are MCP errors");
    assert!(e.to_string().len() < 4_096, "{} bytes", e.to_string().len());
    c.ok("debug_session", json!({"action": "list"})).await;
    let grown = log_size().saturating_sub(before);
    assert!(grown < 64 * 1024, "daemon.log grew by {grown} bytes");
}

#[tokio::test(flavor = "multi_thread")]
async fn type_errors_name_the_tool_and_the_field() {
    let env = Env::new();
    let c = env.client().await;
    expect_error(
        &c,
        "debug_memory",
        json!({"sessionId": "s", "targets": [{"variable": "g"}], "poll": {"intervalMs": -1, "durationMs": 500}}),
        &[
            "VALIDATION_ERROR",
            "debug_memory: poll.intervalMs: invalid value: integer -1, expected a non-negative integer",
        ],
    )
    .await;
    expect_error(
        &c,
        "debug_continue",
        json!({"sessionId": "s", "threadId": "main"}),
        &["debug_continue: threadId: invalid type: string \"main\", expected a non-negative integer"],
    )
    .await;
    expect_error(
        &c,
        "debug_breakpoint",
        json!({"sessionId": "s", "add": [{"file": "a.c", "line": 1.5}]}),
        &["debug_breakpoint: add[0].line: invalid type: number 1.5"],
    )
    .await;
    expect_error(
        &c,
        "debug_trace",
        json!({"watches": {"add": [{"variable": 3}]}}),
        &["debug_trace: watches.add[0].variable: invalid type: integer 3, expected a string"],
    )
    .await;
}

/// One JSON-RPC exchange with `strobe mcp` written by hand, for requests an
/// MCP client library cannot send.
struct RawMcp {
    child: std::process::Child,
    /// Lines of `strobe mcp`'s output, read by a thread of their own so that
    /// a reply that never comes fails the test instead of hanging it.
    lines: std::sync::mpsc::Receiver<String>,
}

impl RawMcp {
    fn start(env: &Env) -> RawMcp {
        let mut child = env
            .command(&["mcp"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("strobe mcp starts");
        let out = std::io::BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut raw = RawMcp { child, lines };
        raw.call(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        );
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        raw
    }

    fn send(&mut self, v: Value) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and returns the reply with the same id.
    fn call(&mut self, v: Value) -> Value {
        let id = v["id"].clone();
        self.send(v);
        loop {
            let line = self
                .lines
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("no reply to request {id} from strobe mcp: {e}"));
            let reply: Value = serde_json::from_str(&line).unwrap();
            if reply["id"] == id {
                return reply;
            }
        }
    }
}

impl Drop for RawMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_call_arguments_that_are_not_an_object_are_invalid_params() {
    let env = Env::new();
    let mut raw = RawMcp::start(&env);
    let r = raw.call(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "debug_session", "arguments": []}}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("'arguments' must be an object") && msg.contains("an array"),
        "{msg}"
    );
    let r = raw.call(json!({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    // The connection still serves.
    let r = raw.call(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "debug_session", "arguments": {"action": "list"}}}));
    assert_eq!(r["result"]["isError"], false, "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn init_kernel_threads_and_strobes_own_processes_are_not_attached_to() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("sleeper");
    let root = exe.parent().unwrap().to_str().unwrap().to_string();
    let attach = |pid: u32| json!({"attachPid": pid, "projectRoot": root});
    expect_error(&c, "debug_launch", attach(1), &["VALIDATION_ERROR", "init"]).await;
    let kthreadd = std::fs::read_to_string("/proc/2/stat").unwrap_or_default();
    if kthreadd.contains("(kthreadd)") {
        expect_error(
            &c,
            "debug_launch",
            attach(2),
            &["VALIDATION_ERROR", "kernel thread"],
        )
        .await;
    }
    let daemon = env.daemon_pid().expect("the daemon wrote its pid");
    expect_error(
        &c,
        "debug_launch",
        attach(daemon),
        &["VALIDATION_ERROR", "daemon itself"],
    )
    .await;
    let proxy = c.proxy_pid.expect("the proxy's pid");
    expect_error(
        &c,
        "debug_launch",
        attach(proxy),
        &["VALIDATION_ERROR", "Strobe's own"],
    )
    .await;
    // A session's bridge: the daemon's child running bridge-*.py.
    let (id, _) = c.launch(&exe, &["50"]).await;
    let bridge = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            ppid == Some(daemon) && String::from_utf8_lossy(&cmd).contains("bridge-")
        })
        .expect("the session's bridge is a child of the daemon");
    expect_error(
        &c,
        "debug_launch",
        attach(bridge),
        &["VALIDATION_ERROR", "bridge"],
    )
    .await;
    // The session is untouched.
    assert_eq!(c.status(&id).await["state"], "running");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}
