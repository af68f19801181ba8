//! The Linux backend: AT-SPI over D-Bus for the accessibility tree
//! (`tree.rs`), X11 for the windows of a process and their pixels
//! (`x11.rs`).
//!
//! The accessibility bus of a display is found, in order: the program's
//! own `AT_SPI_BUS_ADDRESS`; its session bus's `org.a11y.Bus.GetAddress`
//! (which starts the bus launcher on first use); the display's root window
//! property `AT_SPI_BUS`. An application is found on it by the pid of its
//! bus connection (`GetConnectionUnixProcessID`), so the process that
//! registered is the one asked about, whatever its window's title.
//!
//! Wayland without Xwayland has no global coordinates and no capture for
//! a client: `available` needs an X display; the tree alone would still
//! be readable over AT-SPI, which `UiError::Unreachable` names.

mod actions;
mod input;
mod tree;
mod x11;

use std::sync::atomic::AtomicUsize;

use crate::{
    Capture, Display, InputStep, NativeAction, NodeHandle, UiBackend, UiError, UiNode, Window,
};

/// AT-SPI + X11.
pub struct Atspi;

/// The X authority file of `display`, if the program was given one.
fn auth(display: &Display) -> Option<&std::path::Path> {
    display.xauthority.as_deref().map(std::path::Path::new)
}

impl Atspi {
    fn x_display(display: &Display) -> Result<&str, UiError> {
        display.name.as_deref().ok_or_else(|| UiError::Unreachable {
            what: "an X display".into(),
            why: "the program has no DISPLAY (on Wayland without Xwayland only the AT-SPI tree is readable; global coordinates and capture need X11)".into(),
        })
    }

    fn accessibility_bus(display: &Display) -> Result<String, UiError> {
        if let Some(a) = &display.accessibility_bus {
            return Ok(a.clone());
        }
        if let Some(session) = display.session_bus.clone() {
            match tree::block_on(async move { tree::accessibility_bus_of(&session).await })? {
                Ok(a) => return Ok(a),
                Err(e) => {
                    if let Some(s) = &display.session_bus {
                        tree::forget(s);
                    }
                    if let Some(a) = display
                        .name
                        .as_deref()
                        .and_then(|d| x11::root_property(d, auth(display), "AT_SPI_BUS"))
                    {
                        return Ok(a);
                    }
                    return Err(e);
                }
            }
        }
        display
            .name
            .as_deref()
            .and_then(|d| x11::root_property(d, auth(display), "AT_SPI_BUS"))
            .ok_or_else(|| UiError::Unreachable {
                what: "the AT-SPI bus".into(),
                why: format!(
                    "the program has no DBUS_SESSION_BUS_ADDRESS and display {} publishes no AT_SPI_BUS: launch it with display \"virtual\", which brings its own buses",
                    display.label()
                ),
            })
    }
}

impl UiBackend for Atspi {
    fn name(&self) -> &'static str {
        "atspi"
    }

    fn available(&self, display: &Display) -> bool {
        cfg!(target_os = "linux")
            && display
                .name
                .as_deref()
                .is_some_and(|d| x11::reachable(d, auth(display)))
    }

    fn windows(&self, display: &Display, pids: &[u32]) -> Result<Vec<Window>, UiError> {
        x11::windows(Self::x_display(display)?, auth(display), pids)
    }

    fn tree(&self, display: &Display, pid: u32, hidden: bool) -> Result<Vec<UiNode>, UiError> {
        let address = Self::accessibility_bus(display)?;
        let bus = address.clone();
        let answer = tree::block_on(async move {
            let conn = tree::connect(&bus).await?;
            let Some(app) = tree::application_of(&conn, pid).await? else {
                return Ok(None);
            };
            let walk = tree::Walk {
                read: AtomicUsize::new(0),
                hidden,
            };
            match tokio::time::timeout(
                tree::WALK_TIMEOUT,
                tree::windows_of(&conn, &app, pid, &walk),
            )
            .await
            {
                Ok(Ok(mut windows)) => {
                    // The walk's guard stopped it: said in the tree itself,
                    // where the cut is, never dropped silently.
                    if walk.read.load(std::sync::atomic::Ordering::Relaxed) >= tree::MAX_NODES {
                        windows.push(UiNode {
                            role: "truncated".into(),
                            name: format!(
                                "the walk stopped after {} nodes, a guard against runaway trees: nodes past them are not shown (without all, hidden subtrees are not read)",
                                tree::MAX_NODES
                            ),
                            states: vec!["showing".into()],
                            ..Default::default()
                        });
                    }
                    Ok(Some(windows))
                }
                Ok(Err(e)) => Err(e),
                Err(_) => Err(UiError::Timeout {
                    pid,
                    seconds: tree::WALK_TIMEOUT.as_secs(),
                }),
            }
        })?;
        match answer {
            Ok(Some(windows)) => Ok(windows),
            Ok(None) => Err(UiError::NotAccessible {
                pid,
                why: format!(
                    "no application with that pid is registered on {address} (NO_AT_BRIDGE=1 in its environment, a toolkit without accessibility, or it has not registered yet)"
                ),
            }),
            Err(e @ UiError::Unreachable { .. }) => {
                tree::forget(&address);
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    fn capture(&self, display: &Display, window: &Window) -> Result<Capture, UiError> {
        x11::capture(Self::x_display(display)?, auth(display), window)
    }

    fn read(&self, display: &Display, node: &NodeHandle, hidden: bool) -> Result<UiNode, UiError> {
        let address = Self::accessibility_bus(display)?;
        let (dest, path) = tree::parse_handle(node)?;
        let answer = tree::block_on(async move {
            let conn = tree::connect(&address).await?;
            let walk = tree::Walk {
                read: AtomicUsize::new(0),
                hidden,
            };
            tokio::time::timeout(tree::WALK_TIMEOUT, tree::node(&conn, dest, path, &walk, 0))
                .await
                .map_err(|_| UiError::Unreachable {
                    what: "the node".into(),
                    why: "its application did not answer in time".into(),
                })
        })??;
        answer.ok_or_else(|| UiError::Unreachable {
            what: "the node".into(),
            why: "it is gone (its window closed, or the application removed it)".into(),
        })
    }

    fn act(
        &self,
        display: &Display,
        node: &NodeHandle,
        action: &NativeAction,
    ) -> Result<bool, UiError> {
        let address = Self::accessibility_bus(display)?;
        let (dest, path) = tree::parse_handle(node)?;
        let action = action.clone();
        tree::block_on(async move {
            let conn = tree::connect(&address).await?;
            actions::act(&conn, &dest, &path, &action).await
        })?
    }

    fn input(&self, display: &Display, steps: &[InputStep]) -> Result<(), UiError> {
        input::send(Self::x_display(display)?, auth(display), steps)
    }
}
