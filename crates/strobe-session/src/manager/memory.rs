//! `debug_memory`: reads and writes a live target's memory from the daemon
//! through `/proc/PID/mem` (a few µs a read, against an agent round trip of
//! hundreds), for DWARF-named globals and statics with `.field` / `->field`
//! / `[i]` paths and a last `[a:b]` slice (see [`strobe_values::varpath`]), and raw
//! addresses with a type hint. Poll mode samples targets on a timer into
//! `variable_snapshot` events.

use super::breakpoints::LocalSpec;
use super::{Live, SessionManager, store_err};
use crate::SessionError;
use crate::trace::{self, Tracer};
use serde_json::{Value, json};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strobe_core::clock::monotonic_ns;
use strobe_core::event::{EventBatch, EventHeader, EventKind, FLAG_JSON};
use strobe_values::{self as values, WatchSpec, WatchType};

/// Most targets one call reads.
pub const MAX_TARGETS: usize = 16;
/// Largest `bytes` read (written to a file).
const BYTES_MAX: u64 = 64 * 1024 * 1024;
/// Longest C string followed from a `char *`.
const STRING_MAX: usize = 1024;

/// One thing to read or write.
#[derive(Debug, Clone, Default)]
pub struct MemoryTarget {
    /// A global or static, with `.field` / `->field` / `[i]` steps and a last `[a:b]`.
    pub variable: Option<String>,
    /// A raw hex address (with `type`).
    pub address: Option<String>,
    /// For addresses: i8…u64, f32, f64, pointer or bytes.
    pub type_hint: Option<String>,
    /// For `bytes`: how many.
    pub size: Option<u64>,
    /// For writes: the new value.
    pub value: Option<Value>,
}

/// A resolved target.
enum Target {
    /// Global, static or raw memory.
    Memory(WatchSpec),
    /// A local of a paused thread's frame, in memory.
    Local(WatchSpec, u32),
    /// A local held in a register (readable, not writable).
    Register {
        label: String,
        bytes: Vec<u8>,
        ty: WatchType,
        string: bool,
        thread: u32,
    },
}

/// Poll timing.
#[derive(Debug, Clone, Copy)]
pub struct Poll {
    /// Between samples (50–5000).
    pub interval_ms: u64,
    /// How long to sample (≤ 30000).
    pub duration_ms: u64,
}

/// The target's memory, opened once per call.
pub(super) struct Mem {
    file: File,
}

impl Mem {
    pub(super) fn open(pid: u32, write: bool) -> Result<Mem, SessionError> {
        std::fs::OpenOptions::new()
            .read(true)
            .write(write)
            .open(format!("/proc/{pid}/mem"))
            .map(|file| Mem { file })
            .map_err(|e| {
                SessionError::internal(format!(
                    "cannot open the memory of process {pid} ({e}); the daemon reads the memory of the \
                     programs it launched, which needs the default ptrace scope (kernel.yama.ptrace_scope ≤ 1)"
                ))
            })
    }

    pub(super) fn read(&self, addr: u64, len: u64) -> Result<Vec<u8>, String> {
        let mut buf = vec![0u8; len as usize];
        let mut done = 0usize;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], addr + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) => {
                    return Err(format!(
                        "cannot read {len} bytes at {addr:#x}: {}",
                        if e.raw_os_error() == Some(5) {
                            "the address is not mapped".to_string()
                        } else {
                            e.to_string()
                        }
                    ));
                }
            }
        }
        if done < buf.len() {
            return Err(format!(
                "cannot read {len} bytes at {addr:#x}: only {done} are mapped"
            ));
        }
        Ok(buf)
    }

    pub(super) fn read_u64(&self, addr: u64) -> Result<u64, String> {
        let b = self.read(addr, 8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    pub(super) fn write(&self, addr: u64, bytes: &[u8]) -> Result<(), String> {
        self.file
            .write_all_at(bytes, addr)
            .map_err(|e| format!("cannot write {} bytes at {addr:#x}: {e}", bytes.len()))
    }

    /// Follows the chain; returns the final address.
    pub(super) fn locate(&self, spec: &WatchSpec) -> Result<u64, String> {
        let (first, addend) = spec.chain[0];
        let mut addr = first.wrapping_add(addend as u64);
        for (i, (_, addend)) in spec.chain.iter().enumerate().skip(1) {
            let p = self.read_u64(addr)?;
            if p == 0 {
                return Err(format!("pointer {i} of the chain is NULL (at {addr:#x})"));
            }
            addr = p.wrapping_add(*addend as u64);
        }
        Ok(addr)
    }

    /// The C string a `char *` points to (at most STRING_MAX bytes).
    pub(super) fn c_string(&self, ptr: u64) -> Value {
        if ptr == 0 {
            return Value::Null;
        }
        let mut out = Vec::new();
        let mut at = ptr;
        while out.len() < STRING_MAX {
            let chunk = (4096 - (at % 4096)).min((STRING_MAX - out.len()) as u64);
            let Ok(b) = self.read(at, chunk) else {
                if out.is_empty() {
                    return json!(format!("<unreadable {ptr:#x}>"));
                }
                break;
            };
            if let Some(end) = b.iter().position(|c| *c == 0) {
                out.extend_from_slice(&b[..end]);
                return values::text(&out, false);
            }
            out.extend_from_slice(&b);
            at += chunk;
        }
        values::text(&out, true)
    }
}

impl SessionManager {
    fn memory_live(&self, id: &str) -> Result<Arc<Live>, SessionError> {
        self.running_live(id, "its memory is gone", "read it")
    }

    /// The live session `id` whose program still runs; errors say what was
    /// lost with it and to launch again to `purpose`.
    pub(super) fn running_live(
        &self,
        id: &str,
        lost: &str,
        purpose: &str,
    ) -> Result<Arc<Live>, SessionError> {
        let live = self.live(id).ok_or_else(|| match self.store.session(id) {
            Ok(Some(_)) => SessionError::exited(format!(
                "session '{id}' is not running any more: {lost}. Launch again to {purpose}."
            )),
            _ => SessionError::session_not_found(id),
        })?;
        if live.life.lock().expect("lifecycle lock").ended {
            return Err(SessionError::exited(format!(
                "the program of session '{id}' has ended: {lost}"
            )));
        }
        // After an exec the session's process runs a new image, with its
        // own symbols and agent.
        if live.replaced.load(std::sync::atomic::Ordering::SeqCst)
            && let Some(image) = self
                .running_children(&live)
                .into_iter()
                .filter(|c| c.pid == live.pid)
                .max_by_key(|c| c.id_base)
        {
            return Ok(image);
        }
        Ok(live)
    }

    /// Resolves targets (per-target errors kept in place). With `frame`,
    /// variable names are looked up first among the locals of a paused
    /// thread (that thread, or the one paused last).
    fn resolve_targets(
        &self,
        live: &Live,
        targets: &[MemoryTarget],
        frame: Option<Option<u32>>,
    ) -> Result<Vec<Result<Target, String>>, SessionError> {
        if targets.is_empty() || targets.len() > MAX_TARGETS {
            return Err(SessionError::validation(format!(
                "'targets' takes 1–{MAX_TARGETS} entries, got {}",
                targets.len()
            )));
        }
        let needs_symbols = targets.iter().any(|t| t.variable.is_some());
        let paused = match frame {
            Some(thread) if needs_symbols => self
                .paused_frame(live, thread)
                .map_err(SessionError::validation)?,
            _ => None,
        };
        let mut guard = live.tracer.lock().expect("tracer lock");
        if needs_symbols && guard.is_none() {
            *guard = Some(self.new_tracer(live)?);
        }
        let layout = match (&paused, guard.as_mut()) {
            (Some(p), Some(tracer)) => p
                .location
                .as_ref()
                .and_then(|loc| tracer.frame_layout(loc.module, loc.function_index?, loc.offset)),
            _ => None,
        };
        let base = |path: &Path| self.image_base(live, path, Duration::from_secs(5));
        Ok(targets
            .iter()
            .map(|t| {
                if let (Some(v), Some(layout), Some(p)) = (&t.variable, &layout, &paused) {
                    let (name, steps) = trace::parse_chain(v)?;
                    if layout.vars.iter().any(|x| x.name == name) {
                        return match super::breakpoints::local_spec(
                            layout,
                            &p.frame(),
                            &name,
                            &steps,
                        )? {
                            LocalSpec::Memory(spec) => Ok(Target::Local(spec, p.thread_id)),
                            LocalSpec::Value { bytes, ty, string } => Ok(Target::Register {
                                label: v.to_string(),
                                bytes,
                                ty,
                                string,
                                thread: p.thread_id,
                            }),
                        };
                    }
                }
                resolve_one(guard.as_mut(), t, &base).map(Target::Memory)
            })
            .collect())
    }

    /// Reads targets now.
    pub fn memory_read(
        &self,
        id: &str,
        targets: &[MemoryTarget],
        depth: u32,
        thread: Option<u32>,
    ) -> Result<Vec<Value>, SessionError> {
        if !(1..=5).contains(&depth) {
            return Err(SessionError::validation(format!(
                "'depth' must be 1–5 (default 1), got {depth}"
            )));
        }
        let live = self.memory_live(id)?;
        if self.is_python_memory(&live, targets)? {
            let out = self.python_memory(&live, targets, depth, thread, false)?;
            return all_failed("read", out);
        }
        let resolved = self.resolve_targets(&live, targets, Some(thread))?;
        let mem = Mem::open(live.pid, false)?;
        let mut out = Vec::new();
        for (i, r) in resolved.into_iter().enumerate() {
            out.push(match r {
                Ok(Target::Memory(r)) => self.read_one(&mem, &r, depth, id, i),
                Ok(Target::Local(r, thread)) => {
                    let mut v = self.read_one(&mem, &r, depth, id, i);
                    v["local"] = json!(true);
                    v["threadId"] = json!(thread);
                    v
                }
                Ok(Target::Register {
                    label,
                    bytes,
                    ty,
                    string,
                    thread,
                }) => {
                    let value = if string {
                        mem.c_string(u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")))
                    } else {
                        values::render_memory(&ty, &bytes, 0, depth, &label)
                    };
                    json!({"target": label, "type": values::type_name(&ty), "value": value,
                           "local": true, "threadId": thread, "inRegister": true})
                }
                Err(e) => json!({"target": target_text(&targets[i]), "error": e}),
            });
        }
        all_failed("read", out)
    }

    fn read_one(&self, mem: &Mem, r: &WatchSpec, depth: u32, id: &str, index: usize) -> Value {
        let addr = match mem.locate(r) {
            Ok(a) => a,
            Err(e) => return json!({"target": r.label, "error": e}),
        };
        let bytes = match mem.read(addr, r.size) {
            Ok(b) => b,
            Err(e) => {
                return json!({"target": r.label, "address": format!("{addr:#x}"), "error": e});
            }
        };
        let ty = values::type_name(&r.ty);
        let mut v = json!({
            "target": r.label,
            "address": format!("{addr:#x}"),
            "type": ty,
            "size": r.size,
        });
        if matches!(&r.ty, WatchType::Hint(h) if h == "bytes") {
            let dir = self.home.root().join("memory");
            let file = dir.join(format!("{id}-{}-{index}.bin", monotonic_ns()));
            let written =
                std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, &bytes));
            match written {
                Ok(()) => {
                    v["file"] = json!(file.to_string_lossy());
                    v["preview"] = json!(
                        bytes
                            .iter()
                            .take(64)
                            .map(|b| format!("{b:02x}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    );
                }
                Err(e) => v["error"] = json!(format!("could not write {}: {e}", file.display())),
            }
            return v;
        }
        v["value"] = if r.string {
            mem.c_string(u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")))
        } else if let Some(asked) = &r.slice {
            // A slice shows each element as `depth` shows one value.
            let mut value = values::render_memory(&r.ty, &bytes, addr, depth + 1, &r.label);
            let shown = asked.end - asked.start;
            if let (Value::Array(items), true) = (&mut value, shown > values::ARRAY_MAX) {
                let next = asked.start + values::ARRAY_MAX;
                let label = r.label.trim();
                let base = label.rfind('[').map_or(label, |i| &label[..i]);
                items.push(json!(format!(
                    "… {} more (a read shows {}): ask for {base}[{next}:{}]",
                    asked.end - next,
                    values::ARRAY_MAX,
                    asked.end.min(next + values::ARRAY_MAX)
                )));
            }
            value
        } else {
            values::render_memory(&r.ty, &bytes, addr, depth, &r.label)
        };
        v
    }

    /// Writes scalar values; returns the previous and new value of each.
    /// Writes into executable mappings are refused unless `allow_code`:
    /// patching code under running threads (or over a hook) crashes the
    /// program more often than not.
    pub fn memory_write(
        &self,
        id: &str,
        targets: &[MemoryTarget],
        thread: Option<u32>,
        allow_code: bool,
    ) -> Result<Vec<Value>, SessionError> {
        for t in targets {
            if t.value.is_none() {
                return Err(SessionError::validation(format!(
                    "every write target needs a 'value' ({} has none)",
                    target_text(t)
                )));
            }
        }
        let live = self.memory_live(id)?;
        if self.is_python_memory(&live, targets)? {
            let out = self.python_memory(&live, targets, 1, thread, true)?;
            return all_failed("written", out);
        }
        let resolved = self.resolve_targets(&live, targets, Some(thread))?;
        let mem = Mem::open(live.pid, true)?;
        let mut out = Vec::new();
        for (i, r) in resolved.into_iter().enumerate() {
            let t = &targets[i];
            let value = t.value.as_ref().expect("checked above");
            let res = r.and_then(|r| match r {
                Target::Memory(r) | Target::Local(r, _) => Ok(r),
                Target::Register { label, .. } => Err(format!(
                    "{label} lives in a register at this point of the code; only locals kept in memory can be written"
                )),
            });
            let res = res.and_then(|r| {
                let bytes = values::encode_scalar(&r.ty, r.size, value)?;
                let addr = mem.locate(&r)?;
                if !allow_code && let Some(mapping) = code_mapping(live.pid, addr, r.size) {
                    return Err(format!(
                        "{addr:#x} is executable code ({mapping}): a write there can crash the \
                         program, so it is refused; pass allowCodeWrite: true to write anyway"
                    ));
                }
                let before = mem.read(addr, r.size)?;
                mem.write(addr, &bytes)?;
                let after = mem.read(addr, r.size)?;
                Ok(json!({
                    "target": r.label,
                    "address": format!("{addr:#x}"),
                    "type": values::type_name(&r.ty),
                    "previousValue": values::render_memory(&r.ty, &before, addr, 1, &r.label),
                    "newValue": values::render_memory(&r.ty, &after, addr, 1, &r.label),
                }))
            });
            out.push(res.unwrap_or_else(|e| json!({"target": target_text(t), "error": e})));
        }
        all_failed("written", out)
    }

    /// Starts sampling targets into `variable_snapshot` events; returns at once.
    pub fn memory_poll(
        &self,
        id: &str,
        targets: &[MemoryTarget],
        depth: u32,
        poll: Poll,
    ) -> Result<Value, SessionError> {
        if !(50..=5000).contains(&poll.interval_ms) || !(100..=30_000).contains(&poll.duration_ms) {
            return Err(SessionError::validation(
                "'poll' needs intervalMs 50–5000 and durationMs 100–30000",
            ));
        }
        if !(1..=5).contains(&depth) {
            return Err(SessionError::validation(format!(
                "'depth' must be 1–5 (default 1), got {depth}"
            )));
        }
        let live = self.memory_live(id)?;
        let resolved: Vec<WatchSpec> = self
            .resolve_targets(&live, targets, None)?
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.and_then(|r| match r {
                    Target::Memory(spec) => Ok(spec),
                    _ => Err("only globals can be polled".to_string()),
                })
                .map_err(|e| format!("{}: {e}", target_text(&targets[i])))
            })
            .collect::<Result<_, _>>()
            .map_err(SessionError::validation)?;
        let mem = Mem::open(live.pid, false)?;
        let me = self.me.upgrade().expect("manager alive");
        let session = id.to_string();
        let n = resolved.len();
        std::thread::Builder::new()
            .name(format!("strobe-poll-{}", live.pid))
            .spawn(move || me.poll_loop(&live, &mem, &resolved, depth, poll, &session))
            .map_err(|e| SessionError::internal(format!("cannot start polling: {e}")))?;
        Ok(json!({
            "polling": true,
            "variableCount": n,
            "intervalMs": poll.interval_ms,
            "durationMs": poll.duration_ms,
            "expectedSamples": (poll.duration_ms / poll.interval_ms) as usize * n,
            "eventType": "variable_snapshot",
            "hint": format!("samples arrive as variable_snapshot events: debug_query {{sessionId: \"{id}\", eventType: \"variable_snapshot\"}}"),
        }))
    }

    fn poll_loop(
        &self,
        live: &Live,
        mem: &Mem,
        targets: &[WatchSpec],
        depth: u32,
        poll: Poll,
        id: &str,
    ) {
        let start = Instant::now();
        let mut next = start;
        while start.elapsed() < Duration::from_millis(poll.duration_ms) {
            if live.life.lock().expect("lifecycle lock").ended {
                return;
            }
            let mut batch = EventBatch::default();
            for (i, r) in targets.iter().enumerate() {
                let v = self.read_one(mem, r, depth, id, i);
                batch.push(
                    EventHeader {
                        ts_ns: monotonic_ns().saturating_sub(live.origin_ns),
                        kind: EventKind::VariableSnapshot as u8,
                        flags: FLAG_JSON,
                        pid: live.pid,
                        ..Default::default()
                    },
                    v.to_string().as_bytes(),
                );
            }
            if let Err(e) = self.store.append(live.key, batch).map_err(store_err) {
                tracing::warn!("session {id}: poll samples not stored: {}", e.message());
                return;
            }
            next += Duration::from_millis(poll.interval_ms);
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            }
        }
    }
}

/// The results, or an error when no target succeeded: a request that did
/// nothing is a failure, not a success with errors inside (one failure
/// among successes stays in its own result).
fn all_failed(done: &str, results: Vec<Value>) -> Result<Vec<Value>, SessionError> {
    if results.iter().any(|r| r.get("error").is_none()) {
        return Ok(results);
    }
    let errors: Vec<String> = results
        .iter()
        .map(|r| {
            format!(
                "{}: {}",
                r["target"].as_str().unwrap_or("?"),
                r["error"].as_str().unwrap_or("?")
            )
        })
        .collect();
    Err(SessionError::validation(format!(
        "nothing was {done}: {}",
        errors.join("; ")
    )))
}

/// The executable mapping (`perms path`) overlapping `len` bytes at `addr`
/// in `pid`, if any.
fn code_mapping(pid: u32, addr: u64, len: u64) -> Option<String> {
    let end = addr.saturating_add(len.max(1));
    crate::procfs::maps(pid).ok()?.into_iter().find_map(|m| {
        let path = if m.path.is_empty() {
            "anonymous memory"
        } else {
            &m.path
        };
        (m.executable() && m.start < end && addr < m.end).then(|| format!("{} {path}", m.perms))
    })
}

fn target_text(t: &MemoryTarget) -> String {
    t.variable
        .clone()
        .or_else(|| t.address.clone())
        .unwrap_or_else(|| "(empty target)".into())
}

fn resolve_one(
    tracer: Option<&mut Tracer>,
    t: &MemoryTarget,
    base: &dyn Fn(&Path) -> Option<u64>,
) -> Result<WatchSpec, String> {
    match (&t.variable, &t.address) {
        (Some(_), Some(_)) => {
            Err("a target has either 'variable' or 'address' (with 'type'), not both".into())
        }
        (None, None) => Err(
            "a target needs 'variable' (a global, e.g. \"gConfig->level\") or 'address' + 'type'"
                .into(),
        ),
        (Some(v), None) => {
            if t.type_hint.is_some() {
                return Err("'type' is only for 'address' targets; a variable's type comes from its debug info".into());
            }
            let tracer = tracer.ok_or("the program's symbols are not loaded")?;
            tracer.resolve_variable(v, v, base)
        }
        (None, Some(a)) => {
            let address = trace::parse_hex_address(a).ok_or_else(|| {
                format!("'address' {a:?} is not a hex address like \"0x7ffd1234\"")
            })?;
            let hint = t.type_hint.clone().unwrap_or_else(|| "u64".into());
            let size = if hint == "bytes" {
                match t.size {
                    Some(n) if (1..=BYTES_MAX).contains(&n) => n,
                    _ => return Err(format!("type \"bytes\" needs 'size' (1–{BYTES_MAX})")),
                }
            } else {
                values::hint_size(&hint).ok_or_else(|| {
                    format!("'type' {hint:?} is not one of i8, u8, i16, u16, i32, u32, i64, u64, f32, f64, pointer, bytes")
                })?
            };
            Ok(WatchSpec {
                label: a.clone(),
                chain: vec![(address, 0)],
                size,
                ty: WatchType::Hint(hint),
                string: false,
                slice: None,
            })
        }
    }
}
