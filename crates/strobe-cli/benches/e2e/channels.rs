//! I/O channels and scenarios (issue 23), each beside a baseline in the
//! same run:
//!
//! - step overhead: a scenario's `do stdio.send` step and a (true) `assert`
//!   step, beside the same stimulus sent by one `debug_channel` call;
//! - `wait.until` wake-up: from the matching stdout event's timestamp to
//!   the wait step's end (session clock), and an iteration of send + wait
//!   beside an agent's send + `debug_query` polling every 20 ms;
//! - MIDI note-on → the synth's traced `Synth::note_on`, against one JACK
//!   period (256 frames at 48 kHz);
//! - xruns while the audio channel captures at 256 frames / 48 kHz, with
//!   the synth's process callback traced and without.

use serde_json::{Value, json};
use std::time::{Duration, Instant};

use crate::{median, percentile, support};

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

async fn wait_line(c: &support::Client, id: &str, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !c.stdout_lines(id).await.iter().any(|l| l.contains(text)) {
        assert!(Instant::now() < deadline, "no {text:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn run(c: &support::Client, id: &str, steps: Value) -> Value {
    let r = c
        .reply(
            "debug_test_scenario",
            json!({"sessionId": id, "scenario": {"steps": steps}}),
        )
        .await;
    assert!(!r.is_error && r.value["passed"] == true, "{}", r.text);
    r.value
}

fn step_ms(report: &Value, text_has: &str) -> Vec<f64> {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["text"].as_str().unwrap().contains(text_has))
        .map(|s| s["elapsedMs"].as_f64().unwrap())
        .collect()
}

/// Every event of `kind` as (id, ts ns, event).
async fn timeline(c: &support::Client, id: &str, kind: &str) -> Vec<(u64, u64, Value)> {
    c.events(id, Some(kind))
        .await
        .into_iter()
        .map(|e| {
            (
                e["id"].as_u64().unwrap(),
                e["timestampNs"].as_u64().unwrap(),
                e,
            )
        })
        .collect()
}

pub async fn channels(c: &support::Client, runs: usize) {
    let n = runs.max(20);
    stdio_steps(c, n).await;
    jack_latency(c, n).await;
}

async fn stdio_steps(c: &support::Client, n: usize) {
    let exe = support::fixture("repl");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap(), "stdin": "pipe"}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    wait_line(c, &id, "ready").await;

    // Baseline: the stimulus as one debug_channel call over MCP.
    let mut direct = Vec::new();
    for i in 0..n {
        let t = Instant::now();
        c.ok(
            "debug_channel",
            json!({"sessionId": id, "action": "send", "channel": "stdio", "data": {"line": format!("add {i} 0")}}),
        )
        .await;
        direct.push(ms(t));
    }
    // The same as scenario steps, and true asserts (each settles the session).
    let mut steps = Vec::new();
    for i in 0..n {
        steps.push(json!({"do": "stdio.send", "line": format!("mul {i} 1")}));
        steps.push(json!({"assert": "stdout", "contains": "ready", "since": "start"}));
    }
    let report = run(c, &id, json!(steps)).await;
    let dos = step_ms(&report, "\"do\"");
    let asserts = step_ms(&report, "\"assert\"");
    println!("scenario step overhead ({n} steps each, median / p95)");
    println!(
        "  do stdio.send step:                 {:>7.2} / {:>7.2} ms",
        median(dos.clone()),
        percentile(dos.clone(), 0.95)
    );
    println!(
        "  assert step (settle + query):       {:>7.2} / {:>7.2} ms",
        median(asserts.clone()),
        percentile(asserts, 0.95)
    );
    println!(
        "  baseline debug_channel send (MCP):  {:>7.2} / {:>7.2} ms",
        median(direct.clone()),
        percentile(direct.clone(), 0.95)
    );
    println!(
        "  ratio do step / MCP call:           {:>7.2}x",
        median(dos) / median(direct)
    );

    // wait.until: from the matching line's timestamp to the step's end.
    let mut steps = Vec::new();
    for i in 0..n {
        let a = 1000 + i;
        steps.push(json!({"do": "stdio.send", "line": format!("add {a} {a}")}));
        steps.push(json!({"wait": {"until": {"assert": "stdout", "contains": format!("= {}", 2 * a)}, "timeoutMs": 5000}}));
    }
    let t = Instant::now();
    run(c, &id, json!(steps)).await;
    let scenario_iter = ms(t) / n as f64;
    let outs = timeline(c, &id, "stdout").await;
    let waits: Vec<(u64, u64, Value)> = timeline(c, &id, "scenario_step")
        .await
        .into_iter()
        .filter(|(_, _, e)| e["text"].as_str().unwrap_or("").contains("until"))
        .collect();
    let mut wake = Vec::new();
    for (i, (_, end_ts, _)) in waits.iter().rev().take(n).enumerate() {
        let want = format!("= {}", 2 * (1000 + (n - 1 - i)));
        let line = outs
            .iter()
            .find(|(_, _, e)| e["text"] == want)
            .expect("the awaited line");
        wake.push((*end_ts as f64 - line.1 as f64) / 1e6);
    }
    // Baseline: the agent sends, then polls debug_query every 20 ms.
    let mut polled = Vec::new();
    for i in 0..n {
        let a = 5000 + i;
        let t = Instant::now();
        c.ok(
            "debug_channel",
            json!({"sessionId": id, "action": "send", "channel": "stdio", "data": {"line": format!("add {a} {a}")}}),
        )
        .await;
        loop {
            let q = c
                .ok(
                    "debug_query",
                    json!({"sessionId": id, "eventType": "stdout", "textContains": format!("= {}", 2 * a), "limit": 1}),
                )
                .await;
            if q["totalCount"].as_u64().unwrap() > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        polled.push(ms(t));
    }
    println!("wait.until wake-up ({n} waits)");
    println!(
        "  matching stdout event -> wait step done (session clock): median {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        median(wake.clone()),
        percentile(wake.clone(), 0.95),
        wake.iter().cloned().fold(0.0, f64::max)
    );
    println!(
        "  send + wait, per iteration: scenario {:.1} ms vs agent send + debug_query every 20 ms {:.1} ms (median): {:.2}x",
        scenario_iter,
        median(polled.clone()),
        scenario_iter / median(polled)
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

async fn jack_latency(c: &support::Client, n: usize) {
    let exe = support::compile_with("synth.cpp", "g++", &["-g", "-O0", "--", "-ljack", "-lm"]);
    // Nothing traced; the note-on handler only; it and the real-time
    // process callback (one call per JACK period). The cases take turns,
    // several rounds: xruns on this shared VM come in bursts when the host
    // stalls it (steal time), so one case's count alone says little.
    let cases: [&[&str]; 3] = [&[], &["Synth::note_on"], &["Synth::note_on", "process"]];
    let rounds: usize = std::env::var("STROBE_BENCH_JACK_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut totals = vec![Vec::new(); cases.len()];
    for round in 1..=rounds {
        println!("JACK round {round} of {rounds}");
        for (i, patterns) in cases.iter().enumerate() {
            let steal = steal_ms();
            let xruns = jack_case(c, &exe, patterns, n).await;
            let steal = steal_ms() - steal;
            println!("  host steal time during the case: {steal} ms");
            totals[i].push((xruns, steal));
        }
    }
    println!("xruns per round (host steal ms), 256 frames / 48 kHz:");
    for (patterns, t) in cases.iter().zip(&totals) {
        let name = if patterns.is_empty() {
            "nothing traced".to_string()
        } else {
            patterns.join(" and ") + " traced"
        };
        let per: Vec<String> = t.iter().map(|(x, s)| format!("{x} ({s})")).collect();
        println!("  {name}: {}", per.join(", "));
    }
}

/// Milliseconds the host took this VM's CPUs away, so far (/proc/stat).
fn steal_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: u64 = stat
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(8))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // /proc/stat counts in USER_HZ, 100 on Linux.
    ticks * 1000 / 100
}

/// One case: the synth launched with `patterns` traced, `n` notes, its
/// latencies and xruns printed; the xruns returned.
async fn jack_case(c: &support::Client, exe: &std::path::Path, patterns: &[&str], n: usize) -> u64 {
    let traced = !patterns.is_empty();
    if traced {
        c.ok("debug_trace", json!({"add": patterns})).await;
    }
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": ["0.01"], "projectRoot": exe.parent().unwrap(),
                       "jack": "auto", "channels": ["midi", "audio"]}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    wait_line(c, &id, "synth ready").await;
    let mut steps = vec![json!({"wait": 300})];
    for i in 0..n {
        let note = 48 + (i % 24) as u64;
        steps.push(json!({"do": "midi.send", "type": "noteOn", "note": note}));
        steps.push(json!({"wait": 150}));
        steps.push(json!({"do": "midi.send", "type": "noteOff", "note": note}));
        steps.push(json!({"wait": 100}));
    }
    let t = Instant::now();
    run(c, &id, json!(steps)).await;
    let seconds = t.elapsed().as_secs_f64();
    let audio = timeline(c, &id, "audio").await;
    let xruns = audio
        .iter()
        .filter_map(|(_, _, e)| e["xruns"].as_u64())
        .max()
        .unwrap_or(0);
    let windows = audio
        .iter()
        .filter(|(_, _, e)| e.get("rms").is_some())
        .count();
    xrun_report(c, &id, &audio, patterns.contains(&"process")).await;
    if traced {
        let sent: Vec<u64> = timeline(c, &id, "midi")
            .await
            .into_iter()
            .filter(|(_, _, e)| e["dir"] == "sent" && e["action"]["type"] == "noteOn")
            .map(|(_, ts, _)| ts)
            .collect();
        let calls: Vec<u64> = c
            .calls_of(&id, "function_enter", "Synth::note_on")
            .await
            .iter()
            .map(|e| e["timestampNs"].as_u64().unwrap())
            .collect();
        let lat: Vec<f64> = sent
            .iter()
            .filter_map(|s| {
                calls
                    .iter()
                    .find(|c| *c >= s)
                    .map(|c| (*c - s) as f64 / 1e6)
            })
            .collect();
        let period = 256.0 / 48_000.0 * 1e3;
        println!(
            "MIDI note-on sent -> Synth::note_on entered ({} notes)",
            lat.len()
        );
        println!(
            "  median {:.2} ms, p95 {:.2} ms, max {:.2} ms; one JACK period (256 frames at 48 kHz): {period:.2} ms; median / period {:.2}x",
            median(lat.clone()),
            percentile(lat.clone(), 0.95),
            lat.iter().cloned().fold(0.0, f64::max),
            median(lat) / period
        );
    }
    println!(
        "audio capture at 256 frames / 48 kHz, {} ({seconds:.1} s, {windows} windows measured): {xruns} xruns",
        if traced {
            format!("{} traced", patterns.join(" and "))
        } else {
            "nothing traced (baseline)".to_string()
        }
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    if traced {
        c.ok("debug_trace", json!({"remove": patterns})).await;
    }
    xruns
}

/// When each xrun was reported, from the scenario's start, with JACK's
/// delay; with `process` traced, its longest calls and the call before
/// each xrun (was the cycle itself slow, or did it start late?).
async fn xrun_report(
    c: &support::Client,
    id: &str,
    audio: &[(u64, u64, Value)],
    process_traced: bool,
) {
    let scenario_start = c
        .events(id, Some("scenario_step"))
        .await
        .first()
        .and_then(|e| e["timestampNs"].as_u64())
        .unwrap_or(0);
    let xruns: Vec<(u64, &Value)> = audio
        .iter()
        .filter(|(_, _, e)| e["xrun"] == true)
        .map(|(_, ts, e)| (*ts, e))
        .collect();
    let exits = if process_traced {
        c.calls_of(id, "function_exit", "process").await
    } else {
        Vec::new()
    };
    let at = |ts: u64| (ts as f64 - scenario_start as f64) / 1e6;
    for (ts, e) in &xruns {
        let before = exits
            .iter()
            .rfind(|x| x["timestampNs"].as_u64().unwrap() <= *ts)
            .map(|x| {
                format!(
                    "; the last traced process call before it returned {:.2} ms earlier after {:.3} ms",
                    at(*ts) - at(x["timestampNs"].as_u64().unwrap()),
                    x["durationNs"].as_u64().unwrap_or(0) as f64 / 1e6
                )
            })
            .unwrap_or_default();
        println!(
            "  {:+.1} ms from the scenario's start: {}{before}",
            at(*ts),
            e["summary"].as_str().unwrap_or("")
        );
    }
    if !exits.is_empty() {
        let mut d: Vec<f64> = exits
            .iter()
            .map(|x| x["durationNs"].as_u64().unwrap_or(0) as f64 / 1e3)
            .collect();
        let mut gaps: Vec<f64> = exits
            .windows(2)
            .map(|w| {
                (w[1]["timestampNs"].as_u64().unwrap() - w[0]["timestampNs"].as_u64().unwrap())
                    as f64
                    / 1e3
            })
            .collect();
        for w in exits.windows(2) {
            let (a, b) = (
                w[0]["timestampNs"].as_u64().unwrap(),
                w[1]["timestampNs"].as_u64().unwrap(),
            );
            let long = w[1]["durationNs"].as_u64().unwrap_or(0) as f64 / 1e3;
            if b - a > 8_000_000 || long > 1000.0 {
                println!(
                    "  process returned at {:+.1} ms, {:.2} ms after the previous, after {long:.0} us",
                    at(b),
                    (b - a) as f64 / 1e6
                );
            }
        }
        d.sort_by(f64::total_cmp);
        gaps.sort_by(f64::total_cmp);
        println!(
            "  process: {} calls, duration median {:.1} us, max {:.1} us; gap between returns median {:.0} us, max {:.0} us",
            d.len(),
            d[d.len() / 2],
            d[d.len() - 1],
            gaps.get(gaps.len() / 2).copied().unwrap_or(0.0),
            gaps.last().copied().unwrap_or(0.0)
        );
    }
}
