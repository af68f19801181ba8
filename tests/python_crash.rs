//! Python programs that fail, end to end: an uncaught exception is the
//! session's crash with its traceback and each frame's locals (SystemExit is
//! an exit), and a C extension (built here against the interpreter's own
//! headers) that segfaults is a native crash that also shows the Python
//! frames; the same extension's native calls share one timeline with the
//! Python calls around them. Real CPython (3.11, and pyenv's 3.12 and 3.13,
//! ignored where the build found none) under real Frida, through MCP.

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::{Env, pyenv_python, python_shop};

#[tokio::test(flavor = "multi_thread")]
async fn an_uncaught_exception_is_a_crash_with_its_traceback_and_locals_and_system_exit_is_not() {
    uncaught_and_system_exit("python3").await;
}

/// 3.13 gives a frame's locals as a proxy: the traceback's locals are
/// copied from it.
#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_312),
    ignore = "needs CPython 3.12 (pyenv install 3.12): not found when the tests were built"
)]
async fn uncaught_exceptions_on_cpython_312() {
    uncaught_and_system_exit(pyenv_python("3.12").to_str().unwrap()).await;
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_313),
    ignore = "needs CPython 3.13 (pyenv install 3.13): not found when the tests were built"
)]
async fn uncaught_exceptions_on_cpython_313() {
    uncaught_and_system_exit(pyenv_python("3.13").to_str().unwrap()).await;
}

async fn uncaught_and_system_exit(python: &str) {
    let env = Env::new();
    let c = env.client().await;
    let launch = |script: &str| json!({"command": python, "args": [python_shop().join(script)], "projectRoot": python_shop()});
    let id = c.ok("debug_launch", launch("checkout.py")).await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["state"], "crashed", "{st}");
    assert!(
        st["reason"].as_str().unwrap_or("").contains("KeyError"),
        "the end reason names the exception: {st}"
    );
    let crashes = c.events(&id, Some("crash")).await;
    assert_eq!(crashes.len(), 1, "{crashes:?}");
    let crash = &crashes[0];
    assert_eq!(crash["kind"], "python-exception", "{crash}");
    assert_eq!(crash["exception"]["type"], "KeyError");
    assert_eq!(crash["exception"]["message"], "gadget");
    let tb = crash["traceback"].as_array().unwrap();
    let inner = tb.last().unwrap();
    assert_eq!(inner["function"], "checkout", "{crash}");
    assert_eq!(inner["line"], 6);
    assert_eq!(inner["locals"]["sku"], "gadget");
    assert_eq!(inner["locals"]["quantity"], 2);
    assert_eq!(inner["locals"]["cart"], json!({"widget": 10}));
    // The stderr lines of the traceback Python printed are linked.
    let ids = crash["exception"]["stderrEventIds"].as_array().unwrap();
    let stderr = c.events(&id, Some("stderr")).await;
    let first = stderr.iter().find(|e| e["id"] == ids[0]).unwrap();
    assert_eq!(
        first["text"], "Traceback (most recent call last):",
        "{stderr:?}"
    );

    let id = c.ok("debug_launch", launch("quits.py")).await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["state"], "exited", "{st}");
    assert_eq!(st["exitCode"], 3);
    assert!(c.events(&id, Some("crash")).await.is_empty());
}

/// The crashext fixture, built here with the system compiler and
/// python3-dev's headers, beside its scripts, in a directory of `env`'s.
fn crashext(env: &Env) -> PathBuf {
    crashext_for(env, Path::new("/usr/include/python3.11"))
}

/// The crashext fixture built against the CPython headers in `include`.
fn crashext_for(env: &Env, include: &Path) -> PathBuf {
    let dir = env.path().join("crashext");
    std::fs::create_dir_all(&dir).unwrap();
    let src =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/python/crashext");
    for script in ["run.py", "mix.py"] {
        std::fs::copy(src.join(script), dir.join(script)).unwrap();
    }
    let built = std::process::Command::new("gcc")
        .args(["-shared", "-fPIC", "-g"])
        .arg(format!("-I{}", include.display()))
        .arg("-o")
        .arg(dir.join("crashext.so"))
        .arg(src.join("crashext.c"))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn python_and_native_calls_share_one_timeline() {
    let env = Env::new();
    let c = env.client().await;
    let dir = crashext(&env);
    // A Python pattern and a native one (in the extension, loaded at import).
    c.ok("debug_trace", json!({"add": ["mix.compute", "mix_add"]}))
        .await;
    let v = c
        .ok(
            "debug_launch",
            json!({"command": "python3", "args": [dir.join("mix.py")], "projectRoot": dir}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(st["exitCode"], 0, "{st}");
    let calls: Vec<Value> = c
        .query_all(&id, json!({}))
        .await
        .into_iter()
        .filter(|e| e["eventType"] == "function_enter" || e["eventType"] == "function_exit")
        .collect();
    let seq: Vec<(String, String)> = calls
        .iter()
        .map(|e| {
            (
                e["eventType"].as_str().unwrap().to_string(),
                e["function"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("function_enter", "mix.compute"),
        ("function_enter", "mix_add"),
        ("function_exit", "mix_add"),
        ("function_exit", "mix.compute"),
    ];
    assert_eq!(
        seq[..4],
        want.map(|(k, f)| (k.to_string(), f.to_string())),
        "Python and native calls nest in time order: {calls:?}"
    );
    assert_eq!(seq.len(), 12, "three rounds: {calls:?}");
    // Python ints as the interpreter holds them: two digits, negative,
    // and three.
    assert_eq!(
        calls[4]["arguments"][0]["value"],
        -(1i64 << 40),
        "{calls:?}"
    );
    assert_eq!(
        calls[7]["returnValue"],
        (2 - (1i64 << 40)) * 10,
        "{calls:?}"
    );
    assert_eq!(
        calls[8]["arguments"][0]["value"],
        (1i64 << 62) - 3,
        "{calls:?}"
    );
    assert_eq!(calls[0]["arguments"][0]["value"], 5, "{calls:?}");
    assert_eq!(calls[2]["returnValue"], 7, "typed from DWARF: {calls:?}");
    assert_eq!(calls[3]["returnValue"], 70, "{calls:?}");
    assert_eq!(calls[0]["threadId"], calls[1]["threadId"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_segfault_in_a_c_extension_is_a_native_crash_that_shows_the_python_frames() {
    segfault_in_an_extension("python3", Path::new("/usr/include/python3.11")).await;
}

/// 3.12's thread state reaches its frames through C frames and pushes shim
/// frames; 3.13 keeps the current frame in the thread state.
#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_312),
    ignore = "needs CPython 3.12 (pyenv install 3.12): not found when the tests were built"
)]
async fn the_python_frames_of_a_crash_on_cpython_312() {
    segfault_on_pyenv("3.12").await;
}

#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(
    not(strobe_cpython_313),
    ignore = "needs CPython 3.13 (pyenv install 3.13): not found when the tests were built"
)]
async fn the_python_frames_of_a_crash_on_cpython_313() {
    segfault_on_pyenv("3.13").await;
}

/// [`segfault_in_an_extension`] on pyenv's CPython `minor`, with its headers.
async fn segfault_on_pyenv(minor: &str) {
    let python = pyenv_python(minor);
    // <prefix>/bin/pythonX.Y -> <prefix>/include/pythonX.Y
    let include = python
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("include")
        .join(python.file_name().unwrap());
    segfault_in_an_extension(python.to_str().unwrap(), &include).await;
}

async fn segfault_in_an_extension(python: &str, include: &Path) {
    let env = Env::new();
    let c = env.client().await;
    let dir = crashext_for(&env, include);
    let v = c
        .ok(
            "debug_launch",
            json!({"command": python, "args": [dir.join("run.py")], "projectRoot": dir}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    let st = c.wait_ended(&id).await;
    assert_eq!(
        (&st["state"], &st["signal"]),
        (&json!("crashed"), &json!("SIGSEGV")),
        "{st}"
    );
    let crash = &c.events(&id, Some("crash")).await[0];
    let py = crash["pythonBacktrace"]
        .as_array()
        .unwrap_or_else(|| panic!("{crash}"));
    assert_eq!(py[0]["function"], "trigger", "innermost first: {py:?}");
    assert_eq!(py[0]["line"], 5);
    assert!(py[0]["file"].as_str().unwrap().ends_with("run.py"));
    assert_eq!(py[1]["function"], "<module>");
    assert_eq!(py[1]["line"], 8);
}
