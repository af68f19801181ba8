//! debug_test through MCP on a real cargo project (tests/fixtures/cargo_project,
//! copied to a temporary directory so its build stays out of the checkout).

#[path = "../support/mod.rs"]
mod support;

mod baseline;
mod bun;
mod catch2;
mod compare;
mod deno;
mod generic;
mod go;
mod gtest;
mod jest;
mod mocha;
mod nextest;
mod pytest;
mod stuck;
mod vitest;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{Client, Env};

fn copy_project(to: &Path) -> PathBuf {
    copy_fixture(
        "cargo_project",
        &["Cargo.toml", "src/lib.rs", "tests/api.rs"],
        to,
    )
}

pub(crate) fn copy_fixture(name: &str, files: &[&str], to: &Path) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name);
    for rel in files {
        let dst = to.join(rel);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(from.join(rel), &dst).unwrap();
    }
    to.to_path_buf()
}

/// Starts a run and waits (at most 5 minutes) for its result.
pub(crate) async fn run(c: &Client, args: Value) -> Value {
    c.test_run(args, 5).await
}

#[tokio::test(flavor = "multi_thread")]
async fn cargo_suite_levels_and_single_tests_have_structured_results() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_project(work.path());
    let root = project.to_str().unwrap();

    let r = run(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "cargo");
    assert_eq!(r["summary"]["passed"], 2, "{r}");
    assert_eq!(r["summary"]["failed"], 1, "{r}");
    assert_eq!(r["summary"]["skipped"], 1, "{r}");
    let failures = r["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{r}");
    let f = &failures[0];
    assert_eq!(f["name"], "tests::negative_numbers");
    assert_eq!(f["file"], "src/lib.rs");
    assert_eq!(f["line"], 20);
    assert!(
        f["message"].as_str().unwrap().contains("five minus two"),
        "{f}"
    );
    assert_eq!(
        f["rerun"],
        "cargo test --no-fail-fast -- tests::negative_numbers --exact"
    );
    assert!(
        f["suggestedTraces"]
            .as_array()
            .unwrap()
            .contains(&json!("calc::tests::*")),
        "{f}"
    );
    // Every test and the whole output are in the details file.
    let details: Value =
        serde_json::from_slice(&std::fs::read(r["details"].as_str().unwrap()).unwrap()).unwrap();
    assert!(
        details["result"]["tests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "blank_items_count_as_zero" && t["group"] == "tests/api.rs"),
        "{details}"
    );
    assert!(
        details["output"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().contains("five minus two"))
    );

    let unit = run(
        &c,
        json!({"action": "run", "projectRoot": root, "level": "unit"}),
    )
    .await;
    assert_eq!(
        (
            &unit["summary"]["passed"],
            &unit["summary"]["failed"],
            &unit["summary"]["skipped"]
        ),
        (&json!(1), &json!(1), &json!(1)),
        "unit tests only: {unit}"
    );
    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": "tests::sums_numbers"}),
    )
    .await;
    assert_eq!(one["summary"]["passed"], 1, "{one}");
    assert_eq!(one["summary"]["failed"], 0, "{one}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_instrumented_rerun_traces_the_test_binary_not_cargo() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_project(work.path());
    let root = project.to_str().unwrap();
    let r = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": "tests::negative_numbers",
               "tracePatterns": ["calc::sum_list"]}),
    )
    .await;
    assert_eq!(r["summary"]["failed"], 1, "{r}");
    assert_eq!(r["failures"][0]["line"], 20, "{r}");
    let session = r["sessionId"].as_str().unwrap_or_else(|| panic!("{r}"));
    let status = c.status(session).await;
    assert!(
        status["binaryPath"]
            .as_str()
            .unwrap()
            .contains("/target/debug/deps/calc-"),
        "the test binary itself ran under Frida: {status}"
    );
    let enters = c.events(session, Some("function_enter")).await;
    assert!(
        enters.iter().any(|e| e["function"] == "calc::sum_list"),
        "{enters:?}"
    );
    // Two binaries have tests: without 'test' the run says which to pick.
    let r = run(
        &c,
        json!({"action": "run", "projectRoot": root, "tracePatterns": ["calc::*"]}),
    )
    .await;
    assert!(
        r["error"].as_str().unwrap().contains("Name one test"),
        "{r}"
    );
    // A pattern that cannot parse is refused before anything is built.
    let e = c
        .reply(
            "debug_test",
            json!({"action": "run", "projectRoot": root, "tracePatterns": ["@file:"]}),
        )
        .await;
    assert!(e.error_text().contains("@file"), "{}", e.error_text());
}

#[tokio::test(flavor = "multi_thread")]
async fn python_unittest_results_are_structured() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture(
        "unittest_project",
        &["calc.py", "test_calc.py"],
        work.path(),
    );
    let root = project.to_str().unwrap();
    let r = run(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "unittest", "detected: {r}");
    assert_eq!(
        (
            &r["summary"]["passed"],
            &r["summary"]["failed"],
            &r["summary"]["skipped"]
        ),
        (&json!(1), &json!(2), &json!(1)),
        "{r}"
    );
    let failures = r["failures"].as_array().unwrap();
    let error = failures
        .iter()
        .find(|f| f["name"] == "test_calc.CalcTests.test_parse_error")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(error["file"], project.join("calc.py").to_str().unwrap());
    assert_eq!(error["line"], 6);
    assert_eq!(
        error["rerun"],
        "python3 -m unittest -v test_calc.CalcTests.test_parse_error"
    );
    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": "test_calc.CalcTests.test_adds"}),
    )
    .await;
    assert_eq!(one["summary"]["passed"], 1, "{one}");
    assert_eq!(one["summary"]["failed"], 0, "{one}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_instrumented_unittest_run_traces_the_projects_python() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture(
        "unittest_project",
        &["calc.py", "test_calc.py"],
        work.path(),
    );
    let root = project.to_str().unwrap();
    let r = run(
        &c,
        json!({"action": "run", "projectRoot": root, "tracePatterns": ["calc.*"]}),
    )
    .await;
    assert_eq!(
        (
            &r["summary"]["passed"],
            &r["summary"]["failed"],
            &r["summary"]["skipped"]
        ),
        (&json!(1), &json!(2), &json!(1)),
        "the same results traced: {r}"
    );
    let session = r["sessionId"].as_str().unwrap_or_else(|| panic!("{r}"));
    let adds = c.events(session, Some("function_exit")).await;
    assert!(
        adds.iter()
            .any(|e| e["function"] == "calc.add" && e["returnValue"] == 2),
        "calc.add(1, 1) returned 2 in the failing test: {adds:?}"
    );
    // unittest prints each failure's traceback to stderr and exits 1: that
    // is not an uncaught exception.
    let st = c.status(session).await;
    assert_eq!(st["state"], "exited", "{st}");
    assert!(c.events(session, Some("crash")).await.is_empty(), "{st}");
}

/// The same instrumented run on CPython 3.12 and 3.13 (the tracer's
/// sys.monitoring side): `python3` on the run's PATH is that interpreter.
#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_312),
    ignore = "needs CPython 3.12 (pyenv install 3.12): not found when the tests were built"
)]
async fn an_instrumented_unittest_run_traces_on_cpython_312() {
    unittest_run_on(&support::pyenv_python("3.12")).await;
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_313),
    ignore = "needs CPython 3.13 (pyenv install 3.13): not found when the tests were built"
)]
async fn an_instrumented_unittest_run_traces_on_cpython_313() {
    unittest_run_on(&support::pyenv_python("3.13")).await;
}

async fn unittest_run_on(python: &std::path::Path) {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture(
        "unittest_project",
        &["calc.py", "test_calc.py"],
        work.path(),
    );
    let bin = work.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(python, bin.join("python3")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let r = run(
        &c,
        json!({"action": "run", "projectRoot": project, "tracePatterns": ["calc.*"],
               "env": {"PATH": path}}),
    )
    .await;
    assert_eq!(
        (&r["summary"]["passed"], &r["summary"]["failed"]),
        (&json!(1), &json!(2)),
        "{python:?}: {r}"
    );
    let session = r["sessionId"].as_str().unwrap_or_else(|| panic!("{r}"));
    let st = c.status(session).await;
    let ran = std::fs::canonicalize(st["binaryPath"].as_str().unwrap()).unwrap();
    assert_eq!(
        ran,
        std::fs::canonicalize(python).unwrap(),
        "the run's interpreter: {st}"
    );
    assert_eq!(
        (&st["state"], &st["exitCode"]),
        (&json!("exited"), &json!(1)),
        "failed tests are not a crash: {st}"
    );
    let adds = c.events(session, Some("function_exit")).await;
    assert!(
        adds.iter()
            .any(|e| e["function"] == "calc.add" && e["returnValue"] == 2),
        "{python:?}: {adds:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_project_without_tests_gets_a_hint() {
    let env = Env::new();
    let c = env.client().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Makefile"), "all:\n\tcc main.c\n").unwrap();
    let r = c
        .ok(
            "debug_test",
            json!({"action": "run", "projectRoot": dir.path().to_str().unwrap()}),
        )
        .await;
    assert_eq!(r["status"], "noTests", "{r}");
    assert_eq!(r["language"], "C/C++");
    assert_eq!(r["buildSystem"], "make");
    assert!(r["hint"].as_str().unwrap().contains("debug_launch"), "{r}");

    // A crate without a single test: the run completes, and says so.
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(work.path().join("src")).unwrap();
    std::fs::write(
        work.path().join("Cargo.toml"),
        "[package]\nname = \"empty\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(work.path().join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    let r = run(
        &c,
        json!({"action": "run", "projectRoot": work.path().to_str().unwrap()}),
    )
    .await;
    assert_eq!(r["noTests"], true, "{r}");
    assert!(r["hint"].as_str().unwrap().contains("#[test]"), "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn debug_test_mistakes_get_clear_errors() {
    let env = Env::new();
    let c = env.client().await;
    let empty = tempfile::tempdir().unwrap();
    let root = empty.path().to_str().unwrap();
    for (args, expect) in [
        (json!({"action": "run"}), "needs 'projectRoot'"),
        (
            json!({"action": "run", "projectRoot": "relative/dir"}),
            "absolute",
        ),
        (
            json!({"action": "run", "projectRoot": root, "framework": "nose"}),
            "known: cargo",
        ),
        (
            json!({"action": "run", "projectRoot": root, "level": "smoke"}),
            "'level'",
        ),
        (json!({"action": "status"}), "needs 'testRunId'"),
        (
            json!({"action": "status", "testRunId": "test-cargo-99"}),
            "no test run",
        ),
        (json!({"action": "list"}), "is not \"run\" or \"status\""),
    ] {
        let e = c.reply("debug_test", args.clone()).await;
        assert!(
            e.error_text().contains(expect),
            "{args}: {}",
            e.error_text()
        );
    }
}

/// Polls a run to its end and returns the reply's text with its result.
async fn run_text(c: &Client, args: Value) -> (Value, String) {
    let id = c.ok("debug_test", args).await["testRunId"]
        .as_str()
        .unwrap()
        .to_string();
    for _ in 0..20 {
        let r = c
            .reply("debug_test", json!({"action": "status", "testRunId": id}))
            .await;
        if r.value["status"] == "completed" {
            return (r.value, r.text);
        }
    }
    panic!("test run {id} did not finish");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_that_fails_says_why_in_its_text() {
    let env = Env::new();
    let c = env.client().await;
    // cargo without a Cargo.toml: not "0 passed", but cargo's error.
    let empty = tempfile::tempdir().unwrap();
    let (r, text) = run_text(
        &c,
        json!({"action": "run", "projectRoot": empty.path().to_str().unwrap(), "framework": "cargo"}),
    )
    .await;
    assert!(r["error"].as_str().unwrap().contains("Cargo.toml"), "{r}");
    assert!(
        text.contains("ERROR:") && text.contains("Cargo.toml"),
        "{text}"
    );

    // An instrumented run that cannot start: its error, not "null passed".
    let work = tempfile::tempdir().unwrap();
    let project = copy_project(work.path());
    let (r, text) = run_text(
        &c,
        json!({"action": "run", "projectRoot": project.to_str().unwrap(), "tracePatterns": ["calc::*"]}),
    )
    .await;
    assert_eq!(r["summary"]["passed"], 0, "{r}");
    assert!(!text.contains("null"), "{text}");
    assert!(text.contains("Name one test"), "{text}");
}
