//! Opening a big session in the web UI, server and client together: a
//! daemon serves a store holding a 1,000,000-event session and a
//! 1,000-event one (synthetic, see `strobe_view::synthetic`), and Debian's
//! Chromium (playwright-core, tests/browser/open_bench.mjs) opens each,
//! alternating, timing navigation → timeline drawn from the server's
//! answer, the bytes fetched from the API, and one wheel zoom → redrawn.
//! The small session is the baseline: the UI's fixed cost.
//!
//! `cargo bench -p strobe --bench ui_open` (`STROBE_BENCH_EVENTS` changes
//! the size; needs ui/dist built, chromium and playwright-core: `./dev bench`).
//! With `STROBE_BENCH_KEEP=1` the daemon and its home are left running
//! afterwards, and their URL printed, to look at the big session by hand.

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use strobe_store::Store;

const RUNS: usize = 5;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let events: u64 = std::env::var("STROBE_BENCH_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    assert!(
        repo.join("ui/dist/index.html").is_file(),
        "build the web UI first: ./dev ui"
    );
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let (big, small) = {
        let store = Store::open(&home.path().join("strobe.db")).unwrap();
        let big = strobe_view::synthetic::fill(&store, "big-2026-11-22-00h00", events).unwrap();
        let small = strobe_view::synthetic::fill(&store, "small-2026-11-22-00h00", 1_000).unwrap();
        store.close().unwrap();
        (big, small)
    };
    let strobe = env!("CARGO_BIN_EXE_strobe");
    let ui = Command::new(strobe)
        .arg("ui")
        .env("STROBE_HOME", home.path())
        .output()
        .unwrap();
    assert!(
        ui.status.success(),
        "{}",
        String::from_utf8_lossy(&ui.stderr)
    );
    let url = String::from_utf8(ui.stdout).unwrap().trim().to_string();
    let out = Command::new("node")
        .arg(repo.join("tests/browser/open_bench.mjs"))
        .arg(&url)
        .arg(RUNS.to_string())
        .args([&small, &big])
        .output()
        .unwrap();
    if std::env::var_os("STROBE_BENCH_KEEP").is_some() {
        let kept = home.keep();
        println!("kept: STROBE_HOME={} {url}", kept.display());
    } else if let Ok(pid) = std::fs::read_to_string(home.path().join("strobe.pid")) {
        // The daemon `strobe ui` started for this home.
        let _ = Command::new("kill").arg(pid.trim()).status();
    }
    assert!(
        out.status.success(),
        "the browser script failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let of = |id: &str, field: &str| -> Vec<f64> {
        rows.iter()
            .filter(|r| r["session"] == id)
            .map(|r| r[field].as_f64().unwrap())
            .collect()
    };
    let (open_big, open_small) = (median(of(&big, "openMs")), median(of(&small, "openMs")));
    let (zoom_big, zoom_small) = (median(of(&big, "zoomMs")), median(of(&small, "zoomMs")));
    let bytes_big = median(of(&big, "apiBytes"));
    let tl_big = median(of(&big, "timelineBytes"));
    println!(
        "open in Chromium, {events}-event session: {open_big:.0} ms, {bytes_big:.0} API bytes ({tl_big:.0} of them timeline)"
    );
    println!(
        "open in Chromium, 1,000-event session: {open_small:.0} ms, {:.0} API bytes",
        median(of(&small, "apiBytes"))
    );
    println!("one wheel zoom to redrawn: {zoom_big:.0} ms (big) vs {zoom_small:.0} ms (small)");
    println!(
        "ratios (big / small): open {:.2}×, zoom {:.2}×",
        open_big / open_small,
        zoom_big / zoom_small
    );
}
