//! The AT-SPI + X11 backend against a real GTK3 program on a real private
//! display (Xvfb + D-Bus + the AT-SPI bus launcher): the tree, the
//! window, the capture, and the display's processes gone when it stops.

#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use strobe_ui::backends::atspi::Atspi;
use strobe_ui::virtual_display::VirtualDisplay;
use strobe_ui::{UiBackend, UiError, UiNode};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gui/gtk_demo.py")
}

struct App(Child);
impl Drop for App {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn launch(vd: &VirtualDisplay, args: &[&str], extra_env: &[(&str, &str)]) -> App {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(fixture()).args(args).stdout(Stdio::null());
    for k in strobe_ui::virtual_display::REMOVED_ENV {
        cmd.env_remove(k);
    }
    cmd.envs(vd.env()).envs(extra_env.iter().copied());
    App(cmd
        .spawn()
        .expect("/usr/bin/python3 runs (./dev tests installs python3-gi)"))
}

fn tree_when_registered(vd: &VirtualDisplay, pid: u32) -> Vec<UiNode> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match Atspi.tree(&vd.display(), pid, false) {
            Ok(t) if !t.is_empty() && t[0].bounds.is_some() => return t,
            Ok(_) | Err(UiError::NotAccessible { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100))
            }
            other => panic!("no tree for pid {pid}: {other:?}"),
        }
    }
}

fn all_nodes(n: &UiNode) -> Vec<&UiNode> {
    let mut v = vec![n];
    for c in &n.children {
        v.extend(all_nodes(c));
    }
    v
}

#[test]
fn a_gtk_window_is_read_found_and_captured_on_a_private_display() {
    let vd = VirtualDisplay::start().expect("a virtual display starts");
    assert!(strobe_ui::virtual_display::is_private(
        std::path::Path::new(
            &vd.env()
                .iter()
                .find(|(k, _)| k == "XDG_RUNTIME_DIR")
                .unwrap()
                .1
        )
    ));
    // Only holders of the display's cookie get in.
    let stranger = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "import gi; gi.require_version('Gdk', '3.0'); from gi.repository import Gdk; import sys; sys.exit(0 if Gdk.Display.open(sys.argv[1]) else 3)", vd.name()])
        .env_remove("XAUTHORITY")
        .env("HOME", "/nonexistent")
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(
        stranger.code(),
        Some(3),
        "a client without the cookie was let in"
    );
    let app = launch(&vd, &[], &[]);
    let pid = app.0.id();
    assert!(Atspi.available(&vd.display()));
    let started = Instant::now();
    let tree = tree_when_registered(&vd, pid);
    eprintln!("first tree after {:?}", started.elapsed());
    let t0 = Instant::now();
    let tree = {
        let _ = &tree;
        Atspi.tree(&vd.display(), pid, false).unwrap()
    };
    eprintln!("warm tree in {:?}", t0.elapsed());
    let nodes: Vec<&UiNode> = tree.iter().flat_map(all_nodes).collect();
    for n in &nodes {
        eprintln!(
            "{} [{}] {:?} {:?} {:?} {:?}",
            n.role, n.name, n.bounds, n.actions, n.value, n.states
        );
    }
    let by = |role: &str, name: &str| {
        nodes
            .iter()
            .find(|n| n.role == role && n.name == name)
            .unwrap_or_else(|| panic!("no {role} [{name}]"))
    };
    assert_eq!(tree[0].role, "frame");
    assert_eq!(tree[0].name, "Strobe demo");
    let play = by("push button", "Play");
    assert!(
        play.actions.iter().any(|a| a == "click"),
        "{:?}",
        play.actions
    );
    assert_eq!(by("slider", "Volume").value.as_deref(), Some("0.5"));
    assert!(
        by("check box", "Loop")
            .states
            .iter()
            .any(|s| s == "checked")
    );
    assert_eq!(by("text", "Title").value.as_deref(), Some("hello"));
    assert_eq!(by("combo box", "Quality").value.as_deref(), Some("Medium"));

    let windows = Atspi.windows(&vd.display(), &[pid]).unwrap();
    assert_eq!(windows.len(), 1, "{windows:?}");
    assert_eq!(windows[0].title, "Strobe demo");
    let frame = tree[0].bounds.unwrap();
    assert_eq!(
        (windows[0].bounds.width, windows[0].bounds.height),
        (frame.width, frame.height)
    );
    let t0 = Instant::now();
    let shot = Atspi.capture(&vd.display(), &windows[0]).unwrap();
    eprintln!("capture in {:?}", t0.elapsed());
    assert_eq!((shot.width, shot.height), (frame.width, frame.height));
    let swatch = by("drawing area", "Swatch").bounds.unwrap();
    let (cx, cy) = (
        (swatch.x - windows[0].bounds.x) as u32 + swatch.width / 2,
        (swatch.y - windows[0].bounds.y) as u32 + swatch.height / 2,
    );
    assert_eq!(shot.pixel(cx, cy), Some([255, 0, 255, 255]));
    let png = shot.png().unwrap();
    assert_eq!(&png[1..4], b"PNG");
    drop(app);

    let pids = vd.pids();
    drop(vd);
    for pid in pids {
        assert!(!alive(pid), "{pid} survived the display's stop");
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}
