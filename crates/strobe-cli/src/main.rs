//! `strobe`: the command-line entry point (no Tauri, no GTK).
//!
//! - `strobe mcp`    stdio MCP endpoint for coding agents (starts the daemon)
//! - `strobe daemon` the per-user daemon, in the foreground
//! - `strobe setup`  creates the Python venv with the pinned frida
//! - `strobe ui`     turns on the daemon's loopback web UI and prints its URL
//! - `strobe export` writes a stored session as a Perfetto / chrome://tracing trace

use std::process::ExitCode;
use strobe_core::{Settings, StrobeHome};
use strobe_frida::{FridaPython, PINNED_FRIDA_VERSION};

const USAGE: &str = "\
strobe — an LLM-native debugger

USAGE:
    strobe mcp       Serve MCP on stdin/stdout (register this with your coding agent)
    strobe daemon    Run the daemon in the foreground (normally started by `strobe mcp`)
    strobe setup     Install the Python venv with the pinned frida (needs python3)
    strobe ui        Start the web UI on loopback (starting the daemon if needed)
                     and print its URL, which carries the access token
    strobe export SESSION [-o FILE]
                     Write a stored session as Chrome trace-event JSON, which
                     Perfetto UI (ui.perfetto.dev) and chrome://tracing open
                     (default FILE: SESSION.trace.json; `-o -` for stdout)
    strobe --version

ENVIRONMENT:
    STROBE_HOME      Data directory (default ~/.strobe)
    STROBE_VENV      Python venv holding frida (default $STROBE_HOME/venv)
    STROBE_LOG       Log filter, e.g. debug (default info)
";

fn home_or_exit() -> Result<StrobeHome, ExitCode> {
    StrobeHome::from_env().map_err(|e| {
        eprintln!("strobe: {e}");
        ExitCode::from(2)
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let home = match home_or_exit() {
        Ok(h) => h,
        Err(c) => return c,
    };
    match args.first().map(String::as_str) {
        Some("mcp") => {
            let exe = match std::env::current_exe() {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("strobe mcp: cannot find my own executable to start the daemon: {e}");
                    return ExitCode::from(1);
                }
            };
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            match rt.block_on(strobe_daemon::run_proxy(home, &exe)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("strobe mcp: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Some("daemon") => {
            strobe_daemon::init_logging();
            // Everything the daemon creates (database, WAL, logs, caches) is owner-only.
            // SAFETY: umask(2) cannot fail.
            unsafe { libc::umask(0o077) };
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            match rt.block_on(strobe_daemon::run_daemon(home)) {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("strobe daemon: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Some("setup") => {
            let (settings, _) = Settings::load(&home.settings_file(), None);
            let py = FridaPython::locate(settings.frida_venv.as_deref(), &home.default_venv());
            let python3 = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
            eprintln!(
                "strobe setup: frida=={PINNED_FRIDA_VERSION} in {}",
                py.venv.display()
            );
            match py.install(&python3) {
                Ok(()) => {
                    println!("{}", py.venv.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("strobe setup: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Some("export") => export(&home, &args[1..]),
        Some("ui") => ui(home),
        Some("--version" | "-V") => {
            println!(
                "strobe {} (frida {PINNED_FRIDA_VERSION})",
                env!("CARGO_PKG_VERSION")
            );
            ExitCode::SUCCESS
        }
        Some("--help" | "-h" | "help") | None => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("strobe: unknown command '{other}'\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// `strobe export SESSION [-o FILE]`: reads the store directly, so it works
/// whether or not the daemon runs (SQLite WAL lets both read at once).
fn export(home: &StrobeHome, args: &[String]) -> ExitCode {
    let usage = "usage: strobe export SESSION [-o FILE]";
    let (mut session, mut file) = (None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-o" | "--output" => match it.next() {
                Some(f) => file = Some(f.clone()),
                None => {
                    eprintln!("strobe export: -o needs a file name\n{usage}");
                    return ExitCode::from(2);
                }
            },
            other if other.starts_with('-') => {
                eprintln!("strobe export: unknown option '{other}'\n{usage}");
                return ExitCode::from(2);
            }
            other if session.is_none() => session = Some(other.to_string()),
            other => {
                eprintln!("strobe export: one session at a time ('{other}' is extra)\n{usage}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(session) = session else {
        eprintln!("strobe export: which session? {usage}");
        return ExitCode::from(2);
    };
    if !home.database().exists() {
        eprintln!(
            "strobe export: no store at {} (STROBE_HOME={}); nothing was recorded there yet",
            home.database().display(),
            home.root().display()
        );
        return ExitCode::from(1);
    }
    let store = match strobe_store::Store::open(&home.database()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "strobe export: cannot open {}: {e}",
                home.database().display()
            );
            return ExitCode::from(1);
        }
    };
    let file = file.unwrap_or_else(|| format!("{session}.trace.json"));
    let result = if file == "-" {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        strobe_view::export::chrome_trace(&store, &session, &mut out)
    } else {
        // Written beside the target and renamed, so a failed export leaves
        // no half file under the name asked for.
        let tmp = format!("{file}.partial");
        let written = std::fs::File::create(&tmp)
            .map_err(strobe_view::ViewError::from)
            .and_then(|f| {
                let mut out = std::io::BufWriter::new(f);
                strobe_view::export::chrome_trace(&store, &session, &mut out)
            });
        match written {
            Ok(s) => std::fs::rename(&tmp, &file)
                .map(|()| s)
                .map_err(strobe_view::ViewError::from),
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
                eprintln!(
                    "strobe export: {} calls ({} unfinished) and {} instant events from {} stored events \
                     written to {file}; open it in https://ui.perfetto.dev or chrome://tracing",
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

/// `strobe ui`: asks the daemon (started if need be) to serve the web UI.
fn ui(home: StrobeHome) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("strobe ui: cannot find my own executable to start the daemon: {e}");
            return ExitCode::from(1);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match rt.block_on(strobe_daemon::proxy::control(
        &home,
        &exe,
        serde_json::json!({"strobeControl": "ui"}),
    )) {
        Ok(reply) => match reply["url"].as_str() {
            Some(url) => {
                println!("{url}");
                eprintln!(
                    "strobe ui: open that URL in a browser or an editor webview; it carries this \
                     daemon's access token, so keep it to yourself"
                );
                ExitCode::SUCCESS
            }
            None => {
                eprintln!(
                    "strobe ui: the daemon could not start the web UI: {}",
                    reply["error"].as_str().unwrap_or("no reason given")
                );
                ExitCode::from(1)
            }
        },
        Err(e) => {
            eprintln!("strobe ui: {e}");
            ExitCode::from(1)
        }
    }
}
