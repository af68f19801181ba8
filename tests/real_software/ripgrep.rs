//! ripgrep, a real Rust command-line program built of deeply generic
//! crates (grep-searcher, grep-regex, regex-automata), installed from
//! crates.io with `cargo install --locked` twice: the dev profile (no
//! inlining) and the release profile at opt-level 2 with debug info, where
//! many small generic functions exist only inlined.

use crate::cache::{self, step};
use crate::support::{Client, Env};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The pinned ripgrep.
const VERSION: &str = "15.2.0";

/// `rg` built with cargo's dev profile (`debug`) or the release profile at
/// -O2 with full debug info, installed into the cache once.
fn rg(debug: bool) -> PathBuf {
    let key = if debug {
        format!("ripgrep-{VERSION}-debug")
    } else {
        format!("ripgrep-{VERSION}-o2-debuginfo")
    };
    let dir = cache::cached(&key, |into| {
        let mut cmd = cache::cargo();
        cmd.args([
            "install",
            "--quiet",
            "ripgrep",
            "--version",
            VERSION,
            "--locked",
        ])
        .arg("--root")
        .arg(into)
        .arg("--target-dir")
        .arg(into.join("target"));
        if debug {
            cmd.arg("--debug");
        } else {
            cmd.env("CARGO_PROFILE_RELEASE_DEBUG", "true")
                .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "2");
        }
        step(
            &format!("cargo install ripgrep {VERSION}"),
            "crates.io",
            &mut cmd,
        );
        // Only the executable is kept.
        std::fs::remove_dir_all(into.join("target")).unwrap();
    });
    dir.join("bin/rg")
}

/// A small tree to search: two files with matches, one without.
fn tree(root: &Path) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("notes.txt"), "hay\nneedle one\nmore hay\n").unwrap();
    std::fs::write(root.join("src/lib.rs"), "fn needle() {}\n// needle two\n").unwrap();
    std::fs::write(root.join("src/other.rs"), "nothing here\n").unwrap();
}

/// Stages `patterns`, runs rg over `root` (searching three files in path
/// order) to its end, and returns the launch reply and the session id.
async fn run_rg(c: &Client, rg: &Path, root: &Path, patterns: &[&str]) -> (Value, String) {
    c.ok("debug_trace", json!({"add": patterns})).await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": rg,
                   "args": ["--no-config", "--sort", "path", "-n", "needle", root],
                   "projectRoot": root}),
        )
        .await;
    assert_eq!(v["pendingPatternsApplied"], patterns.len(), "{v}");
    let id = v["sessionId"].as_str().unwrap().to_string();
    let ended = c.wait_ended(&id).await;
    assert_eq!(ended["exitCode"], 0, "{ended}");
    let out: Vec<String> = c.stdout_lines(&id).await;
    let r = root.display();
    assert_eq!(
        out,
        [
            format!("{r}/notes.txt:2:needle one"),
            format!("{r}/src/lib.rs:1:fn needle() {{}}"),
            format!("{r}/src/lib.rs:2:// needle two"),
        ],
        "rg's own output, unchanged under tracing"
    );
    (v, id)
}

/// Calls per traced function (debug_query's function aggregate).
async fn calls_per_function(c: &Client, id: &str) -> BTreeMap<String, u64> {
    let mut by = BTreeMap::new();
    loop {
        let page = c
            .ok(
                "debug_query",
                json!({"sessionId": id, "aggregate": "function", "limit": 500,
                       "offset": by.len()}),
            )
            .await;
        for f in page["functions"].as_array().unwrap() {
            by.insert(
                f["function"].as_str().unwrap().to_string(),
                f["calls"].as_u64().unwrap(),
            );
        }
        if page["hasMore"] != true {
            return by;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ripgrep_generic_code_is_traced_with_double_star_patterns() {
    let rg = rg(true);
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    tree(work.path());
    let patterns = ["grep_searcher::**", "regex_automata::**"];
    let (_, id) = run_rg(&c, &rg, work.path(), &patterns).await;
    let calls = calls_per_function(&c, &id).await;
    let names: Vec<&String> = calls.keys().collect();
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("grep_searcher::") || n.starts_with("regex_automata::")),
        "only the crates named: {names:#?}"
    );
    assert!(
        names.iter().any(|n| n.starts_with("regex_automata::")),
        "{names:#?}"
    );
    // Methods of generic types, monomorphized for rg's matcher and sink,
    // under their source names; one search per file.
    for f in [
        "grep_searcher::searcher::core::Core<M,S>::match_by_line",
        "grep_searcher::searcher::glue::ReadByLine<M,R,S>::run",
    ] {
        assert!(calls.contains_key(f), "{f} not entered: {names:#?}");
    }
    assert_eq!(
        calls.get("grep_searcher::searcher::Searcher::search_path"),
        Some(&3),
        "{names:#?}"
    );
    // Typed arguments of Rust code: `-n` turns line numbers on.
    let q = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "function_enter", "verbose": true,
                   "function": {"equals": "grep_searcher::searcher::SearcherBuilder::line_number"}}),
        )
        .await;
    let e = &q["events"][0];
    assert_eq!(e["arguments"][1]["name"], "yes", "{e}");
    assert_eq!(e["arguments"][1]["value"], true, "{e}");
    // &mut self: the builder read through the pointer, field by field.
    let config = &e["arguments"][0]["value"]["config"];
    assert_eq!(config["invert_match"], false, "{e}");
    assert_eq!(config["before_context"], 0, "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn ripgrep_at_o2_says_which_functions_are_inlined() {
    let rg = rg(false);
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    tree(work.path());
    let (v, id) = run_rg(&c, &rg, work.path(), &["grep_searcher::**"]).await;
    // At -O2 search_file_maybe_path exists only inside search_path: the
    // launch says so, where it was inlined, and that it cannot be hooked.
    let warnings: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings.iter().any(|w| w.starts_with(
            "grep_searcher::searcher::Searcher::search_file_maybe_path inlined into \
             grep_searcher::searcher::Searcher::search_path at "
        ) && w.contains("grep-searcher-")
            && w.ends_with(", cannot hook")),
        "{warnings:#?}"
    );
    // The functions that do exist are traced: one search per file.
    let calls = calls_per_function(&c, &id).await;
    assert_eq!(
        calls.get("grep_searcher::searcher::Searcher::search_path"),
        Some(&3),
        "{:#?}",
        calls.keys()
    );
    assert!(!calls.contains_key("grep_searcher::searcher::Searcher::search_file_maybe_path"));
}
