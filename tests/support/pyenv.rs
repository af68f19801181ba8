//! Where pyenv's interpreters are: one rule for the `strobe` package's build
//! script, which decides when the tests are built whether a version-gated
//! test runs or shows as ignored, and for the tests themselves, which then
//! run that interpreter. Two rules could disagree, and a test would be
//! ignored on a machine that has its interpreter, or run and fail on one
//! that has not. std only: the build script includes this file too.

use std::path::PathBuf;

/// pyenv's root: `$PYENV_ROOT`, else `~/.pyenv` (pyenv's own default).
/// Pointing PYENV_ROOT at an empty directory builds the tests as on a
/// machine without pyenv.
pub fn root() -> Option<PathBuf> {
    std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")))
}

/// The interpreter of CPython `minor` ("3.12") under pyenv's root, any patch
/// release (the newest where there are several): the machine image's,
/// since no registry here ships CPython 3.12 or 3.13 for Debian 12.
pub fn python(minor: &str) -> Option<PathBuf> {
    let versions = root()?.join("versions");
    let mut found: Vec<PathBuf> = std::fs::read_dir(versions)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(minor))
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|patch| !patch.is_empty() && patch.chars().all(|c| c.is_ascii_digit()))
        })
        .map(|p| p.join("bin").join(format!("python{minor}")))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found.pop()
}
