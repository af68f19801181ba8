//! Controls that have no text: classical image processing, no model (no
//! permissively licensed widget detector exists in the registries).
//!
//! Edges are where the brightness changes sharply (a Sobel gradient);
//! each connected run of edge pixels is a candidate shape. Four shapes are
//! recognized, tried in this order:
//! - a **knob**: a square-ish shape whose edges ring its centre (most
//!   directions from the centre meet an edge at about the same radius);
//! - a **toggle**: a pill (a rectangle 1.5 to 3 times as wide as high whose
//!   corners are empty: its ends are round) with its thumb at one end;
//! - a **slider**: a long thin track (edges in most columns of a shape at
//!   least 4 times as long as thick) with a thumb at least twice as thick
//!   as the track somewhere along it;
//! - a **button**: a rectangle outline (edges on most of its border, few
//!   inside), as custom-painted buttons are drawn.
//!
//! Shapes that are mostly text (the OCR boxes) are skipped: text is read,
//! not guessed at.

use crate::Rect;

/// Edge strength (|gx| + |gy| of a Sobel filter on 0–255 brightness) above
/// which a pixel is an edge.
const EDGE: i32 = 120;
/// The smallest and largest side of a shape, in pixels.
const MIN_SIDE: usize = 14;
const MAX_SIDE: usize = 400;
/// Directions sampled around a knob's centre.
const RAYS: usize = 72;

/// A shape found: its box, kind and confidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// Where it is.
    pub rect: Rect,
    /// "knob" or "button".
    pub kind: &'static str,
    /// How well it fits its kind, 0–1.
    pub confidence: f32,
}

/// The shapes of a `width` × `height` brightness image, skipping those
/// mostly inside `text` boxes.
pub fn shapes(gray: &[u8], width: usize, height: usize, text: &[Rect]) -> Vec<Shape> {
    let edges = edge_map(gray, width, height);
    let mut seen = vec![false; width * height];
    let mut out = Vec::new();
    let mut stack = Vec::new();
    let mut pixels = Vec::new();
    for start in 0..width * height {
        if !edges[start] || seen[start] {
            continue;
        }
        pixels.clear();
        seen[start] = true;
        stack.push(start);
        while let Some(i) = stack.pop() {
            pixels.push(i);
            let (x, y) = ((i % width) as isize, (i / width) as isize);
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let (nx, ny) = (x + dx, y + dy);
                    if nx < 0 || ny < 0 || nx >= width as isize || ny >= height as isize {
                        continue;
                    }
                    let j = ny as usize * width + nx as usize;
                    if edges[j] && !seen[j] {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        let rect = bounds(&pixels, width);
        if rect.width < MIN_SIDE
            || rect.height < MIN_SIDE
            || rect.width > MAX_SIDE
            || rect.height > MAX_SIDE
            || text.iter().any(|t| overlap(&rect, t) > 0.5 * area(&rect))
        {
            continue;
        }
        if let Some(s) = knob(&pixels, width, rect)
            .or_else(|| toggle(&pixels, width, rect))
            .or_else(|| slider(&pixels, width, rect))
            .or_else(|| button(&pixels, width, rect))
        {
            out.push(s);
        }
    }
    // A toggle's or a slider's thumb is part of it, not a knob of its own.
    let parts: Vec<Rect> = out
        .iter()
        .filter(|s| s.kind == "toggle" || s.kind == "slider")
        .map(|s| s.rect)
        .collect();
    out.retain(|s| {
        !parts
            .iter()
            .any(|p| *p != s.rect && overlap(p, &s.rect) >= 0.9 * area(&s.rect))
    });
    out
}

fn edge_map(gray: &[u8], width: usize, height: usize) -> Vec<bool> {
    let mut edges = vec![false; width * height];
    let g = |x: usize, y: usize| i32::from(gray[y * width + x]);
    for y in 1..height.saturating_sub(1) {
        for x in 1..width.saturating_sub(1) {
            let gx = g(x + 1, y - 1) + 2 * g(x + 1, y) + g(x + 1, y + 1)
                - g(x - 1, y - 1)
                - 2 * g(x - 1, y)
                - g(x - 1, y + 1);
            let gy = g(x - 1, y + 1) + 2 * g(x, y + 1) + g(x + 1, y + 1)
                - g(x - 1, y - 1)
                - 2 * g(x, y - 1)
                - g(x + 1, y - 1);
            edges[y * width + x] = gx.abs() + gy.abs() > EDGE;
        }
    }
    edges
}

fn bounds(pixels: &[usize], width: usize) -> Rect {
    let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
    for &i in pixels {
        let (x, y) = (i % width, i / width);
        x0 = x0.min(x);
        y0 = y0.min(y);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    Rect {
        x: x0,
        y: y0,
        width: x1 - x0 + 1,
        height: y1 - y0 + 1,
    }
}

fn area(r: &Rect) -> f32 {
    (r.width * r.height) as f32
}

fn overlap(a: &Rect, b: &Rect) -> f32 {
    let w = (a.x + a.width)
        .min(b.x + b.width)
        .saturating_sub(a.x.max(b.x));
    let h = (a.y + a.height)
        .min(b.y + b.height)
        .saturating_sub(a.y.max(b.y));
    (w * h) as f32
}

/// A knob: square-ish, and most rays from its centre meet one of its edge
/// pixels between 75% and 110% of its radius.
fn knob(pixels: &[usize], width: usize, r: Rect) -> Option<Shape> {
    let aspect = r.width as f32 / r.height as f32;
    if !(0.8..=1.25).contains(&aspect) {
        return None;
    }
    let (cx, cy) = (
        r.x as f32 + r.width as f32 / 2.0,
        r.y as f32 + r.height as f32 / 2.0,
    );
    let radius = (r.width + r.height) as f32 / 4.0;
    let mut hit = [false; RAYS];
    for &i in pixels {
        let (dx, dy) = ((i % width) as f32 + 0.5 - cx, (i / width) as f32 + 0.5 - cy);
        let d = (dx * dx + dy * dy).sqrt();
        if (0.75 * radius..=1.1 * radius).contains(&d) {
            let a = dy.atan2(dx) + std::f32::consts::PI;
            let k = ((a / (2.0 * std::f32::consts::PI)) * RAYS as f32) as usize % RAYS;
            hit[k] = true;
        }
    }
    let coverage = hit.iter().filter(|&&h| h).count() as f32 / RAYS as f32;
    // A rectangle's corners fall outside the band: a square outline covers
    // well under 0.75 of the rays.
    (coverage >= 0.85).then_some(Shape {
        rect: r,
        kind: "knob",
        confidence: coverage.min(0.99),
    })
}

/// A toggle: a pill (its corners empty, its outline along most of its
/// border); surer when more of its inner edges (the thumb) lie in one half.
fn toggle(pixels: &[usize], width: usize, r: Rect) -> Option<Shape> {
    let aspect = r.width as f32 / r.height as f32;
    if !(1.5..=3.2).contains(&aspect) || r.height > 60 {
        return None;
    }
    // A pill's arc passes 0.29 of its radius (a seventh of its height)
    // from the box's corner; a rounded button's small radius fills it.
    let corner = (r.height / 8).max(2);
    let in_corner = |x: usize, y: usize| {
        let (dx, dy) = (x - r.x, y - r.y);
        (dx < corner || dx >= r.width - corner) && (dy < corner || dy >= r.height - corner)
    };
    if pixels
        .iter()
        .filter(|&&i| in_corner(i % width, i / width))
        .count()
        > 3
    {
        return None;
    }
    // Inside the outline (a margin of a fifth of the height): the thumb.
    let m = r.height / 5;
    let inner: Vec<usize> = pixels
        .iter()
        .map(|&i| (i % width, i / width))
        .filter(|&(x, y)| {
            x > r.x + m && x + m < r.x + r.width && y > r.y + m && y + m < r.y + r.height
        })
        .map(|(x, _)| x)
        .collect();
    let outline = pixels.len() - inner.len();
    if (outline as f32) < 1.2 * (r.width + r.height) as f32 {
        return None; // not a closed outline
    }
    let mid = r.x + r.width / 2;
    let left = inner.iter().filter(|&&x| x < mid).count() as f32;
    let lopsided = if inner.is_empty() {
        0.0
    } else {
        (left / inner.len() as f32 - 0.5).abs() * 2.0
    };
    Some(Shape {
        rect: r,
        kind: "toggle",
        confidence: (0.6 + lopsided * 0.3).min(0.95),
    })
}

/// A slider: long and thin, edges in most positions along it, and a thumb
/// (the edges spread at least twice as thick as the track's usual spread).
fn slider(pixels: &[usize], width: usize, r: Rect) -> Option<Shape> {
    let horizontal = r.width >= 4 * r.height;
    if !horizontal && r.height < 4 * r.width {
        return None;
    }
    let (len, base) = if horizontal {
        (r.width, r.x)
    } else {
        (r.height, r.y)
    };
    // Per position along the track: the least and most cross coordinate.
    let mut spread = vec![(usize::MAX, 0usize); len];
    for &i in pixels {
        let (x, y) = (i % width, i / width);
        let (along, across) = if horizontal { (x, y) } else { (y, x) };
        let s = &mut spread[along - base];
        s.0 = s.0.min(across);
        s.1 = s.1.max(across);
    }
    let thickness: Vec<usize> = spread
        .iter()
        .filter(|s| s.0 != usize::MAX)
        .map(|s| s.1 - s.0 + 1)
        .collect();
    let coverage = thickness.len() as f32 / len as f32;
    if coverage < 0.8 {
        return None;
    }
    let mut sorted = thickness.clone();
    sorted.sort_unstable();
    let track = sorted[sorted.len() / 2].max(1);
    let thumb = *sorted.last()?;
    (thumb >= 2 * track && track <= 12).then_some(Shape {
        rect: r,
        kind: "slider",
        confidence: coverage.min(0.95),
    })
}

/// A button: a rectangle outline, edges along most of its border and few
/// inside.
fn button(pixels: &[usize], width: usize, r: Rect) -> Option<Shape> {
    let on_border = |x: usize, y: usize| {
        x <= r.x + 2 || x + 3 >= r.x + r.width || y <= r.y + 2 || y + 3 >= r.y + r.height
    };
    let border = pixels
        .iter()
        .filter(|&&i| on_border(i % width, i / width))
        .count() as f32;
    let perimeter = 2.0 * (r.width + r.height) as f32;
    let inside = pixels.len() as f32 - border;
    let coverage = (border / (2.0 * perimeter)).min(1.0);
    (coverage >= 0.7 && inside < 0.2 * area(&r)).then_some(Shape {
        rect: r,
        kind: "button",
        confidence: coverage.min(0.95),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canvas(w: usize, h: usize) -> Vec<u8> {
        vec![255; w * h]
    }

    #[test]
    fn a_ring_is_a_knob_and_an_outlined_box_a_button() {
        let (w, h) = (200, 100);
        let mut g = canvas(w, h);
        // A ring of radius 30 (stroke 4) centred at (50, 50).
        for y in 0..h {
            for x in 0..w {
                let d = ((x as f32 - 50.0).powi(2) + (y as f32 - 50.0).powi(2)).sqrt();
                if (28.0..=32.0).contains(&d) {
                    g[y * w + x] = 20;
                }
            }
        }
        // A 60x30 outlined rectangle at (120, 30).
        for y in 30..60 {
            for x in 120..180 {
                if !(32..58).contains(&y) || !(122..178).contains(&x) {
                    g[y * w + x] = 20;
                }
            }
        }
        let found = shapes(&g, w, h, &[]);
        let kinds: Vec<_> = found.iter().map(|s| s.kind).collect();
        assert!(kinds.contains(&"knob"), "{found:?}");
        assert!(kinds.contains(&"button"), "{found:?}");
        assert_eq!(kinds.len(), 2, "{found:?}");
        let k = found.iter().find(|s| s.kind == "knob").unwrap();
        assert!(
            (k.rect.x as i32 - 18).abs() <= 3 && (k.rect.width as i32 - 64).abs() <= 6,
            "{k:?}"
        );
        // The same ring inside a text box is skipped.
        let text = [Rect {
            x: 10,
            y: 10,
            width: 90,
            height: 90,
        }];
        assert!(shapes(&g, w, h, &text).iter().all(|s| s.kind != "knob"));
    }

    #[test]
    fn a_pill_with_its_thumb_is_a_toggle_and_a_track_with_a_thumb_a_slider() {
        let (w, h) = (300, 100);
        let mut g = canvas(w, h);
        let mut ink = |x: usize, y: usize| g[y * w + x] = 30;
        // A pill 60x28 at (20, 20): round ends of radius 14, stroke 2.
        for y in 20..48 {
            for x in 20..80 {
                let (cy, r) = (34.0f32, 14.0f32);
                let cx = (x as f32).clamp(34.0, 66.0);
                let d = ((x as f32 - cx).powi(2) + (y as f32 - cy).powi(2)).sqrt();
                // The outline, and a thumb disc of radius 9 at the right end.
                let thumb = ((x as f32 - 66.0).powi(2) + (y as f32 - cy).powi(2)).sqrt() < 9.0;
                if (r - 2.0..=r).contains(&d) || thumb {
                    ink(x, y);
                }
            }
        }
        // A slider: a 4-pixel track 160 long at y 70, a 20x20 thumb at x 200.
        for y in 68..72 {
            for x in 120..280 {
                ink(x, y);
            }
        }
        for y in 60..80 {
            for x in 195..215 {
                ink(x, y);
            }
        }
        let found = shapes(&g, w, h, &[]);
        let kinds: Vec<_> = found.iter().map(|s| s.kind).collect();
        assert!(kinds.contains(&"toggle"), "{found:?}");
        assert!(kinds.contains(&"slider"), "{found:?}");
        assert_eq!(kinds.len(), 2, "the thumbs are parts, not knobs: {found:?}");
    }
}
