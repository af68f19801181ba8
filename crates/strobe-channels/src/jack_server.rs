//! A private JACK server for one session (`debug_launch {jack: "auto"}`):
//! `jackd` with the dummy driver (no sound card needed), 48 kHz, 256
//! frames a period, under a name of its own; stopped with the session.

use std::ffi::CString;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a started server may take to accept clients.
const READY_WAIT: Duration = Duration::from_secs(10);

/// A running private JACK server; stopped (SIGTERM, then SIGKILL) on drop.
pub struct JackServer {
    name: String,
    child: Child,
}

impl std::fmt::Debug for JackServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JackServer({}, pid {})", self.name, self.child.id())
    }
}

impl JackServer {
    /// Starts `jackd -n <name> -r -t 5000 -d dummy -r 48000 -p 256` and waits until it
    /// takes clients. Its output goes to `log` when given (what it says of
    /// clients it throws out explains a channel gone deaf), else nowhere.
    pub fn start(name: &str, log: Option<&std::path::Path>) -> Result<JackServer, String> {
        // Whether it takes clients is asked through libjack, and the
        // program's channels need it too: without it, say so before
        // starting a server no one could use.
        crate::jack_lib::jack().map_err(|e| e.to_string())?;
        let (out, err) = match log.and_then(|p| {
            std::fs::create_dir_all(p.parent()?).ok()?;
            let f = std::fs::File::create(p).ok()?;
            Some((f.try_clone().ok()?, f))
        }) {
            Some((o, e)) => (Stdio::from(o), Stdio::from(e)),
            None => (Stdio::null(), Stdio::null()),
        };
        let child = Command::new("jackd")
            // -R: real-time scheduling, as JACK is normally run (jackd goes
            // on without it where the user may not have the right). The
            // hooks a traced callback runs are lock-free and never wait on
            // a lower-priority thread without sleeping (agent ring.ts), and
            // the channels' own callbacks only try_lock. An earlier CI
            // failure with -R was the flakiness -r showed too, fixed since
            // (-t below, unlinked capture measures nothing; BENCHMARKS.md).
            // -t 5000: a client that misses cycles for up to 5 s (a loaded
            // machine, a traced program) is not thrown out; at JACK's
            // default 500 ms a stalled channel client or program stops
            // hearing and sending for good.
            .args(["-n", name, "-R", "-t", "5000", "-d", "dummy", "-r", "48000", "-p", "256"])
            .env("JACK_NO_AUDIO_RESERVATION", "1")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| {
                format!("cannot start jackd ({e}): install JACK (Debian: apt-get install jackd2; `./dev setup` does)")
            })?;
        let mut server = JackServer {
            name: name.to_string(),
            child,
        };
        let deadline = Instant::now() + READY_WAIT;
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!("jackd -n {name} exited at start ({status})"));
            }
            if server.takes_clients() {
                return Ok(server);
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "jackd -n {name} did not take clients within {} s",
                    READY_WAIT.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's name (the program's `JACK_DEFAULT_SERVER`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The jackd process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn takes_clients(&self) -> bool {
        let Ok(jack) = crate::jack_lib::jack() else {
            return false;
        };
        let (Ok(client), Ok(server)) = (
            CString::new("strobe-probe"),
            CString::new(self.name.as_str()),
        ) else {
            return false;
        };
        let Ok(c) = jack.open_client(&client, &server) else {
            return false;
        };
        // SAFETY: the client just opened, closed once.
        unsafe { (jack.client_close)(c) };
        true
    }
}

impl Drop for JackServer {
    fn drop(&mut self) {
        // Our own child: SIGTERM lets it remove its shared memory.
        // SAFETY: signalling the process this value started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
