//! The Frida side of Strobe.
//!
//! Frida is reached through the pinned PyPI `frida` package in a separate
//! bridge process per session ([`bridge::Bridge`]). The daemon and a bridge
//! talk over a Unix socket in length-prefixed binary frames
//! ([`protocol`]); the agent's messages pass through the bridge undecoded.
//! The agent's TypeScript sources are embedded in this crate and compiled
//! by Frida's own compiler, cached by content hash ([`agent`]). What the
//! daemon and the agent say to each other is typed in [`agent_protocol`].

pub mod agent;
pub mod agent_protocol;
pub mod bridge;
mod bridge_tmp;
pub mod protocol;
pub mod python;

pub use bridge::{Bridge, BridgeError, BridgeEvent, SpawnRequest};
pub use python::{
    FridaPython, PINNED_FRIDA_VERSION, PINNED_PY_SPY_VERSION, PINNED_VISION_PACKAGES,
};
