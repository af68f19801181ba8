//! Text detection: the PP-OCR detection model (a differentiable-binarization
//! network) gives every pixel a probability of being text; regions above a
//! threshold become boxes, kept when their mean probability is high enough,
//! and grown back by the margin the network was trained to shrink them by.
//!
//! A GUI's text is horizontal, so boxes are axis-aligned rectangles; the
//! image runs at its own resolution, padded (not scaled) to a multiple of
//! 32 as the network needs, so small UI fonts keep every pixel.

use ndarray::Array4;
use ort::session::Session;

use crate::image::Rgb;
use crate::{Error, Rect};

/// A pixel is text above this probability.
const PIXEL_THRESHOLD: f32 = 0.3;
/// A region is kept when its mean probability reaches this.
const BOX_THRESHOLD: f32 = 0.5;
/// How much a region is grown back: the network was trained on text
/// shrunk by this ratio of area to perimeter.
const UNCLIP_RATIO: f32 = 1.6;
/// Regions smaller than this (either side, in pixels) are noise.
const MIN_SIDE: usize = 3;
/// The most regions one image yields.
const MAX_REGIONS: usize = 1_000;

/// The most pixels the network is given: a bigger window is scaled down to
/// this (the network's cost grows with its input; 640x420 took 0.24 s
/// here, 800x600 at full size 0.4–0.54 s). Recognition still reads the
/// full-size pixels.
const MAX_PIXELS: usize = 200_000;

/// The text boxes of `img`, with each box's mean probability.
pub fn detect(session: &mut Session, img: &Rgb) -> Result<Vec<(Rect, f32)>, Error> {
    let scale = (MAX_PIXELS as f64 / (img.width * img.height) as f64)
        .sqrt()
        .min(1.0);
    if scale >= 1.0 {
        return detect_at(session, img);
    }
    let (sw, sh) = (
        ((img.width as f64 * scale) as usize).max(32),
        ((img.height as f64 * scale) as usize).max(32),
    );
    let small = img.resized_crop((0, 0, img.width, img.height), sw, sh);
    let (fx, fy) = (img.width as f64 / sw as f64, img.height as f64 / sh as f64);
    Ok(detect_at(session, &small)?
        .into_iter()
        .map(|(r, score)| {
            let x = (r.x as f64 * fx) as usize;
            let y = (r.y as f64 * fy) as usize;
            let x1 = (((r.x + r.width) as f64 * fx).ceil() as usize).min(img.width);
            let y1 = (((r.y + r.height) as f64 * fy).ceil() as usize).min(img.height);
            (
                Rect {
                    x,
                    y,
                    width: x1 - x,
                    height: y1 - y,
                },
                score,
            )
        })
        .collect())
}

fn detect_at(session: &mut Session, img: &Rgb) -> Result<Vec<(Rect, f32)>, Error> {
    let (w, h) = (img.width.div_ceil(32) * 32, img.height.div_ceil(32) * 32);
    // Normalized to [-1, 1] (mean and spread 0.5), in the blue-green-red
    // order the models were trained on; the padding is black.
    let mut input = Array4::<f32>::from_elem((1, 3, h, w), -1.0);
    super::put_image(&mut input, 0, img);
    super::run(session, input, |shape, probs| {
        let (ph, pw) = (shape[2] as usize, shape[3] as usize);
        regions(probs, pw, ph, img.width.min(pw), img.height.min(ph))
    })
}

/// The boxes of a probability map `probs` (`pw` × `ph`), within the
/// image's own `width` × `height` (the rest is padding).
pub fn regions(
    probs: &[f32],
    pw: usize,
    ph: usize,
    width: usize,
    height: usize,
) -> Vec<(Rect, f32)> {
    // Binarize, then dilate by one pixel right and down (thin strokes of
    // small fonts otherwise split a word into letters).
    let mut on = vec![false; pw * ph];
    for y in 0..height {
        for x in 0..width {
            if probs[y * pw + x] > PIXEL_THRESHOLD {
                on[y * pw + x] = true;
                if x + 1 < width {
                    on[y * pw + x + 1] = true;
                }
                if y + 1 < height {
                    on[(y + 1) * pw + x] = true;
                }
            }
        }
    }
    let mut seen = vec![false; pw * ph];
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for start in 0..pw * ph {
        if !on[start] || seen[start] || out.len() >= MAX_REGIONS {
            continue;
        }
        // One region, 4-connected, with its bounds and probability sum.
        let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
        let (mut sum, mut count) = (0f32, 0usize);
        seen[start] = true;
        stack.push(start);
        while let Some(i) = stack.pop() {
            let (x, y) = (i % pw, i / pw);
            x0 = x0.min(x);
            y0 = y0.min(y);
            x1 = x1.max(x);
            y1 = y1.max(y);
            // The score is the text pixels' mean: the dilation's extra
            // pixels would only dilute it.
            if probs[i] > PIXEL_THRESHOLD {
                sum += probs[i];
                count += 1;
            }
            let mut visit = |j: usize| {
                if on[j] && !seen[j] {
                    seen[j] = true;
                    stack.push(j);
                }
            };
            if x > 0 {
                visit(i - 1);
            }
            if x + 1 < width {
                visit(i + 1);
            }
            if y > 0 {
                visit(i - pw);
            }
            if y + 1 < height {
                visit(i + pw);
            }
        }
        let (bw, bh) = (x1 - x0 + 1, y1 - y0 + 1);
        let score = sum / count.max(1) as f32;
        if bw < MIN_SIDE || bh < MIN_SIDE || score < BOX_THRESHOLD {
            continue;
        }
        let grow = (bw * bh) as f32 * UNCLIP_RATIO / (2.0 * (bw + bh) as f32);
        let g = grow.round() as usize;
        let rx0 = x0.saturating_sub(g);
        let ry0 = y0.saturating_sub(g);
        let rx1 = (x1 + g).min(width - 1);
        let ry1 = (y1 + g).min(height - 1);
        out.push((
            Rect {
                x: rx0,
                y: ry0,
                width: rx1 - rx0 + 1,
                height: ry1 - ry0 + 1,
            },
            score,
        ));
    }
    // Reading order: top to bottom, then left to right.
    out.sort_by_key(|(r, _)| (r.y / 8, r.x));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_blobs_become_two_grown_boxes_and_faint_ones_are_dropped() {
        let (w, h) = (40, 20);
        let mut p = vec![0.0f32; w * h];
        // A word at (5..15, 5..9), confident.
        for y in 5..9 {
            for x in 5..15 {
                p[y * w + x] = 0.9;
            }
        }
        // Another at (25..35, 10..14), faint (0.35 > pixel, < box threshold).
        for y in 10..14 {
            for x in 25..35 {
                p[y * w + x] = 0.35;
            }
        }
        let boxes = regions(&p, w, h, w, h);
        assert_eq!(
            boxes.len(),
            1,
            "{:?}",
            boxes.iter().map(|b| b.0).collect::<Vec<_>>()
        );
        let (r, score) = boxes[0];
        assert!(score > 0.8);
        // Grown on every side from 5..=15 x 5..=9 (dilated by one).
        assert!(
            r.x < 5 && r.y < 5 && r.x + r.width > 15 && r.y + r.height > 9,
            "{r:?}"
        );
    }
}
