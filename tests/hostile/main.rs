//! The hostile group: a project tree a repository could commit (symlinks
//! out of it, FIFOs, device paths, JSON nested past any parser's stack),
//! and the parts that meet it — `strobe install`, `strobe export`,
//! scenarios, file channels, DAP — run against it for real. Each case
//! checks that nothing outside the tree changed (the canaries' hashes
//! before and after) and that no process it started is left.

#[path = "../support/mod.rs"]
mod support;

mod canary;

mod channels;
mod dap;
mod export;
mod install;
mod scenario;
