//! `audio` (or `audio:<client>`): a signal (tone, noise, silence, a WAV
//! file) into the program's JACK audio inputs, and its audio outputs
//! measured: per window of 4096 frames, RMS, peak, the dominant frequency
//! (FFT), silence and clipping. A window is an event while there is sound,
//! and once when silence begins (so a silent program costs nothing); what
//! it played is also written to a WAV file (the first five minutes).
//! Nothing is measured before an output of the program is linked to the
//! channel's input: until then the input holds JACK's silence.

use crate::contained::read_file;
use crate::jack::{
    AUDIO, Client, Cycle, Link, NewXruns, Observer, Port, PortSpec, monotonic_ns, target,
};
use crate::{
    ChannelError, ChannelKind, ChannelSpec, InputChannel, Observation, ObservationSink,
    OpenChannel, OutputChannel, SessionTarget,
};
use serde_json::{Value, json};
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Frames per measured window (85 ms at 48 kHz; 11.7 Hz per FFT bin).
pub const WINDOW: usize = 4096;
/// Below this RMS (-60 dBFS) a window is silent.
pub const SILENCE_RMS: f32 = 0.001;
/// At or above this peak a window clips.
pub const CLIP_PEAK: f32 = 0.999;
/// Captured frames the ring holds (5.5 s at 48 kHz).
const RING: usize = 1 << 18;
/// Seconds of WAV written at most.
const MAX_WAV_SECONDS: u32 = 300;
/// How often the analysis thread reads the ring.
const READ_EVERY: Duration = Duration::from_millis(10);
/// Bytes of a `wav` stimulus's file read at most (10 minutes of 48 kHz
/// stereo float).
const MAX_WAV: u64 = 256 << 20;
/// What an audio stimulus may hold.
const FIELDS: [&str; 5] = ["type", "frequency", "amplitude", "durationMs", "path"];

/// The `audio` kind.
pub struct Audio;

/// A signal being played into the program.
enum Signal {
    Tone { step: f64, phase: f64, amp: f32 },
    Noise { state: u32, amp: f32 },
    Silence,
    Samples { data: Vec<f32>, pos: usize },
}

struct Playing {
    signal: Signal,
    frames_left: u64,
}

/// What the real-time thread and the analysis share.
struct Shared {
    ring: Box<[AtomicU32]>,
    head: AtomicU64,
    tail: AtomicU64,
    overruns: AtomicU64,
    /// CLOCK_MONOTONIC ns at the last cycle's start, and `head` then.
    cycle_ns: AtomicU64,
    cycle_head: AtomicU64,
    playing: Mutex<Option<Playing>>,
    observer: Observer,
}

impl Cycle for Arc<Shared> {
    fn cycle(&self, ports: &[Port], nframes: u32) {
        let n = nframes as usize;
        // SAFETY: this cycle's audio buffers hold nframes f32s each.
        let out =
            unsafe { std::slice::from_raw_parts_mut(ports[0].buffer(nframes) as *mut f32, n) };
        out.fill(0.0);
        if let Ok(mut p) = self.playing.try_lock()
            && let Some(play) = p.as_mut()
        {
            let frames = (play.frames_left as usize).min(n);
            fill(&mut play.signal, &mut out[..frames]);
            play.frames_left -= frames as u64;
            if play.frames_left == 0 {
                *p = None;
            }
        }
        // SAFETY: as above, the input port's buffer.
        let inp = unsafe { std::slice::from_raw_parts(ports[1].buffer(nframes) as *const f32, n) };
        let head = self.head.load(Ordering::Relaxed);
        self.cycle_ns.store(monotonic_ns(), Ordering::Relaxed);
        self.cycle_head.store(head, Ordering::Relaxed);
        if head + n as u64 - self.tail.load(Ordering::Acquire) > RING as u64 {
            self.overruns.fetch_add(n as u64, Ordering::Relaxed);
            return;
        }
        for (i, s) in inp.iter().enumerate() {
            self.ring[(head as usize + i) % RING].store(s.to_bits(), Ordering::Relaxed);
        }
        self.head.store(head + n as u64, Ordering::Release);
    }
}

fn fill(signal: &mut Signal, out: &mut [f32]) {
    match signal {
        Signal::Tone { step, phase, amp } => {
            for s in out {
                *s = *amp * (*phase * std::f64::consts::TAU).sin() as f32;
                *phase = (*phase + *step).fract();
            }
        }
        Signal::Noise { state, amp } => {
            for s in out {
                // xorshift32: cheap, allocation-free noise.
                *state ^= *state << 13;
                *state ^= *state >> 17;
                *state ^= *state << 5;
                *s = *amp * ((*state as f32 / u32::MAX as f32) * 2.0 - 1.0);
            }
        }
        Signal::Silence => {}
        Signal::Samples { data, pos } => {
            for s in out {
                *s = data.get(*pos).copied().unwrap_or(0.0);
                *pos += 1;
            }
        }
    }
}

struct AudioChannel {
    name: String,
    server: String,
    wav: PathBuf,
    /// Where a `wav` stimulus's `path` resolves, and stays.
    root: PathBuf,
    /// The agent let its `path` leave the project (`allowOutsideProject`).
    outside_ok: bool,
    shared: Arc<Shared>,
    client: Client,
}

impl ChannelKind for Audio {
    fn kind(&self) -> &'static str {
        "audio"
    }

    fn describe(&self) -> &'static str {
        "audio[:<jack client>] (JACK): send {type: tone|noise|silence|wav, frequency, amplitude, durationMs, path}; sees the program's output: rms, peak, frequency, silence, clipping per 4096-frame window, and a WAV"
    }

    fn stimulus_fields(&self) -> &'static [&'static str] {
        &FIELDS
    }

    fn open(
        &self,
        spec: &ChannelSpec,
        session: &SessionTarget,
    ) -> Result<OpenChannel, ChannelError> {
        let (name, program, server) = target("audio", spec, session);
        let shared = Arc::new(Shared {
            ring: (0..RING).map(|_| AtomicU32::new(0)).collect(),
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            overruns: AtomicU64::new(0),
            cycle_ns: AtomicU64::new(0),
            cycle_head: AtomicU64::new(0),
            playing: Mutex::new(None),
            observer: Observer::default(),
        });
        let client = Client::open(
            &server,
            &format!("strobe-audio-{}", std::process::id() % 100_000),
            &[
                PortSpec {
                    name: "to_program",
                    kind: AUDIO,
                    link: Link::ToInputs,
                },
                PortSpec {
                    name: "from_program",
                    kind: AUDIO,
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
        let file = name.replace(':', "-");
        let ch = Arc::new(AudioChannel {
            wav: session.data_dir.join(format!("{file}.wav")),
            root: session.project_root.clone(),
            outside_ok: session.outside_project,
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

impl AudioChannel {
    fn bad(&self, why: impl Into<String>) -> ChannelError {
        ChannelError::BadAction {
            channel: self.name.clone(),
            why: why.into(),
        }
    }

    fn signal(&self, action: &Value) -> Result<(Signal, u64, String), ChannelError> {
        let obj = action.as_object().ok_or_else(|| {
            self.bad("send an object: {type: tone, frequency: 440, durationMs: 500}")
        })?;
        for k in obj.keys() {
            if !FIELDS.contains(&k.as_str()) {
                return Err(self.bad(format!(
                    "unknown field {k:?}: audio takes {}",
                    FIELDS.join(", ")
                )));
            }
        }
        let rate = self.client.sample_rate.max(1);
        let amp = match obj.get("amplitude") {
            None => 0.5,
            Some(v) => v
                .as_f64()
                .filter(|a| (0.0..=1.0).contains(a))
                .ok_or_else(|| self.bad("'amplitude' is 0 to 1"))? as f32,
        };
        let duration_ms = match obj.get("durationMs") {
            None => 500,
            Some(v) => v
                .as_u64()
                .filter(|d| (1..=60_000).contains(d))
                .ok_or_else(|| self.bad("'durationMs' is 1 to 60000"))?,
        };
        let frames = duration_ms * u64::from(rate) / 1000;
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| self.bad("'type' is tone, noise, silence or wav"))?;
        Ok(match kind {
            "tone" => {
                let f = obj
                    .get("frequency")
                    .and_then(Value::as_f64)
                    .filter(|f| *f > 0.0 && *f < f64::from(rate) / 2.0)
                    .ok_or_else(|| {
                        self.bad(format!(
                            "'frequency' is in Hz, above 0 and below {}",
                            rate / 2
                        ))
                    })?;
                (
                    Signal::Tone {
                        step: f / f64::from(rate),
                        phase: 0.0,
                        amp,
                    },
                    frames,
                    format!("tone {f} Hz at {amp} for {duration_ms} ms"),
                )
            }
            "noise" => (
                Signal::Noise {
                    state: 0x9E37_79B9,
                    amp,
                },
                frames,
                format!("noise at {amp} for {duration_ms} ms"),
            ),
            "silence" => (
                Signal::Silence,
                frames,
                format!("silence for {duration_ms} ms"),
            ),
            "wav" => {
                let path = obj
                    .get("path")
                    .and_then(Value::as_str)
                    .ok_or_else(|| self.bad("'wav' needs 'path'"))?;
                let bytes = read_file(&self.root, path, self.outside_ok, &self.name, MAX_WAV)
                    .map_err(|e| self.bad(e))?;
                let data = read_wav(&bytes).map_err(|e| self.bad(format!("{path}: {e}")))?;
                let n = data.len() as u64;
                (
                    Signal::Samples { data, pos: 0 },
                    n,
                    format!("{path} ({n} frames)"),
                )
            }
            other => {
                return Err(self.bad(format!(
                    "'type' {other:?} is not tone, noise, silence or wav"
                )));
            }
        })
    }
}

impl InputChannel for Arc<AudioChannel> {
    fn name(&self) -> &str {
        &self.name
    }

    fn preview(&self, action: &Value) -> String {
        match self.signal(action) {
            Ok((_, _, what)) => format!("play {what}"),
            Err(_) => action.to_string(),
        }
    }

    fn send(&self, action: &Value) -> Result<Value, ChannelError> {
        let (signal, frames, what) = self.signal(action)?;
        *self.shared.playing.lock().expect("playing lock") = Some(Playing {
            signal,
            frames_left: frames,
        });
        let linked = self.client.linked.lock().expect("linked lock").clone();
        let mut summary = format!("playing {what}");
        if !linked.iter().any(|p| !p.is_empty()) {
            summary.push_str(&format!(
                " (no audio port of the program is linked yet on JACK server {:?})",
                self.server
            ));
        }
        Ok(
            json!({"frames": frames, "linked": linked, "xruns": self.client.xruns.total(), "summary": summary}),
        )
    }
}

impl OutputChannel for Arc<AudioChannel> {
    fn name(&self) -> &str {
        &self.name
    }

    fn start_capture(&self, sink: Arc<dyn ObservationSink>) -> Result<(), ChannelError> {
        let me = self.clone();
        self.shared
            .observer
            .start(&self.name, sink, move || me.analyse())
    }

    fn stop_capture(&self) -> Result<(), ChannelError> {
        self.shared.observer.stop();
        Ok(())
    }
}

impl AudioChannel {
    /// The analysis loop: windows measured, events for sound and for the
    /// start of silence, the WAV written.
    fn analyse(&self) {
        let rate = self.client.sample_rate.max(1);
        let mut wav = Wav::create(&self.wav, rate).ok();
        let mut window: Vec<f32> = Vec::with_capacity(WINDOW);
        let mut was_silent = true;
        let mut first = true;
        let mut reported_overruns = 0;
        while !self.shared.observer.stopped() {
            std::thread::sleep(READ_EVERY);
            let head = self.shared.head.load(Ordering::Acquire);
            if !self.client.capture_linked.load(Ordering::Acquire) {
                // No output of the program reaches ours yet: what arrives
                // is JACK's silence, not the program's. Reporting it would
                // let a wait for silence pass before the program is heard.
                self.shared.tail.store(head, Ordering::Release);
                continue;
            }
            let mut tail = self.shared.tail.load(Ordering::Relaxed);
            while tail < head {
                let s =
                    f32::from_bits(self.shared.ring[tail as usize % RING].load(Ordering::Relaxed));
                window.push(s);
                tail += 1;
                if window.len() == WINDOW {
                    if let Some(w) = wav.as_mut() {
                        w.write(&window);
                    }
                    let m = measure(&window, rate);
                    // The window ended at frame `tail`: its time from the last cycle's.
                    let cycle_ns = self.shared.cycle_ns.load(Ordering::Relaxed);
                    let cycle_head = self.shared.cycle_head.load(Ordering::Relaxed);
                    let back = (cycle_head as i64 - tail as i64) * 1_000_000_000 / i64::from(rate);
                    let at = (cycle_ns as i64 - back).max(0) as u64;
                    let silent = m.rms < SILENCE_RMS;
                    if !silent || (!was_silent || first) {
                        self.observe(Some(at), &m, silent);
                    }
                    was_silent = silent;
                    first = false;
                    window.clear();
                }
            }
            self.shared.tail.store(tail, Ordering::Release);
            let overruns = self.shared.overruns.load(Ordering::Relaxed);
            if overruns > reported_overruns {
                self.note(format!(
                    "{} captured frame(s) lost: the analysis fell behind",
                    overruns - reported_overruns
                ));
                reported_overruns = overruns;
            }
            if let Some(x) = self.client.xruns.take_new() {
                self.observe_xruns(x);
            }
        }
        if let Some(w) = wav.as_mut() {
            w.finish();
        }
    }

    fn observe(&self, at: Option<u64>, m: &Measure, silent: bool) {
        let Some(sink) = self.shared.observer.sink() else {
            return;
        };
        let xruns = self.client.xruns.total();
        let summary = if silent {
            "silence".to_string()
        } else {
            format!(
                "rms {:.4}, peak {:.3}, {:.1} Hz{}",
                m.rms,
                m.peak,
                m.frequency,
                if m.peak >= CLIP_PEAK {
                    ", CLIPPING"
                } else {
                    ""
                }
            )
        };
        sink.observe(Observation {
            channel: self.name.clone(),
            at_ns: at,
            data: json!({
                "dir": "seen", "rms": m.rms, "peak": m.peak, "frequency": m.frequency,
                "silence": silent, "clipping": m.peak >= CLIP_PEAK, "frames": WINDOW,
                "xruns": xruns, "wav": self.wav, "summary": summary,
            }),
        });
    }

    /// Late JACK cycles as an event of their own, when JACK reported the
    /// last: beside the traced calls of that moment on the timeline.
    fn observe_xruns(&self, x: NewXruns) {
        if let Some(sink) = self.shared.observer.sink() {
            sink.observe(Observation {
                channel: self.name.clone(),
                at_ns: Some(x.last_ns),
                data: x.event(),
            });
        }
    }

    fn note(&self, text: String) {
        if let Some(sink) = self.shared.observer.sink() {
            sink.observe(Observation {
                channel: self.name.clone(),
                at_ns: None,
                data: json!({"dir": "seen", "summary": text}),
            });
        }
    }
}

/// One window's measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measure {
    /// Root mean square, 0..1.
    pub rms: f32,
    /// Largest absolute sample.
    pub peak: f32,
    /// The dominant frequency, Hz (0 for silence).
    pub frequency: f32,
}

/// RMS, peak and the dominant frequency (Hann-windowed FFT, the peak bin
/// refined by parabolic interpolation) of `samples` (a power of two long).
pub fn measure(samples: &[f32], rate: u32) -> Measure {
    let n = samples.len();
    let rms = (samples.iter().map(|s| s * s).sum::<f32>() / n.max(1) as f32).sqrt();
    let peak = samples.iter().fold(0f32, |m, s| m.max(s.abs()));
    if rms < SILENCE_RMS || !n.is_power_of_two() {
        return Measure {
            rms,
            peak,
            frequency: 0.0,
        };
    }
    let mut re: Vec<f64> = samples
        .iter()
        .enumerate()
        .map(|(i, s)| {
            f64::from(*s) * (0.5 - 0.5 * (std::f64::consts::TAU * i as f64 / n as f64).cos())
        })
        .collect();
    let mut im = vec![0f64; n];
    fft(&mut re, &mut im);
    let mag: Vec<f64> = (0..n / 2)
        .map(|k| (re[k] * re[k] + im[k] * im[k]).sqrt())
        .collect();
    let k = (1..n / 2)
        .max_by(|a, b| mag[*a].total_cmp(&mag[*b]))
        .unwrap_or(1);
    let (a, b, c) = (mag[k - 1], mag[k], mag.get(k + 1).copied().unwrap_or(0.0));
    let denom = a - 2.0 * b + c;
    let shift = if denom.abs() > f64::EPSILON {
        0.5 * (a - c) / denom
    } else {
        0.0
    };
    let frequency = ((k as f64 + shift) * f64::from(rate) / n as f64) as f32;
    Measure {
        rms,
        peak,
        frequency,
    }
}

/// In-place iterative radix-2 FFT.
fn fft(re: &mut [f64], im: &mut [f64]) {
    let n = re.len();
    let mut j = 0;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            re.swap(i, j);
            im.swap(i, j);
        }
    }
    let mut len = 2;
    while len <= n {
        let angle = -std::f64::consts::TAU / len as f64;
        for start in (0..n).step_by(len) {
            for k in 0..len / 2 {
                let (w_re, w_im) = ((angle * k as f64).cos(), (angle * k as f64).sin());
                let (a, b) = (start + k, start + k + len / 2);
                let t_re = re[b] * w_re - im[b] * w_im;
                let t_im = re[b] * w_im + im[b] * w_re;
                re[b] = re[a] - t_re;
                im[b] = im[a] - t_im;
                re[a] += t_re;
                im[a] += t_im;
            }
        }
        len <<= 1;
    }
}

/// A 32-bit float mono WAV being written; its sizes are fixed on finish.
struct Wav {
    file: std::fs::File,
    frames: u32,
    max_frames: u32,
}

impl Wav {
    fn create(path: &std::path::Path, rate: u32) -> std::io::Result<Wav> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::File::create(path)?;
        file.write_all(&wav_header(rate, 0))?;
        Ok(Wav {
            file,
            frames: 0,
            max_frames: rate * MAX_WAV_SECONDS,
        })
    }

    fn write(&mut self, samples: &[f32]) {
        let room = self.max_frames.saturating_sub(self.frames) as usize;
        let take = samples.len().min(room);
        let bytes: Vec<u8> = samples[..take]
            .iter()
            .flat_map(|s| s.to_le_bytes())
            .collect();
        if self.file.write_all(&bytes).is_ok() {
            self.frames += take as u32;
        }
    }

    fn finish(&mut self) {
        if self.file.seek(SeekFrom::Start(4)).is_ok() {
            let data = self.frames * 4;
            let _ = self.file.write_all(&(36 + data).to_le_bytes());
            let _ = self.file.seek(SeekFrom::Start(40));
            let _ = self.file.write_all(&data.to_le_bytes());
        }
    }
}

/// A 44-byte WAV header: IEEE float, mono, 32 bits.
fn wav_header(rate: u32, frames: u32) -> Vec<u8> {
    let data = frames * 4;
    let mut h = Vec::with_capacity(44);
    h.extend_from_slice(b"RIFF");
    h.extend_from_slice(&(36 + data).to_le_bytes());
    h.extend_from_slice(b"WAVEfmt ");
    h.extend_from_slice(&16u32.to_le_bytes());
    h.extend_from_slice(&3u16.to_le_bytes()); // IEEE float
    h.extend_from_slice(&1u16.to_le_bytes()); // mono
    h.extend_from_slice(&rate.to_le_bytes());
    h.extend_from_slice(&(rate * 4).to_le_bytes());
    h.extend_from_slice(&4u16.to_le_bytes());
    h.extend_from_slice(&32u16.to_le_bytes());
    h.extend_from_slice(b"data");
    h.extend_from_slice(&data.to_le_bytes());
    h
}

/// A mono (or the first channel of a) 16-bit PCM or 32-bit float WAV's
/// samples.
fn read_wav(b: &[u8]) -> Result<Vec<f32>, String> {
    if b.len() < 12 || &b[0..4] != b"RIFF" || &b[8..12] != b"WAVE" {
        return Err("not a WAV file".into());
    }
    let (mut format, mut channels, mut bits, mut at) = (0u16, 1u16, 0u16, 12usize);
    while at + 8 <= b.len() {
        let id = &b[at..at + 4];
        let size = u32::from_le_bytes(b[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
        let body = &b[at + 8..(at + 8 + size).min(b.len())];
        if id == b"fmt " && body.len() >= 16 {
            format = u16::from_le_bytes([body[0], body[1]]);
            channels = u16::from_le_bytes([body[2], body[3]]).max(1);
            bits = u16::from_le_bytes([body[14], body[15]]);
        } else if id == b"data" {
            let step = usize::from(bits / 8) * usize::from(channels);
            return match (format, bits) {
                (1, 16) => Ok(body
                    .chunks_exact(step)
                    .map(|f| f32::from(i16::from_le_bytes([f[0], f[1]])) / 32768.0)
                    .collect()),
                (3, 32) => Ok(body
                    .chunks_exact(step)
                    .map(|f| f32::from_le_bytes([f[0], f[1], f[2], f[3]]))
                    .collect()),
                _ => Err(format!(
                    "format {format} with {bits} bits: only 16-bit PCM and 32-bit float are read"
                )),
            };
        }
        at += 8 + size + (size & 1);
    }
    Err("no data chunk".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tone(f: f32, amp: f32, rate: u32) -> Vec<f32> {
        (0..WINDOW)
            .map(|i| amp * (std::f32::consts::TAU * f * i as f32 / rate as f32).sin())
            .collect()
    }

    #[test]
    fn a_tone_is_measured_and_silence_is_silent() {
        let m = measure(&tone(440.0, 0.5, 48_000), 48_000);
        assert!((m.frequency - 440.0).abs() < 2.0, "{m:?}");
        assert!((m.rms - 0.5 / 2f32.sqrt()).abs() < 0.01, "{m:?}");
        assert!((m.peak - 0.5).abs() < 0.01, "{m:?}");
        let m = measure(&tone(1234.0, 0.2, 44_100), 44_100);
        assert!((m.frequency - 1234.0).abs() < 3.0, "{m:?}");
        let m = measure(&vec![0.0; WINDOW], 48_000);
        assert!(m.rms < SILENCE_RMS && m.frequency == 0.0, "{m:?}");
    }

    #[test]
    fn a_written_wav_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.wav");
        let mut w = Wav::create(&path, 48_000).unwrap();
        let t = tone(440.0, 0.5, 48_000);
        w.write(&t);
        w.finish();
        drop(w);
        let back = read_wav(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(back, t);
    }
}
