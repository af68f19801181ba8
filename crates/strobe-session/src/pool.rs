//! A pool of one warm bridge, so a launch does not wait for Python and Frida
//! to start (~0.2–0.3 s).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use strobe_frida::{Bridge, BridgeError};

/// Hands out bridges, keeping one spare started ahead of need.
pub struct BridgePool {
    work_dir: PathBuf,
    logs_dir: PathBuf,
    spare: Arc<Mutex<Option<(PathBuf, Bridge)>>>,
}

const READY_TIMEOUT: Duration = Duration::from_secs(30);

impl BridgePool {
    /// A pool writing bridge scripts to `work_dir` and logs to `logs_dir`.
    pub fn new(work_dir: PathBuf, logs_dir: PathBuf) -> Self {
        Self {
            work_dir,
            logs_dir,
            spare: Arc::new(Mutex::new(None)),
        }
    }

    fn start(work_dir: &Path, logs_dir: &Path, python: &Path) -> Result<Bridge, BridgeError> {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = logs_dir.join(format!("bridge-{}-{n}.log", std::process::id()));
        Bridge::start(python, work_dir, &log, READY_TIMEOUT)
    }

    /// Starts a bridge and lets it pay Frida's first-attach cost up front.
    fn start_warm(work_dir: &Path, logs_dir: &Path, python: &Path) -> Result<Bridge, BridgeError> {
        let b = Self::start(work_dir, logs_dir, python)?;
        if let Err(e) = b.request("warm", serde_json::json!({}), READY_TIMEOUT) {
            tracing::debug!("bridge warm-up failed (the launch will just be slower): {e}");
        }
        Ok(b)
    }

    /// A ready bridge for `python`: the spare if it matches and is healthy,
    /// else a new one. The caller refills the pool once its launch is done,
    /// so starting the next spare does not compete with the launch for CPU.
    pub fn take(&self, python: &Path) -> Result<Bridge, BridgeError> {
        let spare = self.spare.lock().expect("pool lock").take();
        match spare {
            Some((p, b)) if p == python && b.gone_reason().is_none() => Ok(b),
            _ => Self::start(&self.work_dir, &self.logs_dir, python),
        }
    }

    /// Starts a spare in the background if there is none.
    pub fn refill(&self, python: &Path) {
        let spare = self.spare.clone();
        let (work, logs, python) = (
            self.work_dir.clone(),
            self.logs_dir.clone(),
            python.to_path_buf(),
        );
        std::thread::spawn(move || {
            if spare.lock().expect("pool lock").is_some() {
                return;
            }
            match Self::start_warm(&work, &logs, &python) {
                Ok(b) => {
                    let mut slot = spare.lock().expect("pool lock");
                    if slot.is_none() {
                        *slot = Some((python, b));
                    }
                }
                Err(e) => tracing::debug!("no warm bridge: {e}"),
            }
        });
    }

    /// Stops the spare (daemon shutdown).
    pub fn drain(&self) {
        if let Some((_, b)) = self.spare.lock().expect("pool lock").take() {
            b.terminate();
        }
    }
}
