//! The midi and audio channels on real JACK (jackd with the dummy driver,
//! a private server per session through `jack: "auto"`): a C++ synth
//! fixture driven by MIDI, its sound measured, its calls traced — and the
//! spec's own validation scenario, which finds the synth's bug (a note-off
//! with release 0 never frees the voice) at the right step and leaves the
//! program running for the agent to see why. No ALSA sequencer here (no
//! /dev/snd on these machines): JACK MIDI is what is tested.

mod support;

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::{Client, Env, compile_with};

/// One real-time audio test at a time: two synths, two JACK servers and two
/// daemons at once on 2 cores starve each other's JACK cycles.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn synth() -> std::path::PathBuf {
    compile_with("synth.cpp", "g++", &["-g", "-O0", "--", "-ljack", "-lm"])
}

async fn wait_line(c: &Client, id: &str, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let lines = c.stdout_lines(id).await;
        if lines.iter().any(|l| l.contains(text)) {
            return;
        }
        assert!(Instant::now() < deadline, "no {text:?} in {lines:?}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn scenario(c: &Client, id: &str, name: &str, steps: Value) -> Value {
    let r = c
        .reply(
            "debug_test_scenario",
            json!({"sessionId": id, "scenario": {"name": name, "steps": steps}}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text);
    eprintln!("{}", r.text);
    r.value
}

/// Processes whose command line has `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(needle)
                })
                .unwrap_or(false)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_synths_release_bug_is_found_by_a_midi_audio_and_trace_scenario() {
    let _one = ONE_AT_A_TIME.lock().await;
    let env = Env::new();
    let c = env.client().await;
    let exe = synth();
    c.ok(
        "debug_trace",
        json!({"add": ["Voice::free", "Synth::note_on"]}),
    )
    .await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": ["0.05"], "projectRoot": exe.parent().unwrap(),
                   "jack": "auto", "channels": ["midi", "audio"]}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let server = v["jackServer"]
        .as_str()
        .expect("the private server's name")
        .to_string();
    wait_line(&c, &id, "synth ready").await;

    // A note plays at its pitch, is echoed on the synth's MIDI output, and
    // with a release time it ends: the voice is freed, the output silent.
    let r = scenario(
        &c,
        &id,
        "a-note",
        json!([
            {"wait": {"until": {"channel": "audio", "silence": true}, "timeoutMs": 5000}},
            {"do": "midi.send", "type": "noteOn", "note": 69, "velocity": 100},
            {"wait": {"until": {"channel": "audio", "silence": false}, "timeoutMs": 5000}},
            {"assert": "audio", "frequency": {">": 430}},
            {"assert": "audio", "frequency": {"<": 450}, "clipping": false},
            {"assert": "midi", "type": "noteOn", "note": 69},
            {"assert": "trace", "fn": "Synth::note_on", "called": true, "args": {"note": 69}},
            {"do": "midi.send", "type": "noteOff", "note": 69},
            {"wait": {"until": {"channel": "audio", "silence": true}, "timeoutMs": 5000}},
            {"assert": "trace", "fn": "Voice::free", "called": true},
        ]),
    )
    .await;
    assert_eq!(r["passed"], true, "{r}");

    // Cycles the synth misses (stopped for 300 ms: SIGSTOP 19, SIGCONT 18)
    // are xruns JACK reports, each burst an audio event on the timeline.
    let seen_before = c
        .events(&id, Some("audio"))
        .await
        .iter()
        .filter_map(|e| e["id"].as_u64())
        .max()
        .unwrap_or(0);
    let pid = v["pid"].as_u64().expect("the synth's pid") as u32;
    support::signal(pid, 19);
    tokio::time::sleep(Duration::from_millis(300)).await;
    support::signal(pid, 18);
    let deadline = Instant::now() + Duration::from_secs(10);
    let xrun = loop {
        let audio = c.events(&id, Some("audio")).await;
        if let Some(e) = audio
            .into_iter()
            .find(|e| e["xrun"] == true && e["id"].as_u64() > Some(seen_before))
        {
            break e;
        }
        assert!(
            Instant::now() < deadline,
            "no xrun event after the synth missed cycles"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(xrun["new"].as_u64().unwrap() >= 1, "{xrun}");
    assert!(xrun["xruns"].as_u64() >= xrun["new"].as_u64(), "{xrun}");
    assert!(
        xrun["summary"]
            .as_str()
            .unwrap()
            .contains("xrun(s): JACK ran a cycle late"),
        "{xrun}"
    );

    // The spec's validation scenario: release 0 (CC 72), a note, its
    // note-off — and the sound never stops.
    let r = scenario(
        &c,
        &id,
        "release-zero",
        json!([
            {"do": "midi.send", "type": "cc", "controller": 72, "value": 0},
            {"do": "midi.send", "type": "noteOn", "note": 60, "velocity": 100},
            {"wait": 100},
            {"do": "midi.send", "type": "noteOff", "note": 60},
            {"wait": {"until": {"channel": "audio", "silence": true}, "timeoutMs": 1500}},
            {"assert": "trace", "fn": "Voice::free", "called": true},
            {"assert": "audio", "rms": {"<": 0.01}},
        ]),
    )
    .await;
    assert_eq!(r["passed"], false, "{r}");
    assert_eq!(r["failure"]["step"], 5, "{r}");
    let actual = r["failure"]["actual"].as_str().unwrap();
    assert!(
        actual.contains("not within 1500 ms") && actual.contains("Hz"),
        "{actual}"
    );

    // The program still runs: the agent sees that no voice was freed
    // after the note-off, while note_on was called.
    assert_eq!(c.status(&id).await["state"], "running");
    let steps = c.events(&id, Some("scenario_step")).await;
    let note_off = steps
        .iter()
        .find(|s| s["scenario"] == "release-zero" && s["step"] == 4)
        .unwrap()["id"]
        .as_u64()
        .unwrap();
    let freed = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "function": {"equals": "Voice::free"}, "eventIdFrom": note_off}),
        )
        .await;
    assert_eq!(
        freed["totalCount"], 0,
        "no voice freed after the note-off: {freed}"
    );
    let started = c
        .ok(
            "debug_query",
            json!({"sessionId": id, "eventType": "function_enter", "function": {"equals": "Synth::note_on"}}),
        )
        .await;
    assert_eq!(started["totalCount"], 2);

    // The sound and the MIDI are on the timeline; the measures carry the
    // xrun count.
    let audio = c.events(&id, Some("audio")).await;
    let loud = audio.iter().filter(|e| e["silence"] == false).count();
    assert!(loud > 3, "{audio:?}");
    assert!(
        audio
            .iter()
            .all(|e| e.get("rms").is_none() || e["xruns"].is_u64())
    );
    let midi = c.events(&id, Some("midi")).await;
    assert!(
        midi.iter()
            .any(|e| e["dir"] == "seen" && e["message"]["type"] == "noteOff"),
        "{midi:?}"
    );

    // Stopping the session stops its JACK server.
    assert_eq!(processes_with(&format!("jackd -n {server} ")).len(), 1);
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with(&format!("jackd -n {server} ")).is_empty() {
        assert!(
            Instant::now() < deadline,
            "jackd {server} outlived its session"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The synth with its GTK window (a "release" slider), built once.
fn synth_gui() -> std::path::PathBuf {
    let flags = |what: &str| -> Vec<String> {
        let out = std::process::Command::new("pkg-config")
            .args([what, "gtk+-3.0"])
            .output()
            .expect("pkg-config runs");
        String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let mut all: Vec<String> = vec!["-g".into(), "-O0".into(), "-DSYNTH_GUI".into()];
    all.extend(flags("--cflags"));
    all.push("--".into());
    all.extend(["-ljack".into(), "-lm".into()]);
    all.extend(flags("--libs"));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    compile_with("synth.cpp", "g++", &refs)
}

/// The spec's validation scenario as written there: the release knob
/// through the GUI, MIDI, audio and a trace check in one scenario.
#[tokio::test(flavor = "multi_thread")]
async fn the_spec_validation_scenario_turns_the_release_knob_through_the_gui() {
    let _one = ONE_AT_A_TIME.lock().await;
    let env = Env::new();
    let c = env.client().await;
    let exe = synth_gui();
    c.ok("debug_trace", json!({"add": ["Voice::free"]})).await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": ["0.05"], "projectRoot": exe.parent().unwrap(),
                   "display": "virtual", "jack": "auto"}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    wait_line(&c, &id, "synth ready").await;
    let ui = c.ok("debug_ui", json!({"sessionId": id})).await;
    let knob = support::ui_nodes(&ui["nodes"])
        .into_iter()
        .find(|n| n["role"] == "slider" && n["name"] == "release")
        .unwrap_or_else(|| panic!("no release slider: {ui:#}"))["id"]
        .as_str()
        .unwrap()
        .to_string();

    // With a release time set through the GUI, a note ends.
    let r = c
        .reply(
            "debug_test_scenario",
            json!({"sessionId": id, "scenario": {"name": "released", "channels": ["midi", "audio"], "steps": [
                {"do": "ui.set_value", "id": knob, "value": 0.5},
                {"assert": "ui", "id": knob, "value": 0.5},
                {"assert": "stdout", "contains": "release 0.50 s"},
                {"do": "midi.send", "type": "noteOn", "note": 64, "velocity": 100},
                {"wait": {"until": {"channel": "audio", "silence": false}, "timeoutMs": 5000}},
                {"do": "midi.send", "type": "noteOff", "note": 64},
                {"wait": {"until": {"channel": "audio", "silence": true}, "timeoutMs": 5000}},
                {"assert": "trace", "fn": "Voice::free", "called": true},
            ]}}),
        )
        .await;
    eprintln!("{}", r.text);
    assert_eq!(r.value["passed"], true, "{}", r.text);

    // The spec's scenario: knob to 0, a note, its note-off, wait for silence.
    let r = c
        .reply(
            "debug_test_scenario",
            json!({"sessionId": id, "scenario": {"channels": ["ui", "midi", "audio"], "steps": [
                {"do": "ui.set_value", "id": knob, "value": 0.0},
                {"do": "midi.send", "type": "noteOn", "note": 60, "velocity": 100},
                {"wait": 100},
                {"do": "midi.send", "type": "noteOff", "note": 60},
                {"wait": {"until": {"channel": "audio", "silence": true}, "timeoutMs": 500}},
                {"assert": "trace", "fn": "Voice::free", "called": true},
                {"assert": "audio", "rms": {"<": 0.01}},
            ]}}),
        )
        .await;
    eprintln!("{}", r.text);
    assert_eq!(r.value["failure"]["step"], 5, "{}", r.text);
    assert!(
        r.value["steps"][0]["summary"]
            .as_str()
            .unwrap()
            .contains("verified"),
        "{}",
        r.text
    );
    assert!(r.text.contains("still running"), "{}", r.text);
    // The GUI action is on the timeline with the scenario's steps.
    let actions = c.events(&id, Some("ui_action")).await;
    assert_eq!(actions.len(), 2, "{actions:?}");
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_audio_channel_measures_nothing_before_the_programs_output_is_linked() {
    let _one = ONE_AT_A_TIME.lock().await;
    let env = Env::new();
    let c = env.client().await;
    // A program with no JACK ports: nothing of it ever reaches the channel.
    let exe = support::fixture_with("debugee", &["-pthread"]);
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap(),
                   "jack": "auto", "channels": ["audio"]}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.wait_stdout(&id).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // JACK's silence on an unlinked input is not the program's silence: no
    // window was measured, so a wait for silence cannot pass on it.
    let audio = c.events(&id, Some("audio")).await;
    assert!(
        audio.iter().all(|e| e["silence"] != true),
        "silence reported before any output was linked: {audio:?}"
    );
    let r = c
        .reply(
            "debug_test_scenario",
            json!({"sessionId": id, "scenario": {"name": "unheard", "steps": [
                {"wait": {"until": {"channel": "audio", "silence": true}, "timeoutMs": 500}}]}}),
        )
        .await;
    assert_eq!(r.value["passed"], false, "{}", r.text);
    // The private server's own words are kept, for a channel gone deaf.
    let server = v["jackServer"].as_str().unwrap();
    let log = env.path().join("logs").join(format!("jackd-{server}.log"));
    assert!(
        std::fs::read_to_string(&log).is_ok_and(|t| !t.is_empty()),
        "{} is missing or empty",
        log.display()
    );
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_private_jack_server_outliving_a_killed_daemon_is_ended_by_the_next_one() {
    // A daemon killed with SIGKILL cannot stop its sessions' JACK servers;
    // they ran on, reparented to init. The next daemon ends exactly the
    // recorded one (its pid and start time), and nothing else.
    let env = Env::new();
    let c = env.client().await;
    let exe = support::fixture("ticker");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap(), "jack": "auto"}),
        )
        .await;
    let server = v["jackServer"]
        .as_str()
        .expect("the private server's name")
        .to_string();
    let jackd = processes_with(&format!("jackd -n {server} "));
    assert_eq!(jackd.len(), 1, "one jackd for {server}");
    let jackd = jackd[0];
    // A process of the test's own, which must be left alone.
    let mut bystander = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();

    let daemon = env.daemon_pid().expect("the daemon's pid");
    support::signal(daemon, libc::SIGKILL);
    assert!(env.wait_daemon_gone(daemon, Duration::from_secs(10)));
    assert!(
        support::running(jackd),
        "jackd {jackd} is still there after the kill (what this test is about)"
    );
    // Any call starts the next daemon, which ends what the last one left.
    c.ok_after_daemon_restart("debug_session", json!({"action": "list"}))
        .await;
    let gone = support::wait_until(Duration::from_secs(20), || !support::running(jackd));
    let bystander_alive = bystander.try_wait().unwrap().is_none();
    let _ = bystander.kill();
    let _ = bystander.wait();
    assert!(gone, "jackd {jackd} outlived the killed daemon");
    assert!(bystander_alive, "the test's own process was ended");
}
