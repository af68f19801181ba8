//! `write.rs`'s tests: backups, modes, owners, and every kind of link and
//! non-regular file a hostile project or a person's dotfiles can hold.

use super::*;
use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};

fn project(root: &Path) -> Fence {
    Fence::Project {
        root: root.to_path_buf(),
    }
}

fn user(home: &Path) -> Fence {
    Fence::User {
        homes: vec![fs::canonicalize(home).unwrap()],
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Reads and replaces `path` with `text`.
fn put(path: &Path, fence: &Fence, text: &str) -> Result<Written, InstallError> {
    let found = read(path, fence)?;
    replace(&found, fence, text)
}

#[test]
fn a_change_is_backed_up_and_keeps_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c.json");
    fs::write(&f, "old").unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
    let w = put(&f, &user(dir.path()), "new").unwrap();
    assert_eq!(
        w,
        Written::Changed {
            backup: backup_of(&f)
        }
    );
    assert_eq!(fs::read_to_string(&f).unwrap(), "new");
    assert_eq!(fs::read_to_string(backup_of(&f)).unwrap(), "old");
    assert_eq!(
        fs::metadata(&f).unwrap().permissions().mode() & 0o777,
        0o640
    );
    assert_eq!(
        names(dir.path()),
        ["c.json", "c.json.strobe-backup"],
        "no temporary file left"
    );
}

#[test]
fn a_new_file_is_owner_only_and_its_folders_are_made() {
    let dir = tempfile::tempdir().unwrap();
    for (i, fence) in [user(dir.path()), project(dir.path())].iter().enumerate() {
        let f = dir.path().join(i.to_string()).join("a/b/c.toml");
        assert_eq!(put(&f, fence, "x").unwrap(), Written::Created);
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}

#[test]
fn an_existing_backup_is_never_written_over_the_next_one_is_numbered() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c.json");
    fs::write(&f, "first").unwrap();
    put(&f, &project(dir.path()), "second").unwrap();
    let w = put(&f, &project(dir.path()), "third").unwrap();
    let second = dir.path().join("c.json.strobe-backup.1");
    assert_eq!(
        w,
        Written::Changed {
            backup: second.clone()
        }
    );
    assert_eq!(fs::read_to_string(backup_of(&f)).unwrap(), "first");
    assert_eq!(fs::read_to_string(&second).unwrap(), "second");
}

#[test]
fn a_backup_name_that_is_a_link_is_never_followed() {
    let outside = tempfile::tempdir().unwrap();
    let canary = outside.path().join("bashrc");
    fs::write(&canary, "# my shell\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("mcp.json");
    fs::write(&f, "{\"x\": \"$(touch PWNED)\"}").unwrap();
    symlink(&canary, backup_of(&f)).unwrap();
    let w = put(&f, &project(dir.path()), "{}").unwrap();
    assert_eq!(
        w,
        Written::Changed {
            backup: dir.path().join("mcp.json.strobe-backup.1")
        }
    );
    assert_eq!(fs::read_to_string(&canary).unwrap(), "# my shell\n");
    assert_eq!(names(outside.path()), ["bashrc"]);
    assert!(
        fs::symlink_metadata(backup_of(&f))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_link_in_a_project_is_refused_whether_file_or_folder() {
    let outside = tempfile::tempdir().unwrap();
    let canary = outside.path().join("outside.json");
    fs::write(&canary, "{}").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fence = project(dir.path());
    // The config is a link.
    fs::create_dir(dir.path().join(".gemini")).unwrap();
    let f = dir.path().join(".gemini/settings.json");
    symlink(&canary, &f).unwrap();
    let err = read(&f, &fence).unwrap_err();
    assert!(matches!(err, InstallError::ProjectLink { .. }), "{err}");
    assert!(
        err.to_string().contains("is a symbolic link (to ")
            && err
                .to_string()
                .contains("never reads or writes through a link"),
        "{err}"
    );
    // A folder on the way is a link (to a folder outside).
    symlink(outside.path(), dir.path().join(".cursor")).unwrap();
    let f = dir.path().join(".cursor/outside.json");
    let err = read(&f, &fence).unwrap_err();
    assert!(matches!(err, InstallError::ProjectLink { .. }), "{err}");
    // And a new file under a linked folder is not made either.
    let found = Found {
        path: dir.path().join(".cursor/new/x.json"),
        real: dir.path().join(".cursor/new/x.json"),
        via_link: false,
        text: None,
        stat: None,
    };
    let err = replace(&found, &fence, "{}").unwrap_err();
    assert!(matches!(err, InstallError::ProjectLink { .. }), "{err}");
    assert_eq!(fs::read_to_string(&canary).unwrap(), "{}");
    assert_eq!(names(outside.path()), ["outside.json"]);
}

#[test]
fn a_users_link_is_followed_inside_home_only() {
    let home = tempfile::tempdir().unwrap();
    let fence = user(home.path());
    fs::create_dir(home.path().join("dotfiles")).unwrap();
    let real = home.path().join("dotfiles/claude.json");
    fs::write(&real, "old").unwrap();
    let link = home.path().join(".claude.json");
    symlink("dotfiles/claude.json", &link).unwrap();
    let found = read(&link, &fence).unwrap();
    assert!(found.via_link);
    assert_eq!(found.real, fs::canonicalize(&real).unwrap());
    replace(&found, &fence, "new").unwrap();
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_to_string(&real).unwrap(), "new");
    assert_eq!(
        fs::read_to_string(home.path().join("dotfiles/claude.json.strobe-backup")).unwrap(),
        "old"
    );

    // Out of home: refused, nothing written beside the target.
    let outside = tempfile::tempdir().unwrap();
    let canary = outside.path().join("c.json");
    fs::write(&canary, "{}").unwrap();
    let link = home.path().join("out.json");
    symlink(&canary, &link).unwrap();
    let err = read(&link, &fence).unwrap_err();
    assert!(matches!(err, InstallError::LinkOutsideHome { .. }), "{err}");
    assert!(err.to_string().contains("outside your home"), "{err}");
    // `..` in a link is resolved before it is judged.
    let sneaky = home.path().join("sneaky.json");
    symlink(
        format!(
            "dotfiles/../../{}/c.json",
            outside.path().file_name().unwrap().to_string_lossy()
        ),
        &sneaky,
    )
    .unwrap();
    assert!(sneaky.exists());
    let err = read(&sneaky, &fence).unwrap_err();
    assert!(matches!(err, InstallError::LinkOutsideHome { .. }), "{err}");
    // A link to nothing.
    let dangling = home.path().join("gone.json");
    symlink(home.path().join("nothing"), &dangling).unwrap();
    let err = read(&dangling, &fence).unwrap_err();
    assert!(matches!(err, InstallError::DanglingLink { .. }), "{err}");
    assert_eq!(fs::read_to_string(&canary).unwrap(), "{}");
    assert_eq!(names(outside.path()), ["c.json"]);
}

#[test]
fn fifos_devices_and_folders_are_refused_without_being_opened() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.json");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // Nothing writes to the FIFO: an open that blocked would hang here.
    let err = read(&fifo, &project(dir.path())).unwrap_err();
    assert!(matches!(err, InstallError::NotRegular { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("is a FIFO (named pipe), not a regular file"),
        "{err}"
    );
    let err = read(Path::new("/dev/null"), &project(Path::new("/dev"))).unwrap_err();
    assert!(err.to_string().contains("is a character device"), "{err}");
    fs::create_dir(dir.path().join("d.json")).unwrap();
    let err = read(&dir.path().join("d.json"), &user(dir.path())).unwrap_err();
    assert!(
        err.to_string().contains("is a folder, not a regular file"),
        "{err}"
    );
    // A file where a folder should be.
    fs::write(dir.path().join("f"), "").unwrap();
    let err = read(&dir.path().join("f/x.json"), &project(dir.path())).unwrap_err();
    assert!(matches!(err, InstallError::NotAFolder { .. }), "{err}");
}

#[test]
fn a_file_swapped_after_reading_is_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let fence = project(dir.path());
    let f = dir.path().join("c.json");
    fs::write(&f, "old").unwrap();
    let found = read(&f, &fence).unwrap();
    fs::remove_file(&f).unwrap();
    symlink("/etc/passwd", &f).unwrap();
    let err = replace(&found, &fence, "new").unwrap_err();
    assert!(matches!(err, InstallError::Changed { .. }), "{err}");
    assert!(fs::symlink_metadata(&f).unwrap().file_type().is_symlink());
    assert!(!backup_of(&f).exists());
}

#[test]
fn a_read_only_file_is_refused_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c.json");
    fs::write(&f, "old").unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o444)).unwrap();
    let err = put(&f, &user(dir.path()), "new").unwrap_err();
    assert!(matches!(err, InstallError::ReadOnly { .. }), "{err}");
    assert!(err.to_string().contains("is read-only"), "{err}");
    assert_eq!(fs::read_to_string(&f).unwrap(), "old");
    assert!(!backup_of(&f).exists());
}

#[test]
fn permission_errors_say_whose_file_it_is() {
    let (me, _) = at::me();
    let theirs = Stat {
        mode: libc::S_IFREG | 0o600,
        uid: me.wrapping_add(1),
        gid: 0,
        id: (0, 0),
    };
    let p = Path::new("/h/.claude.json");
    let err = denied(p, Some(theirs), false);
    assert!(
        matches!(err, InstallError::NotYours { doing: "read", .. }),
        "{err}"
    );
    let msg = err.to_string();
    assert!(msg.contains("belongs to another user (uid"), "{msg}");
    assert!(
        !msg.contains("read-only") && !msg.contains("chmod"),
        "{msg}"
    );
    let mine = Stat {
        uid: me,
        mode: libc::S_IFREG,
        ..theirs
    };
    let err = denied(p, Some(mine), false);
    assert!(err.to_string().contains("permissions (0000)"), "{err}");
    assert!(matches!(
        denied(p, Some(mine), true),
        InstallError::ReadOnly { .. }
    ));
}

#[test]
#[cfg_attr(
    not(strobe_root),
    ignore = "needs root, to chown a file to uid 65534 (run the tests as root): not root when the tests were built"
)]
fn root_editing_a_persons_file_keeps_it_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c.json");
    fs::write(&f, "old").unwrap();
    std::os::unix::fs::chown(&f, Some(65534), Some(65534)).unwrap();
    put(&f, &user(dir.path()), "new").unwrap();
    let m = fs::metadata(&f).unwrap();
    assert_eq!((m.uid(), m.gid()), (65534, 65534));
    assert_eq!(fs::metadata(backup_of(&f)).unwrap().uid(), 65534);
}

#[test]
fn a_removed_file_keeps_a_backup_when_asked_and_its_empty_folder_goes() {
    let dir = tempfile::tempdir().unwrap();
    let fence = project(dir.path());
    let f = dir.path().join("skill/SKILL.md");
    fs::create_dir(dir.path().join("skill")).unwrap();
    fs::write(&f, "edited").unwrap();
    let backup = remove(&read(&f, &fence).unwrap(), &fence, true).unwrap();
    assert_eq!(backup, Some(backup_of(&f)));
    assert!(!f.exists());
    fs::remove_file(backup_of(&f)).unwrap();
    remove_empty_dir(&dir.path().join("skill"), &fence);
    assert!(!dir.path().join("skill").exists());
}
