//! Python programs end to end: language detection (the pyenv shim on PATH
//! is followed to the real interpreter), patterns in Python's dotted names
//! resolved from source before the program runs, typed arguments and return
//! values, exceptions leaving traced functions, generators that end long
//! after they were created, threads, and live add/remove; the versions the
//! tracer knows (3.11, and pyenv's 3.12 and 3.13: ignored, saying so, where
//! the build found none) and what it says of others. Real CPython under real Frida, through MCP.
//! Failing programs are in python_crash.rs, attaching in python_attach.rs.

mod support;

use serde_json::{Value, json};
use support::{Client, Env, pyenv_python, python_shop};

async fn launch(c: &Client, command: &str, args: Value) -> (String, Value) {
    let v = c
        .ok(
            "debug_launch",
            json!({"command": command, "args": args, "projectRoot": python_shop()}),
        )
        .await;
    (v["sessionId"].as_str().unwrap().to_string(), v)
}

#[tokio::test(flavor = "multi_thread")]
async fn pending_python_patterns_trace_typed_calls_exceptions_generators_and_threads() {
    trace_the_shop("python3").await;
}

/// 3.12 is traced through sys.monitoring, not the eval stub: the same
/// program, the same answers.
#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_312),
    ignore = "needs CPython 3.12 (pyenv install 3.12): not found when the tests were built"
)]
async fn cpython_312_traces_the_same_through_sys_monitoring() {
    trace_the_shop(pyenv_python("3.12").to_str().unwrap()).await;
}

/// 3.13: sys.monitoring too, with its own layouts (inline values, the
/// frame in the thread state) and locals as a proxy.
#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_313),
    ignore = "needs CPython 3.13 (pyenv install 3.13): not found when the tests were built"
)]
async fn cpython_313_traces_the_same_through_sys_monitoring() {
    trace_the_shop(pyenv_python("3.13").to_str().unwrap()).await;
}

/// The names of a `function_enter` event's arguments, in order.
fn argument_names(enter: &Value) -> Vec<&str> {
    enter["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect()
}

async fn trace_the_shop(python: &str) {
    let env = Env::new();
    let c = env.client().await;
    let staged = c
        .ok(
            "debug_trace",
            json!({"add": ["inventory.apply_discount", "inventory.Bin.*", "inventory.countdown",
                           "inventory.Item.*", "inventory.dynamic_total", "inventory.restock",
                           "inventory.make_pricer.<locals>.price", "inventory.fetch_price",
                           "inventory.parse_qty", "inventory.reconcile"],
                   // Python expression watches, staged too: compiled once
                   // the interpreter runs.
                   "watches": {"add": [
                       {"expr": "percent * 2", "label": "twice", "on": ["inventory.apply_discount"]},
                       {"expr": "len(self.items)", "label": "held", "on": ["inventory.Bin.add"]},
                       {"expr": "retval + 1", "label": "next", "on": ["inventory.parse_qty"]},
                       {"expr": "1 +", "label": "broken", "on": ["inventory.parse_qty"]},
                       // A generator's and a coroutine's: read when it is
                       // created and when it finished.
                       {"expr": "n * 10", "label": "tens", "on": ["inventory.countdown"]},
                       {"expr": "(name, retval) if 'retval' in dir() else name",
                        "label": "what", "on": ["inventory.fetch_price"]}]}}),
        )
        .await;
    assert_eq!(staged["mode"], "pending", "{staged}");
    // "python3" on PATH is pyenv's shim (a bash script) on this machine: the
    // launch follows it to the interpreter it runs.
    let app = python_shop().join("app.py");
    let (id, launched) = launch(&c, python, json!([app])).await;
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    assert!(
        st["binaryPath"].as_str().unwrap().contains("python3"),
        "the interpreter, not a shim: {st} {launched}"
    );
    let out: Vec<String> = c
        .events(&id, Some("stdout"))
        .await
        .iter()
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(out[0], "8.5", "{out:?}");

    // Typed arguments, by name, of every kind the fixture passes.
    let enters = c
        .calls_of(&id, "function_enter", "inventory.apply_discount")
        .await;
    assert_eq!(
        enters.len(),
        3,
        "two calls on the main thread, one in a thread: {enters:?}"
    );
    let args = &enters[0]["arguments"];
    assert_eq!(args[0]["name"], "item", "{args}");
    assert_eq!(args[0]["type"], "Item");
    assert_eq!(args[0]["value"]["$type"], "Item");
    assert_eq!(args[0]["value"]["name"], "widget");
    assert_eq!(args[0]["value"]["price"], 10.0);
    assert_eq!(args[0]["value"]["tags"], json!(["x", "y"]));
    assert_eq!(args[1]["name"], "percent");
    assert_eq!(args[1]["value"], 15);
    assert_eq!(args[2]["name"], "extra");
    assert_eq!(args[2]["value"], json!(["a"]));
    assert_eq!(args[3]["name"], "opts");
    assert_eq!(args[3]["value"], json!({"k": "b'\\x00\\xff'"}));
    assert!(
        enters[0]["sourceFile"]
            .as_str()
            .unwrap()
            .ends_with("inventory.py"),
        "{}",
        enters[0]
    );
    assert_eq!(enters[0]["line"], 26, "the def line: {}", enters[0]);
    let main_tid = &enters[0]["threadId"];
    assert_ne!(
        &enters[2]["threadId"], main_tid,
        "the restocker thread's call"
    );

    // Return values, and the exception that left the second call.
    let exits = c
        .calls_of(&id, "function_exit", "inventory.apply_discount")
        .await;
    assert_eq!(exits[0]["returnValue"], 8.5, "{exits:?}");
    assert_eq!(exits[1]["exception"]["type"], "ValueError", "{exits:?}");
    assert_eq!(exits[2]["returnValue"], 5.0);
    // One exception event per raise, where it was raised: the one that
    // left apply_discount, and one int() raised inside parse_qty, which
    // caught it (no second event for leaving the frame it was raised in),
    // and reconcile's below.
    let raised = c.events(&id, Some("exception")).await;
    assert_eq!(raised.len(), 3, "{raised:?}");
    assert_eq!(raised[2]["function"], "inventory.reconcile", "{raised:?}");
    assert_eq!(raised[0]["exceptionType"], "ValueError");
    assert_eq!(raised[0]["message"], "discount 150% over 100");
    assert_eq!(raised[0]["function"], "inventory.apply_discount");
    assert_eq!(raised[0]["line"], 28, "the raise statement: {raised:?}");
    assert_eq!(raised[1]["exceptionType"], "ValueError");
    assert_eq!(raised[1]["function"], "inventory.parse_qty");
    assert_eq!(raised[1]["line"], 75, "int(text): {raised:?}");
    assert!(
        raised[1]["message"]
            .as_str()
            .unwrap()
            .contains("invalid literal for int()"),
        "{raised:?}"
    );
    let parsed = c
        .calls_of(&id, "function_exit", "inventory.parse_qty")
        .await;
    assert_eq!(parsed[0]["returnValue"], 0, "caught inside: {parsed:?}");

    // Argument names too long for the tracer's per-function copy (written
    // call by call instead), and each kind of return value an exit record
    // carries without a payload, beside one that needs it (a big int).
    let rec_in = c
        .calls_of(&id, "function_enter", "inventory.reconcile")
        .await;
    assert_eq!(
        argument_names(&rec_in[0]),
        [
            "warehouse_location_identifier",
            "expected_quantity_on_hand",
            "counted_quantity_on_shelf",
            "notes",
            "flags"
        ],
        "{rec_in:?}"
    );
    assert_eq!(rec_in[0]["arguments"][2]["value"], 2);
    assert_eq!(rec_in[2]["arguments"][3]["value"], json!(["recount"]));
    assert_eq!(rec_in[1]["arguments"][4]["value"], json!({"check": true}));
    let rec_out = c
        .calls_of(&id, "function_exit", "inventory.reconcile")
        .await;
    let returned: Vec<(&Value, &Value)> = rec_out
        .iter()
        .map(|e| (&e["returnValue"], &e["returnType"]))
        .collect();
    assert_eq!(
        returned[..3],
        [
            (&json!(-3), &json!("int")),
            (&json!(true), &json!("bool")),
            (&Value::Null, &json!("NoneType"))
        ],
        "{rec_out:?}"
    );
    assert_eq!(returned[3].1, "int", "{rec_out:?}");
    // An exception leaving a function with no watches (no return value).
    assert_eq!(
        rec_out[4]["exception"]["type"], "LookupError",
        "{rec_out:?}"
    );
    let negative = c
        .query_all(
            &id,
            json!({"eventType": "function_exit", "function": {"equals": "inventory.reconcile"},
                   "returnValue": {"equals": -3}}),
        )
        .await;
    assert_eq!(
        negative.len(),
        1,
        "an inline exit's value is indexed: {negative:?}"
    );

    // Watches: evaluated in the function's globals with its arguments at
    // enter and its final locals and retval at exit, only where `on` says.
    assert_eq!(enters[0]["watchValues"]["twice"], 30, "{}", enters[0]);
    assert!(
        enters[0]["watchValues"].get("held").is_none(),
        "{}",
        enters[0]
    );
    let w = &parsed[0]["watchValues"];
    assert_eq!(w["next"], 1, "{w}");
    assert!(
        w["broken"].as_str().unwrap().contains("does not compile"),
        "{w}"
    );
    let add_in = c.calls_of(&id, "function_enter", "inventory.Bin.add").await;
    let add_out = c.calls_of(&id, "function_exit", "inventory.Bin.add").await;
    assert_eq!(add_in[0]["watchValues"]["held"], 0, "{add_in:?}");
    assert_eq!(add_out[0]["watchValues"]["held"], 1, "{add_out:?}");
    // Filters work on Python events like on native ones.
    let fast = c
        .query_all(
            &id,
            json!({"eventType": "function_exit", "returnValue": {"equals": 8.5}}),
        )
        .await;
    assert_eq!(fast.len(), 1, "{fast:?}");

    // Methods by qualname; `self` is the instance with its attributes.
    let adds = c.calls_of(&id, "function_enter", "inventory.Bin.add").await;
    assert_eq!(adds[0]["arguments"][0]["value"]["label"], "A1", "{adds:?}");
    assert_eq!(adds[0]["arguments"][2]["value"], 3);
    let inits = c
        .calls_of(&id, "function_exit", "inventory.Bin.__init__")
        .await;
    assert_eq!(inits.len(), 1, "Bin.* covers __init__: {inits:?}");

    // A generator: one enter when created, one exit when it finished (not
    // one per yield), paired although other calls ran in between.
    let gen_in = c
        .calls_of(&id, "function_enter", "inventory.countdown")
        .await;
    let gen_out = c
        .calls_of(&id, "function_exit", "inventory.countdown")
        .await;
    assert_eq!(
        (gen_in.len(), gen_out.len()),
        (1, 1),
        "{gen_in:?} {gen_out:?}"
    );
    assert_eq!(gen_in[0]["arguments"][0]["value"], 3);
    assert_eq!(gen_in[0]["watchValues"]["tens"], 30, "{gen_in:?}");
    assert_eq!(
        gen_out[0]["watchValues"]["tens"], 0,
        "its final n: {gen_out:?}"
    );
    assert!(
        gen_out[0]["durationNs"].as_u64().unwrap() > 0,
        "{gen_out:?}"
    );

    // Code made at run time, matched by its function's module and qualname
    // when it first ran: the __init__ @dataclass generated, and an exec'd
    // function.
    let init = c
        .calls_of(&id, "function_enter", "inventory.Item.__init__")
        .await;
    assert_eq!(init.len(), 1, "{init:?}");
    assert_eq!(argument_names(&init[0]), ["self", "name", "price", "tags"]);
    assert_eq!(init[0]["arguments"][1]["value"], "widget");
    let total = c
        .calls_of(&id, "function_exit", "inventory.dynamic_total")
        .await;
    assert_eq!(total.len(), 1, "{total:?}");
    assert_eq!(total[0]["returnValue"], 6);
    assert_eq!(total[0]["sourceFile"], "<string>");

    // A decorated function (its own body, under its decorator's line, as
    // CPython numbers it) and a function nested in another.
    let restock = c.calls_of(&id, "function_exit", "inventory.restock").await;
    assert_eq!(restock[0]["returnValue"], 8, "{restock:?}");
    assert_eq!(restock[0]["line"], 52, "the decorator's line: {restock:?}");
    let price = c
        .calls_of(&id, "function_exit", "inventory.make_pricer.<locals>.price")
        .await;
    assert_eq!(price[0]["returnValue"], 15, "{price:?}");

    // Coroutines: one enter when called, one exit when finished, paired
    // although the event loop interleaved them; the duration covers the
    // awaits.
    let fetch_in = c
        .calls_of(&id, "function_enter", "inventory.fetch_price")
        .await;
    let fetch_out = c
        .calls_of(&id, "function_exit", "inventory.fetch_price")
        .await;
    assert_eq!(
        (fetch_in.len(), fetch_out.len()),
        (2, 2),
        "{fetch_in:?} {fetch_out:?}"
    );
    let slow = fetch_out
        .iter()
        .find(|e| e["returnValue"] == 6.5)
        .unwrap_or_else(|| panic!("{fetch_out:?}"));
    assert!(
        slow["durationNs"].as_u64().unwrap() >= 50_000_000,
        "the 50 ms await is inside the call: {slow}"
    );
    assert!(fetch_out.iter().any(|e| e["returnValue"] == 4.5));
    assert_eq!(
        slow["watchValues"]["what"],
        json!(["widget", 6.5]),
        "{slow}"
    );
    assert!(
        fetch_in.iter().any(|e| e["watchValues"]["what"] == "gear"),
        "{fetch_in:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn python_patterns_are_checked_and_explained() {
    let env = Env::new();
    let c = env.client().await;
    // A script whose shebang names python runs under that interpreter.
    let dir = env.path().join("scripts");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("loop.py");
    std::fs::write(
        &script,
        "#!/usr/bin/env python3\nimport sys, time\n\ndef tick(i):\n    return i * 2\n\n\
         for i in range(3000):\n    tick(i)\n    time.sleep(0.01)\nprint('done')\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let v = c
        .ok(
            "debug_launch",
            json!({"command": script, "projectRoot": dir}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    // Live add on a running interpreter, then remove.
    let added = c
        .ok(
            "debug_trace",
            json!({"sessionId": id, "add": ["loop.tick"]}),
        )
        .await;
    assert_eq!(added["hookedFunctions"], 1, "{added}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let n = c.calls_of(&id, "function_exit", "loop.tick").await.len();
        if n >= 3 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no calls of loop.tick recorded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let exits = c.calls_of(&id, "function_exit", "loop.tick").await;
    let i = exits[0]["returnValue"].as_i64().unwrap();
    assert_eq!(i % 2, 0, "{exits:?}");
    let removed = c
        .ok(
            "debug_trace",
            json!({"sessionId": id, "remove": ["loop.tick"]}),
        )
        .await;
    assert_eq!(removed["hookedFunctions"], 0, "{removed}");
    // Native syntax on Python code matches nothing and says what to write.
    let wrong = c
        .ok(
            "debug_trace",
            json!({"sessionId": id, "add": ["loop::tick"]}),
        )
        .await;
    let warnings = wrong["warnings"].to_string();
    assert!(warnings.contains("loop.tick"), "{wrong}");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

/// sys.monitoring has six tool ids; a program whose own tools took them
/// all gets a clear refusal, not a hang or a half-installed tracer, and
/// runs on.
#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_312),
    ignore = "needs CPython 3.12 (pyenv install 3.12): not found when the tests were built"
)]
async fn no_free_sys_monitoring_tool_id_is_a_clear_refusal() {
    let python = pyenv_python("3.12");
    let env = Env::new();
    let c = env.client().await;
    let dir = env.path().join("tools");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("greedy.py"),
        "import sys, time\n\nfor t in range(6):\n    sys.monitoring.use_tool_id(t, f'tool{t}')\n\n\n\
         def tick(i):\n    return i\n\n\nfor i in range(3000):\n    tick(i)\n    print(i, flush=True)\n    \
         time.sleep(0.01)\n",
    )
    .unwrap();
    let v = c
        .ok(
            "debug_launch",
            json!({"command": python, "args": [dir.join("greedy.py")], "projectRoot": dir}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.wait_stdout(&id).await;
    let r = c
        .reply(
            "debug_trace",
            json!({"sessionId": id, "add": ["greedy.tick"]}),
        )
        .await;
    assert!(
        r.text.contains("sys.monitoring has no free tool id")
            && r.text
                .contains("matched 1 function(s), but none could be hooked"),
        "{}",
        r.text
    );
    let before = c.stdout_lines(&id).await.len();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(c.stdout_lines(&id).await.len() > before, "it runs on");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_310),
    ignore = "needs CPython 3.10 (pyenv install 3.10): not found when the tests were built"
)]
async fn an_interpreter_the_tracer_has_no_layouts_for_is_named_in_the_warning() {
    // CPython 3.10 from this machine's pyenv; the tracer knows the internal
    // layouts of 3.11 to 3.13 only and must say so, not misread.
    let py310 = pyenv_python("3.10");
    let env = Env::new();
    let c = env.client().await;
    let dir = env.path().join("py310");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("slow.py"),
        "import time\n\n\ndef tick():\n    return 1\n\n\nfor _ in range(3000):\n    tick()\n    time.sleep(0.01)\n",
    )
    .unwrap();
    let v = c
        .ok(
            "debug_launch",
            json!({"command": py310, "args": [dir.join("slow.py")], "projectRoot": dir}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let r = c
        .ok(
            "debug_trace",
            json!({"sessionId": id, "add": ["slow.tick"]}),
        )
        .await;
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("CPython 3.10.")
            && warnings.contains(
                "is not supported by the Python tracer yet (supported: 3.11, 3.12, 3.13)"
            ),
        "{r}"
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}
