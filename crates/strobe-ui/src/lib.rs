//! The UI backend extension point: how Strobe sees a program's GUI.
//!
//! `debug_ui` (the accessibility tree, screenshots) and `debug_ui_action`
//! (the motor layer's native actions) reach a platform only through
//! [`UiBackend`]. One file per platform lives under `backends/`, registered
//! by one line in [`backends::all`]; the first backend whose
//! [`UiBackend::available`] accepts the session's display serves it.
//!
//! `backends/atspi/` is the Linux one (AT-SPI over D-Bus for the tree, X11
//! for windows and capture); a macOS backend (AXUIElement, CoreGraphics)
//! would be `backends/macos.rs` behind `cfg(target_os = "macos")`, written
//! only once it can be tested. Stable ids (`ids.rs`), the compact rendering
//! (`render.rs`), vision (`vision/`: the `VisionModel` extension point, the
//! sidecar, the merge into the tree) and the private display of a session
//! (`virtual_display.rs`, `xauth.rs`, and `leftovers.rs`, which ends what
//! a killed daemon's displays left running) are platform-independent and
//! sit above this trait.
//!
//! `motor/` is the platform-independent half of `debug_ui_action`: intents
//! parsed and checked, input plans (clicks, drags, typing, keys), and the
//! strategies it learns for widgets with no native route.
//!
//! Invariants: this crate links no GUI toolkit. A backend's protocol
//! clients (zbus, x11rb: pure Rust, no C library) are used only in its own
//! folder, so the crate builds and its unit tests run without a display. A
//! backend sends input only when asked ([`UiBackend::input`]); the policy
//! (the session's own display, or the user allowed it) is the caller's.

pub mod backends;
pub mod ids;
pub mod leftovers;
pub mod motor;
pub mod render;
pub mod virtual_display;
pub mod vision;
pub mod xauth;

use std::fmt;

/// A rectangle in screen pixels (the display's root coordinates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bounds {
    /// Left edge.
    pub x: i32,
    /// Top edge.
    pub y: i32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

/// Which display a session's windows are on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Display {
    /// The X display name (`:7`), as `DISPLAY` holds it; `None` where the
    /// platform has one screen (macOS).
    pub name: Option<String>,
    /// The accessibility bus address, when the program's environment names
    /// it (`AT_SPI_BUS_ADDRESS`); otherwise the backend asks the session
    /// bus, or the display, for it.
    pub accessibility_bus: Option<String>,
    /// The D-Bus session bus the program was given
    /// (`DBUS_SESSION_BUS_ADDRESS`), which hands out the accessibility bus.
    pub session_bus: Option<String>,
    /// The X authority file the program was given (`XAUTHORITY`); `None`:
    /// the daemon's own.
    pub xauthority: Option<String>,
}

impl Display {
    /// The display a program with environment `env` (pairs as `KEY=value`
    /// would split) is on. `None` when it names no display.
    pub fn from_env<'a>(env: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<Display> {
        let mut d = Display {
            name: None,
            accessibility_bus: None,
            session_bus: None,
            xauthority: None,
        };
        for (k, v) in env {
            let v = Some(v.to_string()).filter(|v| !v.is_empty());
            match k {
                "DISPLAY" => d.name = v,
                "AT_SPI_BUS_ADDRESS" => d.accessibility_bus = v,
                "DBUS_SESSION_BUS_ADDRESS" => d.session_bus = v,
                "XAUTHORITY" => d.xauthority = v,
                _ => {}
            }
        }
        d.name.is_some().then_some(d)
    }

    /// The display's name for messages (`:7`, or "the screen").
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or("the screen")
    }
}

/// A top-level window of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The platform's handle (an X window id).
    pub handle: u64,
    /// The process that owns it.
    pub pid: u32,
    /// Its title.
    pub title: String,
    /// Where it is.
    pub bounds: Bounds,
}

/// One node of a process's accessibility tree, as the platform reports it.
/// Ids are not assigned here: stable ids are derived above the backend from
/// role, name and path, the same on every platform.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UiNode {
    /// The platform's role name ("push button", "slider").
    pub role: String,
    /// The accessible name.
    pub name: String,
    /// Where it is on screen, if it is showing.
    pub bounds: Option<Bounds>,
    /// The actions it offers ("press", "activate").
    pub actions: Vec<String>,
    /// Its current value (sliders, spin buttons) or text (entries).
    pub value: Option<String>,
    /// States that matter to an agent ("focused", "checked", "disabled",
    /// "showing").
    pub states: Vec<String>,
    /// Its children, in the platform's order.
    pub children: Vec<UiNode>,
    /// What vision said of it: confirmed it, or found it (a node the
    /// accessibility tree does not have).
    pub vision: Option<VisionMark>,
    /// The range a value may take (nodes with a value interface).
    pub range: Option<ValueRange>,
    /// The backend's handle on it, for native actions and re-reads; `None`
    /// for a node only vision found.
    pub handle: Option<NodeHandle>,
}

/// The range of a node's value.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ValueRange {
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
    /// The smallest step (0: any).
    pub step: f64,
}

/// A backend's handle on one node: opaque above the backend (AT-SPI: the
/// application's bus name and the node's object path).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeHandle(pub String);

/// What a node can natively be asked to do, through its accessibility
/// interfaces rather than input.
#[derive(Debug, Clone, PartialEq)]
pub enum NativeAction {
    /// Its action of this name ("click", "press", "activate", "toggle").
    Do(String),
    /// Set its value (the value interface).
    SetValue(f64),
    /// Replace its whole text (editable text).
    SetText(String),
    /// Insert text at the caret (editable text).
    InsertText(String),
    /// Select its child at this index (the selection interface).
    SelectChild(i32),
    /// Give it keyboard focus.
    Focus,
}

/// A mouse button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Button {
    /// The primary button.
    Left,
    /// The middle button.
    Middle,
    /// The secondary button.
    Right,
    /// The wheel turned up (away from the user).
    WheelUp,
    /// The wheel turned down.
    WheelDown,
    /// The wheel pushed left.
    WheelLeft,
    /// The wheel pushed right.
    WheelRight,
}

/// A key, by platform-independent name or as the character it types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// A named key: one of [`motor::keys::NAMED`] ("enter", "ctrl", "f5").
    Named(&'static str),
    /// The key that types this character (shifted if need be).
    Char(char),
}

/// One step of synthesized input.
#[derive(Debug, Clone, PartialEq)]
pub enum InputStep {
    /// Move the pointer to this point of the display.
    MoveTo {
        /// Display x.
        x: i32,
        /// Display y.
        y: i32,
    },
    /// Press a button.
    Press(Button),
    /// Release a button.
    Release(Button),
    /// Press a key down.
    KeyDown(Key),
    /// Let a key up.
    KeyUp(Key),
    /// Wait before the next step (a toolkit needs time between a press and
    /// the motion of a drag, and between the clicks of a double click).
    Pause(std::time::Duration),
    /// Give keyboard focus to this window (keys go where focus is).
    FocusWindow(u64),
}

/// A node's mark from vision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VisionMark {
    /// Found by vision alone (`⚡vision`), rather than an accessibility
    /// node vision confirmed (`↻merged`).
    pub new: bool,
    /// The model's confidence, 0–1.
    pub confidence: f32,
}

/// A captured image of a window: tightly packed 8-bit RGBA rows.
#[derive(Clone, PartialEq, Eq)]
pub struct Capture {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height * 4` bytes.
    pub rgba: Vec<u8>,
}

impl Capture {
    /// The image as PNG (8-bit RGBA).
    pub fn png(&self) -> Result<Vec<u8>, UiError> {
        let mut out = Vec::with_capacity(self.rgba.len() / 4);
        let mut enc = png::Encoder::new(&mut out, self.width, self.height);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        // Fast compression: a screenshot is encoded on every call, and
        // the agent pays in latency, not bytes on disk.
        enc.set_compression(png::Compression::Fast);
        let encode = |e: png::EncodingError| UiError::Capture(format!("PNG encoding failed: {e}"));
        let mut w = enc.write_header().map_err(encode)?;
        w.write_image_data(&self.rgba).map_err(encode)?;
        w.finish().map_err(encode)?;
        Ok(out)
    }

    /// The part of the image inside `area` (in the image's pixels),
    /// clipped to the image; `None` when they do not overlap.
    pub fn crop(&self, area: Bounds) -> Option<Capture> {
        let x0 = area.x.max(0) as u32;
        let y0 = area.y.max(0) as u32;
        let x1 = ((area.x + area.width as i32).max(0) as u32).min(self.width);
        let y1 = ((area.y + area.height as i32).max(0) as u32).min(self.height);
        if x1 <= x0 || y1 <= y0 {
            return None;
        }
        let mut rgba = Vec::with_capacity(((x1 - x0) * (y1 - y0) * 4) as usize);
        for y in y0..y1 {
            let start = ((y * self.width + x0) * 4) as usize;
            rgba.extend_from_slice(&self.rgba[start..start + ((x1 - x0) * 4) as usize]);
        }
        Some(Capture {
            width: x1 - x0,
            height: y1 - y0,
            rgba,
        })
    }

    /// The RGBA pixel at (`x`, `y`), if inside.
    pub fn pixel(&self, x: u32, y: u32) -> Option<[u8; 4]> {
        (x < self.width && y < self.height).then(|| {
            let i = ((y * self.width + x) * 4) as usize;
            [
                self.rgba[i],
                self.rgba[i + 1],
                self.rgba[i + 2],
                self.rgba[i + 3],
            ]
        })
    }
}

impl fmt::Debug for Capture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Capture({}x{})", self.width, self.height)
    }
}

/// Why a backend could not answer; each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    /// The process has no window on the display.
    #[error(
        "pid {pid} has no window on display {display}: is it a GUI program? Launch it with display \"virtual\" if it needs one"
    )]
    NoWindow {
        /// The process asked about.
        pid: u32,
        /// The display looked at.
        display: String,
    },
    /// The process is not on the accessibility bus (`NO_AT_BRIDGE=1`, or a
    /// toolkit without accessibility): its tree cannot be read, a capture
    /// can still be taken.
    #[error("pid {pid} is not on the accessibility bus: {why}")]
    NotAccessible {
        /// The process asked about.
        pid: u32,
        /// What was found instead.
        why: String,
    },
    /// The application did not answer in time (busy, or stopped at a
    /// breakpoint: its main loop is what answers accessibility calls).
    #[error(
        "pid {pid} did not answer the accessibility bus within {seconds} s: is it busy or paused at a breakpoint? Resume it (debug_breakpoint action \"continue\") and ask again"
    )]
    Timeout {
        /// The process asked about.
        pid: u32,
        /// How long Strobe waited.
        seconds: u64,
    },
    /// The image could not be taken or encoded.
    #[error("cannot capture the window: {0}")]
    Capture(String),
    /// Input could not be sent.
    #[error("cannot send input: {0}")]
    Input(String),
    /// A virtual display could not be started.
    #[error("cannot start a virtual display: {0}")]
    VirtualDisplay(String),
    /// The display or the bus could not be reached.
    #[error("cannot reach {what}: {why}")]
    Unreachable {
        /// "display :7", "the AT-SPI bus".
        what: String,
        /// The underlying failure.
        why: String,
    },
}

/// A platform's way to see (and natively act on) a program's GUI.
pub trait UiBackend: Send + Sync {
    /// Short name ("atspi").
    fn name(&self) -> &'static str;
    /// Whether this backend can serve `display` here (the right platform,
    /// the display reachable).
    fn available(&self, display: &Display) -> bool;
    /// The top-level windows of `pids` (every process of a session).
    fn windows(&self, display: &Display, pids: &[u32]) -> Result<Vec<Window>, UiError>;
    /// The accessibility tree of `pid`'s application, one root per window.
    /// Hidden nodes (not "showing") are listed, but their subtrees are read
    /// only when `hidden` is set: a closed menu's items cost calls and
    /// say nothing.
    fn tree(&self, display: &Display, pid: u32, hidden: bool) -> Result<Vec<UiNode>, UiError>;
    /// An image of `window` as shown now.
    fn capture(&self, display: &Display, window: &Window) -> Result<Capture, UiError>;
    /// The node `node` as it is now, with its subtree (hidden children's
    /// subtrees too when `hidden`): a re-read to verify an action.
    fn read(&self, display: &Display, node: &NodeHandle, hidden: bool) -> Result<UiNode, UiError>;
    /// Asks `node` to do `action` natively. `Ok(false)`: the node refused
    /// (no such action, a read-only value).
    fn act(
        &self,
        display: &Display,
        node: &NodeHandle,
        action: &NativeAction,
    ) -> Result<bool, UiError>;
    /// Sends `steps` as input to `display`. Only the motor layer calls it,
    /// once it has checked that the display is the session's own or that
    /// the user allowed input on it.
    fn input(&self, display: &Display, steps: &[InputStep]) -> Result<(), UiError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crop_is_clipped_to_the_image() {
        let c = Capture {
            width: 3,
            height: 2,
            rgba: (0..24).collect(),
        };
        let b = |x, y, width, height| Bounds {
            x,
            y,
            width,
            height,
        };
        let part = c.crop(b(1, 1, 5, 5)).unwrap();
        assert_eq!((part.width, part.height), (2, 1));
        assert_eq!(part.pixel(0, 0), c.pixel(1, 1));
        assert!(c.crop(b(3, 0, 2, 2)).is_none());
        assert!(c.crop(b(-4, 0, 2, 2)).is_none());
    }
}
