//! Which display a launched program gets (`debug_launch`'s `display`):
//! the daemon's own, or a private virtual one (`strobe_ui::virtual_display`)
//! that lives and dies with the session.
//!
//! Left unsaid, the daemon's display is inherited; when there is none and
//! the program is a GUI program (a native image linking a GUI toolkit, or
//! a Python script importing one), a virtual display is chosen and the
//! launch's reply says so.
//!
//! Each virtual display records the processes it owns under
//! `STROBE_HOME/displays/` (the session has no id yet when its display
//! starts); a daemon killed before it could stop them has them ended by the
//! next daemon of the home ([`reap_left_over`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use strobe_core::StrobeHome;
use strobe_ui::virtual_display::{REMOVED_ENV, VirtualDisplay};

use crate::error::SessionError;
use crate::language::Program;

/// `debug_launch`'s `display`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisplayChoice {
    /// The daemon's display (`DISPLAY` as the program inherits it).
    Inherit,
    /// A private Xvfb with its own D-Bus and AT-SPI buses.
    Virtual,
}

/// The libraries whose presence marks a native program as a GUI program.
const GUI_LIBRARIES: [&str; 9] = [
    "libgtk-",
    "libgdk-",
    "libQt",
    "libX11.",
    "libxcb.",
    "libwebkit",
    "libSDL2",
    "libglfw",
    "libwx_",
];

/// What a Python script imports when it opens windows.
const GUI_IMPORTS: [&str; 7] = [
    "import gi",
    "from gi",
    "PyQt",
    "PySide",
    "tkinter",
    "import wx",
    "import pygame",
];

/// Whether `program` opens windows, judged without running it: a native
/// image's direct dependencies, or the script a Python interpreter runs.
pub(super) fn is_gui_program(program: &Program) -> bool {
    match program.language {
        strobe_symbols::Language::Python => program
            .args
            .first()
            .and_then(|script| std::fs::read_to_string(script).ok())
            .is_some_and(|text| GUI_IMPORTS.iter().any(|i| text.contains(i))),
        _ => links_gui_toolkit(&program.command),
    }
}

/// Whether `binary` names a GUI library among the strings its dynamic
/// linker reads (`.dynstr` holds the `DT_NEEDED` names; symbol names such
/// as `gtk_init` never start with `lib`).
fn links_gui_toolkit(binary: &Path) -> bool {
    use object::{Object, ObjectSection};
    let Ok(data) = std::fs::read(binary) else {
        return false;
    };
    let Ok(file) = object::File::parse(&*data) else {
        return false;
    };
    let Some(strings) = file.section_by_name(".dynstr").and_then(|s| s.data().ok()) else {
        return false;
    };
    strings
        .split(|&b| b == 0)
        .any(|name| GUI_LIBRARIES.iter().any(|l| name.starts_with(l.as_bytes())))
}

/// Where `home`'s daemon records the processes it started that must not
/// outlive it: its virtual displays' and its private JACK servers.
fn records_dir(home: &StrobeHome) -> PathBuf {
    home.root().join("displays")
}

/// Records `pid` (a private JACK server) so that the next daemon ends it
/// if this one is killed; `None` (logged) when the record cannot be
/// written, which leaves the process as unrecorded as before.
pub(super) fn record_kept_process(
    home: &StrobeHome,
    name: &str,
    program: &str,
    pid: u32,
) -> Option<strobe_ui::leftovers::KeptProcess> {
    strobe_ui::leftovers::KeptProcess::record(&records_dir(home), name, program, pid)
        .map_err(|e| {
            tracing::warn!("cannot record {program} (pid {pid}) for clean-up after a crash: {e}")
        })
        .ok()
}

/// Ends what the virtual displays of a killed daemon of `home` left
/// running (Xvfb, the session bus, the accessibility helpers), each
/// recognised by its recorded pid and start time; called as a daemon
/// starts.
pub(super) fn reap_left_over(home: &StrobeHome) {
    for r in strobe_ui::leftovers::reap(&records_dir(home)) {
        let ended: Vec<String> = r
            .ended
            .iter()
            .map(|o| format!("{} (pid {})", o.program, o.id.pid))
            .collect();
        tracing::warn!(
            "a previous daemon ended without stopping its virtual display ({}): ended {}",
            r.record.display(),
            if ended.is_empty() {
                "nothing (its processes were gone)".to_string()
            } else {
                ended.join(", ")
            }
        );
    }
}

/// The display decision for a launch: `Some` virtual display started, and
/// the note for the reply when it was chosen rather than asked for.
pub(super) fn prepare(
    home: &StrobeHome,
    choice: Option<DisplayChoice>,
    program: &Program,
    env: &BTreeMap<String, String>,
) -> Result<(Option<VirtualDisplay>, Option<String>), SessionError> {
    let inherited = env
        .get("DISPLAY")
        .cloned()
        .or_else(|| std::env::var("DISPLAY").ok())
        .filter(|d| !d.is_empty());
    let (wanted, note) = match choice {
        Some(DisplayChoice::Virtual) => (true, None),
        Some(DisplayChoice::Inherit) => (false, None),
        None if inherited.is_none() && is_gui_program(program) => (
            true,
            Some(
                "no DISPLAY to inherit and the program is a GUI program: it runs on a private virtual display \
                 (Xvfb, with its own D-Bus and AT-SPI buses) that stops with the session; debug_ui sees it. \
                 Pass display: \"inherit\" to keep it headless"
                    .to_string(),
            ),
        ),
        None => (false, None),
    };
    if !wanted {
        return Ok((None, None));
    }
    let vd = VirtualDisplay::start_recorded(Some(&records_dir(home))).map_err(|e| {
        SessionError::validation(format!("{e}; or launch with display: \"inherit\""))
    })?;
    Ok((Some(vd), note))
}

/// The environment a program on `vd` runs with: the launch's own, the
/// virtual display's, and the removals (a daemon's `GTK_A11Y=none` must not
/// hide the program's tree).
pub(super) fn apply(vd: &VirtualDisplay, env: &mut BTreeMap<String, String>) -> Vec<String> {
    env.extend(vd.env());
    REMOVED_ENV.iter().map(|k| k.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(command: &str, language: strobe_symbols::Language, args: Vec<String>) -> Program {
        Program {
            command: command.into(),
            args,
            language,
            note: None,
        }
    }

    #[test]
    fn a_python_script_importing_gtk_is_a_gui_program_and_a_cli_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let gui = dir.path().join("gui.py");
        std::fs::write(&gui, "import gi\ngi.require_version('Gtk', '3.0')\n").unwrap();
        let cli = dir.path().join("cli.py");
        std::fs::write(&cli, "print('hi')\n").unwrap();
        let py = strobe_symbols::Language::Python;
        assert!(is_gui_program(&program(
            "/usr/bin/python3",
            py,
            vec![gui.display().to_string()]
        )));
        assert!(!is_gui_program(&program(
            "/usr/bin/python3",
            py,
            vec![cli.display().to_string()]
        )));
    }

    #[test]
    fn a_native_program_is_judged_by_what_it_links() {
        let native = strobe_symbols::Language::Native;
        // /bin/sh links libc only.
        assert!(!is_gui_program(&program("/bin/sh", native, vec![])));
        if let Some(gtk) = ["/usr/lib/x86_64-linux-gnu/libgtk-3.so.0"]
            .into_iter()
            .find(|p| Path::new(p).exists())
        {
            // A library that links GDK counts (the check reads DT_NEEDED,
            // whatever the image).
            assert!(links_gui_toolkit(Path::new(gtk)));
        }
    }
}
