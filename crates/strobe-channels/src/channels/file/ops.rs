//! What a file channel's stimuli do on disk: each on the channel's
//! directory descriptor, never through a link at the file itself, on
//! regular files only (a FIFO takes writes while something reads it), and
//! never waiting long on a FIFO.

use super::FileChannel;
use crate::ChannelError;
use crate::bounded_write::write_bounded;
use crate::contained::{Entry, ProjectDir};
use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::time::Duration;

/// How long a write into a FIFO waits for its reader to take the text.
const FIFO_PATIENCE: Duration = Duration::from_secs(2);

/// Why a channel does not work through link `name`, and what to add instead.
pub(super) fn link_refusal(dir: &ProjectDir, name: &str) -> String {
    let shown = dir.shown(name);
    match dir.link_inside(name) {
        Some(real) => format!(
            "{shown} is a symbolic link (to {real}): a file channel never works through a link; use file:{real}"
        ),
        None => format!(
            "{shown} is a symbolic link out of the project: a file channel never works through a link, \
             so a repository's link cannot aim it at your files; to change the file it points to, add that \
             file by its own path with debug_channel {{action: \"add\", allowOutsideProject: true}}"
        ),
    }
}

impl FileChannel {
    /// Does `op` on `file` in the channel's directory: on regular files
    /// (and writes into a FIFO that has a reader), never through a link,
    /// never waiting on a FIFO; the answer's summary.
    pub(super) fn apply(
        &self,
        op: &str,
        file: &str,
        text: Option<String>,
    ) -> Result<String, ChannelError> {
        if !["write", "append", "truncate", "delete", "touch"].contains(&op) {
            return Err(self.bad(format!(
                "'op' {op:?} is not one of write, append, truncate, delete, touch"
            )));
        }
        let shown = self.shown(file);
        let io = |e: std::io::Error| self.io_error(op, file, e);
        let refuse = |why: String| ChannelError::Unavailable {
            channel: self.name.clone(),
            why,
        };
        let text = match (op, text) {
            ("write" | "append", None) => return Err(self.bad(format!("'{op}' needs 'text'"))),
            (_, t) => t.unwrap_or_default(),
        };
        let entry = self.dir.entry(file).map_err(io)?;
        match (op, entry) {
            (_, Entry::Dir) => {
                return Err(refuse(format!(
                    "{shown} is a directory: a file channel changes files"
                )));
            }
            ("delete", Entry::Missing) => {
                return Err(io(std::io::Error::from_raw_os_error(libc::ENOENT)));
            }
            ("delete", e) => {
                // The entry itself goes: a link, never what it points to.
                self.dir.unlink_at(file).map_err(io)?;
                return Ok(match e {
                    Entry::Link => format!("deleted the link {shown} (not what it points to)"),
                    Entry::Regular => format!("deleted {shown}"),
                    other => format!("deleted {shown} ({})", other.described()),
                });
            }
            (_, Entry::Link) => return Err(refuse(link_refusal(&self.dir, file))),
            ("truncate" | "touch", Entry::Fifo) | (_, Entry::Special) => {
                return Err(refuse(format!(
                    "{shown} is {}, not a regular file: a file channel does not {op} it",
                    entry.described()
                )));
            }
            _ => {}
        }
        let flags = match op {
            "write" | "touch" => libc::O_WRONLY | libc::O_CREAT,
            "append" => libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND,
            _ => libc::O_WRONLY,
        };
        let mut f = self.dir.open_at(file, flags).map_err(io)?;
        // What was opened decides, not what was looked at before.
        let kind = f.metadata().map_err(io)?.file_type();
        if kind.is_fifo() && matches!(op, "write" | "append") {
            let n = write_bounded(&mut f, text.as_bytes(), FIFO_PATIENCE)
                .map_err(|e| refuse(format!("{op} {shown} (a FIFO): {e}")))?;
            return Ok(format!("wrote {n} bytes into the FIFO {shown}"));
        }
        if !kind.is_file() {
            return Err(refuse(format!(
                "{shown} is not a regular file: a file channel does not {op} it"
            )));
        }
        Ok(match op {
            "write" => {
                f.set_len(0).map_err(io)?;
                f.write_all(text.as_bytes()).map_err(io)?;
                format!("wrote {} bytes to {shown}", text.len())
            }
            "append" => {
                f.write_all(text.as_bytes()).map_err(io)?;
                format!("appended {} bytes to {shown}", text.len())
            }
            "truncate" => {
                f.set_len(0).map_err(io)?;
                format!("truncated {shown}")
            }
            _ => {
                f.set_modified(std::time::SystemTime::now()).map_err(io)?;
                format!("touched {shown}")
            }
        })
    }

    /// A failed system call on `file`, said in the channel's terms.
    fn io_error(&self, op: &str, file: &str, e: std::io::Error) -> ChannelError {
        let shown = self.shown(file);
        let why = match e.raw_os_error() {
            Some(libc::ENXIO) => format!(
                "{op} {shown}: it is a FIFO and no process has the FIFO open for reading, so nothing \
                 would take the text (a write would wait for a reader forever): start the program's \
                 reader first, or write a regular file"
            ),
            Some(libc::ELOOP) => link_refusal(&self.dir, file),
            _ => format!("{op} {shown}: {e}"),
        };
        ChannelError::Unavailable {
            channel: self.name.clone(),
            why,
        }
    }
}
