//! `strobe-vision --ort LIB --det MODEL --rec MODEL`: the sidecar process
//! (see the library's docs and `protocol.rs`).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;
use strobe_vision::Pipeline;
use strobe_vision::protocol::Request;

fn arg(args: &[String], name: &str) -> Option<PathBuf> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
}

fn say(out: &mut impl Write, v: &serde_json::Value) {
    // The daemon reads lines: a write that fails means it is gone.
    if writeln!(out, "{v}").and_then(|()| out.flush()).is_err() {
        std::process::exit(0);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut out = std::io::stdout().lock();
    let (Some(ort), Some(det), Some(rec)) = (
        arg(&args, "--ort"),
        arg(&args, "--det"),
        arg(&args, "--rec"),
    ) else {
        say(
            &mut out,
            &json!({"fatal": "usage: strobe-vision --ort LIBONNXRUNTIME --det DET.onnx --rec REC.onnx"}),
        );
        std::process::exit(2);
    };
    let started = Instant::now();
    let mut pipeline = match Pipeline::load(&ort, &det, &rec) {
        Ok(p) => p,
        Err(e) => {
            say(&mut out, &json!({"fatal": e.to_string()}));
            std::process::exit(1);
        }
    };
    say(
        &mut out,
        &json!({"ready": true, "loadMs": started.elapsed().as_secs_f64() * 1e3}),
    );
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Request>(&line) {
            Err(e) => json!({"error": format!("not a request: {e}")}),
            Ok(req) => match pipeline.analyze(std::path::Path::new(&req.image), req.min_confidence)
            {
                Ok((found, timings)) => json!({"id": req.id, "found": found, "timings": timings}),
                Err(e) => json!({"id": req.id, "error": e.to_string()}),
            },
        };
        say(&mut out, &answer);
    }
}
