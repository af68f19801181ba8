//! Vision: what a window's screenshot shows that its accessibility tree
//! may not (text painted by hand, controls drawn on a canvas), merged into
//! the tree.
//!
//! [`VisionModel`] is the extension point: one file per model under this
//! folder. `sidecar.rs` is the one built here (OCR and a shape detector in
//! the `strobe-vision` process, so the daemon never links onnxruntime);
//! another model is a new file implementing the trait. `merge.rs` puts what
//! a model found into the tree, the same for every model.

pub mod merge;
pub mod sidecar;

use std::path::Path;

use crate::Bounds;

/// One thing a model found in an image, in the image's pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct VisionBox {
    /// Where it is in the image.
    pub bounds: Bounds,
    /// "text", or the kind of control ("knob", "toggle", "slider",
    /// "button").
    pub kind: String,
    /// How sure the model is, 0–1.
    pub confidence: f32,
    /// What it reads (text).
    pub text: Option<String>,
}

/// Why vision could not answer; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum VisionError {
    /// Something it needs is not installed.
    #[error("{0}")]
    NotInstalled(String),
    /// The model process failed or answered nonsense.
    #[error("the vision sidecar failed: {0}")]
    Failed(String),
}

/// A vision model: an image in, what it shows out.
pub trait VisionModel: Send {
    /// Short name ("sidecar").
    fn name(&self) -> &'static str;
    /// What the PNG at `png` shows, at or above `min_confidence`.
    fn analyze(&mut self, png: &Path, min_confidence: f32) -> Result<Vec<VisionBox>, VisionError>;
}
