//! Text recognition: each detected box is cut out, scaled to the model's
//! 48-pixel height, and read by the PP-OCR recognition model in batches of
//! similar widths; its per-column character probabilities are decoded the
//! CTC way (best class per column, repeats merged, blanks dropped).
//!
//! The alphabet is the model's own: the `character` entry of its metadata,
//! one character a line, after the blank (class 0) and before a space (the
//! last class).

use ndarray::Array4;
use ort::session::Session;

use crate::image::Rgb;
use crate::{Error, Rect};

/// The height the model reads.
const HEIGHT: usize = 48;
/// The widest crop (in model pixels): longer lines are squeezed.
const MAX_WIDTH: usize = 48 * 30;
/// Crops per model run.
const BATCH: usize = 8;

/// The recognition model's alphabet.
pub struct Alphabet(Vec<String>);

impl Alphabet {
    /// Reads the alphabet from the model's `character` metadata.
    pub fn of(session: &Session) -> Result<Alphabet, Error> {
        let meta = session
            .metadata()
            .map_err(|e| Error::Model(format!("the recognition model's metadata: {e}")))?;
        let chars = meta.custom("character").ok_or_else(|| {
            Error::Model(
                "the recognition model has no `character` metadata (is it a PP-OCR model?)".into(),
            )
        })?;
        Ok(Alphabet(chars.split('\n').map(str::to_string).collect()))
    }

    /// The text of class `k` (0 is the blank; past the alphabet, a space).
    fn char(&self, k: usize) -> &str {
        match k {
            0 => "",
            k if k <= self.0.len() => &self.0[k - 1],
            _ => " ",
        }
    }
}

/// The text of each box of `img`, with its confidence (the mean
/// probability of the characters read), in the boxes' order.
pub fn recognize(
    session: &mut Session,
    alphabet: &Alphabet,
    img: &Rgb,
    boxes: &[Rect],
) -> Result<Vec<(String, f32)>, Error> {
    // Similar widths together, so a batch pads little.
    let widths: Vec<usize> = boxes
        .iter()
        .map(|r| ((r.width * HEIGHT).div_ceil(r.height.max(1))).clamp(HEIGHT / 2, MAX_WIDTH))
        .collect();
    let mut order: Vec<usize> = (0..boxes.len()).collect();
    order.sort_by_key(|&i| widths[i]);
    let mut out = vec![(String::new(), 0.0); boxes.len()];
    for chunk in order.chunks(BATCH) {
        let width = chunk.iter().map(|&i| widths[i]).max().unwrap_or(HEIGHT);
        // Normalized to [-1, 1], blue-green-red; the padding is 0.
        let mut input = Array4::<f32>::zeros((chunk.len(), 3, HEIGHT, width));
        for (b, &i) in chunk.iter().enumerate() {
            let r = boxes[i];
            let crop = img.resized_crop((r.x, r.y, r.width, r.height), widths[i], HEIGHT);
            super::put_image(&mut input, b, &crop);
        }
        super::run(session, input, |shape, probs| {
            let (steps, classes) = (shape[1] as usize, shape[2] as usize);
            for (b, &i) in chunk.iter().enumerate() {
                let rows = &probs[b * steps * classes..(b + 1) * steps * classes];
                out[i] = decode(rows, classes, alphabet);
            }
        })?;
    }
    Ok(out)
}

/// Greedy CTC decoding of `steps` rows of `classes` probabilities.
fn decode(rows: &[f32], classes: usize, alphabet: &Alphabet) -> (String, f32) {
    let mut text = String::new();
    let (mut sum, mut n) = (0f32, 0usize);
    let mut previous = 0;
    for row in rows.chunks_exact(classes) {
        let (best, p) =
            row.iter().enumerate().fold(
                (0, f32::MIN),
                |acc, (k, &p)| if p > acc.1 { (k, p) } else { acc },
            );
        if best != 0 && best != previous {
            text.push_str(alphabet.char(best));
            sum += p;
            n += 1;
        }
        previous = best;
    }
    let confidence = if n == 0 { 0.0 } else { sum / n as f32 };
    (text.trim().to_string(), confidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctc_merges_repeats_drops_blanks_and_keeps_doubled_letters() {
        // Classes: blank, "o", "k", space (past the alphabet).
        let a = Alphabet(vec!["o".into(), "k".into()]);
        let row = |k: usize| {
            let mut r = vec![0.0f32; 4];
            r[k] = 0.9;
            r
        };
        // o o blank o k k space k → "ook k": a blank between two o's keeps both.
        let rows: Vec<f32> = [1, 1, 0, 1, 2, 2, 3, 2].into_iter().flat_map(row).collect();
        let (text, conf) = decode(&rows, 4, &a);
        assert_eq!(text, "ook k");
        assert!((conf - 0.9).abs() < 1e-6);
        assert_eq!(decode(&row(0), 4, &a).0, "");
    }
}
