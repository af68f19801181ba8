//! `strobe export`: a real traced session (the trace_c fixture under Frida,
//! through MCP) written as Chrome trace-event JSON and read back.

mod support;

use serde_json::{Value, json};
use support::{Env, fixture};

#[tokio::test(flavor = "multi_thread")]
async fn a_traced_session_exports_as_trace_events_with_nested_calls() {
    let env = Env::new();
    let c = env.client().await;
    c.ok(
        "debug_trace",
        json!({"add": ["fib", "process_point", "add", "scale"]}),
    )
    .await;
    let exe = fixture("trace_c");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap()}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);

    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("run.trace.json");
    let r = env
        .command(&["export", &id, "-o", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    assert!(stderr.contains("ui.perfetto.dev"), "{stderr}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).expect("valid JSON");
    let events = doc["traceEvents"].as_array().unwrap();
    let spans: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    for s in &spans {
        assert!(s["ts"].is_number() && s["dur"].is_number(), "{s}");
        assert!(s["pid"].is_u64() && s["tid"].is_u64(), "{s}");
    }
    let named = |n: &str| spans.iter().filter(|s| s["name"] == n).collect::<Vec<_>>();
    assert_eq!(named("fib").len(), 177, "every fib call is a span");
    assert_eq!(named("process_point").len(), 3);
    let range = |e: &Value| {
        let ts = e["ts"].as_f64().unwrap();
        (ts, ts + e["dur"].as_f64().unwrap())
    };
    // Each add and scale call lies inside a process_point call of the
    // same thread: the spans nest.
    for inner in named("add").into_iter().chain(named("scale")) {
        let (a, b) = range(inner);
        assert!(
            named("process_point").iter().any(|outer| {
                let (c, d) = range(outer);
                outer["tid"] == inner["tid"] && c <= a && b <= d
            }),
            "{inner} is inside no process_point"
        );
    }
    // fib(10) is the outermost fib and contains all the others.
    let top = named("fib")
        .into_iter()
        .max_by(|a, b| a["dur"].as_f64().partial_cmp(&b["dur"].as_f64()).unwrap())
        .unwrap();
    let (c, d) = range(top);
    assert!(named("fib").iter().all(|s| {
        let (a, b) = range(s);
        c <= a && b <= d
    }));
    let hello = events
        .iter()
        .find(|e| {
            e["name"] == "stdout"
                && e["args"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .contains("hello world")
        })
        .expect("the output line is an instant event");
    assert_eq!(hello["ph"], "i");
    assert!(
        events.iter().any(|e| e["ph"] == "M"
            && e["name"] == "process_name"
            && e["args"]["name"].as_str().unwrap().starts_with("trace_c")),
        "the process is named after its executable: {:?}",
        events.iter().filter(|e| e["ph"] == "M").collect::<Vec<_>>()
    );
    assert_eq!(doc["otherData"]["sessionId"], id.as_str());

    let missing = env
        .command(&["export", "no-such-session"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("no session 'no-such-session'"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
}
