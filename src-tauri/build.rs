//! Tauri's build step: reads tauri.conf.json, embeds app-shell/ and the icons.
fn main() {
    tauri_build::build()
}
