//! `strobe scenarios`: a project's scenario files run as a test suite
//! through the daemon (started if need be). Each `.strobe/scenarios/*.json`
//! with a `launch` section (debug_launch's arguments) is launched, run by
//! `debug_test_scenario`, and stopped — its data kept when it failed, for
//! debug_query. One `SCENARIO START|PASS|FAIL` line per scenario is what
//! the `scenario` test adapter (strobe-testing) reads.

use crate::mcp_client::Mcp;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use strobe_core::StrobeHome;

/// Where a project keeps its scenario files.
const DIR: &str = ".strobe/scenarios";

/// The scenario files of `root`, by name, sorted.
fn files(root: &Path) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(root.join(DIR))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| Some((p.file_stem()?.to_string_lossy().into_owned(), p)))
        .collect();
    out.sort();
    out
}

/// Runs the suite; the exit code is 0 when every scenario passed.
pub fn run(home: &StrobeHome, root: &Path, only: Option<&str>) -> ExitCode {
    let root = match root.canonicalize() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("strobe scenarios: project root {}: {e}", root.display());
            return ExitCode::from(2);
        }
    };
    let mut todo = files(&root);
    if let Some(name) = only {
        todo.retain(|(n, _)| n == name);
    }
    if todo.is_empty() {
        eprintln!(
            "strobe scenarios: no scenario {}in {}: each is a JSON file with a launch section and steps (README, Scenarios)",
            only.map(|o| format!("{o:?} ")).unwrap_or_default(),
            root.join(DIR).display()
        );
        return ExitCode::from(2);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async {
        let mut mcp =
            match crate::mcp_client::connect(home, strobe_core::caller::SCENARIOS_CLIENT).await {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("strobe scenarios: {e}");
                    return ExitCode::from(2);
                }
            };
        let mut failed = 0;
        for (name, path) in todo {
            println!("SCENARIO START {name}");
            let started = std::time::Instant::now();
            let outcome = one(&mut mcp, &root, &name, &path).await;
            let ms = (started.elapsed().as_secs_f64() * 1e4).round() / 10.0;
            let shown = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .display()
                .to_string();
            match outcome {
                Ok(()) => println!("SCENARIO PASS {name} {ms}"),
                Err(why) => {
                    failed += 1;
                    println!(
                        "SCENARIO FAIL {name} {ms} {shown} {}",
                        why.replace('\n', "; ")
                    );
                }
            }
        }
        if failed == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    })
}

/// Launches, runs and stops one scenario; why it failed.
async fn one(mcp: &mut Mcp, root: &Path, name: &str, path: &Path) -> Result<(), String> {
    let io = |e: std::io::Error| format!("the daemon connection failed: {e}");
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    let mut launch = doc
        .get("launch")
        .and_then(Value::as_object)
        .cloned()
        .ok_or("no \"launch\" section: a suite scenario says what to run, as debug_launch's arguments ({command, args, stdin, channels, jack, display})")?;
    launch.entry("projectRoot").or_insert_with(|| json!(root));
    let launched = mcp
        .tool("debug_launch", Value::Object(launch))
        .await
        .map_err(io)?;
    let launched = launched.map_err(|e| format!("launch failed: {e}"))?;
    let id = launched["sessionId"].as_str().unwrap_or("").to_string();
    // A line a second while it runs: progress for whoever reads the output
    // (debug_test's running tests), and output for its stuck detector, so
    // a scenario waiting on its program never looks silent.
    let started = std::time::Instant::now();
    let ran = {
        let call = mcp.tool(
            "debug_test_scenario",
            json!({"sessionId": id, "scenarioFile": name}),
        );
        tokio::pin!(call);
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        tick.tick().await;
        loop {
            tokio::select! {
                r = &mut call => break r,
                _ = tick.tick() => println!("SCENARIO RUNNING {name} {}s", started.elapsed().as_secs()),
            }
        }
    }
    .map_err(io)?;
    let result = match ran {
        Err(e) => Err(e),
        Ok(report) if report["passed"] == true => Ok(()),
        Ok(report) => {
            let f = &report["failure"];
            Err(format!(
                "step {}/{}: {} — expected {}; actual {}; session {id} kept: debug_query {{sessionId: \"{id}\"}}",
                f["step"],
                report["stepsTotal"],
                f["text"].as_str().unwrap_or(""),
                f["expected"].as_str().unwrap_or(""),
                f["actual"].as_str().unwrap_or("")
            ))
        }
    };
    let _ = mcp
        .tool(
            "debug_session",
            json!({"action": "stop", "sessionId": id, "retain": result.is_err()}),
        )
        .await
        .map_err(io)?;
    result
}
