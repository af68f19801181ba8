//! `strobe export -o` aimed at what a hostile tree (or a careless path)
//! puts under the output's name: a FIFO, a device node, a directory, a
//! symbolic link, a `.partial` link planted where the export writes first,
//! and a session id that climbs out of the directory. Export replaces only
//! a regular file, never writes through a link, and looks at no path
//! before it knows the session exists.

use crate::canary::Canaries;
use crate::support::{Env, fixture};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// A finished session of the trace_c fixture, recorded in `env`'s store.
async fn recorded(env: &Env) -> String {
    let c = env.client().await;
    let exe = fixture("trace_c");
    let (id, _) = c.launch(&exe, &[]).await;
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);
    id
}

/// `strobe export <id> -o <out>`: its exit code and stderr.
fn export(env: &Env, id: &str, out: &Path) -> (Option<i32>, String) {
    let r = env
        .command(&["export", id, "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    (r.status.code(), String::from_utf8_lossy(&r.stderr).into())
}

fn c_path(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

#[tokio::test(flavor = "multi_thread")]
async fn export_never_replaces_a_fifo_a_directory_or_a_link() {
    let env = Env::new();
    let id = recorded(&env).await;
    let canaries = Canaries::new(&["target"]);
    let dir = tempfile::tempdir().unwrap();

    let fifo = dir.path().join("pipe.json");
    // SAFETY: mkfifo(3) on a path in the test's own temporary directory.
    assert_eq!(unsafe { libc::mkfifo(c_path(&fifo).as_ptr(), 0o600) }, 0);
    let (code, err) = export(&env, &id, &fifo);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is a FIFO (named pipe)"), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    let meta = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(meta.file_type().is_fifo(), "the FIFO was replaced");

    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let (code, err) = export(&env, &id, &sub);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is a directory"), "{err}");

    // A link is refused, not resolved: renaming over it would replace the
    // link itself, and writing through it is what a hostile tree wants.
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(canaries.path("target"), &link).unwrap();
    let (code, err) = export(&env, &id, &link);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is a symbolic link (to "), "{err}");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );

    // Nothing was left beside them (no .partial), nothing outside changed.
    assert_eq!(names(dir.path()), ["link.json", "pipe.json", "sub"]);
    canaries.assert_untouched();

    // A regular file is still replaced, and `-o -` still writes to stdout.
    let file = dir.path().join("run.json");
    std::fs::write(&file, "old").unwrap();
    let (code, err) = export(&env, &id, &file);
    assert_eq!(code, Some(0), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(doc["otherData"]["sessionId"], id.as_str());
    let out = env.command(&["export", &id, "-o", "-"]).output().unwrap();
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["otherData"]["sessionId"], id.as_str());
}

/// A character device made in a temporary directory (the node of
/// /dev/full: major 1, minor 7), never the real one: export refuses it and
/// it is still that device afterwards. Making a node needs root and
/// CAP_MKNOD, which the build probes (crates/strobe-cli/build.rs).
#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_mknod),
    ignore = "needs root with CAP_MKNOD to make a device node (run the tests as root, outside a container that drops it): mknod failed when the tests were built"
)]
async fn export_never_replaces_a_device_node() {
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("full");
    let dev = libc::makedev(1, 7);
    // SAFETY: mknod(2) of a new node in the test's own temporary directory.
    let made = unsafe { libc::mknod(c_path(&node).as_ptr(), libc::S_IFCHR | 0o600, dev) };
    assert_eq!(
        made,
        0,
        "mknod failed ({}), though it worked when the tests were built",
        std::io::Error::last_os_error()
    );
    let env = Env::new();
    let id = recorded(&env).await;
    let (code, err) = export(&env, &id, &node);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is a character device"), "{err}");
    let meta = std::fs::symlink_metadata(&node).unwrap();
    assert!(meta.file_type().is_char_device(), "the device was replaced");
    assert_eq!(meta.rdev(), dev);
    assert_eq!(names(dir.path()), ["full"]);
}

/// A tree that plants `<out>.partial` as a link to a file outside: the
/// export must not write through it (it used to truncate the link's target
/// with the whole trace, then rename the link into place).
#[tokio::test(flavor = "multi_thread")]
async fn a_planted_partial_link_does_not_redirect_the_export() {
    let env = Env::new();
    let id = recorded(&env).await;
    let canaries = Canaries::new(&["bashrc"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let partial = dir.path().join("run.json.partial");
    std::os::unix::fs::symlink(canaries.path("bashrc"), &partial).unwrap();
    let (code, err) = export(&env, &id, &out);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("run.json.partial is a symbolic link") && err.contains("remove it"),
        "{err}"
    );
    canaries.assert_untouched();
    assert!(
        !out.exists(),
        "nothing was written under the name asked for"
    );
    assert!(
        std::fs::symlink_metadata(&partial)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

/// `strobe export ../../x` for a session the store does not hold: the id
/// names the default file (`../../x.trace.json`), so the session is looked
/// up before any path is: nothing is created or written, even through a
/// link planted at the temporary name.
#[tokio::test(flavor = "multi_thread")]
async fn exporting_a_missing_session_touches_no_file() {
    let env = Env::new();
    // The daemon makes the store; no session is recorded.
    drop(env.client().await);
    let canaries = Canaries::new(&["profile"]);
    let top = tempfile::tempdir().unwrap();
    let cwd = top.path().join("a/b");
    std::fs::create_dir_all(&cwd).unwrap();
    std::os::unix::fs::symlink(
        canaries.path("profile"),
        top.path().join("x.trace.json.partial"),
    )
    .unwrap();
    let r = env
        .command(&["export", "../../x"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("no session '../../x'"), "{err}");
    canaries.assert_untouched();
    assert_eq!(names(top.path()), ["a", "x.trace.json.partial"]);
    assert!(names(&cwd).is_empty());
}
