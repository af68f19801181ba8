//! Tidy checks of docs/ARCHITECTURE.md against the code (as rust-analyzer's
//! tidy tests do): each crate's section lists its Strobe dependencies
//! exactly, none of what its "Never on" list forbids is in its manifest,
//! and a crate depends only on crates drawn above it, so the layering stays
//! one-way.

use std::collections::BTreeSet;
use std::path::Path;

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// One crate's section of ARCHITECTURE.md.
struct Documented {
    /// The crate's directory under `crates/`.
    dir: String,
    /// Its documented Strobe dependencies (`strobe-*`).
    deps: BTreeSet<String>,
    /// What it must never depend on: `strobe-*` names for Strobe crates,
    /// registry crate names otherwise.
    never: BTreeSet<String>,
}

/// A documented name as a package name: Strobe's crates are written
/// without their `strobe-` prefix ("store"), registry crates as they are.
fn package(name: &str, strobe: &BTreeSet<String>) -> String {
    let prefixed = format!("strobe-{name}");
    if strobe.contains(&prefixed) {
        prefixed
    } else {
        name.to_string()
    }
}

/// Every crate's section under "## Crates", in document order: a
/// "### `strobe-x`" heading (or "### `strobe` (`crates/strobe-cli`)") and a
/// "**Depends on:** a, b. **Never on:** c, d." line.
fn documented() -> Vec<Documented> {
    let doc = std::fs::read_to_string(workspace().join("docs/ARCHITECTURE.md")).unwrap();
    let section = doc
        .split("\n## Crates\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a '## Crates' section");
    let section = section.split("\n## ").next().unwrap();
    let strobe: BTreeSet<String> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let mut out = Vec::new();
    for part in section.split("\n### ").skip(1) {
        let heading = part.lines().next().unwrap();
        // "`strobe-store`", or "`strobe` (`crates/strobe-cli`)".
        let dir = match heading.split('`').nth(3) {
            Some(path) => path.trim_start_matches("crates/").to_string(),
            None => heading.trim_matches('`').to_string(),
        };
        let line = part
            .lines()
            .find(|l| l.starts_with("**Depends on:**"))
            .unwrap_or_else(|| panic!("{dir}'s section has no **Depends on:** line"));
        let (deps, never) = line["**Depends on:**".len()..]
            .split_once("**Never on:**")
            .unwrap_or_else(|| panic!("{dir}'s section has no **Never on:** list"));
        let names = |list: &str| -> BTreeSet<String> {
            list.trim()
                .trim_end_matches('.')
                .split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty() && *d != "—")
                .map(|d| package(d, &strobe))
                .collect()
        };
        out.push(Documented {
            dir,
            deps: names(deps),
            never: names(never),
        });
    }
    out
}

/// Every package name in a manifest's `[dependencies]`.
fn manifest_all_deps(dir: &str) -> BTreeSet<String> {
    let toml = std::fs::read_to_string(workspace().join("crates").join(dir).join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("crates/{dir}/Cargo.toml: {e}"));
    toml.lines()
        .skip_while(|l| l.trim() != "[dependencies]")
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| l.split(['=', ' ']).next())
        .filter(|name| !name.is_empty() && !name.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The `strobe-*` crates in a manifest's `[dependencies]`.
fn manifest_deps(dir: &str) -> BTreeSet<String> {
    manifest_all_deps(dir)
        .into_iter()
        .filter(|name| name.starts_with("strobe-"))
        .collect()
}

/// The crate directory a section documents (`strobe` is `strobe-cli`).
fn crate_dir(dir: &str) -> &str {
    if dir == "strobe" { "strobe-cli" } else { dir }
}

#[test]
fn every_crate_has_a_section_whose_dependencies_are_its_manifests() {
    let documented = documented();
    let mut on_disk: BTreeSet<String> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for d in &documented {
        let dir = crate_dir(&d.dir);
        assert!(
            on_disk.remove(dir),
            "ARCHITECTURE.md has a section for {dir}, which is not a crate under crates/"
        );
        assert_eq!(
            manifest_deps(dir),
            d.deps,
            "the **Depends on:** list of {dir} differs from crates/{dir}/Cargo.toml"
        );
    }
    assert!(
        on_disk.is_empty(),
        "crates without a section in ARCHITECTURE.md: {on_disk:?}"
    );
}

#[test]
fn no_crate_depends_on_what_its_section_forbids() {
    for d in documented() {
        let dir = crate_dir(&d.dir);
        assert!(!d.never.is_empty(), "{dir}'s **Never on:** list is empty");
        let forbidden: Vec<&String> = manifest_all_deps(dir)
            .iter()
            .filter(|dep| d.never.contains(*dep))
            .map(|dep| d.never.get(dep).unwrap())
            .collect();
        assert!(
            forbidden.is_empty(),
            "crates/{dir} depends on {forbidden:?}, which ARCHITECTURE.md says it must never"
        );
    }
}

#[test]
fn a_crate_depends_only_on_crates_drawn_above_it() {
    let documented = documented();
    let names: Vec<&str> = documented.iter().map(|d| crate_dir(&d.dir)).collect();
    for (i, d) in documented.iter().enumerate() {
        for dep in &d.deps {
            let at = names.iter().position(|n| n == dep);
            assert!(
                at.is_some_and(|at| at < i),
                "{} depends on {dep}, which ARCHITECTURE.md draws below it (or not at all)",
                names[i]
            );
        }
    }
}
