//! What both views share: reading a session's events page by page in
//! sequence order, and the calls entered and not yet left on each thread.

use crate::ViewError;
use std::collections::HashMap;
use strobe_core::event::{Event, EventHeader};
use strobe_store::{EventFilter, QueryPage, Store};

/// Events read per store page.
const PAGE: usize = 20_000;

/// Hands every stored event of session `key` that matches `filter` to
/// `each`, one page at a time, in sequence order.
pub fn for_each_page(
    store: &Store,
    key: i64,
    filter: &EventFilter,
    mut each: impl FnMut(&[Event]) -> Result<(), ViewError>,
) -> Result<(), ViewError> {
    let mut offset = 0;
    loop {
        let page = store.query(
            key,
            filter,
            QueryPage {
                offset,
                limit: PAGE,
            },
        )?;
        offset += page.events.len() as u64;
        each(&page.events)?;
        if !page.has_more || page.events.is_empty() {
            return Ok(());
        }
    }
}

/// A call entered and not yet left.
#[derive(Debug, Clone, Copy)]
pub struct OpenCall {
    /// Its function.
    pub func_id: u32,
    /// When it was entered.
    pub ts_ns: u64,
    /// Its enter event.
    pub seq: u64,
}

/// (pid, tid).
pub type Thread = (u32, u32);

/// The calls open on each thread.
#[derive(Default)]
pub struct OpenCalls {
    stacks: HashMap<Thread, Vec<OpenCall>>,
}

impl OpenCalls {
    /// A function_enter event.
    pub fn enter(&mut self, h: &EventHeader, seq: u64) {
        self.stacks
            .entry((h.pid, h.tid))
            .or_default()
            .push(OpenCall {
                func_id: h.func_id,
                ts_ns: h.ts_ns,
                seq,
            });
    }

    /// A function_exit event: closes the innermost open call of its
    /// function on its thread, and returns the calls above it, which never
    /// returned (a longjmp, an exception unwinding past them). An exit
    /// without a recorded enter closes nothing.
    pub fn exit(&mut self, h: &EventHeader) -> Vec<OpenCall> {
        let Some(stack) = self.stacks.get_mut(&(h.pid, h.tid)) else {
            return Vec::new();
        };
        let Some(at) = stack.iter().rposition(|o| o.func_id == h.func_id) else {
            return Vec::new();
        };
        stack.drain(at..).skip(1).collect()
    }

    /// Like [`OpenCalls::exit`], but `None` when the exit closes nothing
    /// (its enter was not recorded).
    pub fn exit_matched(&mut self, h: &EventHeader) -> Option<Vec<OpenCall>> {
        let stack = self.stacks.get_mut(&(h.pid, h.tid))?;
        let at = stack.iter().rposition(|o| o.func_id == h.func_id)?;
        Some(stack.drain(at..).skip(1).collect())
    }

    /// The calls still open, per thread, outermost first.
    pub fn into_open(self) -> impl Iterator<Item = (Thread, Vec<OpenCall>)> {
        self.stacks.into_iter()
    }
}
