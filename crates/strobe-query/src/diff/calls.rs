//! One run's traced calls, read once in order for `debug_diff`: each
//! thread's calls with their call path and ordinal, and per function the
//! distinct argument and return values seen (how often, first where).
//!
//! Threads and processes are named by the order they first appear (the
//! first process's first thread is `p1 t1`), since pids and tids differ
//! between runs (`threads.rs` then matches the candidate's threads to the
//! baseline's by what each did first). Values are compared with addresses masked: a pointer
//! differs from run to run (ASLR) without meaning anything.

use super::values::{args_text, mask_addresses, short};
use std::collections::HashMap;
use strobe_core::event::{EventKind, FLAG_SAMPLED};
use strobe_core::{Event, ToolError};
use strobe_session::SessionManager;
use strobe_store::{EventFilter, QueryPage};

/// Most function events read from one run.
pub const MAX_CALL_EVENTS: u64 = 1_000_000;
/// Events read per page.
const PAGE: usize = 20_000;
/// Distinct values kept per function and side (arguments, return).
const MAX_DISTINCT: usize = 32;

/// A thread as both runs can name it: (process ordinal, thread ordinal), 1-based.
pub type ThreadKey = (u32, u32);

/// One call of a thread, in the order the thread made it.
#[derive(Debug, Clone)]
pub struct Call {
    /// Interned call path (`main > run > parse`), see [`Run::paths`].
    pub path: u32,
    /// How many earlier calls of this thread had the same path.
    pub ordinal: u32,
    /// The enter event's id.
    pub enter_id: u64,
    /// The exit event's id, once returned.
    pub exit_id: Option<u64>,
    /// When the call was entered (ns since its session started).
    pub ts_ns: u64,
    /// Function name.
    pub function: u32,
    /// Arguments, addresses masked (`None`: not recorded).
    pub args: Option<String>,
    /// Return value, addresses masked.
    pub ret: Option<String>,
}

/// How often a function got one value, and first where.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    /// Calls that had it.
    pub count: u64,
    /// The first event that had it.
    pub first_id: u64,
}

/// Per function: calls, and the distinct values of its arguments and return.
#[derive(Debug, Default)]
pub struct FunctionValues {
    /// Calls (enters) read.
    pub calls: u64,
    /// Returns read.
    pub returns: u64,
    /// Distinct argument lists, up to [`MAX_DISTINCT`].
    pub args: HashMap<String, Seen>,
    /// Distinct return values, up to [`MAX_DISTINCT`].
    pub rets: HashMap<String, Seen>,
    /// More distinct values were seen than kept.
    pub overflow: bool,
}

/// One run's calls.
#[derive(Debug, Default)]
pub struct Run {
    /// Interned call paths.
    pub paths: Vec<String>,
    /// Interned function names.
    pub functions: Vec<String>,
    /// Each thread's calls in order.
    pub threads: HashMap<ThreadKey, Vec<Call>>,
    /// Each function's values, by name index.
    pub values: HashMap<u32, FunctionValues>,
    /// Function events read.
    pub events_read: u64,
    /// Function events not read (past [`MAX_CALL_EVENTS`]).
    pub events_unread: bool,
    /// Sampled calls skipped (not every call was recorded).
    pub sampled_skipped: u64,
}

struct Reader<'a> {
    run: Run,
    path_ids: HashMap<String, u32>,
    fn_ids: HashMap<String, u32>,
    names: HashMap<u32, Option<String>>,
    pids: HashMap<u32, u32>,
    tids: HashMap<(u32, u32), ThreadKey>,
    threads_per_pid: HashMap<u32, u32>,
    /// Open calls per thread: (index in the thread's calls, path id).
    stacks: HashMap<ThreadKey, Vec<(usize, u32)>>,
    ordinals: HashMap<(ThreadKey, u32), u32>,
    keep: &'a dyn Fn(&str) -> bool,
}

/// Reads `session`'s function events (up to [`MAX_CALL_EVENTS`]), keeping
/// the calls of functions `keep` accepts.
pub fn read(
    mgr: &SessionManager,
    session: &str,
    keep: &dyn Fn(&str) -> bool,
) -> Result<Run, ToolError> {
    let captures = mgr.captures(session);
    let mut r = Reader {
        run: Run::default(),
        path_ids: HashMap::new(),
        fn_ids: HashMap::new(),
        names: HashMap::new(),
        pids: HashMap::new(),
        tids: HashMap::new(),
        threads_per_pid: HashMap::new(),
        stacks: HashMap::new(),
        ordinals: HashMap::new(),
        keep,
    };
    let mut from = 0u64;
    loop {
        let page = mgr.query(
            session,
            &EventFilter {
                kinds: Some(EventKind::FunctionEnter.bit() | EventKind::FunctionExit.bit()),
                seq_from: Some(from),
                ..Default::default()
            },
            QueryPage {
                offset: 0,
                limit: PAGE,
            },
        )?;
        let Some(last) = page.events.last() else {
            break;
        };
        from = last.seq + 1;
        r.learn_names(mgr, session, &page.events)?;
        {
            let caps = captures.as_ref().and_then(|c| c.read().ok());
            for e in &page.events {
                if r.run.events_read >= MAX_CALL_EVENTS {
                    r.run.events_unread = true;
                    break;
                }
                r.run.events_read += 1;
                let typed = strobe_session::trace::typed_in(caps.as_deref(), &e.header, &e.payload);
                r.take(e, typed);
            }
        }
        if r.run.events_unread || !page.has_more {
            break;
        }
    }
    Ok(r.run)
}

impl Reader<'_> {
    fn learn_names(
        &mut self,
        mgr: &SessionManager,
        session: &str,
        events: &[Event],
    ) -> Result<(), ToolError> {
        let mut ids: Vec<u32> = events
            .iter()
            .map(|e| e.header.func_id)
            .filter(|id| !self.names.contains_key(id))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(());
        }
        let rows = mgr.function_rows(session, &ids)?;
        for id in ids {
            let name = rows
                .iter()
                .find(|f| f.func_id == id)
                .map(|f| f.name.clone());
            self.names.insert(id, name);
        }
        Ok(())
    }

    fn thread_key(&mut self, pid: u32, tid: u32) -> ThreadKey {
        if let Some(k) = self.tids.get(&(pid, tid)) {
            return *k;
        }
        let next_pid = self.pids.len() as u32 + 1;
        let p = *self.pids.entry(pid).or_insert(next_pid);
        let n = self.threads_per_pid.entry(pid).or_insert(0);
        *n += 1;
        let k = (p, *n);
        self.tids.insert((pid, tid), k);
        k
    }

    fn intern(ids: &mut HashMap<String, u32>, list: &mut Vec<String>, s: &str) -> u32 {
        if let Some(id) = ids.get(s) {
            return *id;
        }
        let id = list.len() as u32;
        list.push(s.to_string());
        ids.insert(s.to_string(), id);
        id
    }

    fn take(&mut self, e: &Event, typed: Option<serde_json::Value>) {
        let name = match self.names.get(&e.header.func_id) {
            Some(Some(n)) => n.clone(),
            _ => format!("function#{}", e.header.func_id),
        };
        if !(self.keep)(&name) {
            return;
        }
        if e.header.flags & FLAG_SAMPLED != 0 {
            self.run.sampled_skipped += 1;
            return;
        }
        let thread = self.thread_key(e.header.pid, e.header.tid);
        let function = Self::intern(&mut self.fn_ids, &mut self.run.functions, &name);
        let enter = e.header.kind == EventKind::FunctionEnter as u8;
        let value = match typed {
            Some(mut v) => {
                let key = if enter { "arguments" } else { "returnValue" };
                let part = v.get_mut(key).map(serde_json::Value::take);
                part.map(|p| {
                    let masked = mask_addresses(&p);
                    if enter {
                        args_text(&masked)
                    } else {
                        short(&masked)
                    }
                })
            }
            // Untyped: the raw register, unless it looks like an address.
            None if e.header.value >= 1 << 32 => Some("<address>".to_string()),
            None => Some(format!("{:#x}", e.header.value)),
        };
        let stack = self.stacks.entry(thread).or_default();
        if enter {
            let parent_path = stack
                .last()
                .map(|(_, p)| self.run.paths[*p as usize].clone());
            let path_text = match parent_path {
                Some(p) => format!("{p} > {name}"),
                None => name.clone(),
            };
            let path = Self::intern(&mut self.path_ids, &mut self.run.paths, &path_text);
            let ord = self.ordinals.entry((thread, path)).or_insert(0);
            let ordinal = *ord;
            *ord += 1;
            let calls = self.run.threads.entry(thread).or_default();
            calls.push(Call {
                path,
                ordinal,
                enter_id: e.seq,
                exit_id: None,
                ts_ns: e.header.ts_ns,
                function,
                args: value.clone(),
                ret: None,
            });
            let index = calls.len() - 1;
            self.stacks.entry(thread).or_default().push((index, path));
            let fv = self.run.values.entry(function).or_default();
            fv.calls += 1;
            if let Some(v) = value {
                note(&mut fv.args, &mut fv.overflow, v, e.seq);
            }
        } else {
            // The exit closes the innermost open call of the same function
            // (an exit whose enter was not read closes nothing).
            let Some(pos) = stack
                .iter()
                .rposition(|(i, _)| self.run.threads[&thread][*i].function == function)
            else {
                return;
            };
            let (index, _) = stack[pos];
            stack.truncate(pos);
            let call = &mut self
                .run
                .threads
                .get_mut(&thread)
                .expect("open call's thread")[index];
            call.exit_id = Some(e.seq);
            call.ret = value.clone();
            let fv = self.run.values.entry(function).or_default();
            fv.returns += 1;
            if let Some(v) = value {
                note(&mut fv.rets, &mut fv.overflow, v, e.seq);
            }
        }
    }
}

fn note(seen: &mut HashMap<String, Seen>, overflow: &mut bool, v: String, id: u64) {
    if let Some(s) = seen.get_mut(&v) {
        s.count += 1;
    } else if seen.len() < MAX_DISTINCT {
        seen.insert(
            v,
            Seen {
                count: 1,
                first_id: id,
            },
        );
    } else {
        *overflow = true;
    }
}
