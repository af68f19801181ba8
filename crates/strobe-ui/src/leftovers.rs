//! What a virtual display leaves behind when its daemon is killed: the
//! daemon stops Xvfb and the session bus when the session ends, but a
//! SIGKILL gives it no chance, and the servers (with the accessibility
//! helpers that D-Bus started on demand) run on, reparented to init.
//!
//! So each virtual display keeps a record, a small JSON file in a folder
//! the daemon names (`STROBE_HOME/displays/`): the daemon that started it,
//! and every process it is known to own, each by pid *and* start time
//! (field 22 of `/proc/PID/stat`). A pid alone could have been reused by
//! then; a pid with the same start time is the same process. The next
//! daemon of that home reads the records its dead predecessor left and
//! ends exactly those processes, plus the members of a recorded process
//! group whose leader is still the recorded one (a group cannot outlive its
//! number while any member remains, and every member descends from the
//! leader Strobe started). Nothing else is ever signalled.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How long the processes of a record get to end on SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// A process as the kernel knows it: a pid and when it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProcessId {
    /// Its pid.
    pub pid: u32,
    /// Its start time, in clock ticks since boot (`/proc/PID/stat` field 22).
    pub start: u64,
}

impl ProcessId {
    /// `pid` as it is now, if it runs (a zombie has ended).
    pub fn of(pid: u32) -> Option<ProcessId> {
        let s = Stat::of(pid)?;
        (s.state != 'Z' && s.state != 'X').then_some(ProcessId {
            pid,
            start: s.start,
        })
    }

    /// Whether this very process still runs: same pid, same start time.
    pub fn alive(&self) -> bool {
        ProcessId::of(self.pid).is_some_and(|now| now.start == self.start)
    }
}

/// The fields of `/proc/PID/stat` this module needs.
struct Stat {
    state: char,
    pgrp: u32,
    start: u64,
}

impl Stat {
    fn of(pid: u32) -> Option<Stat> {
        Stat::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// Parses a stat line. The command name (field 2) may hold spaces and
    /// parentheses, so fields are counted after its last `)`.
    fn parse(text: &str) -> Option<Stat> {
        let rest: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
        Some(Stat {
            state: rest.first()?.chars().next()?,
            pgrp: rest.get(2)?.parse().ok()?,
            start: rest.get(19)?.parse().ok()?,
        })
    }
}

/// One process of a record, with what it is (for the log).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owned {
    /// The program ("Xvfb", "dbus-daemon", "at-spi2-registryd").
    pub program: String,
    /// Which process.
    #[serde(flatten)]
    pub id: ProcessId,
}

/// A virtual display's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The daemon that started the display.
    pub daemon: ProcessId,
    /// The display's private runtime directory (removed once its processes
    /// are gone); empty for a [`KeptProcess`].
    pub runtime_dir: PathBuf,
    /// The servers Strobe started, each the leader of its own group (a
    /// [`KeptProcess`] leads none: then no group is ended with it).
    pub leaders: Vec<Owned>,
    /// Processes seen in those groups (started on demand by the bus).
    #[serde(default)]
    pub helpers: Vec<Owned>,
}

/// A record kept on disk while its display runs.
#[derive(Debug)]
pub(crate) struct Recorded {
    path: PathBuf,
    record: Record,
}

impl Recorded {
    /// Writes `record` to a new file in `dir` (created 0700 if need be).
    pub(crate) fn create(dir: &Path, record: Record) -> std::io::Result<Recorded> {
        let name = record
            .runtime_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("display-{}", record.daemon.pid));
        Recorded::create_named(dir, &name, record)
    }

    /// Writes `record` to `dir/<name>.json` (`dir` created 0700 if need be).
    fn create_named(dir: &Path, name: &str, record: Record) -> std::io::Result<Recorded> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let r = Recorded {
            path: dir.join(format!("{name}.json")),
            record,
        };
        r.save()?;
        Ok(r)
    }

    /// Adds the processes in the leaders' groups not recorded yet; saves
    /// only when something was added.
    pub(crate) fn note_helpers(&mut self) -> std::io::Result<()> {
        let known: std::collections::HashSet<u32> = self
            .record
            .leaders
            .iter()
            .chain(&self.record.helpers)
            .filter(|o| o.id.alive())
            .map(|o| o.id.pid)
            .collect();
        let groups: Vec<u32> = self
            .record
            .leaders
            .iter()
            .filter(|l| l.id.alive())
            .map(|l| l.id.pid)
            .collect();
        let mut added = false;
        for (pid, stat) in processes() {
            if groups.contains(&stat.pgrp) && !known.contains(&pid) {
                self.record.helpers.push(Owned {
                    program: program_of(pid),
                    id: ProcessId {
                        pid,
                        start: stat.start,
                    },
                });
                added = true;
            }
        }
        if added {
            // Ended helpers need not stay: their pids mean nothing now.
            self.record.helpers.retain(|h| h.id.alive());
            return self.save();
        }
        Ok(())
    }

    /// The record as it stands.
    pub(crate) fn record(&self) -> &Record {
        &self.record
    }

    /// Writes the file anew: a temporary file created exclusively (never
    /// through a link), then renamed over the record.
    fn save(&self) -> std::io::Result<()> {
        let tmp = self
            .path
            .with_extension(format!("json.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(&serde_json::to_vec(&self.record).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &self.path)
    }

    /// The display stopped cleanly: nothing is left to reap.
    pub(crate) fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A single process a daemon started that must not outlive it (a
/// session's private JACK server), recorded like a display's servers while
/// it runs: if the daemon is killed, the next one ends it. The record goes
/// when this is dropped, so drop it after the process was stopped.
#[derive(Debug)]
pub struct KeptProcess(Recorded);

impl KeptProcess {
    /// Records `pid` (running `program`) as this daemon's, in `dir` as
    /// `<name>.json`. It leads no group of its own, so nothing but it is
    /// ever ended with it.
    pub fn record(dir: &Path, name: &str, program: &str, pid: u32) -> std::io::Result<KeptProcess> {
        let gone = |what: &str| std::io::Error::other(format!("{what} is not running"));
        let daemon = ProcessId::of(std::process::id()).ok_or_else(|| gone("this process"))?;
        let id = ProcessId::of(pid).ok_or_else(|| gone(program))?;
        let record = Record {
            daemon,
            runtime_dir: PathBuf::new(),
            leaders: vec![Owned {
                program: program.to_string(),
                id,
            }],
            helpers: Vec::new(),
        };
        Recorded::create_named(dir, name, record).map(KeptProcess)
    }
}

impl Drop for KeptProcess {
    fn drop(&mut self) {
        self.0.remove();
    }
}

/// What [`reap`] did with one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaped {
    /// The record's file.
    pub record: PathBuf,
    /// The processes ended.
    pub ended: Vec<Owned>,
}

/// Ends what the virtual displays of dead daemons left, as recorded in
/// `dir`, and removes their records and runtime directories. A record
/// whose daemon still runs is left alone (it is that daemon's to stop).
pub fn reap(dir: &Path) -> Vec<Reaped> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        // Only regular files of this user's: never follow a link.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        // SAFETY: getuid(2) has no failure mode.
        if !meta.is_file() || meta.uid() != unsafe { libc::getuid() } {
            continue;
        }
        let Some(record) = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Record>(&b).ok())
        else {
            // Unreadable: nothing in it can be trusted to signal.
            let _ = std::fs::remove_file(&path);
            continue;
        };
        if record.daemon.alive() {
            continue;
        }
        let ended = end_processes(&record);
        remove_runtime_dir(&record.runtime_dir);
        let _ = std::fs::remove_file(&path);
        out.push(Reaped {
            record: path,
            ended,
        });
    }
    out
}

/// Every process of `record` that still runs: the recorded ones with
/// their recorded start times, and the members of each group whose leader
/// is still the recorded one.
fn still_running(record: &Record) -> Vec<Owned> {
    let mut found: Vec<Owned> = record
        .leaders
        .iter()
        .chain(&record.helpers)
        .filter(|o| o.id.alive())
        .cloned()
        .collect();
    let groups: Vec<u32> = record
        .leaders
        .iter()
        .filter(|l| l.id.alive())
        .map(|l| l.id.pid)
        .collect();
    if !groups.is_empty() {
        for (pid, stat) in processes() {
            if groups.contains(&stat.pgrp) && !found.iter().any(|o| o.id.pid == pid) {
                found.push(Owned {
                    program: program_of(pid),
                    id: ProcessId {
                        pid,
                        start: stat.start,
                    },
                });
            }
        }
    }
    found
}

/// SIGTERM to each, SIGKILL to those still there after [`TERM_GRACE`];
/// each signal only after checking that the pid is still the same process.
fn end_processes(record: &Record) -> Vec<Owned> {
    let targets = still_running(record);
    let signal = |sig: i32| {
        for t in &targets {
            if t.id.alive() {
                // SAFETY: kill(2) of a process this home's daemon started
                // (same pid and start time as recorded, checked just now).
                unsafe { libc::kill(t.id.pid as i32, sig) };
            }
        }
    };
    signal(libc::SIGTERM);
    let deadline = Instant::now() + TERM_GRACE;
    while Instant::now() < deadline && targets.iter().any(|t| t.id.alive()) {
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(libc::SIGKILL);
    targets
}

/// Removes a display's runtime directory, only if it is one: a real
/// directory (not a link) of this user's, named as a virtual display's,
/// directly under the temporary directory.
fn remove_runtime_dir(dir: &Path) {
    let named = dir.file_name().is_some_and(|n| {
        n.to_string_lossy()
            .starts_with(crate::virtual_display::DIR_PREFIX)
    });
    let placed = dir.parent() == Some(std::env::temp_dir().as_path());
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return;
    };
    // SAFETY: getuid(2) has no failure mode.
    if named && placed && meta.is_dir() && meta.uid() == unsafe { libc::getuid() } {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Every process readable in `/proc`, with its stat.
fn processes() -> Vec<(u32, Stat)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, Stat::of(pid)?)))
        .filter(|(_, s)| s.state != 'Z' && s.state != 'X')
        .collect()
}

fn program_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// A scratch folder of the test's own, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            let dir = std::env::temp_dir()
                .join(format!("strobe-ui-{name}-{}-{nanos}", std::process::id()));
            std::fs::create_dir(&dir).unwrap();
            Scratch(dir)
        }
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_stat_line_is_read_past_a_command_with_parentheses() {
        let line = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        let s = Stat::parse(line).unwrap();
        assert_eq!((s.state, s.pgrp, s.start), ('S', 42, 987654));
    }

    /// A dead daemon's record: its group (a leader and a member it
    /// started) is ended; a process of the test's own, and a record entry
    /// whose pid is alive with another start time, are left alone.
    #[test]
    fn a_dead_daemons_processes_are_ended_and_nothing_else() {
        let home = Scratch::new("reap");
        let mut leader = std::process::Command::new("sh")
            .args(["-c", "sleep 60 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let mut bystander = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let lead = ProcessId::of(leader.id()).unwrap();
        let other = ProcessId::of(bystander.id()).unwrap();
        // The member appears once the shell has started it.
        let deadline = Instant::now() + Duration::from_secs(5);
        let member = loop {
            if let Some((pid, s)) = processes()
                .into_iter()
                .find(|(p, s)| s.pgrp == lead.pid && *p != lead.pid)
            {
                break ProcessId {
                    pid,
                    start: s.start,
                };
            }
            assert!(Instant::now() < deadline, "the shell never started sleep");
            std::thread::sleep(Duration::from_millis(10));
        };
        let record = Record {
            // A daemon that is gone: a pid with a start time no process has.
            daemon: ProcessId {
                pid: std::process::id(),
                start: 1,
            },
            runtime_dir: home.path().join("not-a-display-dir"),
            leaders: vec![Owned {
                program: "sh".into(),
                id: lead,
            }],
            helpers: vec![Owned {
                program: "sleep".into(),
                // The bystander's pid, but not its start time: not ours.
                id: ProcessId {
                    pid: other.pid,
                    start: other.start + 1,
                },
            }],
        };
        std::fs::create_dir(home.path().join("not-a-display-dir")).unwrap();
        let records = home.path().join("displays");
        Recorded::create(&records, record).unwrap();
        let reaped = reap(&records);
        assert_eq!(reaped.len(), 1);
        let ended: Vec<u32> = reaped[0].ended.iter().map(|o| o.id.pid).collect();
        assert!(
            ended.contains(&lead.pid) && ended.contains(&member.pid),
            "{ended:?}"
        );
        assert!(!ended.contains(&other.pid), "{ended:?}");
        let _ = leader.wait();
        assert!(!member.alive(), "the group's member runs on");
        assert!(other.alive(), "the bystander was signalled");
        // Not a display's directory (not under the temporary directory):
        // left where it is; the record is gone.
        assert!(home.path().join("not-a-display-dir").is_dir());
        assert_eq!(std::fs::read_dir(&records).unwrap().count(), 0);
        let _ = bystander.kill();
        let _ = bystander.wait();
    }

    #[test]
    fn a_live_daemons_record_is_left_alone() {
        let home = Scratch::new("live");
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .unwrap();
        let me = ProcessId::of(std::process::id()).unwrap();
        let mut daemon = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let record = Record {
            daemon: ProcessId::of(daemon.id()).unwrap(),
            runtime_dir: home.path().join("x"),
            leaders: vec![Owned {
                program: "sleep".into(),
                id: ProcessId::of(child.id()).unwrap(),
            }],
            helpers: Vec::new(),
        };
        let records = home.path().join("displays");
        Recorded::create(&records, record).unwrap();
        assert!(reap(&records).is_empty());
        assert!(ProcessId::of(child.id()).is_some());
        assert!(me.alive());
        for c in [&mut child, &mut daemon] {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
