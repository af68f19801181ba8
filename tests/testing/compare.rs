//! `debug_test {rerun: "compare"}`: a test that passed traced, then broke,
//! rerun traced and diffed with the passing run (real unittest under real
//! CPython under Frida).

use crate::run;
use crate::support::Env;
use serde_json::json;

const TEST: &str = "import unittest\n\nimport shop\n\n\nclass ShopTests(unittest.TestCase):\n    \
def test_total(self):\n        self.assertEqual(shop.total([\"apple\", \"pear\", \"apple\"] * 2), 18)\n\n\n\
if __name__ == \"__main__\":\n    unittest.main()\n";

/// The shop's code, with `discount` dividing by `divisor` (10 is right).
fn shop(divisor: u32) -> String {
    format!(
        "def price(item):\n    return {{\"apple\": 3, \"pear\": 4}}[item]\n\n\n\
         def discount(total):\n    return total // {divisor}\n\n\n\
         def total(items):\n    t = sum(price(i) for i in items)\n    return t - discount(t)\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_test_is_diffed_with_its_last_passing_traced_run() {
    let env = Env::new();
    let c = env.client().await;
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    std::fs::write(root.join("test_shop.py"), TEST).unwrap();
    std::fs::write(root.join("shop.py"), shop(10)).unwrap();
    let args = json!({"action": "run", "projectRoot": root, "framework": "unittest",
                      "tracePatterns": ["shop.*"], "rerun": "compare"});

    let good = run(&c, args.clone()).await;
    assert_eq!(good["summary"]["failed"], 0, "{good}");
    assert_eq!(good["compare"]["passed"], true, "{good}");
    assert!(good.get("diff").is_none(), "{good}");

    // The change that breaks it, then the same rerun.
    std::fs::write(root.join("shop.py"), shop(5)).unwrap();
    let r = c.test_run_reply(args.clone(), 5).await;
    let bad = &r.value;
    assert_eq!(bad["summary"]["failed"], 1, "{bad}");
    assert_eq!(
        bad["compare"]["baselineSessionId"], good["sessionId"],
        "the passing run is the baseline: {bad}"
    );
    let d = &bad["diff"]["firstDivergence"];
    assert_eq!(d["kind"], "returnValue", "{bad}");
    assert_eq!(d["candidate"]["function"], "shop.discount", "{d}");
    assert_eq!(d["baseline"]["returnValue"], "2", "{d}");
    assert_eq!(d["candidate"]["returnValue"], "4", "{d}");
    assert!(r.text.contains("First divergence"), "{}", r.text);
    assert!(r.text.contains("shop.discount returned 4"), "{}", r.text);

    // Without tracePatterns a named test is traced as its failure suggested
    // (else the project's code); with nothing passing on those patterns
    // kept, the answer says how to get a baseline.
    let name = bad["failures"][0]["name"].as_str().unwrap().to_string();
    let mut suggested: Vec<String> = bad["failures"][0]["suggestedTraces"]
        .as_array()
        .map(|a| a.iter().map(|p| p.as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    if suggested.is_empty() {
        suggested = vec!["@usercode".into()];
    }
    suggested.sort();
    let again = run(
        &c,
        json!({"action": "run", "projectRoot": root, "framework": "unittest",
               "test": name, "rerun": "compare"}),
    )
    .await;
    assert_eq!(
        again["compare"]["tracePatterns"],
        json!(suggested),
        "{again}"
    );
    assert!(again["compare"]["baselineSessionId"].is_null(), "{again}");
    assert!(
        again["compare"]["hint"]
            .as_str()
            .unwrap()
            .contains("run it where it passes"),
        "{again}"
    );

    let r = c
        .reply(
            "debug_test",
            json!({"action": "run", "projectRoot": root, "rerun": "diff"}),
        )
        .await;
    assert!(
        r.error_text()
            .contains("'rerun' \"diff\" is not \"compare\""),
        "{}",
        r.text
    );

    // A daemon restarted between the passing run and the failing one still
    // finds the baseline: it is stored, and its session is retained.
    let daemon = env.daemon_pid().expect("the daemon's pid file");
    assert!(env.is_our_daemon(daemon));
    crate::support::signal(daemon, 15);
    assert!(env.wait_daemon_gone(daemon, std::time::Duration::from_secs(20)));
    c.ok_after_daemon_restart("debug_session", json!({"action": "list"}))
        .await;
    assert_ne!(env.daemon_pid(), Some(daemon));
    let r = c.test_run_reply(args, 5).await;
    let after = &r.value;
    assert_eq!(after["summary"]["failed"], 1, "{after}");
    assert_eq!(
        after["compare"]["baselineSessionId"], good["sessionId"],
        "the stored passing run is the baseline after a restart: {after}"
    );
    assert_eq!(
        after["diff"]["firstDivergence"]["candidate"]["function"], "shop.discount",
        "{after}"
    );
}
