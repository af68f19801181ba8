//! The built-in adapters, one file each (registered in [`crate::adapters()`]).

pub mod bun;
pub mod cargo;
pub mod catch2;
pub mod deno;
pub mod generic;
pub mod go;
pub mod gtest;
pub mod jest;
pub mod js;
pub mod mocha;
pub mod nextest;
pub mod pytest;
pub mod unittest;
pub mod vitest;
