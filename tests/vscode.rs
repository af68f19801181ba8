//! The VS Code extension (editors/vscode) beyond its own unit tests (which
//! `./dev test` runs with node against a stand-in for the VS Code API; VS
//! Code itself cannot be downloaded here): the `.vsix` holds the built
//! extension and nothing else, and the code behind its status bar and its
//! attach picker lists a real daemon's sessions. Its panel page runs in
//! Chromium in tests/browser.rs. Needs the extension built (`./dev test`
//! does it).

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use support::{Env, fixture_with};

fn extension_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../editors/vscode")
}

/// The extension's compiled module `name` (out/src/NAME.js).
fn built(name: &str) -> PathBuf {
    let p = extension_dir().join("out/src").join(format!("{name}.js"));
    assert!(
        p.is_file(),
        "{} is missing: `./dev test` builds the VS Code extension (npm ci + tsc in editors/vscode)",
        p.display()
    );
    p
}

#[test]
fn the_vsix_holds_the_built_extension_and_nothing_else() {
    built("extension");
    let dir = extension_dir();
    let out = std::process::Command::new(dir.join("node_modules/.bin/vsce"))
        .args(["ls", "--no-dependencies"])
        .current_dir(&dir)
        .output()
        .expect("vsce is missing: `./dev test` installs editors/vscode's packages");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8(out.stdout).unwrap();
    let mut files: Vec<&str> = listed
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "README.md",
            "out/src/binary.js",
            "out/src/config.js",
            "out/src/daemon.js",
            "out/src/extension.js",
            "out/src/webview.js",
            "package.json",
        ],
        "the package holds the compiled extension, its manifest and README only"
    );
    let vsix = dir.join("out/strobe.vsix");
    let bytes = std::fs::read(&vsix)
        .unwrap_or_else(|e| panic!("{}: {e} (`./dev test` packages it)", vsix.display()));
    assert_eq!(&bytes[..4], b"PK\x03\x04", "a .vsix is a zip");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_status_bar_and_the_attach_picker_see_the_agents_sessions() {
    let env = Env::new();
    let c = env.client().await;
    let debugee = fixture_with("debugee", &["-pthread"]);
    let (id, _) = c.launch(&debugee, &[]).await;
    let daemon = built("daemon");
    let config = built("config");
    let script = format!(
        "const d = require({daemon:?}); const c = require({config:?});
         (async () => {{
           const url = await d.uiUrl(process.env.STROBE_BIN);
           const all = await d.listSessions(url);
           console.log(JSON.stringify({{ up: d.daemonUp(), url, items: c.sessionItems(d.running(all)),
                                         status: c.statusText(d.running(all).length) }}));
         }})().catch((e) => {{ console.error(e.message); process.exit(1); }});"
    );
    let strobe = env.command(&["ui"]);
    let mut node = std::process::Command::new("node");
    node.args(["-e", &script])
        .env("STROBE_BIN", strobe.get_program());
    for (k, v) in strobe.get_envs() {
        match v {
            Some(v) => node.env(k, v),
            None => node.env_remove(k),
        };
    }
    let out = tokio::task::spawn_blocking(move || node.output().expect("node"))
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["up"], true, "{v}");
    assert!(
        v["url"].as_str().unwrap().starts_with("http://127.0.0.1:"),
        "{v}"
    );
    let item = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["sessionId"] == id.as_str())
        .unwrap_or_else(|| panic!("the agent's session is offered: {v}"));
    assert_eq!(
        item["label"].as_str(),
        debugee.file_name().and_then(|n| n.to_str()),
        "named by its program: {item}"
    );
    assert_eq!(v["status"]["text"], "$(debug) Strobe: 1", "{v}");
    c.ok(
        "debug_session",
        serde_json::json!({"action": "stop", "sessionId": id}),
    )
    .await;
}
