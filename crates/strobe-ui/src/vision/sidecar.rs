//! The `strobe-vision` sidecar as a [`VisionModel`]: started on the first
//! request, spoken to over its stdin/stdout (one JSON object a line; the
//! protocol is documented in `vision-sidecar/src/protocol.rs`), and
//! stopped after `vision.sidecarIdleTimeoutSeconds` unused.
//!
//! What it needs is found, never downloaded: the `strobe-vision` program
//! beside the running `strobe` (or `STROBE_VISION_SIDECAR`), and in
//! Strobe's venv the onnxruntime library of the PyPI `onnxruntime` wheel and
//! the PP-OCR models of the PyPI `rapidocr` wheel, which `strobe setup`
//! installs, pinned.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{VisionBox, VisionError, VisionModel};
use crate::Bounds;

/// How long the sidecar may take to load its models.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one image may take.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the sidecar and what it loads are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SidecarConfig {
    /// The `strobe-vision` program.
    pub program: PathBuf,
    /// `libonnxruntime.so`.
    pub runtime: PathBuf,
    /// The text detection model.
    pub detector: PathBuf,
    /// The text recognition model.
    pub recognizer: PathBuf,
}

/// The fix for a missing piece, said the same way everywhere.
const SETUP_HINT: &str = "run `strobe setup` (it installs onnxruntime and rapidocr, pinned, into Strobe's venv; ./dev does it too)";

impl SidecarConfig {
    /// Finds everything: the program beside `strobe` (or `program`), the
    /// runtime and models in the venv at `venv`.
    pub fn locate(venv: &Path, program: Option<PathBuf>) -> Result<SidecarConfig, VisionError> {
        let program = match program {
            Some(p) => p,
            None => std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(|d| d.join("strobe-vision")))
                .unwrap_or_else(|| PathBuf::from("strobe-vision")),
        };
        if !program.is_file() {
            return Err(VisionError::NotInstalled(format!(
                "the vision sidecar {} is not built: build it with `cargo build --release -p strobe-vision` (./dev run does), or point STROBE_VISION_SIDECAR at it",
                program.display()
            )));
        }
        let site = site_packages(venv).ok_or_else(|| {
            VisionError::NotInstalled(format!(
                "Strobe's venv {} has no site-packages: {SETUP_HINT}",
                venv.display()
            ))
        })?;
        let capi = site.join("onnxruntime").join("capi");
        let runtime =
            last_file(&capi, |n| n.starts_with("libonnxruntime.so")).ok_or_else(|| {
                VisionError::NotInstalled(format!(
                    "vision needs onnxruntime, and {} has no libonnxruntime.so: {SETUP_HINT}",
                    capi.display()
                ))
            })?;
        let models = site.join("rapidocr").join("models");
        let model = |suffix: &str| {
            last_file(&models, |n| n.starts_with("PP-OCR") && n.ends_with(suffix)).ok_or_else(|| {
                VisionError::NotInstalled(format!(
                    "vision needs the PP-OCR models of the rapidocr package, and {} has no *{suffix}: {SETUP_HINT}",
                    models.display()
                ))
            })
        };
        Ok(SidecarConfig {
            program,
            runtime,
            detector: model("_det_small.onnx")?,
            recognizer: model("_rec_small.onnx")?,
        })
    }
}

/// The last (by name: the newest version) file of `dir` whose name passes
/// `wanted`.
fn last_file(dir: &Path, wanted: impl Fn(&str) -> bool) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&wanted))
        .max()
}

/// `<venv>/lib/python3.*/site-packages`.
fn site_packages(venv: &Path) -> Option<PathBuf> {
    std::fs::read_dir(venv.join("lib"))
        .ok()?
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
    last_used: Instant,
}

impl Running {
    fn stop(mut self) {
        drop(self.stdin); // it exits when its stdin closes
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sidecar, started on demand.
pub struct Sidecar {
    config: SidecarConfig,
    idle_timeout: Duration,
    running: Arc<Mutex<Option<Running>>>,
}

impl Sidecar {
    /// A sidecar that is started by its first request and stops after
    /// `idle_timeout` unused.
    pub fn new(config: SidecarConfig, idle_timeout: Duration) -> Sidecar {
        Sidecar {
            config,
            idle_timeout,
            running: Arc::new(Mutex::new(None)),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &SidecarConfig {
        &self.config
    }

    /// Sets how long it may stay unused.
    pub fn set_idle_timeout(&mut self, t: Duration) {
        self.idle_timeout = t;
    }

    fn start(&self) -> Result<Running, VisionError> {
        let c = &self.config;
        let mut child = Command::new(&c.program)
            .arg("--ort")
            .arg(&c.runtime)
            .arg("--det")
            .arg(&c.detector)
            .arg("--rec")
            .arg(&c.recognizer)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                VisionError::Failed(format!("cannot start {}: {e}", c.program.display()))
            })?;
        let stdout = child.stdout.take().expect("piped");
        let stdin = child.stdin.take().expect("piped");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("strobe-vision-out".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| VisionError::Failed(e.to_string()))?;
        let running = Running {
            child,
            stdin,
            lines,
            next_id: 1,
            last_used: Instant::now(),
        };
        let first = match running.lines.recv_timeout(START_TIMEOUT) {
            Ok(l) => l,
            Err(_) => {
                running.stop();
                return Err(VisionError::Failed(format!(
                    "it did not load its models within {} s",
                    START_TIMEOUT.as_secs()
                )));
            }
        };
        let v: Value = serde_json::from_str(&first).unwrap_or(Value::Null);
        if v["ready"] != true {
            running.stop();
            let why = v["fatal"].as_str().unwrap_or(&first).to_string();
            return Err(if why.contains("onnxruntime") || why.contains("model") {
                VisionError::NotInstalled(format!("{why}: {SETUP_HINT}"))
            } else {
                VisionError::Failed(why)
            });
        }
        self.watch_idle();
        Ok(running)
    }

    /// Stops the process once it has been unused for the idle timeout.
    fn watch_idle(&self) {
        let running = Arc::downgrade(&self.running);
        let idle = self.idle_timeout;
        let _ = std::thread::Builder::new()
            .name("strobe-vision-idle".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(idle.min(Duration::from_secs(1)));
                    let Some(running) = running.upgrade() else {
                        return;
                    };
                    let mut guard = running.lock().unwrap();
                    match guard.as_ref() {
                        None => return,
                        Some(r) if r.last_used.elapsed() >= idle => {
                            if let Some(r) = guard.take() {
                                drop(guard);
                                r.stop();
                            }
                            return;
                        }
                        Some(_) => {}
                    }
                }
            });
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        if let Some(r) = self.running.lock().unwrap().take() {
            r.stop();
        }
    }
}

impl VisionModel for Sidecar {
    fn name(&self) -> &'static str {
        "sidecar"
    }

    fn analyze(&mut self, png: &Path, min_confidence: f32) -> Result<Vec<VisionBox>, VisionError> {
        let mut guard = self.running.lock().unwrap();
        if guard.is_none() {
            *guard = Some(self.start()?);
        }
        let r = guard.as_mut().expect("started");
        let id = r.next_id;
        r.next_id += 1;
        r.last_used = Instant::now();
        let request = json!({"id": id, "image": png, "minConfidence": min_confidence});
        let sent = writeln!(r.stdin, "{request}").and_then(|()| r.stdin.flush());
        let answer = match sent {
            Ok(()) => r.lines.recv_timeout(ANSWER_TIMEOUT),
            Err(_) => Err(RecvTimeoutError::Disconnected),
        };
        r.last_used = Instant::now();
        let line = match answer {
            Ok(l) => l,
            Err(e) => {
                // Gone or stuck: the next request starts a new one.
                if let Some(r) = guard.take() {
                    r.stop();
                }
                return Err(VisionError::Failed(match e {
                    RecvTimeoutError::Timeout => {
                        format!("no answer within {} s", ANSWER_TIMEOUT.as_secs())
                    }
                    RecvTimeoutError::Disconnected => "it exited".into(),
                }));
            }
        };
        parse_answer(&line, id)
    }
}

fn parse_answer(line: &str, id: u64) -> Result<Vec<VisionBox>, VisionError> {
    let v: Value = serde_json::from_str(line)
        .map_err(|e| VisionError::Failed(format!("unreadable answer ({e}): {line}")))?;
    if v["id"] != id {
        return Err(VisionError::Failed(format!(
            "an answer to another request: {line}"
        )));
    }
    if let Some(e) = v["error"].as_str() {
        return Err(VisionError::Failed(e.to_string()));
    }
    let found = v["found"]
        .as_array()
        .ok_or_else(|| VisionError::Failed(format!("an answer without results: {line}")))?;
    Ok(found
        .iter()
        .filter_map(|f| {
            let n = |k: &str| f[k].as_u64();
            Some(VisionBox {
                bounds: Bounds {
                    x: n("x")? as i32,
                    y: n("y")? as i32,
                    width: n("width")? as u32,
                    height: n("height")? as u32,
                },
                kind: f["kind"].as_str()?.to_string(),
                confidence: f["confidence"].as_f64()? as f32,
                text: f["text"].as_str().map(str::to_string),
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_and_refused_when_they_are_not_ours() {
        let line = r#"{"id":3,"found":[{"x":1,"y":2,"width":3,"height":4,"kind":"text","confidence":0.9,"text":"Play"},{"x":5,"y":6,"width":7,"height":8,"kind":"knob","confidence":0.8}],"timings":{}}"#;
        let boxes = parse_answer(line, 3).unwrap();
        assert_eq!(boxes.len(), 2);
        assert_eq!(boxes[0].text.as_deref(), Some("Play"));
        assert_eq!(
            boxes[1].bounds,
            Bounds {
                x: 5,
                y: 6,
                width: 7,
                height: 8
            }
        );
        assert!(parse_answer(line, 4).is_err());
        let e = parse_answer(r#"{"id":1,"error":"cannot read the image"}"#, 1).unwrap_err();
        assert!(e.to_string().contains("cannot read the image"));
    }

    #[test]
    fn what_is_missing_is_named_with_its_fix() {
        let dir = std::env::temp_dir().join(format!("strobe-vision-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("lib/python3.11/site-packages")).unwrap();
        let program = dir.join("strobe-vision");
        std::fs::write(&program, "").unwrap();
        let e = SidecarConfig::locate(&dir, Some(program.clone()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no libonnxruntime.so") && e.contains("strobe setup"),
            "{e}"
        );
        let e = SidecarConfig::locate(&dir, Some(dir.join("absent")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cargo build --release -p strobe-vision"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
