//! Bounded directory walks for detection and test discovery.
//!
//! A project root is whatever the caller names, and `/usr` holds a symlink
//! cycle (`/usr/bin/X11 -> .`): a walk that followed it ran for minutes and
//! took half a gigabyte. Every walk here is bounded in depth, entries and
//! time, never follows a symbolic link (entries are typed by `lstat`, so a
//! link to a directory is a link, not a directory), only hands out regular
//! files (a FIFO named like a test file would block whoever reads it), and
//! stops when its [`Cancel`] flag is raised (daemon shutdown). Giving up is
//! an error that says where and why, never a silent partial answer.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Most entries (files and directories) one walk looks at.
pub const MAX_ENTRIES: usize = 200_000;
/// Deepest directory one walk enters below its root.
pub const MAX_DEPTH: usize = 24;
/// Longest one walk may take.
pub const MAX_TIME: Duration = Duration::from_secs(10);

/// A flag that stops walks (and other cancellable work of a request) when
/// raised; clones share it. A request's flag can sit [`Cancel::within`] the
/// daemon's, so either the caller giving up or shutdown stops its work.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    outer: Option<Arc<AtomicBool>>,
}

impl Cancel {
    /// Raises the flag: walks in progress stop at their next entry.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    /// Whether the flag, or the one it sits within, is raised.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
            || self
                .outer
                .as_ref()
                .is_some_and(|o| o.load(Ordering::SeqCst))
    }

    /// This flag, also raised whenever `outer`'s own flag is (one level:
    /// `outer`'s outer does not carry over).
    pub fn within(&self, outer: &Cancel) -> Cancel {
        Cancel {
            flag: self.flag.clone(),
            outer: Some(outer.flag.clone()),
        }
    }
}

impl PartialEq for Cancel {
    /// Flags do not tell targets apart.
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for Cancel {}

/// Why a walk gave up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WalkError {
    /// More entries than [`Limits::entries`].
    #[error(
        "gave up looking for {what} under {root}: more than {limit} files and directories; is projectRoot the project's own directory?"
    )]
    TooManyEntries {
        /// What was looked for.
        what: String,
        /// The walk's root.
        root: String,
        /// The limit.
        limit: usize,
    },
    /// Longer than [`Limits::time`].
    #[error(
        "gave up looking for {what} under {root} after {secs} s ({entries} entries read); is projectRoot the project's own directory?"
    )]
    TooSlow {
        /// What was looked for.
        what: String,
        /// The walk's root.
        root: String,
        /// The limit, in seconds.
        secs: u64,
        /// Entries read by then.
        entries: usize,
    },
    /// The caller cancelled the request, or the daemon is shutting down.
    #[error(
        "stopped looking for {what} under {root}: the request was cancelled or the daemon is shutting down"
    )]
    Cancelled {
        /// What was looked for.
        what: String,
        /// The walk's root.
        root: String,
    },
}

/// A walk's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most entries looked at.
    pub entries: usize,
    /// Deepest level entered (the root's entries are depth 0).
    pub depth: usize,
    /// Longest it may take.
    pub time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            entries: MAX_ENTRIES,
            depth: MAX_DEPTH,
            time: MAX_TIME,
        }
    }
}

/// One entry the walk met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its path relative to the root.
    pub rel: PathBuf,
    /// Its file name.
    pub name: String,
    /// A real directory (not a link to one).
    pub is_dir: bool,
    /// A regular file (not a link, FIFO, socket or device).
    pub is_file: bool,
    /// Its depth: 0 for the root's own entries.
    pub depth: usize,
}

impl Entry {
    /// Its path under `root`.
    pub fn path(&self, root: &Path) -> PathBuf {
        root.join(&self.rel)
    }
}

/// Walks `root` depth-first, calling `visit` on every entry; a directory is
/// entered when `visit` returns true for it (and it is within the depth
/// limit). `what` names what is looked for, for the error.
pub fn walk(
    root: &Path,
    what: &str,
    limits: Limits,
    cancel: &Cancel,
    mut visit: impl FnMut(&Entry) -> bool,
) -> Result<(), WalkError> {
    let started = Instant::now();
    let mut seen = 0usize;
    let mut dirs: Vec<(PathBuf, usize)> = vec![(PathBuf::new(), 0)];
    let root_text = || root.display().to_string();
    while let Some((rel, depth)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        let mut sub = Vec::new();
        for e in entries.flatten() {
            if cancel.is_cancelled() {
                return Err(WalkError::Cancelled {
                    what: what.into(),
                    root: root_text(),
                });
            }
            seen += 1;
            if seen > limits.entries {
                return Err(WalkError::TooManyEntries {
                    what: what.into(),
                    root: root_text(),
                    limit: limits.entries,
                });
            }
            if started.elapsed() > limits.time {
                return Err(WalkError::TooSlow {
                    what: what.into(),
                    root: root_text(),
                    secs: limits.time.as_secs(),
                    entries: seen,
                });
            }
            // DirEntry::file_type does not follow links.
            let Ok(kind) = e.file_type() else { continue };
            let name = e.file_name().to_string_lossy().into_owned();
            let entry = Entry {
                rel: rel.join(&name),
                name,
                is_dir: kind.is_dir(),
                is_file: kind.is_file(),
                depth,
            };
            if visit(&entry) && entry.is_dir && depth < limits.depth {
                sub.push((entry.rel, depth + 1));
            }
        }
        // Depth-first in name order, so results do not depend on the
        // order the file system lists entries in.
        sub.sort();
        dirs.extend(sub.into_iter().rev());
    }
    Ok(())
}

/// The text of a regular file of at most `max` bytes; `None` for anything
/// else (a FIFO would block, a device never end).
pub fn read_small_file(path: &Path, max: u64) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > max {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(root: &Path, limits: Limits) -> Result<Vec<String>, WalkError> {
        let mut out = Vec::new();
        walk(root, "files", limits, &Cancel::default(), |e| {
            out.push(e.rel.display().to_string());
            true
        })?;
        Ok(out)
    }

    #[test]
    fn symlink_cycles_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::fs::write(dir.path().join("bin/tool"), "").unwrap();
        std::os::unix::fs::symlink(".", dir.path().join("bin/X11")).unwrap();
        std::os::unix::fs::symlink("..", dir.path().join("bin/up")).unwrap();
        let mut found = names(dir.path(), Limits::default()).unwrap();
        found.sort();
        assert_eq!(found, ["bin", "bin/X11", "bin/tool", "bin/up"]);
    }

    #[test]
    fn a_wide_tree_gives_up_with_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..30 {
            std::fs::write(dir.path().join(format!("f{i}")), "").unwrap();
        }
        let limits = Limits {
            entries: 20,
            ..Limits::default()
        };
        let e = names(dir.path(), limits).unwrap_err();
        assert!(
            matches!(e, WalkError::TooManyEntries { limit: 20, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("projectRoot"), "{e}");
    }

    #[test]
    fn depth_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b/c/d")).unwrap();
        let limits = Limits {
            depth: 1,
            ..Limits::default()
        };
        assert_eq!(names(dir.path(), limits).unwrap(), ["a", "a/b"]);
    }

    #[test]
    fn a_raised_flag_stops_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "").unwrap();
        let cancel = Cancel::default();
        cancel.clone().cancel();
        let e = walk(dir.path(), "tests", Limits::default(), &cancel, |_| true).unwrap_err();
        assert!(e.to_string().contains("shutting down"), "{e}");
    }

    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("test_x.py");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        assert_eq!(read_small_file(&fifo, 1 << 20), None, "a FIFO is not read");
        let file = dir.path().join("test_y.py");
        std::fs::write(&file, "def test_y(): pass\n").unwrap();
        assert!(read_small_file(&file, 1 << 20).is_some());
        assert_eq!(read_small_file(&file, 3), None, "too big");
    }

    #[test]
    fn a_request_flag_within_the_daemons_stops_on_either() {
        let daemon = Cancel::default();
        let request = Cancel::default();
        let joined = request.within(&daemon);
        assert!(!joined.is_cancelled());
        request.cancel();
        assert!(joined.is_cancelled(), "the caller gave up");
        assert!(!daemon.is_cancelled(), "other requests go on");
        let daemon = Cancel::default();
        let joined = Cancel::default().within(&daemon);
        daemon.cancel();
        assert!(joined.is_cancelled(), "shutdown");
    }
}
