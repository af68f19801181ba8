//! `strobe`: the command-line entry point (no Tauri, no GTK).
//!
//! - `strobe mcp`    stdio MCP endpoint for coding agents (starts the daemon)
//! - `strobe daemon` the per-user daemon, in the foreground
//! - `strobe setup`  creates the Python venv with the pinned frida

use std::process::ExitCode;
use strobe_core::{Settings, StrobeHome};
use strobe_frida::{FridaPython, PINNED_FRIDA_VERSION};

const USAGE: &str = "\
strobe — an LLM-native debugger

USAGE:
    strobe mcp       Serve MCP on stdin/stdout (register this with your coding agent)
    strobe daemon    Run the daemon in the foreground (normally started by `strobe mcp`)
    strobe setup     Install the Python venv with the pinned frida (needs python3)
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

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STROBE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
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
            init_logging();
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
