//! debug_ui_action end to end: a real GTK3 program (Debian's Python + gi)
//! under real Frida on a private Xvfb with its own D-Bus and AT-SPI buses,
//! driven through MCP. Every action type is checked twice: by the
//! fixture's own stdout (it prints each change it sees) and by the tree.
//! Then: a custom-drawn knob learned, then set from the cached plan, which
//! survives a daemon restart; verification through a traced call; a
//! second toolkit (WebKitGTK); input refused on a display the session did
//! not start; bad ids and impossible actions.

mod support;

#[path = "gui_action/faults.rs"]
mod faults;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{Client, Env, ui_nodes as flatten};

/// Debian's Python: the one with python3-gi (pyenv's has no gi).
const PYTHON: &str = "/usr/bin/python3";

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gui/gtk_demo.py")
}

async fn launch(c: &Client, args: &[&str]) -> String {
    let mut all = vec![json!(demo())];
    all.extend(args.iter().map(|a| json!(a)));
    let v = c
        .ok(
            "debug_launch",
            json!({"command": PYTHON, "args": all, "projectRoot": demo().parent().unwrap(), "display": "virtual"}),
        )
        .await;
    v["sessionId"].as_str().unwrap().to_string()
}

/// The id of the node with `role` and `name` in a debug_ui answer.
fn id_of(ui: &Value, role: &str, name: &str) -> String {
    flatten(&ui["nodes"])
        .iter()
        .find(|n| n["role"] == role && n["name"] == name)
        .unwrap_or_else(|| panic!("no {role} [{name}] in {ui:#}"))["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Waits (up to 5 s) for a stdout line containing `needle`.
async fn printed(c: &Client, id: &str, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let lines = c.stdout_lines(id).await;
        if let Some(l) = lines.iter().find(|l| l.contains(needle)) {
            return l.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the program never printed {needle:?}; it printed {lines:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn act(c: &Client, id: &str, action: Value) -> Value {
    let r = c
        .reply(
            "debug_ui_action",
            json!({"sessionId": id, "action": action}),
        )
        .await;
    assert!(!r.is_error, "{action}: {}", r.text);
    assert_eq!(r.value["ok"], true, "{}", r.text);
    r.value
}

#[tokio::test(flavor = "multi_thread")]
async fn every_action_type_is_done_verified_and_seen_by_the_program() {
    let env = Env::new();
    let c = env.client().await;
    let id = launch(&c, &["--rows", "40", "--menu"]).await;
    let ui = c.ok("debug_ui", json!({"sessionId": id})).await;

    // click: the button's own action, seen as the program's output.
    let r = act(
        &c,
        &id,
        json!({"type": "click", "id": id_of(&ui, "push button", "Play")}),
    )
    .await;
    assert_eq!(r["method"], "native action (click)", "{r:#}");
    assert_eq!(r["verified"], true, "{r:#}");
    assert!(
        r["observed"].as_str().unwrap().contains("play clicked"),
        "{r:#}"
    );
    printed(&c, &id, "play clicked").await;

    // set_value on a slider: the value interface.
    let volume = id_of(&ui, "slider", "Volume");
    let r = act(
        &c,
        &id,
        json!({"type": "set_value", "id": volume, "value": 0.8}),
    )
    .await;
    assert_eq!(
        (r["method"].as_str(), r["verified"].as_bool()),
        (Some("value interface"), Some(true)),
        "{r:#}"
    );
    assert_eq!(r["before"]["value"], "0.5");
    assert_eq!(r["after"]["value"], "0.8");
    printed(&c, &id, "volume 0.8").await;

    // set_value on a check box (bool) and a combo box (item text).
    let r = act(
        &c,
        &id,
        json!({"type": "set_value", "id": id_of(&ui, "check box", "Loop"), "value": false}),
    )
    .await;
    assert_eq!(r["verified"], true, "{r:#}");
    assert!(
        !r["after"]["states"]
            .as_array()
            .unwrap()
            .contains(&json!("checked")),
        "{r:#}"
    );
    printed(&c, &id, "loop False").await;
    let r = act(
        &c,
        &id,
        json!({"type": "set_value", "id": id_of(&ui, "combo box", "Quality"), "value": "High"}),
    )
    .await;
    assert_eq!(r["verified"], true, "{r:#}");
    assert_eq!(r["after"]["value"], "High", "{r:#}");
    printed(&c, &id, "quality High").await;

    // type, replacing the text, then inserting at the caret.
    let title = id_of(&ui, "text", "Title");
    let r = act(
        &c,
        &id,
        json!({"type": "type", "id": title, "text": "world", "replace": true}),
    )
    .await;
    assert_eq!(
        (r["method"].as_str(), r["verified"].as_bool()),
        (Some("text interface"), Some(true)),
        "{r:#}"
    );
    assert_eq!(r["after"]["value"], "world");
    printed(&c, &id, "title world").await;
    let r = act(&c, &id, json!({"type": "type", "id": title, "text": "!"})).await;
    assert_eq!(r["verified"], true, "{r:#}");
    assert!(r["after"]["value"].as_str().unwrap().contains('!'), "{r:#}");

    // select a list row by its text.
    let tracks = id_of(&ui, "list box", "Tracks");
    let r = act(
        &c,
        &id,
        json!({"type": "select", "id": tracks, "item": "Track 2"}),
    )
    .await;
    assert_eq!(r["verified"], true, "{r:#}");
    printed(&c, &id, "selected Track 2").await;

    // select a menu's item: its own action, the menu left closed.
    let r = act(
        &c,
        &id,
        json!({"type": "select", "id": id_of(&ui, "menu", "File"), "item": "Open"}),
    )
    .await;
    assert_eq!(
        r["method"], "native action (click) on item \"Open\"",
        "{r:#}"
    );
    printed(&c, &id, "menu Open").await;

    // scroll the list: wheel input over it.
    let r = act(
        &c,
        &id,
        json!({"type": "scroll", "id": tracks, "direction": "down", "amount": 5}),
    )
    .await;
    assert_eq!(r["method"], "input plan (wheel)", "{r:#}");
    assert_eq!(r["verified"], true, "{r:#}");
    printed(&c, &id, "scrolled").await;

    // drag across the pad to a point right of where it starts.
    let pad = flatten(&ui["nodes"])
        .into_iter()
        .find(|n| n["name"] == "Pad")
        .expect("the pad");
    let (x, y) = (
        pad["bounds"]["x"].as_i64().unwrap() + 100,
        pad["bounds"]["y"].as_i64().unwrap() + 30,
    );
    let r = act(
        &c,
        &id,
        json!({"type": "drag", "from": pad["id"], "to": {"x": x, "y": y}}),
    )
    .await;
    assert_eq!(r["method"], "input plan (drag)", "{r:#}");
    assert_eq!(r["verified"], true, "{r:#}");
    let line = printed(&c, &id, "dragged").await;
    assert!(line.contains("-> 100,30 through"), "{line}");

    // key with modifiers, after focusing the entry: select all, copy.
    let r = act(
        &c,
        &id,
        json!({"type": "key", "key": "a", "modifiers": ["ctrl"], "id": title}),
    )
    .await;
    assert_eq!(r["verified"], true, "{r:#}");
    printed(&c, &id, "key ctrl+a").await;
    act(
        &c,
        &id,
        json!({"type": "key", "key": "c", "modifiers": ["ctrl"]}),
    )
    .await;
    printed(&c, &id, "key ctrl+c").await;
    // The text was "world" with "!" inserted at the caret.
    let copied = printed(&c, &id, "clipboard").await;
    assert!(copied.contains("world") && copied.contains('!'), "{copied}");

    // focus: native, verified by the focused state.
    let r = act(
        &c,
        &id,
        json!({"type": "focus", "id": id_of(&ui, "push button", "Stop")}),
    )
    .await;
    assert_eq!(r["verified"], true, "{r:#}");
    assert!(
        r["after"]["states"]
            .as_array()
            .unwrap()
            .contains(&json!("focused")),
        "{r:#}"
    );
    printed(&c, &id, "focus Stop").await;

    // Every action is on the timeline, between the snapshots around it.
    let actions = c.events(&id, Some("ui_action")).await;
    assert_eq!(actions.len(), 13, "{actions:#?}");
    let first = &actions[0];
    assert_eq!(first["action"], "click");
    assert!(
        first["snapshotAfter"].as_u64() > first["snapshotBefore"].as_u64(),
        "{first}"
    );
    let snaps = c.events(&id, Some("ui_snapshot")).await;
    assert!(snaps.len() >= 25, "{} snapshots", snaps.len());
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

/// The knob's id, found by vision.
async fn knob(c: &Client, id: &str) -> String {
    let r = c
        .ok("debug_ui", json!({"sessionId": id, "vision": true}))
        .await;
    flatten(&r["nodes"])
        .into_iter()
        .find(|n| n["role"] == "knob")
        .unwrap_or_else(|| panic!("vision found no knob: {r:#}"))["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_knob_with_no_accessible_value_is_learned_then_set_from_a_cache_that_survives_restarts() {
    let sidecar = Path::new(support::STROBE).with_file_name("strobe-vision");
    assert!(
        sidecar.is_file(),
        "build strobe-vision first (./dev test does)"
    );
    let env = Env::new();
    {
        let c = env.client().await;
        let id = launch(&c, &["--knob"]).await;
        let k = knob(&c, &id).await;
        // A painted toggle has no tree node and no value: a click on it is
        // verified by its pixels changing.
        let r = c
            .ok("debug_ui", json!({"sessionId": id, "vision": true}))
            .await;
        let toggle = flatten(&r["nodes"])
            .into_iter()
            .find(|n| n["role"] == "toggle")
            .unwrap_or_else(|| panic!("vision found no toggle: {r:#}"));
        let r = act(&c, &id, json!({"type": "click", "id": toggle["id"]})).await;
        assert_eq!(r["method"], "input plan (click)", "{r:#}");
        assert_eq!(r["verified"], true, "{r:#}");
        assert!(
            r["observed"].as_str().unwrap().contains("pixels changed"),
            "{r:#}"
        );
        printed(&c, &id, "toggle off").await;
        // First: no plan; strategies are tried and the value read back by
        // OCR of the knob's painted label.
        let r = act(&c, &id, json!({"type": "set_value", "id": k, "value": 3})).await;
        assert!(
            r["method"]
                .as_str()
                .unwrap()
                .starts_with("learned plan (vertical drag, "),
            "{r:#}"
        );
        assert_eq!(r["verified"], true, "{r:#}");
        assert!(r["observed"].as_str().unwrap().contains("→ 3"), "{r:#}");
        printed(&c, &id, "gain 3").await;
        // Second: the cached plan, read back through a watched variable.
        let r = c
            .reply(
                "debug_ui_action",
                json!({"sessionId": id, "action": {"type": "set_value", "id": k, "value": 8}, "verify": {"watch": "__main__.gain"}}),
            )
            .await;
        assert!(!r.is_error, "{}", r.text);
        assert!(
            r.value["method"]
                .as_str()
                .unwrap()
                .starts_with("cached plan (vertical drag, "),
            "{}",
            r.text
        );
        assert_eq!(r.value["verified"], true, "{}", r.text);
        assert!(r.text.contains("__main__.gain: 3 → 8"), "{}", r.text);
        printed(&c, &id, "gain 8").await;
        c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
            .await;
    }
    // The daemon restarts; the plan is in the store.
    let daemon = env.daemon_pid().expect("the daemon's pid");
    assert!(env.is_our_daemon(daemon));
    support::signal(daemon, libc::SIGTERM);
    assert!(env.wait_daemon_gone(daemon, Duration::from_secs(20)));
    let c = env.client().await;
    let id = launch(&c, &["--knob"]).await;
    let k = knob(&c, &id).await;
    let r = act(&c, &id, json!({"type": "set_value", "id": k, "value": 5})).await;
    assert!(
        r["method"]
            .as_str()
            .unwrap()
            .starts_with("cached plan (vertical drag, "),
        "{r:#}"
    );
    assert_eq!(r["verified"], true, "{r:#}");
    printed(&c, &id, "gain 5").await;
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_click_is_verified_by_the_traced_call_it_causes() {
    let env = Env::new();
    let c = env.client().await;
    let id = launch(&c, &[]).await;
    c.ok(
        "debug_trace",
        json!({"sessionId": id, "add": ["gtk_demo.on_play"]}),
    )
    .await;
    let ui = c.ok("debug_ui", json!({"sessionId": id})).await;
    let play = id_of(&ui, "push button", "Play");
    let r = c
        .reply(
            "debug_ui_action",
            json!({"sessionId": id, "action": {"type": "click", "id": play}, "verify": {"function": "on_play"}}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text);
    assert_eq!(r.value["verified"], true, "{}", r.text);
    assert!(r.text.contains("on_play called 1 time"), "{}", r.text);
    // A function not traced is named as the problem.
    let e = c
        .reply(
            "debug_ui_action",
            json!({"sessionId": id, "action": {"type": "click", "id": play}, "verify": {"function": "on_stop"}}),
        )
        .await;
    assert!(
        e.error_text().contains("names no traced function"),
        "{}",
        e.text
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webkit_page_takes_clicks_and_typing() {
    let env = Env::new();
    let c = env.client().await;
    let page = demo().with_file_name("web_demo.py");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": PYTHON, "args": [page], "projectRoot": page.parent().unwrap(), "display": "virtual"}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let mut ui = Value::Null;
    for _ in 0..100 {
        ui = c.ok("debug_ui", json!({"sessionId": id})).await;
        if flatten(&ui["nodes"])
            .iter()
            .any(|n| n["role"] == "entry" || (n["role"] == "text" && n["name"] == "Name"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let solo = id_of(&ui, "check box", "Solo");
    let r = act(&c, &id, json!({"type": "click", "id": solo})).await;
    assert_eq!(r["verified"], true, "{r:#}");
    assert!(
        r["method"].as_str().unwrap().starts_with("native action ("),
        "{r:#}"
    );
    assert!(
        !r["after"]["states"]
            .as_array()
            .unwrap()
            .contains(&json!("checked")),
        "{r:#}"
    );
    printed(&c, &id, "solo false").await;
    let name = flatten(&ui["nodes"])
        .into_iter()
        .find(|n| n["name"] == "Name" && (n["role"] == "entry" || n["role"] == "text"))
        .unwrap_or_else(|| panic!("no Name field: {ui:#}"));
    // WebKit's field refuses the text interface: typed by input, after a
    // click that gives it focus. Any Unicode: "é" and "✓" are on no key of
    // the display's US map, so they go through a spare keycode mapped for
    // the call.
    let r = act(
        &c,
        &id,
        json!({"type": "type", "id": name["id"], "text": "Ada é✓", "replace": true}),
    )
    .await;
    assert_eq!(r["verified"], true, "{r:#}");
    assert_eq!(r["method"], "input plan (type)", "{r:#}");
    printed(&c, &id, "name Ada é✓").await;
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn input_on_a_display_the_session_did_not_start_is_refused_without_the_setting() {
    // A display of the test's own, which the program inherits as if it
    // were a person's desktop.
    let display = strobe_ui::virtual_display::VirtualDisplay::start().expect("Xvfb");
    let env = Env::new();
    let c = env.client().await;
    let vars: serde_json::Map<String, Value> = display
        .env()
        .into_iter()
        .map(|(k, v)| (k, json!(v)))
        .collect();
    let v = c
        .ok(
            "debug_launch",
            json!({"command": PYTHON, "args": [demo()], "projectRoot": demo().parent().unwrap(), "env": vars}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let ui = c.ok("debug_ui", json!({"sessionId": id})).await;
    let play = id_of(&ui, "push button", "Play");
    // Input (a right click) is refused, and the reply says how to allow it.
    let e = c
        .reply(
            "debug_ui_action",
            json!({"sessionId": id, "action": {"type": "click", "id": play, "button": "right"}}),
        )
        .await;
    let msg = e.error_text();
    assert!(
        msg.contains("ui.allowInputOnUserDisplay") && msg.contains("display: \"virtual\""),
        "{msg}"
    );
    // The refusal is on the timeline too.
    let refused = c.events(&id, Some("ui_action")).await;
    assert!(
        refused.iter().any(|e| e["ok"] == false
            && e["error"]
                .as_str()
                .is_some_and(|m| m.contains("ui.allowInputOnUserDisplay"))),
        "{refused:#?}"
    );
    // So is a desktop key, whatever the setting.
    let e = c
        .reply(
            "debug_ui_action",
            json!({"sessionId": id, "action": {"type": "key", "key": "d", "modifiers": ["super"]}}),
        )
        .await;
    assert!(e.error_text().contains("super"), "{}", e.text);
    // A native action sends no input: allowed.
    let r = act(&c, &id, json!({"type": "click", "id": play})).await;
    assert_eq!(r["method"], "native action (click)");
    printed(&c, &id, "play clicked").await;
    // With the setting, input aimed at the session's window is sent; a
    // point outside its windows is still refused.
    std::fs::write(
        env.path().join("settings.json"),
        json!({"ui.allowInputOnUserDisplay": true}).to_string(),
    )
    .unwrap();
    let r = act(
        &c,
        &id,
        json!({"type": "click", "id": play, "button": "right"}),
    )
    .await;
    assert_eq!(r["method"], "input plan (click)", "{r:#}");
    let e = c
        .reply(
            "debug_ui_action",
            json!({"sessionId": id, "action": {"type": "drag", "from": play, "to": {"x": 3000, "y": 3000}}}),
        )
        .await;
    assert!(
        e.error_text().contains("outside the session's windows"),
        "{}",
        e.text
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    drop(display);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_ids_and_impossible_actions_say_what_to_do() {
    let env = Env::new();
    let c = env.client().await;
    let id = launch(&c, &[]).await;
    let ui = c.ok("debug_ui", json!({"sessionId": id})).await;
    let play = id_of(&ui, "push button", "Play");
    let err = |v: Value| {
        let c = &c;
        let id = id.clone();
        async move {
            let r = c
                .reply("debug_ui_action", json!({"sessionId": id, "action": v}))
                .await;
            r.error_text().to_string()
        }
    };
    let typo = format!("{}0", &play[..play.len() - 1]);
    let e = err(json!({"type": "click", "id": typo})).await;
    assert!(e.contains(&format!("closest: \"{play}\"")), "{e}");
    let e = err(json!({"type": "type", "id": play, "text": "x"})).await;
    assert!(
        e.contains("cannot take typed text; it supports: click"),
        "{e}"
    );
    let e =
        err(json!({"type": "set_value", "id": id_of(&ui, "slider", "Volume"), "value": 2})).await;
    assert!(
        e.contains("takes values from 0 to 1 in steps of 0.1; 2 is outside"),
        "{e}"
    );
    // A huge value is written short, not as its 309 digits.
    let e = err(json!({"type": "set_value", "id": id_of(&ui, "slider", "Volume"), "value": 1e308}))
        .await;
    assert!(e.contains("; 1e308 is outside"), "{e}");
    assert!(e.len() < 300, "{e}");
    let tracks = id_of(&ui, "list box", "Tracks");
    let e = err(json!({"type": "scroll", "id": tracks, "direction": "sideways"})).await;
    assert!(
        e.contains("'direction' \"sideways\" is not a direction") && !e.contains("Some("),
        "{e}"
    );
    let e = err(json!({"type": "click", "id": id_of(&ui, "push button", "Record")})).await;
    assert!(e.contains("is disabled"), "{e}");
    let e =
        err(json!({"type": "select", "id": id_of(&ui, "list box", "Tracks"), "item": "Track 9"}))
            .await;
    assert!(
        e.contains("has no item \"Track 9\"; its items: \"Track 1\""),
        "{e}"
    );
    let e = err(json!({"type": "select", "id": play, "item": "x"})).await;
    assert!(e.contains("cannot select an item"), "{e}");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    let e = c
        .reply(
            "debug_ui_action",
            json!({"sessionId": id, "action": {"type": "click", "id": play}}),
        )
        .await;
    // Stopped (and not retained), the session is gone: the error says how
    // to find the live ones.
    assert!(e.error_text().contains("debug_session"), "{}", e.text);

    // A program that dies at once (a bad argument) took its display with
    // it: the error says it ended and where its output is.
    let dead = launch(&c, &["--rows", "many"]).await;
    let e = c.reply("debug_ui", json!({"sessionId": dead})).await;
    assert!(e.error_text().contains("has ended"), "{}", e.text);
}
