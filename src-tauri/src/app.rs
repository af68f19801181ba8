//! The windowed app: wires the daemon host, the window, the tray and the
//! single-instance socket into Tauri, and shuts the daemon down on the way
//! out.

use crate::daemon_host::{DaemonHost, HostState};
use crate::instance::Instance;
use crate::{headless, tray, window};
use std::panic::AssertUnwindSafe;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use strobe_core::StrobeHome;
use tauri::AppHandle;
use tokio::sync::watch;

/// How long Quit waits for the daemon to stop its sessions and close the store.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs the app until Quit (tray), the window's close without a tray, or
/// SIGTERM/SIGINT/SIGHUP; then stops the in-process daemon gracefully.
pub fn run(home: StrobeHome, mut instance: Instance) -> ExitCode {
    // The daemon starts while GTK and WebKit come up.
    let host = match DaemonHost::start(home.clone()) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("strobe-app: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let handle: Arc<OnceLock<AppHandle>> = Arc::default();
    let on_show = handle.clone();
    instance.serve(move || {
        // Before setup the window is about to appear anyway.
        if let Some(app) = on_show.get() {
            let a = app.clone();
            let _ = app.run_on_main_thread(move || window::show(&a));
        }
    });

    let (state, rt) = (host.state(), host.handle());
    let info_file = home.root().join("app.json");
    let info = info_file.clone();
    let builder = tauri::Builder::default().setup(move |app| {
        let _ = handle.set(app.handle().clone());
        setup(app.handle(), state, &rt, &info);
        Ok(())
    });
    // GTK panics when the display cannot be opened after all (a stale
    // DISPLAY): be the headless daemon then rather than crash.
    let built = quietly(|| builder.build(tauri::generate_context!()))
        .and_then(|r| r.map_err(|e| e.to_string()));
    let app = match built {
        Ok(app) => app,
        Err(why) => {
            eprintln!(
                "strobe-app: no window ({why}): running the headless daemon instead; agents \
                 connect with `strobe mcp`"
            );
            host.shutdown(SHUTDOWN_TIMEOUT);
            drop(instance);
            return headless::run(home);
        }
    };
    let code = app.run_return(|_, _| {});
    tracing::info!("quitting");
    host.shutdown(SHUTDOWN_TIMEOUT);
    let _ = std::fs::remove_file(&info_file);
    drop(instance);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Runs `f`, turning a panic on this thread into its message; the default
/// hook's report of it is left out (the caller explains), while panics on
/// other threads (the daemon's) are reported as usual.
fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    let this = std::thread::current().id();
    let previous: Arc<dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync> =
        Arc::from(std::panic::take_hook());
    let others = previous.clone();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() != this {
            others(info);
        }
    }));
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    drop(std::panic::take_hook());
    std::panic::set_hook(Box::new(move |info| previous(info)));
    result.map_err(|panic| panic_text(panic.as_ref(), "the window system failed"))
}

/// A caught panic's message, or `fallback` when it carried none.
pub fn panic_text(panic: &(dyn std::any::Any + Send), fallback: &str) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| fallback.to_string())
}

/// Runs on the main thread once the event loop is up.
fn setup(
    app: &AppHandle,
    state: watch::Receiver<HostState>,
    rt: &tokio::runtime::Handle,
    info_file: &std::path::Path,
) {
    quit_on_signals(app.clone(), rt);
    let main = match window::create(app) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("strobe-app: cannot create the window: {e}");
            app.exit(1);
            return;
        }
    };
    match main.url() {
        Ok(shell) => window::follow(app.clone(), shell, state.clone(), rt),
        Err(e) => {
            tracing::warn!("window: cannot read its URL ({e}); it will not follow the daemon")
        }
    }
    let tray_mode = match tray::create(app, state.clone()) {
        Ok(icon) => {
            tracing::info!(
                "tray: icon created (shown where a StatusNotifier host runs); closing the window hides it"
            );
            let noticed = icon.clone();
            window::close_to_tray(&main, move || tray::notice_hidden(&noticed));
            tray::follow(app.clone(), icon, state);
            "icon".to_string()
        }
        Err(why) => {
            tracing::info!("tray: none ({why}); window only: closing the window quits");
            format!("none: {why}")
        }
    };
    // For scripts and tests: which process is the app, and its tray mode.
    let info = serde_json::json!({"pid": std::process::id(), "tray": tray_mode});
    if let Err(e) = strobe_core::files::write_atomically(info_file, info.to_string().as_bytes()) {
        tracing::warn!("cannot write {}: {e}", info_file.display());
    }
}

/// SIGTERM, SIGINT and SIGHUP quit like the tray's Quit, so the daemon
/// stops its sessions and closes the store instead of dying mid-write.
fn quit_on_signals(app: AppHandle, rt: &tokio::runtime::Handle) {
    use tokio::signal::unix::{SignalKind, signal};
    rt.spawn(async move {
        let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::hangup()),
        ) else {
            tracing::warn!("cannot watch SIGTERM/SIGINT/SIGHUP: they will kill the app outright");
            return;
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: quitting"),
            _ = int.recv() => tracing::info!("SIGINT: quitting"),
            _ = hup.recv() => tracing::info!("SIGHUP: quitting"),
        }
        app.exit(0);
    });
}
