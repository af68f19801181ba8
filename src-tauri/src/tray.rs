//! The tray icon: live state of the daemon, recent sessions, Quit.
//!
//! On Linux Tauri's tray is an AppIndicator (StatusNotifierItem). Two
//! environments must not crash the app: without `libayatana-appindicator3`
//! Tauri panics when the icon is built, so the library is probed first (and
//! the build guarded); without a StatusNotifier host (a bare X server, some
//! desktops) the icon is created but shown nowhere, which is harmless —
//! the window and `strobe-app` run again still reach everything.
//!
//! AppIndicators show no tooltips, so the state is also the menu's first
//! (disabled) line; the short title appears next to the icon where the
//! desktop shows labels.

use crate::daemon_host::HostState;
use crate::status::{Api, Snapshot};
use crate::window;
use std::panic::AssertUnwindSafe;
use std::time::Duration;
use tauri::image::Image;
use tauri::menu::{IsMenuItem, Menu, MenuEvent, MenuItem, PredefinedMenuItem, Submenu};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Wry};
use tokio::sync::watch;

/// How often the tray re-reads the daemon's state.
const POLL: Duration = Duration::from_secs(2);

/// Menu ids.
const OPEN: &str = "open";
const QUIT: &str = "quit";
const SESSION_PREFIX: &str = "session:";

/// Libraries Tauri's tray loads on Linux, in its order of preference.
const INDICATOR_LIBRARIES: [&std::ffi::CStr; 2] =
    [c"libayatana-appindicator3.so.1", c"libappindicator3.so.1"];

/// The first AppIndicator library that loads, or None.
fn indicator_library() -> Option<&'static str> {
    INDICATOR_LIBRARIES.iter().find_map(|name| {
        // SAFETY: dlopen of a system library by name. It stays loaded (no
        // dlclose): Tauri opens the same library right after.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
        (!handle.is_null()).then(|| name.to_str().unwrap_or("?"))
    })
}

/// Creates the tray icon, or says why there is none. Must run on the main
/// thread, where Tauri builds it (so a panic there can be caught here).
pub fn create(app: &AppHandle, host: watch::Receiver<HostState>) -> Result<TrayIcon, String> {
    if std::env::var_os("STROBE_NO_TRAY").is_some_and(|v| !v.is_empty() && v != "0") {
        return Err("STROBE_NO_TRAY is set".into());
    }
    let library = indicator_library().ok_or(
        "libayatana-appindicator3.so.1 is not installed (Debian: apt install libayatana-appindicator3-1)",
    )?;
    let icon = Image::from_bytes(include_bytes!("../icons/tray.png")).map_err(|e| e.to_string())?;
    let menu = build_menu(app, "Strobe: starting…", None, &[]).map_err(|e| e.to_string())?;
    let built = std::panic::catch_unwind(AssertUnwindSafe(|| {
        TrayIconBuilder::with_id("strobe")
            .icon(icon)
            .tooltip("Strobe")
            .menu(&menu)
            .show_menu_on_left_click(true)
            .on_menu_event(move |app, event| on_menu(app, &event, &host))
            .build(app)
    }));
    match built {
        Ok(Ok(tray)) => {
            tracing::debug!("tray: using {library}");
            Ok(tray)
        }
        Ok(Err(e)) => Err(format!("cannot create the tray icon: {e}")),
        Err(panic) => Err(format!(
            "creating the tray icon panicked: {}",
            crate::app::panic_text(panic.as_ref(), "?")
        )),
    }
}

fn on_menu(app: &AppHandle, event: &MenuEvent, host: &watch::Receiver<HostState>) {
    let id = event.id().as_ref();
    if id == OPEN {
        window::show(app);
    } else if id == QUIT {
        tracing::info!("quit from the tray");
        app.exit(0);
    } else if let Some(session) = id.strip_prefix(SESSION_PREFIX) {
        match &*host.borrow() {
            HostState::Ready { url, .. } => {
                let url = format!("{url}#/session/{}", window::encode_component(session));
                window::open_at(app, &url);
            }
            _ => window::show(app),
        }
    }
}

/// Tells the user, once, that closing the window did not quit Strobe.
pub fn notice_hidden(tray: &TrayIcon) {
    tracing::info!(
        "window closed: Strobe keeps running in the tray (its menu opens the window again or quits)"
    );
    let _ = tray.set_tooltip(Some("Strobe is still running: Quit is in this menu"));
}

/// What the tray shows at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
struct View {
    /// The menu's first line.
    headline: String,
    /// The menu's second line, when something crashed.
    crash: Option<String>,
    /// Recent sessions: (id, label).
    recent: Vec<(String, String)>,
    /// Next to the icon.
    title: String,
    /// On hover, where the desktop shows tooltips.
    tooltip: String,
}

impl View {
    fn plain(headline: &str) -> View {
        View {
            headline: headline.into(),
            crash: None,
            recent: vec![],
            title: String::new(),
            tooltip: headline.into(),
        }
    }

    /// Reads the daemon's state through its web API.
    fn read(state: &HostState) -> View {
        let HostState::Ready { url, .. } = state else {
            return View::plain(match state {
                HostState::Starting => "Strobe: starting…",
                _ => "Strobe: no daemon",
            });
        };
        let snapshot = Api::from_ui_url(url)
            .ok_or_else(|| std::io::Error::other("unexpected UI URL"))
            .and_then(|api| Snapshot::fetch(&api, strobe_core::clock::unix_millis()));
        match snapshot {
            Ok(s) => View {
                headline: format!("Strobe: {}", s.running()),
                crash: s.last_crash.clone(),
                recent: s
                    .recent
                    .iter()
                    .map(|r| (r.id.clone(), r.label.clone()))
                    .collect(),
                title: s.title(),
                tooltip: format!("Strobe: {}", s.summary()),
            },
            Err(e) => {
                tracing::debug!("tray: cannot read the daemon's state: {e}");
                View::plain("Strobe: the daemon does not answer")
            }
        }
    }
}

/// Keeps the icon's title, tooltip and menu on the daemon's live state, on
/// a thread of its own (plain blocking HTTP every [`POLL`]).
pub fn follow(app: AppHandle, tray: TrayIcon, host: watch::Receiver<HostState>) {
    let spawned = std::thread::Builder::new()
        .name("tray-status".into())
        .spawn(move || {
            let mut shown: Option<View> = None;
            loop {
                let state = host.borrow().clone();
                let view = View::read(&state);
                if shown.as_ref() != Some(&view) {
                    match build_menu(&app, &view.headline, view.crash.as_deref(), &view.recent) {
                        Ok(menu) => {
                            let _ = tray.set_menu(Some(menu));
                            let _ = tray.set_tooltip(Some(&view.tooltip));
                            let _ = tray.set_title(Some(&view.title));
                            tracing::debug!(
                                "tray: {} (recent sessions: {})",
                                view.tooltip,
                                view.recent.len()
                            );
                            shown = Some(view);
                        }
                        Err(e) => tracing::debug!("tray: cannot rebuild the menu: {e}"),
                    }
                }
                std::thread::sleep(POLL);
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("tray: no live state: {e}");
    }
}

/// The tray's menu: state, last crash, Open window, Recent sessions, Quit.
fn build_menu(
    app: &AppHandle,
    headline: &str,
    crash: Option<&str>,
    recent: &[(String, String)],
) -> tauri::Result<Menu<Wry>> {
    let state = MenuItem::with_id(app, "state", menu_text(headline), false, None::<&str>)?;
    let crash = crash
        .map(|c| {
            let text = menu_text(&format!("Last crash: {c}"));
            MenuItem::with_id(app, "crash", text, false, None::<&str>)
        })
        .transpose()?;
    let open = MenuItem::with_id(app, OPEN, "Open window", true, None::<&str>)?;
    let sessions = recent
        .iter()
        .map(|(id, label)| {
            MenuItem::with_id(
                app,
                format!("{SESSION_PREFIX}{id}"),
                menu_text(label),
                true,
                None::<&str>,
            )
        })
        .collect::<tauri::Result<Vec<_>>>()?;
    let session_refs: Vec<&dyn IsMenuItem<Wry>> =
        sessions.iter().map(|i| i as &dyn IsMenuItem<Wry>).collect();
    let recent_menu = Submenu::with_id_and_items(
        app,
        "recent",
        "Recent sessions",
        !recent.is_empty(),
        &session_refs,
    )?;
    let quit = MenuItem::with_id(app, QUIT, "Quit Strobe", true, None::<&str>)?;
    let sep1 = PredefinedMenuItem::separator(app)?;
    let sep2 = PredefinedMenuItem::separator(app)?;
    let mut items: Vec<&dyn IsMenuItem<Wry>> = vec![&state];
    if let Some(crash) = &crash {
        items.push(crash);
    }
    items.extend([
        &sep1 as &dyn IsMenuItem<Wry>,
        &open,
        &recent_menu,
        &sep2,
        &quit,
    ]);
    Menu::with_items(app, &items)
}

/// Menu text shows `&` as a mnemonic marker; keep it literal.
fn menu_text(s: &str) -> String {
    s.replace('&', "&&")
}
