//! One desktop app per `$STROBE_HOME`.
//!
//! An exclusive `flock` on `app.lock` decides which `strobe-app` is the
//! first (like the daemon's `strobe.lock`, so racing starters end with
//! exactly one and a crashed app leaves nothing that blocks the next). The
//! first listens on `app.sock` (0600); a later one connects, asks it to show
//! its window and exits. No signals: a process is only ever asked, over a
//! socket that only this user can open.

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use strobe_core::StrobeHome;

/// The request a later instance sends, and the first one's answer.
const SHOW: &str = "show";
const SHOWN: &str = "ok";

/// How long a later instance waits for the first one to answer: the first
/// may hold the lock a moment before its socket is bound.
const ASK_DEADLINE: Duration = Duration::from_secs(10);

/// The outcome of [`claim`].
pub enum Claim {
    /// This process is the app for this home.
    First(Instance),
    /// Another app already is, and was asked to show its window.
    AskedFirst,
}

/// The first app's hold on its home: the lock (released when the process
/// ends, however it ends) and the socket that later instances talk to.
pub struct Instance {
    _lock: strobe_daemon::lock::DaemonLock,
    listener: Option<UnixListener>,
    socket: PathBuf,
}

/// Becomes the app for `home`, or asks the one that already is to show
/// itself.
pub fn claim(home: &StrobeHome) -> io::Result<Claim> {
    home.ensure()?;
    let lock_path = home.root().join("app.lock");
    let socket = home.root().join("app.sock");
    let Some(lock) = strobe_daemon::lock::try_lock(&lock_path)? else {
        ask_to_show(&socket)?;
        return Ok(Claim::AskedFirst);
    };
    // We hold the lock: a socket file here is a dead app's.
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket)?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
    Ok(Claim::First(Instance {
        _lock: lock,
        listener: Some(listener),
        socket,
    }))
}

/// Connects to the first instance and asks it to show its window.
fn ask_to_show(socket: &Path) -> io::Result<()> {
    let deadline = Instant::now() + ASK_DEADLINE;
    let stream = loop {
        match UnixStream::connect(socket) {
            Ok(s) => break s,
            Err(e) if Instant::now() >= deadline => {
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "another strobe-app holds this home's app.lock but does not answer on {}: {e}",
                        socket.display()
                    ),
                ));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    stream.set_read_timeout(Some(ASK_DEADLINE))?;
    (&stream).write_all(format!("{SHOW}\n").as_bytes())?;
    let mut reply = String::new();
    BufReader::new(&stream).read_line(&mut reply)?;
    if reply.trim() == SHOWN {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "the running strobe-app answered {reply:?} instead of {SHOWN:?}"
        )))
    }
}

impl Instance {
    /// Answers later instances on a thread of its own: each `show` request
    /// runs `on_show` (which must not block: it hands the work to the UI).
    pub fn serve(&mut self, on_show: impl Fn() + Send + 'static) {
        let Some(listener) = self.listener.take() else {
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("app-instance".into())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    // A client that never writes must not stall the others.
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                    let mut line = String::new();
                    if BufReader::new(&stream).read_line(&mut line).is_err() {
                        continue;
                    }
                    if line.trim() == SHOW {
                        tracing::info!("another strobe-app asked for the window");
                        on_show();
                        let _ = (&stream).write_all(format!("{SHOWN}\n").as_bytes());
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot answer later instances: {e}");
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // The lock goes with the process; the socket file would linger.
        let _ = std::fs::remove_file(&self.socket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_claim_asks_the_first_to_show() {
        let tmp = std::env::temp_dir().join(format!("strobe-app-instance-{}", std::process::id()));
        let home = StrobeHome::at(&tmp);
        let Claim::First(mut first) = claim(&home).unwrap() else {
            panic!("the first claim must win");
        };
        let mode = std::fs::metadata(home.root().join("app.sock"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let (tx, rx) = std::sync::mpsc::channel();
        first.serve(move || tx.send(()).unwrap());
        // flock is per open file description, so a second open in this
        // process conflicts just as another process would.
        assert!(matches!(claim(&home).unwrap(), Claim::AskedFirst));
        rx.recv_timeout(Duration::from_secs(5)).unwrap();
        drop(first);
        assert!(!home.root().join("app.sock").exists());
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
