//! The timeline the web UI draws, aggregated on the server by zoom level.
//!
//! The client asks for a time window and its width in pixel columns. Every
//! call at least one column wide comes back as a span (per thread lane,
//! with its nesting depth); calls narrower than a column are only counted,
//! per column, so the client draws their density instead. Output lines and
//! markers (crashes, logpoints, snapshots, exits) come back one by one
//! while there are few, else as counts per column too; so do the events of
//! each I/O channel (stdin, file, net, midi, audio, ui, scenario steps), on
//! a lane per channel, each item's text its one-line summary. What is shipped
//! therefore grows with the screen's width, not with the session's size.
//!
//! A call that began before the window and ends after it (`main` while
//! zoomed in) has neither its enter nor its exit inside the window: it is
//! found by walking the parent links of each thread's first event in the
//! window. Known limit: a thread with no traced event inside the window
//! shows no lane there, even while it is inside a long call.

use crate::calls::{OpenCalls, Thread, for_each_page};
use crate::{Names, ViewError};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use strobe_core::event::{Event, EventKind};
use strobe_store::{EventFilter, QueryPage, Store};

/// Most columns a request may ask for.
pub const MAX_COLUMNS: u32 = 8192;
/// Spans kept per lane; beyond it the widest are kept and the rest counted.
pub const MAX_SPANS_PER_LANE: usize = 4000;
/// Output lines or markers sent one by one; beyond it only counts.
pub const MAX_ITEMS: usize = 1000;
/// Characters of an output line or marker text shipped.
const TEXT_CHARS: usize = 240;
/// Enclosing calls looked up per thread (the parent chain's depth).
const MAX_ENCLOSING: usize = 64;

/// What to draw.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// Start, ns since the session began.
    pub from_ns: u64,
    /// End (exclusive); `None` = the session's last event.
    pub to_ns: Option<u64>,
    /// Pixel columns the window is drawn in.
    pub columns: u32,
}

/// The timeline of one window.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    /// The window drawn.
    pub from_ns: u64,
    /// Its end.
    pub to_ns: u64,
    /// The session's last event (the whole extent).
    pub end_ns: u64,
    /// Columns the counts are per.
    pub columns: u32,
    /// One lane per thread that made traced calls.
    pub lanes: Vec<Lane>,
    /// stdout/stderr lines, when at most [`MAX_ITEMS`].
    pub output: Vec<Item>,
    /// Output lines per column (always).
    pub output_counts: Vec<u32>,
    /// Crashes, logpoints, snapshots, exits, when at most [`MAX_ITEMS`].
    pub markers: Vec<Item>,
    /// Markers per column (always).
    pub marker_counts: Vec<u32>,
    /// One lane per I/O channel with events in the window, in
    /// [`CHANNEL_LANES`] order.
    pub channels: Vec<ChannelLane>,
    /// Names of the functions the spans refer to.
    pub functions: BTreeMap<u32, String>,
    /// Events read to build it.
    pub events_read: u64,
}

/// The channel lanes, in drawing order, and the event kinds each shows.
pub const CHANNEL_LANES: [(&str, &[EventKind]); 7] = [
    ("stdin", &[EventKind::Stdin]),
    ("file", &[EventKind::File]),
    ("net", &[EventKind::Net]),
    ("midi", &[EventKind::Midi]),
    ("audio", &[EventKind::Audio]),
    ("ui", &[EventKind::UiAction, EventKind::UiSnapshot]),
    ("scenario", &[EventKind::ScenarioStep]),
];

/// One I/O channel's events: what was sent to the program through it and
/// what it saw.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelLane {
    /// The lane's name (`net`, `midi`, `scenario`, …).
    pub channel: &'static str,
    /// Its events, when at most [`MAX_ITEMS`]; each item's text is the
    /// event's summary.
    pub items: Vec<Item>,
    /// Its events per column (always).
    pub counts: Vec<u32>,
}

/// The index in [`CHANNEL_LANES`] of the lane showing `kind`.
fn channel_lane_of(kind: EventKind) -> Option<usize> {
    CHANNEL_LANES
        .iter()
        .position(|(_, kinds)| kinds.contains(&kind))
}

/// One thread's calls.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lane {
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// The thread's name, when the target named it.
    pub name: Option<String>,
    /// Calls wide enough to draw, by start.
    pub spans: Vec<Span>,
    /// Calls too narrow to draw (or beyond the lane's span budget), per column.
    pub counts: Vec<u32>,
    /// Deepest nesting among `spans` (0-based).
    pub max_depth: u32,
}

/// A call drawn as a bar.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    /// Start, ns since the session began.
    pub start_ns: u64,
    /// Duration, ns.
    pub dur_ns: u64,
    /// Nesting depth within the lane.
    pub depth: u32,
    /// Function id (see [`Timeline::functions`]).
    pub func: u32,
    /// Sequence number of the event that ended it (its enter when open).
    pub seq: u64,
    /// Not ended within the window (still running, or ended after it).
    pub open: bool,
}

/// An output line or a marker.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    /// When.
    pub ts_ns: u64,
    /// Event kind's wire name.
    pub kind: &'static str,
    /// Event sequence number.
    pub seq: u64,
    /// Process.
    pub pid: u32,
    /// Thread (0 for output).
    pub tid: u32,
    /// The text, cut short.
    pub text: String,
}

/// Builds the timeline of `window` for the session stored under `key`.
pub fn build(store: &Store, session_id: &str, window: Window) -> Result<Timeline, ViewError> {
    let session = store
        .session(session_id)?
        .ok_or_else(|| ViewError::NoSession(session_id.to_string()))?;
    let end_ns = store.latest_ts(session.key)?;
    let to_ns = window
        .to_ns
        .unwrap_or(end_ns.saturating_add(1))
        .max(window.from_ns + 1);
    let from_ns = window.from_ns;
    let columns = window.columns.clamp(1, MAX_COLUMNS);
    let ns_per_column = ((to_ns - from_ns) as f64 / columns as f64).max(1.0);
    let column = |ts: u64| -> usize {
        (((ts.clamp(from_ns, to_ns - 1) - from_ns) as f64 / ns_per_column) as usize)
            .min(columns as usize - 1)
    };

    let mut spans: HashMap<Thread, Vec<Span>> = HashMap::new();
    let mut open = OpenCalls::default();
    let mut output = Vec::new();
    let mut output_counts = vec![0u32; columns as usize];
    let mut markers = Vec::new();
    let mut marker_counts = vec![0u32; columns as usize];
    let mut channels: Vec<Option<ChannelLane>> = vec![None; CHANNEL_LANES.len()];
    let mut events_read = 0u64;
    // Per thread, the parent link of its first function event in the window.
    let mut first_parent: HashMap<Thread, u64> = HashMap::new();
    // Calls entered before the window that end in it (already drawn).
    let mut ended_in_window: HashSet<(Thread, u32, u64)> = HashSet::new();
    let filter = EventFilter {
        time_from: Some(from_ns),
        time_to: Some(to_ns - 1),
        ..EventFilter::default()
    };
    for_each_page(store, session.key, &filter, |events| {
        for e in events {
            events_read += 1;
            let h = &e.header;
            let Some(kind) = e.kind() else { continue };
            if matches!(kind, EventKind::FunctionEnter | EventKind::FunctionExit) {
                first_parent.entry((h.pid, h.tid)).or_insert(h.parent);
            }
            match kind {
                EventKind::FunctionEnter => open.enter(h, e.seq),
                EventKind::FunctionExit => {
                    // Calls above it that never returned are not drawn.
                    open.exit(h);
                    let entered = h.ts_ns.saturating_sub(h.duration_ns);
                    if entered < from_ns {
                        ended_in_window.insert(((h.pid, h.tid), h.func_id, entered));
                    }
                    let start = entered.max(from_ns);
                    spans.entry((h.pid, h.tid)).or_default().push(Span {
                        start_ns: start,
                        dur_ns: h.ts_ns - start,
                        depth: 0,
                        func: h.func_id,
                        seq: e.seq,
                        open: false,
                    });
                }
                EventKind::Stdout | EventKind::Stderr => {
                    output_counts[column(h.ts_ns)] += 1;
                    if output.len() <= MAX_ITEMS {
                        output.push(Item::of(e, kind, TEXT_CHARS));
                    }
                }
                EventKind::UiSnapshot
                | EventKind::UiAction
                | EventKind::Stdin
                | EventKind::File
                | EventKind::Net
                | EventKind::Midi
                | EventKind::Audio
                | EventKind::ScenarioStep => {
                    let i = channel_lane_of(kind).expect("every channel kind has a lane");
                    let lane = channels[i].get_or_insert_with(|| ChannelLane {
                        channel: CHANNEL_LANES[i].0,
                        items: Vec::new(),
                        counts: vec![0; columns as usize],
                    });
                    lane.counts[column(h.ts_ns)] += 1;
                    if lane.items.len() <= MAX_ITEMS {
                        lane.items.push(Item::summarized(e, kind, TEXT_CHARS));
                    }
                }
                EventKind::Crash
                | EventKind::Logpoint
                | EventKind::VariableSnapshot
                | EventKind::Exception
                | EventKind::ProcessExit => {
                    marker_counts[column(h.ts_ns)] += 1;
                    if markers.len() <= MAX_ITEMS {
                        markers.push(Item::of(e, kind, TEXT_CHARS));
                    }
                }
            }
        }
        Ok(())
    })?;
    // Calls entered in the window and not left in it run to its end.
    let window_end = to_ns.min(end_ns.max(from_ns + 1));
    for (thread, stack) in open.into_open() {
        for o in stack {
            spans.entry(thread).or_default().push(Span {
                start_ns: o.ts_ns,
                dur_ns: window_end.saturating_sub(o.ts_ns),
                depth: 0,
                func: o.func_id,
                seq: o.seq,
                open: true,
            });
        }
    }
    // Calls that enclose the whole window: the parent chain of each
    // thread's first event, less those whose exit is in the window.
    for (thread, parent) in first_parent {
        let mut enclosing = Vec::new();
        let mut link = parent;
        while link != 0 && enclosing.len() < MAX_ENCLOSING {
            let Some(e) = event_at(store, session.key, link - 1)? else {
                break;
            };
            events_read += 1;
            let h = &e.header;
            if e.kind() != Some(EventKind::FunctionEnter) || h.ts_ns >= from_ns {
                break;
            }
            if !ended_in_window.contains(&(thread, h.func_id, h.ts_ns)) {
                enclosing.push(Span {
                    start_ns: from_ns,
                    dur_ns: window_end.saturating_sub(from_ns),
                    depth: 0,
                    func: h.func_id,
                    seq: e.seq,
                    open: true,
                });
            }
            link = h.parent;
        }
        // Outermost first: the stable sort below keeps them in that order.
        enclosing.reverse();
        let lane = spans.entry(thread).or_default();
        enclosing.append(lane);
        *lane = enclosing;
    }
    if output.len() > MAX_ITEMS {
        output.clear();
    }
    if markers.len() > MAX_ITEMS {
        markers.clear();
    }
    let channels: Vec<ChannelLane> = channels
        .into_iter()
        .flatten()
        .map(|mut lane| {
            if lane.items.len() > MAX_ITEMS {
                lane.items.clear();
            }
            lane
        })
        .collect();

    let mut names = Names::new(store, session.key);
    let mut functions = BTreeMap::new();
    let mut lanes = Vec::new();
    let mut threads: Vec<Thread> = spans.keys().copied().collect();
    threads.sort_unstable();
    for thread in threads {
        let mut all = spans.remove(&thread).unwrap_or_default();
        let mut lane = Lane {
            pid: thread.0,
            tid: thread.1,
            name: names.thread(thread.1)?.map(str::to_string),
            spans: Vec::new(),
            counts: vec![0; columns as usize],
            max_depth: 0,
        };
        // Depth from time containment: sort by start (outer first on ties).
        all.sort_by(|a, b| a.start_ns.cmp(&b.start_ns).then(b.dur_ns.cmp(&a.dur_ns)));
        let mut ends: Vec<u64> = Vec::new();
        for s in &mut all {
            while ends.last().is_some_and(|end| *end <= s.start_ns) {
                ends.pop();
            }
            s.depth = ends.len() as u32;
            ends.push(s.start_ns + s.dur_ns);
        }
        let visible = |s: &Span| s.dur_ns as f64 >= ns_per_column;
        let (mut wide, narrow): (Vec<Span>, Vec<Span>) = all.into_iter().partition(visible);
        for s in &narrow {
            lane.counts[column(s.start_ns)] += 1;
        }
        if wide.len() > MAX_SPANS_PER_LANE {
            wide.sort_by_key(|s| std::cmp::Reverse(s.dur_ns));
            for s in wide.drain(MAX_SPANS_PER_LANE..) {
                lane.counts[column(s.start_ns)] += 1;
            }
            wide.sort_by_key(|s| s.start_ns);
        }
        names.prefetch(wide.iter().map(|s| s.func))?;
        for s in &wide {
            functions.entry(s.func).or_insert_with(|| {
                names
                    .function(s.func)
                    .map(|f| f.name.clone())
                    .unwrap_or_default()
            });
        }
        lane.max_depth = wide.iter().map(|s| s.depth).max().unwrap_or(0);
        lane.spans = wide;
        lanes.push(lane);
    }
    Ok(Timeline {
        from_ns,
        to_ns,
        end_ns,
        columns,
        lanes,
        output,
        output_counts,
        markers,
        marker_counts,
        channels,
        functions,
        events_read,
    })
}

/// The event with sequence number `seq`, if stored.
fn event_at(store: &Store, key: i64, seq: u64) -> Result<Option<Event>, ViewError> {
    let filter = EventFilter {
        seq_from: Some(seq),
        seq_to: Some(seq),
        ..EventFilter::default()
    };
    let page = store.query(
        key,
        &filter,
        QueryPage {
            offset: 0,
            limit: 1,
        },
    )?;
    Ok(page.events.into_iter().next())
}

impl Item {
    /// An output line or marker from its event, its text cut to
    /// `max_chars` characters (and saying so).
    pub fn of(e: &Event, kind: EventKind, max_chars: usize) -> Item {
        let text = String::from_utf8_lossy(&e.payload);
        Item {
            ts_ns: e.header.ts_ns,
            kind: kind.name(),
            seq: e.seq,
            pid: e.header.pid,
            tid: e.header.tid,
            text: strobe_store::clip(text.trim_end_matches('\n'), max_chars),
        }
    }

    /// A channel event's item: its text is the event's one-line `summary`
    /// (its JSON when it has none).
    pub fn summarized(e: &Event, kind: EventKind, max_chars: usize) -> Item {
        let mut item = Item::of(e, kind, max_chars);
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&e.payload)
            && let Some(s) = v["summary"].as_str()
        {
            item.text = strobe_store::clip(s, max_chars);
        }
        item
    }
}
