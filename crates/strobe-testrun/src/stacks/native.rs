//! Native stacks through ptrace: each thread is stopped (`PTRACE_SEIZE` +
//! `PTRACE_INTERRUPT`, which sends the process no signal), its registers
//! read, its stack walked with the CFI (`.eh_frame`) of the image each
//! return address is in — or the frame-pointer chain where an image has
//! none (Go) — and the threads let go; names and lines come from the
//! images' DWARF afterwards.

use super::{ProcessInfo, StackError, StackFrame, StackSampler, ThreadStack};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strobe_session::image_at;
use strobe_session::trace::Tracer;
use strobe_symbols::FrameTable;
use strobe_symbols::Language;
use strobe_symbols::resolvers::{self, ImageKind};

/// Most frames walked per thread.
const MAX_FRAMES: usize = 48;
/// Most threads sampled per process.
const MAX_THREADS: usize = 64;
/// How long a thread may take to stop (one in an uninterruptible sleep
/// stops when it wakes).
const STOP_TIMEOUT: Duration = Duration::from_millis(500);

/// The native (ptrace + CFI) sampler.
pub struct NativeSampler {
    symbol_cache: Option<PathBuf>,
    /// Each image's function entry points, read once per sampler.
    entries: Mutex<HashMap<PathBuf, Arc<Entries>>>,
}

impl NativeSampler {
    /// Symbol indexes are cached under `symbol_cache` when given.
    pub fn new(symbol_cache: Option<PathBuf>) -> Self {
        Self {
            symbol_cache,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The function entry points of `image`.
    fn entries_of(&self, image: &Path) -> Arc<Entries> {
        self.entries
            .lock()
            .expect("entries lock")
            .entry(image.to_path_buf())
            .or_insert_with(|| Arc::new(Entries::read(image)))
            .clone()
    }
}

/// Where an image's functions start and end (image offsets, as
/// `image_at` bases give them), from its symbol tables: `.symtab` where
/// kept, `.dynsym` otherwise. Reading them takes milliseconds, unlike
/// DWARF, so every sample can say which function each frame is in: a loop
/// that calls a helper is then the same place whether a sample lands in
/// the loop or in the helper's frame.
#[derive(Default)]
struct Entries {
    /// `(start, end)`, sorted by start.
    ranges: Vec<(u64, u64)>,
}

impl Entries {
    fn read(image: &Path) -> Entries {
        use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
        let Ok(bytes) = std::fs::read(image) else {
            return Entries::default();
        };
        let Ok(obj) = object::File::parse(&*bytes) else {
            return Entries::default();
        };
        let lowest = obj.segments().map(|s| s.address()).min().unwrap_or(0);
        let mut ranges: Vec<(u64, u64)> = obj
            .symbols()
            .chain(obj.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.address() >= lowest)
            .map(|s| (s.address() - lowest, s.address() - lowest + s.size()))
            .collect();
        ranges.sort_unstable();
        ranges.dedup();
        Entries { ranges }
    }

    /// The start of the function holding image offset `at`.
    fn function_at(&self, at: u64) -> Option<u64> {
        let i = self.ranges.partition_point(|(start, _)| *start <= at);
        let (start, end) = *self.ranges.get(i.checked_sub(1)?)?;
        (at < end).then_some(start)
    }
}

/// A thread's registers at the stop: pc, sp, frame pointer.
struct Regs {
    pc: u64,
    sp: u64,
    bp: u64,
}

impl StackSampler for NativeSampler {
    fn name(&self) -> &'static str {
        "native"
    }

    fn handles(&self, _process: &ProcessInfo) -> bool {
        true
    }

    fn sample(&self, process: &ProcessInfo) -> Result<Vec<ThreadStack>, StackError> {
        let pid = process.pid;
        // ptrace ties a tracee to the thread that attached: a thread of its
        // own, whose exit detaches whatever it could not let go itself.
        let walked = std::thread::spawn(move || walk_threads(pid))
            .join()
            .map_err(|_| StackError::Tool("the stack walk panicked".into()))??;
        Ok(walked
            .into_iter()
            .map(|(tid, name, pcs)| ThreadStack {
                tid,
                name,
                frames: pcs
                    .into_iter()
                    .enumerate()
                    .map(|(i, (pc, image))| {
                        let module = image
                            .as_ref()
                            .and_then(|(p, _)| p.file_name())
                            .map(|n| n.to_string_lossy().into_owned());
                        // A return address points after its call.
                        let at = if i == 0 { pc } else { pc.wrapping_sub(1) };
                        let entry = image.as_ref().and_then(|(path, base)| {
                            let start =
                                self.entries_of(path).function_at(at.wrapping_sub(*base))?;
                            Some(format!("{}+{start:#x}", module.as_deref().unwrap_or("?")))
                        });
                        StackFrame {
                            function: None,
                            file: None,
                            line: None,
                            module,
                            address: Some(format!("{pc:#x}")),
                            image,
                            entry,
                        }
                    })
                    .collect(),
            })
            .collect())
    }

    fn name_frames(&self, threads: &mut [ThreadStack]) {
        let mut symbols = Symbols::open(
            threads
                .iter()
                .flat_map(|t| t.frames.iter().filter_map(|f| f.image.as_ref()))
                .map(|(path, _)| path),
            self.symbol_cache.as_deref(),
        );
        for t in threads {
            for (i, f) in t.frames.iter_mut().enumerate() {
                symbols.name(f, i == 0);
            }
        }
    }
}

/// An address's image and runtime base.
type Image = Option<(PathBuf, u64)>;

/// Stops each thread of `pid` in turn, walks its stack, lets it go.
#[allow(clippy::type_complexity)]
fn walk_threads(pid: u32) -> Result<Vec<(u32, String, Vec<(u64, Image)>)>, StackError> {
    let mut tids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map_err(|_| StackError::Gone(pid))?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    tids.truncate(MAX_THREADS);
    let mem = File::open(format!("/proc/{pid}/mem")).map_err(|e| StackError::Ptrace {
        pid,
        reason: e.to_string(),
    })?;
    let mut tables: HashMap<PathBuf, FrameTable> = HashMap::new();
    let mut out = Vec::new();
    let mut first_error = None;
    for tid in tids {
        let name = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
            .map(|s| s.trim_end().to_string())
            .unwrap_or_default();
        let stopped = match Stopped::stop(tid) {
            Ok(s) => s,
            Err(e) => {
                first_error.get_or_insert(e);
                continue;
            }
        };
        let pcs = match stopped.regs() {
            Some(regs) => walk(pid, &mem, regs, &mut tables),
            None => Vec::new(),
        };
        drop(stopped);
        out.push((tid, name, pcs));
    }
    if out.is_empty() {
        return Err(match first_error {
            Some(reason) => StackError::Ptrace { pid, reason },
            None => StackError::Gone(pid),
        });
    }
    Ok(out)
}

/// A thread held in a ptrace stop; let go when dropped.
struct Stopped {
    tid: i32,
    /// A signal that arrived while stopping, to hand back at the detach.
    pending_signal: i32,
}

impl Stopped {
    fn stop(tid: u32) -> Result<Stopped, String> {
        let tid = tid as i32;
        // SAFETY: plain ptrace requests on a thread id; no memory is passed.
        unsafe {
            if libc::ptrace(libc::PTRACE_SEIZE, tid, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error().to_string());
            }
            if libc::ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0) != 0 {
                let e = std::io::Error::last_os_error().to_string();
                libc::ptrace(libc::PTRACE_DETACH, tid, 0, 0);
                return Err(e);
            }
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            let mut status = 0;
            // SAFETY: waits for the seized thread only (WNOHANG, __WALL).
            let r = unsafe { libc::waitpid(tid, &mut status, libc::__WALL | libc::WNOHANG) };
            if r == tid {
                if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                    return Err("the thread exited".into());
                }
                let sig = libc::WSTOPSIG(status);
                // The interrupt's stop is a SIGTRAP with PTRACE_EVENT_STOP;
                // anything else is a signal the thread was about to get.
                let event_stop = (status >> 16) == libc::PTRACE_EVENT_STOP;
                return Ok(Stopped {
                    tid,
                    pending_signal: if event_stop { 0 } else { sig },
                });
            }
            if r < 0 || Instant::now() > deadline {
                // Left seized: the walking thread's exit lets it go.
                return Err("the thread did not stop".into());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn regs(&self) -> Option<Regs> {
        // SAFETY: an all-integer struct, filled by the kernel.
        let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
        // SAFETY: PTRACE_GETREGS writes one user_regs_struct to the pointer.
        let r = unsafe {
            libc::ptrace(
                libc::PTRACE_GETREGS,
                self.tid,
                0,
                &mut regs as *mut libc::user_regs_struct,
            )
        };
        (r == 0).then_some(Regs {
            pc: regs.rip,
            sp: regs.rsp,
            bp: regs.rbp,
        })
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        // SAFETY: detaching a thread this thread holds stopped.
        unsafe { libc::ptrace(libc::PTRACE_DETACH, self.tid, 0, self.pending_signal as i64) };
    }
}

fn read_u64(mem: &File, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    mem.read_exact_at(&mut b, addr).ok()?;
    Some(u64::from_le_bytes(b))
}

/// The pc, then each return address, with the image each is in.
fn walk(
    pid: u32,
    mem: &File,
    regs: Regs,
    tables: &mut HashMap<PathBuf, FrameTable>,
) -> Vec<(u64, Image)> {
    let Regs {
        mut pc,
        mut sp,
        mut bp,
    } = regs;
    let mut out = Vec::new();
    for depth in 0..MAX_FRAMES {
        // A return address points after its call: look the call up.
        let at = if depth == 0 { pc } else { pc.wrapping_sub(1) };
        let image = image_at(pid, at);
        if image.is_none() && depth > 0 {
            // Past the outermost frame.
            break;
        }
        out.push((pc, image.clone()));
        let rule = image.as_ref().and_then(|(path, base)| {
            tables
                .entry(path.clone())
                .or_insert_with(|| FrameTable::open(path))
                .unwind_at(at - base)
        });
        let (ret, next_sp, next_bp) = match rule {
            Some(rule) => {
                let reg = match rule.cfa.register {
                    7 => sp,
                    6 => bp,
                    _ => break,
                };
                let cfa = reg.wrapping_add(rule.cfa.offset as u64);
                let Some(ret) = read_u64(mem, cfa.wrapping_sub(8)) else {
                    break;
                };
                let next_bp = match rule.rbp_saved_at {
                    Some(o) => match read_u64(mem, cfa.wrapping_add(o as u64)) {
                        Some(v) => v,
                        None => break,
                    },
                    None => bp,
                };
                (ret, cfa, next_bp)
            }
            // No CFI (Go, JIT code): the frame-pointer chain.
            None => {
                if bp == 0 || bp < sp {
                    break;
                }
                let (Some(saved_bp), Some(ret)) =
                    (read_u64(mem, bp), read_u64(mem, bp.wrapping_add(8)))
                else {
                    break;
                };
                (ret, bp.wrapping_add(16), saved_bp)
            }
        };
        if ret == 0 || (next_sp <= sp && depth > 0) {
            break;
        }
        pc = ret;
        sp = next_sp;
        bp = next_bp;
    }
    out
}

/// Names and lines for addresses, from each image's symbols.
struct Symbols {
    tracer: Tracer,
}

impl Symbols {
    /// Opens the symbols of every image in `images` that has any.
    fn open<'a>(images: impl Iterator<Item = &'a PathBuf>, cache: Option<&Path>) -> Self {
        let mut paths: Vec<&PathBuf> = images.collect();
        paths.sort();
        paths.dedup();
        // Frames are named from machine code's symbols only (the native
        // resolver opens the program and its libraries alike).
        let modules = paths
            .into_iter()
            .flat_map(|p| {
                let image = resolvers::Image {
                    path: p,
                    kind: ImageKind::Library,
                    project_root: Path::new("/"),
                    args: &[],
                    env: &[],
                };
                resolvers::open(&image, cache, Some(Language::Native))
            })
            .filter_map(Result::ok)
            .collect();
        Self {
            tracer: Tracer::new(modules, Path::new("/")),
        }
    }

    /// Fills in a frame's function, file and line.
    fn name(&mut self, frame: &mut StackFrame, innermost: bool) {
        let (Some((path, base)), Some(pc)) = (
            frame.image.as_ref(),
            frame
                .address
                .as_deref()
                .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok()),
        ) else {
            return;
        };
        // A return address points after its call: name the call.
        let at = if innermost { pc } else { pc.wrapping_sub(1) };
        if let Some(m) = self.tracer.module_index(path) {
            let loc = self.tracer.locate(m, at - base);
            frame.function = loc.function;
            frame.file = loc.file;
            frame.line = loc.line;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_know_their_function_from_the_symbol_table() {
        let e = Entries {
            ranges: vec![(0x100, 0x180), (0x200, 0x210)],
        };
        assert_eq!(e.function_at(0x100), Some(0x100));
        assert_eq!(e.function_at(0x17f), Some(0x100));
        assert_eq!(e.function_at(0x180), None, "between functions");
        assert_eq!(e.function_at(0x20f), Some(0x200));
        assert_eq!(e.function_at(0x50), None);
        // This test binary has its own symbols.
        let me = std::env::current_exe().unwrap();
        assert!(Entries::read(&me).ranges.len() > 100);
    }

    #[test]
    fn a_sleeping_child_is_unwound_into_libc_and_let_go() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let process = ProcessInfo::of(child.id());
        let sampler = NativeSampler::new(None);
        let mut threads = sampler.sample(&process).unwrap();
        sampler.name_frames(&mut threads);
        assert_eq!(threads.len(), 1);
        let t = &threads[0];
        assert_eq!(t.name, "sleep");
        let names: Vec<String> = t.frames.iter().map(|f| f.display()).collect();
        assert!(
            t.frames[0]
                .entry
                .as_deref()
                .is_some_and(|e| e.starts_with("libc")),
            "the innermost frame's function is known at sampling time: {:?}",
            t.frames[0]
        );
        assert!(
            names.iter().take(3).any(|f| f.contains("nanosleep")),
            "{names:?}"
        );
        assert!(t.frames.len() >= 3, "walked past libc: {names:?}");
        // Let go: the child still runs and can be stopped as usual.
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap();
        assert!(!stat.contains(") t "), "still traced-stopped: {stat}");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
