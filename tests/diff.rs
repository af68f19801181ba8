//! `debug_diff` end to end: two real runs of a fixture under Frida, traced
//! alike, stored, and compared over MCP.

mod support;

use serde_json::{Value, json};
use support::{Client, Env, fixture};

/// A finished, traced run of `diverge` with `args`: its session id.
async fn run(c: &Client, args: &[&str]) -> String {
    let (id, _) = c.launch(&fixture("diverge"), args).await;
    c.wait_ended(&id).await;
    id
}

/// A GET over loopback: (status, body).
fn get(port: u16, path: &str, token: Option<&str>) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let req =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n{auth}\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let mut body = &raw[split + 4..];
    if !head.contains("transfer-encoding: chunked") {
        return (status, String::from_utf8_lossy(body).into_owned());
    }
    // Chunked: sizes in hex, each chunk followed by CRLF.
    let mut out = Vec::new();
    while let Some(eol) = body.windows(2).position(|w| w == b"\r\n") {
        let n =
            usize::from_str_radix(std::str::from_utf8(&body[..eol]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&body[eol + 2..eol + 2 + n]);
        body = &body[eol + 2 + n + 2..];
    }
    (status, String::from_utf8(out).unwrap())
}

async fn diff(c: &Client, args: Value) -> support::Reply {
    c.reply("debug_diff", args).await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_divergence_is_the_argument_deep_in_the_chain() {
    let env = Env::new();
    let c = env.client().await;
    // Staged: every later launch is traced with these.
    c.ok(
        "debug_trace",
        json!({"add": ["round_", "stage", "leaf", "extra_check"]}),
    )
    .await;
    let good = run(&c, &[]).await;
    let bad = run(&c, &["40"]).await;

    let r = diff(&c, json!({"baseline": good, "candidate": bad})).await;
    assert!(!r.is_error, "{}", r.text);
    let v = &r.value;
    let d = &v["firstDivergence"];
    assert_eq!(d["kind"], "arguments", "{v}");
    assert_eq!(d["candidate"]["function"], "leaf", "{d}");
    assert_eq!(d["candidate"]["path"], "round_ > stage > leaf", "{d}");
    assert_eq!(d["candidate"]["ordinal"], 3, "the fourth round: {d}");
    assert_eq!(d["candidate"]["arguments"], "v=40", "{d}");
    assert_eq!(d["baseline"]["arguments"], "v=3", "{d}");
    // 3 rounds of 3 calls matched, then round_ and stage of the fourth.
    assert_eq!(d["matchedBefore"], 11, "{d}");
    // Both event ids point at the leaf's enter in each session.
    for (side, id) in [("baseline", &good), ("candidate", &bad)] {
        let e = c
            .ok(
                "debug_query",
                json!({"sessionId": id, "eventIdFrom": d[side]["eventId"], "limit": 1}),
            )
            .await;
        assert_eq!(e["events"][0]["function"], "leaf", "{side}: {e}");
        assert_eq!(e["events"][0]["eventType"], "function_enter", "{side}: {e}");
    }

    // The rest of what differs.
    assert_eq!(
        v["calls"]["onlyInCandidate"][0]["function"], "extra_check",
        "{v}"
    );
    assert_eq!(v["exit"]["baseline"], "exited with code 0", "{v}");
    assert_eq!(v["exit"]["candidate"], "exited with code 1", "{v}");
    let out = &v["output"]["firstDifferences"];
    assert_eq!(out[0]["stream"], "stdout", "{v}");
    assert_eq!(out[0]["line"], 3);
    assert_eq!(out[0]["candidate"]["text"], "round 3: 81");
    assert_eq!(out[0]["baseline"]["text"], "round 3: 7");
    assert_eq!(out[1]["stream"], "stderr");
    let leaf_return = v["valueDifferences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["function"] == "leaf" && x["what"] == "returnValue" && x["in"] == "candidate")
        .unwrap_or_else(|| panic!("no leaf return difference: {v}"));
    assert_eq!(leaf_return["value"], "80");
    assert_eq!(leaf_return["calls"], 1);
    assert_eq!(leaf_return["of"], 5);
    assert!(v["notCompared"].as_array().unwrap().is_empty(), "{v}");
    // The text answers on its own.
    assert!(r.text.contains("First divergence"), "{}", r.text);
    assert!(r.text.contains("leaf called with"), "{}", r.text);
    assert!(
        r.text.contains("Only in candidate: extra_check (1)"),
        "{}",
        r.text
    );
    assert!(
        r.text
            .contains("leaf returned 80 in 1/5 calls in candidate, never in baseline"),
        "{}",
        r.text
    );

    // The web API gives the same answer, behind the token.
    let (port, token) = env.ui_endpoint();
    let path = format!("/api/diff?baseline={good}&candidate={bad}");
    let (status, body) = get(port, &path, Some(&token));
    assert_eq!(status, 200, "{body}");
    let web: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(web["firstDivergence"], v["firstDivergence"], "{web}");
    assert!(web["text"].as_str().unwrap().contains("First divergence"));
    assert_eq!(get(port, &path, None).0, 401);
    let (status, body) = get(port, &format!("{path}&maxItems=99"), Some(&token));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("maxItems"), "{body}");

    // Two runs alike: no divergence, nothing else differs.
    let again = run(&c, &[]).await;
    let v = c
        .ok("debug_diff", json!({"baseline": good, "candidate": again}))
        .await;
    assert!(v["firstDivergence"].is_null(), "{v}");
    assert_eq!(v["exit"]["same"], true, "{v}");
    assert!(
        v["output"]["firstDifferences"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(v["valueDifferences"].as_array().unwrap().is_empty(), "{v}");

    // Only some functions: leaf's calls alone still diverge at the fourth.
    let v = c
        .ok(
            "debug_diff",
            json!({"baseline": good, "candidate": bad, "functions": ["lea*"], "maxItems": 1}),
        )
        .await;
    assert_eq!(v["firstDivergence"]["candidate"]["path"], "leaf", "{v}");
    assert_eq!(v["firstDivergence"]["matchedBefore"], 3, "{v}");
    assert!(v["calls"]["onlyInCandidate"].as_array().unwrap().is_empty());
}

/// Two threads that started in the other order are still each compared
/// with their counterpart: no divergence, though matching threads by order
/// of appearance alone would find one at the first call.
#[tokio::test(flavor = "multi_thread")]
async fn threads_started_in_another_order_are_matched_by_what_they_do() {
    let env = Env::new();
    let c = env.client().await;
    c.ok("debug_trace", json!({"add": ["decode_block", "mix_block"]}))
        .await;
    let exe = fixture("thread_order");
    let mut runs = Vec::new();
    for order in ["dm", "md"] {
        let (id, _) = c.launch(&exe, &[order]).await;
        c.wait_ended(&id).await;
        runs.push(id);
    }
    let v = c
        .ok(
            "debug_diff",
            json!({"baseline": runs[0], "candidate": runs[1]}),
        )
        .await;
    assert!(v["firstDivergence"].is_null(), "{v}");
    assert!(v["valueDifferences"].as_array().unwrap().is_empty(), "{v}");
    let calls = c.calls_of(&runs[1], "function_enter", "decode_block").await;
    assert_eq!(calls.len(), 4, "the candidate's decoder was traced");
}

#[tokio::test(flavor = "multi_thread")]
async fn different_programs_and_bad_arguments_are_refused_readably() {
    let env = Env::new();
    let c = env.client().await;
    let a = run(&c, &[]).await;
    let (other, _) = c.launch(&fixture("late_call"), &[]).await;
    c.wait_ended(&other).await;
    let r = diff(&c, json!({"baseline": a, "candidate": other})).await;
    let e = r.error_text();
    assert!(
        e.contains("two runs of one program") && e.contains("late_call"),
        "{e}"
    );
    let r = diff(&c, json!({"baseline": a, "candidate": a})).await;
    assert!(r.error_text().contains("compares two runs"), "{}", r.text);
    let r = diff(&c, json!({"baseline": a, "candidate": "nope"})).await;
    assert!(r.error_text().contains("nope"), "{}", r.text);
    let r = diff(
        &c,
        json!({"baseline": a, "candidate": other, "maxItems": 0}),
    )
    .await;
    assert!(
        r.error_text().contains("'maxItems' must be 1–50"),
        "{}",
        r.text
    );
    let r = diff(
        &c,
        json!({"baseline": a, "candidate": other, "functions": [""]}),
    )
    .await;
    assert!(r.error_text().contains("'functions'"), "{}", r.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_diff_over_evicted_events_says_what_it_could_not_compare() {
    // A tiny cap: the oldest calls of each run are evicted.
    let env = Env::with_settings(json!({"events.maxPerSession": 6}));
    let c = env.client().await;
    c.ok("debug_trace", json!({"add": ["round_", "stage", "leaf"]}))
        .await;
    let good = run(&c, &[]).await;
    let bad = run(&c, &["40"]).await;
    let r = diff(&c, json!({"baseline": good, "candidate": bad})).await;
    assert!(!r.is_error, "{}", r.text);
    let notes = r.value["notCompared"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("oldest events were evicted")),
        "{}",
        r.value
    );
    assert!(r.text.contains("Not compared: baseline's"), "{}", r.text);
}
