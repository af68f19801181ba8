//! The include folders of pyenv's CPythons: one rule for this crate's build
//! script, which decides when the tests are built whether python_layout's
//! 3.12 and 3.13 checks run or show as ignored, and for those checks. std
//! only: the build script includes this file too.

use std::path::PathBuf;

/// pyenv's root: `$PYENV_ROOT`, else `~/.pyenv` (pyenv's own default).
pub fn root() -> Option<PathBuf> {
    std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")))
}

/// The include directories of every pyenv CPython `minor` ("3.12") on this
/// machine, each patch release's.
pub fn includes(minor: &str) -> Vec<PathBuf> {
    let Some(root) = root() else {
        return Vec::new();
    };
    let mut out: Vec<_> = std::fs::read_dir(root.join("versions"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix(minor))
                .is_some_and(|rest| rest.starts_with('.'))
        })
        .map(|e| e.path().join("include").join(format!("python{minor}")))
        .filter(|p| p.join("Python.h").is_file())
        .collect();
    out.sort();
    out
}
