//! No display: the app is just the daemon, in the foreground.
//!
//! Tauri panics when GTK cannot open a display, so this is decided before
//! any of it is touched (and is also where the app falls back to when the
//! window cannot be created after all).

use std::process::ExitCode;
use strobe_core::StrobeHome;

/// Whether a window could be shown at all (X11 or Wayland).
pub fn has_display() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()))
}

/// Runs the daemon as `strobe daemon` would (idle shutdown, SIGTERM/SIGINT)
/// until it stops; exits 0 at once when another daemon serves `home`.
pub fn run(home: StrobeHome) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("strobe-app: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(strobe_daemon::run_daemon(home.clone())) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!(
                "strobe-app: a daemon already serves {}; nothing to do",
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
