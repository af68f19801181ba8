//! The command line: every verb answers `--help` with a usage line and exit 0
//! and does nothing else (no daemon, no venv, no MCP, no web endpoint), usage
//! errors exit 2 with a suggestion, and `strobe completions SHELL` prints a
//! script the shell accepts. Needs no frida venv.

mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use support::{Env, wait_until};

/// Generous: a `--help` answers in milliseconds; a verb that instead runs
/// (the daemon, MCP on a terminal) would never end on its own.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A fresh STROBE_HOME, and a STROBE_VENV path that does not exist yet (a
/// `setup` that ran would create it). Env's drop stops any daemon started.
fn env() -> (Env, tempfile::TempDir) {
    let home = tempfile::Builder::new()
        .prefix("strobe-cli-home-")
        .tempdir()
        .unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let venv = scratch.path().join("venv");
    (Env { home, venv }, scratch)
}

/// Runs `cmd` with stdin closed and returns its output, killing it and
/// failing when it has not ended within [`TIMEOUT`].
fn run(mut cmd: Command) -> Output {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn strobe");
    let ended = wait_until(TIMEOUT, || matches!(child.try_wait(), Ok(Some(_))));
    if !ended {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{what} was still running after {TIMEOUT:?}: it did more than print help");
    }
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What a verb that ran would have left behind.
fn assert_untouched(env: &Env, what: &str) {
    for name in [
        "strobe.sock",
        "strobe.pid",
        "strobe.db",
        "ui.json",
        "venv",
        "logs",
    ] {
        assert!(
            !env.path().join(name).exists(),
            "{what} created {name} in STROBE_HOME"
        );
    }
    let left: Vec<_> = std::fs::read_dir(env.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{what} wrote into STROBE_HOME: {left:?}");
    assert!(!env.venv.exists(), "{what} created STROBE_VENV");
}

#[test]
fn every_verb_has_help_without_side_effects() {
    let (env, _scratch) = env();
    let verbs = ["mcp", "daemon", "setup", "ui", "export", "completions"];
    let mut runs: Vec<(Vec<&str>, String)> = vec![
        (vec!["--help"], "Usage: strobe".into()),
        (vec!["-h"], "Usage: strobe".into()),
    ];
    for verb in verbs {
        for flag in ["--help", "-h"] {
            runs.push((vec![verb, flag], format!("Usage: strobe {verb}")));
        }
        runs.push((vec!["help", verb], format!("Usage: strobe {verb}")));
    }
    for (args, usage) in runs {
        let what = format!("strobe {}", args.join(" "));
        let out = run(env.command(&args));
        assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains(&usage),
            "{what} printed no {usage:?}: {stdout}"
        );
        assert_untouched(&env, &what);
    }
    // The top level lists every verb.
    let top = text(&run(env.command(&["--help"])).stdout);
    for verb in verbs {
        assert!(top.contains(verb), "--help does not list {verb}: {top}");
    }
}

#[test]
fn version_and_bare_command() {
    let (env, _scratch) = env();
    for flag in ["--version", "-V"] {
        let out = run(env.command(&[flag]));
        assert_eq!(out.status.code(), Some(0));
        let v = text(&out.stdout);
        assert!(
            v.starts_with("strobe ") && v.contains("(frida "),
            "strobe {flag}: {v}"
        );
    }
    // No verb prints the overview and succeeds, as it always did.
    let out = run(env.command(&[]));
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("Usage: strobe"));
    assert_untouched(&env, "strobe --version / strobe");
}

#[test]
fn usage_errors_exit_2_with_a_suggestion() {
    let (env, _scratch) = env();
    let cases: [(&[&str], &str); 5] = [
        (&["export", "--ouptut", "x.json", "s1"], "'--output'"),
        (&["daemon", "--hlep"], "'--help'"),
        (&["demon"], "'daemon'"),
        (&["completions", "bsh"], "bash"),
        (&["export"], "<SESSION>"),
    ];
    for (args, hint) in cases {
        let what = format!("strobe {}", args.join(" "));
        let out = run(env.command(args));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(
            stderr.contains(hint),
            "{what} should mention {hint}: {stderr}"
        );
        assert!(stderr.contains("try '--help'"), "{what}: {stderr}");
        assert_untouched(&env, &what);
    }
}

#[test]
fn completions_are_sourceable() {
    let (env, scratch) = env();
    let out = run(env.command(&["completions", "bash"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let script = scratch.path().join("strobe.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    // Sourcing must define the completion; `complete -p` fails otherwise.
    let mut bash = Command::new("bash");
    bash.arg("--norc")
        .arg("-c")
        .arg("source \"$1\" && complete -p strobe")
        .arg("bash")
        .arg(&script);
    let sourced = run(bash);
    assert_eq!(
        sourced.status.code(),
        Some(0),
        "bash could not source the completions: {}",
        text(&sourced.stderr)
    );
    assert!(text(&sourced.stdout).contains("strobe"));
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = run(env.command(&["completions", shell]));
        assert_eq!(out.status.code(), Some(0), "{shell}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("export"),
            "{shell}"
        );
    }
    assert_untouched(&env, "strobe completions");
    assert!(Path::new(&script).is_file());
}
