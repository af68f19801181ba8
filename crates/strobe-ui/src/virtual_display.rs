//! A private display for a session whose agent has no screen: an Xvfb that
//! picks its own free number (`-displayfd`: a fixed number can collide
//! with another server and silently send the program elsewhere) and lets
//! in only holders of its cookie (`xauth.rs`), a D-Bus
//! session bus on which the AT-SPI bus launcher is started on demand, and
//! a private `XDG_RUNTIME_DIR` (0700) where both buses put their sockets.
//!
//! Each server runs in its own process group. The bus launcher, the
//! accessibility bus and the registry daemon that D-Bus activation starts
//! stay in the session bus's group (measured: Debian's dbus-daemon does not
//! give them their own), so stopping signals two groups Strobe created and
//! nothing else. A display started with a records folder also keeps a
//! record of those processes there (`leftovers.rs`), so that a daemon
//! killed before it could stop them has them ended by the next one.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::leftovers::{Owned, ProcessId, Record, Recorded};
use crate::{Display, UiError};

/// How a virtual display's runtime directory is named (the reaper of a
/// dead daemon's displays removes only directories named so).
pub(crate) const DIR_PREFIX: &str = "strobe-display-";

/// How long a server may take to say it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(15);

/// The screen the virtual display has: big enough for common windows.
const SCREEN: &str = "1280x1024x24";

/// A running private display and its buses; stopped when dropped.
#[derive(Debug)]
pub struct VirtualDisplay {
    display: String,
    session_bus: String,
    runtime_dir: PathBuf,
    xvfb: Child,
    bus: Child,
    /// Its record of the processes it owns, when it keeps one.
    record: Option<Recorded>,
}

/// The environment variables a program on a virtual display must not
/// inherit from the daemon (`GTK_A11Y=none` would hide its tree; a
/// stray accessibility bus address would point it at another desktop).
pub const REMOVED_ENV: [&str; 4] = [
    "GTK_A11Y",
    "NO_AT_BRIDGE",
    "AT_SPI_BUS_ADDRESS",
    "WAYLAND_DISPLAY",
];

impl VirtualDisplay {
    /// Starts Xvfb and a session bus, each in its own process group, with
    /// a fresh runtime directory under the system's temporary directory
    /// (socket paths must stay under 108 bytes, so not under a deep
    /// `STROBE_HOME`). Keeps no record (see [`VirtualDisplay::start_recorded`]).
    pub fn start() -> Result<VirtualDisplay, UiError> {
        Self::start_recorded(None)
    }

    /// [`VirtualDisplay::start`], recording the processes it owns in a file
    /// in `records` (removed when the display stops), which
    /// [`crate::leftovers::reap`] reads if this process dies first.
    pub fn start_recorded(records: Option<&Path>) -> Result<VirtualDisplay, UiError> {
        let runtime_dir = private_dir()?;
        // Only holders of the cookie may connect (see `xauth`).
        let xauthority = runtime_dir.join("Xauthority");
        let cookie = match crate::xauth::new_cookie()
            .and_then(|c| crate::xauth::write(&xauthority, &c, "").map(|()| c))
        {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&runtime_dir);
                return Err(UiError::VirtualDisplay(format!(
                    "{}: {e}",
                    xauthority.display()
                )));
            }
        };
        let xvfb = spawn_reporting(
            Command::new("Xvfb")
                .args([
                    "-displayfd",
                    "1",
                    "-screen",
                    "0",
                    SCREEN,
                    "-nolisten",
                    "tcp",
                    "-noreset",
                    "-auth",
                ])
                .arg(&xauthority),
            "Xvfb",
            "xvfb",
        );
        let (mut xvfb, number) = match xvfb {
            Ok(x) => x,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&runtime_dir);
                return Err(e);
            }
        };
        let display = format!(":{}", number.trim());
        // Now that the number is known, the file names it, as clients want.
        if let Err(e) = crate::xauth::write(&xauthority, &cookie, number.trim()) {
            stop_group(&mut xvfb);
            let _ = std::fs::remove_dir_all(&runtime_dir);
            return Err(UiError::VirtualDisplay(format!(
                "{}: {e}",
                xauthority.display()
            )));
        }
        let bus = spawn_reporting(
            Command::new("dbus-daemon")
                .args(["--session", "--nofork", "--print-address=1"])
                .arg(format!("--address=unix:dir={}", runtime_dir.display()))
                .env("DISPLAY", &display)
                .env("XDG_RUNTIME_DIR", &runtime_dir)
                // The bus launcher publishes the accessibility bus on the
                // display's root window: it needs the cookie too.
                .env("XAUTHORITY", &xauthority)
                .env_remove("DBUS_SESSION_BUS_ADDRESS")
                .env_remove("AT_SPI_BUS_ADDRESS"),
            "dbus-daemon",
            "dbus",
        );
        let (bus, address) = match bus {
            Ok(b) => b,
            Err(e) => {
                stop_group(&mut xvfb);
                let _ = std::fs::remove_dir_all(&runtime_dir);
                return Err(e);
            }
        };
        let mut vd = VirtualDisplay {
            display,
            session_bus: address.trim().to_string(),
            runtime_dir,
            xvfb,
            bus,
            record: None,
        };
        if let Some(dir) = records {
            // Without its record the display must not run: a daemon killed
            // later would leave it behind for good. (Dropping `vd` stops it.)
            let record = vd.new_record()?;
            vd.record = Some(Recorded::create(dir, record).map_err(|e| {
                UiError::VirtualDisplay(format!("recording it in {}: {e}", dir.display()))
            })?);
        }
        Ok(vd)
    }

    /// What the record says at the start: this process, and the two servers.
    fn new_record(&self) -> Result<Record, UiError> {
        let id = |pid: u32, what: &str| {
            ProcessId::of(pid).ok_or_else(|| {
                UiError::VirtualDisplay(format!("{what} (pid {pid}) ended as it started"))
            })
        };
        Ok(Record {
            daemon: id(std::process::id(), "this process")?,
            runtime_dir: self.runtime_dir.clone(),
            leaders: vec![
                Owned {
                    program: "Xvfb".into(),
                    id: id(self.xvfb.id(), "Xvfb")?,
                },
                Owned {
                    program: "dbus-daemon".into(),
                    id: id(self.bus.id(), "dbus-daemon")?,
                },
            ],
            helpers: Vec::new(),
        })
    }

    /// Records the processes the bus started on demand since the last look
    /// (the accessibility bus launcher, its bus, the registry): they stay in
    /// the bus's group, but a record by pid and start time still finds them
    /// should the bus itself be gone by the time they are reaped.
    pub fn note_helpers(&mut self) -> std::io::Result<()> {
        match &mut self.record {
            Some(r) => r.note_helpers(),
            None => Ok(()),
        }
    }

    /// The processes recorded so far (none without a record).
    pub fn recorded(&self) -> Option<&Record> {
        self.record.as_ref().map(Recorded::record)
    }

    /// Why the display cannot serve any more, if a server of it ended:
    /// `("Xvfb", pid, how)` or the session bus's.
    pub fn server_gone(&mut self) -> Option<(&'static str, u32, String)> {
        for (name, child) in [("Xvfb", &mut self.xvfb), ("dbus-daemon", &mut self.bus)] {
            match child.try_wait() {
                Ok(Some(status)) => return Some((name, child.id(), status.to_string())),
                Ok(None) => {}
                Err(e) => return Some((name, child.id(), e.to_string())),
            }
        }
        None
    }

    /// The display's name (`:12`).
    pub fn name(&self) -> &str {
        &self.display
    }

    /// What a program on this display is given, besides the removals in
    /// [`REMOVED_ENV`]: the display, the session bus, the runtime
    /// directory, and Qt's switches to expose its tree.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("DISPLAY".into(), self.display.clone()),
            ("DBUS_SESSION_BUS_ADDRESS".into(), self.session_bus.clone()),
            (
                "XDG_RUNTIME_DIR".into(),
                self.runtime_dir.display().to_string(),
            ),
            ("XAUTHORITY".into(), self.xauthority().display().to_string()),
            ("QT_ACCESSIBILITY".into(), "1".into()),
            ("QT_LINUX_ACCESSIBILITY_ALWAYS_ON".into(), "1".into()),
        ]
    }

    /// The display as a backend sees it.
    pub fn display(&self) -> Display {
        Display {
            name: Some(self.display.clone()),
            accessibility_bus: None,
            session_bus: Some(self.session_bus.clone()),
            xauthority: Some(self.xauthority().display().to_string()),
        }
    }

    /// The authority file holding the display's cookie.
    pub fn xauthority(&self) -> PathBuf {
        self.runtime_dir.join("Xauthority")
    }

    /// The pids of the two servers (each leads its process group).
    pub fn pids(&self) -> [u32; 2] {
        [self.xvfb.id(), self.bus.id()]
    }
}

impl Drop for VirtualDisplay {
    fn drop(&mut self) {
        // The bus first: its activated helpers (bus launcher, registry)
        // are in its group and would otherwise notice the display going.
        stop_group(&mut self.bus);
        stop_group(&mut self.xvfb);
        let _ = std::fs::remove_dir_all(&self.runtime_dir);
        // Stopped: nothing of it is left for a later daemon to end.
        if let Some(r) = &self.record {
            r.remove();
        }
    }
}

fn private_dir() -> Result<PathBuf, UiError> {
    let base = std::env::temp_dir();
    for attempt in 0..16u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = base.join(format!(
            "{DIR_PREFIX}{}-{:08x}",
            std::process::id(),
            nanos ^ attempt
        ));
        // Created 0700: never readable by others, not even for a moment.
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(UiError::VirtualDisplay(format!("{}: {e}", base.display()))),
        }
    }
    Err(UiError::VirtualDisplay(format!(
        "no free directory name under {}",
        base.display()
    )))
}

/// Starts `cmd` in its own process group with stdout piped, and waits for
/// its first line (the display number, the bus address).
fn spawn_reporting(
    cmd: &mut Command,
    program: &str,
    package: &str,
) -> Result<(Child, String), UiError> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| {
            UiError::VirtualDisplay(if e.kind() == std::io::ErrorKind::NotFound {
                format!("{program} is not installed: run ./dev (it installs xvfb, dbus and at-spi2-core) or apt-get install {package}")
            } else {
                format!("{program}: {e}")
            })
        })?;
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let started = Instant::now();
    let line = rx.recv_timeout(READY_TIMEOUT).unwrap_or_default();
    if line.trim().is_empty() {
        let mut why = String::new();
        if let Ok(Some(status)) = child.try_wait() {
            if let Some(mut err) = child.stderr.take() {
                let _ = err.read_to_string(&mut why);
            }
            why = format!("{program} exited ({status}): {}", last_lines(&why));
        } else {
            why = format!(
                "{program} did not report ready within {} s",
                started.elapsed().as_secs()
            );
        }
        stop_group(&mut child);
        return Err(UiError::VirtualDisplay(why));
    }
    // Its stderr is not read again: let it go to a sink so the server
    // never blocks on a full pipe.
    if let Some(err) = child.stderr.take() {
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut BufReader::new(err), &mut std::io::sink());
        });
    }
    Ok((child, line))
}

fn last_lines(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

/// SIGTERM to the child's group, SIGKILL after 2 s, then reaped.
fn stop_group(child: &mut Child) {
    let group = child.id() as i32;
    // SAFETY: kill(2) on a process group this module created (the child
    // leads it: `process_group(0)`).
    unsafe { libc::kill(-group, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            // The leader is gone; its group's stragglers get the same end.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let _ = child.wait();
}

/// Whether `path` is a directory only its owner can enter.
pub fn is_private(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o077 == 0)
}
