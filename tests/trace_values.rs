//! Typed values end to end: arguments, return values and watches decoded
//! from DWARF (optimized C, C++ and Rust too), C strings, and the
//! validation of watch requests. Real targets under real Frida, through MCP.

mod support;

use serde_json::{Value, json};
use std::path::Path;
use support::{Client, Env, fixture};

async fn trace(c: &Client, args: Value) -> Value {
    c.ok("debug_trace", args).await
}

/// Pages through every event matching `filter`.
async fn all(c: &Client, id: &str, filter: Value) -> Vec<Value> {
    c.query_all(id, filter).await
}

#[tokio::test(flavor = "multi_thread")]
async fn optimized_c_cpp_and_rust_are_traced_with_typed_arguments() {
    let env = Env::new();
    let c = env.client().await;
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .canonicalize()
        .unwrap();
    // -O2 -g C: parameters found through their DWARF locations at entry.
    let typed = support::compile_with("typed.c", "gcc", &["-g", "-O2"]);
    trace(&c, json!({"add": ["configure"]})).await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": typed, "args": ["1"], "projectRoot": fixtures}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    let cfg = c.calls_of(&id, "function_enter", "configure").await;
    let args = &cfg[0]["arguments"];
    assert_eq!(args[0]["value"]["name"], "local", "{cfg:?}");
    assert_eq!(args[0]["value"]["level"], 2);
    assert_eq!(args[1]["value"], "tracer");
    assert_eq!(args[2]["value"], "RED");
    assert_eq!(args[3]["value"], true);
    let exits = c.calls_of(&id, "function_exit", "configure").await;
    assert_eq!(exits[0]["returnValue"], 7);
    trace(&c, json!({"remove": ["configure"]})).await;

    // -O2 -g C++: inlined helpers vanish, the noinline ones keep typed
    // parameters (DWARF locations differ from -O0), and exceptions still
    // unwind through the hooks.
    let cpp = support::compile_with("trace_cpp.cpp", "g++", &["-g", "-O2"]);
    trace(&c, json!({"add": ["audio::io::*"]})).await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": cpp, "projectRoot": fixtures}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    let out = c.events(&id, Some("stdout")).await;
    assert!(
        out[0]["text"]
            .as_str()
            .unwrap()
            .ends_with("opened=2 failed=2"),
        "{out:?}"
    );
    let opens = c
        .calls_of(&id, "function_enter", "audio::io::open_device")
        .await;
    let ids: Vec<&Value> = opens.iter().map(|e| &e["arguments"][0]["value"]).collect();
    assert_eq!(ids, [0, 1, 2, 3], "{opens:?}");
    assert_eq!(opens[0]["arguments"][0]["name"], "id");
    let exits = c
        .calls_of(&id, "function_exit", "audio::io::open_device")
        .await;
    let returns: Vec<&Value> = exits.iter().map(|e| &e["returnValue"]).collect();
    assert_eq!(
        returns,
        [0, 20],
        "the throwing calls never return: {exits:?}"
    );
    trace(&c, json!({"remove": ["audio::io::*"]})).await;

    // Rust at opt-level 2: typed arguments of non-inlined functions, and a
    // panic unwinding through a traced function to catch_unwind.
    let rs = support::compile_with(
        "trace_rust.rs",
        "rustc",
        &["-g", "-C", "opt-level=2", "--edition", "2021"],
    );
    trace(&c, json!({"add": ["trace_rust::parser::deep::*"]})).await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": rs, "projectRoot": fixtures}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    let out = c.events(&id, Some("stdout")).await;
    assert_eq!(out[0]["text"], "3 1 9 9 caught=1", "{out:?}");
    let validate = c
        .calls_of(&id, "function_enter", "trace_rust::parser::deep::validate")
        .await;
    let ns: Vec<&Value> = validate
        .iter()
        .map(|e| &e["arguments"][0]["value"])
        .collect();
    assert_eq!(ns, [5, 2, 5], "{validate:?}");
    let divs = c
        .calls_of(
            &id,
            "function_enter",
            "trace_rust::parser::deep::checked_div",
        )
        .await;
    let args: Vec<(&Value, &Value)> = divs
        .iter()
        .map(|e| (&e["arguments"][0]["value"], &e["arguments"][1]["value"]))
        .collect();
    assert_eq!(
        args,
        [
            (&json!(6), &json!(0)),
            (&json!(6), &json!(1)),
            (&json!(6), &json!(2))
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn typed_arguments_returns_and_watches_from_dwarf() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("typed");
    // Staged before launch: hooked (and watches resolved) before main runs,
    // so no call is missed however slow the machine is.
    let t = trace(
        &c,
        json!({
            "add": ["configure", "mix", "offset", "sum_big", "walk", "describe", "find_config"],
            "serializationDepth": 3,
            "watches": {"add": [
                {"variable": "g_counter"},
                {"variable": "g_config_ptr->level", "label": "level"},
                {"variable": "g_config.name"},
                {"variable": "g_ratio", "on": ["touch"]},
                {"expr": "args[1].readCString()", "label": "labelArg", "on": ["configure"]},
                {"expr": "retval.toInt32() * 2", "label": "twice", "on": ["configure"]},
                {"expr": "nosuch.field", "label": "broken", "on": ["configure"]}
            ]}
        }),
    )
    .await;
    assert_eq!(t["mode"], "pending");
    let watches: Vec<&str> = t["activeWatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        watches,
        [
            "g_counter",
            "level",
            "g_config.name",
            "g_ratio",
            "labelArg",
            "twice",
            "broken"
        ]
    );
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": ["2"], "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let ended = c.wait_ended(&id).await;
    assert_eq!(
        ended["trace"]["hookedFunctions"], 8,
        "7 patterns + touch from the watch's on: {ended}"
    );
    assert_eq!(ended["exitCode"], 0, "{ended}");

    let cfg = c.calls_of(&id, "function_enter", "configure").await;
    assert_eq!(cfg.len(), 2, "{cfg:?}");
    let args = &cfg[0]["arguments"];
    assert_eq!(args[0]["name"], "cfg");
    assert_eq!(args[0]["type"], "config *");
    let local = &args[0]["value"];
    assert!(
        local["@addr"].as_str().unwrap().starts_with("0x7f"),
        "{local}"
    );
    assert_eq!(local["name"], "local");
    assert_eq!(local["level"], 2);
    assert_eq!(local["verbose"], false);
    assert_eq!(local["tint"], "BLUE");
    assert_eq!(local["weights"], json!([1, 2, 3]));
    assert_eq!(
        (local["flags"].clone(), local["mode"].clone()),
        (json!(2), json!(9))
    );
    assert_eq!(args[1]["value"], "tracer");
    assert_eq!(args[2]["value"], "RED");
    assert_eq!(args[3]["value"], true);
    // Watches: read at enter and exit of every traced function.
    let w = &cfg[0]["watchValues"];
    assert_eq!(w["level"], 3);
    assert_eq!(w["g_config.name"], "global");
    assert!(w.get("g_ratio").is_none(), "g_ratio is scoped to touch");
    // Expression watches: evaluated by the agent with args / retval bound;
    // a failing expression shows its error, the others are unaffected.
    assert_eq!(w["labelArg"], "tracer", "{w}");
    assert!(w["broken"].as_str().unwrap().starts_with("<error: "), "{w}");
    let cfg_exit = c.calls_of(&id, "function_exit", "configure").await;
    assert_eq!(cfg_exit[0]["returnValue"], 7, "strlen(\"tracer\") + RED");
    assert_eq!(cfg_exit[0]["watchValues"]["twice"], 14, "{}", cfg_exit[0]);
    assert_eq!(
        cfg_exit[0]["watchValues"]["g_counter"].as_i64().unwrap(),
        w["g_counter"].as_i64().unwrap() + 2,
        "configure adds cfg->level to g_counter between enter and exit"
    );
    let touch = c.calls_of(&id, "function_exit", "touch").await;
    assert_eq!(touch.len(), 2);
    assert_eq!(touch[0]["watchValues"]["g_ratio"], 1.0, "0.5 doubled");
    assert_eq!(touch[1]["watchValues"]["g_ratio"], 2.0);

    // Floats and chars in registers; doubles returned in xmm0.
    let mix = c.calls_of(&id, "function_enter", "mix").await;
    let vals: Vec<&Value> = mix[1]["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["value"])
        .collect();
    assert_eq!(
        vals,
        [&json!(1.5), &json!(2.0), &json!(1), &json!("'x' (120)")]
    );
    let mix_exit = c.calls_of(&id, "function_exit", "mix").await;
    assert_eq!(mix_exit[1]["returnValue"], 124.0);

    // Small structs in SSE registers, both ways; large ones on the stack.
    let off = c.calls_of(&id, "function_enter", "offset").await;
    assert_eq!(off[0]["arguments"][0]["value"], json!({"x": 1.0, "y": 2.0}));
    assert_eq!(off[0]["arguments"][1]["value"], 0.25);
    let off_exit = c.calls_of(&id, "function_exit", "offset").await;
    assert_eq!(off_exit[0]["returnValue"], json!({"x": 1.25, "y": 1.75}));
    let big = c.calls_of(&id, "function_enter", "sum_big").await;
    assert_eq!(
        big[0]["arguments"][0]["value"],
        json!({"a": 1, "b": 2, "c": 3, "d": 4})
    );
    assert_eq!(big[0]["arguments"][1]["value"], 2);

    // A cyclic list: followed to the depth limit, the cycle marked.
    let walk = c.calls_of(&id, "function_enter", "walk").await;
    let head = &walk[0]["arguments"][0]["value"];
    assert_eq!(head["value"], 1);
    assert_eq!(head["next"]["value"], 2);
    assert_eq!(head["next"]["next"]["value"], 3);
    assert_eq!(
        head["next"]["next"]["next"],
        json!(format!(
            "<circular ref to {}>",
            head["@addr"].as_str().unwrap()
        ))
    );

    // Unions, unreadable pointers, C-string returns.
    let desc = c.calls_of(&id, "function_enter", "describe").await;
    assert_eq!(desc[0]["arguments"][0]["value"]["i"], 42);
    assert_eq!(desc[0]["arguments"][2]["value"], Value::Null);
    assert_eq!(desc[1]["arguments"][2]["value"], "<unreadable 0x10>");
    let positive = all(
        &c,
        &id,
        json!({"eventType": "function_exit", "returnValue": {"equals": "no raw"}}),
    )
    .await;
    assert_eq!(
        positive.len(),
        2,
        "describe(u, 7, NULL) returns \"no raw\" each round"
    );

    // A returned pointer is followed; NULL is found by isNull.
    let found = c.calls_of(&id, "function_exit", "find_config").await;
    assert_eq!(found[0]["returnValue"]["name"], "global");
    assert_eq!(found[0]["returnValue"]["tint"], "GREEN");
    let nulls = all(
        &c,
        &id,
        json!({"eventType": "function_exit", "function": {"equals": "find_config"}, "returnValue": {"isNull": true}}),
    )
    .await;
    assert_eq!(nulls.len(), 2, "find_config(9) returns NULL each round");

    // The summary form stays small: scalar returns, no arguments.
    let summary = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "function": {"equals": "mix"}, "eventType": "function_exit"}),
        )
        .await;
    let e = &summary["events"][0];
    assert_eq!(e["returnValue"], 123.0);
    assert!(e.get("arguments").is_none() && e.get("watchValues").is_none());
    // Typed return values compare by value, also through chunk indexes:
    // mix returns the double 123.0 in round 0 (124.0 in round 1), found by
    // the integer 123.
    let by_value = all(
        &c,
        &id,
        json!({"eventType": "function_exit", "returnValue": {"equals": 123}}),
    )
    .await;
    assert_eq!(by_value.len(), 1, "{by_value:?}");
    assert_eq!(by_value[0]["function"], "mix");
    assert_eq!(by_value[0]["returnValue"], 123.0);
    // Every response says what it left out.
    let page = summary["events"].as_array().unwrap().len();
    assert_eq!(summary["truncated"]["valuesOmitted"], page, "{summary}");
    let one = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "function": {"equals": "describe"}, "eventType": "function_enter", "verbose": true, "limit": 1, "offset": 1}),
        )
        .await;
    let t = &one["truncated"];
    assert_eq!(t["notCaptured"], 1, "the unreadable pointer: {one}");
    assert_eq!(
        t["moreEvents"],
        one["totalCount"].as_u64().unwrap() - 2,
        "{one}"
    );
    assert!(
        t.get("valuesOmitted").is_none(),
        "verbose shows values: {one}"
    );

    // Plans are stored with the session: after the daemon dies (even
    // SIGKILL) the next daemon renders the same typed values.
    let before = all(&c, &id, json!({"eventType": "function_enter"})).await;
    support::signal(env.daemon_pid().unwrap(), 9);
    let after_restart = c
        .ok_after_daemon_restart(
            "debug_query",
            json!({"sessionId": id, "eventType": "function_enter", "limit": 500, "verbose": true}),
        )
        .await;
    let after = all(&c, &id, json!({"eventType": "function_enter"})).await;
    assert_eq!(after_restart["events"][0], before[0]);
    assert_eq!(after.len(), before.len());
    for (a, b) in after.iter().zip(&before) {
        assert_eq!(a["arguments"], b["arguments"], "{a} vs {b}");
        assert_eq!(a["watchValues"], b["watchValues"], "{a} vs {b}");
    }
    assert!(
        after.iter().any(|e| e["arguments"][0]["value"].is_object()),
        "structs are still decoded"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_requests_are_validated() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("typed");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": ["1", "120"], "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    for (watch, needle) in [
        (
            json!({"variable": "no_such_global"}),
            "no global or static variable",
        ),
        (json!({"variable": "g_config->level"}), "is not a pointer"),
        (json!({"variable": "g_config.nope"}), "has no member"),
        (json!({"variable": "a->b->c->d->e->f"}), "more than 4"),
        (
            json!({"address": "0x1000", "type": "u128"}),
            "is not one of",
        ),
        (json!({"address": "zz"}), "hex address"),
        (json!({"expr": "ptr(1).readU32("}), "does not compile"),
        (
            json!({"expr": "1", "variable": "g_counter"}),
            "one of 'variable'",
        ),
        (json!({}), "needs 'variable'"),
    ] {
        let r = c
            .reply(
                "debug_trace",
                json!({"sessionId": id, "watches": {"add": [watch]}}),
            )
            .await;
        assert!(r.is_error, "{watch} must be refused");
        assert!(
            r.error_text().contains(needle),
            "{watch}: {}",
            r.error_text()
        );
    }
    let r = c
        .reply(
            "debug_trace",
            json!({"sessionId": id, "serializationDepth": 11}),
        )
        .await;
    assert!(r.error_text().contains("1–10"));
    // The program sleeps 120 s: stop it (its events stay queryable).
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;

    // 32 watches work (staged, so the calls cannot be missed); the 33rd is
    // refused with what to do.
    let many: Vec<Value> = (0..32)
        .map(|i| json!({"address": format!("{:#x}", 0x1000 + i * 8), "type": "u64", "label": format!("w{i}")}))
        .collect();
    let t = trace(&c, json!({"add": ["touch"], "watches": {"add": many}})).await;
    assert_eq!(t["activeWatches"].as_array().unwrap().len(), 32);
    let r = c
        .reply(
            "debug_trace",
            json!({"watches": {"add": [{"address": "0x1000", "label": "w33"}]}}),
        )
        .await;
    assert!(r.error_text().contains("at most 32"), "{}", r.error_text());
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": ["1"], "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);
    let touch = c.calls_of(&id, "function_enter", "touch").await;
    let w = touch[0]["watchValues"].as_object().unwrap();
    assert_eq!(w.len(), 32, "all 32 watches are read in every call");
    assert_eq!(w["w0"], "<unreadable 0x1000>");
}

#[tokio::test(flavor = "multi_thread")]
async fn char_pointer_arguments_show_their_strings() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("cstrings");
    trace(&c, json!({"add": ["prepare", "spellings", "raw_bytes"]})).await;
    let (id, _) = c.launch(&exe, &[]).await;
    let ended = c.wait_ended(&id).await;
    assert_eq!(ended["exitCode"], 0, "{ended}");
    let values = |e: &Value| -> Vec<Value> {
        e["arguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["value"].clone())
            .collect()
    };
    // `sql` comes after a pointer to a 40-level struct graph that shares
    // its `const char` type (SQLite's sqlite3_prepare_v2(db, zSql, …)).
    let prepare = c.calls_of(&id, "function_enter", "prepare").await;
    let args = &prepare[0]["arguments"];
    assert_eq!(args[1]["type"], "char *", "{args}");
    assert_eq!(args[1]["value"], "SELECT 1", "{args}");
    assert_eq!(args[0]["value"]["tag"], "first", "{args}");
    let spell = c.calls_of(&id, "function_enter", "spellings").await;
    assert_eq!(
        values(&spell[0]),
        [
            "plain",
            "const",
            "volatile",
            "const volatile",
            "typedef char",
            "typedef ptr",
            "typedef const",
            "unsigned",
            "signed",
            "const unsigned"
        ],
        "{}",
        spell[0]
    );
    // Bytes that are not UTF-8 are marked, not replaced.
    let raw = c.calls_of(&id, "function_enter", "raw_bytes").await;
    assert_eq!(values(&raw[0]), ["caf\\xe9 \\xff!"], "{}", raw[0]);

    // Exit lines of the text read as the call, with its enter's arguments.
    let q = c
        .reply(
            "debug_query",
            json!({"sessionId": id, "eventType": "function_exit"}),
        )
        .await;
    let line = |f: &str| {
        q.text
            .lines()
            .find(|l| l.contains(&format!("function_exit: {f}(")))
            .unwrap_or_else(|| panic!("no exit line of {f}: {}", q.text))
            .to_string()
    };
    let raw_exit = line("raw_bytes");
    assert!(
        raw_exit.contains(r#"raw_bytes(bytes="caf\\xe9 \\xff!") -> 7 ("#),
        "{raw_exit}"
    );
    let prepare_exit = line("prepare");
    assert!(
        prepare_exit.contains("prepare(db=0x")
            && prepare_exit.contains(r#"sql="SELECT 1", n=3) -> 12 ("#),
        "{prepare_exit}"
    );
}
