//! debug_ui_action on a real GTK3 window (tests/fixtures/gui/gtk_demo.py on
//! a virtual display), in one run beside the raw input people use today:
//!
//! - the raw cost of a click: Strobe's native AT-SPI action and its XTest
//!   click (strobe-ui called in process, as the daemon calls it) against
//!   `xdotool mousemove x y click 1` on the same display;
//! - the round trip of a verified action through MCP (the tree read before
//!   and after, the action, the verification), with the verification's
//!   share reported apart;
//! - set_value on a custom-drawn knob: learned the first time (fresh
//!   store), then from the cached plan.

use serde_json::{Value, json};
use std::time::Instant;

use strobe_ui::{Button, Display, NativeAction, UiNode};

use crate::gui::{environ, launch};
use crate::support::ui_nodes as flatten;
use crate::{median, support};

/// The display-related environment `pid` was started with.
fn display_env(pid: u32) -> Vec<(String, String)> {
    environ(pid)
        .into_iter()
        .filter(|(k, _)| {
            ["DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XAUTHORITY"].contains(&k.as_str())
        })
        .collect()
}

fn find<'a>(nodes: &'a [UiNode], role: &str, name: &str) -> Option<&'a UiNode> {
    nodes.iter().find_map(|n| {
        if n.role == role && n.name == name {
            Some(n)
        } else {
            find(&n.children, role, name)
        }
    })
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

async fn action(c: &support::Client, id: &str, action: Value) -> (f64, Value) {
    let t = Instant::now();
    let r = c
        .reply(
            "debug_ui_action",
            json!({"sessionId": id, "action": action}),
        )
        .await;
    let wall = ms(t);
    assert!(!r.is_error, "{}", r.text);
    (wall, r.value)
}

pub async fn gui_interaction(c: &support::Client, runs: usize) {
    let runs = runs.max(10);
    let (id, pid) = launch(c, &[]).await;
    let ui = c.ok("debug_ui", json!({"sessionId": id})).await;
    let env = display_env(pid);
    let display = Display::from_env(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .expect("the program's display");
    let backend = strobe_ui::backends::for_display(&display).expect("a backend");
    let tree = backend.tree(&display, pid, false).expect("the tree");
    let check = find(&tree, "check box", "Loop").expect("the Loop check box");
    let handle = check.handle.clone().expect("a handle");
    let pad = find(&tree, "drawing area", "Pad")
        .and_then(|n| n.bounds)
        .expect("the pad");
    let (x, y) = strobe_ui::motor::plan::center(&pad);

    // Raw clicks, in process and by xdotool, on the same display.
    let mut native = Vec::new();
    let mut xtest = Vec::new();
    let mut xdotool = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        assert!(
            backend
                .act(&display, &handle, &NativeAction::Do("click".into()))
                .unwrap()
        );
        native.push(ms(t));
        let t = Instant::now();
        backend
            .input(
                &display,
                &strobe_ui::motor::plan::click(x, y, Button::Left, 1),
            )
            .unwrap();
        xtest.push(ms(t));
        let t = Instant::now();
        let st = std::process::Command::new("xdotool")
            .args(["mousemove", &x.to_string(), &y.to_string(), "click", "1"])
            .envs(env.iter().cloned())
            .status()
            .expect("xdotool (./dev installs it)");
        xdotool.push(ms(t));
        assert!(st.success());
    }
    let (n, xt, xd) = (median(native), median(xtest), median(xdotool));
    println!(
        "ui_action raw click: native AT-SPI action p50 {n:.2} ms, XTest click p50 {xt:.2} ms (in process, connect included) vs xdotool mousemove+click {xd:.2} ms ({:.1}x)",
        xd / xt
    );

    // Verified round trips through MCP.
    let loop_id = flatten_id(&ui, "check box", "Loop");
    let mut wall = Vec::new();
    let mut elapsed = Vec::new();
    let mut acting = Vec::new();
    for _ in 0..runs {
        let (w, v) = action(c, &id, json!({"type": "click", "id": loop_id})).await;
        assert_eq!(v["verified"], true, "{v}");
        wall.push(w);
        elapsed.push(v["elapsedMs"].as_f64().unwrap());
        acting.push(v["actionMs"].as_f64().unwrap());
    }
    let (w, e, a) = (median(wall), median(elapsed), median(acting));
    println!(
        "ui_action click on a check box, verified: p50 {w:.1} ms through MCP ({e:.0} ms in the daemon: the action {a:.2} ms, the rest reading the tree before and after and verifying the checked state)"
    );
    let volume = flatten_id(&ui, "slider", "Volume");
    let mut wall = Vec::new();
    for i in 0..runs {
        let (w, v) = action(
            c,
            &id,
            json!({"type": "set_value", "id": volume, "value": if i % 2 == 0 { 0.2 } else { 0.7 }}),
        )
        .await;
        assert_eq!(v["verified"], true, "{v}");
        wall.push(w);
    }
    println!(
        "ui_action set_value on a slider (value interface), verified: p50 {:.1} ms through MCP",
        median(wall)
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;

    // The knob: learned, then cached (this home's store starts empty).
    let (id, _) = launch(c, &["--knob"]).await;
    let r = c
        .ok("debug_ui", json!({"sessionId": id, "vision": true}))
        .await;
    let knob = flatten(&r["nodes"])
        .into_iter()
        .find(|n| n["role"] == "knob")
        .expect("vision finds the knob")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (first, v) = action(c, &id, json!({"type": "set_value", "id": knob, "value": 3})).await;
    assert_eq!(v["verified"], true, "{v}");
    let learned = v["method"].as_str().unwrap().to_string();
    let mut cached = Vec::new();
    let mut cached_watch = Vec::new();
    for i in 0..runs.min(10) {
        // Each call moves the value: 8 (OCR), 5 (watch), 2 (OCR), 5…
        let target = if i % 2 == 0 { 8 } else { 2 };
        let (w, v) = action(
            c,
            &id,
            json!({"type": "set_value", "id": knob, "value": target}),
        )
        .await;
        assert_eq!(v["verified"], true, "{v}");
        assert!(
            v["method"].as_str().unwrap().starts_with("cached plan"),
            "{v}"
        );
        cached.push(w);
        let t = Instant::now();
        let r = c
            .reply(
                "debug_ui_action",
                json!({"sessionId": id, "action": {"type": "set_value", "id": knob, "value": 5}, "verify": {"watch": "__main__.gain"}}),
            )
            .await;
        cached_watch.push(ms(t));
        assert_eq!(r.value["verified"], true, "{}", r.text);
    }
    println!(
        "ui_action set_value on a custom-drawn knob: first (learned: {learned}) {first:.0} ms; cached p50 {:.0} ms read back by OCR, {:.0} ms read back through a watched variable",
        median(cached),
        median(cached_watch)
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

fn flatten_id(ui: &Value, role: &str, name: &str) -> String {
    flatten(&ui["nodes"])
        .into_iter()
        .find(|n| n["role"] == role && n["name"] == name)
        .unwrap_or_else(|| panic!("no {role} [{name}]"))["id"]
        .as_str()
        .unwrap()
        .to_string()
}
