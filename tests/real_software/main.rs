//! The real-software tier: third-party programs nobody here wrote, fetched
//! from the registries at pinned versions and built with debug info on
//! first use (`cache.rs`: `${XDG_CACHE_HOME:-$HOME/.cache}/strobe/real/`,
//! so reruns find them ready), each driven end to end through a real
//! `strobe mcp`:
//! - `sqlite.rs`: SQLite's C API (the amalgamation compiled by rusqlite's
//!   bundled build), traced with typed arguments and C strings;
//! - `ripgrep.rs`: ripgrep's deep generic Rust, traced with `**` patterns,
//!   and its -O2 build, whose inlined functions are reported.
//!
//! A first run needs crates.io, PyPI and npm; it builds for a few minutes.

#[path = "../support/mod.rs"]
mod support;

mod cache;
mod ripgrep;
mod sqlite;

use std::path::{Path, PathBuf};

/// `tests/fixtures/<name>` in this checkout.
pub(crate) fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}
