//! The files an `assert: file` check may look at: paths relative to the
//! project root that stay inside it once every symbolic link is resolved.
//! A scenario can come from the repository itself, so an absolute path, a
//! `..` or a link out of the tree is refused before anything is read, and
//! no byte of a file outside the project reaches a reply.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// The most of a file a `contains` check searches (a larger file's head).
pub(crate) const MAX_READ_BYTES: u64 = 16 << 20;

/// What a check found at a path inside the project.
#[derive(Debug, PartialEq)]
pub(crate) enum Look {
    /// Nothing is there.
    Missing,
    /// Something that is not a regular file (its kind: "a FIFO"…); it is
    /// never opened, since opening a FIFO or a device can block or act.
    Other(&'static str),
    /// A regular file: its size and, when asked, its text (the first
    /// [`MAX_READ_BYTES`]).
    File {
        /// Its size in bytes.
        len: u64,
        /// Its text, when it was read.
        text: Option<String>,
    },
}

/// Why a path is refused: it says what the path is and what file checks take.
fn outside(path: &str, why: String, root: &Path) -> String {
    format!(
        "{path:?} {why}: file checks take a path relative to the project root ({}) that stays \
         inside it, links resolved; a file outside the project is neither read nor shown",
        root.display()
    )
}

/// `path` resolved inside `root` (canonical, every link followed), or why
/// it is refused: absolute, climbing with `..`, or leading (through a link)
/// out of the root. The part that does not exist yet holds no link, so the
/// deepest existing part decides; a link that points nowhere is refused,
/// since what it points at may be created later.
pub(crate) fn resolve(root: &Path, path: &str) -> Result<PathBuf, String> {
    let rel = Path::new(path);
    if rel.is_absolute() {
        return Err(outside(path, "is absolute".into(), root));
    }
    if rel.components().any(|c| c == Component::ParentDir) {
        return Err(outside(path, "climbs out with \"..\"".into(), root));
    }
    let root = root
        .canonicalize()
        .map_err(|e| format!("the project root {}: {e}", root.display()))?;
    let full = root.join(rel);
    let mut existing = full.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    let resolved = loop {
        match existing.canonicalize() {
            Ok(c) => break c,
            Err(_) => {
                if std::fs::symlink_metadata(existing).is_ok() {
                    let to = std::fs::read_link(existing)
                        .map(|t| t.display().to_string())
                        .unwrap_or_default();
                    return Err(outside(
                        path,
                        format!("goes through a link that points nowhere ({to})"),
                        &root,
                    ));
                }
                let (Some(name), Some(parent)) = (existing.file_name(), existing.parent()) else {
                    return Err(format!("{path:?}: cannot be resolved"));
                };
                rest.push(name);
                existing = parent;
            }
        }
    };
    if !resolved.starts_with(&root) {
        return Err(outside(
            path,
            "leads out of the project through a symbolic link".into(),
            &root,
        ));
    }
    Ok(rest.into_iter().rev().fold(resolved, |p, n| p.join(n)))
}

fn kind(ft: &std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Looks at `path` (inside `root`, see [`resolve`]); reads its text when
/// `read`. Opened without following a link and without blocking, and
/// checked to be a regular file once open, so a link or a FIFO swapped in
/// after the check is not read through.
pub(crate) fn look(root: &Path, path: &str, read: bool) -> Result<Look, String> {
    let full = resolve(root, path)?;
    let meta = match std::fs::symlink_metadata(&full) {
        Ok(m) => m,
        // A path under a regular file (ENOTDIR) does not exist either.
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return Ok(Look::Missing);
        }
        Err(e) => return Err(format!("{path}: {e}")),
    };
    if !meta.file_type().is_file() {
        return Ok(Look::Other(kind(&meta.file_type())));
    }
    if !read {
        return Ok(Look::File {
            len: meta.len(),
            text: None,
        });
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&full)
        .map_err(|e| format!("{path}: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("{path}: {e}"))?;
    if !meta.file_type().is_file() {
        return Ok(Look::Other(kind(&meta.file_type())));
    }
    let mut bytes = Vec::new();
    file.take(MAX_READ_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{path}: {e}"))?;
    Ok(Look::File {
        len: meta.len(),
        text: Some(String::from_utf8_lossy(&bytes).into_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_root_with_links_resolved() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("project");
        std::fs::create_dir_all(root.join("conf")).unwrap();
        std::fs::write(root.join("conf/a.ini"), "x=1").unwrap();
        std::fs::write(outer.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret"), root.join("out")).unwrap();
        std::os::unix::fs::symlink(outer.path(), root.join("up")).unwrap();
        std::os::unix::fs::symlink("conf/a.ini", root.join("in")).unwrap();
        std::os::unix::fs::symlink(outer.path().join("none"), root.join("dangling")).unwrap();
        let canon = root.canonicalize().unwrap();
        assert_eq!(
            resolve(&root, "conf/a.ini").unwrap(),
            canon.join("conf/a.ini")
        );
        assert_eq!(resolve(&root, "in").unwrap(), canon.join("conf/a.ini"));
        assert_eq!(
            resolve(&root, "conf/new/b.ini").unwrap(),
            canon.join("conf/new/b.ini")
        );
        let refused = |p: &str, says: &str| {
            let e = resolve(&root, p).unwrap_err();
            assert!(e.contains(says), "{p}: {e}");
        };
        refused("/etc/passwd", "is absolute");
        refused("../secret", "climbs out");
        refused("conf/../../secret", "climbs out");
        refused("out", "leads out of the project");
        refused("up/secret", "leads out of the project");
        refused("up/missing/x", "leads out of the project");
        refused("dangling", "points nowhere");
    }

    #[test]
    fn only_regular_files_are_read() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("f"), "hello").unwrap();
        std::fs::create_dir(root.path().join("d")).unwrap();
        assert_eq!(
            look(root.path(), "f", true).unwrap(),
            Look::File {
                len: 5,
                text: Some("hello".into())
            }
        );
        assert_eq!(
            look(root.path(), "d", true).unwrap(),
            Look::Other("a directory")
        );
        assert_eq!(look(root.path(), "none", true).unwrap(), Look::Missing);
        assert_eq!(look(root.path(), "f/under", true).unwrap(), Look::Missing);
    }
}
