//! `strobe export SESSION [-o FILE] [--format chrome|perfetto]`: reads the
//! store directly, so it works whether or not the daemon runs (SQLite WAL
//! lets both read at once). The Perfetto format types calls' arguments and
//! return values with the capture plans stored with the session.
//!
//! The output is written to `FILE.partial` and renamed over `FILE`, so a
//! failed export leaves no half file under the name asked for. A rename
//! replaces whatever has that name, so nothing is created before the
//! session is known to exist, and only a regular file (or nothing) is ever
//! replaced: a device node, a FIFO, a socket, a directory or a symbolic
//! link at `FILE` is refused, and `FILE.partial` is created exclusively
//! without following links, so a planted link cannot redirect the write.

use std::fs::{File, FileType, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::process::ExitCode;
use strobe_core::StrobeHome;
use strobe_store::Store;
use strobe_view::ViewError;
use strobe_view::export::ExportSummary;

/// The trace format written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Chrome trace-event JSON.
    Chrome,
    /// Perfetto protobuf (TrackEvent).
    Perfetto,
}

fn write(
    store: &Store,
    session: &str,
    format: Format,
    out: &mut dyn Write,
) -> Result<ExportSummary, ViewError> {
    match format {
        Format::Chrome => strobe_view::export::chrome_trace(store, session, out),
        Format::Perfetto => {
            let decoders = store
                .session(session)?
                .map(|row| store.captures(row.key))
                .transpose()?
                .map(|blobs| strobe_session::trace::decoders_from_blobs(&blobs))
                .unwrap_or_default();
            let typed = |h: &strobe_core::event::EventHeader, payload: &[u8]| {
                strobe_session::trace::typed_in(Some(&decoders), h, payload)
            };
            strobe_view::perfetto::perfetto_trace(store, session, out, Some(&typed))
        }
    }
}

/// What a file type is, in words, for a refusal; a link names its target.
fn kind_of(ft: &FileType, path: &Path) -> String {
    if ft.is_symlink() {
        match std::fs::read_link(path) {
            Ok(to) => format!("a symbolic link (to {})", to.display()),
            Err(_) => "a symbolic link".into(),
        }
    } else if ft.is_dir() {
        "a directory".into()
    } else if ft.is_fifo() {
        "a FIFO (named pipe)".into()
    } else if ft.is_socket() {
        "a socket".into()
    } else if ft.is_char_device() {
        "a character device".into()
    } else if ft.is_block_device() {
        "a block device".into()
    } else {
        "not a regular file".into()
    }
}

/// Refuses an output path that holds anything but a regular file. A
/// symbolic link is refused too, not resolved: renaming over it would
/// replace the link itself, not write the file it points at, which is
/// neither what was asked nor safe in a repository's tree.
fn check_target(path: &Path) -> Result<(), String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot look at {}: {e}", path.display())),
    };
    if meta.file_type().is_file() {
        return Ok(());
    }
    let kind = kind_of(&meta.file_type(), path);
    let next = if meta.file_type().is_symlink() {
        "links are neither followed nor replaced: give the path of the file itself, or a new file"
    } else {
        "give a new or regular file with -o FILE, or -o - for stdout"
    };
    Err(format!(
        "{} is {kind}: an export only ever replaces a regular file, so nothing was written; {next}",
        path.display()
    ))
}

/// Creates `tmp` exclusively and without following a link. A regular file
/// there is an interrupted export's leftover and is removed first;
/// anything else (a link planted to redirect the write, a FIFO) is refused.
fn create_partial(tmp: &Path) -> Result<File, String> {
    match std::fs::symlink_metadata(tmp) {
        Ok(m) if m.file_type().is_file() => std::fs::remove_file(tmp)
            .map_err(|e| format!("cannot remove the leftover {}: {e}", tmp.display()))?,
        Ok(m) => {
            return Err(format!(
                "{} is {}: an export writes its output there before renaming it, and never through \
                 anything but a new file; remove it and export again",
                tmp.display(),
                kind_of(&m.file_type(), tmp)
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot look at {}: {e}", tmp.display())),
    }
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(tmp)
        .map_err(|e| format!("cannot create {}: {e}", tmp.display()))
}

/// Writes the export to `file` through `file.partial`, renamed only over
/// nothing or a regular file.
fn write_file(
    store: &Store,
    session: &str,
    format: Format,
    file: &str,
) -> Result<ExportSummary, String> {
    let target = Path::new(file);
    check_target(target)?;
    let tmp = format!("{file}.partial");
    let tmp = Path::new(&tmp);
    let f = create_partial(tmp)?;
    let written = (|| {
        let mut out = std::io::BufWriter::new(f);
        let s = write(store, session, format, &mut out)?;
        out.flush()?;
        Ok::<_, ViewError>(s)
    })()
    .map_err(|e| e.to_string())
    // Looked at again just before the rename: what appeared at the name
    // while the export ran is not replaced either.
    .and_then(|s| check_target(target).map(|()| s))
    .and_then(|s| {
        std::fs::rename(tmp, target)
            .map(|()| s)
            .map_err(|e| format!("cannot rename {} to {file}: {e}", tmp.display()))
    });
    if written.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    written
}

/// Runs `strobe export`.
pub fn run(home: &StrobeHome, session: &str, output: Option<String>, format: Format) -> ExitCode {
    let file = output.unwrap_or_else(|| match format {
        Format::Chrome => format!("{session}.trace.json"),
        Format::Perfetto => format!("{session}.pftrace"),
    });
    if !home.database().exists() {
        eprintln!(
            "strobe export: no store at {} (STROBE_HOME={}); nothing was recorded there yet",
            home.database().display(),
            home.root().display()
        );
        return ExitCode::from(1);
    }
    let store = match Store::open(&home.database()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "strobe export: cannot open {}: {e}",
                home.database().display()
            );
            return ExitCode::from(1);
        }
    };
    // The session first: nothing is created, and no path looked at, for
    // an id the store does not hold (the default file name comes from it).
    let known = match store.session(session) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(ViewError::NoSession(session.to_string()).to_string()),
        Err(e) => Err(ViewError::from(e).to_string()),
    };
    let result = known.and_then(|()| {
        if file == "-" {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            write(&store, session, format, &mut out).map_err(|e| e.to_string())
        } else {
            write_file(&store, session, format, &file)
        }
    });
    let _ = store.close();
    match result {
        Ok(s) => {
            if file != "-" {
                let flows = if s.flows > 0 {
                    format!(", {} flows from the agent's calls", s.flows)
                } else {
                    String::new()
                };
                let opens = match format {
                    Format::Chrome => "https://ui.perfetto.dev or chrome://tracing",
                    Format::Perfetto => "https://ui.perfetto.dev",
                };
                eprintln!(
                    "strobe export: {} calls ({} unfinished) and {} instant events{flows} from {} stored events \
                     written to {file}; open it in {opens}",
                    s.spans, s.unfinished, s.instants, s.events
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("strobe export: {e}");
            ExitCode::from(1)
        }
    }
}
