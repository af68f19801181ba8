//! Tidy checks of docs/ARCHITECTURE.md against the code (as rust-analyzer's
//! tidy tests do): the crate table's "depends on" column must be each
//! crate's Strobe dependencies exactly, and a crate may only depend on
//! crates drawn above it in the table, so the layering stays one-way.

use std::collections::BTreeSet;
use std::path::Path;

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// (crate directory name, documented dependencies), in table order.
fn documented() -> Vec<(String, BTreeSet<String>)> {
    let doc = std::fs::read_to_string(workspace().join("docs/ARCHITECTURE.md")).unwrap();
    let table = doc
        .split("## Crates")
        .nth(1)
        .expect("ARCHITECTURE.md has a '## Crates' section");
    table
        .lines()
        .skip_while(|l| !l.starts_with("| crate |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            let first = row.split('|').nth(1).unwrap().trim();
            // "`strobe-store`", or "`strobe` (`crates/strobe-cli`)".
            let dir = match first.split('`').nth(3) {
                Some(path) => path.trim_start_matches("crates/").to_string(),
                None => first.trim_matches('`').to_string(),
            };
            let deps = row.trim_end_matches('|').rsplit('|').next().unwrap().trim();
            let deps = deps
                .split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty() && *d != "—")
                .map(|d| format!("strobe-{d}"))
                .collect();
            (dir, deps)
        })
        .collect()
}

/// The `strobe-*` crates in a manifest's `[dependencies]`.
fn manifest_deps(dir: &str) -> BTreeSet<String> {
    let toml = std::fs::read_to_string(workspace().join("crates").join(dir).join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("crates/{dir}/Cargo.toml: {e}"));
    toml.lines()
        .skip_while(|l| l.trim() != "[dependencies]")
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| l.split(['=', ' ']).next())
        .filter(|name| name.starts_with("strobe-"))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_crate_table_lists_every_crate_and_its_dependencies_exactly() {
    let table = documented();
    let mut on_disk: BTreeSet<String> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for (dir, deps) in &table {
        let dir = if dir == "strobe" { "strobe-cli" } else { dir };
        assert!(
            on_disk.remove(dir),
            "ARCHITECTURE.md lists {dir}, which is not a crate under crates/"
        );
        assert_eq!(
            &manifest_deps(dir),
            deps,
            "the 'depends on' cell of {dir} differs from crates/{dir}/Cargo.toml"
        );
    }
    assert!(
        on_disk.is_empty(),
        "crates missing from ARCHITECTURE.md's table: {on_disk:?}"
    );
}

#[test]
fn a_crate_depends_only_on_crates_drawn_above_it() {
    let table = documented();
    let names: Vec<String> = table
        .iter()
        .map(|(dir, _)| {
            if dir == "strobe-cli" || dir == "strobe" {
                "strobe".to_string()
            } else {
                dir.clone()
            }
        })
        .collect();
    for (i, (_, deps)) in table.iter().enumerate() {
        for d in deps {
            let at = names.iter().position(|n| n == d);
            assert!(
                at.is_some_and(|at| at < i),
                "{} depends on {d}, which the table draws below it (or not at all)",
                names[i]
            );
        }
    }
}
