//! debug_test with pytest through MCP: tests/fixtures/pytest_project, copied
//! to a temporary directory, run with the `python3` on PATH (`./dev test`
//! puts a venv with pytest first).

use crate::support::Env;
use crate::{copy_fixture, run};
use serde_json::json;

pub(crate) const FILES: [&str; 7] = [
    "pyproject.toml",
    "calc.py",
    "tests/unit/test_calc.py",
    "tests/unit/test_edges.py",
    "tests/unit/test_hang.py",
    "tests/integration/test_flow.py",
    "tests/e2e/test_cli.py",
];

const PYTEST: &str =
    "python3 -m pytest --verbosity=2 -p no:cacheprovider --tb=short -o console_output_style=times";

#[tokio::test(flavor = "multi_thread")]
async fn pytest_suite_levels_and_single_tests_have_structured_results() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("pytest_project", &FILES, work.path());
    let root = project.to_str().unwrap();

    let r = run(&c, json!({"action": "run", "projectRoot": root})).await;
    assert_eq!(r["framework"], "pytest", "detected: {r}");
    assert_eq!(r.get("error"), None, "{r}");
    assert_eq!(
        (
            &r["summary"]["passed"],
            &r["summary"]["failed"],
            &r["summary"]["skipped"]
        ),
        (&json!(6), &json!(7), &json!(2)),
        "{r}"
    );
    let failures = r["failures"].as_array().unwrap();
    let f = failures
        .iter()
        .find(|f| f["name"] == "tests/unit/test_calc.py::test_parse_error")
        .unwrap_or_else(|| panic!("{r}"));
    assert_eq!(f["file"], "calc.py", "raised in the project's code: {f}");
    assert_eq!(f["line"], 11);
    assert_eq!(
        f["message"],
        "ValueError: invalid literal for int() with base 10: 'x'"
    );
    assert_eq!(
        f["rerun"],
        format!("{PYTEST} tests/unit/test_calc.py::test_parse_error")
    );
    assert_eq!(
        f["suggestedTraces"],
        json!(["calc.parse"]),
        "the project's function the test called, as a Python pattern"
    );
    let assertion = failures
        .iter()
        .find(|f| f["name"] == "tests/unit/test_calc.py::test_adds_wrong")
        .unwrap();
    assert_eq!(
        (&assertion["file"], &assertion["line"]),
        (&json!("tests/unit/test_calc.py"), &json!(14))
    );
    assert!(!project.join(".pytest_cache").exists(), "no cache written");

    let integration = run(
        &c,
        json!({"action": "run", "projectRoot": root, "level": "integration"}),
    )
    .await;
    assert_eq!(
        (
            &integration["summary"]["passed"],
            &integration["summary"]["failed"]
        ),
        (&json!(1), &json!(0)),
        "tests/integration only: {integration}"
    );

    // One test alone, by the node id the failures carry.
    let one = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": "tests/unit/test_calc.py::test_table[2-2-5]"}),
    )
    .await;
    assert_eq!(
        (&one["summary"]["passed"], &one["summary"]["failed"]),
        (&json!(0), &json!(1)),
        "{one}"
    );
    assert_eq!(one["failures"][0]["line"], 33, "{one}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_instrumented_pytest_run_traces_the_projects_python_with_the_same_results() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let project = copy_fixture("pytest_project", &FILES, work.path());
    let root = project.to_str().unwrap();
    let test = "tests/unit/test_calc.py";
    let plain = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": test}),
    )
    .await;
    let traced = run(
        &c,
        json!({"action": "run", "projectRoot": root, "test": test, "tracePatterns": ["calc.*"],
               "watches": [{"expr": "len(text)", "label": "chars", "on": ["calc.parse"]}]}),
    )
    .await;
    for count in ["passed", "failed", "skipped", "stuck"] {
        assert_eq!(
            plain["summary"][count], traced["summary"][count],
            "same results traced: {plain} {traced}"
        );
    }
    let session = traced["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{traced}"));
    let parses = c
        .query_all(
            session,
            json!({"eventType": "function_enter", "function": {"equals": "calc.parse"}}),
        )
        .await;
    assert!(!parses.is_empty(), "calc.parse traced in the test process");
    assert!(
        parses
            .iter()
            .any(|e| e["arguments"][0] == json!({"name": "text", "type": "str", "value": "x"})),
        "{parses:?}"
    );
    assert!(
        parses.iter().all(
            |e| e["watchValues"]["chars"] == e["arguments"][0]["value"].as_str().unwrap().len()
        ),
        "the Python watch read at each call: {parses:?}"
    );
    let raised = c.events(session, Some("exception")).await;
    assert!(
        raised
            .iter()
            .any(|e| e["exceptionType"] == "ValueError" && e["function"] == "calc.parse"),
        "the ValueError test_parse_error expects leaves calc.parse: {raised:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_instrumented_run_reads_lines_the_runner_wrote_in_pieces() {
    // pytest -v writes a test's id, runs the test, then writes its outcome:
    // the session stores the two pieces as separate output events, which
    // the run must join into the one line the parser reads.
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("calc.py"),
        "def double(x):\n    return 2 * x\n",
    )
    .unwrap();
    std::fs::write(
        work.path().join("test_slow.py"),
        "import time\n\nimport calc\n\n\ndef test_slow():\n    time.sleep(0.6)\n    assert calc.double(2) == 4\n",
    )
    .unwrap();
    let root = work.path().to_str().unwrap();
    let r = run(
        &c,
        json!({"action": "run", "projectRoot": root, "framework": "pytest", "tracePatterns": ["calc.*"]}),
    )
    .await;
    assert_eq!(
        (&r["summary"]["passed"], &r["summary"]["failed"]),
        (&json!(1), &json!(0)),
        "{r}"
    );
}
