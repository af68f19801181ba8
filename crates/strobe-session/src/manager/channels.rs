//! A session's I/O channels (`strobe-channels`): the always-present ones
//! (`stdio`, `trace`) opened with the session, the others by
//! `debug_launch {channels}` or `debug_channel {action: "add"}`. Every
//! stimulus sent and every observation is stored as an event of the
//! channel's type, on the session's clock.

use super::*;
use strobe_channels::{
    ChannelKind, InputChannel, Observation, ObservationSink, OutputChannel, SessionTarget,
    StdinPort,
};
use strobe_frida::agent_protocol::SocketsWatched;

/// The channels open in a session, by name.
#[derive(Default)]
pub(super) struct Channels {
    open: BTreeMap<String, Opened>,
    /// The program's stdin, when launched with `stdin: "pipe"`.
    pub(super) stdin: Option<StdinPort>,
    /// The session's private JACK server (`jack: "auto"`), stopped after
    /// its channels closed.
    pub(super) jack: Option<PrivateJack>,
    /// The agents record the program's socket I/O (a channel that watches
    /// it is open); a process followed later gets the hooks too.
    pub(super) sockets_watched: bool,
}

impl Channels {
    /// No channel open yet; `stdin` the program's stdin pipe, if it has one.
    pub(super) fn with_stdin(stdin: Option<StdinPort>, jack: Option<PrivateJack>) -> Channels {
        Channels {
            open: BTreeMap::new(),
            stdin,
            jack,
            sockets_watched: false,
        }
    }
}

/// A session's private JACK server and the record that lets the next
/// daemon end it if this one is killed (display.rs `reap_left_over`).
/// Both are only held, and dropped in order: the server is stopped, then
/// its record goes.
pub(super) struct PrivateJack {
    pub(super) _server: strobe_channels::JackServer,
    pub(super) _record: Option<strobe_ui::leftovers::KeptProcess>,
}

struct Opened {
    kind: &'static str,
    event_type: EventKind,
    about: &'static str,
    always: bool,
    watches_sockets: bool,
    outside_project: bool,
    /// Opened with the agent's `allowOutsideProject`.
    opted_out_of_project: bool,
    input: Option<Arc<dyn InputChannel>>,
    output: Option<Box<dyn OutputChannel>>,
}

impl Drop for Opened {
    fn drop(&mut self) {
        if let Some(o) = &self.output {
            let _ = o.stop_capture();
        }
    }
}

/// One channel of a session, as `debug_channel {action: "list"}` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelInfo {
    /// Its name ("net:8080").
    pub name: String,
    /// Its kind ("net").
    pub kind: String,
    /// The `debug_query` event type of its events.
    pub event_type: String,
    /// It takes stimuli (`send`).
    pub sends: bool,
    /// It records observations.
    pub sees: bool,
    /// Opened with every session.
    pub always: bool,
    /// What it sends and sees.
    pub about: String,
    /// It works on files outside the project root: the agent opted in
    /// with `allowOutsideProject`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub outside_project: bool,
}

/// A kind that can be added, as `list` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelKindInfo {
    /// The kind ("file").
    pub kind: String,
    /// What it sends and sees, and how to name one.
    pub about: String,
}

/// What a stimulus did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelSent {
    /// The channel.
    pub channel: String,
    /// The channel's answer (bytes written, an HTTP response…).
    pub result: Value,
    /// One line saying what happened.
    pub summary: String,
    /// How long the send took.
    pub elapsed_ms: f64,
}

/// Stores a channel's observations as events of its type.
struct Sink {
    store: Store,
    key: i64,
    origin_ns: u64,
    pid: u32,
    kind: EventKind,
}

impl ObservationSink for Sink {
    fn observe(&self, o: Observation) {
        let now = monotonic_ns();
        let ts = o.at_ns.unwrap_or(now).saturating_sub(self.origin_ns);
        let mut doc = json!({"channel": o.channel});
        if let Value::Object(m) = o.data {
            doc.as_object_mut().expect("an object").extend(m);
        }
        let mut batch = EventBatch::default();
        batch.push(
            EventHeader {
                ts_ns: ts,
                kind: self.kind as u8,
                flags: FLAG_JSON,
                pid: self.pid,
                ..Default::default()
            },
            doc.to_string().as_bytes(),
        );
        // A failed append is counted as dropped by the store itself.
        let _ = self.store.append(self.key, batch);
    }
}

/// The kind's event type as stored.
fn event_kind(kind: &dyn ChannelKind) -> EventKind {
    EventKind::from_name(kind.event_type()).unwrap_or(EventKind::Stdin)
}

impl SessionManager {
    /// Every channel kind that can be added, with what it does.
    pub fn channel_kinds() -> Vec<ChannelKindInfo> {
        strobe_channels::channels::all()
            .iter()
            .filter(|k| !k.always_present())
            .map(|k| ChannelKindInfo {
                kind: k.kind().to_string(),
                about: k.describe().to_string(),
            })
            .collect()
    }

    /// The `debug_query` event type of channel `name`'s events (by its
    /// kind), whether or not it is open.
    pub fn channel_event_type(name: &str) -> Option<String> {
        let kind = name.split(':').next().unwrap_or(name);
        strobe_channels::channels::all()
            .iter()
            .find(|k| k.kind() == kind)
            .map(|k| k.event_type().to_string())
    }

    /// The registered spelling of a channel written another way
    /// (`udp://…` is `net:udp://…`), for errors that name what to use.
    pub fn channel_respelled(name: &str) -> Option<String> {
        strobe_channels::channels::respelled(name)
    }

    /// Opens the always-present channels and those the launch names.
    pub(super) fn open_launch_channels(
        &self,
        live: &Arc<Live>,
        names: &[String],
    ) -> Result<(), SessionError> {
        for kind in strobe_channels::channels::all() {
            if kind.always_present() {
                self.open_channel(live, kind.kind(), false)?;
            }
        }
        // A launch's channels never leave the project: its arguments may
        // come from a repository's scenario file.
        for name in names {
            self.open_channel(live, name, false)?;
        }
        self.sync_socket_watch(live)
    }

    /// Opens `spec` in session `id`, inside the project only (a scenario's
    /// channels, which a repository may have written).
    pub fn add_channel(&self, id: &str, spec: &str) -> Result<ChannelInfo, SessionError> {
        self.add_channel_with(id, spec, false)
    }

    /// `debug_channel {action: "add"}`: opens `spec` in session `id`;
    /// `outside_project` is the agent's own opt-in (`allowOutsideProject`)
    /// to files outside the project root.
    pub fn add_channel_with(
        &self,
        id: &str,
        spec: &str,
        outside_project: bool,
    ) -> Result<ChannelInfo, SessionError> {
        let live = self.channel_live(id)?;
        let shown = self.open_channel(&live, spec, outside_project)?;
        if let Err(e) = self.sync_socket_watch(&live) {
            live.channels
                .lock()
                .expect("channels lock")
                .open
                .remove(&shown.name);
            return Err(e);
        }
        Ok(shown)
    }

    /// Turns the agents' socket hooks on while a channel that watches the
    /// program's socket I/O is open, and off when the last one closes.
    fn sync_socket_watch(&self, live: &Arc<Live>) -> Result<(), SessionError> {
        let want = {
            let channels = live.channels.lock().expect("channels lock");
            let want = channels.open.values().any(|c| c.watches_sockets);
            if want == channels.sockets_watched {
                return Ok(());
            }
            want
        };
        let timeout = Duration::from_millis(live.settings.bridge_request_timeout_ms.max(5_000));
        let mut failed = Vec::new();
        for p in self.active_images(live) {
            if let Err(e) = self.watch_sockets(&p, want, timeout) {
                failed.push(format!("process {}: {e}", p.pid));
            }
        }
        if want && !failed.is_empty() {
            return Err(SessionError::validation(format!(
                "the channel was not added: the program's socket I/O could not be hooked ({}); add it again once every process of the session runs",
                failed.join("; ")
            )));
        }
        live.channels.lock().expect("channels lock").sockets_watched = want;
        Ok(())
    }

    /// Asks one process's agent to hook (or unhook) its socket calls.
    pub(super) fn watch_sockets(
        &self,
        p: &Live,
        on: bool,
        timeout: Duration,
    ) -> Result<(), String> {
        match self.agent_request::<SocketsWatched>(
            p,
            |id| DaemonMessage::WatchSockets { id, on },
            timeout,
        ) {
            Ok(SocketsWatched { error: Some(e), .. }) => Err(e),
            Ok(SocketsWatched { hooked: 0, .. }) if on => {
                Err("its libc exports none of the socket functions".into())
            }
            Ok(_) => Ok(()),
            Err(e) => Err(e.message().to_string()),
        }
    }

    fn open_channel(
        &self,
        live: &Live,
        spec: &str,
        outside_project: bool,
    ) -> Result<ChannelInfo, SessionError> {
        let kinds = strobe_channels::channels::all();
        let parsed = strobe_channels::ChannelSpec::parse(spec)
            .map_err(|e| SessionError::validation(e.to_string()))?;
        let kind = kinds
            .iter()
            .find(|k| k.kind() == parsed.kind)
            .ok_or_else(|| {
                let respelled = strobe_channels::channels::respelled(spec)
                    .map(|net| format!(". {spec:?} is an address: add it as {net:?}"))
                    .unwrap_or_default();
                SessionError::validation(format!(
                    "no channel kind {:?}; available: {}{respelled}",
                    parsed.kind,
                    kind_names()
                ))
            })?;
        let mut channels = live.channels.lock().expect("channels lock");
        // A channel's name is its spec: one already open is not opened again
        // (a second JACK client would come and go for nothing).
        if let Some(existing) = channels.open.get(spec) {
            return reuse(spec, existing, outside_project);
        }
        let target = SessionTarget {
            session_id: live.id.clone(),
            pids: vec![live.pid],
            project_root: live.project_root.clone().into(),
            stdin: channels.stdin.clone(),
            env: live.program_env.clone(),
            data_dir: self.home.session_dir(&live.id).join("channels"),
            outside_project,
        };
        let opened = kind
            .open(&parsed, &target)
            .map_err(|e| SessionError::validation(e.to_string()))?;
        let name = opened
            .input
            .as_ref()
            .map(|i| i.name().to_string())
            .or_else(|| opened.output.as_ref().map(|o| o.name().to_string()))
            .unwrap_or_else(|| kind.kind().to_string());
        if let Some(existing) = channels.open.get(&name) {
            return reuse(&name, existing, outside_project);
        }
        let event_type = event_kind(kind.as_ref());
        if let Some(o) = &opened.output {
            o.start_capture(Arc::new(Sink {
                store: self.store.clone(),
                key: live.key,
                origin_ns: live.origin_ns,
                pid: live.pid,
                kind: event_type,
            }))
            .map_err(|e| SessionError::validation(e.to_string()))?;
        }
        let entry = Opened {
            kind: kind.kind(),
            event_type,
            about: kind.describe(),
            always: kind.always_present(),
            watches_sockets: kind.watches_program_sockets(),
            outside_project: opened.outside_project,
            opted_out_of_project: outside_project,
            input: opened.input.map(Arc::from),
            output: opened.output,
        };
        let shown = info(&name, &entry);
        channels.open.insert(name, entry);
        Ok(shown)
    }

    /// `debug_channel {action: "remove"}`: closes a channel (what it saw
    /// stays stored).
    pub fn remove_channel(&self, id: &str, name: &str) -> Result<ChannelInfo, SessionError> {
        let live = self.channel_live(id)?;
        let mut channels = live.channels.lock().expect("channels lock");
        match channels.open.get(name) {
            Some(c) if c.always => Err(SessionError::validation(format!(
                "{name} is part of every session and cannot be removed"
            ))),
            Some(_) => {
                let c = channels.open.remove(name).expect("present");
                drop(channels);
                // Unhooking can only fail for a process that is stopped or
                // gone; its hooks then go with it.
                if let Err(e) = self.sync_socket_watch(&live) {
                    tracing::warn!("session {id}: {}", e.message());
                }
                Ok(info(name, &c))
            }
            None => Err(not_open(name, &channels)),
        }
    }

    /// `debug_channel {action: "list"}`: the session's channels.
    pub fn list_channels(&self, id: &str) -> Result<Vec<ChannelInfo>, SessionError> {
        let live = self.live_or_gone(id)?;
        let channels = live.channels.lock().expect("channels lock");
        Ok(channels.open.iter().map(|(n, c)| info(n, c)).collect())
    }

    /// `debug_channel {action: "send"}`: one stimulus, stored as an event
    /// of the channel's type (`dir: "sent"`) stamped when it started.
    pub fn channel_send(
        &self,
        id: &str,
        name: &str,
        action: &Value,
    ) -> Result<ChannelSent, SessionError> {
        let live = self.channel_live(id)?;
        let (input, event_type) = {
            let channels = live.channels.lock().expect("channels lock");
            let c = channels
                .open
                .get(name)
                .ok_or_else(|| not_open(name, &channels))?;
            let input = c.input.clone().ok_or_else(|| {
                SessionError::validation(format!(
                    "{name} only observes: there is nothing to send to it ({})",
                    c.about
                ))
            })?;
            (input, c.event_type)
        };
        // The stimulus is stored before it is sent, so it comes before
        // whatever it causes (a file change, the program's output).
        let preview = input.preview(action);
        self.append_json_event(
            &live,
            event_type,
            live.pid,
            0,
            &json!({"channel": name, "dir": "sent", "action": action, "summary": preview}),
        );
        let started = std::time::Instant::now();
        // Outside the lock: a request may wait seconds for its answer.
        let result = input.send(action);
        let elapsed_ms = (started.elapsed().as_secs_f64() * 1e4).round() / 10.0;
        match result {
            Ok(r) => {
                let summary = r["summary"].as_str().unwrap_or("sent").to_string();
                if input.answers() {
                    self.append_json_event(
                        &live,
                        event_type,
                        live.pid,
                        0,
                        &json!({"channel": name, "dir": "answer", "request": preview, "result": r, "summary": summary}),
                    );
                }
                Ok(ChannelSent {
                    channel: name.to_string(),
                    result: r,
                    summary,
                    elapsed_ms,
                })
            }
            Err(e) => {
                self.append_json_event(
                    &live,
                    event_type,
                    live.pid,
                    0,
                    &json!({"channel": name, "dir": "failed", "action": action, "error": e.to_string(),
                            "summary": format!("{preview} failed: {e}")}),
                );
                Err(SessionError::validation(e.to_string()))
            }
        }
    }

    /// Closes every channel of a session that ends.
    pub(super) fn close_channels(live: &Live) {
        let mut channels = live.channels.lock().expect("channels lock");
        channels.open.clear();
        if let Some(stdin) = channels.stdin.take() {
            stdin.close();
        }
        channels.jack.take();
    }

    /// A live session whose program still runs.
    fn channel_live(&self, id: &str) -> Result<Arc<Live>, SessionError> {
        let live = self.live_or_gone(id)?;
        if live.life.lock().expect("lifecycle lock").ended {
            return Err(SessionError::exited(format!(
                "the program of session '{id}' has ended: its channels can no longer send; what they saw can still be queried"
            )));
        }
        Ok(live)
    }

    fn live_or_gone(&self, id: &str) -> Result<Arc<Live>, SessionError> {
        self.live(id).ok_or_else(|| match self.store.session(id) {
            Ok(Some(_)) => SessionError::exited(format!(
                "session '{id}' is stopped: it has no channels; its events can still be queried"
            )),
            _ => SessionError::session_not_found(id),
        })
    }
}

fn info(name: &str, c: &Opened) -> ChannelInfo {
    ChannelInfo {
        name: name.to_string(),
        kind: c.kind.to_string(),
        event_type: c.event_type.name().to_string(),
        sends: c.input.is_some(),
        sees: c.output.is_some() || c.watches_sockets,
        always: c.always,
        about: c.about.to_string(),
        outside_project: c.outside_project,
    }
}

/// A channel asked for again: the open one, unless the opt-in is asked for
/// now and it was opened without it (it would silently not apply).
fn reuse(name: &str, c: &Opened, outside_project: bool) -> Result<ChannelInfo, SessionError> {
    if outside_project && !c.opted_out_of_project && !c.always {
        return Err(SessionError::validation(format!(
            "{name} is open already, without allowOutsideProject: remove it (debug_channel {{action: \"remove\", channel: {name:?}}}) and add it again with allowOutsideProject: true"
        )));
    }
    Ok(info(name, c))
}

/// The registered kinds, comma-separated.
fn kind_names() -> String {
    strobe_channels::channels::all()
        .iter()
        .map(|k| k.kind())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A channel that is not open, and what to add instead: the name itself
/// only when it is a spec that can be added.
fn not_open(name: &str, channels: &Channels) -> SessionError {
    let open = channels.open.keys().cloned().collect::<Vec<_>>().join(", ");
    let known = strobe_channels::ChannelSpec::parse(name)
        .ok()
        .is_some_and(|s| {
            strobe_channels::channels::all()
                .iter()
                .any(|k| k.kind() == s.kind)
        });
    let next = match strobe_channels::channels::respelled(name) {
        _ if known => format!("add it with debug_channel {{action: \"add\", channel: {name:?}}}"),
        Some(net) => format!(
            "{name:?} is an address, a net channel: add it with debug_channel {{action: \"add\", channel: {net:?}}} and send to {net:?}"
        ),
        None => format!(
            "{name:?} names no channel kind ({}): a channel is a kind or kind:target (\"net:8080\", \"file:conf/*.ini\")",
            kind_names()
        ),
    };
    SessionError::validation(format!(
        "channel {name:?} is not open in this session (open: {open}); {next}"
    ))
}
