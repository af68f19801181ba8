//! The sidecar's protocol: one JSON object a line each way.
//!
//! On start the sidecar loads its models and writes one line: `{"ready":
//! true, "loadMs": …}`, or `{"fatal": "…"}` and exits. Then, for each
//! request line `{"id": 1, "image": "/abs/shot.png", "minConfidence":
//! 0.3}`, it writes `{"id": 1, "found": [{"x", "y", "width", "height",
//! "kind", "confidence", "text"?}], "timings": {…}}` or `{"id": 1,
//! "error": "…"}`. It exits when its stdin closes. `kind` is "text",
//! "knob", "toggle", "slider" or "button"; coordinates are the image's
//! pixels.

use serde::{Deserialize, Serialize};

use crate::Rect;

/// A request.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Request {
    /// Echoed in the answer.
    pub id: u64,
    /// The PNG to look at.
    pub image: String,
    /// Results below this confidence are left out.
    #[serde(default)]
    pub min_confidence: f32,
}

/// One thing found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Found {
    /// Left edge.
    pub x: usize,
    /// Top edge.
    pub y: usize,
    /// Width.
    pub width: usize,
    /// Height.
    pub height: usize,
    /// "text", "knob", "toggle", "slider", "button".
    pub kind: &'static str,
    /// 0–1.
    pub confidence: f32,
    /// What it reads, for text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl Found {
    /// A result at `r`.
    pub fn new(r: Rect, kind: &'static str, confidence: f32, text: Option<String>) -> Found {
        Found {
            x: r.x,
            y: r.y,
            width: r.width,
            height: r.height,
            kind,
            confidence: (confidence * 100.0).round() / 100.0,
            text,
        }
    }
}

/// Where an answer's time went.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    /// Reading the PNG.
    pub decode_ms: f64,
    /// The detection model.
    pub detect_ms: f64,
    /// The recognition model.
    pub recognize_ms: f64,
    /// The shape detector.
    pub shapes_ms: f64,
}
