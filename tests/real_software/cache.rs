//! The tier's third-party software: fetched from the registries (crates.io,
//! PyPI, npm) at pinned versions and built on first use into
//! `${XDG_CACHE_HOME:-$HOME/.cache}/strobe/real/`, one directory per name
//! and version, so later runs (and CI's fresh clones on the same machine)
//! find it ready. A directory appears whole or not at all: it is made in a
//! scratch directory and renamed into place, under an exclusive lock that
//! parallel tests and test binaries wait on.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `${XDG_CACHE_HOME:-$HOME/.cache}/strobe/real`.
pub fn root() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("HOME or XDG_CACHE_HOME must be set: the real-software tests cache their builds");
    base.join("strobe/real")
}

unsafe extern "C" {
    fn flock(fd: i32, operation: i32) -> i32;
}

/// An exclusive lock on `<root>/<key>.lock`, held until dropped (closing
/// the file releases it, also when a maker panics).
fn lock(key: &str) -> File {
    let root = root();
    std::fs::create_dir_all(&root)
        .unwrap_or_else(|e| panic!("cannot create the cache {}: {e}", root.display()));
    let path = root.join(format!("{key}.lock"));
    let file = File::create(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    const LOCK_EX: i32 = 2;
    // SAFETY: flock(2) on a descriptor this function owns.
    let rc = unsafe { flock(file.as_raw_fd(), LOCK_EX) };
    assert_eq!(rc, 0, "flock {}", path.display());
    file
}

/// The cache directory `key`, made by `make` the first time: `make` fills
/// the empty scratch directory it is given, which is then renamed to
/// `<root>/<key>`. A maker that panicked leaves nothing behind that counts.
pub fn cached(key: &str, make: impl FnOnce(&Path)) -> PathBuf {
    let _lock = lock(key);
    let dir = root().join(key);
    if !dir.is_dir() {
        let scratch = root().join(format!("{key}.partial"));
        let _ = std::fs::remove_dir_all(&scratch);
        std::fs::create_dir_all(&scratch).unwrap();
        make(&scratch);
        std::fs::rename(&scratch, &dir).unwrap();
    }
    dir
}

/// Runs `cmd`, one fetch or build step; a failure panics with what was
/// being done, the registry it needs and the end of its output.
pub fn step(what: &str, registry: &str, cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {:?}: {e}", cmd.get_program()));
    if out.status.success() {
        return;
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let tail: Vec<&str> = text.lines().rev().take(30).collect();
    panic!(
        "{what} failed ({}): the real-software tests fetch pinned packages from {registry} \
         on first use, so it must be reachable (later runs use the cache in {}). \
         Command: {cmd:?}. Its output ends:\n{}",
        out.status,
        root().display(),
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    );
}

/// `cargo`, as the one running this suite names it, with no target
/// directory inherited: `./dev test` points CARGO_TARGET_DIR at Strobe's
/// own, which the running `cargo test` keeps locked.
pub fn cargo() -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    c
}

/// Unpacks the gzipped tarball `archive` into `into`.
pub fn untar(archive: &Path, into: &Path) {
    step(
        &format!("unpacking {}", archive.display()),
        "no registry",
        Command::new("tar")
            .arg("xzf")
            .arg(archive)
            .arg("-C")
            .arg(into),
    );
}

/// The one file in `dir` whose name ends with `suffix` (what pip and npm
/// just downloaded there).
pub fn only_file(dir: &Path, suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one *{suffix} in {}: {found:?}",
        dir.display()
    );
    found.into_iter().next().unwrap()
}

/// A copy of the cached tree `from` inside `to`, for a test to run in
/// (Python writes `__pycache__` beside the sources; the cache stays as
/// fetched).
pub fn copy_tree(from: &Path, to: &Path) {
    step(
        &format!("copying {}", from.display()),
        "no registry",
        Command::new("cp").arg("-a").arg(from).arg(to),
    );
}
