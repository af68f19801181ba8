//! debug_memory end to end: DWARF-typed reads and writes of a running
//! program's globals through MCP, raw addresses, bytes files, per-target
//! errors, and polling into variable_snapshot events.

mod support;

use serde_json::{Value, json};

use std::time::Duration;
use support::{Env, fixture};

#[tokio::test(flavor = "multi_thread")]
async fn globals_are_read_written_and_polled_in_a_running_program() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("typed");
    // No rounds, then a long sleep: the globals keep their initial values.
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": ["0", "120"], "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();

    let read = |targets: Value, depth: u32| {
        let c = &c;
        let id = id.clone();
        async move {
            c.ok(
                "debug_memory",
                json!({"sessionId": id, "targets": targets, "depth": depth}),
            )
            .await["results"]
                .as_array()
                .unwrap()
                .clone()
        }
    };
    let r = read(
        json!([
            {"variable": "g_counter"},
            {"variable": "g_ratio"},
            {"variable": "g_config"},
            {"variable": "g_config_ptr->level"},
            {"variable": "g_config.name"},
            {"variable": "no_such_global"},
            {"address": "0x10", "type": "u32"}
        ]),
        2,
    )
    .await;
    assert_eq!(r[0]["value"], 0, "{r:?}");
    assert_eq!(r[0]["type"], "int");
    assert_eq!(r[1]["value"], 0.5);
    let cfg = &r[2]["value"];
    assert_eq!(cfg["level"], 3, "{cfg}");
    assert_eq!(cfg["verbose"], true);
    assert_eq!(cfg["tint"], "GREEN");
    assert_eq!(cfg["weights"], json!([7, 8, 9]));
    assert_eq!(r[3]["value"], 3, "through the pointer");
    assert_eq!(r[4]["value"], "global", "char * followed to its string");
    // One bad target does not fail the others.
    assert!(
        r[5]["error"]
            .as_str()
            .unwrap()
            .contains("no global or static variable"),
        "{r:?}"
    );
    assert!(
        r[6]["error"].as_str().unwrap().contains("not mapped"),
        "{r:?}"
    );

    // Raw reads at the global's address, typed and as bytes (to a file).
    let addr = r[0]["address"].as_str().unwrap().to_string();
    let raw = read(
        json!([
            {"address": addr, "type": "i32"},
            {"address": addr, "type": "bytes", "size": 8}
        ]),
        1,
    )
    .await;
    assert_eq!(raw[0]["value"], 0);
    let file = raw[1]["file"].as_str().unwrap();
    assert_eq!(std::fs::read(file).unwrap().len(), 8);
    assert!(
        file.starts_with(env.home.path().to_str().unwrap()),
        "{file}"
    );
    assert_eq!(raw[1]["preview"].as_str().unwrap().split(' ').count(), 8);

    // Writes: typed, returning previous and new values; bad values refused.
    let w = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "action": "write", "targets": [
                {"variable": "g_counter", "value": 42},
                {"variable": "g_ratio", "value": 1.25},
                {"variable": "g_config.tint", "value": "BLUE"},
                {"variable": "g_config.verbose", "value": false},
                {"variable": "g_config.level", "value": 5_000_000_000u64},
                {"variable": "g_config", "value": 1},
                {"variable": "g_config.tint", "value": "PURPLE"},
                {"variable": "g_config.mode", "value": 1}
            ]}),
        )
        .await;
    let w = w["results"].as_array().unwrap();
    assert_eq!(
        (&w[0]["previousValue"], &w[0]["newValue"]),
        (&json!(0), &json!(42)),
        "{w:?}"
    );
    assert_eq!(w[1]["newValue"], 1.25);
    assert_eq!(
        (&w[2]["previousValue"], &w[2]["newValue"]),
        (&json!("GREEN"), &json!("BLUE"))
    );
    assert_eq!(w[3]["newValue"], false);
    assert!(
        w[4]["error"].as_str().unwrap().contains("does not fit"),
        "{w:?}"
    );
    assert!(
        w[5]["error"].as_str().unwrap().contains("only scalars"),
        "{w:?}"
    );
    assert!(w[6]["error"].as_str().unwrap().contains("BLUE"), "{w:?}");
    assert!(
        w[7]["error"].as_str().unwrap().contains("bitfield"),
        "{w:?}"
    );
    let raw_write = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "action": "write", "targets": [{"address": addr, "type": "i32", "value": 7}]}),
        )
        .await;
    assert_eq!(raw_write["results"][0]["previousValue"], 42);
    let again = read(
        json!([{"variable": "g_counter"}, {"variable": "g_config"}]),
        1,
    )
    .await;
    assert_eq!(again[0]["value"], 7);
    assert_eq!(again[1]["value"]["tint"], "BLUE");
    assert_eq!(
        again[1]["value"]["level"], 3,
        "the refused write left it alone"
    );

    // Poll: returns at once; samples land on the timeline.
    let p = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"variable": "g_counter"}], "poll": {"intervalMs": 50, "durationMs": 400}}),
        )
        .await;
    assert_eq!(p["polling"], true);
    assert_eq!(p["expectedSamples"], 8);
    let mut snaps = Vec::new();
    for _ in 0..100 {
        snaps = c.events(&id, Some("variable_snapshot")).await;
        if snaps.len() >= 8 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(snaps.len() >= 7, "{snaps:?}");
    assert!(
        snaps
            .iter()
            .all(|s| s["target"] == "g_counter" && s["value"] == 7)
    );
    let ts: Vec<u64> = snaps
        .iter()
        .map(|s| s["timestampNs"].as_u64().unwrap())
        .collect();
    assert!(ts.windows(2).all(|w| w[1] >= w[0] + 30_000_000), "{ts:?}");

    // Bad requests get actionable errors.
    for (args, needle) in [
        (json!({"targets": []}), "1–16"),
        (
            json!({"targets": [{"variable": "g_counter"}], "depth": 9}),
            "'depth'",
        ),
        (
            json!({"targets": [{"variable": "g_counter"}], "action": "zap"}),
            "\"read\" or \"write\"",
        ),
        (
            json!({"targets": [{"variable": "g_counter"}], "action": "write"}),
            "'value'",
        ),
        (
            json!({"targets": [{"variable": "g_counter"}], "poll": {"intervalMs": 1, "durationMs": 100}}),
            "intervalMs 50–5000",
        ),
    ] {
        let mut args = args;
        args["sessionId"] = json!(id);
        let e = c.reply("debug_memory", args.clone()).await;
        assert!(e.is_error, "{args} must be refused");
        assert!(
            e.error_text().contains(needle),
            "{args}: {}",
            e.error_text()
        );
    }
    c.ok(
        "debug_session",
        json!({"action": "stop", "sessionId": id, "retain": true}),
    )
    .await;
    let gone = c
        .reply(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"variable": "g_counter"}]}),
        )
        .await;
    assert!(
        gone.is_error && gone.error_text().contains("PROCESS_EXITED"),
        "{}",
        gone.error_text()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_requests_and_writes_into_code_are_errors() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("typed");
    let (id, pid) = c.launch(&exe, &["0", "120"]).await;

    // Every target failing is an error, naming each target's problem.
    let w = c
        .reply(
            "debug_memory",
            json!({"sessionId": id, "action": "write", "targets": [{"variable": "g_counter", "value": "abc"}]}),
        )
        .await;
    assert!(
        w.error_text().contains("nothing was written: g_counter:"),
        "{}",
        w.text
    );
    let r = c
        .reply(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"variable": "no_such_global"}, {"address": "0x10", "type": "u8"}]}),
        )
        .await;
    let e = r.error_text();
    assert!(
        e.contains("no_such_global: ") && e.contains("0x10: "),
        "{e}"
    );

    // A write into the program's code is refused unless asked for.
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let exe_path = exe.canonicalize().unwrap();
    let code = maps
        .lines()
        .find(|l| l.contains(" r-xp ") && l.ends_with(exe_path.to_str().unwrap()))
        .unwrap_or_else(|| panic!("no code mapping of {exe_path:?}: {maps}"));
    let addr = format!("0x{}", code.split('-').next().unwrap());
    // A bytes read shows its hex preview in the text, not only the file.
    let header = maps
        .lines()
        .find(|l| l.contains(" 00000000 ") && l.ends_with(exe_path.to_str().unwrap()))
        .unwrap();
    let header = format!("0x{}", header.split('-').next().unwrap());
    let bytes = c
        .reply(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"address": header, "type": "bytes", "size": 100}]}),
        )
        .await;
    assert!(
        bytes.text.contains("(100 bytes): 7f 45 4c 46 02 01 01")
            && bytes.text.contains(" … (all in /"),
        "the ELF header: {}",
        bytes.text
    );
    let target = |value: u64| json!([{"address": addr, "type": "u8", "value": value}]);
    let before = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"address": addr, "type": "u8"}]}),
        )
        .await["results"][0]["value"]
        .as_u64()
        .unwrap();
    let refused = c
        .reply(
            "debug_memory",
            json!({"sessionId": id, "action": "write", "targets": target(0xcc)}),
        )
        .await;
    let e = refused.error_text();
    assert!(
        e.contains("executable code") && e.contains("allowCodeWrite: true"),
        "{e}"
    );
    let after = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"address": addr, "type": "u8"}]}),
        )
        .await;
    assert_eq!(after["results"][0]["value"], before, "left alone");
    assert_eq!(c.status(&id).await["state"], "running");
    // Asked for explicitly, it is written (the same byte, so the program
    // runs on).
    let allowed = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "action": "write", "allowCodeWrite": true, "targets": target(before)}),
        )
        .await;
    assert_eq!(allowed["results"][0]["newValue"], before, "{allowed}");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn arrays_cut_by_the_depth_limit_are_summarized_once() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("store");
    let (id, _pid) = c.launch(&exe, &["60"]).await;
    let r = c
        .reply(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"variable": "g_store.spare"}, {"variable": "g_store"}], "depth": 1}),
        )
        .await;
    let spare = &r.value["results"][0];
    let addr = spare["address"].as_str().unwrap();
    let want = format!("[64 × account] @{addr} (depth limit: ask for g_store.spare[i] or depth 2)");
    assert_eq!(spare["value"], want, "{}", r.value);
    assert!(r.text.contains(&want), "{}", r.text);
    assert_eq!(
        r.value["results"][1]["value"]["spare"], "<account[64]: depth limit>",
        "{}",
        r.value
    );
    let deeper = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "targets": [{"variable": "g_store"}, {"variable": "g_store.spare"}], "depth": 2}),
        )
        .await;
    assert_eq!(
        deeper["results"][0]["value"]["spare"],
        format!("[64 × account] @{addr} (depth limit: ask for g_store.spare[i] or depth 3)"),
        "{deeper}"
    );
    assert_eq!(deeper["results"][1]["value"][1]["balance"], -52, "{deeper}");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

/// `a[i]`, `p->items[i].name` and `a[2:5]` in debug_memory and watches:
/// elements read at their offsets (through pointers where the path goes
/// through one), bounds checked against the DWARF array, errors that say
/// what is wrong and what is accepted.
#[tokio::test(flavor = "multi_thread")]
async fn indexed_paths_and_slices_read_elements_with_bounds_checked() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("store");
    let (id, _pid) = c.launch(&exe, &["60"]).await;
    let r = c
        .reply(
            "debug_memory",
            json!({"sessionId": id, "targets": [
                {"variable": "g_store.spare[1]"},
                {"variable": "g_store.spare[1].name"},
                {"variable": "g_store_ptr->spare[0].balance"},
                {"variable": "g_ledger_ptr->items[1].name"},
                {"variable": "g_scores[2:5]"},
                {"variable": "g_store.spare[0:2]"},
                {"variable": "g_big[10:160]"},
                {"variable": "g_store.spare[64]"},
                {"variable": "g_store.spare[60:70]"},
                {"variable": "g_store.count[1]"},
                {"variable": "g_scores[-1]"},
                {"variable": "g_store.spare[12]"}
            ]}),
        )
        .await;
    let res = r.value["results"].as_array().unwrap();
    let spare1 = &res[0];
    assert_eq!(spare1["type"], "account", "{spare1}");
    assert_eq!(spare1["value"]["balance"], -52, "{spare1}");
    assert_eq!(res[1]["value"], "bob", "{}", res[1]);
    assert_eq!(res[2]["value"], 10, "{}", res[2]);
    assert_eq!(res[3]["value"], "bob", "through two pointers: {}", res[3]);
    assert_eq!(res[4]["value"], json!([12, 13, 14]), "{}", res[4]);
    assert_eq!(res[4]["type"], "int[3]");
    // A slice shows its elements as the depth shows one value.
    let two = &res[5]["value"];
    assert_eq!(
        (two[0]["balance"].clone(), two[1]["balance"].clone()),
        (json!(10), json!(-52)),
        "{two}"
    );
    // A slice longer than a read shows is cut, saying how to get the rest.
    let big = res[6]["value"].as_array().unwrap();
    assert_eq!(big.len(), 101, "{}", res[6]);
    assert_eq!(
        big[100],
        "… 50 more (a read shows 100): ask for g_big[110:160]"
    );
    assert_eq!(
        res[7]["error"],
        "[64] in \"g_store.spare[64]\" is past the end: g_store.spare has 64 elements (0..63)"
    );
    let e = res[8]["error"].as_str().unwrap();
    assert!(
        e.contains("ends past the end: g_store.spare has 64 elements (0..63); g_store.spare[60:64] reads to the end"),
        "{e}"
    );
    let e = res[9]["error"].as_str().unwrap();
    assert!(
        e.contains(
            "g_store.count (int) is neither an array nor a pointer, so it cannot be indexed"
        ),
        "{e}"
    );
    let e = res[10]["error"].as_str().unwrap();
    assert!(
        e.contains("bad index \"-1\"") && e.contains("[index] and a last [start:end] slice"),
        "the accepted syntax: {e}"
    );
    // The depth limit's hint names a path that now reads.
    assert_eq!(res[11]["value"]["balance"], 0, "{}", res[11]);
    assert!(r.text.contains("g_scores[2:5] @ 0x"), "{}", r.text);

    // Watches take the same paths: a constant index is an offset, through
    // pointers a dereference; a slice is read whole.
    let t = c
        .ok(
            "debug_trace",
            json!({"sessionId": id, "add": ["balance_of"], "watches": {"add": [
                {"variable": "g_ledger_ptr->items[1].name", "label": "second"},
                {"variable": "g_scores[2:5]", "label": "mid"},
                {"variable": "g_store.spare[1].balance"}
            ]}}),
        )
        .await;
    assert_eq!(t["activeWatches"][1]["type"], "int[3]", "{t}");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let w = loop {
        let v = c
            .ok(
                "debug_query",
                json!({"sessionId": id, "eventType": "function_enter", "function": {"equals": "balance_of"}, "verbose": true}),
            )
            .await;
        if let Some(e) = v["events"].as_array().and_then(|e| e.first()) {
            break e["watchValues"].clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no call of balance_of: {v}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(w["second"], "bob", "{w}");
    assert_eq!(w["mid"], json!([12, 13, 14]), "{w}");
    assert_eq!(w["g_store.spare[1].balance"], -52, "{w}");
    // Refused: past the end, and a slice longer than one plan read holds.
    for (watch, want) in [
        ("g_scores[8]", "g_scores has 8 elements (0..7)"),
        ("g_big[0:300]", "watch g_big[0:100]"),
    ] {
        let e = c
            .reply(
                "debug_trace",
                json!({"sessionId": id, "watches": {"add": [{"variable": watch}]}}),
            )
            .await;
        assert!(e.error_text().contains(want), "{watch}: {}", e.text);
    }
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

/// A paused frame's locals take the same paths: an array on the stack, a
/// pointer parameter indexed through, a slice.
#[tokio::test(flavor = "multi_thread")]
async fn paused_locals_take_indices_and_slices() {
    let env = Env::new();
    let c = env.client().await;
    let exe = fixture("store");
    let (id, _pid) = c.launch(&exe, &["60"]).await;
    let line = include_str!("fixtures/store.c")
        .lines()
        .position(|l| l.contains("@balance-return"))
        .unwrap()
        + 1;
    c.ok(
        "debug_breakpoint",
        json!({"sessionId": id, "add": [{"file": "store.c", "line": line}]}),
    )
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let thread = loop {
        let s = c.status(&id).await;
        if let Some(p) = s["pausedThreads"].as_array().and_then(|p| p.first()) {
            break p["threadId"].clone();
        }
        assert!(std::time::Instant::now() < deadline, "not paused: {s}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let r = c
        .ok(
            "debug_memory",
            json!({"sessionId": id, "threadId": thread, "targets": [
                {"variable": "i"},
                {"variable": "window[1]"},
                {"variable": "window[1:3]"},
                {"variable": "l->items[1].balance"},
                {"variable": "l[0].n"},
                {"variable": "window[3]"}
            ]}),
        )
        .await;
    let res = r["results"].as_array().unwrap();
    let i = res[0]["value"].as_i64().unwrap();
    assert_eq!(res[1]["value"], i + 1, "{r}");
    assert_eq!(res[1]["local"], true, "{r}");
    assert_eq!(res[2]["value"], json!([i + 1, i + 2]), "{r}");
    assert_eq!(res[3]["value"], -52, "{r}");
    assert_eq!(res[4]["value"], 2, "{r}");
    assert_eq!(
        res[5]["error"], "[3] in \"window[3]\" is past the end: window has 3 elements (0..2)",
        "{r}"
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}
