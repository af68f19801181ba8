//! The X11 half: which windows a process shows (`_NET_WM_PID`), where they
//! are, and their pixels (`GetImage` of the root, cropped to the window:
//! it works with or without a window manager, and for a window partly
//! off screen, where a window's own `GetImage` fails with `BadMatch`).
//!
//! Requests are pipelined: every window's attributes, pid and geometry
//! are asked for before the first reply is read.

use std::path::Path;
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, ImageFormat, ImageOrder, MapState};

use x11rb::reexports::x11rb_protocol::parse_display::parse_display;
use x11rb::rust_connection::{DefaultStream, RustConnection};

use crate::{Bounds, Capture, UiError, Window};

fn unreachable(display: &str) -> impl Fn(String) -> UiError + '_ {
    move |why| UiError::Unreachable {
        what: format!("display {display}"),
        why,
    }
}

/// Connects to `display`, with the cookie of authority file `auth` when
/// given (a virtual display's own), else as the daemon's environment says.
pub(super) fn connect(
    display: &str,
    auth: Option<&Path>,
) -> Result<(RustConnection, usize), UiError> {
    // x11rb adds 6000 to the display number in 16 bits (a TCP port) and
    // overflows past 59535: refuse such a name rather than panic.
    let number = display
        .rsplit_once(':')
        .and_then(|(_, n)| n.split('.').next())
        .and_then(|n| n.parse::<u32>().ok());
    if number.is_some_and(|n| n > 59_535) {
        return Err(unreachable(display)(
            "the display number is out of range (at most 59535)".into(),
        ));
    }
    let Some(auth) = auth else {
        return x11rb::connect(Some(display)).map_err(|e| unreachable(display)(e.to_string()));
    };
    let err = unreachable(display);
    let data = std::fs::read(auth).map_err(|e| err(format!("{}: {e}", auth.display())))?;
    let parsed = parse_display(Some(display)).map_err(|e| err(e.to_string()))?;
    let cookie = crate::xauth::cookie_for(&data, &parsed.display.to_string())
        .ok_or_else(|| err(format!("{} holds no cookie for it", auth.display())))?;
    let mut last = String::from("no address to connect to");
    for address in parsed.connect_instruction() {
        match DefaultStream::connect(&address) {
            Ok((stream, _)) => {
                return RustConnection::connect_to_stream_with_auth_info(
                    stream,
                    parsed.screen.into(),
                    crate::xauth::MIT_COOKIE.to_vec(),
                    cookie,
                )
                .map(|c| (c, usize::from(parsed.screen)))
                .map_err(|e| err(e.to_string()));
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(err(last))
}

fn atom(conn: &RustConnection, display: &str, name: &str) -> Result<u32, UiError> {
    let err = unreachable(display);
    Ok(conn
        .intern_atom(false, name.as_bytes())
        .map_err(|e| err(e.to_string()))?
        .reply()
        .map_err(|e| err(e.to_string()))?
        .atom)
}

/// The viewable top-level windows of `pids` on `display`, biggest first.
/// A window manager's frames are looked through (the client window is a
/// child of the frame).
pub(super) fn windows(
    display: &str,
    auth: Option<&Path>,
    pids: &[u32],
) -> Result<Vec<Window>, UiError> {
    let err = unreachable(display);
    let e = |x: &dyn std::fmt::Display| err(x.to_string());
    let (conn, screen) = connect(display, auth)?;
    let root = conn.setup().roots[screen].root;
    let pid_atom = atom(&conn, display, "_NET_WM_PID")?;
    let name_atom = atom(&conn, display, "_NET_WM_NAME")?;
    let utf8 = atom(&conn, display, "UTF8_STRING")?;

    let top = conn
        .query_tree(root)
        .map_err(|x| e(&x))?
        .reply()
        .map_err(|x| e(&x))?
        .children;
    // One level down too: a window manager reparents clients into frames.
    let mut candidates: Vec<(u32, u32)> = Vec::new(); // (window, its top-level)
    let cookies: Vec<_> = top.iter().map(|&w| (w, conn.query_tree(w))).collect();
    for (w, cookie) in cookies {
        candidates.push((w, w));
        if let Ok(reply) = cookie.map_err(|x| e(&x))?.reply() {
            candidates.extend(reply.children.into_iter().map(|c| (c, w)));
        }
    }
    let asked: Vec<_> = candidates
        .iter()
        .map(|&(w, _)| {
            (
                conn.get_property(false, w, pid_atom, AtomEnum::CARDINAL, 0, 1),
                conn.get_window_attributes(w),
            )
        })
        .collect();
    let mut found = Vec::new();
    for (&(w, top_level), (pid, attrs)) in candidates.iter().zip(asked) {
        let pid = pid
            .map_err(|x| e(&x))?
            .reply()
            .ok()
            .and_then(|r| r.value32().and_then(|mut v| v.next()));
        let viewable = attrs
            .map_err(|x| e(&x))?
            .reply()
            .is_ok_and(|a| a.map_state == MapState::VIEWABLE);
        if let Some(pid) = pid.filter(|p| viewable && pids.contains(p)) {
            found.push((w, top_level, pid));
        }
    }
    let mut out = Vec::new();
    for (w, top_level, pid) in found {
        // The frame's geometry when there is one: that is what is on screen.
        let geometry = conn.get_geometry(top_level).map_err(|x| e(&x))?.reply();
        let origin = conn
            .translate_coordinates(top_level, root, 0, 0)
            .map_err(|x| e(&x))?
            .reply();
        let (Ok(g), Ok(o)) = (geometry, origin) else {
            continue; // gone since it was listed
        };
        out.push(Window {
            handle: u64::from(w),
            pid,
            title: title(&conn, w, name_atom, utf8),
            bounds: Bounds {
                x: i32::from(o.dst_x),
                y: i32::from(o.dst_y),
                width: u32::from(g.width),
                height: u32::from(g.height),
            },
        });
    }
    out.sort_by_key(|w| std::cmp::Reverse(u64::from(w.bounds.width) * u64::from(w.bounds.height)));
    Ok(out)
}

fn title(conn: &RustConnection, w: u32, name_atom: u32, utf8: u32) -> String {
    let read = |prop: u32, ty: u32| {
        conn.get_property(false, w, prop, ty, 0, 1024)
            .ok()?
            .reply()
            .ok()
            .filter(|r| !r.value.is_empty())
            .map(|r| String::from_utf8_lossy(&r.value).into_owned())
    };
    read(name_atom, utf8)
        .or_else(|| read(AtomEnum::WM_NAME.into(), AtomEnum::STRING.into()))
        .unwrap_or_default()
}

/// The value of the root window's string property `name` (at-spi's bus
/// launcher publishes the accessibility bus as `AT_SPI_BUS`).
pub(super) fn root_property(display: &str, auth: Option<&Path>, name: &str) -> Option<String> {
    let (conn, screen) = connect(display, auth).ok()?;
    let root = conn.setup().roots[screen].root;
    let prop = atom(&conn, display, name).ok()?;
    let reply = conn
        .get_property(false, root, prop, AtomEnum::ANY, 0, 4096)
        .ok()?
        .reply()
        .ok()?;
    (!reply.value.is_empty()).then(|| String::from_utf8_lossy(&reply.value).into_owned())
}

/// The pixels of `window` as shown now: the root window's image cropped
/// to the window and the screen.
pub(super) fn capture(
    display: &str,
    auth: Option<&Path>,
    window: &Window,
) -> Result<Capture, UiError> {
    let (conn, screen_no) = connect(display, auth)?;
    let setup = conn.setup();
    let screen = &setup.roots[screen_no];
    let b = window.bounds;
    let x0 = b.x.max(0);
    let y0 = b.y.max(0);
    let x1 = (b.x + b.width as i32).min(i32::from(screen.width_in_pixels));
    let y1 = (b.y + b.height as i32).min(i32::from(screen.height_in_pixels));
    if x1 <= x0 || y1 <= y0 {
        return Err(UiError::Capture(format!(
            "window {:#x} is off screen ({}x{}+{}+{} on a {}x{} screen)",
            window.handle,
            b.width,
            b.height,
            b.x,
            b.y,
            screen.width_in_pixels,
            screen.height_in_pixels
        )));
    }
    let (w, h) = ((x1 - x0) as u16, (y1 - y0) as u16);
    let image = conn
        .get_image(
            ImageFormat::Z_PIXMAP,
            screen.root,
            x0 as i16,
            y0 as i16,
            w,
            h,
            !0,
        )
        .map_err(|e| UiError::Capture(e.to_string()))?
        .reply()
        .map_err(|e| UiError::Capture(e.to_string()))?;
    let visual = screen
        .allowed_depths
        .iter()
        .flat_map(|d| d.visuals.iter())
        .find(|v| v.visual_id == image.visual)
        .ok_or_else(|| UiError::Capture(format!("unknown visual {:#x}", image.visual)))?;
    let format = setup
        .pixmap_formats
        .iter()
        .find(|f| f.depth == image.depth)
        .ok_or_else(|| UiError::Capture(format!("no pixmap format for depth {}", image.depth)))?;
    to_rgba(
        &image.data,
        u32::from(w),
        u32::from(h),
        Layout {
            bits_per_pixel: format.bits_per_pixel,
            scanline_pad: format.scanline_pad,
            msb_first: setup.image_byte_order == ImageOrder::MSB_FIRST,
            masks: [visual.red_mask, visual.green_mask, visual.blue_mask],
        },
    )
}

/// How a Z-pixmap image's bytes hold its pixels.
#[derive(Debug, Clone, Copy)]
struct Layout {
    bits_per_pixel: u8,
    scanline_pad: u8,
    msb_first: bool,
    masks: [u32; 3],
}

fn to_rgba(data: &[u8], width: u32, height: u32, l: Layout) -> Result<Capture, UiError> {
    let bytes = match l.bits_per_pixel {
        32 => 4,
        24 => 3,
        16 => 2,
        other => {
            return Err(UiError::Capture(format!(
                "{other} bits per pixel is not supported (24, 32 and 16 are)"
            )));
        }
    };
    let pad = u32::from(l.scanline_pad.max(8)) / 8;
    let stride = (width * bytes).div_ceil(pad) * pad;
    if data.len() < (stride * height) as usize {
        return Err(UiError::Capture(format!(
            "the image is {} bytes, {}x{} needs {}",
            data.len(),
            width,
            height,
            stride * height
        )));
    }
    let channel = |pixel: u32, mask: u32| -> u8 {
        if mask == 0 {
            return 0;
        }
        let v = (pixel & mask) >> mask.trailing_zeros();
        let max = mask >> mask.trailing_zeros();
        ((u64::from(v) * 255) / u64::from(max)) as u8
    };
    let mut rgba = Vec::with_capacity((width * height * 4) as usize);
    for row in 0..height {
        let line = &data[(row * stride) as usize..];
        for col in 0..width {
            let p = &line[(col * bytes) as usize..(col * bytes + bytes) as usize];
            let pixel = p.iter().enumerate().fold(0u32, |acc, (i, &b)| {
                let shift = if l.msb_first {
                    (bytes - 1 - i as u32) * 8
                } else {
                    i as u32 * 8
                };
                acc | (u32::from(b) << shift)
            });
            rgba.extend_from_slice(&[
                channel(pixel, l.masks[0]),
                channel(pixel, l.masks[1]),
                channel(pixel, l.masks[2]),
                255,
            ]);
        }
    }
    Ok(Capture {
        width,
        height,
        rgba,
    })
}

/// Whether `display` accepts a connection.
pub(super) fn reachable(display: &str, auth: Option<&Path>) -> bool {
    connect(display, auth).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_display_number_is_refused_not_a_panic() {
        assert!(!reachable(":65000", None));
        let e = windows(":65000", None, &[1]).unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
    }

    #[test]
    fn bgrx_pixels_become_rgba() {
        // Two pixels of a 24-bit visual in 32 bits, least significant byte
        // first: magenta (B=ff G=00 R=ff) and a dark green.
        let data = [0xff, 0x00, 0xff, 0x00, 0x10, 0x80, 0x00, 0x00];
        let l = Layout {
            bits_per_pixel: 32,
            scanline_pad: 32,
            msb_first: false,
            masks: [0xff0000, 0x00ff00, 0x0000ff],
        };
        let c = to_rgba(&data, 2, 1, l).unwrap();
        assert_eq!(c.pixel(0, 0), Some([255, 0, 255, 255]));
        assert_eq!(c.pixel(1, 0), Some([0, 128, 16, 255]));
        assert!(to_rgba(&data[..4], 2, 1, l).is_err());
    }

    #[test]
    fn sixteen_bit_pixels_scale_up() {
        // RGB565 white and pure red, rows padded to 32 bits.
        let data = [0xff, 0xff, 0x00, 0xf8];
        let l = Layout {
            bits_per_pixel: 16,
            scanline_pad: 32,
            msb_first: false,
            masks: [0xf800, 0x07e0, 0x001f],
        };
        let c = to_rgba(&data, 2, 1, l).unwrap();
        assert_eq!(c.pixel(0, 0), Some([255, 255, 255, 255]));
        assert_eq!(c.pixel(1, 0), Some([255, 0, 0, 255]));
    }
}
