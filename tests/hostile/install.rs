//! `strobe install` (the real binary) against what a cloned repository
//! can commit into a project, and against odd files in a person's own
//! configs: links out of the tree (the config itself, its backup's name, a
//! folder on the way), a FIFO where a config should be, JSON nested
//! 200,000 deep, a byte order mark, duplicated keys, and files owned by
//! another user. The canaries outside the tree must not change.

use crate::canary::Canaries;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::{FileTypeExt, PermissionsExt, symlink};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long one `strobe install` may take before it is called hung (a
/// run takes well under a second; this only bounds a hang).
const HANG_BOUND: Duration = Duration::from_secs(120);

/// A temporary HOME and project.
struct Tree {
    dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::Builder::new()
            .prefix("strobe-hostile-install-")
            .tempdir()
            .unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        fs::create_dir_all(home.join("bin")).unwrap();
        fs::create_dir_all(&project).unwrap();
        Tree { dir, home, project }
    }

    fn put(&self, path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
}

/// What a run did.
struct Run {
    code: Option<i32>,
    signal: Option<i32>,
    out: String,
}

/// Runs `bin install ARGS` in `tree`'s project with its HOME, as `uid`
/// when given; killed (and the test failed) if it has not ended within
/// [`HANG_BOUND`].
fn install(tree: &Tree, bin: &Path, args: &[&str], uid: Option<u32>) -> Run {
    let mut cmd = Command::new(bin);
    cmd.arg("install")
        .args(args)
        .current_dir(&tree.project)
        .env_clear()
        .env("HOME", &tree.home)
        .env("PATH", tree.home.join("bin"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(uid) = uid {
        // std drops root's supplementary groups before setuid.
        cmd.uid(uid).gid(uid);
    }
    let child = cmd.spawn().expect("strobe install starts");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(HANG_BOUND) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: `pid` is our own child, not yet reaped (the waiter
            // has not returned), so it names no other process.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            let _ = waiter.join();
            panic!(
                "strobe install {args:?} hung: still running after {HANG_BOUND:?}; killed pid {pid}"
            );
        }
    };
    let _ = waiter.join();
    Run {
        code: out.status.code(),
        signal: out.status.signal(),
        out: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

fn strobe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_strobe"))
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

fn is_link_to(path: &Path, target: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
        && fs::read_link(path).is_ok_and(|t| t == target)
}

/// The line of `out` for `agent` that mentions `what`.
fn line<'a>(out: &'a str, agent: &str, what: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(&format!("{agent}: ")) && l.contains(what))
        .unwrap_or_else(|| panic!("no {agent} line with {what:?} in:\n{out}"))
}

const PWN: &str = r#"{"mcpServers":{"x":{"command":"$(touch /tmp/PWNED)"}}}"#;

#[test]
fn project_links_fifos_and_a_committed_backup_link_are_never_followed() {
    let canaries = Canaries::new(&["bashrc", "outside.json"]);
    let t = Tree::new();
    let p = &t.project;
    // The config, with a committed "backup" that is a link to ~/.bashrc.
    t.put(&p.join(".cursor/mcp.json"), PWN);
    symlink(
        canaries.path("bashrc"),
        p.join(".cursor/mcp.json.strobe-backup"),
    )
    .unwrap();
    // The config itself a link out of the tree.
    fs::create_dir(p.join(".gemini")).unwrap();
    symlink(
        canaries.path("outside.json"),
        p.join(".gemini/settings.json"),
    )
    .unwrap();
    // Folders on the way that are links out of the tree.
    symlink(canaries.dir.path(), p.join(".codex")).unwrap();
    symlink(canaries.dir.path(), p.join(".claude")).unwrap();
    // A FIFO nobody writes to, where a config should be.
    fs::create_dir(p.join(".vscode")).unwrap();
    mkfifo(&p.join(".vscode/mcp.json"));
    t.put(&p.join(".mcp.json"), "{}\n");

    let agents = [
        "--scope",
        "project",
        "--agent",
        "claude-code",
        "--agent",
        "codex",
        "--agent",
        "cursor",
        "--agent",
        "vscode",
        "--agent",
        "gemini",
    ];
    let mut dry = agents.to_vec();
    dry.push("--dry-run");
    let mut out = String::new();
    for args in [dry, agents.to_vec()] {
        let run = install(&t, &strobe(), &args, None);
        assert_eq!(run.signal, None, "{}", run.out);
        assert_eq!(run.code, Some(1), "refusals fail the run: {}", run.out);
        out = run.out;
        assert!(
            line(&out, "gemini", "FAILED").contains("is a symbolic link (to ")
                && out.contains("never reads or writes through a link"),
            "{out}"
        );
        line(&out, "codex", ".codex is a symbolic link");
        line(
            &out,
            "vscode",
            "is a FIFO (named pipe), not a regular file; Strobe edits only regular files",
        );
        line(&out, "claude-code", ".claude is a symbolic link");
        canaries.assert_untouched();
    }
    // Cursor's config is edited; its backup is a new file beside the link.
    let backup = p.join(".cursor/mcp.json.strobe-backup.1");
    assert!(
        line(&out, "cursor", "added to").contains(".cursor/mcp.json.strobe-backup.1)"),
        "{out}"
    );
    assert_eq!(fs::read_to_string(&backup).unwrap(), PWN);
    let cursor: Value =
        serde_json::from_str(&fs::read_to_string(p.join(".cursor/mcp.json")).unwrap()).unwrap();
    assert!(cursor["mcpServers"]["strobe"].is_object(), "{cursor}");
    assert!(is_link_to(
        &p.join(".cursor/mcp.json.strobe-backup"),
        &canaries.path("bashrc")
    ));
    assert!(is_link_to(
        &p.join(".gemini/settings.json"),
        &canaries.path("outside.json")
    ));
    assert!(
        fs::symlink_metadata(p.join(".vscode/mcp.json"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert!(
        fs::read_to_string(p.join(".mcp.json"))
            .unwrap()
            .contains("\"strobe\"")
    );
    canaries.assert_untouched();
}

#[test]
fn a_users_linked_config_is_edited_only_inside_home_and_says_so() {
    let canaries = Canaries::new(&["settings.json"]);
    let t = Tree::new();
    let h = &t.home;
    fs::create_dir_all(h.join(".gemini")).unwrap();
    symlink(
        canaries.path("settings.json"),
        h.join(".gemini/settings.json"),
    )
    .unwrap();
    t.put(&h.join("dotfiles/cursor.json"), "{\"mcpServers\": {}}\n");
    fs::create_dir_all(h.join(".cursor")).unwrap();
    symlink("../dotfiles/cursor.json", h.join(".cursor/mcp.json")).unwrap();
    let run = install(
        &t,
        &strobe(),
        &["--agent", "gemini", "--agent", "cursor"],
        None,
    );
    assert_eq!(run.code, Some(1), "{}", run.out);
    assert!(
        line(&run.out, "gemini", "FAILED").contains("which is outside your home"),
        "{}",
        run.out
    );
    assert!(
        line(&run.out, "cursor", "added to ~/.cursor/mcp.json")
            .contains("edited through the link, in ~/dotfiles/cursor.json"),
        "{}",
        run.out
    );
    assert!(is_link_to(
        &h.join(".cursor/mcp.json"),
        Path::new("../dotfiles/cursor.json")
    ));
    let v: Value =
        serde_json::from_str(&fs::read_to_string(h.join("dotfiles/cursor.json")).unwrap()).unwrap();
    assert!(v["mcpServers"]["strobe"].is_object(), "{v}");
    assert!(h.join("dotfiles/cursor.json.strobe-backup").is_file());
    canaries.assert_untouched();
}

#[test]
fn json_nested_200000_deep_is_refused_with_an_error_not_a_crash() {
    let t = Tree::new();
    let n = 200_000;
    let deep = format!("{{\"mcpServers\": {}{}}}", "[".repeat(n), "]".repeat(n));
    t.put(&t.home.join(".claude.json"), &deep);
    let run = install(&t, &strobe(), &["--agent", "claude-code"], None);
    assert_eq!(run.signal, None, "killed by a signal: {}", run.out);
    assert_eq!(run.code, Some(1), "{}", run.out);
    assert!(
        line(&run.out, "claude-code", "FAILED")
            .contains("~/.claude.json nests more than 128 levels deep"),
        "{}",
        run.out
    );
    assert_eq!(
        fs::read_to_string(t.home.join(".claude.json")).unwrap(),
        deep
    );
}

#[test]
fn a_byte_order_mark_is_kept_and_duplicated_keys_get_the_entry_agents_read() {
    let t = Tree::new();
    let h = &t.home;
    let bom = "\u{feff}{\n  \"numStartups\": 3\n}\n";
    t.put(&h.join(".claude.json"), bom);
    let dup = "{\n  \"mcpServers\": {\"a\": {\"command\": \"a\"}},\n  \"mcpServers\": {\"b\": {\"command\": \"b\"}}\n}\n";
    t.put(&h.join(".cursor/mcp.json"), dup);
    let run = install(
        &t,
        &strobe(),
        &["--agent", "claude-code", "--agent", "cursor"],
        None,
    );
    assert_eq!(run.code, Some(0), "{}", run.out);
    line(&run.out, "claude-code", "added to ~/.claude.json");
    let claude = fs::read_to_string(h.join(".claude.json")).unwrap();
    let body = claude
        .strip_prefix('\u{feff}')
        .unwrap_or_else(|| panic!("the BOM was dropped: {claude:?}"));
    let v: Value = serde_json::from_str(body).unwrap();
    assert!(v["mcpServers"]["strobe"].is_object(), "{v}");
    assert_eq!(v["numStartups"], 3);
    assert!(
        line(&run.out, "cursor", "added to ~/.cursor/mcp.json")
            .contains("has 2 \"mcpServers\" keys; agents read the last one"),
        "{}",
        run.out
    );
    // serde_json reads the last copy of a key, as agents do.
    let v: Value =
        serde_json::from_str(&fs::read_to_string(h.join(".cursor/mcp.json")).unwrap()).unwrap();
    assert!(v["mcpServers"]["strobe"].is_object(), "{v}");
    assert_eq!(v["mcpServers"]["b"]["command"], "b");
    // And uninstall finds it there.
    let run = install(&t, &strobe(), &["--agent", "cursor", "--uninstall"], None);
    assert_eq!(run.code, Some(0), "{}", run.out);
    let after = fs::read_to_string(h.join(".cursor/mcp.json")).unwrap();
    assert!(
        !after.contains("strobe") && after.contains(r#"{"a": {"command": "a"}}"#),
        "{after}"
    );
}

/// The user the install runs as, and the one who owns the odd files.
const NOBODY: u32 = 65534;
const SOMEONE: u32 = 65533;

fn chown_tree(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if fs::symlink_metadata(path).unwrap().is_dir() {
        for e in fs::read_dir(path).unwrap() {
            chown_tree(&e.unwrap().path(), uid);
        }
    }
}

#[test]
#[cfg_attr(
    not(strobe_root),
    ignore = "needs root, to run strobe install as uid 65534 on files owned by uid 65533 (run the tests as root): not root when the tests were built"
)]
fn another_users_files_are_named_as_theirs_not_read_only() {
    let t = Tree::new();
    let h = &t.home;
    let unreadable = h.join(".claude.json");
    t.put(&unreadable, "{}\n");
    let readable = h.join(".cursor/mcp.json");
    t.put(&readable, "{}\n");
    // A copy of the binary that uid 65534 can run (the build's folder
    // may be root's alone): a hard link where one can be made.
    let bin_dir = t.dir.path().join("bin");
    fs::create_dir(&bin_dir).unwrap();
    let bin = bin_dir.join("strobe");
    if fs::hard_link(strobe(), &bin).is_err() {
        fs::copy(strobe(), &bin).unwrap();
    }
    fs::set_permissions(&bin_dir, fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(t.dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    chown_tree(h, NOBODY);
    chown_tree(&t.project, NOBODY);
    std::os::unix::fs::chown(&unreadable, Some(SOMEONE), Some(SOMEONE)).unwrap();
    fs::set_permissions(&unreadable, fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&readable, Some(SOMEONE), Some(SOMEONE)).unwrap();
    fs::set_permissions(&readable, fs::Permissions::from_mode(0o644)).unwrap();

    let run = install(
        &t,
        &bin,
        &["--agent", "claude-code", "--agent", "cursor"],
        Some(NOBODY),
    );
    assert_eq!(run.code, Some(1), "{}", run.out);
    let l = line(&run.out, "claude-code", "FAILED");
    assert!(
        l.contains(&format!(
            "belongs to another user (uid {SOMEONE}; you are uid {NOBODY}), so Strobe cannot read it"
        )),
        "{}",
        run.out
    );
    assert!(!l.contains("read-only") && !l.contains("chmod"), "{l}");
    assert!(
        line(&run.out, "cursor", "FAILED").contains("so Strobe cannot change it"),
        "{}",
        run.out
    );
    for f in [&unreadable, &readable] {
        assert_eq!(fs::read_to_string(f).unwrap(), "{}\n");
        let m = fs::metadata(f).unwrap();
        assert_eq!(std::os::unix::fs::MetadataExt::uid(&m), SOMEONE);
    }
    assert!(!h.join(".cursor/mcp.json.strobe-backup").exists());
}
