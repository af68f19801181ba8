//! The main window: a webview on the daemon's web UI.
//!
//! It opens on the bundled shell page ("Connecting to Strobe…") and is
//! pointed at the daemon's URL as soon as the host knows it, again whenever
//! the serving daemon changes (new port, new token), and back at the shell
//! page, with the reason, while no daemon can be reached.

use crate::daemon_host::HostState;
use std::sync::atomic::{AtomicBool, Ordering};
use tauri::{
    AppHandle, Manager, Url, WebviewUrl, WebviewWindow, WebviewWindowBuilder, WindowEvent,
};
use tokio::sync::watch;

/// The main window's label.
pub const MAIN: &str = "main";

/// Creates the main window on the shell page.
pub fn create(app: &AppHandle) -> tauri::Result<WebviewWindow> {
    WebviewWindowBuilder::new(app, MAIN, WebviewUrl::App("index.html".into()))
        .title("Strobe")
        .inner_size(1280.0, 820.0)
        .min_inner_size(640.0, 400.0)
        .build()
}

/// Brings the main window up: shown, restored, focused.
pub fn show(app: &AppHandle) {
    if let Some(w) = app.get_webview_window(MAIN) {
        let _ = w.unminimize();
        let _ = w.show();
        let _ = w.set_focus();
    }
}

/// Shows the window at `url` (e.g. a session: `<ui url>#/session/<id>`).
pub fn open_at(app: &AppHandle, url: &str) {
    if let (Some(w), Ok(url)) = (app.get_webview_window(MAIN), Url::parse(url)) {
        let _ = w.navigate(url);
    }
    show(app);
}

/// With a tray, closing the window only hides it (the daemon keeps serving
/// agents; the tray brings it back or quits). Without one, closing quits.
pub fn close_to_tray(window: &WebviewWindow, on_first_hide: impl Fn() + Send + Sync + 'static) {
    let w = window.clone();
    let noticed = AtomicBool::new(false);
    window.on_window_event(move |event| {
        if let WindowEvent::CloseRequested { api, .. } = event {
            api.prevent_close();
            let _ = w.hide();
            if !noticed.swap(true, Ordering::SeqCst) {
                on_first_hide();
            }
        }
    });
}

/// Keeps the window on whatever the host's state says, on `rt`.
pub fn follow(
    app: AppHandle,
    shell: Url,
    mut state: watch::Receiver<HostState>,
    rt: &tokio::runtime::Handle,
) {
    rt.spawn(async move {
        let mut shown: Option<Url> = None;
        loop {
            let target = match &*state.borrow_and_update() {
                HostState::Ready { url, .. } => Url::parse(url).ok(),
                HostState::Starting => Some(shell.clone()),
                HostState::Unavailable(why) => {
                    let mut page = shell.clone();
                    page.set_fragment(Some(&format!("error={}", encode_component(why))));
                    Some(page)
                }
            };
            // The shell page is already showing at start; navigating only on
            // a change keeps a user's place in the UI across repeated states.
            if let Some(target) = target
                && shown.as_ref() != Some(&target)
            {
                let first_load = shown.is_none() && target == shell;
                if !first_load && let Some(w) = app.get_webview_window(MAIN) {
                    tracing::debug!("window: navigating to {}", redact(&target));
                    let _ = w.navigate(target.clone());
                }
                shown = Some(target);
            }
            if state.changed().await.is_err() {
                return;
            }
        }
    });
}

/// A URL for logs, without its token.
fn redact(url: &Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    u.to_string()
}

/// Percent-encodes everything but unreserved characters (RFC 3986), as
/// `encodeURIComponent` would, for a URL fragment or path segment.
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_encode_uri_component() {
        assert_eq!(encode_component("a-b_c.d~e"), "a-b_c.d~e");
        assert_eq!(encode_component("a b/c#é"), "a%20b%2Fc%23%C3%A9");
    }
}
