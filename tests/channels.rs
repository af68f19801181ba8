//! I/O channels and scenarios end to end: a C calculator driven line by
//! line through its stdin (and EOF), a Python HTTP API whose bug one
//! request reaches — found by a scenario of a net request, a trace check
//! and an output check —, a Python program that reloads its config file
//! when a file channel edits it, and the refusals. Real programs under
//! real Frida, through MCP; every stimulus and observation is read back
//! from the timeline.

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{Client, Env, fixture};

fn channel_fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/channels")
        .canonicalize()
        .unwrap()
}

/// Waits (up to 30 s) for a stdout line containing `text`; every line.
async fn wait_line(c: &Client, id: &str, text: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let lines = c.stdout_lines(id).await;
        if lines.iter().any(|l| l.contains(text)) {
            return lines;
        }
        assert!(
            Instant::now() < deadline,
            "no stdout line with {text:?}: {lines:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn send(c: &Client, id: &str, channel: &str, data: Value) -> Value {
    c.ok(
        "debug_channel",
        json!({"sessionId": id, "action": "send", "channel": channel, "data": data}),
    )
    .await
}

async fn launch_python(c: &Client, script: &Path, extra: Value) -> (String, u32) {
    let mut args = json!({
        "command": "python3",
        "args": [script],
        "projectRoot": script.parent().unwrap(),
    });
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    let v = c.ok("debug_launch", args).await;
    (
        v["sessionId"].as_str().unwrap().to_string(),
        v["pid"].as_u64().unwrap() as u32,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn stdin_drives_a_repl_line_by_line_until_eof() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("repl");
    c.ok("debug_trace", json!({"add": ["add", "mul"]})).await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap(), "stdin": "pipe"}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    wait_line(&c, &id, "ready").await;

    let r = send(&c, &id, "stdio", json!({"line": "add 2 3"})).await;
    assert_eq!(r["result"]["written"], 8, "{r}");
    wait_line(&c, &id, "= 5").await;
    send(&c, &id, "stdio", json!({"line": "mul 4 5"})).await;
    wait_line(&c, &id, "= 20").await;
    let r = c
        .reply(
            "debug_channel",
            json!({"sessionId": id, "action": "send", "channel": "stdio", "data": {"text": "add 1 1\n", "eof": true}}),
        )
        .await;
    assert!(r.text.contains("then EOF"), "{}", r.text);
    let lines = wait_line(&c, &id, "bye").await;
    assert_eq!(lines, ["ready", "= 5", "= 20", "= 2", "bye"]);
    let s = c.wait_ended(&id).await;
    assert_eq!(s["exitCode"], 0, "EOF ended the loop: {s}");

    // Its channels closed with it; what they recorded is still queried.
    let listed = c
        .reply("debug_channel", json!({"sessionId": id, "action": "list"}))
        .await;
    assert!(
        listed.text.starts_with("0 channel(s) open"),
        "{}",
        listed.text
    );
    // What was written is on the timeline, in order, before the answers.
    let q = c
        .reply(
            "debug_channel",
            json!({"sessionId": id, "action": "query", "channel": "stdio"}),
        )
        .await;
    assert!(q.text.contains("wrote \"add 2 3\\n\""), "{}", q.text);
    let written = c.events(&id, Some("stdin")).await;
    assert_eq!(written.len(), 3, "{written:?}");
    assert_eq!(written[2]["action"]["eof"], true, "{written:?}");
    assert_eq!(written[2]["summary"], "wrote \"add 1 1\\n\", then EOF");
    let adds = c.calls_of(&id, "function_enter", "add").await;
    assert_eq!(adds.len(), 2);
    assert!(written[0]["id"].as_u64() < adds[0]["id"].as_u64());

    // Once closed, stdin says so.
    let e = c
        .reply(
            "debug_channel",
            json!({"sessionId": id, "action": "send", "channel": "stdio", "data": {"line": "x"}}),
        )
        .await;
    assert!(e.is_error, "{}", e.text);

    // Without stdin "pipe" the program reads EOF at once, and a send says
    // how to get a pipe.
    let (other, _) = c.launch(&exe, &[]).await;
    wait_line(&c, &other, "bye").await;
    let (third, _) = c.launch(&fixture("sleeper"), &[]).await;
    let e = c
        .reply(
            "debug_channel",
            json!({"sessionId": third, "action": "send", "channel": "stdio", "data": {"line": "add 1 2"}}),
        )
        .await;
    assert!(
        e.error_text()
            .contains("launch with debug_launch {stdin: \"pipe\"}"),
        "{}",
        e.text
    );
}

/// Reads the port api.py printed.
async fn api_port(c: &Client, id: &str) -> u16 {
    let lines = wait_line(c, id, "listening on").await;
    lines
        .iter()
        .find_map(|l| l.strip_prefix("listening on "))
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scenario_finds_the_http_apis_bug_and_leaves_the_program_to_investigate() {
    let env = Env::new();
    let c = env.client().await;
    let script = channel_fixtures().join("api.py");
    c.ok("debug_trace", json!({"add": ["api.unit_price"]}))
        .await;
    let (id, _) = launch_python(&c, &script, json!({})).await;
    let port = api_port(&c, &id).await;
    let net = format!("net:{port}");

    // The agent's scenario: an order of 3 works; then the bug.
    let r = c
        .reply(
            "debug_test_scenario",
            json!({"sessionId": id, "scenario": {"channels": [net], "steps": [
                {"do": format!("{net}.send"), "path": "/items/3"},
                {"assert": "net", "status": 200, "bodyContains": "\"unit\": 12.0"},
                {"assert": "trace", "fn": "api.unit_price", "called": true, "args": {"count": 3}},
                {"do": format!("{net}.send"), "path": "/items/0"},
                {"assert": "net", "status": 200},
                {"assert": "stdout", "contains": "never reached"},
            ]}}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text);
    let v = &r.value;
    assert_eq!(v["passed"], false, "{v}");
    assert_eq!(v["failure"]["step"], 5, "{v}");
    assert!(
        v["failure"]["actual"]
            .as_str()
            .unwrap()
            .contains("status 500"),
        "{v}"
    );
    assert_eq!(v["steps"].as_array().unwrap().len(), 5, "it stopped there");
    assert!(
        r.text.contains("FAILED at step 5/6") && r.text.contains("still running"),
        "{}",
        r.text
    );

    // The process is alive: the agent looks at what the bad request did.
    assert_eq!(c.status(&id).await["state"], "running");
    let exits = c.calls_of(&id, "function_exit", "api.unit_price").await;
    let last = exits.last().unwrap();
    assert!(
        last.to_string().contains("ZeroDivisionError"),
        "the call raised: {last}"
    );

    // The same bug as a passing regression scenario: request + trace + output.
    let r = c
        .reply(
            "debug_test_scenario",
            json!({"sessionId": id, "scenario": {"name": "zero-items", "channels": [net], "steps": [
                {"do": format!("{net}.send"), "path": "/items/0"},
                {"assert": "net", "status": 500, "bodyContains": "division by zero"},
                {"assert": "trace", "fn": "api.unit_price", "count": 1, "args": {"0": 0}},
                {"assert": "stdout", "matches": "^error: .*division by zero"},
                {"assert": "stdout", "contains": "Traceback", "present": false},
            ]}}),
        )
        .await;
    assert_eq!(r.value["passed"], true, "{}", r.text);
    assert!(
        r.text
            .starts_with("Scenario \"zero-items\" passed: 5 step(s)"),
        "{}",
        r.text
    );

    // Every step and every request is on the timeline.
    let steps = c.events(&id, Some("scenario_step")).await;
    assert_eq!(steps.len(), 5 + 5, "{steps:?}");
    assert_eq!(steps[4]["ok"], false);
    assert_eq!(steps[4]["step"], 5);
    let nets = c.events(&id, Some("net")).await;
    let ours: Vec<&Value> = nets.iter().filter(|e| e["dir"] != "program").collect();
    let sent = ours.iter().filter(|e| e["dir"] == "sent").count();
    let answers = ours.iter().filter(|e| e["dir"] == "answer").count();
    assert_eq!((sent, answers), (3, 3), "{nets:?}");
    assert!(
        ours[0]["dir"] == "sent" && ours[1]["dir"] == "answer",
        "a request comes before its answer: {nets:?}"
    );

    // The program's own socket I/O is on the timeline too, between each
    // request and its answer: the accept, the request it read, the answer
    // it wrote, with the peer and the first bytes.
    // (By time: the agent ships its records every few ms, so they are
    // stored after the daemon's own events of the same moment.)
    let ts = |e: &Value| e["timestampNs"].as_u64().unwrap();
    let (first_sent, first_answer) = (ts(ours[0]), ts(ours[1]));
    let program: Vec<&Value> = nets
        .iter()
        .filter(|e| e["dir"] == "program" && (first_sent..=first_answer).contains(&ts(e)))
        .collect();
    let accept = program.iter().find(|e| e["op"] == "accept");
    let accept = accept.unwrap_or_else(|| panic!("no accept: {nets:#?}"));
    assert_eq!(accept["localPort"], port, "{accept}");
    assert!(accept["peer"].as_str().unwrap().starts_with("127.0.0.1:"));
    let read = program
        .iter()
        .find(|e| {
            e["op"] == "recv"
                && e["head"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("GET /items/3 HTTP/1.1")
        })
        .unwrap_or_else(|| panic!("no request read: {program:#?}"));
    assert_eq!(read["fd"], accept["fd"], "read on the accepted socket");
    assert_eq!(read["function"], "recv", "CPython reads with recv: {read}");
    let wrote = program
        .iter()
        .find(|e| e["op"] == "send" && e["head"].as_str().unwrap_or("").starts_with("HTTP/1.0 200"))
        .unwrap_or_else(|| panic!("no answer written: {program:#?}"));
    assert!(
        wrote["summary"]
            .as_str()
            .unwrap()
            .starts_with("program sent "),
        "{wrote}"
    );
    // The 500 went out too.
    assert!(
        nets.iter()
            .any(|e| e["op"] == "send"
                && e["head"].as_str().unwrap_or("").starts_with("HTTP/1.0 500")),
        "{nets:#?}"
    );
    let q = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "net", "limit": 500}),
        )
        .await;
    assert_eq!(q["totalCount"], nets.len(), "{q}");
    assert!(
        nets.len() > 6 + 3 * 3,
        "requests, answers and program I/O: {nets:#?}"
    );
}

/// The program's socket events (`dir: "program"`) whose first bytes start
/// with `head`.
async fn program_io(c: &Client, id: &str, op: &str, head: &str) -> Vec<Value> {
    c.events(id, Some("net"))
        .await
        .into_iter()
        .filter(|e| {
            e["dir"] == "program"
                && e["op"] == op
                && e["head"].as_str().unwrap_or("").starts_with(head)
        })
        .collect()
}

/// Waits (up to 30 s) until `program_io` finds one.
async fn wait_program_io(c: &Client, id: &str, op: &str, head: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(e) = program_io(c, id, op, head).await.pop() {
            return e;
        }
        assert!(
            Instant::now() < deadline,
            "no program {op} starting {head:?}: {:#?}",
            c.events(id, Some("net")).await
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_servers_own_socket_io_is_recorded_while_a_net_channel_is_open() {
    let env = Env::new();
    let c = env.client().await;
    let root = channel_fixtures();
    // Bare `net` at launch: it sends nothing, it only has the program's
    // socket I/O recorded.
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "node", "args": ["hello.js"], "projectRoot": root, "cwd": root,
                   "channels": ["net"]}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let port = api_port(&c, &id).await;
    let net = format!("net:{port}");
    c.ok(
        "debug_channel",
        json!({"sessionId": id, "action": "add", "channel": net}),
    )
    .await;
    let list = c
        .ok("debug_channel", json!({"sessionId": id, "action": "list"}))
        .await;
    let bare = list["channels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|ch| ch["name"] == "net")
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(
        (bare["sends"].clone(), bare["sees"].clone()),
        (json!(false), json!(true)),
        "{bare}"
    );

    let r = send(&c, &id, &net, json!({"path": "/hello/ada"})).await;
    assert_eq!(r["result"]["status"], 200, "{r}");
    // libuv reads the request with read() and writes the answer with
    // write()/writev(): recorded all the same, with the peer.
    let read = wait_program_io(&c, &id, "recv", "GET /hello/ada HTTP/1.1").await;
    assert_eq!(read["function"], "read", "{read}");
    assert!(
        read["peer"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{read}"
    );
    let wrote = wait_program_io(&c, &id, "send", "HTTP/1.1 200 OK").await;
    assert!(
        ["write", "writev"].contains(&wrote["function"].as_str().unwrap()),
        "{wrote}"
    );
    assert_eq!(wrote["fd"], read["fd"], "the same connection");
    let accept = wait_program_io(&c, &id, "accept", "").await;
    assert_eq!(accept["localPort"], port, "{accept}");

    // With every net channel closed, the hooks come off: a request made
    // then is not recorded. (Records reach the store in the order they
    // were made, so once the next request's are there, the unhooked one's
    // would have been.)
    for name in [net.as_str(), "net"] {
        c.ok(
            "debug_channel",
            json!({"sessionId": id, "action": "remove", "channel": name}),
        )
        .await;
    }
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    use std::io::{Read, Write};
    s.write_all(b"GET /hello/unwatched HTTP/1.0\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.contains("unwatched"), "{answer}");
    c.ok(
        "debug_channel",
        json!({"sessionId": id, "action": "add", "channel": net}),
    )
    .await;
    send(&c, &id, &net, json!({"path": "/hello/again"})).await;
    wait_program_io(&c, &id, "recv", "GET /hello/again").await;
    assert!(
        program_io(&c, &id, "recv", "GET /hello/unwatched")
            .await
            .is_empty(),
        "recorded with no net channel open"
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_channel_edits_a_watched_config_and_a_scenario_file_checks_the_reload() {
    let env = Env::new();
    let c = env.client().await;
    let root = tempfile::tempdir().unwrap();
    let script = root.path().join("watcher.py");
    std::fs::copy(channel_fixtures().join("watcher.py"), &script).unwrap();
    c.ok("debug_trace", json!({"add": ["watcher.reload"]}))
        .await;
    let (id, _) = launch_python(&c, &script, json!({"channels": ["file:config.ini"]})).await;
    wait_line(&c, &id, "watching").await;

    // A scenario file in the project, run by name.
    let dir = root.path().join(".strobe/scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("reload.json"),
        json!({"steps": [
            {"do": "file:config.ini.send", "op": "write", "text": "rate=48000\nsize=256\n"},
            {"wait": {"until": {"assert": "stdout", "contains": "reloaded 2 setting(s)"}, "timeoutMs": 10000}},
            {"assert": "trace", "fn": "watcher.reload", "returns": 2},
            {"assert": "files", "channel": "file:config.ini", "contains": "config.ini"},
            {"assert": "file", "path": "config.ini", "contains": "size=256"},
            {"do": "file:config.ini.send", "op": "append", "text": "mode=live\n"},
            {"wait": {"until": {"assert": "trace", "fn": "watcher.reload", "returns": 3}, "timeoutMs": 10000}},
        ]})
        .to_string(),
    )
    .unwrap();
    let r = c
        .reply(
            "debug_test_scenario",
            json!({"sessionId": id, "scenarioFile": "reload"}),
        )
        .await;
    assert_eq!(r.value["passed"], true, "{}", r.text);
    assert_eq!(r.value["name"], "reload");

    // The edits and what the watcher saw of them are events.
    let files = c.events(&id, Some("file")).await;
    assert!(
        files
            .iter()
            .any(|e| e["dir"] == "sent" && e["action"]["op"] == "append"),
        "{files:?}"
    );
    assert!(
        files
            .iter()
            .any(|e| e["dir"] == "seen" && e["what"] == "modified"),
        "{files:?}"
    );
    // The edit is stored before what the watcher saw of it.
    let first_sent = files.iter().position(|e| e["dir"] == "sent").unwrap();
    let first_seen = files.iter().position(|e| e["dir"] == "seen").unwrap();
    assert!(first_sent < first_seen, "{files:?}");
    let listed = c
        .reply("debug_channel", json!({"sessionId": id, "action": "list"}))
        .await;
    assert!(
        listed.text.contains("file:config.ini (sends+sees") && listed.text.contains("stdio"),
        "{}",
        listed.text
    );

    // A missing scenario file lists the ones there are.
    let e = c
        .reply(
            "debug_test_scenario",
            json!({"sessionId": id, "scenarioFile": "nope"}),
        )
        .await;
    assert!(e.error_text().contains("holds: reload.json"), "{}", e.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_channels_and_scenarios_are_refused_with_what_to_do() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("repl");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap(), "stdin": "pipe"}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    wait_line(&c, &id, "ready").await;
    let add = |channel: &str| json!({"action": "add", "channel": channel});
    // Each refusal says what is wrong and what to do.
    let refusals = [
        (
            add("bogus"),
            "available: stdio, trace, file, net, midi, audio",
        ),
        // MIDI without a JACK server says how to get one.
        (add("midi"), "jack: \"auto\""),
        (add("net:tcp://10.1.2.3:80"), "not loopback"),
        (add("net:tcp://example.com:80"), "not a loopback address"),
        (
            json!({"action": "send", "channel": "net:9"}),
            "needs 'data'",
        ),
        (
            json!({"action": "send", "channel": "net:9", "data": {"path": "/"}}),
            "is not open in this session",
        ),
        (
            json!({"action": "list", "channel": "stdio"}),
            "'list' takes no 'channel'",
        ),
        (
            json!({"action": "remove", "channel": "stdio"}),
            "part of every session",
        ),
        // An address is a net channel: adding it, or sending to it, names
        // the spelling that exists (added below), never itself again.
        (
            add("udp://127.0.0.1:9"),
            "add it as \"net:udp://127.0.0.1:9\"",
        ),
        (
            json!({"action": "send", "channel": "udp://127.0.0.1:9", "data": {"data": "x"}}),
            "channel: \"net:udp://127.0.0.1:9\"}",
        ),
        // A line is one command: a break inside it would send two.
        (
            json!({"action": "send", "channel": "stdio", "data": {"line": "add 1 2\nadd 3 4"}}),
            "give 'text', the raw form",
        ),
    ];
    for (mut args, says) in refusals {
        args["sessionId"] = json!(id);
        let e = c.reply("debug_channel", args.clone()).await;
        assert!(e.error_text().contains(says), "{args}: {}", e.text);
    }
    let hinted = c
        .reply(
            "debug_channel",
            json!({"sessionId": id, "action": "add", "channel": "net:udp://127.0.0.1:9"}),
        )
        .await;
    assert!(!hinted.is_error, "{}", hinted.text);

    // A malformed scenario is refused whole, naming the step and field:
    // nothing ran, so nothing was written to the program.
    let e = c
        .reply(
            "debug_test_scenario",
            json!({"sessionId": id, "scenario": {"steps": [
                {"do": "stdio.send", "line": "add 1 1"},
                {"assert": "stdout", "contains": "= 2", "withinMS": 10},
            ]}}),
        )
        .await;
    assert!(
        e.error_text()
            .contains("step 2: unknown field \"withinMS\""),
        "{}",
        e.text
    );
    // Only the refused line was recorded (as failed): nothing reached the
    // program, which answers "= 2" to the next line, not "= 3" or "= 7".
    assert!(
        c.events(&id, Some("stdin"))
            .await
            .iter()
            .all(|e| e["action"]["line"] == "add 1 2\nadd 3 4"),
    );

    // A wait that never comes true times out saying what was seen.
    let r = c
        .reply(
            "debug_test_scenario",
            json!({"sessionId": id, "scenario": {"steps": [
                {"do": "stdio.send", "line": "add 1 1"},
                {"wait": {"until": {"assert": "stdout", "contains": "= 3"}, "timeoutMs": 300}},
            ]}}),
        )
        .await;
    assert_eq!(r.value["failure"]["step"], 2, "{}", r.text);
    let actual = r.value["failure"]["actual"].as_str().unwrap();
    assert!(
        actual.contains("not within 300 ms") && actual.contains("\"= 2\""),
        "{actual}"
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

/// Scenario files with a `launch` section are a test suite:
/// `debug_test {framework: "scenario"}` runs `strobe scenarios`, one test
/// per file, a long wait is not taken for a hung test, and a failed one
/// keeps its session for debug_query.
#[tokio::test(flavor = "multi_thread")]
async fn scenario_files_run_as_a_test_suite_through_debug_test() {
    let env = Env::new();
    let c = env.client().await;
    let repl = fixture("repl");
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join(".strobe/scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    let launch = json!({"command": repl, "stdin": "pipe"});
    std::fs::write(
        dir.join("adds.json"),
        json!({"launch": launch, "steps": [
            {"wait": {"until": {"assert": "stdout", "contains": "ready"}}},
            {"do": "stdio.send", "line": "add 2 3"},
            {"wait": {"until": {"assert": "stdout", "contains": "= 5"}}},
            // Longer than debug_test's stuck detector gives a silent test
            // (4 s of silence, then 1.5 s between stack samples): a long
            // wait is not taken for a hung test.
            {"wait": 6500},
        ]})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("multiplies.json"),
        json!({"launch": launch, "steps": [
            {"wait": {"until": {"assert": "stdout", "contains": "ready"}}},
            {"do": "stdio.send", "line": "mul 2 3"},
            {"assert": "stdout", "contains": "= 5", "withinMs": 300},
        ]})
        .to_string(),
    )
    .unwrap();
    let r = c
        .test_run(
            json!({"action": "run", "projectRoot": root.path(), "framework": "scenario"}),
            3,
        )
        .await;
    let result = &r;
    assert_eq!(result["framework"], "scenario", "{r}");
    assert_eq!(result["summary"]["passed"], 1, "{r}");
    assert_eq!(result["summary"]["failed"], 1, "{r}");
    let f = &result["failures"][0];
    assert_eq!(f["name"], "multiplies", "{r}");
    assert_eq!(f["file"], ".strobe/scenarios/multiplies.json", "{r}");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.starts_with("step 3/3") && message.contains("\"= 6\""),
        "{message}"
    );
    // The failed scenario's session is kept; the passed one's is not.
    let sessions = c.ok("debug_session", json!({"action": "list"})).await;
    let kept: Vec<&Value> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["retained"] == true)
        .collect();
    assert_eq!(kept.len(), 1, "{sessions}");
    let id = kept[0]["sessionId"].as_str().unwrap();
    assert!(message.contains(id), "{message}");
    let out = c.stdout_lines(id).await;
    assert!(out.contains(&"= 6".to_string()), "{out:?}");
}
