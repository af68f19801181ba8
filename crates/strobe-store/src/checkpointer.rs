//! WAL checkpoints off the writer's thread.
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses the
//! threshold: the writer copies the WAL's pages into the database and waits
//! for the fsync, and no batch is encoded meanwhile. Here the writer's
//! connection checkpoints never; after each commit it wakes this thread,
//! whose own connection runs passive checkpoints (they never block the
//! writer or readers). Only a WAL grown past [`RESTART_FRAMES`] (the
//! checkpoints cannot keep up, or a long read pins old frames) gets a
//! blocking one, which lets the writer start the WAL over.

use crate::error::StoreError;
use crate::schema;
use crossbeam_channel::{Receiver, Sender, TrySendError, bounded};
use rusqlite::Connection;
use std::path::Path;
use std::thread::JoinHandle;

/// WAL frames past which a checkpoint waits for the writer (256 MB of
/// 16 KB pages).
const RESTART_FRAMES: i64 = 16_384;

/// The checkpointing thread; stopped and joined when dropped.
pub(crate) struct Checkpointer {
    wake: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts checkpointing the database at `path`.
    pub(crate) fn start(path: &Path) -> Result<Checkpointer, StoreError> {
        let conn = schema::open(path)?;
        let (wake, rx) = bounded(1);
        let thread = std::thread::Builder::new()
            .name("strobe-store-checkpoint".into())
            .spawn(move || run(&conn, &rx))
            .map_err(|_| StoreError::WriterGone)?;
        Ok(Checkpointer {
            wake: Some(wake),
            thread: Some(thread),
        })
    }

    /// Says a commit happened (wakes the thread if it sleeps; a wake-up
    /// already pending covers this one).
    pub(crate) fn committed(&self) {
        if let Some(w) = &self.wake
            && let Err(TrySendError::Disconnected(_)) = w.try_send(())
        {
            tracing::warn!("the store's checkpoint thread is gone; the WAL grows until restart");
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.wake.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(conn: &Connection, wake: &Receiver<()>) {
    while wake.recv().is_ok() {
        let frames = match checkpoint(conn, "PASSIVE") {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!("WAL checkpoint failed: {e}");
                continue;
            }
        };
        if frames > RESTART_FRAMES
            && let Err(e) = checkpoint(conn, "RESTART")
        {
            tracing::warn!("WAL restart checkpoint failed: {e}");
        }
    }
}

/// Runs one checkpoint of `mode`; returns the WAL's frames.
fn checkpoint(conn: &Connection, mode: &str) -> rusqlite::Result<i64> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
        r.get::<_, i64>(1)
    })
}
