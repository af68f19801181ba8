//! The web UI end to end in a real browser: Debian's Chromium, driven by
//! playwright-core (tests/browser/e2e.mjs), against a real daemon whose
//! sessions are real targets launched through MCP — a live ticker, a
//! finished traced run and a segfault. The script checks that the
//! sessions appear, the timeline draws and zooms, filtering works, live
//! output arrives, patterns can be added, the export opens, the crash view
//! names the signal, a GUI program's ui_snapshot sits on its ui channel
//! lane and its detail shows its tree and screenshot, a program driven
//! through stdin by a scenario has lanes for its stdin channel and the
//! steps, that two runs picked in the list open a diff with the divergence
//! marked on both timelines, and that the token and Origin checks refuse strangers. Screenshots land in `$CARGO_TARGET_TMPDIR/browser/`.

mod support;

use serde_json::{Value, json};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Duration;
use support::{Env, fixture};

/// The script's own limit; it normally takes 10–20 s.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(240);

#[tokio::test(flavor = "multi_thread")]
async fn the_web_ui_in_chromium_shows_real_sessions_live() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ui = repo.join("ui/dist/index.html");
    assert!(
        ui.is_file(),
        "{} is missing: build the web UI first (`./dev test` does: npm ci && npm run build in ui/)",
        ui.display()
    );
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).is_file(),
        "{chromium} is missing: `./dev test` installs Debian's chromium"
    );

    let env = Env::new();
    let c = env.client().await;
    let launch = |exe: &Path, args: serde_json::Value| json!({"command": exe, "args": args, "projectRoot": exe.parent().unwrap()});
    let crash = fixture("crash");
    let v = c.ok("debug_launch", launch(&crash, json!(["segv"]))).await;
    let crashed = v["sessionId"].as_str().unwrap().to_string();
    assert_eq!(c.wait_ended(&crashed).await["state"], "crashed");

    c.ok("debug_trace", json!({"add": ["fib", "add"]})).await;
    let trace_c = fixture("trace_c");
    let v = c.ok("debug_launch", launch(&trace_c, json!([]))).await;
    let done = v["sessionId"].as_str().unwrap().to_string();
    c.wait_ended(&done).await;

    c.ok(
        "debug_trace",
        json!({"add": ["tick_work", "tick_wait"], "remove": ["fib", "add"]}),
    )
    .await;
    let ticker = fixture("ticker");
    let v = c
        .ok("debug_launch", launch(&ticker, json!(["-1", "150"])))
        .await;
    let live = v["sessionId"].as_str().unwrap().to_string();

    // A GUI program looked at through debug_ui: its ui_snapshot event is
    // on its ui channel lane, with the tree and the screenshot in its detail.
    let gtk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gui/gtk_demo.py");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "/usr/bin/python3", "args": [gtk], "projectRoot": gtk.parent().unwrap(), "display": "virtual"}),
        )
        .await;
    let gui = v["sessionId"].as_str().unwrap().to_string();
    let look = c
        .ok("debug_ui", json!({"sessionId": gui, "mode": "both"}))
        .await;
    // And acted on through debug_ui_action: a ui_action on that lane, and the
    // call in the agent's lane.
    fn node_id(nodes: &Value, name: &str) -> Option<String> {
        nodes.as_array()?.iter().find_map(|n| {
            if n["name"] == name && n["role"] == "push button" {
                n["id"].as_str().map(String::from)
            } else {
                node_id(&n["children"], name)
            }
        })
    }
    let play = node_id(&look["nodes"], "Play").expect("the Play button");
    let acted = c
        .ok(
            "debug_ui_action",
            json!({"sessionId": gui, "action": {"type": "click", "id": play}}),
        )
        .await;
    assert_eq!(acted["verified"], true, "{acted}");
    let snapshot = c.events(&gui, Some("ui_snapshot")).await[0]["id"]
        .as_u64()
        .unwrap();

    // A program driven through its stdin channel, by a scenario: its
    // stimuli and the scenario's steps are on channel lanes of their own.
    let repl = fixture("repl");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": repl, "projectRoot": repl.parent().unwrap(), "stdin": "pipe"}),
        )
        .await;
    let driven = v["sessionId"].as_str().unwrap().to_string();
    let r = c
        .reply(
            "debug_test_scenario",
            json!({"sessionId": driven, "scenario": {"steps": [
                {"wait": {"until": {"channel": "stdout", "contains": "ready"}, "timeoutMs": 10000}},
                {"do": "stdio.send", "line": "add 2 3"},
                {"wait": {"until": {"channel": "stdout", "contains": "= 5"}, "timeoutMs": 10000}},
            ]}}),
        )
        .await;
    assert_eq!(r.value["passed"], true, "{}", r.text);

    // Two runs of one program that differ deep in a call chain, for the
    // diff view.
    c.ok(
        "debug_trace",
        json!({"add": ["round_", "stage", "leaf"], "remove": ["tick_work", "tick_wait"]}),
    )
    .await;
    let diverge = fixture("diverge");
    let mut runs = Vec::new();
    for args in [json!([]), json!(["40"])] {
        let v = c.ok("debug_launch", launch(&diverge, args)).await;
        let id = v["sessionId"].as_str().unwrap().to_string();
        c.wait_ended(&id).await;
        runs.push(id);
    }

    let out = env.command(&["ui"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser");
    let _ = std::fs::remove_dir_all(&shots);

    let mut script = std::process::Command::new("node");
    script
        .arg(repo.join("tests/browser/e2e.mjs"))
        .env("STROBE_UI_URL", &url)
        .env("LIVE_SESSION", &live)
        .env("DONE_SESSION", &done)
        .env("CRASH_SESSION", &crashed)
        .env("GUI_SESSION", &gui)
        .env("GUI_SNAPSHOT", snapshot.to_string())
        .env("CHANNEL_SESSION", &driven)
        .env("DIFF_BASELINE", &runs[0])
        .env("DIFF_CANDIDATE", &runs[1])
        .env("OUT_DIR", &shots)
        .env("CHROMIUM", &chromium)
        // Its own process group, so a hung run takes its browser with it.
        .process_group(0);
    let mut child = script
        .spawn()
        .expect("node is missing: `./dev test` installs it");
    let status = support::wait_script(&mut child, SCRIPT_TIMEOUT, "the browser script").await;
    println!("screenshots in {}", shots.display());
    assert!(
        status.success(),
        "the browser checks failed ({status}); see the output above and the screenshots in {}",
        shots.display()
    );
    for id in [&live, &gui] {
        c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
            .await;
    }
}
