//! Historical baselines and MCP progress notifications: a test's duration
//! is stored when its run finishes, and the next run's progress names the
//! test running now with how long it usually takes.

use super::run;
use crate::support::Env;
use serde_json::json;

const SLOW_TESTS: &str = r#"import os
import time
import unittest


class SlowTests(unittest.TestCase):
    def test_quick(self):
        self.assertTrue(True)

    def test_takes_a_while(self):
        time.sleep(float(os.environ.get("SLOW_SECONDS", "1")))
"#;

/// "usually 1.0 s" → 1.0
fn usual_seconds(message: &str) -> Option<f64> {
    let rest = message.split("usually ").nth(1)?;
    rest.split(' ').next()?.parse().ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_notifications_show_the_running_test_against_its_baseline() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("test_slow.py"), SLOW_TESTS).unwrap();
    let root = work.path().to_str().unwrap();
    let slow = "test_slow.SlowTests.test_takes_a_while";

    // The first run leaves the baseline: unittest reports no durations, so
    // this is Strobe's own timing of the test.
    let first = run(
        &c,
        json!({"action": "run", "projectRoot": root, "framework": "unittest",
               "env": {"SLOW_SECONDS": "1"}}),
    )
    .await;
    assert_eq!(first["summary"]["passed"], 2, "{first}");

    // The second run's slow test takes longer; a status call hears about
    // it while it waits (the rmcp client sends a progress token with every
    // request).
    let started = c
        .ok(
            "debug_test",
            json!({"action": "run", "projectRoot": root, "framework": "unittest",
                   "env": {"SLOW_SECONDS": "5"}}),
        )
        .await;
    let id = started["testRunId"].as_str().unwrap().to_string();
    c.take_progress();
    let mut done = None;
    for _ in 0..20 {
        let r = c
            .ok("debug_test", json!({"action": "status", "testRunId": id}))
            .await;
        if r["status"] == "completed" {
            done = Some(r);
            break;
        }
    }
    let done = done.expect("the run finished");
    assert_eq!(done["summary"]["passed"], 2, "{done}");

    let notes = c.take_progress();
    assert!(!notes.is_empty(), "no progress notification arrived");
    for pair in notes.windows(2) {
        assert!(
            pair[1].progress > pair[0].progress,
            "progress must grow: {} then {}",
            pair[0].progress,
            pair[1].progress
        );
    }
    let messages: Vec<String> = notes.iter().filter_map(|n| n.message.clone()).collect();
    let about_slow = messages
        .iter()
        .find(|m| m.contains(&format!("{slow} running for")))
        .unwrap_or_else(|| panic!("no notification names {slow}: {messages:#?}"));
    assert!(
        about_slow.contains("over its last 1 run)"),
        "the baseline is the first run's: {about_slow}"
    );
    // The first run slept 1 s inside the test, so its measured duration
    // cannot be shorter.
    let usual = usual_seconds(about_slow).unwrap_or_else(|| panic!("{about_slow}"));
    assert!(
        usual >= 0.9,
        "baseline {usual} s < the 1 s sleep: {about_slow}"
    );
}
