//! The AT-SPI half: an application's accessibility tree, read over D-Bus.
//!
//! Each node costs five calls (role, name, states, interfaces, children)
//! plus one or two per interface worth reading (extents, actions, value,
//! text, a combo box's selection).
//! They are all issued at once, and siblings are read concurrently, so a
//! window costs about its depth in round trips, not its node count
//! (ENGINEERING.md measured 64–94 ms sequential, 16–25 ms concurrent, for
//! 48 nodes). Calls go out raw (`call_method`): typed proxies would fetch
//! and cache every property and subscribe to change signals per node.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use futures_util::future::join_all;
use zbus::Connection;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

use crate::{Bounds, NodeHandle, UiError, UiNode, ValueRange};

const ACCESSIBLE: &str = "org.a11y.atspi.Accessible";
const REGISTRY: &str = "org.a11y.atspi.Registry";
const ROOT: &str = "/org/a11y/atspi/accessible/root";

/// The deepest a walk goes: a guard against a toolkit that reports a
/// cycle (real windows are rarely 30 levels deep).
const MAX_DEPTH: usize = 64;

/// The most nodes one walk reads: a hostile or runaway application (a
/// table of a million cells) cannot take the daemon's memory.
pub(super) const MAX_NODES: usize = 20_000;

/// How long a walk may take before the application is deemed not to
/// answer (busy, or paused at a breakpoint).
pub(super) const WALK_TIMEOUT: Duration = Duration::from_secs(10);

/// What a call that timed out says.
const NO_ANSWER: &str = "did not answer within";

/// How long one call may take before its answer is given up on.
const CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// The runtime the D-Bus connections live on: one worker, shared by every
/// call, so a cached connection keeps being served between calls.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("strobe-atspi")
            .enable_all()
            .build()
            .expect("the AT-SPI runtime starts")
    })
}

/// Runs `fut` on the AT-SPI runtime and waits for it. Callable from any
/// thread that is not itself driving async work (the layers above call
/// the backend from blocking threads).
pub(super) fn block_on<T: Send + 'static>(
    fut: impl Future<Output = T> + Send + 'static,
) -> Result<T, UiError> {
    let (tx, rx) = std::sync::mpsc::channel();
    runtime().spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().map_err(|_| UiError::Unreachable {
        what: "the AT-SPI bus".into(),
        why: "the accessibility task ended without an answer".into(),
    })
}

fn bus_error(what: &str) -> impl Fn(zbus::Error) -> UiError + '_ {
    move |e| UiError::Unreachable {
        what: what.to_string(),
        why: e.to_string(),
    }
}

fn connections() -> &'static Mutex<HashMap<String, Connection>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Connection>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// A connection to the bus at `address`, reused between calls.
pub(super) async fn connect(address: &str) -> Result<Connection, UiError> {
    if let Some(c) = connections().lock().unwrap().get(address) {
        return Ok(c.clone());
    }
    let what = format!("the bus at {address}");
    let conn = zbus::connection::Builder::address(address)
        .map_err(bus_error(&what))?
        .build()
        .await
        .map_err(bus_error(&what))?;
    connections()
        .lock()
        .unwrap()
        .insert(address.to_string(), conn.clone());
    Ok(conn)
}

/// Forgets the connection to `address` (after a call on it failed: the
/// bus may be gone with its display, and the next call connects afresh).
pub(super) fn forget(address: &str) {
    connections().lock().unwrap().remove(address);
}

/// The accessibility bus's address, asked of the session bus at
/// `session_bus` (`org.a11y.Bus.GetAddress`, which starts the bus
/// launcher on first use).
pub(super) async fn accessibility_bus_of(session_bus: &str) -> Result<String, UiError> {
    let conn = connect(session_bus).await?;
    let reply = conn
        .call_method(
            Some("org.a11y.Bus"),
            "/org/a11y/bus",
            Some("org.a11y.Bus"),
            "GetAddress",
            &(),
        )
        .await
        .map_err(bus_error("the session bus's org.a11y.Bus"))?;
    reply
        .body()
        .deserialize::<String>()
        .map_err(|e| bus_error("the session bus's org.a11y.Bus")(e))
}

/// The bus name of `pid`'s application on the accessibility bus, if it
/// registered one.
pub(super) async fn application_of(conn: &Connection, pid: u32) -> Result<Option<String>, UiError> {
    let apps: Vec<(String, OwnedObjectPath)> =
        call(conn, REGISTRY, ROOT, ACCESSIBLE, "GetChildren", &())
            .await
            .map_err(bus_error("the AT-SPI registry"))?;
    let pids = join_all(apps.iter().map(|(name, _)| async move {
        let reply: zbus::Result<u32> = call(
            conn,
            "org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            "GetConnectionUnixProcessID",
            &(name.as_str(),),
        )
        .await;
        reply.ok()
    }))
    .await;
    Ok(apps
        .into_iter()
        .zip(pids)
        .find(|(_, p)| *p == Some(pid))
        .map(|((name, _), _)| name))
}

pub(super) async fn call<B, R>(
    conn: &Connection,
    dest: &str,
    path: &str,
    iface: &str,
    method: &str,
    body: &B,
) -> zbus::Result<R>
where
    B: serde::Serialize + zbus::zvariant::DynamicType,
    R: for<'d> zbus::zvariant::DynamicDeserialize<'d>,
{
    // One call that never answers (WebKit leaves `Action.GetActions`
    // unanswered) must cost its node a field, not the walk its deadline.
    let reply = tokio::time::timeout(
        CALL_TIMEOUT,
        conn.call_method(Some(dest), path, Some(iface), method, body),
    )
    .await
    .map_err(|_| {
        zbus::Error::Failure(format!(
            "{iface}.{method} {NO_ANSWER} {} ms",
            CALL_TIMEOUT.as_millis()
        ))
    })??;
    reply.body().deserialize::<R>()
}

pub(super) async fn property(
    conn: &Connection,
    dest: &str,
    path: &str,
    iface: &str,
    name: &str,
) -> zbus::Result<OwnedValue> {
    call(
        conn,
        dest,
        path,
        "org.freedesktop.DBus.Properties",
        "Get",
        &(iface, name),
    )
    .await
}

/// A walk's shared budget: nodes read so far.
pub(super) struct Walk {
    /// Nodes read.
    pub read: AtomicUsize,
    /// Read hidden nodes' subtrees too.
    pub hidden: bool,
}

/// The windows of the application `app`: its root's children, each
/// walked whole.
pub(super) async fn windows_of(
    conn: &Connection,
    app: &str,
    pid: u32,
    walk: &Walk,
) -> Result<Vec<UiNode>, UiError> {
    let children: Vec<(String, OwnedObjectPath)> =
        match call(conn, app, ROOT, ACCESSIBLE, "GetChildren", &()).await {
            Ok(c) => c,
            // Its main loop is not answering: busy, or stopped at a
            // breakpoint (then every call of the walk would time out too).
            Err(zbus::Error::Failure(why)) if why.contains(NO_ANSWER) => {
                return Err(UiError::Timeout {
                    pid,
                    seconds: CALL_TIMEOUT.as_secs(),
                });
            }
            Err(e) => return Err(bus_error("the application on the AT-SPI bus")(e)),
        };
    Ok(join_all(
        children
            .into_iter()
            .map(|(name, path)| node(conn, name, path.to_string(), walk, 0)),
    )
    .await
    .into_iter()
    .flatten()
    .collect())
}

/// The AT-SPI states by bit (the `AtspiStateType` numbering) worth
/// keeping: the ones the rendering shows, "showing", and "enabled" to
/// derive "disabled".
const STATE_BITS: [(u32, &str); 11] = [
    (4, "checked"),
    (7, "editable"),
    (8, "enabled"),
    (10, "expanded"),
    (12, "focused"),
    (16, "modal"),
    (20, "pressed"),
    (23, "selected"),
    (24, "sensitive"),
    (25, "showing"),
    (32, "indeterminate"),
];

fn states_from(words: &[u32]) -> Vec<String> {
    // No state at all is "unknown", not "hidden and disabled": WebKit's
    // socket and plug (where the web process's tree is embedded in the
    // window's) report none. Such a node is treated as showing, so what
    // is under it is read.
    if words.iter().all(|&w| w == 0) {
        return vec!["showing".into()];
    }
    let bit = |b: u32| {
        words
            .get((b / 32) as usize)
            .is_some_and(|w| w & (1 << (b % 32)) != 0)
    };
    let mut out: Vec<String> = STATE_BITS
        .iter()
        .filter(|(b, name)| bit(*b) && *name != "enabled" && *name != "sensitive")
        .map(|(_, name)| name.to_string())
        .collect();
    // Disabled is the absence of both: GTK clears "sensitive" and
    // "enabled" together on an insensitive widget.
    if !bit(8) && !bit(24) {
        out.push("disabled".into());
    }
    out
}

/// Whether any of `children` (the first 50) has the "showing" state.
async fn any_showing(conn: &Connection, children: &[(String, OwnedObjectPath)]) -> bool {
    join_all(children.iter().take(50).map(|(d, p)| async move {
        call::<_, Vec<u32>>(conn, d, p.as_str(), ACCESSIBLE, "GetState", &()).await
    }))
    .await
    .into_iter()
    .flatten()
    .any(|words| words.first().is_some_and(|w| w & (1 << SHOWING_BIT) != 0))
}

/// `ATSPI_STATE_SHOWING`.
const SHOWING_BIT: u32 = 25;

/// Up to this many characters of a text's content become its value.
const TEXT_CHARS: usize = 200;

type NodeFuture<'a> = Pin<Box<dyn Future<Output = Option<UiNode>> + Send + 'a>>;

/// The handle of the node at `path` of application `dest`.
fn handle(dest: &str, path: &str) -> NodeHandle {
    NodeHandle(format!("{dest}\n{path}"))
}

/// The application and object path a handle names.
pub(super) fn parse_handle(h: &NodeHandle) -> Result<(String, String), UiError> {
    h.0.split_once('\n')
        .map(|(d, p)| (d.to_string(), p.to_string()))
        .ok_or_else(|| UiError::Unreachable {
            what: "the node".into(),
            why: format!("{:?} is not an AT-SPI node handle", h.0),
        })
}

/// Reads one node and, unless it is hidden (and hidden ones were not
/// asked for), its subtree. `None` when the node vanished mid-walk or the
/// walk's budget is spent.
pub(super) fn node<'a>(
    conn: &'a Connection,
    dest: String,
    path: String,
    walk: &'a Walk,
    depth: usize,
) -> NodeFuture<'a> {
    Box::pin(async move {
        if depth > MAX_DEPTH || walk.read.fetch_add(1, Ordering::Relaxed) >= MAX_NODES {
            return None;
        }
        let (role, name, states, interfaces, children) = futures_util::join!(
            call::<_, u32>(conn, &dest, &path, ACCESSIBLE, "GetRole", &()),
            property(conn, &dest, &path, ACCESSIBLE, "Name"),
            call::<_, Vec<u32>>(conn, &dest, &path, ACCESSIBLE, "GetState", &()),
            call::<_, Vec<String>>(conn, &dest, &path, ACCESSIBLE, "GetInterfaces", &()),
            call::<_, Vec<(String, OwnedObjectPath)>>(
                conn,
                &dest,
                &path,
                ACCESSIBLE,
                "GetChildren",
                &()
            ),
        );
        let role = role_name(role.ok()?);
        let name = name
            .ok()
            .and_then(|v| String::try_from(v).ok())
            .unwrap_or_default();
        let states = states_from(&states.unwrap_or_default());
        let interfaces = interfaces.unwrap_or_default();
        let mut n = UiNode {
            role,
            name,
            states,
            handle: Some(handle(&dest, &path)),
            ..Default::default()
        };
        let mut kids = children.unwrap_or_default();
        // A socket (WebKit's web process embedded in its window: a filler
        // with no states) lists no children but counts its plug: ask for
        // each by index. Only there: a leaf would pay a round trip more.
        let count = if kids.is_empty() && n.role == "filler" {
            property(conn, &dest, &path, ACCESSIBLE, "ChildCount")
                .await
                .ok()
                .and_then(|v| i32::try_from(v).ok())
                .unwrap_or(0)
        } else {
            0
        };
        if count > 0 {
            let (dest, path) = (&dest, &path);
            kids = join_all((0..count.min(1_000)).map(|i| async move {
                call::<_, (String, OwnedObjectPath)>(
                    conn,
                    dest,
                    path,
                    ACCESSIBLE,
                    "GetChildAtIndex",
                    &(i,),
                )
                .await
            }))
            .await
            .into_iter()
            .flatten()
            .collect();
        }
        let showing = n.states.iter().any(|s| s == "showing");
        if !showing && !walk.hidden {
            // A node that says it is not showing while a child of it is
            // (WebKit's page scroll pane, around a showing document) is on
            // screen after all: one level of states decides.
            if !any_showing(conn, &kids).await {
                return Some(n);
            }
            n.states.push("showing".into());
        }
        let has = |i: &str| {
            interfaces
                .iter()
                .any(|x| x == &format!("org.a11y.atspi.{i}"))
        };
        let extents = async {
            if has("Component") {
                call::<_, (i32, i32, i32, i32)>(
                    conn,
                    &dest,
                    &path,
                    "org.a11y.atspi.Component",
                    "GetExtents",
                    &(0u32,),
                )
                .await
                .ok()
            } else {
                None
            }
        };
        // By index, not `GetActions`: every toolkit implements `GetName`
        // (the unlocalized name), and WebKit never answers `GetActions`.
        let actions = async {
            if !has("Action") {
                return Vec::new();
            }
            let n = property(conn, &dest, &path, "org.a11y.atspi.Action", "NActions")
                .await
                .ok()
                .and_then(|v| i32::try_from(v).ok())
                .unwrap_or(0);
            let (dest, path) = (&dest, &path);
            join_all((0..n.clamp(0, 16)).map(|i| async move {
                call::<_, String>(conn, dest, path, "org.a11y.atspi.Action", "GetName", &(i,)).await
            }))
            .await
            .into_iter()
            .flatten()
            .filter(|a| !a.is_empty())
            .collect::<Vec<String>>()
        };
        let value = async {
            if !has("Value") {
                return (None, None);
            }
            let number = |name: &'static str| {
                let (dest, path) = (&dest, &path);
                async move {
                    property(conn, dest, path, "org.a11y.atspi.Value", name)
                        .await
                        .ok()
                        .and_then(|v| f64::try_from(v).ok())
                }
            };
            let (current, min, max, step) = futures_util::join!(
                number("CurrentValue"),
                number("MinimumValue"),
                number("MaximumValue"),
                number("MinimumIncrement"),
            );
            let range = match (min, max) {
                (Some(min), Some(max)) if max > min => Some(ValueRange {
                    min,
                    max,
                    step: step.unwrap_or(0.0),
                }),
                _ => None,
            };
            (current.map(format_number), range)
        };
        // WebKit's text fields are "editable" without the EditableText
        // interface (typed into by input): their text is their value too.
        let editable = has("EditableText") || n.states.iter().any(|s| s == "editable");
        let unnamed_text = has("Text") && n.name.is_empty();
        let text = async {
            if editable || unnamed_text {
                call::<_, String>(
                    conn,
                    &dest,
                    &path,
                    "org.a11y.atspi.Text",
                    "GetText",
                    &(0i32, -1i32),
                )
                .await
                .ok()
                .map(|t| clip(&t))
            } else {
                None
            }
        };
        // A combo box's value is the item it shows: its Selection's first
        // selected child (the items themselves sit in a hidden menu).
        let selected = async {
            if has("Selection") && n.role == "combo box" {
                let child = call::<_, (String, OwnedObjectPath)>(
                    conn,
                    &dest,
                    &path,
                    "org.a11y.atspi.Selection",
                    "GetSelectedChild",
                    &(0i32,),
                )
                .await
                .ok()?;
                property(conn, &child.0, child.1.as_str(), ACCESSIBLE, "Name")
                    .await
                    .ok()
                    .and_then(|v| String::try_from(v).ok())
                    .filter(|s| !s.is_empty())
            } else {
                None
            }
        };
        let subtree = join_all(
            kids.into_iter()
                .map(|(d, p)| node(conn, d, p.to_string(), walk, depth + 1)),
        );
        let (extents, actions, value, text, selected, subtree) =
            futures_util::join!(extents, actions, value, text, selected, subtree);
        n.bounds = extents
            .filter(|&(_, _, w, h)| w > 0 && h > 0)
            .map(|(x, y, w, h)| Bounds {
                x,
                y,
                width: w as u32,
                height: h as u32,
            });
        n.actions = actions;
        let (value, range) = value;
        n.range = range;
        n.value = value
            .or(text.filter(|t| !t.is_empty() || editable))
            .or(selected);
        n.children = subtree.into_iter().flatten().collect();
        Some(n)
    })
}

/// The name of AT-SPI role number `role`: the protocol's table (through
/// `atspi-common`), asked for by number because WebKit answers
/// `GetRoleName` with an empty string. The table's "button" is spelled as
/// at-spi2-core and GTK spell it, "push button", so a button reads the same
/// in every toolkit.
fn role_name(role: u32) -> String {
    match atspi_common::Role::try_from(role) {
        Ok(atspi_common::Role::Button) => "push button".into(),
        Ok(r) => r.name().to_string(),
        Err(_) => "unknown".into(),
    }
}

/// A number as a person would write it: `0.5`, `3`, not `0.500000`, nor
/// the 309 digits of a huge one.
fn format_number(v: f64) -> String {
    crate::motor::format_value(v)
}

fn clip(t: &str) -> String {
    if t.chars().count() <= TEXT_CHARS {
        t.to_string()
    } else {
        let cut: String = t.chars().take(TEXT_CHARS).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_keep_what_matters_and_derive_disabled() {
        // showing (25) + focused (12) + enabled (8) + sensitive (24).
        let w = (1u32 << 25) | (1 << 12) | (1 << 8) | (1 << 24);
        assert_eq!(states_from(&[w, 0]), vec!["focused", "showing"]);
        // showing only: neither enabled nor sensitive.
        assert_eq!(states_from(&[1 << 25, 0]), vec!["showing", "disabled"]);
        // A bit in the second word (indeterminate, 32).
        assert!(states_from(&[1 << 8, 1]).contains(&"indeterminate".to_string()));
        // None at all: unknown, walked as showing.
        assert_eq!(states_from(&[0, 0]), vec!["showing"]);
        assert_eq!(states_from(&[]), vec!["showing"]);
    }

    #[test]
    fn roles_are_named_as_at_spi_names_them() {
        // 43 is ATSPI_ROLE_PUSH_BUTTON, 51 ATSPI_ROLE_SLIDER.
        assert_eq!(role_name(43), "push button");
        assert_eq!(role_name(51), "slider");
        assert_eq!(role_name(100_000), "unknown");
    }

    #[test]
    fn values_read_as_written() {
        assert_eq!(format_number(0.5), "0.5");
        assert_eq!(format_number(3.0), "3");
        assert_eq!(format_number(1.0 / 3.0), "0.3333");
        assert_eq!(clip(&"x".repeat(250)).chars().count(), TEXT_CHARS + 1);
    }
}
