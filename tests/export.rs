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

/// Decodes a Perfetto trace with the protobuf classes Perfetto publishes
/// (the `perfetto` package on PyPI ships `perfetto_trace_pb2`, generated
/// from `protos/perfetto/trace/perfetto_trace.proto`) and prints what the
/// test checks as JSON.
const DECODE: &str = r#"
import json, sys
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
t = pb.Trace()
t.ParseFromString(open(sys.argv[1], 'rb').read())
tracks, events = {}, []
for p in t.packet:
    if p.HasField('track_descriptor'):
        d = p.track_descriptor
        kind = 'thread' if d.HasField('thread') else 'process' if d.HasField('process') else 'other'
        tracks[d.uuid] = {'kind': kind, 'name': d.name or d.thread.thread_name or d.process.process_name,
                          'parent': d.parent_uuid, 'pid': d.thread.pid or d.process.pid}
    if p.HasField('track_event'):
        e = p.track_event
        ann = {}
        for a in e.debug_annotations:
            v = a.WhichOneof('value')
            ann[a.name] = getattr(a, v) if v else None
        events.append({'ts': p.timestamp, 'type': pb.TrackEvent.Type.Name(e.type), 'track': e.track_uuid,
                       'name': e.name, 'ann': ann, 'flows': list(e.flow_ids),
                       'ends': list(e.terminating_flow_ids)})
print(json.dumps({'tracks': {str(k): v for k, v in tracks.items()}, 'events': events}))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_perfetto_export_decodes_with_perfettos_own_protos() {
    let env = Env::new();
    let c = env.client().await;
    c.ok("debug_trace", json!({"add": ["add", "evaluate"]}))
        .await;
    let exe = fixture("repl");
    let v = c
        .ok(
            "debug_launch",
            json!({"command": exe, "projectRoot": exe.parent().unwrap(), "stdin": "pipe"}),
        )
        .await;
    let id = v["sessionId"].as_str().unwrap().to_string();
    c.wait_stdout(&id).await;
    c.ok(
        "debug_channel",
        json!({"sessionId": id, "action": "send", "channel": "stdio",
               "data": {"text": "add 2 3\n", "eof": true}}),
    )
    .await;
    assert_eq!(c.wait_ended(&id).await["exitCode"], 0);

    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("run.pftrace");
    let r = env
        .command(&[
            "export",
            &id,
            "--format",
            "perfetto",
            "-o",
            file.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    assert!(
        stderr.contains("1 flows from the agent's calls"),
        "{stderr}"
    );
    let decoded = std::process::Command::new("python3")
        .args(["-c", DECODE, file.to_str().unwrap()])
        .output()
        .expect("python3 (./dev test puts the test tools' venv first on PATH)");
    assert!(
        decoded.status.success(),
        "decoding failed (./dev test installs perfetto and protobuf in the test tools' venv): {}",
        String::from_utf8_lossy(&decoded.stderr)
    );
    let doc: Value = serde_json::from_slice(&decoded.stdout).unwrap();
    let tracks = doc["tracks"].as_object().unwrap();
    let events = doc["events"].as_array().unwrap();
    let track_of = |e: &Value| tracks[&e["track"].as_u64().unwrap().to_string()].clone();

    // The add call: a slice on the program's main thread track (a child of
    // its process's), its typed arguments at the begin, its return at the end.
    let begin = events
        .iter()
        .find(|e| e["type"] == "TYPE_SLICE_BEGIN" && e["name"] == "add")
        .unwrap_or_else(|| panic!("no add slice: {doc}"));
    assert_eq!(begin["ann"]["args.a"], 2, "{begin}");
    assert_eq!(begin["ann"]["args.b"], 3, "{begin}");
    let thread = track_of(begin);
    assert_eq!(thread["kind"], "thread", "{thread}");
    let process = &tracks[&thread["parent"].as_u64().unwrap().to_string()];
    assert_eq!(process["kind"], "process", "{process}");
    assert!(
        process["name"].as_str().unwrap().starts_with("repl"),
        "{process}"
    );
    let end = events
        .iter()
        .find(|e| {
            e["type"] == "TYPE_SLICE_END"
                && e["track"] == begin["track"]
                && e["ts"].as_u64() >= begin["ts"].as_u64()
                && e["ann"].get("returnValue").is_some()
                && e["ann"]["returnValue"] == 5
        })
        .unwrap_or_else(|| panic!("no end with returnValue 5: {doc}"));
    assert!(end["ts"].as_u64() >= begin["ts"].as_u64());
    // evaluate encloses add: begun before it, ended after.
    let slices: Vec<&Value> = events
        .iter()
        .filter(|e| e["track"] == begin["track"])
        .filter(|e| e["type"] == "TYPE_SLICE_BEGIN" || e["type"] == "TYPE_SLICE_END")
        .collect();
    let names: Vec<String> = slices
        .iter()
        .map(|e| {
            format!(
                "{}:{}",
                e["type"].as_str().unwrap(),
                e["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert!(
        names.windows(4).any(|w| w
            == [
                "TYPE_SLICE_BEGIN:evaluate",
                "TYPE_SLICE_BEGIN:add",
                "TYPE_SLICE_END:",
                "TYPE_SLICE_END:"
            ]),
        "{names:?}"
    );

    // Output lines are instants on the process track.
    let answer = events
        .iter()
        .find(|e| e["type"] == "TYPE_INSTANT" && e["name"] == "stdout" && e["ann"]["text"] == "= 5")
        .unwrap_or_else(|| panic!("no stdout instant '= 5': {doc}"));
    assert_eq!(track_of(answer)["kind"], "process");

    // The agent's debug_channel call is a slice on the agent track, with a
    // flow to the stdin event it caused.
    let call = events
        .iter()
        .find(|e| e["type"] == "TYPE_SLICE_BEGIN" && e["name"] == "debug_channel")
        .unwrap_or_else(|| panic!("no debug_channel slice: {doc}"));
    assert_eq!(track_of(call)["name"], "agent (MCP tool calls)");
    let flow = call["flows"][0].as_u64().expect("a flow from the call");
    let stdin = events
        .iter()
        .find(|e| e["name"] == "stdin")
        .unwrap_or_else(|| panic!("no stdin instant: {doc}"));
    assert_eq!(stdin["ends"], json!([flow]), "{stdin}");
}
