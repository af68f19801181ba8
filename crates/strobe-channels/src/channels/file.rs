//! `file:<path or glob>`: changes the files a program reads, and sees the
//! ones it writes. The target is a path or a glob in its last component
//! (`config.ini`, `out/*.wav`), relative to the project root. Observations
//! come from inotify on the file's directory, so a file replaced by a
//! rename (as editors save) or deleted and made again is still seen.
//!
//! The directory must lie inside the project root, links resolved, unless
//! the agent added the channel with `allowOutsideProject: true` (a launch's
//! or a scenario's channels never can: they may come from the repository).
//! A send never follows a link at the file itself, never replaces or
//! truncates anything but a regular file, and never waits on a FIFO that
//! nothing reads; an observation never reads through a link.

use super::clip;
use crate::contained::{Entry, ProjectDir};
use crate::{
    ChannelError, ChannelKind, ChannelSpec, InputChannel, Observation, ObservationSink,
    OpenChannel, OutputChannel, SessionTarget,
};
use ops::link_refusal;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod ops;

/// A file modified and left open is reported after this quiet time.
const QUIET: Duration = Duration::from_millis(150);
/// Characters of a file's content in an observation.
const EXCERPT: usize = 120;
/// Bytes read of a changed file for its excerpt.
const HEAD_BYTES: usize = 4096;

/// The `file` kind.
pub struct Files;

impl ChannelKind for Files {
    fn kind(&self) -> &'static str {
        "file"
    }

    fn stimulus_fields(&self) -> &'static [&'static str] {
        &["op", "path", "text"]
    }

    fn describe(&self) -> &'static str {
        "file:<path or dir/*.glob>: send {op: write|append|truncate|delete|touch, path?, text?}; sees files created, modified, deleted, renamed (size, excerpt)"
    }

    fn open(
        &self,
        spec: &ChannelSpec,
        session: &SessionTarget,
    ) -> Result<OpenChannel, ChannelError> {
        let target = spec.target.as_deref().unwrap_or("");
        let name = format!("file:{target}");
        let unavailable = |why: String| ChannelError::Unavailable {
            channel: name.clone(),
            why,
        };
        if target.is_empty() {
            return Err(unavailable(
                "say which files: file:<path> or file:<dir>/<glob> (\"file:config.ini\", \"file:out/*.wav\"), relative to the project root"
                    .into(),
            ));
        }
        let full = session.project_root.join(target);
        let dir = full.parent().map(Path::to_path_buf).unwrap_or_default();
        let pattern = full
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| unavailable(format!("{target:?} names no file")))?;
        if dir.to_string_lossy().contains(['*', '?', '[']) {
            return Err(unavailable(
                "wildcards go in the file name only (\"out/*.wav\", not \"*/x.wav\"): add one channel per directory"
                    .into(),
            ));
        }
        let dir = ProjectDir::open(
            &session.project_root,
            &dir,
            session.outside_project,
            target,
            &name,
        )
        .map_err(|e| unavailable(e.to_string()))?;
        if !pattern.contains(['*', '?']) && dir.entry(&pattern).ok() == Some(Entry::Link) {
            return Err(unavailable(link_refusal(&dir, &pattern)));
        }
        let outside_project = dir.outside;
        let ch = Arc::new(FileChannel {
            name: name.clone(),
            dir,
            pattern,
            watcher: Mutex::new(None),
        });
        Ok(OpenChannel {
            input: Some(Box::new(ch.clone())),
            output: Some(Box::new(ch)),
            outside_project,
        })
    }
}

struct FileChannel {
    name: String,
    /// The directory watched and changed, held open (see `contained`).
    dir: ProjectDir,
    /// The file name or glob within `dir`.
    pattern: String,
    watcher: Mutex<Option<Watcher>>,
}

impl FileChannel {
    fn is_glob(&self) -> bool {
        self.pattern.contains(['*', '?'])
    }

    /// The path as the project sees it (relative to its root when inside).
    fn shown(&self, name: &str) -> String {
        self.dir.shown(name)
    }

    fn bad(&self, why: String) -> ChannelError {
        ChannelError::BadAction {
            channel: self.name.clone(),
            why,
        }
    }
}

impl InputChannel for Arc<FileChannel> {
    fn name(&self) -> &str {
        &self.name
    }

    fn preview(&self, action: &Value) -> String {
        let op = action.get("op").and_then(Value::as_str).unwrap_or("?");
        let file = action
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or(&self.pattern);
        match action.get("text").and_then(Value::as_str) {
            Some(t) => format!("{op} {} bytes to {}", t.len(), self.shown(file)),
            None => format!("{op} {}", self.shown(file)),
        }
    }

    fn send(&self, action: &Value) -> Result<Value, ChannelError> {
        let obj = action.as_object().ok_or_else(|| {
            self.bad(
                "send an object: {op: write|append|truncate|delete|touch, path?, text?}".into(),
            )
        })?;
        for key in obj.keys() {
            if !["op", "path", "text"].contains(&key.as_str()) {
                return Err(self.bad(format!(
                    "unknown field {key:?}: file takes op, path and text"
                )));
            }
        }
        let op = obj.get("op").and_then(Value::as_str).ok_or_else(|| {
            self.bad("'op' is one of write, append, truncate, delete, touch".into())
        })?;
        let file = match obj.get("path") {
            Some(Value::String(p)) => p.clone(),
            Some(_) => return Err(self.bad("'path' is a file name (a string)".into())),
            None if self.is_glob() => {
                return Err(self.bad(format!(
                    "this channel watches {:?}: say which file with 'path'",
                    self.pattern
                )));
            }
            None => self.pattern.clone(),
        };
        if file.contains('/') {
            return Err(self.bad(format!(
                "'path' is a file name in {} (no '/'), got {file:?}",
                self.shown(".")
            )));
        }
        if file.is_empty() || file == "." || file == ".." || !glob_match(&self.pattern, &file) {
            return Err(self.bad(format!(
                "{file:?} is not one of this channel's files ({}): a file channel only changes the files it watches",
                self.shown(&self.pattern)
            )));
        }
        let text = match obj.get("text") {
            None => None,
            Some(Value::String(t)) => Some(t.clone()),
            Some(_) => return Err(self.bad("'text' is a string".into())),
        };
        if text.is_some() && matches!(op, "truncate" | "delete" | "touch") {
            return Err(self.bad(format!("'{op}' takes no 'text'")));
        }
        let summary = self.apply(op, &file, text)?;
        Ok(json!({"op": op, "path": self.shown(&file), "summary": summary}))
    }
}

impl OutputChannel for Arc<FileChannel> {
    fn name(&self) -> &str {
        &self.name
    }

    fn start_capture(&self, sink: Arc<dyn ObservationSink>) -> Result<(), ChannelError> {
        let mut w = self.watcher.lock().expect("watcher lock");
        if w.is_some() {
            return Ok(());
        }
        *w = Some(
            Watcher::start(self.clone(), sink).map_err(|e| ChannelError::Unavailable {
                channel: self.name.clone(),
                why: format!("inotify on {}: {e}", self.dir.path.display()),
            })?,
        );
        Ok(())
    }

    fn stop_capture(&self) -> Result<(), ChannelError> {
        self.watcher.lock().expect("watcher lock").take();
        Ok(())
    }
}

/// The inotify thread; dropping it stops the thread.
struct Watcher {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watcher {
    fn start(ch: Arc<FileChannel>, sink: Arc<dyn ObservationSink>) -> std::io::Result<Watcher> {
        // SAFETY: plain syscalls; the descriptor is owned by the thread.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let dir = CString::new(ch.dir.path.as_os_str().as_bytes()).expect("no NUL in a path");
        let mask = libc::IN_CREATE
            | libc::IN_MODIFY
            | libc::IN_CLOSE_WRITE
            | libc::IN_DELETE
            | libc::IN_MOVED_FROM
            | libc::IN_MOVED_TO;
        // SAFETY: valid fd and NUL-terminated path.
        if unsafe { libc::inotify_add_watch(fd, dir.as_ptr(), mask) } < 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: our own descriptor.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("strobe-file-channel".into())
            .spawn(move || watch(fd, &ch, sink.as_ref(), &stopping))?;
        Ok(Watcher {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One raw inotify event: its mask, cookie and file name.
struct Raw {
    mask: u32,
    cookie: u32,
    name: String,
}

/// Reads what is pending on `fd`.
fn read_events(fd: i32) -> Vec<Raw> {
    let mut buf = [0u8; 8192];
    let mut out = Vec::new();
    loop {
        // SAFETY: buf is writable for its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return out;
        }
        let mut at = 0usize;
        let head = std::mem::size_of::<libc::inotify_event>();
        while at + head <= n as usize {
            // SAFETY: the kernel wrote a whole event at `at`.
            let ev: libc::inotify_event =
                unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
            let name_bytes = &buf[at + head..at + head + ev.len as usize];
            let end = name_bytes
                .iter()
                .position(|b| *b == 0)
                .unwrap_or(name_bytes.len());
            out.push(Raw {
                mask: ev.mask,
                cookie: ev.cookie,
                name: String::from_utf8_lossy(&name_bytes[..end]).into_owned(),
            });
            at += head + ev.len as usize;
        }
    }
}

/// The watch loop: turns inotify events into observations until stopped.
fn watch(fd: i32, ch: &FileChannel, sink: &dyn ObservationSink, stop: &AtomicBool) {
    // Files modified and not yet reported: since when.
    let mut dirty: HashMap<String, Instant> = HashMap::new();
    let see = |what: &str, name: &str, extra: Option<String>| {
        sink.observe(observation(ch, what, name, extra));
    };
    while !stop.load(Ordering::Relaxed) {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut pfd, 1, 50) };
        let events = read_events(fd);
        let mut moved_from: HashMap<u32, String> = HashMap::new();
        for ev in &events {
            if ev.mask & libc::IN_MOVED_FROM != 0 && glob_match(&ch.pattern, &ev.name) {
                moved_from.insert(ev.cookie, ev.name.clone());
            }
        }
        for ev in events {
            let ours = glob_match(&ch.pattern, &ev.name);
            if ev.mask & libc::IN_MOVED_TO != 0 {
                match moved_from.remove(&ev.cookie) {
                    Some(from) => see("renamed", &ev.name, Some(ch.shown(&from))),
                    // Moved in from elsewhere (an editor's atomic save).
                    None if ours => see("created", &ev.name, None),
                    None => {}
                }
                continue;
            }
            if !ours {
                continue;
            }
            if ev.mask & libc::IN_CREATE != 0 {
                see("created", &ev.name, None);
            } else if ev.mask & libc::IN_MODIFY != 0 {
                dirty.entry(ev.name).or_insert_with(Instant::now);
            } else if ev.mask & libc::IN_CLOSE_WRITE != 0 {
                if dirty.remove(&ev.name).is_some() {
                    see("modified", &ev.name, None);
                }
            } else if ev.mask & libc::IN_DELETE != 0 {
                dirty.remove(&ev.name);
                see("deleted", &ev.name, None);
            }
        }
        // Moved away and not back in: gone from here.
        for (_, name) in moved_from {
            see("deleted", &name, None);
        }
        // Written and left open: reported once it has been quiet.
        let quiet: Vec<String> = dirty
            .iter()
            .filter(|(_, since)| since.elapsed() >= QUIET)
            .map(|(n, _)| n.clone())
            .collect();
        for name in quiet {
            dirty.remove(&name);
            see("modified", &name, None);
        }
    }
    // SAFETY: our own descriptor, closed once.
    unsafe { libc::close(fd) };
}

/// What was seen of file `name`: its size and the start of its text.
fn observation(ch: &FileChannel, what: &str, name: &str, from: Option<String>) -> Observation {
    let shown = ch.shown(name);
    let mut data = json!({"dir": "seen", "what": what, "path": shown});
    let mut summary = match &from {
        Some(f) => format!("{f} renamed to {shown}"),
        None => format!("{shown} {what}"),
    };
    if what != "deleted"
        && let Some((size, head)) = ch.dir.head(name, HEAD_BYTES)
    {
        data["size"] = json!(size);
        summary.push_str(&format!(" ({size} bytes)"));
        // A multi-byte character cut at the end of the head is not binary.
        let text = match std::str::from_utf8(&head) {
            Ok(t) => Some(t),
            Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok(),
            Err(_) => None,
        };
        match text {
            Some(text) => {
                summary.push_str(&format!(": {:?}", clip(text, 60)));
                data["excerpt"] = json!(clip(text, EXCERPT));
            }
            None => data["binary"] = json!(true),
        }
    }
    if let Some(f) = from {
        data["from"] = json!(f);
    }
    data["summary"] = json!(summary);
    Observation {
        channel: ch.name.clone(),
        at_ns: None,
        data,
    }
}

/// Whether `name` matches `pattern` (`*` any run, `?` one character).
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_big_file_is_measured_without_being_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big.log"), "é".repeat(300_000)).unwrap();
        let d = ProjectDir::open(dir.path(), dir.path(), false, ".", "file:*").unwrap();
        let (size, head) = d.head("big.log", HEAD_BYTES).unwrap();
        assert_eq!(size, 600_000);
        assert_eq!(head.len(), HEAD_BYTES);
    }

    #[test]
    fn globs_match_names() {
        assert!(glob_match("*.wav", "a.wav"));
        assert!(glob_match("config.ini", "config.ini"));
        assert!(!glob_match("config.ini", "config.ini~"));
        assert!(glob_match("take-?.wav", "take-1.wav"));
        assert!(!glob_match("*.wav", "a.wav.tmp"));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("a*b*c", "aXXbYc"));
    }

    #[derive(Default)]
    struct Seen(Mutex<Vec<Observation>>);
    impl ObservationSink for Seen {
        fn observe(&self, o: Observation) {
            self.0.lock().unwrap().push(o);
        }
    }

    #[test]
    fn writes_renames_and_deletes_are_seen_and_other_files_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let session = SessionTarget::for_tests(dir.path().to_str().unwrap(), vec![]);
        let spec = ChannelSpec::parse("file:*.ini").unwrap();
        let ch = Files.open(&spec, &session).unwrap();
        let seen = Arc::new(Seen::default());
        let (input, output) = (ch.input.unwrap(), ch.output.unwrap());
        output.start_capture(seen.clone()).unwrap();
        input
            .send(&json!({"op": "write", "path": "a.ini", "text": "x=1\n"}))
            .unwrap();
        std::fs::write(dir.path().join("other.txt"), "no").unwrap();
        std::fs::rename(dir.path().join("a.ini"), dir.path().join("b.ini")).unwrap();
        input
            .send(&json!({"op": "delete", "path": "b.ini"}))
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while seen.0.lock().unwrap().len() < 4 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        output.stop_capture().unwrap();
        let seen = seen.0.lock().unwrap();
        let what: Vec<(&str, &str)> = seen
            .iter()
            .map(|o| {
                (
                    o.data["what"].as_str().unwrap(),
                    o.data["path"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            what,
            [
                ("created", "a.ini"),
                ("modified", "a.ini"),
                ("renamed", "b.ini"),
                ("deleted", "b.ini")
            ],
            "{seen:?}"
        );
        // The content is read when the change is seen: the rename still
        // finds the written text unless the delete came first.
        let modified = &seen[1].data;
        assert!(
            modified["size"] == 4 || modified["size"].is_null(),
            "{modified}"
        );
        assert_eq!(seen[2].data["from"], "a.ini");
        let e = input
            .send(&json!({"op": "write", "path": "../etc/passwd", "text": ""}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no '/'"), "{e}");
        let e = input
            .send(&json!({"op": "write", "path": "passwd", "text": ""}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("only changes the files it watches"), "{e}");
        let e = input
            .send(&json!({"op": "write", "text": "x"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("say which file with 'path'"), "{e}");
    }

    #[test]
    fn links_fifos_and_paths_out_of_the_project_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let canary = out.path().join("canary");
        std::fs::write(&canary, "keep").unwrap();
        std::fs::create_dir(root.path().join("conf")).unwrap();
        std::os::unix::fs::symlink(&canary, root.path().join("conf/link.ini")).unwrap();
        let fifo = CString::new(root.path().join("conf/pipe.ini").as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let mut session = SessionTarget::for_tests(root.path().to_str().unwrap(), vec![]);
        let open =
            |s: &SessionTarget, spec: &str| Files.open(&ChannelSpec::parse(spec).unwrap(), s);
        let outside = format!("file:{}", canary.display());
        for spec in ["file:../x.txt", "file:/etc/passwd", outside.as_str()] {
            let e = open(&session, spec).err().unwrap().to_string();
            assert!(
                e.contains("outside the project root") && e.contains("allowOutsideProject: true"),
                "{e}"
            );
        }
        let e = open(&session, "file:conf/link.ini")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("symbolic link out of the project") && e.contains("allowOutsideProject"),
            "{e}"
        );
        let ch = open(&session, "file:conf/*.ini").unwrap();
        let input = ch.input.unwrap();
        for op in ["write", "append"] {
            let e = input
                .send(&json!({"op": op, "path": "link.ini", "text": "pwned"}))
                .unwrap_err()
                .to_string();
            assert!(e.contains("never works through a link"), "{e}");
            let e = input
                .send(&json!({"op": op, "path": "pipe.ini", "text": "x"}))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("no process has the FIFO open for reading"),
                "{e}"
            );
        }
        for op in ["truncate", "touch"] {
            let e = input
                .send(&json!({"op": op, "path": "link.ini"}))
                .unwrap_err()
                .to_string();
            assert!(e.contains("never works through a link"), "{e}");
            let e = input
                .send(&json!({"op": op, "path": "pipe.ini"}))
                .unwrap_err()
                .to_string();
            assert!(e.contains("a FIFO, not a regular file"), "{e}");
        }
        let r = input
            .send(&json!({"op": "delete", "path": "link.ini"}))
            .unwrap();
        assert!(
            r["summary"]
                .as_str()
                .unwrap()
                .contains("not what it points to"),
            "{r}"
        );
        assert_eq!(std::fs::read_to_string(&canary).unwrap(), "keep");
        // Opted in, a file outside is the agent's to change.
        session.outside_project = true;
        let ch = open(&session, &outside).unwrap();
        assert!(ch.outside_project);
        ch.input
            .unwrap()
            .send(&json!({"op": "write", "text": "new"}))
            .unwrap();
        assert_eq!(std::fs::read_to_string(&canary).unwrap(), "new");
    }
}
