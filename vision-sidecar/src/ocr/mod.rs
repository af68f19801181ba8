//! OCR with the PP-OCR models shipped in PyPI's `rapidocr` (Apache-2.0):
//! `detect.rs` finds text boxes, `recognize.rs` reads them.

pub mod detect;
pub mod recognize;

use ndarray::Array4;
use ort::session::Session;
use ort::value::Tensor;

use crate::Error;
use crate::image::Rgb;

/// Writes `img` into slot `batch` of `input`, as both PP-OCR models take
/// it: blue-green-red, scaled to [-1, 1] (mean and spread 0.5).
pub(crate) fn put_image(input: &mut Array4<f32>, batch: usize, img: &Rgb) {
    for y in 0..img.height {
        for x in 0..img.width {
            let p = img.at(x, y);
            for (c, v) in [p[2], p[1], p[0]].into_iter().enumerate() {
                input[[batch, c, y, x]] = f32::from(v) / 127.5 - 1.0;
            }
        }
    }
}

/// Runs `session` on `input` and hands its first output's shape and values
/// to `read` (in place: the recognizer's output is tens of megabytes).
pub(crate) fn run<T>(
    session: &mut Session,
    input: Array4<f32>,
    read: impl FnOnce(&[i64], &[f32]) -> T,
) -> Result<T, Error> {
    let e = |e: ort::Error| Error::Inference(e.to_string());
    let tensor = Tensor::from_array(input).map_err(e)?;
    let outputs = session.run(ort::inputs![tensor]).map_err(e)?;
    let (shape, values) = outputs[0].try_extract_tensor::<f32>().map_err(e)?;
    Ok(read(shape, values))
}
