//! `strobe-app`: Strobe's desktop shell.
//!
//! The same daemon as `strobe daemon` (agents keep using `strobe mcp`), plus
//! a window on its web UI and a tray icon with the live state. One app per
//! `$STROBE_HOME`; without a display it is just the headless daemon.
//!
//! - `instance`: single instance (lock + `app.sock`, "show yourself")
//! - `daemon_host`: be the daemon, or attach to the running one
//! - `app`: the Tauri wiring; `window`: the main window; `tray`: the icon
//! - `status`: the tray's view of `/api/sessions` and `/api/tests`
//! - `headless`: no display

mod app;
mod daemon_host;
mod headless;
mod instance;
mod status;
mod tray;
mod window;

use std::process::ExitCode;
use strobe_core::StrobeHome;

const USAGE: &str = "\
strobe-app — Strobe's desktop app: the daemon, its web UI in a window, and a tray icon

USAGE:
    strobe-app            Open Strobe (or bring the open one to the front)
    strobe-app --version

While it is open it is the daemon agents reach with `strobe mcp` (or it shows the
daemon that was already running). Without a display it runs the daemon headless.

ENVIRONMENT:
    STROBE_HOME      Data directory (default ~/.strobe)
    STROBE_VENV      Python venv holding frida (default $STROBE_HOME/venv)
    STROBE_LOG       Log filter, e.g. debug (default info)
    STROBE_NO_TRAY   Set to 1 for no tray icon (closing the window then quits)
";

fn main() -> ExitCode {
    // Other arguments are ignored: WebDriver and desktop launchers add their own.
    match std::env::args().nth(1).as_deref() {
        Some("--help" | "-h") => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some("--version" | "-V") => {
            println!("strobe-app {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    strobe_daemon::init_logging();
    // This process is (or may become) the daemon: everything it creates
    // (database, WAL, logs, sockets) is owner-only, as with `strobe daemon`.
    // SAFETY: umask(2) cannot fail.
    unsafe { libc::umask(0o077) };
    let home = match StrobeHome::from_env() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("strobe-app: {e}");
            return ExitCode::from(2);
        }
    };
    if !headless::has_display() {
        eprintln!(
            "strobe-app: no display (neither DISPLAY nor WAYLAND_DISPLAY is set): running the \
             headless daemon instead; agents connect with `strobe mcp`"
        );
        return headless::run(home);
    }
    match instance::claim(&home) {
        Ok(instance::Claim::First(instance)) => app::run(home, instance),
        Ok(instance::Claim::AskedFirst) => {
            eprintln!(
                "strobe-app: Strobe is already open for {}; asked it to show its window",
                home.root().display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("strobe-app: {e}");
            ExitCode::from(1)
        }
    }
}
