//! The query engine.
//!
//! A query walks one session's chunks in sequence order. Their summaries,
//! kept in memory between queries (summary_cache.rs), drop the chunks that
//! cannot match (time, pid and sequence ranges, kind mask, content index).
//! A chunk whose summary proves that every event of the wanted kinds
//! matches — and that lies outside the requested page — is counted from its
//! per-kind counts without being decoded; the rest are decoded and filtered
//! event by event. So `totalCount` never needs a `COUNT(*)` over events.

use crate::codec::{self, ChunkSummary};
use crate::error::StoreError;
use crate::func_stats;
/// Per-function statistics over a session (aggregate query mode).
pub use crate::func_stats::FunctionStats;
use crate::summary_cache::{BLOCK, ChunkMeta, SummaryCache};
use rusqlite::Connection;
use std::collections::HashSet;
use std::sync::Arc;
use strobe_core::event::{Event, EventHeader};

/// Conditions on events; `None` means "any". All present conditions must hold.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Mask of `EventKind::bit()`s to include.
    pub kinds: Option<u32>,
    /// Smallest timestamp (ns since session start), inclusive.
    pub time_from: Option<u64>,
    /// Largest timestamp, inclusive.
    pub time_to: Option<u64>,
    /// Only events of this process.
    pub pid: Option<u32>,
    /// Only events whose duration is at least this (exit events).
    pub min_duration_ns: Option<u64>,
    /// Only events of these interned functions (resolved from name/file filters).
    pub func_ids: Option<HashSet<u32>>,
    /// Only events of these threads (resolved from thread-name filters).
    pub tids: Option<HashSet<u32>>,
    /// Only events whose payload contains these bytes (text events: output,
    /// crashes, exits…; never function events, whose payloads are binary).
    pub payload_contains: Option<Vec<u8>>,
    /// Only function_exit events whose JSON payload's `returnValue` matches.
    pub return_value: Option<ReturnValueFilter>,
    /// Smallest sequence number (event id), inclusive.
    pub seq_from: Option<u64>,
    /// Largest sequence number (event id), inclusive.
    pub seq_to: Option<u64>,
}

/// Decodes an event's typed return value (see [`ReturnValueFilter::typed`]).
pub type TypedReturn =
    std::sync::Arc<dyn Fn(&EventHeader, &[u8]) -> Option<serde_json::Value> + Send + Sync>;

/// Conditions on a function_exit event's return value: typed (decoded from
/// the event's capture) when available, else the raw return register.
#[derive(Clone, Default)]
pub struct ReturnValueFilter {
    /// Must equal this raw return register (events without typed values).
    pub equals: Option<u64>,
    /// Must equal this JSON value (events with typed values).
    pub equals_json: Option<serde_json::Value>,
    /// `Some(true)`: must be NULL/0/false; `Some(false)`: must not be.
    pub is_null: Option<bool>,
    /// Renders an event's typed return value, when it has one.
    pub typed: Option<TypedReturn>,
}

impl std::fmt::Debug for ReturnValueFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReturnValueFilter")
            .field("equals", &self.equals)
            .field("equals_json", &self.equals_json)
            .field("is_null", &self.is_null)
            .field("typed", &self.typed.is_some())
            .finish()
    }
}

impl ReturnValueFilter {
    fn matches(&self, h: &EventHeader, payload: &[u8]) -> bool {
        let typed = self
            .typed
            .as_ref()
            .and_then(|t| t(h, payload))
            .and_then(|mut v| v.get_mut("returnValue").map(serde_json::Value::take));
        if let Some(v) = typed {
            let zero = v.is_null() || v == serde_json::json!(0) || v == serde_json::json!(false);
            return match (&self.equals_json, self.equals) {
                (Some(j), _) => numeric_eq(&v, j),
                (None, Some(e)) => e == h.value,
                (None, None) => true,
            } && self.is_null.is_none_or(|want| want == zero);
        }
        (self.equals.is_some() || self.equals_json.is_none())
            && self.equals.is_none_or(|e| e == h.value)
            && self.is_null.is_none_or(|want| want == (h.value == 0))
    }
}

/// JSON equality where numbers compare by value (42 == 42.0); integers
/// compare exactly (no rounding through f64).
fn numeric_eq(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x == y;
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return x == y;
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

impl ReturnValueFilter {
    /// Every stored exit `value` (see `FLAG_VALUE_TYPED`) that could match,
    /// for chunk indexes; `None` when the filter cannot be reduced to such
    /// values (strings such as enum names, `isNull: false`).
    fn candidates(&self) -> Option<Vec<u64>> {
        use serde_json::Value;
        let from_equals = match (&self.equals_json, self.equals) {
            (Some(Value::Number(n)), _) => {
                let mut v = Vec::new();
                if let Some(i) = n.as_i64() {
                    v.extend([i as u64, (i as f64).to_bits()]);
                } else if let Some(u) = n.as_u64() {
                    v.extend([u, (u as f64).to_bits()]);
                } else if let Some(f) = n.as_f64() {
                    v.push(f.to_bits());
                    if f.fract() == 0.0 && f.abs() < 9.2e18 {
                        v.push(f as i64 as u64);
                    }
                }
                Some(v)
            }
            (Some(Value::Bool(b)), _) => Some(vec![u64::from(*b)]),
            (Some(Value::Null), _) => Some(vec![0]),
            // Hex strings ("0x2a"): typed pointers render that way, untyped
            // events compare the raw register.
            (Some(Value::String(_)), Some(raw)) => Some(vec![raw]),
            (Some(_), _) => None,
            (None, Some(raw)) => Some(vec![raw]),
            (None, None) => None,
        };
        match (from_equals, self.is_null) {
            (Some(v), _) => Some(v),
            // NULL, 0, false and 0.0 are all stored as 0.
            (None, Some(true)) => Some(vec![0]),
            (None, _) => None,
        }
    }
}

impl EventFilter {
    /// True when only kind/time/pid/function conditions are present, which
    /// chunk summaries can answer exactly.
    fn summary_answerable(&self) -> bool {
        self.min_duration_ns.is_none()
            && self.seq_from.is_none()
            && self.seq_to.is_none()
            && self.tids.is_none()
            && self.payload_contains.is_none()
            && self.return_value.is_none()
    }

    /// Is the event id inside the filter's id range?
    fn seq_in_range(&self, seq: u64) -> bool {
        self.seq_from.is_none_or(|f| seq >= f) && self.seq_to.is_none_or(|t| seq <= t)
    }

    /// Does one decoded event match?
    pub fn matches(&self, h: &EventHeader, payload: &[u8]) -> bool {
        if let Some(mask) = self.kinds
            && mask & (1 << (h.kind as u32 % 32)) == 0
        {
            return false;
        }
        if self.time_from.is_some_and(|t| h.ts_ns < t) || self.time_to.is_some_and(|t| h.ts_ns > t)
        {
            return false;
        }
        if self.pid.is_some_and(|p| p != h.pid) {
            return false;
        }
        if self.min_duration_ns.is_some_and(|d| h.duration_ns < d) {
            return false;
        }
        if self
            .func_ids
            .as_ref()
            .is_some_and(|f| !f.contains(&h.func_id))
        {
            return false;
        }
        if self.tids.as_ref().is_some_and(|t| !t.contains(&h.tid)) {
            return false;
        }
        if let Some(rv) = &self.return_value
            && (h.kind != strobe_core::EventKind::FunctionExit as u8 || !rv.matches(h, payload))
        {
            return false;
        }
        if let Some(needle) = &self.payload_contains
            && !needle.is_empty()
            && (h.kind == strobe_core::EventKind::FunctionEnter as u8
                || h.kind == strobe_core::EventKind::FunctionExit as u8
                || !payload
                    .windows(needle.len())
                    .any(|w| w == needle.as_slice()))
        {
            // Function events carry binary captures, not text.
            return false;
        }
        true
    }
}

/// Which slice of the matching events to return.
#[derive(Debug, Clone, Copy)]
pub struct QueryPage {
    /// Matching events to skip.
    pub offset: u64,
    /// Most events to return.
    pub limit: usize,
}

/// A page of events plus the total number of matches.
#[derive(Debug, Clone, Default)]
pub struct QueryResult {
    /// The events of the page, in sequence order.
    pub events: Vec<Event>,
    /// How many stored events match the filter.
    pub total_count: u64,
    /// True when matches exist beyond this page.
    pub has_more: bool,
    /// Chunks decoded to answer (for benchmarks and diagnostics).
    pub chunks_decoded: u64,
    /// Chunks answered from their summary alone.
    pub chunks_counted: u64,
    /// `total_count` is an estimate (see [`Counting::Within`]), between
    /// these bounds; `None` when it is exact.
    pub count_bounds: Option<(u64, u64)>,
}

/// How hard a query works for its `total_count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// Decode every chunk the summaries cannot count.
    Exact,
    /// Once the page is filled, decode only what fits in this time since
    /// the query began (a spread of the remaining chunks), and estimate the
    /// rest from the match rate seen, with exact bounds.
    Within(std::time::Duration),
}

/// What a filter asks of chunk content indexes.
struct IndexProbe {
    text: Option<Vec<u8>>,
    returns: Option<Vec<u64>>,
    min_duration: Option<u64>,
    tids: Option<std::collections::HashSet<u32>>,
}

impl IndexProbe {
    fn of(filter: &EventFilter) -> Option<IndexProbe> {
        let text = filter.payload_contains.clone().filter(|n| n.len() >= 3);
        let returns = filter.return_value.as_ref().and_then(|r| r.candidates());
        let min_duration = filter.min_duration_ns.filter(|d| *d > 0);
        let tids = filter.tids.clone();
        (text.is_some() || returns.is_some() || min_duration.is_some() || tids.is_some()).then_some(
            IndexProbe {
                text,
                returns,
                min_duration,
                tids,
            },
        )
    }

    fn may_match(&self, index: &codec::ContentIndex) -> bool {
        self.text.as_ref().is_none_or(|t| index.may_contain_text(t))
            && self
                .returns
                .as_ref()
                .is_none_or(|r| index.may_return_any(r))
            && self.min_duration.is_none_or(|d| index.may_last(d))
            && self.tids.as_ref().is_none_or(|t| index.may_have_thread(t))
    }
}

pub(crate) fn run(
    conn: &Connection,
    cache: &SummaryCache,
    session: i64,
    filter: &EventFilter,
    page: QueryPage,
    counting: Counting,
) -> Result<QueryResult, StoreError> {
    // One read transaction: the chunk list and the chunk contents come from
    // the same snapshot even while the writer evicts chunks.
    let tx = conn.unchecked_transaction()?;
    let out = run_in_snapshot(&tx, cache, session, filter, page, counting);
    tx.finish()?;
    out
}

/// Chunks the page did not need, in the order an estimate samples them:
/// 32 spread over the whole list first, then the rest in order.
fn sample_order(n: usize) -> Vec<usize> {
    let spread: Vec<usize> = (0..32.min(n)).map(|j| j * n / 32.min(n).max(1)).collect();
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    for i in spread.into_iter().chain(0..n) {
        if !std::mem::replace(&mut seen[i], true) {
            order.push(i);
        }
    }
    order
}

fn run_in_snapshot(
    conn: &Connection,
    cache: &SummaryCache,
    session: i64,
    filter: &EventFilter,
    page: QueryPage,
    counting: Counting,
) -> Result<QueryResult, StoreError> {
    let started = std::time::Instant::now();
    let metas = candidate_chunks(conn, cache, session, filter)?;

    let window_start = page.offset;
    let window_end = page.offset.saturating_add(page.limit as u64);
    let mut out = QueryResult::default();
    let mut data_stmt = conn.prepare_cached("SELECT data FROM chunks WHERE id = ?1")?;
    // Decoded chunks' candidate events and matches: the rate an estimate uses.
    let (mut seen, mut hits) = (0u64, 0u64);
    let mut deferred = Vec::new();
    for m in metas {
        if let Some(n) = summary_count(filter, &m) {
            let overlaps = out.total_count < window_end && out.total_count + n > window_start;
            if !overlaps {
                out.total_count += n;
                out.chunks_counted += 1;
                continue;
            }
        }
        if out.total_count >= window_end && matches!(counting, Counting::Within(_)) {
            deferred.push(m);
            continue;
        }
        let before = out.total_count;
        decode_chunk(
            &mut data_stmt,
            filter,
            &m,
            (window_start, window_end),
            &mut out,
        )?;
        seen += candidates(filter, &m);
        hits += out.total_count - before;
    }
    if let (Counting::Within(budget), false) = (counting, deferred.is_empty()) {
        let mut left = vec![true; deferred.len()];
        for i in sample_order(deferred.len()) {
            if started.elapsed() >= budget {
                break;
            }
            let before = out.total_count;
            decode_chunk(&mut data_stmt, filter, &deferred[i], (0, 0), &mut out)?;
            seen += candidates(filter, &deferred[i]);
            hits += out.total_count - before;
            left[i] = false;
        }
        let unread: u64 = deferred
            .iter()
            .zip(&left)
            .filter(|(_, l)| **l)
            .map(|(m, _)| candidates(filter, m))
            .sum();
        if unread > 0 {
            let low = out.total_count;
            let rate = if seen == 0 {
                0.0
            } else {
                hits as f64 / seen as f64
            };
            out.total_count = low + (rate * unread as f64).round() as u64;
            out.count_bounds = Some((low, low + unread));
        }
    }
    out.has_more = page.offset + (out.events.len() as u64) < out.total_count;
    Ok(out)
}

/// Events of chunk `m` that could match `filter` by its summary (kinds and
/// functions): what bounds its matches.
fn candidates(filter: &EventFilter, m: &ChunkMeta) -> u64 {
    let mask = filter.kinds.unwrap_or(u32::MAX);
    if let Some(funcs) = &filter.func_ids {
        return ChunkSummary::count_functions(&m.func_counts, funcs, mask);
    }
    m.kind_counts
        .iter()
        .enumerate()
        .filter(|(k, _)| mask & (1 << k) != 0)
        .map(|(_, c)| u64::from(*c))
        .sum()
}

/// Decodes chunk `m`, counting its matches into `out.total_count` and
/// keeping those that fall in `window` (match numbers, end excluded).
fn decode_chunk(
    data_stmt: &mut rusqlite::CachedStatement<'_>,
    filter: &EventFilter,
    m: &ChunkMeta,
    (window_start, window_end): (u64, u64),
    out: &mut QueryResult,
) -> Result<(), StoreError> {
    let data: Vec<u8> = data_stmt.query_row([m.id], |r| r.get(0))?;
    out.chunks_decoded += 1;
    let mut matched = out.total_count;
    let events = &mut out.events;
    codec::decode(&data, m.first_seq, |seq, header, payload| {
        if filter.seq_in_range(seq) && filter.matches(&header, payload) {
            if matched >= window_start && matched < window_end {
                events.push(Event {
                    seq,
                    header,
                    payload: payload.to_vec(),
                });
            }
            matched += 1;
        }
        true
    })
    .map_err(|reason| StoreError::Corrupt {
        chunk: m.id,
        reason,
    })?;
    out.total_count = matched;
    Ok(())
}

/// Chunks whose summaries do not rule the filter out, in sequence order.
fn candidate_chunks(
    conn: &Connection,
    cache: &SummaryCache,
    session: i64,
    filter: &EventFilter,
) -> Result<Vec<Arc<ChunkMeta>>, StoreError> {
    let test = ChunkTest::of(filter);
    let mut chunks = cache.snapshot(conn, session, false)?.chunks();
    chunks.retain(|c| test.may_match(c));
    Ok(chunks)
}

/// What a chunk's summary must allow for the filter to match in it.
struct ChunkTest {
    from: u64,
    to: u64,
    mask: u32,
    pids: (u32, u32),
    seqs: (u64, u64),
    probe: Option<IndexProbe>,
}

impl ChunkTest {
    fn of(filter: &EventFilter) -> ChunkTest {
        ChunkTest {
            from: filter.time_from.unwrap_or(0),
            to: filter.time_to.unwrap_or(u64::MAX),
            mask: filter.kinds.unwrap_or(u32::MAX),
            pids: filter.pid.map_or((0, u32::MAX), |p| (p, p)),
            seqs: (
                filter.seq_from.unwrap_or(0),
                filter.seq_to.unwrap_or(u64::MAX),
            ),
            probe: IndexProbe::of(filter),
        }
    }

    fn may_match(&self, c: &ChunkMeta) -> bool {
        c.ts_max >= self.from
            && c.ts_min <= self.to
            && c.kind_mask & self.mask != 0
            && c.pid_max >= self.pids.0
            && c.pid_min <= self.pids.1
            && c.first_seq + c.count > self.seqs.0
            && c.first_seq <= self.seqs.1
            && match (&self.probe, &c.content) {
                (Some(p), Some(ix)) => p.may_match(ix),
                _ => true,
            }
    }
}

/// Aggregates function events matching `filter` per function, sorted by
/// total time then calls. A chunk the filter covers whole is answered from
/// its stored statistics; only the others are decoded.
pub(crate) fn aggregate(
    conn: &Connection,
    cache: &SummaryCache,
    session: i64,
    filter: &EventFilter,
) -> Result<Vec<FunctionStats>, StoreError> {
    let tx = conn.unchecked_transaction()?;
    let snapshot = cache.snapshot(&tx, session, true)?;
    let mut stats = ByFunction::default();
    let enter = strobe_core::EventKind::FunctionEnter as u8;
    let exit = strobe_core::EventKind::FunctionExit as u8;
    let mask = filter.kinds.unwrap_or(u32::MAX);
    let (enters, exits) = (mask & (1 << enter) != 0, mask & (1 << exit) != 0);
    let wanted = |func: u32| filter.func_ids.as_ref().is_none_or(|f| f.contains(&func));
    // Blocks of chunks the filter covers whole are merged from their sums;
    // the other chunks are read one by one.
    let mut summed = vec![false; snapshot.all.len()];
    for b in snapshot.blocks.iter() {
        let Some(sums) = &b.stats else { continue };
        let range = b.start..b.start + BLOCK;
        if snapshot.all[range.clone()]
            .iter()
            .all(|c| snapshot.has(c) && covers_whole(filter, c))
        {
            for s in sums.iter().filter(|s| wanted(s.func_id)) {
                stats.get(s.func_id).merge(s, enters, exits);
            }
            summed[range].fill(true);
        }
    }
    let test = ChunkTest::of(filter);
    let metas = snapshot
        .all
        .iter()
        .zip(&summed)
        .filter(|(c, done)| !**done && snapshot.has(c) && test.may_match(c))
        .map(|(c, _)| c);
    {
        let mut data_stmt = tx.prepare_cached("SELECT data FROM chunks WHERE id = ?1")?;
        let mut per_chunk = Vec::new();
        for m in metas {
            let function_events = m.kind_counts[enter as usize] + m.kind_counts[exit as usize];
            if function_events == 0 || !(enters || exits) {
                continue;
            }
            if covers_whole(filter, m)
                && let Some(blob) = &m.func_stats
            {
                per_chunk.clear();
                if func_stats::for_each(blob, |s| per_chunk.push(s)).is_some() {
                    for s in per_chunk.iter().filter(|s| wanted(s.func_id)) {
                        stats.get(s.func_id).merge(s, enters, exits);
                    }
                    continue;
                }
            }
            let data: Vec<u8> = data_stmt.query_row([m.id], |r| r.get(0))?;
            codec::decode(&data, m.first_seq, |seq, h, payload| {
                if h.func_id != 0
                    && filter.seq_in_range(seq)
                    && (h.kind == enter || h.kind == exit)
                    && filter.matches(&h, payload)
                {
                    stats
                        .get(h.func_id)
                        .add_event(h.kind, h.duration_ns, h.value);
                }
                true
            })
            .map_err(|reason| StoreError::Corrupt {
                chunk: m.id,
                reason,
            })?;
        }
    }
    tx.finish()?;
    let mut v = stats.into_counted();
    v.sort_by(|a, b| {
        b.total_duration_ns
            .cmp(&a.total_duration_ns)
            .then(b.calls.cmp(&a.calls))
            .then(a.func_id.cmp(&b.func_id))
    });
    Ok(v)
}

/// Statistics being summed per function: function ids are interned per
/// session from 1 up, so a vector indexed by id holds them without
/// hashing; ids past [`ByFunction::DENSE`] (a session tracing more
/// functions, or a corrupt chunk) go to a map.
#[derive(Default)]
struct ByFunction {
    dense: Vec<FunctionStats>,
    sparse: strobe_core::fast_hash::IntMap<u32, FunctionStats>,
}

impl ByFunction {
    const DENSE: u32 = 1 << 16;

    fn get(&mut self, func_id: u32) -> &mut FunctionStats {
        let fresh = || FunctionStats {
            func_id,
            ..Default::default()
        };
        if func_id >= Self::DENSE {
            return self.sparse.entry(func_id).or_insert_with(fresh);
        }
        let i = func_id as usize;
        if i >= self.dense.len() {
            self.dense.resize_with(i + 1, Default::default);
        }
        let s = &mut self.dense[i];
        s.func_id = func_id;
        s
    }

    /// Every function with a call or a return counted.
    fn into_counted(self) -> Vec<FunctionStats> {
        self.dense
            .into_iter()
            .chain(self.sparse.into_values())
            .filter(|s| !s.is_empty())
            .collect()
    }
}

/// True when every event of chunk `m` passes the filter's conditions that
/// summaries cannot check (none are present) and its time and pid ranges
/// lie inside the filter's: what the summary says of it holds of the
/// filter's matches.
fn covers_whole(filter: &EventFilter, m: &ChunkMeta) -> bool {
    filter.summary_answerable()
        && filter.time_from.is_none_or(|t| m.ts_min >= t)
        && filter.time_to.is_none_or(|t| m.ts_max <= t)
        && filter.pid.is_none_or(|p| m.pid_min == p && m.pid_max == p)
}

/// Number of matching events when the summary alone decides it.
fn summary_count(filter: &EventFilter, m: &ChunkMeta) -> Option<u64> {
    if !covers_whole(filter, m) {
        return None;
    }
    let mask = filter.kinds.unwrap_or(u32::MAX);
    if let Some(funcs) = &filter.func_ids {
        return Some(ChunkSummary::count_functions(&m.func_counts, funcs, mask));
    }
    Some(
        m.kind_counts
            .iter()
            .enumerate()
            .filter(|(k, _)| mask & (1 << k) != 0)
            .map(|(_, c)| *c as u64)
            .sum(),
    )
}
