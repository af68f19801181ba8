//! The program's own socket I/O recorded (a `net` channel open), beside
//! the same program run alone and under Strobe without a net channel, in
//! one run: `pingpong.c` times N loopback TCP round trips (four socket
//! read/write calls each, every one recorded) and N writes to /dev/null
//! (hooked calls that are not socket I/O, asked once and skipped).

use serde_json::json;
use std::process::Command;

use crate::{median, support};

/// Round trips (and /dev/null writes) per run.
const TRIPS: &str = "20000";

/// (ns per round trip, ns per /dev/null write) from the fixture's line.
fn parse(line: &str) -> (f64, f64) {
    let nums: Vec<f64> = line
        .split(|c: char| !c.is_ascii_digit() && c != '.')
        .filter_map(|w| w.parse().ok())
        .collect();
    (nums[0], nums[1])
}

async fn under_strobe(
    c: &support::Client,
    exe: &std::path::Path,
    channels: &[&str],
) -> (f64, f64, usize) {
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": [TRIPS], "projectRoot": exe.parent().unwrap(), "channels": channels}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.wait_ended(&id).await;
    let line = c
        .stdout_lines(&id)
        .await
        .into_iter()
        .find(|l| l.starts_with("round trip"))
        .expect("the fixture's line");
    let recorded = if channels.is_empty() {
        0
    } else {
        c.events(&id, Some("net")).await.len()
    };
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    let (trip, write) = parse(&line);
    (trip, write, recorded)
}

pub async fn sockets(c: &support::Client, runs: usize) {
    let exe = support::fixture("pingpong");
    let (mut alone, mut plain, mut watched) = (vec![], vec![], vec![]);
    let mut recorded = 0;
    for _ in 0..runs {
        let out = Command::new(&exe).arg(TRIPS).output().unwrap();
        alone.push(parse(&String::from_utf8_lossy(&out.stdout)));
        let (t, w, _) = under_strobe(c, &exe, &[]).await;
        plain.push((t, w));
        let (t, w, n) = under_strobe(c, &exe, &["net"]).await;
        watched.push((t, w));
        recorded = n;
    }
    let med = |v: &[(f64, f64)], i: usize| {
        median(v.iter().map(|p| if i == 0 { p.0 } else { p.1 }).collect())
    };
    println!(
        "socket I/O recorded ({runs} runs of {TRIPS} loopback round trips + {TRIPS} /dev/null writes, medians):"
    );
    for (what, i) in [("round trip (4 socket calls)", 0), ("/dev/null write", 1)] {
        let (a, p, w) = (med(&alone, i), med(&plain, i), med(&watched, i));
        println!(
            "  {what}: alone {a:.0} ns | under Strobe, no net channel {p:.0} ns ({:.2}x) | net channel open {w:.0} ns ({:.2}x alone, {:.2}x no channel)",
            p / a,
            w / a,
            w / p
        );
    }
    println!(
        "  net events recorded in the last run: {recorded} (expected {} socket calls + connect/accept/close)",
        4 * TRIPS.parse::<usize>().unwrap()
    );
}
