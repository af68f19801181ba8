//! Input through XTest: pointer motion, buttons, the wheel and keys, as
//! if from the display's own devices (x11rb's `xtest`, pure Rust).
//!
//! A character is typed by the key that carries it in the display's
//! keyboard map, with Shift when it is the key's second level. A character
//! no key carries (`é` on a US map, `✓`) is typed through a spare keycode
//! (one with no symbol) mapped to it for the call, and unmapped after:
//! the clients read the new map from the MappingNotify that comes before
//! the key event, so the map is restored only once the call's events are
//! delivered.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use x11rb::connection::{Connection, RequestConnection};
use x11rb::protocol::xproto::{self, ConnectionExt as _, InputFocus};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

use crate::{Button, InputStep, Key, UiError};

const KEY_PRESS: u8 = 2;
const KEY_RELEASE: u8 = 3;
const BUTTON_PRESS: u8 = 4;
const BUTTON_RELEASE: u8 = 5;
const MOTION_NOTIFY: u8 = 6;

/// The X keysym of a named key (`keys::NAMED`).
fn named_keysym(name: &str) -> Option<u32> {
    Some(match name {
        "enter" => 0xff0d,
        "tab" => 0xff09,
        "escape" => 0xff1b,
        "backspace" => 0xff08,
        "delete" => 0xffff,
        "insert" => 0xff63,
        "home" => 0xff50,
        "end" => 0xff57,
        "pageup" => 0xff55,
        "pagedown" => 0xff56,
        "left" => 0xff51,
        "up" => 0xff52,
        "right" => 0xff53,
        "down" => 0xff54,
        "space" => 0x20,
        "menu" => 0xff67,
        "ctrl" => 0xffe3,
        "shift" => 0xffe1,
        "alt" => 0xffe9,
        "super" => 0xffeb,
        f if f.starts_with('f') => {
            let n: u32 = f[1..].parse().ok().filter(|n| (1..=12).contains(n))?;
            0xffbe + n - 1
        }
        _ => return None,
    })
}

/// The keysym of character `c`: Latin-1 as itself, the rest of Unicode
/// in the 0x01000000 range.
fn char_keysym(c: char) -> u32 {
    let cp = c as u32;
    if (0x20..=0x7e).contains(&cp) || (0xa0..=0xff).contains(&cp) {
        cp
    } else {
        0x0100_0000 | cp
    }
}

/// The display's keyboard map: which keycode carries a keysym, at which
/// level, and which keycodes carry nothing.
struct Keymap {
    /// keysym → (keycode, needs Shift).
    by_keysym: HashMap<u32, (u8, bool)>,
    /// Keycodes with no symbol, for characters no key carries.
    spare: Vec<u8>,
    per_keycode: u8,
}

impl Keymap {
    fn read(conn: &RustConnection) -> Result<Keymap, UiError> {
        let setup = conn.setup();
        let (min, max) = (setup.min_keycode, setup.max_keycode);
        let map = conn
            .get_keyboard_mapping(min, max - min + 1)
            .map_err(input_error)?
            .reply()
            .map_err(input_error)?;
        let per = map.keysyms_per_keycode.max(1);
        let mut by_keysym = HashMap::new();
        let mut spare = Vec::new();
        for (i, syms) in map.keysyms.chunks(usize::from(per)).enumerate() {
            let code = min + i as u8;
            if syms.iter().all(|&s| s == 0) {
                spare.push(code);
                continue;
            }
            for (level, &sym) in syms.iter().take(2).enumerate() {
                if sym != 0 {
                    by_keysym.entry(sym).or_insert((code, level == 1));
                }
            }
        }
        // Spare keycodes from the top: the low ones are where a keyboard
        // map grows.
        spare.reverse();
        Ok(Keymap {
            by_keysym,
            spare,
            per_keycode: per,
        })
    }
}

fn input_error(e: impl std::fmt::Display) -> UiError {
    UiError::Input(e.to_string())
}

/// One input call: the connection, the map, and what was remapped.
struct Sender<'a> {
    conn: &'a RustConnection,
    root: u32,
    keymap: Option<Keymap>,
    remapped: Vec<u8>,
}

impl Sender<'_> {
    fn fake(&self, kind: u8, detail: u8, x: i16, y: i16) -> Result<(), UiError> {
        self.conn
            .xtest_fake_input(kind, detail, x11rb::CURRENT_TIME, self.root, x, y, 0)
            .map_err(input_error)?;
        Ok(())
    }

    fn keymap(&mut self) -> Result<&mut Keymap, UiError> {
        if self.keymap.is_none() {
            self.keymap = Some(Keymap::read(self.conn)?);
        }
        Ok(self.keymap.as_mut().expect("just read"))
    }

    /// The keycode for `key`, and whether Shift must be held for it.
    fn keycode(&mut self, key: &Key) -> Result<(u8, bool), UiError> {
        let sym = match key {
            Key::Named(n) => named_keysym(n)
                .ok_or_else(|| UiError::Input(format!("no X keysym for key {n:?}")))?,
            Key::Char(c) => char_keysym(*c),
        };
        if let Some(&found) = self.keymap()?.by_keysym.get(&sym) {
            return Ok(found);
        }
        let map = self.keymap()?;
        let per = map.per_keycode;
        let code = map.spare.pop().ok_or_else(|| {
            UiError::Input(format!(
                "no spare keycode left to type {key:?}: the keyboard map is full"
            ))
        })?;
        map.by_keysym.insert(sym, (code, false));
        let mut syms = vec![0u32; usize::from(per)];
        syms[0] = sym;
        if per > 1 {
            syms[1] = sym;
        }
        self.conn
            .change_keyboard_mapping(1, code, per, &syms)
            .map_err(input_error)?;
        // The server applies the new map before the key event that follows;
        // clients see the MappingNotify first.
        self.sync()?;
        std::thread::sleep(Duration::from_millis(15));
        self.remapped.push(code);
        Ok((code, false))
    }

    fn key(&mut self, key: &Key, down: bool) -> Result<(), UiError> {
        let (code, shift) = self.keycode(key)?;
        let shift_code = if shift {
            Some(self.keycode(&Key::Named("shift"))?.0)
        } else {
            None
        };
        if down {
            if let Some(s) = shift_code {
                self.fake(KEY_PRESS, s, 0, 0)?;
            }
            self.fake(KEY_PRESS, code, 0, 0)
        } else {
            self.fake(KEY_RELEASE, code, 0, 0)?;
            if let Some(s) = shift_code {
                self.fake(KEY_RELEASE, s, 0, 0)?;
            }
            Ok(())
        }
    }

    fn sync(&self) -> Result<(), UiError> {
        self.conn
            .get_input_focus()
            .map_err(input_error)?
            .reply()
            .map_err(input_error)?;
        Ok(())
    }

    /// Gives the keycodes mapped for this call their empty map back.
    fn restore(&mut self) -> Result<(), UiError> {
        if self.remapped.is_empty() {
            return Ok(());
        }
        // Let the clients translate the keys they were sent first.
        std::thread::sleep(Duration::from_millis(50));
        let per = self.keymap.as_ref().map_or(1, |m| m.per_keycode);
        for code in std::mem::take(&mut self.remapped) {
            self.conn
                .change_keyboard_mapping(1, code, per, &vec![0u32; usize::from(per)])
                .map_err(input_error)?;
        }
        self.sync()
    }
}

fn button_number(b: Button) -> u8 {
    match b {
        Button::Left => 1,
        Button::Middle => 2,
        Button::Right => 3,
        Button::WheelUp => 4,
        Button::WheelDown => 5,
        Button::WheelLeft => 6,
        Button::WheelRight => 7,
    }
}

/// Sends `steps` to `display` through XTest.
pub(super) fn send(display: &str, auth: Option<&Path>, steps: &[InputStep]) -> Result<(), UiError> {
    let (conn, screen) = super::x11::connect(display, auth)?;
    if conn
        .extension_information(x11rb::protocol::xtest::X11_EXTENSION_NAME)
        .map_err(input_error)?
        .is_none()
    {
        return Err(UiError::Input(format!(
            "display {display} has no XTEST extension (Xvfb and Xorg have it unless started with -extension XTEST)"
        )));
    }
    let root = conn.setup().roots[screen].root;
    let mut s = Sender {
        conn: &conn,
        root,
        keymap: None,
        remapped: Vec::new(),
    };
    let result = run(&mut s, steps);
    let restored = s.restore();
    result.and(restored)
}

fn run(s: &mut Sender<'_>, steps: &[InputStep]) -> Result<(), UiError> {
    for step in steps {
        match step {
            InputStep::MoveTo { x, y } => {
                let clamp = |v: i32| v.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16;
                s.fake(MOTION_NOTIFY, 0, clamp(*x), clamp(*y))?;
            }
            InputStep::Press(b) => s.fake(BUTTON_PRESS, button_number(*b), 0, 0)?,
            InputStep::Release(b) => s.fake(BUTTON_RELEASE, button_number(*b), 0, 0)?,
            InputStep::KeyDown(k) => s.key(k, true)?,
            InputStep::KeyUp(k) => s.key(k, false)?,
            InputStep::Pause(d) => {
                s.conn.flush().map_err(input_error)?;
                std::thread::sleep(*d);
            }
            InputStep::FocusWindow(w) => {
                s.conn
                    .set_input_focus(
                        InputFocus::PARENT,
                        *w as xproto::Window,
                        x11rb::CURRENT_TIME,
                    )
                    .map_err(input_error)?;
                // Focus arrives before the keys that follow it.
                s.sync()?;
            }
        }
    }
    // Every event reached the server before the call returns: what is
    // observed next is the program's reaction.
    s.sync()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_x_keysyms() {
        assert_eq!(named_keysym("enter"), Some(0xff0d));
        assert_eq!(named_keysym("f1"), Some(0xffbe));
        assert_eq!(named_keysym("f12"), Some(0xffc9));
        assert_eq!(named_keysym("f13"), None);
        assert_eq!(char_keysym('a'), 0x61);
        assert_eq!(char_keysym('é'), 0xe9);
        assert_eq!(char_keysym('✓'), 0x0100_2713);
        // Every named key the motor layer accepts has a keysym here.
        for (name, _) in crate::motor::keys::NAMED {
            assert!(named_keysym(name).is_some(), "{name}");
        }
    }
}
