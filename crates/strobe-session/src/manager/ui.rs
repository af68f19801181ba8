//! `debug_ui`: the session's GUI as its user sees it — the accessibility
//! tree of every process of the session, a screenshot of its window — and
//! a `ui_snapshot` event on the session's timeline for every look, with
//! what changed since the previous one.
//!
//! The platform is reached only through `strobe_ui`'s `UiBackend`; ids,
//! rendering and the diff are the same everywhere.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};
use strobe_core::event::EventKind;
use strobe_ui::ids::{Identified, identify};
use strobe_ui::render::{self, Shown};
use strobe_ui::virtual_display::VirtualDisplay;
use strobe_ui::{Display, UiBackend, UiError, UiNode, Window};

use super::ui_tree::{all_lines, diff, roots_of, structured, ui_window, unknown_id, vision_only};
use startup::StartupActivity;

mod startup;
use super::{Live, SessionManager};
use crate::error::SessionError;

/// How long after its launch a program may take to show its window and
/// register on the accessibility bus (ENGINEERING.md: ~0.35 s for GTK3,
/// more on a loaded machine) before "no window" is an answer.
const REGISTRATION_GRACE: Duration = Duration::from_secs(8);

/// How long past the grace a program with no window yet that is still busy
/// (using CPU, so most likely still starting: an interpreter importing its
/// toolkit under Frida on a loaded machine) is waited for. An idle program
/// without a window is answered at the grace.
const BUSY_STARTUP_LIMIT: Duration = Duration::from_secs(30);

/// What `debug_ui` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UiMode {
    /// The accessibility tree.
    Tree,
    /// A screenshot of the window.
    Screenshot,
    /// Both.
    Both,
}

/// A `debug_ui` request.
#[derive(Debug, Clone)]
pub struct UiRequest {
    /// What to show.
    pub mode: UiMode,
    /// Only this node's subtree.
    pub id: Option<String>,
    /// At most this many nodes.
    pub max_nodes: usize,
    /// Hidden nodes too.
    pub all: bool,
    /// Run the vision pipeline on the screenshot.
    pub vision: bool,
    /// Vision results below this confidence are left out.
    pub min_confidence: f32,
    /// A shape overlapping its node this much (IoU) confirms it.
    pub iou_threshold: f64,
    /// The vision sidecar stops after this long unused.
    pub vision_idle: Duration,
    /// The venv holding onnxruntime and the models (`frida.venv`).
    pub venv: Option<std::path::PathBuf>,
}

/// A window of the session, as `debug_ui` reports it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UiWindow {
    /// Its title.
    pub title: String,
    /// The process showing it.
    pub pid: u32,
    /// `[x, y, width, height]` on the display.
    pub bounds: [i64; 4],
}

/// The screenshot `debug_ui` took.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UiScreenshot {
    /// Where the PNG was saved.
    pub path: String,
    /// Its width in pixels.
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
    /// The PNG itself, for the reply's image content.
    #[serde(skip)]
    pub png: Vec<u8>,
}

/// What changed since the session's previous snapshot.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UiChanges {
    /// Ids that appeared (at most 50; `addedCount` has them all).
    pub added: Vec<String>,
    /// Ids that disappeared.
    pub removed: Vec<String>,
    /// Ids whose line changed (name, geometry, value, states).
    pub changed: Vec<String>,
    /// How many appeared.
    pub added_count: usize,
    /// How many disappeared.
    pub removed_count: usize,
    /// How many changed.
    pub changed_count: usize,
}

/// `debug_ui`'s answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UiResponse {
    /// The display looked at (`:12`).
    pub display: String,
    /// The session's windows.
    pub windows: Vec<UiWindow>,
    /// The compact tree, one node a line (with what was cut or hidden).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
    /// The shown nodes, structured: `{id, role, name, bounds, actions,
    /// value, states, children}`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<Value>,
    /// Nodes shown.
    pub shown: usize,
    /// Nodes left out by `maxNodes`.
    pub cut: usize,
    /// Hidden nodes left out (`all` shows them).
    pub hidden: usize,
    /// What changed since the previous snapshot (none on the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<UiChanges>,
    /// The screenshot, when asked for (or when the tree could not be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<UiScreenshot>,
    /// What vision did: boxes found, nodes confirmed, nodes added.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vision: Option<Value>,
    /// Problems worth knowing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A running session, the display its GUI is on, and the backend serving it.
pub(super) type Gui = (std::sync::Arc<Live>, Display, Box<dyn UiBackend>);

/// A session's display and what `debug_ui` remembers between calls.
#[derive(Debug, Default)]
pub(super) struct UiState {
    /// The display the program is on, if it has one.
    pub display: Option<Display>,
    /// The private display started for the session, stopped with it.
    pub virtual_display: Option<VirtualDisplay>,
    /// The previous snapshot's lines by id, for the next one's diff.
    pub(super) previous: Option<BTreeMap<String, String>>,
    /// Screenshots taken, to number their files.
    shots: u32,
    /// Snapshots recorded, to number them (a `ui_action` names the ones
    /// before and after it).
    pub(super) snapshots: u32,
    /// The nodes only vision found in the last look that ran it, by id:
    /// `debug_ui_action` acts on them by their geometry.
    pub(super) vision_nodes: BTreeMap<String, UiNode>,
    /// Held by a `debug_ui_action` from its first look to its last: one
    /// action at a time per session, so that the evidence an action
    /// reports (its tree diff, the output it saw, the value it read back)
    /// is its own, and a plan is never learned while another action moves
    /// the widget.
    pub(super) acting: std::sync::Arc<std::sync::Mutex<()>>,
}

impl UiState {
    /// The state of a session on `display`, with its virtual display if it
    /// got one.
    pub fn new(display: Option<Display>, virtual_display: Option<VirtualDisplay>) -> UiState {
        UiState {
            display: virtual_display
                .as_ref()
                .map(VirtualDisplay::display)
                .or(display),
            virtual_display,
            ..Default::default()
        }
    }
}

/// Why session `live` has no GUI to reach any more, if so: its program
/// ended or is being stopped, or a server of its virtual display ended.
/// Asked before a look or an action, and again when one fails, so that a
/// failure is told as what happened, not as the broken pipe it caused.
pub(super) fn gui_lost(live: &Live) -> Option<SessionError> {
    let id = &live.id;
    {
        let life = live.life.lock().expect("lifecycle lock");
        if life.stopping {
            return Some(SessionError::exited(format!(
                "session '{id}' was stopped (debug_session stop), so its GUI is gone; what it recorded can still be queried (debug_query {{sessionId: \"{id}\", eventType: \"ui_action\"}})"
            )));
        }
        if life.ended {
            let why = life
                .reason
                .as_ref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            return Some(SessionError::exited(format!(
                "the program of session '{id}' has ended{why}, so it has no GUI to show; its ui_snapshot events can still be queried with debug_query {{eventType: \"ui_snapshot\"}}"
            )));
        }
    }
    // The virtual display's servers: a GUI program does not outlive its X
    // server, so when both are gone, both are said.
    let display_gone = {
        let mut ui = live.ui.lock().expect("ui lock");
        ui.virtual_display.as_mut().and_then(|vd| {
            let name = vd.name().to_string();
            vd.server_gone().map(|(server, pid, how)| {
                format!(
                    "its virtual display {name} is gone: its {server} (pid {pid}) ended ({how})"
                )
            })
        })
    };
    let exited = crate::procfs::Stat::of(live.pid)
        .and_then(|s| s.state())
        .is_none_or(|s| s == 'Z' || s == 'X');
    if exited {
        return Some(SessionError::exited(format!(
            "the program of session '{id}' (pid {}) has exited, so it has no GUI any more{}: its output says why (debug_query {{sessionId: \"{id}\", eventType: \"stderr\"}}), and debug_session status how it ended",
            live.pid,
            display_gone
                .map(|g| format!("; {g}, which a GUI program does not survive"))
                .unwrap_or_default()
        )));
    }
    display_gone.map(|g| {
        SessionError::internal(format!(
            "session '{id}' cannot be seen or acted on: {g}, so nothing the program shows can be seen and no input reaches it. Stop the session (debug_session {{action: \"stop\", sessionId: \"{id}\"}}) and launch it again: the new launch gets a new virtual display"
        ))
    })
}

/// Adds to the virtual display's record the helpers its bus has started
/// since the last look (see `strobe_ui::leftovers`).
fn record_helpers(live: &Live) {
    if let Some(vd) = live.ui.lock().expect("ui lock").virtual_display.as_mut()
        && let Err(e) = vd.note_helpers()
    {
        tracing::warn!(
            "session {}: recording the processes of display {}: {e}",
            live.id,
            vd.name()
        );
    }
}

pub(super) fn ui_error(e: UiError) -> SessionError {
    match e {
        UiError::Timeout { .. } | UiError::Unreachable { .. } | UiError::Capture(_) => {
            SessionError::internal(e.to_string())
        }
        _ => SessionError::validation(e.to_string()),
    }
}

impl SessionManager {
    /// The running session `id`, the display its GUI is on, and the
    /// backend that serves it; each failure says what to do.
    pub(super) fn gui_of(&self, id: &str) -> Result<Gui, SessionError> {
        let live = self.live(id).ok_or_else(|| match self.store.session(id) {
            Ok(Some(_)) => SessionError::exited(format!(
                "session '{id}' is not running any more, so it has no GUI to show; its events (ui_snapshot ones included) can still be queried"
            )),
            _ => SessionError::session_not_found(id),
        })?;
        if let Some(e) = gui_lost(&live) {
            return Err(e);
        }
        let display = live.ui.lock().expect("ui lock").display.clone().ok_or_else(|| {
            let wayland = live
                .program_env
                .iter()
                .find(|(k, _)| k == "WAYLAND_DISPLAY")
                .map(|(_, v)| v.clone())
                .or_else(|| std::env::var("WAYLAND_DISPLAY").ok())
                .filter(|v| !v.is_empty());
            SessionError::validation(match wayland {
                Some(w) => format!(
                    "session '{id}' is on Wayland ({w}) without X11: its accessibility tree is on AT-SPI, but Wayland gives no global coordinates and no capture of another client, and Strobe reads windows through X11. Launch it with display: \"virtual\" (a private X display), or with DISPLAY set to an Xwayland display"
                ),
                None => format!(
                    "session '{id}' has no display: the program was launched without DISPLAY. Launch it again with display: \"virtual\" to give it a private one"
                ),
            })
        })?;
        let backend = strobe_ui::backends::for_display(&display).ok_or_else(|| {
            SessionError::validation(format!(
                "display {} does not answer (or no UI backend serves this platform): launch with display: \"virtual\" for a private one",
                display.label()
            ))
        })?;
        Ok((live, display, backend))
    }

    /// `debug_ui`: the tree and/or a screenshot of session `id`'s windows,
    /// recorded as a `ui_snapshot` event.
    pub fn ui(&self, id: &str, req: &UiRequest) -> Result<UiResponse, SessionError> {
        let (live, display, backend) = self.gui_of(id)?;
        let pids = self.gui_pids(&live);
        let want_tree = req.mode != UiMode::Screenshot;
        let mut want_shot = req.mode != UiMode::Tree;
        let mut warnings = Vec::new();

        if req.vision {
            want_shot = true;
        }
        // An id needs the tree to be found, whatever the mode; without
        // vision (which reads the whole window) the screenshot is then of
        // that node alone.
        let read_tree = want_tree || req.id.is_some();
        let node_shot = req.id.is_some() && !req.vision;
        let (windows, trees) =
            self.look(&live, backend.as_ref(), &display, &pids, read_tree, req.all)?;
        let mut roots = roots_of(&trees);
        let has_tree = !roots.is_empty();
        if want_tree && !has_tree {
            let why = trees_error(&trees);
            warnings.push(format!(
                "{why}. The screenshot below shows the window instead; for a GTK program check that NO_AT_BRIDGE is not set, for Qt that QT_ACCESSIBILITY=1 (display \"virtual\" sets both)"
            ));
            want_shot = true;
        }
        let mut screenshot = match windows.first() {
            Some(w) if want_shot && !node_shot => {
                Some(self.screenshot(&live, backend.as_ref(), &display, w, None)?)
            }
            _ => None,
        };
        let vision = if req.vision {
            self.apply_vision(
                req,
                screenshot.as_ref(),
                &windows,
                &mut roots,
                &mut warnings,
            )
        } else {
            None
        };
        let show_tree = want_tree && !roots.is_empty();

        let identified = identify(&roots);
        let subtree: Vec<&Identified<'_>> = match &req.id {
            Some(node) => vec![render::find(&identified, node).ok_or_else(|| {
                SessionError::validation(if has_tree {
                    unknown_id(node, &identified)
                } else {
                    format!(
                        "no node has id \"{node}\": the program's tree could not be read ({})",
                        trees_error(&trees)
                    )
                })
            })?],
            None => identified.iter().collect(),
        };
        if want_shot
            && node_shot
            && let Some(n) = subtree.first()
        {
            let shot = self.node_screenshot(
                &live,
                backend.as_ref(),
                &display,
                &windows,
                n,
                &mut warnings,
            )?;
            screenshot = shot.or(screenshot);
        }
        let rendered = render::render(
            &subtree,
            Shown {
                max_nodes: req.max_nodes,
                all: req.all,
            },
        );
        let lines = all_lines(&identified);
        let (changes, number) = {
            let mut ui = live.ui.lock().expect("ui lock");
            if req.vision {
                ui.vision_nodes = vision_only(&identified);
            }
            ui.snapshots += 1;
            let number = ui.snapshots;
            // Only trees read from the same source are compared: vision's
            // nodes come and go with the flag.
            let changes = (show_tree && has_tree && !req.vision)
                .then(|| ui.previous.as_ref().map(|p| diff(p, &lines)))
                .flatten();
            if show_tree && has_tree && !req.vision {
                ui.previous = Some(lines);
            }
            (changes, number)
        };
        let tree_text = show_tree.then(|| rendered.text.clone());
        let doc = json!({
            "snapshot": number,
            "tree": tree_text,
            "nodes": rendered.shown + rendered.cut,
            "added": changes.as_ref().map(|c| &c.added),
            "removed": changes.as_ref().map(|c| &c.removed),
            "changed": changes.as_ref().map(|c| &c.changed),
            "screenshot": screenshot.as_ref().map(|s| &s.path),
            "vision": vision,
            "windows": windows.iter().map(|w| &w.title).collect::<Vec<_>>(),
        });
        // Absent, not null: a first look has no diff, a tree-less one no tree.
        let doc = match doc {
            Value::Object(m) => {
                Value::Object(m.into_iter().filter(|(_, v)| !v.is_null()).collect())
            }
            other => other,
        };
        self.append_json_event(&live, EventKind::UiSnapshot, live.pid, 0, &doc);
        Ok(UiResponse {
            display: display.label().to_string(),
            windows: windows.iter().map(ui_window).collect(),
            nodes: if show_tree {
                structured(&subtree, &rendered.shown_ids)
            } else {
                Vec::new()
            },
            tree: tree_text,
            shown: rendered.shown,
            cut: rendered.cut,
            hidden: rendered.hidden,
            changes,
            screenshot,
            vision,
            warnings,
        })
    }

    /// The processes whose windows a look reads: the session's root and
    /// its running children.
    pub(super) fn gui_pids(&self, live: &Live) -> Vec<u32> {
        let mut pids = vec![live.pid];
        pids.extend(self.running_children(live).iter().map(|c| c.pid));
        pids.dedup();
        pids
    }

    /// Reads the screenshot with vision and merges what it found into
    /// `roots` (the windows themselves when there is no tree); the
    /// reply's `vision` part, or `None` with a warning saying why not.
    fn apply_vision(
        &self,
        req: &UiRequest,
        screenshot: Option<&UiScreenshot>,
        windows: &[Window],
        roots: &mut Vec<UiNode>,
        warnings: &mut Vec<String>,
    ) -> Option<Value> {
        let (Some(shot), Some(w)) = (screenshot, windows.first()) else {
            warnings.push("vision needs a window to look at, and the session has none".into());
            return None;
        };
        match self.see(&shot.path, req) {
            Ok(boxes) => {
                if roots.is_empty() {
                    // No tree to merge into: the window itself holds what
                    // vision found.
                    *roots = windows.iter().map(window_node).collect();
                }
                let merged = strobe_ui::vision::merge::merge(
                    roots,
                    &boxes,
                    (w.bounds.x, w.bounds.y),
                    req.iou_threshold,
                );
                Some(json!({
                    "found": boxes.len(),
                    "confirmed": merged.confirmed,
                    "added": merged.added,
                }))
            }
            Err(e) => {
                warnings.push(format!(
                    "vision could not run: {e}. The tree and the screenshot are returned without it"
                ));
                None
            }
        }
    }

    /// The screenshot of node `n` alone, cropped from its window (the
    /// whole window, with a warning, when it has no geometry); `None`
    /// when no window holds it.
    fn node_screenshot(
        &self,
        live: &Live,
        backend: &dyn UiBackend,
        display: &Display,
        windows: &[Window],
        n: &Identified<'_>,
        warnings: &mut Vec<String>,
    ) -> Result<Option<UiScreenshot>, SessionError> {
        let area = n.node.bounds;
        let Some(w) = area
            .and_then(|b| super::ui_action::window_of(windows, &b))
            .or(windows.first())
        else {
            return Ok(None);
        };
        if area.is_none() {
            warnings.push(format!(
                "{} has no geometry on screen: the screenshot is of its whole window",
                n.id
            ));
        }
        self.screenshot(live, backend, display, w, area).map(Some)
    }

    /// The session's windows and each process's tree, waiting for a program
    /// launched moments ago to show its window and register.
    #[allow(clippy::type_complexity)]
    pub(super) fn look(
        &self,
        live: &Live,
        backend: &dyn UiBackend,
        display: &Display,
        pids: &[u32],
        want_tree: bool,
        all: bool,
    ) -> Result<(Vec<Window>, Vec<(u32, Result<Vec<UiNode>, UiError>)>), SessionError> {
        let launched = Instant::now()
            .checked_sub(Duration::from_millis(
                (strobe_core::clock::unix_millis() - live.started_at).max(0) as u64,
            ))
            .unwrap_or_else(Instant::now);
        let mut busy = StartupActivity::new(pids);
        loop {
            // A program that died takes its virtual display with it: say
            // that, not that the display is unreachable.
            let windows = backend
                .windows(display, pids)
                .map_err(|e| gui_lost(live).unwrap_or_else(|| ui_error(e)))?;
            let trees: Vec<_> = if want_tree {
                pids.iter()
                    .map(|&p| (p, backend.tree(display, p, all)))
                    .collect()
            } else {
                Vec::new()
            };
            if let Some((_, Err(e @ UiError::Timeout { .. }))) = trees
                .iter()
                .find(|(_, t)| matches!(t, Err(UiError::Timeout { .. })))
            {
                return Err(gui_lost(live).unwrap_or_else(|| SessionError::internal(e.to_string())));
            }
            let has_tree = trees
                .iter()
                .any(|(_, t)| t.as_ref().is_ok_and(|t| !t.is_empty()));
            let settled = !windows.is_empty() && (!want_tree || has_tree);
            let waited = launched.elapsed();
            // Only a program with no window yet is waited for past the
            // grace: one with a window but no tree is answered with its
            // screenshot, even if busy (a game loop without accessibility).
            let still_starting = waited < REGISTRATION_GRACE
                || (windows.is_empty() && waited < BUSY_STARTUP_LIMIT && busy.is_busy());
            if settled || !still_starting {
                record_helpers(live);
                if windows.is_empty() && !has_tree {
                    if let Some(e) = gui_lost(live) {
                        return Err(e);
                    }
                    return Err(SessionError::validation(
                        UiError::NoWindow {
                            pid: live.pid,
                            display: display.label().to_string(),
                        }
                        .to_string(),
                    ));
                }
                return Ok((windows, trees));
            }
            std::thread::sleep(Duration::from_millis(100));
            busy.sample();
        }
    }

    /// What the vision model finds in the PNG at `png` (the sidecar is
    /// started on first use and reused).
    pub(super) fn see(
        &self,
        png: &str,
        req: &UiRequest,
    ) -> Result<Vec<strobe_ui::vision::VisionBox>, String> {
        use strobe_ui::vision::VisionModel;
        use strobe_ui::vision::sidecar::{Sidecar, SidecarConfig};
        let venv =
            strobe_frida::FridaPython::locate(req.venv.as_deref(), &self.home.default_venv()).venv;
        let program = std::env::var_os("STROBE_VISION_SIDECAR")
            .filter(|p| !p.is_empty())
            .map(std::path::PathBuf::from);
        let config = SidecarConfig::locate(&venv, program).map_err(|e| e.to_string())?;
        let mut guard = self.vision.lock().expect("vision lock");
        if guard.as_ref().is_some_and(|s| s.config() != &config) {
            *guard = None; // the venv or the program changed: start afresh
        }
        let sidecar = guard.get_or_insert_with(|| Sidecar::new(config, req.vision_idle));
        sidecar.set_idle_timeout(req.vision_idle);
        sidecar
            .analyze(std::path::Path::new(png), req.min_confidence)
            .map_err(|e| e.to_string())
    }

    /// Where session `id`'s screenshots are saved.
    pub fn ui_dir(&self, id: &str) -> std::path::PathBuf {
        self.home.session_dir(id).join("ui")
    }

    /// The window's pixels, or only those of `area` (display coordinates)
    /// when given and inside it, saved as the session's next screenshot.
    fn screenshot(
        &self,
        live: &Live,
        backend: &dyn UiBackend,
        display: &Display,
        window: &Window,
        area: Option<strobe_ui::Bounds>,
    ) -> Result<UiScreenshot, SessionError> {
        let mut capture = backend
            .capture(display, window)
            .map_err(|e| gui_lost(live).unwrap_or_else(|| ui_error(e)))?;
        let (wx, wy) = (window.bounds.x.max(0), window.bounds.y.max(0));
        if let Some(part) = area.and_then(|b| {
            capture.crop(strobe_ui::Bounds {
                x: b.x - wx,
                y: b.y - wy,
                ..b
            })
        }) {
            capture = part;
        }
        let png = capture.png().map_err(ui_error)?;
        let n = {
            let mut ui = live.ui.lock().expect("ui lock");
            ui.shots += 1;
            ui.shots
        };
        let dir = self.ui_dir(&live.id);
        std::fs::create_dir_all(&dir)
            .and_then(|()| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            })
            .map_err(|e| SessionError::internal(format!("{}: {e}", dir.display())))?;
        let path = dir.join(format!("screenshot-{n:04}.png"));
        std::fs::write(&path, &png)
            .map_err(|e| SessionError::internal(format!("{}: {e}", path.display())))?;
        Ok(UiScreenshot {
            path: path.display().to_string(),
            width: capture.width,
            height: capture.height,
            png,
        })
    }
}

/// A window as a node, for vision to put what it found under when the
/// program has no accessibility tree.
fn window_node(w: &Window) -> UiNode {
    UiNode {
        role: "frame".into(),
        name: w.title.clone(),
        bounds: Some(w.bounds),
        states: vec!["showing".into()],
        ..Default::default()
    }
}

/// Why no process of the session gave a tree.
fn trees_error(trees: &[(u32, Result<Vec<UiNode>, UiError>)]) -> String {
    trees
        .iter()
        .find_map(|(_, t)| t.as_ref().err().map(|e| e.to_string()))
        .unwrap_or_else(|| "the program's windows have no accessibility tree".into())
}
