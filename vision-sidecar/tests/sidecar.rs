//! The sidecar process as the daemon drives it: the real binary, the real
//! onnxruntime and PP-OCR models from Strobe's venv (`STROBE_VENV`, which
//! `strobe setup` fills), an image with known text rendered by cairo, and
//! the protocol's errors.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use serde_json::{Value, json};

const SIDECAR: &str = env!("CARGO_BIN_EXE_strobe-vision");

fn site_packages() -> PathBuf {
    let venv = std::env::var_os("STROBE_VENV")
        .map(PathBuf::from)
        .expect("STROBE_VENV names Strobe's venv (run the suite with ./dev test)");
    std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .expect("the venv has site-packages")
}

fn runtime() -> PathBuf {
    let capi = site_packages().join("onnxruntime/capi");
    std::fs::read_dir(&capi)
        .unwrap_or_else(|e| panic!("{}: {e}: run strobe setup", capi.display()))
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("libonnxruntime.so")
        })
        .expect("libonnxruntime.so in the venv: run strobe setup")
}

fn model(suffix: &str) -> PathBuf {
    let dir = site_packages().join("rapidocr/models");
    std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(suffix))
        .unwrap_or_else(|| panic!("no *{suffix} in {}", dir.display()))
}

struct Sidecar {
    child: Child,
    stdin: ChildStdin,
    out: BufReader<std::process::ChildStdout>,
}

impl Sidecar {
    fn start(args: &[&Path]) -> Sidecar {
        let mut cmd = Command::new(SIDECAR);
        for (flag, a) in ["--ort", "--det", "--rec"].iter().zip(args) {
            cmd.arg(flag).arg(a);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Sidecar { child, stdin, out }
    }

    fn line(&mut self) -> Value {
        let mut l = String::new();
        self.out.read_line(&mut l).unwrap();
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l:?}"))
    }

    fn ask(&mut self, request: &str) -> Value {
        writeln!(self.stdin, "{request}").unwrap();
        self.line()
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A 360x120 PNG with "Strobe 42" in black on white and a ring, drawn by
/// cairo (Debian's python3-gi-cairo, which ./dev installs for the GUI
/// tests).
fn picture(path: &Path) {
    let script = format!(
        "import cairo, math\n\
         s = cairo.ImageSurface(cairo.FORMAT_RGB24, 360, 120)\n\
         c = cairo.Context(s)\n\
         c.set_source_rgb(1, 1, 1); c.paint()\n\
         c.set_source_rgb(0, 0, 0); c.select_font_face('Sans'); c.set_font_size(28)\n\
         c.move_to(20, 70); c.show_text('Strobe 42')\n\
         c.new_sub_path(); c.set_line_width(4); c.arc(290, 60, 35, 0, 2 * math.pi); c.stroke()\n\
         s.write_to_png({:?})\n",
        path.to_str().unwrap()
    );
    let ok = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .status()
        .unwrap();
    assert!(
        ok.success(),
        "cairo could not draw the picture (python3-gi-cairo)"
    );
}

#[test]
fn text_and_a_ring_are_found_and_bad_requests_are_answered() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("picture.png");
    picture(&png);
    let (ort, det, rec) = (
        runtime(),
        model("_det_small.onnx"),
        model("_rec_small.onnx"),
    );
    let mut s = Sidecar::start(&[&ort, &det, &rec]);
    let ready = s.line();
    assert_eq!(ready["ready"], true, "{ready}");

    let a = s.ask(&json!({"id": 7, "image": png, "minConfidence": 0.3}).to_string());
    assert_eq!(a["id"], 7);
    let found = a["found"].as_array().unwrap_or_else(|| panic!("{a}"));
    let text = found
        .iter()
        .find(|f| f["kind"] == "text")
        .unwrap_or_else(|| panic!("{a}"));
    assert_eq!(text["text"], "Strobe 42", "{a}");
    assert!(
        text["x"].as_u64().unwrap() < 30 && text["width"].as_u64().unwrap() > 100,
        "{text}"
    );
    let ring = found
        .iter()
        .find(|f| f["kind"] == "knob")
        .unwrap_or_else(|| panic!("{a}"));
    assert!((ring["x"].as_i64().unwrap() - 253).abs() <= 4, "{ring}");
    assert!(a["timings"]["detectMs"].as_f64().unwrap() > 0.0);

    // Errors name what was wrong; the sidecar goes on.
    let e = s.ask(&json!({"id": 8, "image": dir.path().join("absent.png")}).to_string());
    assert!(e["error"].as_str().unwrap().contains("absent.png"), "{e}");
    let e = s.ask("not json");
    assert!(
        e["error"].as_str().unwrap().contains("not a request"),
        "{e}"
    );
    let again = s.ask(&json!({"id": 9, "image": png}).to_string());
    assert_eq!(again["id"], 9);

    // Without onnxruntime it says so and exits.
    let mut broken = Sidecar::start(&[&dir.path().join("libonnxruntime.so"), &det, &rec]);
    let fatal = broken.line();
    assert!(
        fatal["fatal"].as_str().unwrap().contains("onnxruntime"),
        "{fatal}"
    );
    assert!(!broken.child.wait().unwrap().success());
}
