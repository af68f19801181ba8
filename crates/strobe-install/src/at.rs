//! The few `*at` system calls the installer's writes are built on: every
//! name is opened relative to an open folder, with `O_NOFOLLOW`, so a
//! symbolic link (or a folder swapped for one) is never followed by
//! accident; files are created with `O_EXCL`, so nothing that is already
//! there is written through; nothing is opened that could block (a FIFO
//! is recognised before it is opened, and opened with `O_NONBLOCK` anyway).

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What `lstat` says about a name: its kind, owner, mode and identity.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stat {
    /// `st_mode` (type and permission bits).
    pub mode: u32,
    /// The owner.
    pub uid: u32,
    /// The group.
    pub gid: u32,
    /// Device and inode: the file's identity.
    pub id: (u64, u64),
}

impl Stat {
    fn of(st: &libc::stat) -> Stat {
        Stat {
            mode: st.st_mode,
            uid: st.st_uid,
            gid: st.st_gid,
            id: (st.st_dev, st.st_ino),
        }
    }

    fn kind(&self) -> u32 {
        self.mode & libc::S_IFMT
    }

    /// A regular file.
    pub fn is_file(&self) -> bool {
        self.kind() == libc::S_IFREG
    }

    /// A folder.
    pub fn is_dir(&self) -> bool {
        self.kind() == libc::S_IFDIR
    }

    /// A symbolic link.
    pub fn is_link(&self) -> bool {
        self.kind() == libc::S_IFLNK
    }

    /// The kind in words, for messages ("a FIFO (named pipe)").
    pub fn kind_name(&self) -> &'static str {
        match self.kind() {
            libc::S_IFREG => "a regular file",
            libc::S_IFDIR => "a folder",
            libc::S_IFLNK => "a symbolic link",
            libc::S_IFIFO => "a FIFO (named pipe)",
            libc::S_IFCHR => "a character device",
            libc::S_IFBLK => "a block device",
            libc::S_IFSOCK => "a socket",
            _ => "an unknown kind of file",
        }
    }

    /// The permission bits.
    pub fn perm(&self) -> u32 {
        self.mode & 0o7777
    }
}

fn cstr(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::ErrorKind::InvalidInput.into())
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// An open folder that names are looked up in.
pub(crate) struct Dir {
    fd: OwnedFd,
    /// Its path, for messages.
    pub path: PathBuf,
}

const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;

impl Dir {
    /// Opens the folder at `path`, following links on the way (the caller
    /// decides whether that path may hold them).
    pub fn open(path: &Path) -> io::Result<Dir> {
        let c = cstr(path.as_os_str())?;
        // SAFETY: `c` is a valid NUL-terminated string for the call.
        let fd = check(unsafe { libc::open(c.as_ptr(), DIR_FLAGS) })?;
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(Dir {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            path: path.to_path_buf(),
        })
    }

    fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The folder `name` inside this one, never through a link (`ELOOP`
    /// or `ENOTDIR` when `name` is one).
    pub fn subdir(&self, name: &OsStr) -> io::Result<Dir> {
        let c = cstr(name)?;
        // SAFETY: a valid fd and NUL-terminated name.
        let fd =
            check(unsafe { libc::openat(self.raw(), c.as_ptr(), DIR_FLAGS | libc::O_NOFOLLOW) })?;
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(Dir {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            path: self.path.join(name),
        })
    }

    /// Makes the folder `name` here (`EEXIST` when something is there).
    pub fn mkdir(&self, name: &OsStr) -> io::Result<()> {
        let c = cstr(name)?;
        // SAFETY: a valid fd and NUL-terminated name.
        check(unsafe { libc::mkdirat(self.raw(), c.as_ptr(), 0o755) }).map(|_| ())
    }

    /// `lstat` of `name` here; `None` when there is nothing by that name.
    pub fn stat(&self, name: &OsStr) -> io::Result<Option<Stat>> {
        let c = cstr(name)?;
        // SAFETY: zeroed memory is a valid `stat` to be filled in.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid fd, NUL-terminated name and out-pointer.
        let rc =
            unsafe { libc::fstatat(self.raw(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
        match check(rc) {
            Ok(_) => Ok(Some(Stat::of(&st))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Where the link `name` here points (as written in the link).
    pub fn readlink(&self, name: &OsStr) -> io::Result<PathBuf> {
        let c = cstr(name)?;
        let mut buf = vec![0u8; 4096];
        // SAFETY: a valid fd, NUL-terminated name and buffer of that size.
        let n =
            unsafe { libc::readlinkat(self.raw(), c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        buf.truncate(n as usize);
        Ok(PathBuf::from(OsStr::from_bytes(&buf)))
    }

    /// Opens the regular file `name` here for reading: never through a
    /// link, never blocking (a FIFO opens at once with `O_NONBLOCK`), and
    /// checked to be a regular file on the open descriptor, so a swap
    /// between a look and the open is caught.
    pub fn open_file(&self, name: &OsStr) -> io::Result<(File, Stat)> {
        let c = cstr(name)?;
        let flags =
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
        // SAFETY: a valid fd and NUL-terminated name.
        let fd = check(unsafe { libc::openat(self.raw(), c.as_ptr(), flags) })?;
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let file = unsafe { File::from_raw_fd(fd) };
        let st = fstat(file.as_raw_fd())?;
        Ok((file, st))
    }

    /// Creates `name` here, only if nothing at all is by that name (a
    /// link there is not followed: `EEXIST`), with `mode`.
    pub fn create_new(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        let c = cstr(name)?;
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a valid fd and NUL-terminated name.
        let fd =
            check(unsafe { libc::openat(self.raw(), c.as_ptr(), flags, mode as libc::c_uint) })?;
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Renames `from` to `to`, both here (a link at `to` is replaced, never
    /// followed).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (f, t) = (cstr(from)?, cstr(to)?);
        // SAFETY: valid fds and NUL-terminated names.
        check(unsafe { libc::renameat(self.raw(), f.as_ptr(), self.raw(), t.as_ptr()) }).map(|_| ())
    }

    /// Removes the file `name` here (a link is removed, not followed).
    pub fn unlink(&self, name: &OsStr) -> io::Result<()> {
        let c = cstr(name)?;
        // SAFETY: a valid fd and NUL-terminated name.
        check(unsafe { libc::unlinkat(self.raw(), c.as_ptr(), 0) }).map(|_| ())
    }

    /// Removes the empty folder `name` here.
    pub fn rmdir(&self, name: &OsStr) -> io::Result<()> {
        let c = cstr(name)?;
        // SAFETY: a valid fd and NUL-terminated name.
        check(unsafe { libc::unlinkat(self.raw(), c.as_ptr(), libc::AT_REMOVEDIR) }).map(|_| ())
    }

    /// Flushes the folder's entries (a rename in it) to disk.
    pub fn sync(&self) -> io::Result<()> {
        // SAFETY: a valid fd.
        check(unsafe { libc::fsync(self.raw()) }).map(|_| ())
    }

    /// Whether this process may make and rename entries here
    /// (`faccessat(W_OK|X_OK)` on the open folder itself).
    pub fn writable(&self) -> bool {
        // SAFETY: a valid fd and a static NUL-terminated name.
        unsafe { libc::faccessat(self.raw(), c".".as_ptr(), libc::W_OK | libc::X_OK, 0) == 0 }
    }

    /// `fstat` of the folder itself.
    pub fn stat_self(&self) -> io::Result<Stat> {
        fstat(self.raw())
    }
}

/// `fstat` of an open descriptor.
pub(crate) fn fstat(fd: RawFd) -> io::Result<Stat> {
    // SAFETY: zeroed memory is a valid `stat` to be filled in.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid fd and out-pointer.
    check(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(Stat::of(&st))
}

/// Gives the open file `f` the owner `uid` and group `gid`.
pub(crate) fn fchown(f: &File, uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: a valid fd.
    check(unsafe { libc::fchown(f.as_raw_fd(), uid, gid) }).map(|_| ())
}

/// This process's effective user and group.
pub(crate) fn me() -> (u32, u32) {
    // SAFETY: these calls cannot fail.
    unsafe { (libc::geteuid(), libc::getegid()) }
}
