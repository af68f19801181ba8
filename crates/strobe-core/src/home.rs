//! Layout of `$STROBE_HOME` (default `~/.strobe`).

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The per-user directory that holds the daemon's socket, pid, lock,
/// database, settings and logs. Created owner-only (0700).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrobeHome {
    root: PathBuf,
}

impl StrobeHome {
    /// `$STROBE_HOME` if set, else `~/.strobe`.
    pub fn from_env() -> io::Result<Self> {
        if let Some(dir) = std::env::var_os("STROBE_HOME").filter(|v| !v.is_empty()) {
            let p = PathBuf::from(dir);
            let p = if p.is_absolute() {
                p
            } else {
                std::env::current_dir()?.join(p)
            };
            return Ok(Self::at(p));
        }
        let home = std::env::var_os("HOME").ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "neither STROBE_HOME nor HOME is set; set STROBE_HOME to a directory Strobe may use",
            )
        })?;
        Ok(Self::at(PathBuf::from(home).join(".strobe")))
    }

    /// A home at an explicit directory.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Creates the directory (and `logs/`) if needed and forces mode 0700.
    pub fn ensure(&self) -> io::Result<()> {
        fs::create_dir_all(self.logs_dir())?;
        fs::set_permissions(&self.root, fs::Permissions::from_mode(0o700))?;
        fs::set_permissions(self.logs_dir(), fs::Permissions::from_mode(0o700))?;
        Ok(())
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The daemon's Unix socket.
    pub fn socket(&self) -> PathBuf {
        self.root.join("strobe.sock")
    }
    /// The daemon's pid file (informational; the lock file is authoritative).
    pub fn pid_file(&self) -> PathBuf {
        self.root.join("strobe.pid")
    }
    /// Lock held by the live daemon for its whole life.
    pub fn lock_file(&self) -> PathBuf {
        self.root.join("strobe.lock")
    }
    /// The event store.
    pub fn database(&self) -> PathBuf {
        self.root.join("strobe.db")
    }
    /// User-global settings.
    pub fn settings_file(&self) -> PathBuf {
        self.root.join("settings.json")
    }
    /// Log directory (daemon log, bridge logs).
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }
    /// Where compiled agents are cached, keyed by source hash.
    pub fn agent_cache_dir(&self) -> PathBuf {
        self.root.join("agent-cache")
    }
    /// Files a session keeps besides its events (a Node.js program's
    /// probed sources), under `sessions/<id>`.
    pub fn session_dir(&self, id: &str) -> PathBuf {
        self.root.join("sessions").join(id)
    }
    /// Default location of the Python venv that holds the pinned `frida`.
    pub fn default_venv(&self) -> PathBuf {
        self.root.join("venv")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ensure_makes_owner_only_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let home = StrobeHome::at(tmp.path().join("h"));
        home.ensure().unwrap();
        let mode = fs::metadata(home.root()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert!(home.logs_dir().is_dir());
    }
}
