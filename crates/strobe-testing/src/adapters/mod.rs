//! The built-in adapters, one file each (registered in [`crate::adapters()`]).

pub mod cargo;
pub mod unittest;
