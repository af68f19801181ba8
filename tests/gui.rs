//! debug_ui end to end: a real GTK3 program (Debian's Python + gi) launched
//! under real Frida on a private virtual display (Xvfb -displayfd, its own
//! D-Bus and AT-SPI buses), looked at through MCP: the tree with its roles,
//! names, values and geometry; ids stable across calls and across an
//! unrelated change; subtrees and the node cap; the screenshot decoded and
//! its pixels checked; ui_snapshot events on the timeline; the display's
//! processes gone after stop; and the errors (no window, no accessibility,
//! unknown id, ended session).

mod support;

use base64::Engine;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::{Client, Env};

/// Debian's Python: the one with python3-gi (pyenv's has no gi).
const PYTHON: &str = "/usr/bin/python3";

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gui/gtk_demo.py")
}

async fn launch(c: &Client, args: &[&str], extra: Value) -> (String, Value) {
    let mut req = json!({
        "command": PYTHON,
        "args": [demo().to_str().unwrap()],
        "projectRoot": demo().parent().unwrap(),
        "display": "virtual",
    });
    req["args"]
        .as_array_mut()
        .unwrap()
        .extend(args.iter().map(|a| json!(a)));
    if let Value::Object(m) = extra {
        for (k, v) in m {
            if v.is_null() {
                req.as_object_mut().unwrap().remove(&k);
            } else {
                req[k] = v;
            }
        }
    }
    let v = c.ok("debug_launch", req).await;
    (v["sessionId"].as_str().unwrap().to_string(), v)
}

/// Every node of a structured tree, depth first.
fn flatten(nodes: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for n in nodes.as_array().into_iter().flatten() {
        out.push(n);
        out.extend(flatten(&n["children"]));
    }
    out
}

fn find<'a>(nodes: &'a [&'a Value], role: &str, name: &str) -> &'a Value {
    nodes
        .iter()
        .find(|n| n["role"] == role && n["name"] == name)
        .unwrap_or_else(|| panic!("no {role} [{name}] in {nodes:#?}"))
}

/// The processes (not zombies) whose environment names `display`.
fn processes_on(display: &str) -> Vec<u32> {
    let needle = format!("DISPLAY={display}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            support::running(*pid) && env.windows(needle.len()).any(|w| w == needle.as_bytes())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gtk_window_is_seen_with_stable_ids_subtrees_a_cap_and_a_screenshot() {
    let env = Env::new();
    let c = env.client().await;
    let trigger = env.path().join("add-row");
    let (id, launched) = launch(
        &c,
        &["--add-row-when", trigger.to_str().unwrap()],
        json!({}),
    )
    .await;
    let display = launched["virtualDisplay"]
        .as_str()
        .expect("a virtual display")
        .to_string();

    // The tree: roles, names, values, states and geometry.
    let first = c.reply("debug_ui", json!({"sessionId": id})).await;
    assert!(!first.is_error, "{}", first.text);
    let nodes = flatten(&first.value["nodes"]);
    let frame = find(&nodes, "frame", "Strobe demo");
    assert_eq!(frame["bounds"]["width"], 640, "{frame}");
    let play = find(&nodes, "push button", "Play");
    assert_eq!(play["actions"], json!(["click"]));
    assert!(play["id"].as_str().unwrap().starts_with("btn#"));
    assert_eq!(find(&nodes, "slider", "Volume")["value"], "0.5");
    assert_eq!(find(&nodes, "text", "Title")["value"], "hello");
    assert!(
        find(&nodes, "check box", "Loop")["states"]
            .as_array()
            .unwrap()
            .contains(&json!("checked"))
    );
    assert_eq!(find(&nodes, "combo box", "Quality")["value"], "Medium");
    find(&nodes, "list box", "Tracks");
    find(&nodes, "label", "Track 3");
    let play_id = play["id"].as_str().unwrap().to_string();
    // The text answers with the compact lines.
    assert!(
        first.text.contains(&format!("{play_id} [Play] (")),
        "{}",
        first.text
    );
    assert!(first.text.contains("val=0.5"), "{}", first.text);
    assert!(first.text.len() < 3_000, "{} characters", first.text.len());
    assert!(first.value.get("changes").is_none());

    // Stable: the same ids again, and "no change".
    let again = c.ok("debug_ui", json!({"sessionId": id})).await;
    let ids = |v: &Value| -> Vec<String> {
        flatten(&v["nodes"])
            .iter()
            .map(|n| n["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&first.value), ids(&again));
    assert_eq!(again["changes"]["addedCount"], 0);
    assert_eq!(again["changes"]["changedCount"], 0);

    // An unrelated change (a row added to the other panel) leaves the left
    // panel's ids as they were.
    std::fs::write(&trigger, "").unwrap();
    let mut added_row = false;
    for _ in 0..100 {
        if c.stdout_lines(&id)
            .await
            .iter()
            .any(|l| l.contains("row added"))
        {
            added_row = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(added_row, "the fixture never added its row");
    let after = c.ok("debug_ui", json!({"sessionId": id})).await;
    let after_nodes = flatten(&after["nodes"]);
    for (role, name) in [
        ("push button", "Play"),
        ("push button", "Stop"),
        ("slider", "Volume"),
        ("text", "Title"),
        ("check box", "Loop"),
        ("combo box", "Quality"),
        ("label", "Track 1"),
    ] {
        assert_eq!(
            find(&after_nodes, role, name)["id"],
            find(&nodes, role, name)["id"],
            "{role} [{name}] changed id"
        );
    }
    let added = find(&after_nodes, "label", "Track added")["id"].clone();
    assert!(
        after["changes"]["addedCount"].as_u64().unwrap() >= 2,
        "{}",
        after["changes"]
    );
    assert!(
        after["changes"]["added"]
            .as_array()
            .unwrap()
            .contains(&added)
    );

    // A subtree by id.
    let list_id = find(&after_nodes, "list box", "Tracks")["id"].clone();
    let sub = c
        .ok("debug_ui", json!({"sessionId": id, "id": list_id}))
        .await;
    let sub_nodes = flatten(&sub["nodes"]);
    assert_eq!(sub["nodes"][0]["id"], list_id);
    assert!(sub_nodes.iter().all(|n| n["role"] != "push button"));
    assert_eq!(
        sub_nodes.iter().filter(|n| n["role"] == "label").count(),
        4,
        "{sub_nodes:#?}"
    );

    // The cap: what is cut is said, with the id to ask for.
    let capped = c
        .reply("debug_ui", json!({"sessionId": id, "maxNodes": 4}))
        .await;
    assert_eq!(capped.value["shown"], 4);
    assert!(capped.value["cut"].as_u64().unwrap() > 10);
    assert!(
        capped.text.contains("not shown; ask with id: \""),
        "{}",
        capped.text
    );

    // An unknown id names the closest ones.
    let typo = format!("{}0", &play_id[..play_id.len() - 1]);
    let wrong = c
        .reply("debug_ui", json!({"sessionId": id, "id": typo}))
        .await;
    assert!(wrong.error_text().contains(&play_id), "{}", wrong.text);

    // The screenshot: PNG image content, saved under STROBE_HOME, the
    // window's size, and the swatch's magenta where the tree says it is.
    let raw = c
        .raw("debug_ui", json!({"sessionId": id, "mode": "both"}))
        .await
        .unwrap();
    let structured = raw.structured_content.clone().unwrap();
    let png = png_of(&raw);
    let path = structured["screenshot"]["path"].as_str().unwrap();
    assert!(path.starts_with(env.path().to_str().unwrap()), "{path}");
    assert_eq!(std::fs::read(path).unwrap(), png);
    let (info, buf) = pixels(png);
    assert_eq!((info.width, info.height), (640, 420));
    let swatch = find(&flatten(&structured["nodes"]), "drawing area", "Swatch")["bounds"].clone();
    let (x, y) = (
        swatch["x"].as_u64().unwrap() + swatch["width"].as_u64().unwrap() / 2,
        swatch["y"].as_u64().unwrap() + swatch["height"].as_u64().unwrap() / 2,
    );
    let at = ((y * u64::from(info.width) + x) * 4) as usize;
    assert_eq!(&buf[at..at + 3], &[255, 0, 255], "the swatch is magenta");

    let swatch_id = find(&flatten(&structured["nodes"]), "drawing area", "Swatch")["id"].clone();
    a_nodes_screenshot_is_its_box_alone(&c, &id, &swatch_id, &swatch).await;

    // Every look is on the timeline, with its diff.
    let snapshots = c.events(&id, Some("ui_snapshot")).await;
    assert!(snapshots.len() >= 6, "{snapshots:#?}");
    assert!(
        snapshots
            .iter()
            .any(|e| e["added"].as_array().is_some_and(|a| a.contains(&added))),
        "{snapshots:#?}"
    );
    assert!(snapshots.iter().any(|e| e["screenshot"].is_string()));

    // Stop: the display, its buses and the accessibility daemons are gone.
    // (By pid: another test's new display may take the same number.)
    let on_display = processes_on(&display);
    assert!(on_display.len() >= 3, "{on_display:?}");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    assert!(
        support::wait_until(Duration::from_secs(5), || !on_display
            .iter()
            .any(|&p| support::running(p))),
        "still running on {display}: {:?}",
        on_display
            .iter()
            .filter(|&&p| support::running(p))
            .collect::<Vec<_>>()
    );
}

/// A screenshot of one node (its id): its box alone, all magenta.
async fn a_nodes_screenshot_is_its_box_alone(
    c: &Client,
    id: &str,
    swatch_id: &Value,
    swatch: &Value,
) {
    let raw = c
        .raw(
            "debug_ui",
            json!({"sessionId": id, "mode": "screenshot", "id": swatch_id}),
        )
        .await
        .unwrap();
    assert_ne!(raw.is_error, Some(true), "{:?}", raw.content);
    let (info, buf) = pixels(png_of(&raw));
    assert_eq!(
        (u64::from(info.width), u64::from(info.height)),
        (
            swatch["width"].as_u64().unwrap(),
            swatch["height"].as_u64().unwrap()
        )
    );
    assert!(
        buf[..info.buffer_size()]
            .chunks_exact(4)
            .all(|p| p[..3] == [255, 0, 255]),
        "not the swatch alone"
    );
}

/// The PNG bytes of a reply's image content.
fn png_of(raw: &rmcp::model::CallToolResult) -> Vec<u8> {
    let image = raw
        .content
        .iter()
        .find_map(|c| c.as_image().map(|i| i.data.clone()))
        .expect("image content");
    base64::engine::general_purpose::STANDARD
        .decode(image)
        .unwrap()
}

/// A PNG's first frame and its pixels.
fn pixels(png: Vec<u8>) -> (png::OutputInfo, Vec<u8>) {
    let mut reader = png::Decoder::new(std::io::Cursor::new(png))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    (info, buf)
}

/// Without a DISPLAY to inherit, a GUI program gets a virtual display on
/// its own, and the launch says so.
#[tokio::test(flavor = "multi_thread")]
async fn a_gui_program_with_no_display_gets_a_virtual_one() {
    let env = Env::new();
    let c = env.client().await;
    let (id, launched) = launch(&c, &[], json!({"display": null, "env": {"DISPLAY": ""}})).await;
    let display = launched["virtualDisplay"]
        .as_str()
        .expect("a virtual display")
        .to_string();
    let warned = launched["warnings"].to_string();
    assert!(warned.contains("private virtual display"), "{warned}");
    let v = c.ok("debug_ui", json!({"sessionId": id})).await;
    find(&flatten(&v["nodes"]), "push button", "Play");
    let on_display = processes_on(&display);
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    assert!(support::wait_until(Duration::from_secs(5), || {
        !on_display.iter().any(|&p| support::running(p))
    }));
}

/// A program that takes longer than the registration grace to show its
/// window (here it spins for 10 s first, as an interpreter importing its
/// toolkit under Frida can on a loaded machine) is waited for while it
/// works, not answered "no window".
#[tokio::test(flavor = "multi_thread")]
async fn a_program_slow_to_start_is_waited_for_while_it_works() {
    let env = Env::new();
    let c = env.client().await;
    let (id, _) = launch(&c, &["--busy-start", "10"], json!({})).await;
    let v = c.ok("debug_ui", json!({"sessionId": id})).await;
    find(&flatten(&v["nodes"]), "push button", "Play");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn what_cannot_be_seen_says_why_and_what_to_do() {
    let env = Env::new();
    let c = env.client().await;

    // Not on the accessibility bus: a warning, and the screenshot instead.
    let (hidden, _) = launch(&c, &[], json!({"env": {"NO_AT_BRIDGE": "1"}})).await;
    let r = c.reply("debug_ui", json!({"sessionId": hidden})).await;
    assert!(!r.is_error, "{}", r.text);
    assert!(
        r.text.contains("not on the accessibility bus"),
        "{}",
        r.text
    );
    assert!(r.value["screenshot"]["path"].is_string(), "{}", r.value);
    c.ok(
        "debug_session",
        json!({"action": "stop", "sessionId": hidden}),
    )
    .await;

    // A program with no window, on a display of its own.
    let sleeper = c
        .ok(
            "debug_launch",
            json!({"command": "/bin/sleep", "args": ["60"], "projectRoot": "/tmp", "display": "virtual"}),
        )
        .await;
    let sleeper = sleeper["sessionId"].as_str().unwrap().to_string();
    let r = c.reply("debug_ui", json!({"sessionId": sleeper})).await;
    assert!(
        r.error_text().contains("has no window on display :"),
        "{}",
        r.text
    );
    assert!(r.text.contains("GUI program"), "{}", r.text);
    c.ok(
        "debug_session",
        json!({"action": "stop", "sessionId": sleeper}),
    )
    .await;

    // A program with no display at all.
    let headless = c
        .ok(
            "debug_launch",
            json!({"command": "/bin/sleep", "args": ["60"], "projectRoot": "/tmp", "env": {"DISPLAY": ""}}),
        )
        .await;
    assert!(headless.get("virtualDisplay").is_none());
    let headless = headless["sessionId"].as_str().unwrap().to_string();
    let r = c.reply("debug_ui", json!({"sessionId": headless})).await;
    assert!(
        r.error_text().contains("display: \\\"virtual\\\"")
            || r.text.contains("display: \"virtual\""),
        "{}",
        r.text
    );

    // An ended program.
    c.ok(
        "debug_session",
        json!({"action": "stop", "sessionId": headless, "retain": true}),
    )
    .await;
    let r = c.reply("debug_ui", json!({"sessionId": headless})).await;
    assert!(r.error_text().starts_with("PROCESS_EXITED"), "{}", r.text);

    // Bad arguments.
    let r = c
        .reply("debug_ui", json!({"sessionId": headless, "maxNodes": -1}))
        .await;
    assert!(r.error_text().contains("maxNodes"), "{}", r.text);
}

/// A second toolkit: WebKitGTK, whose page's controls live in its web
/// process and reach the tree embedded under the GTK window.
#[tokio::test(flavor = "multi_thread")]
async fn a_webkit_page_is_seen_through_its_accessibility_tree() {
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
    // The page loads after the window shows: ask until its controls are in.
    let mut nodes = Vec::new();
    for _ in 0..100 {
        let r = c.ok("debug_ui", json!({"sessionId": id})).await;
        nodes = flatten(&r["nodes"])
            .into_iter()
            .cloned()
            .collect::<Vec<_>>();
        if nodes.iter().any(|n| n["role"] == "slider") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let refs: Vec<&Value> = nodes.iter().collect();
    find(&refs, "frame", "Web demo");
    find(&refs, "heading", "Mixer");
    let mute = find(&refs, "push button", "Mute");
    assert!(mute["bounds"]["width"].as_u64().unwrap() > 0, "{mute}");
    assert!(
        find(&refs, "check box", "Solo")["states"]
            .as_array()
            .unwrap()
            .contains(&json!("checked"))
    );
    assert_eq!(find(&refs, "slider", "Pan")["value"], "30");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

/// `strobe-vision` beside the `strobe` under test, where the daemon looks
/// (`./dev test` builds it; `cargo test` alone does not).
fn vision_sidecar() -> PathBuf {
    let p = Path::new(support::STROBE).with_file_name("strobe-vision");
    assert!(
        p.is_file(),
        "{} is not built: `cargo build -p strobe-vision` (./dev test does it)",
        p.display()
    );
    p
}

/// Vision on a window with a custom-drawn knob, label, toggle and slider
/// (a GTK DrawingArea with no accessible children): OCR reads the label,
/// the shape detector finds the controls, all become vision nodes under
/// the drawing area, and text the tree already has confirms its nodes.
#[tokio::test(flavor = "multi_thread")]
async fn vision_finds_painted_text_and_a_knob_and_confirms_known_nodes() {
    vision_sidecar();
    // A short idle timeout, to see the sidecar go.
    let env = Env::with_settings(json!({"vision.sidecarIdleTimeoutSeconds": 2}));
    let c = env.client().await;
    let (id, _) = launch(&c, &["--knob"], json!({})).await;
    let plain = c.ok("debug_ui", json!({"sessionId": id})).await;
    let r = c
        .reply("debug_ui", json!({"sessionId": id, "vision": true}))
        .await;
    assert!(!r.is_error, "{}", r.text);
    assert!(r.value.get("warnings").is_none(), "{}", r.value["warnings"]);
    let nodes = flatten(&r.value["nodes"]);
    let area = nodes
        .iter()
        .find(|n| n["role"] == "drawing area" && n["name"] == "")
        .unwrap_or_else(|| panic!("no unnamed drawing area in {nodes:#?}"));
    let painted = flatten(&area["children"]);
    let label = find(&painted, "ocr text", "GAIN 7");
    assert_eq!(label["vision"]["new"], true, "{label}");
    assert!(label["id"].as_str().unwrap().starts_with("ocr#"));
    let knob = painted
        .iter()
        .find(|n| n["role"] == "knob")
        .unwrap_or_else(|| panic!("no knob in {painted:#?}"));
    for kind in ["toggle", "slider"] {
        let found = painted.iter().find(|n| n["role"] == kind);
        assert!(
            found.is_some_and(|n| n["vision"]["new"] == true),
            "no painted {kind} in {painted:#?}"
        );
    }
    let kb = &knob["bounds"];
    let ab = &area["bounds"];
    assert!(
        kb["x"].as_i64() >= ab["x"].as_i64() && kb["width"].as_i64() < ab["width"].as_i64(),
        "{knob}"
    );
    // The tree's own text confirms its nodes.
    let play = find(&nodes, "push button", "Play");
    assert_eq!(play["vision"]["new"], false, "{play}");
    assert!(
        r.text.contains("[GAIN 7]") && r.text.contains("⚡vision("),
        "{}",
        r.text
    );
    assert!(r.text.contains("↻merged("), "{}", r.text);
    // The tree's ids are the same with vision as without.
    let ids = |v: &Value| -> Vec<String> {
        flatten(&v["nodes"])
            .iter()
            .filter(|n| n["vision"]["new"] != true)
            .map(|n| n["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&plain), ids(&r.value));
    // A ui_snapshot says vision ran.
    let snaps = c.events(&id, Some("ui_snapshot")).await;
    assert!(
        snaps
            .iter()
            .any(|e| e["vision"]["added"].as_u64() >= Some(2)),
        "{snaps:#?}"
    );
    // Unused for vision.sidecarIdleTimeoutSeconds, the sidecar exits.
    let daemon = env.daemon_pid().expect("the daemon's pid");
    let sidecars = || children_named(daemon, "strobe-vision");
    assert_eq!(sidecars().len(), 1, "one sidecar runs after a vision call");
    assert!(
        support::wait_until(Duration::from_secs(8), || sidecars().is_empty()),
        "the sidecar outlived its idle timeout"
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

/// Running children of `parent` whose command name is `name`.
fn children_named(parent: u32, name: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let Some((comm, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(") "))
            else {
                return false;
            };
            let ppid = rest.split_whitespace().nth(1);
            comm == name && ppid == Some(parent.to_string().as_str()) && support::running(pid)
        })
        .collect()
}

/// Without onnxruntime in Strobe's venv, vision says how to get it and the
/// tree still comes back.
#[tokio::test(flavor = "multi_thread")]
async fn vision_without_onnxruntime_says_how_to_fix_it_and_returns_the_tree() {
    vision_sidecar();
    let mut env = Env::new();
    // The venv as it is, minus onnxruntime: a directory of links.
    let real = env.venv.clone();
    let fake = env.path().join("venv-without-onnxruntime");
    let real_site = std::fs::read_dir(real.join("lib"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .unwrap();
    let python_dir = real_site.parent().unwrap().file_name().unwrap().to_owned();
    let site = fake.join("lib").join(python_dir).join("site-packages");
    std::fs::create_dir_all(&site).unwrap();
    for entry in std::fs::read_dir(&real_site).unwrap().flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with("onnxruntime") {
            std::os::unix::fs::symlink(entry.path(), site.join(name)).unwrap();
        }
    }
    std::os::unix::fs::symlink(real.join("bin"), fake.join("bin")).unwrap();
    std::fs::copy(real.join("pyvenv.cfg"), fake.join("pyvenv.cfg")).unwrap();
    env.venv = fake;
    let c = env.client().await;
    let (id, _) = launch(&c, &[], json!({})).await;
    let r = c
        .reply("debug_ui", json!({"sessionId": id, "vision": true}))
        .await;
    assert!(!r.is_error, "{}", r.text);
    let warned = r.value["warnings"].to_string();
    assert!(
        warned.contains("libonnxruntime.so") && warned.contains("strobe setup"),
        "{warned}"
    );
    find(&flatten(&r.value["nodes"]), "push button", "Play");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}
