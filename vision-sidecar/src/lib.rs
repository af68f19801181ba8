//! Strobe's vision sidecar: what a screenshot shows that the accessibility
//! tree may not — text (OCR with the PP-OCR models through onnxruntime) and
//! text-less controls (a classical shape detector, `shapes.rs`).
//!
//! It is its own process so the daemon never links onnxruntime: the daemon
//! starts it on demand (`strobe_ui::vision::sidecar`) and speaks JSON lines
//! over its stdin and stdout (`protocol.rs`). onnxruntime is loaded at run
//! time from the library the PyPI wheel ships (`--ort`); the models are
//! files of the PyPI `rapidocr` wheel (`--det`, `--rec`). Nothing is
//! downloaded at run time.

pub mod image;
pub mod ocr;
pub mod protocol;
pub mod shapes;

use std::path::Path;
use std::time::Instant;

use ort::session::Session;

use crate::protocol::{Found, Timings};

/// A rectangle in image pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    /// Left edge.
    pub x: usize,
    /// Top edge.
    pub y: usize,
    /// Width.
    pub width: usize,
    /// Height.
    pub height: usize,
}

/// What went wrong, said so the daemon can pass it on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// onnxruntime could not be loaded.
    #[error("cannot load onnxruntime from {path}: {why}")]
    Runtime {
        /// The library tried.
        path: String,
        /// Why it failed.
        why: String,
    },
    /// A model could not be loaded or is not what was expected.
    #[error("{0}")]
    Model(String),
    /// The image could not be read.
    #[error("cannot read the image: {0}")]
    Image(String),
    /// A model run failed.
    #[error("inference failed: {0}")]
    Inference(String),
}

/// The loaded models.
pub struct Pipeline {
    detector: Session,
    recognizer: Session,
    alphabet: ocr::recognize::Alphabet,
}

impl Pipeline {
    /// Loads onnxruntime from `runtime` and the detection and recognition
    /// models.
    pub fn load(runtime: &Path, det: &Path, rec: &Path) -> Result<Pipeline, Error> {
        let runtime_error = |why: String| Error::Runtime {
            path: runtime.display().to_string(),
            why,
        };
        let env = ort::init_from(runtime)
            .map_err(|e| runtime_error(e.to_string()))?
            .build()
            .map_err(|e| runtime_error(e.to_string()))?;
        let load = |path: &Path| -> Result<Session, Error> {
            let model_error = |e: &dyn std::fmt::Display| {
                Error::Model(format!("cannot load the model {}: {e}", path.display()))
            };
            Session::builder(&env)
                .map_err(|e| model_error(&e))?
                .with_intra_threads(2)
                .map_err(|e| model_error(&e))?
                .commit_from_file(path)
                .map_err(|e| model_error(&e))
        };
        let detector = load(det)?;
        let recognizer = load(rec)?;
        let alphabet = ocr::recognize::Alphabet::of(&recognizer)?;
        Ok(Pipeline {
            detector,
            recognizer,
            alphabet,
        })
    }

    /// Text and shapes of the PNG at `path`, at or above `min_confidence`.
    pub fn analyze(
        &mut self,
        path: &Path,
        min_confidence: f32,
    ) -> Result<(Vec<Found>, Timings), Error> {
        let started = Instant::now();
        let img = image::Rgb::open(path)?;
        let decoded = started.elapsed();
        let regions = ocr::detect::detect(&mut self.detector, &img)?;
        let detected = started.elapsed();
        let rects: Vec<Rect> = regions.iter().map(|(r, _)| *r).collect();
        let texts = ocr::recognize::recognize(&mut self.recognizer, &self.alphabet, &img, &rects)?;
        let recognized = started.elapsed();
        let mut found: Vec<Found> = rects
            .iter()
            .zip(&regions)
            .zip(texts)
            .filter(|(_, (text, conf))| !text.is_empty() && *conf >= min_confidence)
            .map(|((r, _), (text, conf))| Found::new(*r, "text", conf, Some(text)))
            .collect();
        let gray = img.gray();
        found.extend(
            shapes::shapes(&gray, img.width, img.height, &rects)
                .into_iter()
                .filter(|s| s.confidence >= min_confidence)
                .map(|s| Found::new(s.rect, s.kind, s.confidence, None)),
        );
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let timings = Timings {
            decode_ms: ms(decoded),
            detect_ms: ms(detected - decoded),
            recognize_ms: ms(recognized - detected),
            shapes_ms: ms(started.elapsed() - recognized),
        };
        Ok((found, timings))
    }
}
