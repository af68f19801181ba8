//! OCR with the PP-OCR models shipped in PyPI's `rapidocr` (Apache-2.0):
//! `detect.rs` finds text boxes, `recognize.rs` reads them.

pub mod detect;
pub mod recognize;
