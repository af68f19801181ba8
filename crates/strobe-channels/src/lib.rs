//! The I/O channel extension point: ways to drive a program and to watch
//! what it does beyond its calls — stdin, files, the network, MIDI, audio,
//! its GUI — all on the session's one timeline.
//!
//! A channel kind (`midi`, `net`, `file`, …) is one file under `channels/`
//! registered by one line in [`channels::all`]. Opening it for a session
//! ([`ChannelKind::open`], from `debug_launch {channels}` or later) gives an
//! input half ([`InputChannel`]: stimuli) and/or an output half
//! ([`OutputChannel`]: observations). `debug_channel` and the scenario
//! runner reach every channel through these traits only.
//!
//! Every stimulus a channel sends is recorded by the session as an event
//! of the channel's [`ChannelKind::event_type`] before it is sent
//! (`dir: "sent"`, with [`InputChannel::preview`] as its summary), so it
//! comes before whatever it causes; an answer as a second one once it came
//! (`dir: "answer"`, for channels that [`InputChannel::answers`]), a
//! failure as `dir: "failed"`; every observation as `dir: "seen"`. Each
//! carries a `summary`: the line `debug_query` shows.
//!
//! Unlike the spec's sketch, an output channel has no `query`: every
//! observation goes to an [`ObservationSink`] the session provides, which
//! stores it as an event on the session's clock, so `debug_query` (and
//! scenario waits and assertions) read channels like any other event. A
//! sink that cannot keep up counts what it drops; nothing is lost silently.
//!
//! Invariants: this crate knows nothing of sessions, the store or MCP; a
//! channel never touches a display or device that is not the session's own.

mod bounded_write;
pub mod channels;
mod contained;
mod jack;
mod jack_lib;
mod jack_server;
mod stdin_port;

pub use jack_server::JackServer;
pub use stdin_port::StdinPort;

use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// `debug_launch {channels: ["net:8080"]}`'s entry, parsed: the kind and
/// what follows its colon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelSpec {
    /// The channel kind ("net").
    pub kind: String,
    /// What the kind is pointed at ("8080", a path or glob), if anything.
    pub target: Option<String>,
}

impl ChannelSpec {
    /// Parses `kind` or `kind:target`; the kind is lowercase letters.
    pub fn parse(text: &str) -> Result<ChannelSpec, ChannelError> {
        let (kind, target) = match text.split_once(':') {
            Some((k, t)) => (k, Some(t.to_string())),
            None => (text, None),
        };
        if kind.is_empty() || !kind.bytes().all(|b| b.is_ascii_lowercase()) {
            return Err(ChannelError::BadSpec(text.to_string()));
        }
        Ok(ChannelSpec {
            kind: kind.to_string(),
            target,
        })
    }
}

/// The session a channel is opened for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionTarget {
    /// The session id.
    pub session_id: String,
    /// Every process of the session (the root first).
    pub pids: Vec<u32>,
    /// The project root, against which relative paths resolve.
    pub project_root: PathBuf,
    /// The program's stdin, when it was launched with `stdin: "pipe"`.
    pub stdin: Option<StdinPort>,
    /// The environment the launch gave the program (`JACK_DEFAULT_SERVER`
    /// names the JACK server the midi and audio channels use).
    pub env: Vec<(String, String)>,
    /// Where a channel may write files for the session (an audio
    /// channel's WAV).
    pub data_dir: PathBuf,
    /// The agent opted in to files outside `project_root`
    /// (`debug_channel {action: "add", allowOutsideProject: true}`);
    /// otherwise a channel reaches files inside it only, links resolved,
    /// since a launch's or a scenario's channels may come from the
    /// repository.
    pub outside_project: bool,
}

#[cfg(test)]
impl SessionTarget {
    /// A session of process `pids` rooted at `root`, for unit tests.
    pub(crate) fn for_tests(root: &str, pids: Vec<u32>) -> SessionTarget {
        SessionTarget {
            session_id: "s".into(),
            pids,
            project_root: root.into(),
            stdin: None,
            env: vec![],
            data_dir: std::env::temp_dir(),
            outside_project: false,
        }
    }
}

/// One thing a channel saw: stored by the session as a timeline event of
/// the channel's kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The channel's name ("net:8080").
    pub channel: String,
    /// `CLOCK_MONOTONIC` nanoseconds when it happened, where the channel
    /// knows (a JACK frame time); `None`: when the sink receives it.
    pub at_ns: Option<u64>,
    /// What was seen, as the channel describes it.
    pub data: Value,
}

/// Where a session takes its channels' observations.
pub trait ObservationSink: Send + Sync {
    /// Stores `observation`, or counts it as dropped.
    fn observe(&self, observation: Observation);
}

/// A channel's stimulus half.
pub trait InputChannel: Send + Sync {
    /// The channel's name ("midi", "net:8080").
    fn name(&self) -> &str;
    /// Sends one stimulus (`{"type": "noteOn", "note": 60}`); the answer
    /// says what was done (bytes written, an HTTP response).
    fn send(&self, action: &Value) -> Result<Value, ChannelError>;
    /// What `action` will do, in one line, said before it is sent (the
    /// session stores it as the stimulus's event, stamped when it began).
    fn preview(&self, action: &Value) -> String {
        action.to_string()
    }
    /// Its sends get an answer worth its own event (an HTTP response),
    /// stored when it came.
    fn answers(&self) -> bool {
        false
    }
}

/// A channel's observation half.
pub trait OutputChannel: Send + Sync {
    /// The channel's name.
    fn name(&self) -> &str;
    /// Starts handing observations to `sink` until [`stop_capture`](Self::stop_capture).
    fn start_capture(&self, sink: Arc<dyn ObservationSink>) -> Result<(), ChannelError>;
    /// Stops capturing; what was seen before stays stored.
    fn stop_capture(&self) -> Result<(), ChannelError>;
}

/// A channel opened for a session: one half or both.
#[derive(Default)]
pub struct OpenChannel {
    /// Stimuli, if the kind can send.
    pub input: Option<Box<dyn InputChannel>>,
    /// Observations, if the kind can capture.
    pub output: Option<Box<dyn OutputChannel>>,
    /// It works on files outside the project root (opted in), which the
    /// answer that opened it says.
    pub outside_project: bool,
}

/// One kind of channel, as registered.
pub trait ChannelKind: Send + Sync {
    /// The kind as specs name it ("midi").
    fn kind(&self) -> &'static str;
    /// One line for `debug_channel {action: "list"}`: what the kind sends
    /// and sees, and the stimuli it takes.
    fn describe(&self) -> &'static str;
    /// The `debug_query` event type its events are stored as (the kind's
    /// own name unless it says otherwise).
    fn event_type(&self) -> &'static str {
        self.kind()
    }
    /// The fields a stimulus of this kind may have (a scenario's `do`
    /// steps are checked against them before anything runs).
    fn stimulus_fields(&self) -> &'static [&'static str] {
        &[]
    }
    /// Present in every session without being added (`stdio`, `trace`).
    fn always_present(&self) -> bool {
        false
    }
    /// Its observations include the program's own socket I/O, which the
    /// session records from the agent's hooks while a channel of this kind
    /// is open (they are not this crate's to make).
    fn watches_program_sockets(&self) -> bool {
        false
    }
    /// Opens the channel `spec` names for `session`.
    fn open(
        &self,
        spec: &ChannelSpec,
        session: &SessionTarget,
    ) -> Result<OpenChannel, ChannelError>;
}

/// Why a channel could not be opened or used; each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// The spec is not `kind` or `kind:target`.
    #[error(
        "{0:?} is not a channel: write a kind, or kind:target (\"midi\", \"net:8080\", \"file:out/*.wav\")"
    )]
    BadSpec(String),
    /// No channel kind of that name is registered.
    #[error("no channel kind {kind:?}; known: {known}")]
    UnknownKind {
        /// What was asked for.
        kind: String,
        /// The registered kinds, comma-separated.
        known: String,
    },
    /// The stimulus is not one this channel takes.
    #[error("channel {channel}: {why}")]
    BadAction {
        /// The channel's name.
        channel: String,
        /// What is wrong and what it takes instead.
        why: String,
    },
    /// The device, port or file could not be used.
    #[error("channel {channel}: {why}")]
    Unavailable {
        /// The channel's name.
        channel: String,
        /// The underlying failure and how to fix it.
        why: String,
    },
}
