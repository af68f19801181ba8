//! Reading `/proc`: one parser per file, for everything in the session layer
//! that looks at processes (lifecycle, stuck detection, crash causes, memory
//! writes, attach checks). Each used to carry its own, and they disagreed on
//! details such as mapped paths with spaces in them.

use std::path::Path;

/// A process's (or a thread's) `/proc/.../stat`, fields by their proc(5)
/// numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// Fields 3 onwards: the ones after the command name, which may hold
    /// spaces and parentheses, so the text is split after its last `)`.
    after_comm: Vec<String>,
}

impl Stat {
    /// `/proc/PID/stat`; `None` when it cannot be read (gone, not ours).
    pub fn of(pid: u32) -> Option<Stat> {
        Stat::read(&format!("/proc/{pid}/stat"))
    }

    /// `/proc/PID/task/TID/stat`.
    pub fn of_thread(pid: u32, tid: u32) -> Option<Stat> {
        Stat::read(&format!("/proc/{pid}/task/{tid}/stat"))
    }

    fn read(path: &str) -> Option<Stat> {
        Stat::parse(&std::fs::read_to_string(path).ok()?)
    }

    /// Parses the text of a stat file.
    pub fn parse(text: &str) -> Option<Stat> {
        let rest = &text[text.rfind(')')? + 1..];
        let after_comm: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
        (!after_comm.is_empty()).then_some(Stat { after_comm })
    }

    /// Field `n` as proc(5) numbers them (3 is the state); `n` ≥ 3.
    pub fn field(&self, n: usize) -> Option<&str> {
        self.after_comm.get(n.checked_sub(3)?).map(String::as_str)
    }

    fn number<T: std::str::FromStr>(&self, n: usize) -> Option<T> {
        self.field(n)?.parse().ok()
    }

    /// The state letter (field 3): `R`, `S`, `D`, `T`, `t`, `Z`, …
    pub fn state(&self) -> Option<char> {
        self.field(3)?.chars().next()
    }

    /// The parent's pid (field 4).
    pub fn ppid(&self) -> Option<u32> {
        self.number(4)
    }

    /// The process group (field 5).
    pub fn pgrp(&self) -> Option<u32> {
        self.number(5)
    }

    /// The kernel's flags word (field 9; `PF_KTHREAD` marks kernel threads).
    pub fn flags(&self) -> Option<u64> {
        self.number(9)
    }

    /// User plus system CPU time, in clock ticks (fields 14 and 15).
    pub fn cpu_ticks(&self) -> Option<u64> {
        Some(self.number::<u64>(14)? + self.number::<u64>(15)?)
    }

    /// When it started, in clock ticks since boot (field 22): with the pid,
    /// it names one process for good.
    pub fn start_time(&self) -> Option<u64> {
        self.number(22)
    }

    /// A zombie's wait status (field 52).
    pub fn exit_code(&self) -> Option<i32> {
        self.number(52)
    }
}

/// The thread ids of a process.
pub fn threads(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// True when every thread of `pid` is stopped (state `T` or `t`): a
/// signal's group stop or a debugger. One stopped thread is not enough: a
/// process Frida spawned suspended has its main thread stopped while the
/// agent's threads run and answer.
pub fn all_threads_stopped(pid: u32) -> bool {
    let mut any = false;
    for tid in threads(pid) {
        match Stat::of_thread(pid, tid).and_then(|s| s.state()) {
            Some('T' | 't') => any = true,
            Some(_) => return false,
            None => {}
        }
    }
    any
}

/// The thread tracing `pid` (ptrace), from `/proc/PID/status`; `None`
/// when nothing does or the file cannot be read.
pub fn tracer(pid: u32) -> Option<u32> {
    parse_tracer(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

fn parse_tracer(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))
        .and_then(|v| v.trim().parse().ok())
        .filter(|&t| t != 0)
}

/// Waits up to `timeout` until nothing traces `pid`; the tracer when
/// something still does. Linux allows one tracer per process, and a
/// Frida that detached a moment ago may still be freeing its agent under
/// ptrace.
pub fn wait_untraced(pid: u32, timeout: std::time::Duration) -> Option<u32> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let t = tracer(pid)?;
        if std::time::Instant::now() >= deadline {
            return Some(t);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// `r`, `w`, `x` and `p`/`s`, as the kernel writes them (`r-xp`).
    pub perms: String,
    /// Offset in the mapped file.
    pub offset: u64,
    /// The mapped file, without the kernel's ` (deleted)` for a file
    /// replaced on disk; empty for anonymous memory; `[heap]`, `[stack]`, …
    /// for the kernel's own.
    pub path: String,
}

impl Mapping {
    /// Whether `addr` lies inside.
    pub fn contains(&self, addr: u64) -> bool {
        (self.start..self.end).contains(&addr)
    }

    /// Whether code can run from it.
    pub fn executable(&self) -> bool {
        self.perms.contains('x')
    }

    /// Whether it maps a file (rather than anonymous or kernel memory).
    pub fn is_file(&self) -> bool {
        self.path.starts_with('/')
    }

    /// Whether it maps `path` (or the file `path` resolves to).
    pub fn maps_file(&self, path: &Path, canonical: &Path) -> bool {
        !self.path.is_empty() && {
            let p = Path::new(&self.path);
            p == path || p == canonical
        }
    }
}

/// The mappings of `pid`, in address order.
///
/// # Errors
/// When `/proc/PID/maps` cannot be read (the process is gone or not ours).
pub fn maps(pid: u32) -> std::io::Result<Vec<Mapping>> {
    Ok(parse_maps(&std::fs::read_to_string(format!(
        "/proc/{pid}/maps"
    ))?))
}

/// Parses the text of a maps file; malformed lines are skipped.
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines().filter_map(parse_mapping).collect()
}

fn parse_mapping(line: &str) -> Option<Mapping> {
    // address perms offset dev inode, then the path, which may hold spaces.
    let mut rest = line;
    let mut field = || {
        let t = rest.trim_start();
        let end = t.find(char::is_whitespace).unwrap_or(t.len());
        let (f, r) = t.split_at(end);
        rest = r;
        (!f.is_empty()).then_some(f)
    };
    let range = field()?;
    let perms = field()?.to_string();
    let offset = u64::from_str_radix(field()?, 16).ok()?;
    let _dev = field()?;
    let _inode = field()?;
    let (lo, hi) = range.split_once('-')?;
    let path = rest.trim();
    Some(Mapping {
        start: u64::from_str_radix(lo, 16).ok()?,
        end: u64::from_str_radix(hi, 16).ok()?,
        perms,
        offset,
        path: path.strip_suffix(" (deleted)").unwrap_or(path).to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tracer_comes_from_the_status_file() {
        let status = "Name:\tloop\nState:\tS (sleeping)\nTracerPid:\t4242\nUid:\t0\n";
        assert_eq!(parse_tracer(status), Some(4242));
        assert_eq!(parse_tracer("TracerPid:\t0\n"), None);
        assert_eq!(parse_tracer("Name:\tx\n"), None);
        // This test process is not traced (or the check is moot under a debugger).
        let me = std::process::id();
        assert_eq!(
            tracer(me),
            parse_tracer(&std::fs::read_to_string("/proc/self/status").unwrap())
        );
    }

    #[test]
    fn stat_fields_are_numbered_as_proc5_does_whatever_the_command_holds() {
        let text = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 10 0 0 0 7 3 0 0 20 0 1 0 \
                    98765 1000 10 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0 9";
        let s = Stat::parse(text).unwrap();
        assert_eq!(s.state(), Some('S'));
        assert_eq!((s.ppid(), s.pgrp()), (Some(1), Some(4242)));
        assert_eq!(s.flags(), Some(4_194_560));
        assert_eq!(s.cpu_ticks(), Some(10));
        assert_eq!(s.start_time(), Some(98_765));
        assert_eq!(s.exit_code(), Some(9));
        assert_eq!(s.field(2), None, "the command is not a field here");
        assert!(Stat::parse("no parenthesis").is_none());
    }

    #[test]
    fn stat_fields_survive_odd_command_names() {
        // Moved from stuck.rs with the parser.
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194304 100 0 0 0 7 3 0 0 20 0";
        let s = Stat::parse(stat).unwrap();
        assert_eq!(
            (s.state(), s.ppid(), s.pgrp(), s.field(14), s.field(15)),
            (Some('S'), Some(1), Some(42), Some("7"), Some("3"))
        );
    }

    #[test]
    fn this_process_reads_as_running_with_its_parent() {
        let me = Stat::of(std::process::id()).unwrap();
        assert_eq!(me.ppid(), Some(std::os::unix::process::parent_id()));
        assert!(!threads(std::process::id()).is_empty());
        assert!(!all_threads_stopped(std::process::id()));
    }

    #[test]
    fn mappings_keep_paths_with_spaces_and_drop_deleted_marks() {
        let maps = parse_maps(
            "55d4a0000000-55d4a0001000 r--p 00000000 08:01 123 /opt/my app/bin\n\
             55d4a0001000-55d4a0002000 r-xp 00001000 08:01 123 /opt/my app/bin (deleted)\n\
             7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n\
             7f0000000000-7f0000001000 rw-p 00000000 00:00 0\n\
             garbage\n",
        );
        assert_eq!(maps.len(), 4);
        assert_eq!(maps[0].path, "/opt/my app/bin");
        assert_eq!(maps[1].path, "/opt/my app/bin");
        assert!(maps[1].executable() && maps[1].is_file());
        assert_eq!(maps[1].offset, 0x1000);
        assert!(maps[1].contains(0x55d4a0001000) && !maps[1].contains(0x55d4a0002000));
        assert_eq!(maps[2].path, "[stack]");
        assert!(!maps[2].is_file());
        assert_eq!(maps[3].path, "");
        assert!(maps[0].maps_file(Path::new("/opt/my app/bin"), Path::new("/x")));
    }

    #[test]
    fn this_process_has_an_executable_mapping_of_its_own_file() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let maps = maps(std::process::id()).unwrap();
        assert!(
            maps.iter()
                .any(|m| m.executable() && Path::new(&m.path) == exe)
        );
    }
}
