//! The agent's answers to the daemon's requests (each carries the
//! request's id), and how a waiting request takes its answer out of an
//! [`AgentMessage`].

use super::wire::{Hex, nullable, numeric_keys};
use super::{AgentMessage, BreakpointsUpdated, PythonMemory};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `plans_updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlansUpdated {
    /// The request's id.
    pub id: u64,
    /// Plans replaced.
    pub count: u32,
}

/// `module_base`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleBaseAnswer {
    /// The request's id.
    pub id: u64,
    /// Where the image is loaded; `None` when it is not.
    #[serde(deserialize_with = "nullable")]
    pub base: Option<Hex>,
}

/// `exprs_updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExprsUpdated {
    /// The request's id.
    pub id: u64,
    /// `[label, compile error]` of each expression that does not compile.
    pub errors: Vec<(String, String)>,
}

/// `flushed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flushed {
    /// The request's id.
    pub id: u64,
    /// Why shipping failed.
    #[serde(deserialize_with = "nullable")]
    pub error: Option<String>,
}

/// `own_threads`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnThreads {
    /// The request's id.
    pub id: u64,
    /// Those of the request's threads that are Frida's (cloaked by Gum).
    pub own: Vec<u32>,
    /// Why they could not be told apart.
    #[serde(deserialize_with = "nullable")]
    pub error: Option<String>,
}

/// `sockets_watched`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SocketsWatched {
    /// The request's id.
    pub id: u64,
    /// How many socket functions are hooked now (0: off).
    pub hooked: u32,
    /// Why hooking failed.
    #[serde(deserialize_with = "nullable")]
    pub error: Option<String>,
}

/// `pause_armed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PauseArmed {
    /// The request's id.
    pub id: u64,
    /// The stops that could not be planted (`address: why`).
    pub failed: Vec<String>,
    /// Why nothing was armed.
    #[serde(deserialize_with = "nullable")]
    pub error: Option<String>,
}

/// `inherited`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inherited {
    /// The request's id.
    pub id: u64,
    /// Patches put back.
    pub undone: u64,
    /// Why undoing failed.
    #[serde(deserialize_with = "nullable")]
    pub error: Option<String>,
}

/// `runtime_loaded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeLoaded {
    /// The request's id.
    pub id: u64,
    /// How the runtime got in ("event loop", "interrupt"), when it did.
    #[serde(deserialize_with = "nullable")]
    pub how: Option<String>,
    /// Why it did not.
    #[serde(deserialize_with = "nullable")]
    pub error: Option<String>,
}

/// `forks_guarded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForksGuarded {
    /// The request's id.
    pub id: u64,
    /// GOT slots that now point at the guard.
    pub slots: u32,
    /// Why the guard could not be set.
    #[serde(deserialize_with = "nullable")]
    pub error: Option<String>,
}

/// `output_owned`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputOwned {
    /// The request's id.
    pub id: u64,
    /// The new pipes' read ends, by the fd their write end went on.
    #[serde(rename = "readFds", deserialize_with = "numeric_keys")]
    pub read_fds: BTreeMap<i32, i32>,
    /// Why it failed.
    #[serde(deserialize_with = "nullable")]
    pub error: Option<String>,
}

/// `fds_closed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FdsClosed {
    /// The request's id.
    pub id: u64,
    /// Descriptors closed.
    pub closed: u32,
    /// Why it failed.
    #[serde(deserialize_with = "nullable")]
    pub error: Option<String>,
}

/// `hooks_updated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HooksUpdated {
    /// The request's id; 0 for hooks of a library loaded later.
    pub id: u64,
    /// Function ids hooked.
    pub installed: Vec<u32>,
    /// `[function id, why]` of those that could not be.
    pub failed: Vec<(u32, String)>,
    /// Functions hooked now in all.
    #[serde(rename = "activeCount")]
    pub active_count: u32,
    /// How long the agent took.
    pub ms: u64,
}

/// Answers to daemon requests, taken out of an [`AgentMessage`] by the
/// request that waits for them: `Err` gives back a message of another kind.
macro_rules! answers {
    ($($variant:ident($ty:ident)),* $(,)?) => {$(
        impl TryFrom<AgentMessage> for $ty {
            type Error = AgentMessage;
            fn try_from(m: AgentMessage) -> Result<Self, AgentMessage> {
                match m {
                    AgentMessage::$variant(a) => Ok(a),
                    other => Err(other),
                }
            }
        }
    )*};
}

answers!(
    PlansUpdated(PlansUpdated),
    ModuleBase(ModuleBaseAnswer),
    ExprsUpdated(ExprsUpdated),
    Inherited(Inherited),
    Flushed(Flushed),
    SocketsWatched(SocketsWatched),
    PauseArmed(PauseArmed),
    OwnThreads(OwnThreads),
    RuntimeLoaded(RuntimeLoaded),
    ForksGuarded(ForksGuarded),
    OutputOwned(OutputOwned),
    FdsClosed(FdsClosed),
    HooksUpdated(HooksUpdated),
    BreakpointsUpdated(BreakpointsUpdated),
    PythonMemory(PythonMemory),
);
