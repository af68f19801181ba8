//! `midi` (or `midi:<client>`): MIDI messages into the program's JACK MIDI
//! inputs, and the messages its MIDI outputs send, with their time. The
//! program's client is found by its pid (or named); the channel's ports
//! are linked to its ports as they appear.

use crate::jack::{Client, Cycle, Link, MIDI, Observer, Port, PortSpec, monotonic_ns, target};
use crate::{
    ChannelError, ChannelKind, ChannelSpec, InputChannel, Observation, ObservationSink,
    OpenChannel, OutputChannel, SessionTarget,
};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Messages kept between the real-time thread and the reader.
const QUEUE: usize = 1024;
/// How often received messages become observations.
const READ_EVERY: Duration = Duration::from_millis(5);
/// What a MIDI stimulus may hold.
const FIELDS: [&str; 8] = [
    "type",
    "note",
    "velocity",
    "channel",
    "controller",
    "value",
    "program",
    "bytes",
];

/// The `midi` kind.
pub struct Midi;

/// What the real-time thread and the channel share.
struct Shared {
    outgoing: Mutex<VecDeque<Vec<u8>>>,
    /// (CLOCK_MONOTONIC ns, status, data1, data2, length)
    incoming: Mutex<Vec<(u64, [u8; 3], usize)>>,
    lost: AtomicU64,
    observer: Observer,
}

impl Cycle for Arc<Shared> {
    fn cycle(&self, ports: &[Port], nframes: u32) {
        let jack = ports[0].jack();
        let out = ports[0].buffer(nframes);
        // SAFETY: this cycle's MIDI output buffer.
        unsafe { (jack.midi_clear_buffer)(out) };
        if let Ok(mut q) = self.outgoing.try_lock() {
            while let Some(m) = q.pop_front() {
                // SAFETY: the bytes outlive the call; time 0 = this cycle's start.
                unsafe { (jack.midi_event_write)(out, 0, m.as_ptr(), m.len()) };
            }
        }
        let inp = ports[1].buffer(nframes);
        // SAFETY: this cycle's MIDI input buffer.
        let n = unsafe { (jack.midi_get_event_count)(inp) };
        if n == 0 {
            return;
        }
        let now = monotonic_ns();
        let Ok(mut q) = self.incoming.try_lock() else {
            self.lost.fetch_add(u64::from(n), Ordering::Relaxed);
            return;
        };
        for i in 0..n {
            let mut ev = crate::jack_lib::MidiEvent::default();
            // SAFETY: i < the event count of this buffer.
            if unsafe { (jack.midi_event_get)(&mut ev, inp, i) } != 0 || ev.size == 0 {
                continue;
            }
            if q.len() >= QUEUE {
                self.lost.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let mut bytes = [0u8; 3];
            let len = ev.size.min(3);
            // SAFETY: ev.buffer holds ev.size bytes.
            unsafe { std::ptr::copy_nonoverlapping(ev.buffer, bytes.as_mut_ptr(), len) };
            q.push((now, bytes, ev.size));
        }
    }
}

struct MidiChannel {
    name: String,
    server: String,
    shared: Arc<Shared>,
    client: Client,
}

impl ChannelKind for Midi {
    fn kind(&self) -> &'static str {
        "midi"
    }

    fn describe(&self) -> &'static str {
        "midi[:<jack client>] (JACK): send {type: noteOn|noteOff|cc|programChange|raw, note, velocity, channel, controller, value, program, bytes}; sees the program's MIDI output"
    }

    fn stimulus_fields(&self) -> &'static [&'static str] {
        &FIELDS
    }

    fn open(
        &self,
        spec: &ChannelSpec,
        session: &SessionTarget,
    ) -> Result<OpenChannel, ChannelError> {
        let (name, program, server) = target("midi", spec, session);
        let shared = Arc::new(Shared {
            outgoing: Mutex::new(VecDeque::with_capacity(QUEUE)),
            incoming: Mutex::new(Vec::with_capacity(QUEUE)),
            lost: AtomicU64::new(0),
            observer: Observer::default(),
        });
        let client_name = format!("strobe-midi-{}", std::process::id() % 100_000);
        let client = Client::open(
            &server,
            &client_name,
            &[
                PortSpec {
                    name: "to_program",
                    kind: MIDI,
                    link: Link::ToInputs,
                },
                PortSpec {
                    name: "from_program",
                    kind: MIDI,
                    link: Link::FromOutputs,
                },
            ],
            Box::new(shared.clone()),
            program,
        )
        .map_err(|why| ChannelError::Unavailable {
            channel: name.clone(),
            why,
        })?;
        let ch = Arc::new(MidiChannel {
            name,
            server,
            shared,
            client,
        });
        Ok(OpenChannel {
            input: Some(Box::new(ch.clone())),
            output: Some(Box::new(ch)),
            ..Default::default()
        })
    }
}

/// A stimulus as MIDI bytes.
fn encode(action: &Value) -> Result<Vec<u8>, String> {
    let obj = action
        .as_object()
        .ok_or("send an object: {type: noteOn, note: 60, velocity: 100}")?;
    for k in obj.keys() {
        if !FIELDS.contains(&k.as_str()) {
            return Err(format!(
                "unknown field {k:?}: midi takes {}",
                FIELDS.join(", ")
            ));
        }
    }
    let num = |k: &str, max: u64, default: Option<u64>| -> Result<u8, String> {
        match obj.get(k) {
            None => default
                .map(|d| d as u8)
                .ok_or_else(|| format!("'{k}' is needed (0-{max})")),
            Some(v) => v
                .as_u64()
                .filter(|n| *n <= max)
                .map(|n| n as u8)
                .ok_or_else(|| format!("'{k}' is 0-{max}")),
        }
    };
    let channel = match obj.get("channel") {
        None => 0,
        Some(v) => v
            .as_u64()
            .filter(|c| (1..=16).contains(c))
            .map(|c| c as u8 - 1)
            .ok_or("'channel' is 1-16")?,
    };
    let kind = obj
        .get("type")
        .and_then(Value::as_str)
        .ok_or("'type' is noteOn, noteOff, cc, programChange or raw")?;
    Ok(match kind {
        "noteOn" => vec![
            0x90 | channel,
            num("note", 127, None)?,
            num("velocity", 127, Some(100))?,
        ],
        "noteOff" => vec![
            0x80 | channel,
            num("note", 127, None)?,
            num("velocity", 127, Some(0))?,
        ],
        "cc" => vec![
            0xB0 | channel,
            num("controller", 127, None)?,
            num("value", 127, None)?,
        ],
        "programChange" => vec![0xC0 | channel, num("program", 127, None)?],
        "raw" => {
            let bytes = obj
                .get("bytes")
                .and_then(Value::as_array)
                .ok_or("'raw' needs 'bytes', a list of 0-255")?;
            let out: Option<Vec<u8>> = bytes
                .iter()
                .map(|b| b.as_u64().filter(|n| *n <= 255).map(|n| n as u8))
                .collect();
            let out = out.ok_or("'bytes' are 0-255")?;
            if out.is_empty() || out[0] < 0x80 {
                return Err("'bytes' start with a status byte (0x80-0xFF)".into());
            }
            out
        }
        other => {
            return Err(format!(
                "'type' {other:?} is not noteOn, noteOff, cc, programChange or raw"
            ));
        }
    })
}

/// A MIDI message in words and as JSON.
fn decode(bytes: &[u8]) -> (String, Value) {
    let status = bytes.first().copied().unwrap_or(0);
    let ch = (status & 0x0F) + 1;
    let d1 = bytes.get(1).copied().unwrap_or(0);
    let d2 = bytes.get(2).copied().unwrap_or(0);
    match status & 0xF0 {
        0x90 if d2 > 0 => (
            format!("noteOn ch{ch} note {d1} ({}) vel {d2}", note_name(d1)),
            json!({"type": "noteOn", "channel": ch, "note": d1, "velocity": d2}),
        ),
        0x80 | 0x90 => (
            format!("noteOff ch{ch} note {d1} ({})", note_name(d1)),
            json!({"type": "noteOff", "channel": ch, "note": d1, "velocity": d2}),
        ),
        0xB0 => (
            format!("cc ch{ch} {d1} = {d2}"),
            json!({"type": "cc", "channel": ch, "controller": d1, "value": d2}),
        ),
        0xC0 => (
            format!("programChange ch{ch} {d1}"),
            json!({"type": "programChange", "channel": ch, "program": d1}),
        ),
        _ => {
            let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
            (
                format!("raw {}", hex.join(" ")),
                json!({"type": "raw", "bytes": bytes}),
            )
        }
    }
}

fn note_name(n: u8) -> String {
    const NAMES: [&str; 12] = [
        "C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B",
    ];
    format!("{}{}", NAMES[(n % 12) as usize], i32::from(n / 12) - 1)
}

impl InputChannel for Arc<MidiChannel> {
    fn name(&self) -> &str {
        &self.name
    }

    fn preview(&self, action: &Value) -> String {
        match encode(action) {
            Ok(bytes) => decode(&bytes).0,
            Err(_) => action.to_string(),
        }
    }

    fn send(&self, action: &Value) -> Result<Value, ChannelError> {
        let bytes = encode(action).map_err(|why| ChannelError::BadAction {
            channel: self.name.clone(),
            why,
        })?;
        let linked = self.client.linked.lock().expect("linked lock").clone();
        {
            let mut q = self.shared.outgoing.lock().expect("outgoing lock");
            if q.len() >= QUEUE {
                return Err(ChannelError::Unavailable {
                    channel: self.name.clone(),
                    why: "the outgoing queue is full: the JACK server is not running cycles".into(),
                });
            }
            q.push_back(bytes.clone());
        }
        let (text, message) = decode(&bytes);
        let mut summary = format!("sent {text}");
        if linked.is_empty() {
            summary.push_str(&format!(
                " (no MIDI input of the program is linked yet on JACK server {:?}: the message goes nowhere)",
                self.server
            ));
        }
        Ok(json!({"message": message, "bytes": bytes, "linked": linked, "summary": summary}))
    }
}

impl OutputChannel for Arc<MidiChannel> {
    fn name(&self) -> &str {
        &self.name
    }

    fn start_capture(&self, sink: Arc<dyn ObservationSink>) -> Result<(), ChannelError> {
        let (shared, name) = (self.shared.clone(), self.name.clone());
        self.shared
            .observer
            .start(&self.name, sink, move || read_loop(&shared, &name))
    }

    fn stop_capture(&self) -> Result<(), ChannelError> {
        self.shared.observer.stop();
        Ok(())
    }
}

/// Turns received messages into observations until stopped.
fn read_loop(shared: &Shared, name: &str) {
    let mut reported_lost = 0;
    // Clock and active sensing come dozens of times a second: counted,
    // and said once a second, not stored one by one.
    let mut realtime = 0u64;
    let mut realtime_said = std::time::Instant::now();
    while !shared.observer.stopped() {
        std::thread::sleep(READ_EVERY);
        let got: Vec<(u64, [u8; 3], usize)> =
            std::mem::take(&mut *shared.incoming.lock().expect("incoming lock"));
        let Some(sink) = shared.observer.sink() else {
            continue;
        };
        for (at, bytes, len) in got {
            if is_realtime(bytes[0]) {
                realtime += 1;
                continue;
            }
            let (text, message) = decode(&bytes[..len.min(3)]);
            let mut data =
                json!({"dir": "seen", "message": message, "summary": format!("received {text}")});
            if len > 3 {
                data["truncated"] = json!(len);
            }
            sink.observe(Observation {
                channel: name.to_string(),
                at_ns: Some(at),
                data,
            });
        }
        if realtime > 0 && realtime_said.elapsed() >= Duration::from_secs(1) {
            sink.observe(Observation {
                channel: name.to_string(),
                at_ns: None,
                data: json!({"dir": "seen", "realtime": realtime,
                    "summary": format!("received {realtime} MIDI realtime message(s) (clock, start/stop, active sensing): counted, not stored one by one")}),
            });
            realtime = 0;
            realtime_said = std::time::Instant::now();
        }
        let lost = shared.lost.load(Ordering::Relaxed);
        if lost > reported_lost {
            sink.observe(Observation {
                channel: name.to_string(),
                at_ns: None,
                data: json!({"dir": "seen", "lost": lost - reported_lost,
                    "summary": format!("{} received MIDI message(s) lost (the queue was full or busy)", lost - reported_lost)}),
            });
            reported_lost = lost;
        }
    }
}

/// System realtime messages (0xF8-0xFF: clock, start, stop, active
/// sensing, reset).
fn is_realtime(status: u8) -> bool {
    status >= 0xF8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_and_active_sensing_are_realtime_and_notes_are_not() {
        assert!(is_realtime(0xF8) && is_realtime(0xFE));
        assert!(!is_realtime(0x90) && !is_realtime(0xF0));
    }

    #[test]
    fn stimuli_encode_and_messages_decode() {
        assert_eq!(
            encode(&json!({"type": "noteOn", "note": 60})).unwrap(),
            [0x90, 60, 100]
        );
        assert_eq!(
            encode(&json!({"type": "noteOff", "note": 60, "channel": 2})).unwrap(),
            [0x81, 60, 0]
        );
        assert_eq!(
            encode(&json!({"type": "cc", "controller": 7, "value": 90})).unwrap(),
            [0xB0, 7, 90]
        );
        assert!(
            encode(&json!({"type": "noteOn"}))
                .unwrap_err()
                .contains("'note' is needed")
        );
        assert!(
            encode(&json!({"type": "noteOn", "note": 200}))
                .unwrap_err()
                .contains("0-127")
        );
        assert!(
            encode(&json!({"type": "raw", "bytes": [1]}))
                .unwrap_err()
                .contains("status byte")
        );
        assert!(
            encode(&json!({"type": "noteOn", "note": 1, "vel": 3}))
                .unwrap_err()
                .contains("unknown field \"vel\"")
        );
        assert_eq!(
            decode(&[0x90, 60, 100]).0,
            "noteOn ch1 note 60 (C4) vel 100"
        );
        assert_eq!(
            decode(&[0x90, 69, 0]).0,
            "noteOff ch1 note 69 (A4)",
            "velocity 0 is a note-off"
        );
    }
}
