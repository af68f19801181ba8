//! Following forks, and debug_test runs against the frameworks run alone.

use super::*;
use serde_json::json;
use std::process::Command;
use std::time::{Duration, Instant};
use support::fixture;

/// What following forks costs: a program forking `FORKS` short workers one
/// after another (each calls a traced function), uninstrumented, under
/// Strobe not following, and following (Frida injection into each child,
/// patterns applied, fork guard round trip).
pub async fn fork_following(c: &support::Client) {
    const FORKS: usize = 20;
    let exe = fixture("fork_many");
    let n = FORKS.to_string();
    let base = median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                assert!(Command::new(&exe).arg(&n).status().unwrap().success());
                t.elapsed().as_secs_f64()
            })
            .collect(),
    );
    let mut unfollowed = Vec::new();
    let mut followed = Vec::new();
    for _ in 0..3 {
        unfollowed.push(fork_run(c, &exe, FORKS, false).await);
        followed.push(fork_run(c, &exe, FORKS, true).await);
    }
    let (u, f) = (median(unfollowed), median(followed));
    println!(
        "fork following: {FORKS} sequential forks, each child calls a traced function (3 runs, median)"
    );
    println!(
        "  uninstrumented run:                 {:>9.1} ms",
        base * 1e3
    );
    println!(
        "  strobe, children not followed:      {:>9.1} ms (launch to end)",
        u * 1e3
    );
    println!(
        "  strobe, children followed:          {:>9.1} ms (launch to end)",
        f * 1e3
    );
    println!(
        "  cost per followed fork:             {:>9.1} ms",
        (f - u) / FORKS as f64 * 1e3
    );
}

/// Launch to end of one fork_many run, seconds.
async fn fork_run(c: &support::Client, exe: &std::path::Path, forks: usize, follow: bool) -> f64 {
    c.ok("debug_trace", json!({"add": ["job"]})).await;
    let t = Instant::now();
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "args": [forks.to_string()], "projectRoot": exe.parent().unwrap(),
                   "followChildren": follow}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(st["exitCode"], 0, "{st}");
    if follow {
        let followed = st["processes"]
            .as_array()
            .map_or(0, |p| p.iter().filter(|p| p["origin"] == "fork").count());
        assert_eq!(followed, forks, "every child followed: {st}");
    }
    c.ok("debug_session", json!({"action": "stop", "sessionId": id}))
        .await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    secs
}

/// Copies a fixture project into a fresh directory.
fn copy_project(name: &str, files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name);
    for f in files {
        let to = dir.path().join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from.join(f), to).unwrap();
    }
    dir
}

/// Starts a debug_test run and polls it to the end; wall seconds and the result.
async fn debug_test_run(c: &support::Client, args: serde_json::Value) -> (f64, serde_json::Value) {
    let t = Instant::now();
    let id = c.ok("debug_test", args).await["testRunId"]
        .as_str()
        .unwrap()
        .to_string();
    loop {
        let s = c
            .ok("debug_test", json!({"action": "status", "testRunId": id}))
            .await;
        if s["status"] == "completed" {
            return (t.elapsed().as_secs_f64(), s);
        }
    }
}

/// debug_test beside running the framework directly (the cargo fixture,
/// already built; the unittest fixture), and how long a hanging test takes
/// to be judged stuck (a Rust deadlock, a busy loop, a Python deadlock).
pub async fn test_runs(c: &support::Client) {
    let cargo = copy_project(
        "cargo_project",
        &["Cargo.toml", "src/lib.rs", "tests/api.rs"],
    );
    let python = copy_project("unittest_project", &["calc.py", "test_calc.py"]);
    let direct = |program: &str, args: &[&str], dir: &std::path::Path| {
        let t = Instant::now();
        Command::new(program)
            .args(args)
            .current_dir(dir)
            .env_remove("CARGO_TARGET_DIR")
            .output()
            .unwrap();
        t.elapsed().as_secs_f64()
    };
    // Build once so both sides run the tests, not the compiler.
    direct("cargo", &["test", "--no-run"], cargo.path());
    let runs = 5;
    for (label, dir, program, args) in [
        (
            "cargo test (2 binaries, 4 tests)",
            cargo.path(),
            "cargo",
            &["test", "--no-fail-fast"][..],
        ),
        (
            "python3 -m unittest (4 tests)",
            python.path(),
            "python3",
            &["-m", "unittest", "-v"][..],
        ),
    ] {
        let mut d = Vec::new();
        let mut s = Vec::new();
        for _ in 0..runs {
            d.push(direct(program, args, dir));
            s.push(
                debug_test_run(
                    c,
                    json!({"action": "run", "projectRoot": dir.to_str().unwrap()}),
                )
                .await
                .0,
            );
        }
        let (d, s) = (median(d), median(s));
        println!("{label}, {runs} runs each, median:");
        println!("  directly:                  {:>9.1} ms", d * 1e3);
        println!(
            "  debug_test run→completed:  {:>9.1} ms (ratio {:.2}x)",
            s * 1e3,
            s / d
        );
    }
    let stuck = copy_project(
        "stuck_project",
        &["Cargo.toml", "src/lib.rs", "tests/after.rs"],
    );
    direct("cargo", &["test", "--no-run"], stuck.path());
    let py = copy_project("stuck_python", &["test_stuck.py"]);
    println!("hanging test → stuck verdict (silence from the test's last output to the verdict):");
    for (label, dir, framework, hang) in [
        ("rust deadlock", stuck.path(), "cargo", "deadlock"),
        ("rust busy loop", stuck.path(), "cargo", "spin"),
        ("python deadlock", py.path(), "unittest", "deadlock"),
    ] {
        let mut silences = Vec::new();
        for _ in 0..3 {
            let (_, r) = debug_test_run(
                c,
                json!({"action": "run", "projectRoot": dir.to_str().unwrap(), "framework": framework,
                       "env": {"STROBE_FIXTURE_HANG": hang}}),
            )
            .await;
            let s = &r["stuck"][0];
            assert!(s.is_object(), "{r}");
            silences.push(s["silentForMs"].as_f64().unwrap() / 1e3);
        }
        println!(
            "  {label:<16} verdict after {:.1} s of silence (median of 3; min {:.1}, max {:.1})",
            median(silences.clone()),
            silences.iter().cloned().fold(f64::MAX, f64::min),
            silences.iter().cloned().fold(0.0, f64::max)
        );
    }
}
