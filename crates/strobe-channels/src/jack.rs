//! The JACK client the `midi` and `audio` channels share the code of: one
//! client per channel on the program's server (named, never started here),
//! libjack loaded at run time by `jack_lib` (a machine without JACK gets
//! an error saying what to install, not a daemon that fails to start), a
//! process callback that never blocks, and a connector thread that links
//! the channel's ports to the program's as they appear — the program may
//! register them after the channel opened, or again after a restart.

use crate::jack_lib::{self, Jack, Nframes, PORT_IS_INPUT, PORT_IS_OUTPUT, RawClient, RawPort};
use std::ffi::{CStr, CString, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How often the connector looks for the program's ports.
const CONNECT_EVERY: Duration = Duration::from_millis(50);

/// The JACK port types.
pub(crate) const MIDI: &str = "8 bit raw midi";
/// 32-bit float mono audio.
pub(crate) const AUDIO: &str = "32 bit float mono audio";

/// What a channel does in each JACK cycle (on JACK's real-time thread: it
/// must not block, allocate much or take a lock it may wait for).
pub(crate) trait Cycle: Send + Sync + 'static {
    /// One cycle of `nframes` frames; `ports` are the channel's, in the
    /// order they were registered.
    fn cycle(&self, ports: &[Port], nframes: u32);
}

/// A registered port of the channel's client.
#[derive(Clone, Copy)]
pub(crate) struct Port {
    raw: *mut RawPort,
    jack: &'static Jack,
}

// SAFETY: a port handle is an opaque pointer JACK lets any thread use.
unsafe impl Send for Port {}
// SAFETY: as above.
unsafe impl Sync for Port {}

impl Port {
    /// The port's buffer for this cycle (valid until the cycle ends).
    pub(crate) fn buffer(&self, nframes: u32) -> *mut c_void {
        // SAFETY: called from the process callback with its nframes.
        unsafe { (self.jack.port_get_buffer)(self.raw, nframes) }
    }

    /// The library the port came from (a channel's cycle calls its MIDI
    /// functions on the port's buffer).
    pub(crate) fn jack(&self) -> &'static Jack {
        self.jack
    }
}

/// Which ports of the program a channel port is linked with.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Link {
    /// Ours sends to the program's inputs of the type.
    ToInputs,
    /// The program's outputs of the type send to ours.
    FromOutputs,
}

/// A port to register: its short name, type and link.
pub(crate) struct PortSpec {
    pub name: &'static str,
    pub kind: &'static str,
    pub link: Link,
}

struct State {
    handler: Box<dyn Cycle>,
    ports: Vec<Port>,
    xruns: Arc<Xruns>,
}

/// The late cycles (xruns) JACK reported to the client: how many and when
/// the last was reported, so a channel can put them on the timeline.
/// (JACK's `jack_get_xrun_delayed_usecs` is not kept: it gives the
/// server's last measured delay, stale across xruns, and 0 with the dummy
/// driver.)
#[derive(Default)]
pub(crate) struct Xruns {
    count: AtomicU64,
    last_ns: AtomicU64,
    reported: AtomicU64,
}

/// Xruns reported since the last read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NewXruns {
    /// How many are new.
    pub new: u64,
    /// How many since the client opened.
    pub total: u64,
    /// CLOCK_MONOTONIC ns when the last was reported.
    pub last_ns: u64,
}

impl NewXruns {
    /// The timeline event: `xrun: true`, the counts and a summary.
    pub(crate) fn event(&self) -> serde_json::Value {
        serde_json::json!({
            "dir": "seen", "xrun": true, "new": self.new, "xruns": self.total,
            "summary": format!(
                "{} xrun(s): JACK ran a cycle late; {} since the channel opened",
                self.new, self.total
            ),
        })
    }
}

impl Xruns {
    /// Xruns since the client opened.
    pub(crate) fn total(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Counts one, reported at `at_ns`.
    pub(crate) fn record(&self, at_ns: u64) {
        self.last_ns.store(at_ns, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Release);
    }

    /// The xruns since the last call, if any.
    pub(crate) fn take_new(&self) -> Option<NewXruns> {
        let total = self.count.load(Ordering::Acquire);
        let before = self.reported.swap(total, Ordering::Relaxed);
        (total > before).then(|| NewXruns {
            new: total - before,
            total,
            last_ns: self.last_ns.load(Ordering::Relaxed),
        })
    }
}

unsafe extern "C" fn on_process(nframes: Nframes, arg: *mut c_void) -> i32 {
    // SAFETY: arg is the State the client was given; it outlives the client.
    let state = unsafe { &*(arg as *const State) };
    state.handler.cycle(&state.ports, nframes);
    0
}

unsafe extern "C" fn on_xrun(arg: *mut c_void) -> i32 {
    // SAFETY: as in on_process.
    let state = unsafe { &*(arg as *const State) };
    // JACK calls this on its notification thread, not the real-time one.
    state.xruns.record(monotonic_ns());
    0
}

/// An open client, active, with its connector running; closed on drop.
pub(crate) struct Client {
    raw: Raw,
    state: *mut State,
    stop: Arc<AtomicBool>,
    connector: Option<std::thread::JoinHandle<()>>,
    /// Cycles JACK reported late (xruns) since the client opened.
    pub xruns: Arc<Xruns>,
    /// The program's ports linked so far.
    pub linked: Arc<std::sync::Mutex<Vec<String>>>,
    /// A program output is linked to one of ours: what ours capture is the
    /// program's (before, it is JACK's silence).
    pub capture_linked: Arc<AtomicBool>,
    /// The frames per second.
    pub sample_rate: u32,
}

#[derive(Clone, Copy)]
struct Raw {
    client: *mut RawClient,
    jack: &'static Jack,
}
// SAFETY: JACK's client API may be called from any non-RT thread.
unsafe impl Send for Raw {}
// SAFETY: as above.
unsafe impl Sync for Raw {}

// SAFETY: the raw pointers are owned by Client and freed once, in drop.
unsafe impl Send for Client {}
// SAFETY: shared access only reads the atomics and the mutex.
unsafe impl Sync for Client {}

/// Where the program's client is: its pids, or a client name given.
#[derive(Clone)]
pub(crate) enum Program {
    /// The JACK client(s) these processes opened (see [`clients_of`]).
    Pids(Vec<u32>),
    /// The JACK client of this name.
    Named(String),
}

/// The server a session's program uses: its launch environment's
/// `JACK_DEFAULT_SERVER`, else the daemon's, else JACK's `default`.
pub(crate) fn server_name(env: &[(String, String)]) -> String {
    env.iter()
        .find(|(k, _)| k == "JACK_DEFAULT_SERVER")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("JACK_DEFAULT_SERVER").ok())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "default".into())
}

impl Client {
    /// Opens `name` on `server`, registers `ports`, activates with
    /// `handler`, and starts linking to `program`'s ports.
    pub(crate) fn open(
        server: &str,
        name: &str,
        ports: &[PortSpec],
        handler: Box<dyn Cycle>,
        program: Program,
    ) -> Result<Client, String> {
        let jack = jack_lib::jack().map_err(|e| e.to_string())?;
        let cname = CString::new(name).map_err(|_| "a client name has no NUL".to_string())?;
        let cserver = CString::new(server).map_err(|_| "a server name has no NUL".to_string())?;
        // Never starts a server: the program's is the one to use.
        let raw = jack.open_client(&cname, &cserver).map_err(|status| {
            format!(
                "no JACK server {server:?} is running (status {status:#x}): start one — \
                 JACK_NO_AUDIO_RESERVATION=1 jackd -n {server} -d dummy -r 48000 -p 256 — and launch the program \
                 with env JACK_DEFAULT_SERVER={server}, or launch with debug_launch {{jack: \"auto\"}} to have Strobe start \
                 a private one"
            )
        })?;
        let raw = Raw { client: raw, jack };
        let mut registered = Vec::new();
        for p in ports {
            let pname = CString::new(p.name).expect("a port name");
            let ptype = CString::new(p.kind).expect("a port type");
            let flags = match p.link {
                Link::ToInputs => PORT_IS_OUTPUT,
                Link::FromOutputs => PORT_IS_INPUT,
            };
            // SAFETY: open client, valid strings.
            let port = unsafe {
                (jack.port_register)(raw.client, pname.as_ptr(), ptype.as_ptr(), flags, 0)
            };
            if port.is_null() {
                // SAFETY: the client we opened.
                unsafe { (jack.client_close)(raw.client) };
                return Err(format!("JACK refused to register port {}", p.name));
            }
            registered.push(Port { raw: port, jack });
        }
        let xruns = Arc::new(Xruns::default());
        let state = Box::into_raw(Box::new(State {
            handler,
            ports: registered.clone(),
            xruns: xruns.clone(),
        }));
        // SAFETY: state lives until after the client is closed (drop).
        let ok = unsafe {
            (jack.set_process_callback)(raw.client, on_process, state.cast()) == 0
                && (jack.set_xrun_callback)(raw.client, on_xrun, state.cast()) == 0
                && (jack.activate)(raw.client) == 0
        };
        // SAFETY: the open client.
        let sample_rate = unsafe { (jack.get_sample_rate)(raw.client) };
        let full_names: Vec<(String, &'static str, Link)> = registered
            .iter()
            .zip(ports)
            .map(|(p, spec)| {
                // SAFETY: a registered port's name is a valid C string.
                let n = unsafe { CStr::from_ptr((jack.port_name)(p.raw)) };
                (n.to_string_lossy().into_owned(), spec.kind, spec.link)
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let linked = Arc::new(std::sync::Mutex::new(Vec::new()));
        let capture_linked = Arc::new(AtomicBool::new(false));
        let mut client = Client {
            raw,
            state,
            stop: stop.clone(),
            connector: None,
            xruns,
            linked: linked.clone(),
            capture_linked: capture_linked.clone(),
            sample_rate,
        };
        if !ok {
            return Err("JACK refused to activate the channel's client".into());
        }
        let own = name.to_string();
        client.connector = Some(
            std::thread::Builder::new()
                .name("strobe-jack-connect".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        connect_all(raw, &own, &full_names, &program, &linked, &capture_linked);
                        std::thread::sleep(CONNECT_EVERY);
                    }
                })
                .map_err(|e| e.to_string())?,
        );
        Ok(client)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.connector.take() {
            let _ = t.join();
        }
        // SAFETY: closing stops the callbacks before the state is freed.
        unsafe {
            (self.raw.jack.deactivate)(self.raw.client);
            (self.raw.jack.client_close)(self.raw.client);
            drop(Box::from_raw(self.state));
        }
    }
}

/// Every port name matching a type and flags.
fn ports_of(raw: Raw, kind: &str, flags: std::ffi::c_ulong) -> Vec<String> {
    let ckind = CString::new(kind).expect("a type");
    // SAFETY: open client; the list is freed with jack_free.
    unsafe {
        let list = (raw.jack.get_ports)(raw.client, std::ptr::null(), ckind.as_ptr(), flags);
        if list.is_null() {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut i = 0;
        while !(*list.add(i)).is_null() {
            out.push(CStr::from_ptr(*list.add(i)).to_string_lossy().into_owned());
            i += 1;
        }
        (raw.jack.free)(list.cast());
        out
    }
}

/// Whether the client `name` (a port's prefix) is the program's.
fn is_program(name: &str, own: &str, program: &Program, clients: &[String]) -> bool {
    if name == own {
        return false;
    }
    match program {
        Program::Named(n) => n == name,
        Program::Pids(_) => clients.iter().any(|c| c == name),
    }
}

/// The JACK client names processes `pids` have open. JACK2's library
/// does not implement `jack_get_client_pid`, so they are read from
/// /proc: a JACK2 client holds a Unix socket bound at
/// `/dev/shm/jack_<client>_<uid>_<n>` (its notification channel).
pub(crate) fn clients_of(pids: &[u32]) -> Vec<String> {
    let mut inodes = std::collections::HashSet::new();
    for pid in pids {
        for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(target) = std::fs::read_link(fd.path())
                && let Some(inode) = target
                    .to_str()
                    .and_then(|t| t.strip_prefix("socket:["))
                    .and_then(|t| t.strip_suffix(']'))
            {
                inodes.insert(inode.to_string());
            }
        }
    }
    let table = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    let mut out: Vec<String> = table
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (inode, path) = (f.get(6)?, f.get(7)?);
            if !inodes.contains(*inode) {
                return None;
            }
            client_of_socket(path)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `/dev/shm/jack_<client>_<uid>_<n>` → `<client>`.
fn client_of_socket(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/dev/shm/jack_")?;
    let (head, n) = rest.rsplit_once('_')?;
    let (client, uid) = head.rsplit_once('_')?;
    (n.bytes().all(|b| b.is_ascii_digit())
        && uid.bytes().all(|b| b.is_ascii_digit())
        && !client.is_empty())
    .then(|| client.to_string())
}

fn connect_all(
    raw: Raw,
    own: &str,
    ours: &[(String, &'static str, Link)],
    program: &Program,
    linked: &std::sync::Mutex<Vec<String>>,
    capture_linked: &AtomicBool,
) {
    let clients = match program {
        Program::Pids(pids) => clients_of(pids),
        Program::Named(_) => Vec::new(),
    };
    for (port, kind, link) in ours {
        let theirs_flags = match link {
            Link::ToInputs => PORT_IS_INPUT,
            Link::FromOutputs => PORT_IS_OUTPUT,
        };
        for theirs in ports_of(raw, kind, theirs_flags) {
            let client = theirs.split(':').next().unwrap_or("");
            if !is_program(client, own, program, &clients) {
                continue;
            }
            let (src, dst) = match link {
                Link::ToInputs => (port.as_str(), theirs.as_str()),
                Link::FromOutputs => (theirs.as_str(), port.as_str()),
            };
            let (csrc, cdst) = (
                CString::new(src).expect("a name"),
                CString::new(dst).expect("a name"),
            );
            // SAFETY: open client; EEXIST (already linked) is not an error here.
            let r = unsafe { (raw.jack.connect)(raw.client, csrc.as_ptr(), cdst.as_ptr()) };
            if r == 0 {
                if *link == Link::FromOutputs {
                    capture_linked.store(true, Ordering::Release);
                }
                let mut l = linked.lock().expect("linked lock");
                if !l.contains(&theirs) {
                    l.push(theirs.clone());
                }
            }
        }
    }
}

/// What a JACK channel's spec names: the channel's name (`midi`,
/// `midi:synth`), the program's client, and the server to use.
pub(crate) fn target(
    kind: &str,
    spec: &crate::ChannelSpec,
    session: &crate::SessionTarget,
) -> (String, Program, String) {
    let (name, program) = match &spec.target {
        Some(t) => (format!("{kind}:{t}"), Program::Named(t.clone())),
        None => (kind.to_string(), Program::Pids(session.pids.clone())),
    };
    (name, program, server_name(&session.env))
}

/// A JACK channel's observation side: the session's sink, and the thread
/// that turns what the real-time side queued into observations.
#[derive(Default)]
pub(crate) struct Observer {
    sink: std::sync::Mutex<Option<Arc<dyn crate::ObservationSink>>>,
    stop: AtomicBool,
    thread: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Observer {
    /// The sink, while capturing.
    pub(crate) fn sink(&self) -> Option<Arc<dyn crate::ObservationSink>> {
        self.sink.lock().expect("sink lock").clone()
    }

    /// Whether the work should end.
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Takes `sink` and starts `work` on a thread (once).
    pub(crate) fn start(
        &self,
        channel: &str,
        sink: Arc<dyn crate::ObservationSink>,
        work: impl FnOnce() + Send + 'static,
    ) -> Result<(), crate::ChannelError> {
        *self.sink.lock().expect("sink lock") = Some(sink);
        let mut thread = self.thread.lock().expect("thread lock");
        if thread.is_none() {
            *thread = Some(
                std::thread::Builder::new()
                    .name(format!("strobe-{channel}"))
                    .spawn(work)
                    .map_err(|e| crate::ChannelError::Unavailable {
                        channel: channel.to_string(),
                        why: e.to_string(),
                    })?,
            );
        }
        Ok(())
    }

    /// Ends the work (joined) and lets the sink go.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.lock().expect("thread lock").take() {
            let _ = t.join();
        }
        self.sink.lock().expect("sink lock").take();
    }
}

/// CLOCK_MONOTONIC now, in ns (the session clock's base).
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn new_xruns_are_read_once() {
        let x = Xruns::default();
        assert_eq!(x.take_new(), None);
        x.record(10);
        x.record(20);
        let n = x.take_new().expect("two new");
        assert_eq!((n.new, n.total, n.last_ns), (2, 2, 20));
        assert_eq!(x.take_new(), None);
        x.record(30);
        assert_eq!(x.take_new().map(|n| (n.new, n.total)), Some((1, 3)));
        assert_eq!(x.total(), 3);
        let e = n.event();
        assert_eq!(
            (e["xrun"].clone(), e["new"].clone()),
            (json!(true), json!(2))
        );
    }

    #[test]
    fn a_client_socket_names_its_client() {
        assert_eq!(
            client_of_socket("/dev/shm/jack_synth_0_0").as_deref(),
            Some("synth")
        );
        assert_eq!(
            client_of_socket("/dev/shm/jack_my_synth_1000_3").as_deref(),
            Some("my_synth")
        );
        assert_eq!(client_of_socket("/dev/shm/jack-0-1"), None);
        assert_eq!(client_of_socket("/tmp/jack_x_0_0"), None);
    }
}
