//! Files a channel reaches, kept inside the session's project root.
//!
//! A project is often a repository just cloned, and its files, links and
//! scenarios may be hostile: a committed `conf/app.ini -> ~/.bashrc`, a
//! scenario that adds `file:/etc/passwd`. So a channel resolves the
//! directory it works in once, symbolic links and `..` included, refuses it
//! outside the project unless the agent opted in
//! (`debug_channel {action: "add", allowOutsideProject: true}`), and keeps
//! it open as a descriptor: every later open, stat and unlink is relative
//! to that descriptor and never follows a link at the last component, so a
//! directory renamed or a link made after the check cannot redirect it.
//! Nothing here waits on a FIFO: opens are non-blocking, and a write into
//! a FIFO waits a bounded time for its reader to drain it.

use std::ffi::CString;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What a directory entry is, seen without following a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Nothing of that name.
    Missing,
    /// A regular file.
    Regular,
    /// A symbolic link (never followed).
    Link,
    /// A directory.
    Dir,
    /// A named pipe.
    Fifo,
    /// A device node or a socket.
    Special,
}

impl Entry {
    /// "a FIFO", "a directory": for errors.
    pub(crate) fn described(self) -> &'static str {
        match self {
            Entry::Missing => "missing",
            Entry::Regular => "a regular file",
            Entry::Link => "a symbolic link",
            Entry::Dir => "a directory",
            Entry::Fifo => "a FIFO",
            Entry::Special => "a device or socket",
        }
    }
}

/// Why a path could not be reached; each says what to do instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReachError {
    /// The path resolves outside the project and the agent did not opt in.
    #[error(
        "{given} is outside the project root {root} (symbolic links and '..' resolved): a channel only reaches \
         files inside the project, so a repository's scenario or launch cannot touch the rest of the disk. \
         To reach it anyway, add the channel yourself with debug_channel {{action: \"add\", channel: {spec:?}, \
         allowOutsideProject: true}}"
    )]
    Outside {
        /// The path as given.
        given: String,
        /// The project root, resolved.
        root: String,
        /// The channel spec to add with the opt-in.
        spec: String,
    },
    /// The directory does not exist.
    #[error("directory {0} does not exist: create it, or point the channel at an existing one")]
    NoDir(String),
    /// The directory was replaced between its check and its open.
    #[error("{0} changed while it was being opened (a link swapped in?): add the channel again")]
    Moved(String),
    /// Any other failure of the system call.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, to which path.
        what: String,
        /// The failure.
        source: std::io::Error,
    },
}

/// A directory inside the project (or outside it, opted in), held open.
pub(crate) struct ProjectDir {
    fd: OwnedFd,
    /// Its path, links resolved.
    pub(crate) path: PathBuf,
    /// The project root, links resolved.
    root: PathBuf,
    /// It lies outside the project root (the agent opted in).
    pub(crate) outside: bool,
}

fn c_path(p: &Path) -> CString {
    // A path from the OS or a JSON string with its NULs refused earlier.
    CString::new(p.as_os_str().as_bytes()).unwrap_or_default()
}

fn c_name(name: &str) -> std::io::Result<CString> {
    CString::new(name).map_err(|_| std::io::Error::from(ErrorKind::InvalidInput))
}

/// The path an open descriptor names, from /proc (links resolved).
fn fd_path(fd: &impl AsRawFd) -> std::io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// The project root with its links resolved.
fn resolved_root(root: &Path) -> Result<PathBuf, ReachError> {
    root.canonicalize().map_err(|source| ReachError::Io {
        what: format!("project root {}", root.display()),
        source,
    })
}

impl ProjectDir {
    /// Opens `dir` (resolved) after checking it lies under `root`, or
    /// `outside_ok`; `given` and `spec` name it in a refusal.
    pub(crate) fn open(
        root: &Path,
        dir: &Path,
        outside_ok: bool,
        given: &str,
        spec: &str,
    ) -> Result<ProjectDir, ReachError> {
        let root = resolved_root(root)?;
        let resolved = match dir.canonicalize() {
            Ok(d) => d,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(ReachError::NoDir(dir.display().to_string()));
            }
            Err(source) => {
                return Err(ReachError::Io {
                    what: format!("directory {}", dir.display()),
                    source,
                });
            }
        };
        let outside = !resolved.starts_with(&root);
        if outside && !outside_ok {
            return Err(ReachError::Outside {
                given: given.to_string(),
                root: root.display().to_string(),
                spec: spec.to_string(),
            });
        }
        let c = c_path(&resolved);
        // SAFETY: a NUL-terminated path; the descriptor is owned below.
        let raw = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(ReachError::Io {
                what: format!("directory {}", dir.display()),
                source: std::io::Error::last_os_error(),
            });
        }
        // SAFETY: a descriptor just opened, owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // A component swapped for a link between the check and the open
        // would show here: the descriptor must name what was checked.
        if fd_path(&fd).ok().as_deref() != Some(resolved.as_path()) {
            return Err(ReachError::Moved(dir.display().to_string()));
        }
        Ok(ProjectDir {
            fd,
            path: resolved,
            root,
            outside,
        })
    }

    /// `name` as the project sees it: relative to the root when inside.
    pub(crate) fn shown(&self, name: &str) -> String {
        let p = self.path.join(name);
        p.strip_prefix(&self.root)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| p.display().to_string())
    }

    /// What `name` is, without following a link.
    pub(crate) fn entry(&self, name: &str) -> std::io::Result<Entry> {
        let c = c_name(name)?;
        // SAFETY: an all-zero stat is valid; fstatat fills it.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: our directory descriptor, a NUL-terminated name, a
        // writable stat.
        let r = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            return if e.kind() == ErrorKind::NotFound {
                Ok(Entry::Missing)
            } else {
                Err(e)
            };
        }
        Ok(match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Entry::Regular,
            libc::S_IFLNK => Entry::Link,
            libc::S_IFDIR => Entry::Dir,
            libc::S_IFIFO => Entry::Fifo,
            _ => Entry::Special,
        })
    }

    /// Where link `name` leads: `Some(path shown)` inside the project,
    /// `None` outside it or dangling. The link's target is never opened.
    pub(crate) fn link_inside(&self, name: &str) -> Option<String> {
        let target = self.path.join(name).canonicalize().ok()?;
        target
            .strip_prefix(&self.root)
            .ok()
            .map(|r| r.display().to_string())
    }

    /// Opens `name` with `flags`, never following a link (ELOOP) and never
    /// waiting on a FIFO (ENXIO when it has no reader, for a write).
    pub(crate) fn open_at(&self, name: &str, flags: i32) -> std::io::Result<File> {
        let c = c_name(name)?;
        let flags = flags | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
        // SAFETY: our directory descriptor and a NUL-terminated name; the
        // descriptor returned is owned by the File.
        let raw = unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, 0o666) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a descriptor just opened, owned by nothing else.
        Ok(unsafe { File::from_raw_fd(raw) })
    }

    /// Removes the entry `name` (a link itself, never what it points to).
    pub(crate) fn unlink_at(&self, name: &str) -> std::io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: our directory descriptor and a NUL-terminated name.
        if unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// The size and first `max` bytes of regular file `name`; nothing for
    /// a link (what it points to may be outside), a FIFO or a device.
    pub(crate) fn head(&self, name: &str, max: usize) -> Option<(u64, Vec<u8>)> {
        let f = self.open_at(name, libc::O_RDONLY).ok()?;
        let meta = f.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        let mut head = Vec::with_capacity(max);
        f.take(max as u64).read_to_end(&mut head).ok()?;
        Some((meta.len(), head))
    }
}

/// Reads regular file `path` (relative to `root`) whole, up to `max`
/// bytes: refused outside the project unless `outside_ok`, and never a
/// FIFO or device (which would block or never end).
pub(crate) fn read_file(
    root: &Path,
    path: &str,
    outside_ok: bool,
    spec: &str,
    max: u64,
) -> Result<Vec<u8>, String> {
    let full = root.join(path);
    let resolved = full.canonicalize().map_err(|e| format!("{path}: {e}"))?;
    let root_resolved = resolved_root(root).map_err(|e| e.to_string())?;
    let outside = |p: &Path| !p.starts_with(&root_resolved);
    let refused = || {
        ReachError::Outside {
            given: path.to_string(),
            root: root_resolved.display().to_string(),
            spec: spec.to_string(),
        }
        .to_string()
    };
    if outside(&resolved) && !outside_ok {
        return Err(refused());
    }
    let c = c_path(&resolved);
    // SAFETY: a NUL-terminated path; the descriptor is owned by the File.
    let raw = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(format!("{path}: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: a descriptor just opened, owned by nothing else.
    let f = unsafe { File::from_raw_fd(raw) };
    // What was opened, not what was checked: a link swapped in between
    // would lead elsewhere.
    let opened = fd_path(&f).map_err(|e| format!("{path}: {e}"))?;
    if outside(&opened) && !outside_ok {
        return Err(refused());
    }
    let meta = f.metadata().map_err(|e| format!("{path}: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "{path} is not a regular file (a FIFO or device would never end): give a file"
        ));
    }
    if meta.len() > max {
        return Err(format!(
            "{path} is {} bytes, more than the {max} read",
            meta.len()
        ));
    }
    let mut out = Vec::new();
    f.take(max)
        .read_to_end(&mut out)
        .map_err(|e| format!("{path}: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mkfifo(p: &Path) {
        let c = c_path(p);
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn a_directory_outside_the_root_is_refused_unless_opted_in() {
        let root = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("conf")).unwrap();
        symlink(out.path(), root.path().join("away")).unwrap();
        let open = |dir: &Path, ok| ProjectDir::open(root.path(), dir, ok, "x", "file:x");
        assert!(!open(&root.path().join("conf"), false).unwrap().outside);
        for dir in [
            root.path().join(".."),
            root.path().join("away"),
            out.path().to_path_buf(),
        ] {
            let e = open(&dir, false).err().unwrap().to_string();
            assert!(e.contains("allowOutsideProject: true"), "{e}");
        }
        assert!(open(out.path(), true).unwrap().outside);
    }

    #[test]
    fn entries_are_seen_without_following_links_and_fifos_never_block() {
        let root = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("canary"), "keep").unwrap();
        symlink(out.path().join("canary"), root.path().join("link.ini")).unwrap();
        mkfifo(&root.path().join("pipe"));
        std::fs::write(root.path().join("a.ini"), "x=1").unwrap();
        let d = ProjectDir::open(root.path(), root.path(), false, ".", "file:*").unwrap();
        assert_eq!(d.entry("link.ini").unwrap(), Entry::Link);
        assert_eq!(d.entry("pipe").unwrap(), Entry::Fifo);
        assert_eq!(d.entry("a.ini").unwrap(), Entry::Regular);
        assert_eq!(d.entry("none").unwrap(), Entry::Missing);
        assert_eq!(d.link_inside("link.ini"), None);
        let e = d.open_at("link.ini", libc::O_WRONLY).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
        // No reader: ENXIO at once, not a wait in openat.
        let e = d.open_at("pipe", libc::O_WRONLY).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENXIO));
        assert_eq!(d.head("link.ini", 10), None, "a link's target is not read");
        assert_eq!(d.head("pipe", 10), None);
        assert_eq!(d.head("a.ini", 10), Some((3, b"x=1".to_vec())));
        assert_eq!(
            std::fs::read_to_string(out.path().join("canary")).unwrap(),
            "keep"
        );
    }

    #[test]
    fn a_file_read_stays_in_the_project_and_never_reads_a_fifo() {
        let root = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("secret"), "s").unwrap();
        symlink(out.path().join("secret"), root.path().join("in.wav")).unwrap();
        mkfifo(&root.path().join("pipe.wav"));
        std::fs::write(root.path().join("ok.wav"), "RIFF").unwrap();
        let read = |p: &str, ok| read_file(root.path(), p, ok, "audio", 100);
        assert_eq!(read("ok.wav", false).unwrap(), b"RIFF");
        let e = read("in.wav", false).unwrap_err();
        assert!(e.contains("outside the project root"), "{e}");
        let e = read(out.path().join("secret").to_str().unwrap(), false).unwrap_err();
        assert!(e.contains("allowOutsideProject"), "{e}");
        assert_eq!(read("in.wav", true).unwrap(), b"s");
        let e = read("pipe.wav", false).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
    }
}
