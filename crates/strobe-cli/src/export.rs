//! `strobe export SESSION [-o FILE] [--format chrome|perfetto]`: reads the
//! store directly, so it works whether or not the daemon runs (SQLite WAL
//! lets both read at once). The Perfetto format types calls' arguments and
//! return values with the capture plans stored with the session.

use std::io::Write;
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
    let result = if file == "-" {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        write(&store, session, format, &mut out)
    } else {
        // Written beside the target and renamed, so a failed export leaves
        // no half file under the name asked for.
        let tmp = format!("{file}.partial");
        let written = std::fs::File::create(&tmp)
            .map_err(ViewError::from)
            .and_then(|f| {
                let mut out = std::io::BufWriter::new(f);
                let s = write(&store, session, format, &mut out)?;
                out.flush()?;
                Ok(s)
            });
        match written {
            Ok(s) => std::fs::rename(&tmp, &file)
                .map(|()| s)
                .map_err(ViewError::from),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    };
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
