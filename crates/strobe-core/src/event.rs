//! The unified event model shared by every producer and by the store.
//!
//! Producers (output readers, the agent, later the test runner) append events
//! to an [`EventBatch`]: fixed-size headers plus one contiguous payload buffer,
//! so a batch of thousands of events costs two allocations, not thousands.

use serde::Serialize;

/// What an event records. The discriminant is stored on disk: never reorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[repr(u8)]
pub enum EventKind {
    /// A piece of the target's standard output (usually one line).
    Stdout = 1,
    /// A piece of the target's standard error (usually one line).
    Stderr = 2,
    /// A traced function was entered.
    FunctionEnter = 3,
    /// A traced function returned.
    FunctionExit = 4,
    /// The target crashed (signal, fault address, …; payload is JSON).
    Crash = 5,
    /// A sampled variable value (payload is JSON).
    VariableSnapshot = 6,
    /// The target process ended (payload is JSON: exit code or signal).
    ProcessExit = 7,
    /// A logpoint fired (payload is the rendered message).
    Logpoint = 8,
    /// An exception left a traced function (payload is JSON: its type and
    /// message; `func_id` is the function).
    Exception = 9,
    /// `debug_ui` looked at the program's GUI (payload is JSON: the compact
    /// tree, what changed since the previous snapshot, the screenshot's
    /// path, whether vision ran).
    UiSnapshot = 10,
    /// `debug_ui_action` acted on the program's GUI (payload is JSON: the
    /// action and its node, how it was done, whether it was verified, the node before
    /// and after, and the numbers of the `ui_snapshot`s around it).
    UiAction = 11,
    /// The `stdio` channel wrote to the target's stdin, or closed it
    /// (payload is JSON: the text or byte count, `eof`).
    Stdin = 12,
    /// The `file` channel changed a file, or saw one change (payload is
    /// JSON: the channel, `dir` "sent" or "seen", the path, what happened,
    /// the size and an excerpt).
    File = 13,
    /// The `net` channel sent a request or payload, or received the answer
    /// (payload is JSON: the channel, `dir`, the peer, status, an excerpt).
    Net = 14,
    /// The `midi` channel sent or received a MIDI message (payload is JSON).
    Midi = 15,
    /// The `audio` channel played a signal or measured a window of the
    /// program's output (payload is JSON: rms, peak, frequency, flags).
    Audio = 16,
    /// A scenario step ran (payload is JSON: the scenario, the step's
    /// number and text, passed or failed and why).
    ScenarioStep = 17,
}

impl EventKind {
    /// Every kind, in discriminant order.
    pub const ALL: [EventKind; 17] = [
        EventKind::Stdout,
        EventKind::Stderr,
        EventKind::FunctionEnter,
        EventKind::FunctionExit,
        EventKind::Crash,
        EventKind::VariableSnapshot,
        EventKind::ProcessExit,
        EventKind::Logpoint,
        EventKind::Exception,
        EventKind::UiSnapshot,
        EventKind::UiAction,
        EventKind::Stdin,
        EventKind::File,
        EventKind::Net,
        EventKind::Midi,
        EventKind::Audio,
        EventKind::ScenarioStep,
    ];

    /// The wire name used by `debug_query` (`eventType`).
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Stdout => "stdout",
            EventKind::Stderr => "stderr",
            EventKind::FunctionEnter => "function_enter",
            EventKind::FunctionExit => "function_exit",
            EventKind::Crash => "crash",
            EventKind::VariableSnapshot => "variable_snapshot",
            EventKind::ProcessExit => "process_exit",
            EventKind::Logpoint => "logpoint",
            EventKind::Exception => "exception",
            EventKind::UiSnapshot => "ui_snapshot",
            EventKind::UiAction => "ui_action",
            EventKind::Stdin => "stdin",
            EventKind::File => "file",
            EventKind::Net => "net",
            EventKind::Midi => "midi",
            EventKind::Audio => "audio",
            EventKind::ScenarioStep => "scenario_step",
        }
    }

    /// Parses a wire name; `None` for unknown names.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Decodes a stored discriminant.
    pub fn from_u8(v: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|k| *k as u8 == v)
    }

    /// The bit of this kind in a kind mask.
    pub fn bit(self) -> u32 {
        1 << (self as u8)
    }
}

/// Flag: the output piece did not end with a newline in the target's stream
/// (a prompt, a write still in progress at exit, or a line split for length).
pub const FLAG_PARTIAL_LINE: u8 = 1;
/// Flag: the payload is a JSON document.
pub const FLAG_JSON: u8 = 2;
/// Flag: the call was recorded by hot-function sampling (not every call is).
pub const FLAG_SAMPLED: u8 = 4;
/// The payload is the agent's binary capture of a traced call (registers and
/// memory blocks, see strobe-session's `values`), decoded into typed values
/// when queried: decoding at ingest would cap the event rate.
pub const FLAG_CAPTURE: u8 = 8;
/// On a function_exit with a capture: `value` holds the typed return value
/// as the query engine compares it (integers sign- or zero-extended to 64
/// bits, floats as f64 bits, bools 0/1, pointers raw; the raw register for
/// functions without a return type), so chunk indexes can answer
/// `returnValue` filters. Without this flag a captured exit's value is the
/// raw `rax` and says nothing about its typed value.
pub const FLAG_VALUE_TYPED: u8 = 16;
/// On a function_enter / function_exit: the call pairs with its other half
/// by `value` (the address of a generator or coroutine), not by the
/// thread's call stack, because it may end long after, or on another
/// thread (see the store's call tree).
pub const FLAG_DETACHED: u8 = 32;

/// Fixed-size part of an event. Payload bytes live in the batch's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventHeader {
    /// Nanoseconds since the session started, on the session clock.
    pub ts_ns: u64,
    /// [`EventKind`] discriminant.
    pub kind: u8,
    /// `FLAG_*` bits.
    pub flags: u8,
    /// Process that produced the event.
    pub pid: u32,
    /// OS thread id (0 when unknown, e.g. for output).
    pub tid: u32,
    /// Interned function id (0 = none).
    pub func_id: u32,
    /// Sequence number of the parent event plus one (0 = none).
    pub parent: u64,
    /// Duration for exit events, in ns (0 otherwise).
    pub duration_ns: u64,
    /// Raw register value: the first argument (enter) or the return value (exit).
    pub value: u64,
    /// Offset of the payload in [`EventBatch::payload`].
    pub payload_off: u32,
    /// Length of the payload.
    pub payload_len: u32,
}

/// A batch of events: headers plus one shared payload buffer.
#[derive(Debug, Clone, Default)]
pub struct EventBatch {
    /// One header per event, in production order.
    pub headers: Vec<EventHeader>,
    /// Concatenated payloads, addressed by `payload_off`/`payload_len`.
    pub payload: Vec<u8>,
}

impl EventBatch {
    /// An empty batch with room for `events` headers.
    pub fn with_capacity(events: usize, payload_bytes: usize) -> Self {
        Self {
            headers: Vec::with_capacity(events),
            payload: Vec::with_capacity(payload_bytes),
        }
    }

    /// Appends an event; `header.payload_off/len` are filled in here.
    pub fn push(&mut self, mut header: EventHeader, payload: &[u8]) {
        header.payload_off = self.payload.len() as u32;
        header.payload_len = payload.len() as u32;
        self.payload.extend_from_slice(payload);
        self.headers.push(header);
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.headers.len()
    }

    /// True when the batch holds no events.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty()
    }

    /// Payload of the `i`-th event.
    pub fn payload_of(&self, h: &EventHeader) -> &[u8] {
        &self.payload[h.payload_off as usize..(h.payload_off + h.payload_len) as usize]
    }
}

/// A decoded event as the query engine hands it out.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Sequence number within the session (1-based, dense, never reused).
    pub seq: u64,
    /// The fixed-size fields.
    pub header: EventHeader,
    /// The payload bytes (text for output, JSON for structured kinds).
    pub payload: Vec<u8>,
}

impl Event {
    /// The event's kind, if the stored discriminant is known.
    pub fn kind(&self) -> Option<EventKind> {
        EventKind::from_u8(self.header.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in EventKind::ALL {
            assert_eq!(EventKind::from_name(k.name()), Some(k));
            assert_eq!(EventKind::from_u8(k as u8), Some(k));
        }
        assert_eq!(EventKind::from_name("nope"), None);
    }

    #[test]
    fn batch_addresses_payloads() {
        let mut b = EventBatch::default();
        b.push(EventHeader::default(), b"one");
        b.push(EventHeader::default(), b"three");
        assert_eq!(b.payload_of(&b.headers[0]), b"one");
        assert_eq!(b.payload_of(&b.headers[1]), b"three");
    }
}
