//! The real-software tier: third-party programs nobody here wrote, fetched
//! from the registries at pinned versions and built with debug info on
//! first use (`cache.rs`: `${XDG_CACHE_HOME:-$HOME/.cache}/strobe/real/`,
//! so reruns find them ready), each driven end to end through a real
//! `strobe mcp`:
//! - `sqlite.rs`: SQLite's C API (the amalgamation compiled by rusqlite's
//!   bundled build), traced with typed arguments and C strings;
//! - `ripgrep.rs`: ripgrep's deep generic Rust, traced with `**` patterns,
//!   and its -O2 build, whose inlined functions are reported;
//! - `python.rs`: tabulate's pytest and more-itertools' unittest suites
//!   through debug_test, counts equal to the runners' own;
//! - `node.rs`: url-join's Mocha suite through debug_test, counts equal to
//!   Mocha's own.
//!
//! A first run needs crates.io, PyPI and npm; it builds for a few minutes.

#[path = "../support/mod.rs"]
mod support;

mod cache;
mod node;
mod python;
mod ripgrep;
mod sqlite;

use serde_json::Value;
use std::path::{Path, PathBuf};
use support::Client;

/// `tests/fixtures/<name>` in this checkout.
pub(crate) fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// Starts a debug_test run and waits (at most 10 minutes) for its result.
pub(crate) async fn run_tests(c: &Client, args: Value) -> Value {
    c.test_run(args, 10).await
}

/// A debug_test result's (passed, failed, skipped).
pub(crate) fn counts(r: &Value) -> (u64, u64, u64) {
    let s = &r["summary"];
    let n = |k: &str| {
        s[k].as_u64()
            .unwrap_or_else(|| panic!("no summary.{k}: {r}"))
    };
    (n("passed"), n("failed"), n("skipped"))
}
