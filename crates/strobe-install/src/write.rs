//! Safe reads and writes. A file is read only if it is a regular file
//! (a FIFO, device or socket is refused before it is opened, and the open
//! itself cannot block); it is backed up next to itself in a new file
//! (`<file>.strobe-backup`, else `.strobe-backup.1`, … — an existing one
//! is never written over, and a link there is never followed), and
//! replaced by a temporary file renamed over it with its permissions and
//! owner, so a crash mid-write leaves the old file or the new one.
//!
//! Links are where a hostile repository attacks: in a project every name
//! on the way from the project's folder to the file is opened without
//! following links, and a link is refused. In the person's own configs a
//! dotfiles link is followed only when its target stays inside their home
//! (or `$XDG_CONFIG_HOME`), and the outcome says it was.

use crate::at::{self, Dir, Stat};
use crate::{BACKUP_SUFFIX, Env, InstallError, Scope};
use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

/// Mode of a file the installer creates (agents' configs can hold keys).
const NEW_FILE_MODE: u32 = 0o600;

/// Backups kept beside one file before the installer stops making more.
const MAX_BACKUPS: usize = 100;

/// Where a scope's files may be, and whether links on the way are followed.
#[derive(Debug, Clone)]
pub(crate) enum Fence {
    /// Everything under `root`, no link followed.
    Project {
        /// The project's folder.
        root: PathBuf,
    },
    /// The person's own files: their links are theirs, but a link to a
    /// config is followed only into these folders (resolved).
    User {
        /// Home and the config home, resolved.
        homes: Vec<PathBuf>,
    },
}

impl Fence {
    /// The fence of `scope` on `env`.
    pub(crate) fn of(env: &Env, scope: Scope) -> Fence {
        match scope {
            Scope::Project => Fence::Project {
                root: env.project.clone(),
            },
            Scope::User => Fence::User {
                homes: [&env.home, &env.config_home]
                    .iter()
                    .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()))
                    .collect(),
            },
        }
    }
}

/// A file as read: its text, and where a write to it goes.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The file asked for.
    pub path: PathBuf,
    /// The file written: `path`, or in user scope the target of the link
    /// `path` is.
    pub real: PathBuf,
    /// `path` is a link, to `real`.
    pub via_link: bool,
    /// Its content; `None` when there is no such file yet.
    pub text: Option<String>,
    /// What it was when read (`None`: not there).
    stat: Option<Stat>,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Written {
    /// The file is new.
    Created,
    /// The file was changed; its old content is in the backup.
    Changed {
        /// The backup.
        backup: PathBuf,
    },
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// The error for `EACCES` on `path` (whose `lstat` is `st`): another
/// user's file, or the person's own with a mode that forbids it.
fn denied(path: &Path, st: Option<Stat>, write: bool) -> InstallError {
    let (me, _) = at::me();
    match st {
        Some(st) if st.uid != me => InstallError::NotYours {
            path: shown(path),
            owner: st.uid,
            me,
            doing: match (write, st.is_dir()) {
                (_, true) => "write in",
                (true, false) => "change",
                (false, false) => "read",
            },
        },
        Some(st) if !write => InstallError::Unreadable {
            path: shown(path),
            mode: st.perm(),
        },
        _ => InstallError::ReadOnly { path: shown(path) },
    }
}

fn io_err(path: &Path, source: io::Error, st: Option<Stat>, write: bool) -> InstallError {
    if source.kind() == io::ErrorKind::PermissionDenied {
        return denied(path, st, write);
    }
    InstallError::Io {
        path: shown(path),
        source,
    }
}

/// `path`'s folder and name.
fn split(path: &Path) -> Result<(&Path, &OsStr), InstallError> {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => Ok((dir, name)),
        _ => Err(io_err(
            path,
            io::ErrorKind::InvalidInput.into(),
            None,
            false,
        )),
    }
}

/// The deepest folder of `dir` that exists, open, and the names below it
/// still missing (outermost first). In a project each name from the root
/// down is opened without following links, and a link is refused.
fn walk(dir: &Path, fence: &Fence) -> Result<(Dir, Vec<OsString>), InstallError> {
    match fence {
        Fence::Project { root } => {
            let rel = dir.strip_prefix(root).map_err(|_| {
                io_err(
                    dir,
                    io::Error::other("outside the project's folder"),
                    None,
                    false,
                )
            })?;
            let mut cur = Dir::open(root).map_err(|e| io_err(root, e, None, false))?;
            let names: Vec<OsString> = rel
                .components()
                .map(|c| match c {
                    Component::Normal(n) => Ok(n.to_os_string()),
                    _ => Err(io_err(dir, io::ErrorKind::InvalidInput.into(), None, false)),
                })
                .collect::<Result<_, _>>()?;
            for (i, name) in names.iter().enumerate() {
                match step(&cur, name)? {
                    Some(next) => cur = next,
                    None => return Ok((cur, names[i..].to_vec())),
                }
            }
            Ok((cur, Vec::new()))
        }
        Fence::User { .. } => {
            // The person's own folders: links in them are theirs.
            let mut at = dir.to_path_buf();
            let mut missing = Vec::new();
            loop {
                match Dir::open(&at) {
                    Ok(d) => {
                        missing.reverse();
                        return Ok((d, missing));
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        let (Some(parent), Some(name)) = (at.parent(), at.file_name()) else {
                            return Err(io_err(&at, e, None, false));
                        };
                        missing.push(name.to_os_string());
                        at = parent.to_path_buf();
                    }
                    Err(e) => {
                        // Whose folder it is decides what the message says.
                        let st = split(&at)
                            .ok()
                            .and_then(|(p, n)| Dir::open(p).ok()?.stat(n).ok()?);
                        return Err(io_err(&at, e, st, false));
                    }
                }
            }
        }
    }
}

/// The folder `name` in `cur`, never through a link; `None` when there
/// is none.
fn step(cur: &Dir, name: &OsStr) -> Result<Option<Dir>, InstallError> {
    let path = cur.path.join(name);
    match cur.subdir(name) {
        Ok(d) => Ok(Some(d)),
        Err(e) => match cur.stat(name).map_err(|e| io_err(&path, e, None, false))? {
            None => Ok(None),
            Some(st) if st.is_link() => Err(InstallError::ProjectLink {
                target: cur
                    .readlink(name)
                    .map(|t| shown(&t))
                    .unwrap_or_else(|_| "?".into()),
                path: shown(&path),
            }),
            Some(st) if !st.is_dir() => Err(InstallError::NotAFolder {
                path: shown(&path),
                kind: st.kind_name(),
            }),
            Some(st) => Err(io_err(&path, e, Some(st), false)),
        },
    }
}

/// Makes the `missing` folders under `dir` (mode 0755 less the umask),
/// returning the innermost.
fn make(mut dir: Dir, missing: &[OsString]) -> Result<Dir, InstallError> {
    for name in missing {
        let path = dir.path.join(name);
        match dir.mkdir(name) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                let st = dir.stat_self().ok();
                return Err(io_err(&dir.path.clone(), e, st, true));
            }
        }
        dir = step(&dir, name)?.ok_or_else(|| InstallError::Changed { path: shown(&path) })?;
    }
    Ok(dir)
}

/// Reads `path` within `fence`: `text` is `None` when there is no file.
pub(crate) fn read(path: &Path, fence: &Fence) -> Result<Found, InstallError> {
    let absent = Found {
        path: path.to_path_buf(),
        real: path.to_path_buf(),
        via_link: false,
        text: None,
        stat: None,
    };
    let (parent, name) = split(path)?;
    let (dir, missing) = walk(parent, fence)?;
    if !missing.is_empty() {
        return Ok(absent);
    }
    let Some(st) = dir.stat(name).map_err(|e| io_err(path, e, None, false))? else {
        return Ok(absent);
    };
    if st.is_link() {
        let target = dir
            .readlink(name)
            .map(|t| shown(&t))
            .unwrap_or_else(|_| "?".into());
        let Fence::User { homes } = fence else {
            return Err(InstallError::ProjectLink {
                path: shown(path),
                target,
            });
        };
        let real = match std::fs::canonicalize(path) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(InstallError::DanglingLink {
                    path: shown(path),
                    target,
                });
            }
            Err(e) => return Err(io_err(path, e, Some(st), false)),
        };
        if !homes.iter().any(|h| real.starts_with(h)) {
            return Err(InstallError::LinkOutsideHome {
                path: shown(path),
                target: shown(&real),
            });
        }
        // The target is resolved, so it is not a link itself (unless it
        // was swapped for one since: then refused as a link).
        let (rparent, rname) = split(&real)?;
        let rdir = Dir::open(rparent).map_err(|e| io_err(rparent, e, None, false))?;
        let rst = rdir
            .stat(rname)
            .map_err(|e| io_err(&real, e, None, false))?;
        let mut found = read_regular(&rdir, rname, &real, rst)?;
        found.path = path.to_path_buf();
        found.via_link = true;
        return Ok(found);
    }
    read_regular(&dir, name, path, Some(st))
}

/// Reads `name` in `dir`, which `lstat` said is `st`, when it is a regular
/// file.
fn read_regular(
    dir: &Dir,
    name: &OsStr,
    path: &Path,
    st: Option<Stat>,
) -> Result<Found, InstallError> {
    let Some(st) = st else {
        return Err(InstallError::Changed { path: shown(path) });
    };
    if !st.is_file() {
        if st.is_link() {
            return Err(InstallError::Changed { path: shown(path) });
        }
        return Err(InstallError::NotRegular {
            path: shown(path),
            kind: st.kind_name(),
        });
    }
    let (mut file, fst) = dir.open_file(name).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::ENXIO) => InstallError::Changed { path: shown(path) },
        _ => io_err(path, e, Some(st), false),
    })?;
    if !fst.is_file() {
        return Err(InstallError::NotRegular {
            path: shown(path),
            kind: fst.kind_name(),
        });
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| io_err(path, e, Some(fst), false))?;
    let text = String::from_utf8(bytes).map_err(|_| InstallError::NotText { path: shown(path) })?;
    Ok(Found {
        path: path.to_path_buf(),
        real: path.to_path_buf(),
        via_link: false,
        text: Some(text),
        stat: Some(fst),
    })
}

/// Refuses a file that is another user's (unless this is root, who keeps
/// its owner), one without its owner's write permission (root could write
/// it anyway: the mode says what its owner wants), or one whose folder
/// cannot be written.
pub(crate) fn check_writable(found: &Found, fence: &Fence) -> Result<(), InstallError> {
    let (me, _) = at::me();
    if let Some(st) = found.stat {
        if st.uid != me && me != 0 {
            return Err(denied(&found.real, Some(st), true));
        }
        if st.perm() & 0o200 == 0 {
            return Err(InstallError::ReadOnly {
                path: shown(&found.real),
            });
        }
    }
    let (parent, _) = split(&found.real)?;
    // The nearest folder that exists is the one a new file's folders go in.
    let (dir, _) = walk(parent, fence)?;
    let st = dir
        .stat_self()
        .map_err(|e| io_err(&dir.path, e, None, false))?;
    if st.perm() & 0o200 == 0 {
        return Err(InstallError::ReadOnly {
            path: shown(&dir.path),
        });
    }
    if !dir.writable() {
        return Err(denied(&dir.path, Some(st), true));
    }
    Ok(())
}

/// The open folder of `found`'s file (made when missing), checked to hold
/// the same file as when it was read (or still none).
fn reopen(found: &Found, fence: &Fence) -> Result<(Dir, OsString), InstallError> {
    let (parent, name) = split(&found.real)?;
    let (dir, missing) = walk(parent, fence)?;
    if found.stat.is_some() && !missing.is_empty() {
        return Err(InstallError::Changed {
            path: shown(&found.real),
        });
    }
    let dir = make(dir, &missing)?;
    let now = dir
        .stat(name)
        .map_err(|e| io_err(&found.real, e, None, false))?;
    let same = match (found.stat, now) {
        (Some(was), Some(now)) => now.is_file() && now.id == was.id,
        (None, None) => true,
        _ => false,
    };
    if !same {
        return Err(InstallError::Changed {
            path: shown(&found.real),
        });
    }
    Ok((dir, name.to_os_string()))
}

/// Replaces (or creates) `found`'s file with `text`, safely.
pub(crate) fn replace(found: &Found, fence: &Fence, text: &str) -> Result<Written, InstallError> {
    check_writable(found, fence)?;
    let (dir, name) = reopen(found, fence)?;
    let written = match (found.stat, &found.text) {
        (Some(st), Some(old)) => Written::Changed {
            backup: backup(&dir, &name, old.as_bytes(), st)?,
        },
        _ => Written::Created,
    };
    let mode = found.stat.map(|s| s.perm()).unwrap_or(NEW_FILE_MODE);
    let (tmp, mut f) = temp(&dir, &name, mode)?;
    let tmp_path = dir.path.join(&tmp);
    let result = (|| {
        f.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| io_err(&tmp_path, e, None, true))?;
        keep_owner(&f, found)?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(|e| io_err(&tmp_path, e, None, true))?;
        dir.rename(&tmp, &name)
            .map_err(|e| io_err(&found.real, e, None, true))?;
        let _ = dir.sync();
        Ok(())
    })();
    if let Err(e) = result {
        let _ = dir.unlink(&tmp);
        return Err(e);
    }
    Ok(written)
}

/// Gives the new file the old one's owner and group (root editing a
/// person's file leaves it theirs); refused when the owner cannot be kept.
fn keep_owner(f: &std::fs::File, found: &Found) -> Result<(), InstallError> {
    let Some(st) = found.stat else {
        return Ok(());
    };
    let (uid, gid) = at::me();
    if (st.uid, st.gid) == (uid, gid) {
        return Ok(());
    }
    match at::fchown(f, st.uid, st.gid) {
        Ok(()) => Ok(()),
        Err(_) if st.uid != uid => Err(denied(&found.real, Some(st), true)),
        // Only the group differs and cannot be kept: the file stays the
        // person's, in their own group.
        Err(_) => Ok(()),
    }
}

/// A new temporary file beside `name`.
fn temp(dir: &Dir, name: &OsStr, mode: u32) -> Result<(OsString, std::fs::File), InstallError> {
    let base = format!(
        ".{}.strobe-tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    );
    for i in 0..MAX_BACKUPS {
        let tmp = OsString::from(if i == 0 {
            base.clone()
        } else {
            format!("{base}-{i}")
        });
        match dir.create_new(&tmp, mode & 0o700) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                let st = dir.stat_self().ok();
                return Err(io_err(&dir.path, e, st, true));
            }
        }
    }
    Err(io_err(
        &dir.path.join(base),
        io::Error::other("too many temporary files of Strobe's here; remove them"),
        None,
        true,
    ))
}

/// Saves `old` (the content of `name`, whose `lstat` was `st`) in a new
/// file beside it: `<name>.strobe-backup`, or the first free
/// `<name>.strobe-backup.N`. Nothing already there is ever written to.
fn backup(dir: &Dir, name: &OsStr, old: &[u8], st: Stat) -> Result<PathBuf, InstallError> {
    let base = format!("{}{BACKUP_SUFFIX}", name.to_string_lossy());
    for i in 0..MAX_BACKUPS {
        let bname = OsString::from(if i == 0 {
            base.clone()
        } else {
            format!("{base}.{i}")
        });
        let path = dir.path.join(&bname);
        let mut f = match dir.create_new(&bname, NEW_FILE_MODE) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                let dst = dir.stat_self().ok();
                return Err(io_err(&dir.path, e, dst, true));
            }
        };
        if at::me().0 == 0 {
            // Root's backup of a person's file stays readable by them.
            let _ = at::fchown(&f, st.uid, st.gid);
        }
        if let Err(e) = f.write_all(old).and_then(|_| f.sync_all()) {
            let _ = dir.unlink(&bname);
            return Err(io_err(&path, e, None, true));
        }
        return Ok(path);
    }
    Err(io_err(
        &dir.path.join(base),
        io::Error::other(format!(
            "{MAX_BACKUPS} backups are already there; remove the old ones and run again"
        )),
        None,
        true,
    ))
}

/// Removes `found`'s file (a skill), first saving it in a backup when
/// `keep` is set; the backup's path.
pub(crate) fn remove(
    found: &Found,
    fence: &Fence,
    keep: bool,
) -> Result<Option<PathBuf>, InstallError> {
    check_writable(found, fence)?;
    let (dir, name) = reopen(found, fence)?;
    let saved = match (keep, found.stat, &found.text) {
        (true, Some(st), Some(old)) => Some(backup(&dir, &name, old.as_bytes(), st)?),
        _ => None,
    };
    dir.unlink(&name)
        .map_err(|e| io_err(&found.real, e, found.stat, true))?;
    Ok(saved)
}

/// Removes the folder `path` when it is empty (never through a link).
pub(crate) fn remove_empty_dir(path: &Path, fence: &Fence) {
    let Ok((parent, name)) = split(path) else {
        return;
    };
    if let Ok((dir, missing)) = walk(parent, fence)
        && missing.is_empty()
    {
        let _ = dir.rmdir(name);
    }
}

/// `<file>.strobe-backup`.
#[cfg(test)]
pub(crate) fn backup_of(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(BACKUP_SUFFIX);
    PathBuf::from(s)
}

#[cfg(test)]
#[path = "write_tests.rs"]
mod tests;
