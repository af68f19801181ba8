//! One file per language's resolver. Adding a language: a new file here and
//! one line below.

pub mod dwarf;
