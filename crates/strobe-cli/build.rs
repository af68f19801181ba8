//! Decides, when the end-to-end tests (tests/, this package's `[[test]]`s)
//! are built, which of them this machine can run. libtest cannot mark a test
//! ignored at run time, so a test that needs what a machine may lack (one of
//! pyenv's CPythons, root, cargo-nextest) carries
//! `#[cfg_attr(not(<cfg>), ignore = "needs …")]` on a cfg set here: where
//! the probe fails it counts as ignored with what it needs, never as a pass
//! that tested nothing; where it succeeds the test runs, and fails loudly if
//! the thing has gone since.
//!
//! The probes rerun when what they looked at changes (an interpreter found
//! goes, pyenv's shims are rewritten by an install, the environment
//! variables they read change); anything else, `touch` this file.

#[path = "../../tests/support/pyenv.rs"]
mod pyenv;

use std::path::{Path, PathBuf};

/// Every cfg this script may set, declared so rustc knows them all.
const CFGS: [&str; 6] = [
    "strobe_cpython_310",
    "strobe_cpython_312",
    "strobe_cpython_313",
    "strobe_root",
    "strobe_mknod",
    "strobe_cargo_nextest",
];

fn main() {
    for cfg in CFGS {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=../../tests/support/pyenv.rs");
    // PYENV_ROOT and HOME place pyenv, CARGO_HOME and HOME cargo-nextest.
    // A change of any reruns the probes and rebuilds every test binary, so
    // nothing that differs between shells of one machine is watched: not
    // PATH (`./dev test` prepends its tool folders), not USER (often unset).
    // Who builds rarely changes; a test built as root and run as another
    // user fails loudly, and one built as that user is ignored, saying so.
    for var in ["PYENV_ROOT", "HOME", "CARGO_HOME"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    probe_pythons();
    probe_root();
    probe_nextest();
}

fn set(cfg: &str) {
    println!("cargo::rustc-cfg={cfg}");
}

/// Reruns the probe when `path` (which exists: a missing one would rerun it,
/// and rebuild every test binary, on every build) changes.
fn watch(path: &Path) {
    println!("cargo::rerun-if-changed={}", path.display());
}

/// pyenv's CPython 3.10 (a version the tracer has no layouts for), 3.12 and
/// 3.13 (the tracer's sys.monitoring side), found as the tests find them.
fn probe_pythons() {
    for (minor, cfg) in [
        ("3.10", "strobe_cpython_310"),
        ("3.12", "strobe_cpython_312"),
        ("3.13", "strobe_cpython_313"),
    ] {
        if let Some(python) = pyenv::python(minor) {
            watch(&python);
            set(cfg);
        }
    }
    // `pyenv install` and `pyenv uninstall` rewrite the shims. Not the
    // versions folder: cargo scans a watched folder whole, and that one
    // holds every installed interpreter's files (over 100,000 here).
    if let Some(shims) = pyenv::root()
        .map(|r| r.join("shims"))
        .filter(|s| s.is_dir())
    {
        watch(&shims);
    }
}

/// Root (the hostile install test runs `strobe install` as another uid on
/// files a third owns), and whether root may also make a device node (the
/// hostile export test; a container can drop CAP_MKNOD even for root).
fn probe_root() {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    set("strobe_root");
    let node = std::env::temp_dir().join(format!("strobe-mknod-probe-{}", std::process::id()));
    let Ok(c_node) = std::ffi::CString::new(node.as_os_str().as_encoded_bytes()) else {
        return;
    };
    // The node of /dev/full (1, 7), as the test makes, in the temporary
    // folder the test makes it in; removed straight away.
    // SAFETY: mknod(2) of a new node at a path of our own, NUL-terminated.
    let made =
        unsafe { libc::mknod(c_node.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(1, 7)) } == 0;
    if made {
        let _ = std::fs::remove_file(&node);
        set("strobe_mknod");
    }
}

/// cargo-nextest where the nextest adapter looks for it: on PATH, or in
/// `$CARGO_HOME/bin` (`~/.cargo/bin`).
fn probe_nextest() {
    let cargo_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .map(|h| h.join("bin"));
    let path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let found = path
        .iter()
        .chain(&cargo_bin)
        .map(|d| d.join("cargo-nextest"))
        .find(|p| p.is_file());
    match found {
        Some(nextest) => {
            watch(&nextest);
            set("strobe_cargo_nextest");
        }
        // `cargo install cargo-nextest` puts it there.
        None => {
            if let Some(dir) = cargo_bin.filter(|d| d.is_dir()) {
                watch(&dir);
            }
        }
    }
}
