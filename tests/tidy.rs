//! Tidy checks of the test suite itself. Its binaries are listed by hand as
//! `[[test]]`s in crates/strobe-cli/Cargo.toml (they live outside that
//! package, so cargo cannot find them), and a file left off the list would
//! never be built or run while everything showed green.

use std::collections::BTreeSet;
use std::path::Path;

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

const MANIFEST: &str = "crates/strobe-cli/Cargo.toml";

/// The test crate roots under tests/, relative to the workspace: each
/// `tests/*.rs`, and each `tests/<group>/main.rs`. Other folders hold
/// fixtures, shared helpers (`support/mod.rs`) and the modules one of those
/// roots pulls in with `mod` or `#[path]`, and are not test crates.
fn on_disk() -> BTreeSet<String> {
    let tests = workspace().join("tests");
    let mut roots = BTreeSet::new();
    for entry in std::fs::read_dir(&tests).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if path.is_dir() {
            if path.join("main.rs").is_file() {
                roots.insert(format!("tests/{name}/main.rs"));
            }
        } else if name.ends_with(".rs") {
            roots.insert(format!("tests/{name}"));
        }
    }
    roots
}

/// The path of every `[[test]]` in the manifest, relative to the workspace
/// (they are written `../../tests/…`).
fn registered() -> Vec<String> {
    let toml = std::fs::read_to_string(workspace().join(MANIFEST)).unwrap();
    let mut paths = Vec::new();
    let mut in_test = false;
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            in_test = line == "[[test]]";
        } else if in_test && let Some(value) = line.strip_prefix("path") {
            let value = value.trim_start().trim_start_matches('=').trim();
            let value = value.trim_matches('"');
            paths.push(value.strip_prefix("../../").unwrap_or(value).to_string());
        }
    }
    paths
}

#[test]
fn every_test_file_is_registered_in_the_manifest() {
    let registered: BTreeSet<String> = registered().into_iter().collect();
    let missing: Vec<String> = on_disk()
        .into_iter()
        .filter(|root| !registered.contains(root))
        .collect();
    let how: Vec<String> = missing
        .iter()
        .map(|root| {
            let name = root
                .trim_start_matches("tests/")
                .trim_end_matches("/main.rs")
                .trim_end_matches(".rs");
            format!(
                "{root}: register it by adding to {MANIFEST}\n\n[[test]]\nname = \"{name}\"\npath = \"../../{root}\"\n"
            )
        })
        .collect();
    assert!(
        missing.is_empty(),
        "test files that are no `[[test]]` of {MANIFEST}, so cargo never builds or runs them:\n\n{}",
        how.join("\n")
    );
}

/// cargo itself refuses a `[[test]]` whose file is missing, but builds one
/// registered under two names twice, with a warning only.
#[test]
fn every_registered_test_exists_once() {
    let mut seen = BTreeSet::new();
    for path in registered() {
        assert!(
            workspace().join(&path).is_file(),
            "{MANIFEST} registers a `[[test]]` at {path}, which does not exist: remove the entry or restore the file"
        );
        assert!(
            seen.insert(path.clone()),
            "{MANIFEST} registers {path} twice"
        );
    }
    assert!(!seen.is_empty(), "no `[[test]]` paths read from {MANIFEST}");
}
