//! Safe writes: a file is checked writable, backed up next to itself
//! (`<file>.strobe-backup`), and replaced by a temporary file renamed over
//! it with its permissions, so a crash mid-write leaves the old file or the
//! new one, never half of either. A symlinked config is written through
//! the link (a dotfiles repository keeps its file).

use crate::{BACKUP_SUFFIX, InstallError};
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Mode of a file the installer creates (agents' configs can hold keys).
const NEW_FILE_MODE: u32 = 0o600;

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

fn io(path: &Path, source: std::io::Error) -> InstallError {
    if source.kind() == std::io::ErrorKind::PermissionDenied {
        return InstallError::ReadOnly {
            path: path.display().to_string(),
        };
    }
    InstallError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The file's content, `None` when it does not exist.
pub(crate) fn read(path: &Path) -> Result<Option<String>, InstallError> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path, e)),
    }
}

/// The file a write goes to: through a symlink to its target.
fn target(path: &Path) -> PathBuf {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// Refuses a file without its owner's write permission (root could write
/// it anyway: the mode says what its owner wants) or in a folder that
/// cannot be written.
pub(crate) fn check_writable(path: &Path) -> Result<(), InstallError> {
    let path = target(path);
    if let Ok(m) = fs::metadata(&path)
        && m.permissions().mode() & 0o200 == 0
    {
        return Err(InstallError::ReadOnly {
            path: path.display().to_string(),
        });
    }
    let mut dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    // The nearest folder that exists is the one a new file's folders go in.
    while !dir.as_os_str().is_empty() && !dir.exists() {
        dir = dir.parent().map(Path::to_path_buf).unwrap_or_default();
    }
    if let Ok(m) = fs::metadata(&dir)
        && m.permissions().mode() & 0o200 == 0
    {
        return Err(InstallError::ReadOnly {
            path: dir.display().to_string(),
        });
    }
    Ok(())
}

/// Replaces (or creates) `path` with `text`, safely.
pub(crate) fn replace(path: &Path, text: &str) -> Result<Written, InstallError> {
    check_writable(path)?;
    let path = target(path);
    let existing = fs::metadata(&path).ok();
    let dir = path
        .parent()
        .ok_or_else(|| io(&path, std::io::ErrorKind::InvalidInput.into()))?;
    fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let mode = existing
        .as_ref()
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(NEW_FILE_MODE);
    let written = match existing {
        Some(_) => {
            let backup = backup_of(&path);
            fs::copy(&path, &backup).map_err(|e| io(&backup, e))?;
            Written::Changed { backup }
        }
        None => Written::Created,
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.strobe-tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, &path)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(io(&path, e));
    }
    Ok(written)
}

/// Removes a file the installer wrote (a skill), keeping a backup.
pub(crate) fn remove(path: &Path) -> Result<PathBuf, InstallError> {
    check_writable(path)?;
    let backup = backup_of(path);
    fs::copy(path, &backup).map_err(|e| io(&backup, e))?;
    fs::remove_file(path).map_err(|e| io(path, e))?;
    Ok(backup)
}

/// `<file>.strobe-backup`.
pub(crate) fn backup_of(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(BACKUP_SUFFIX);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_backed_up_and_keeps_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.json");
        fs::write(&f, "old").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
        let w = replace(&f, "new").unwrap();
        assert_eq!(
            w,
            Written::Changed {
                backup: dir.path().join("c.json.strobe-backup")
            }
        );
        assert_eq!(fs::read_to_string(&f).unwrap(), "new");
        assert_eq!(
            fs::read_to_string(dir.path().join("c.json.strobe-backup")).unwrap(),
            "old"
        );
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o640
        );
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
    }

    #[test]
    fn a_new_file_is_owner_only_and_its_folders_are_made() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a/b/c.toml");
        assert_eq!(replace(&f, "x").unwrap(), Written::Created);
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn a_symlinked_config_is_written_through_the_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles.json");
        fs::write(&real, "old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        replace(&link, "new").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
    }

    #[test]
    fn a_read_only_file_is_refused_and_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.json");
        fs::write(&f, "old").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o444)).unwrap();
        let err = replace(&f, "new").unwrap_err();
        assert!(matches!(err, InstallError::ReadOnly { .. }), "{err}");
        assert!(err.to_string().contains("is read-only"), "{err}");
        assert_eq!(fs::read_to_string(&f).unwrap(), "old");
        assert!(!dir.path().join("c.json.strobe-backup").exists());
    }
}
