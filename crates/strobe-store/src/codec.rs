//! Chunk encoding.
//!
//! A chunk is a run of consecutive events of one session. Each event is
//! encoded as varints (timestamps as zig-zag deltas from the previous event)
//! followed by its payload bytes, so typical output events cost a few bytes
//! of header. [`ChunkSummary`] is what the chunk row stores beside the blob.

pub use crate::content_index::ContentIndex;
use strobe_core::event::{Event, EventHeader, EventKind};

/// Most events one chunk holds (ENGINEERING.md: 4096 was the sweet spot for
/// the agent's ring chunks; the store uses the same granularity).
pub const MAX_CHUNK_EVENTS: usize = 4096;
/// A chunk is sealed early once its encoded payload reaches this size.
pub const MAX_CHUNK_BYTES: usize = 1 << 20;
/// Number of kind slots in `kind_counts` (discriminants 0..32, as many as
/// `kind_mask` has bits). Chunks stored when there were 16 slots parse
/// with the rest 0.
pub const KIND_SLOTS: usize = 32;
/// Kind byte of a gap record: not an event, it advances the sequence number
/// by its varint. Chunks rewritten by eviction (trace events removed, the
/// output kept) use it, so every kept event keeps its id.
const GAP_KIND: u8 = 0xff;

/// Summary of a chunk, stored in its row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkSummary {
    /// Sequence number of the first event.
    pub first_seq: u64,
    /// Number of events.
    pub count: u32,
    /// Sequence numbers the chunk covers (`first_seq .. first_seq + span`):
    /// `count`, plus the ids skipped by gaps in a rewritten chunk.
    pub span: u64,
    /// Smallest timestamp.
    pub ts_min: u64,
    /// Largest timestamp.
    pub ts_max: u64,
    /// OR of `EventKind::bit()` of every event.
    pub kind_mask: u32,
    /// Events per kind discriminant.
    pub kind_counts: [u32; KIND_SLOTS],
    /// Smallest pid.
    pub pid_min: u32,
    /// Largest pid.
    pub pid_max: u32,
    /// Events per (function id, kind), for function events; sorted.
    pub func_counts: Vec<(u32, u8, u32)>,
    /// Calls and returns per function, sorted by function: what
    /// `aggregate` reads instead of decoding the chunk.
    pub func_stats: Vec<crate::func_stats::FunctionStats>,
    /// What the chunk's events contain, for ruling chunks out without
    /// decoding them (see [`ContentIndex`]).
    pub index: ContentIndex,
}

impl ChunkSummary {
    /// `func_counts` as stored (see [`crate::func_counts`]).
    pub fn func_counts_blob(&self) -> Vec<u8> {
        crate::func_counts::to_blob(&self.func_counts)
    }

    /// Parses a stored `func_counts` blob, either layout (empty on
    /// malformed input).
    pub fn parse_func_counts(blob: &[u8]) -> Vec<(u32, u8, u32)> {
        crate::func_counts::parse(blob)
    }

    /// Events of the given functions whose kind bit is in `mask`, read
    /// straight from a stored `func_counts` blob (no allocation: queries
    /// run this over every candidate chunk).
    pub fn count_functions(blob: &[u8], funcs: &std::collections::HashSet<u32>, mask: u32) -> u64 {
        crate::func_counts::count(blob, funcs, mask)
    }

    /// `kind_counts` as stored: little-endian u32s.
    pub fn kind_counts_blob(&self) -> Vec<u8> {
        self.kind_counts
            .iter()
            .flat_map(|c| c.to_le_bytes())
            .collect()
    }

    /// Parses the stored `kind_counts` blob.
    pub fn parse_kind_counts(blob: &[u8]) -> [u32; KIND_SLOTS] {
        let mut out = [0u32; KIND_SLOTS];
        for (slot, bytes) in out.iter_mut().zip(blob.chunks_exact(4)) {
            *slot = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        out
    }
}

/// Accumulates events into one chunk.
#[derive(Debug)]
pub struct ChunkBuilder {
    data: Vec<u8>,
    summary: ChunkSummary,
    last_ts: u64,
    /// (function, kind) → index in `func_counts`.
    funcs: strobe_core::fast_hash::IntMap<(u32, u8), usize>,
    func_counts: Vec<(u32, u8, u32)>,
    /// The returns counted into each exit entry of `func_counts` (same
    /// index; unused for other kinds).
    returns: Vec<crate::func_stats::FunctionStats>,
    /// The two entries counted last: an enter and its exit, or a loop's
    /// calls, count without a lookup.
    recent: [usize; 2],
}

/// The kinds eviction treats as trace load (evicted first, under
/// `events.maxPerSession`); every other kind is the program's own evidence
/// (output, crashes, exits, snapshots, logpoints), kept under a budget of its
/// own.
pub fn is_trace_kind(kind: u8) -> bool {
    kind == EventKind::FunctionEnter as u8 || kind == EventKind::FunctionExit as u8
}

impl ChunkBuilder {
    /// The sequence number of the chunk's first event.
    pub fn first_seq(&self) -> u64 {
        self.summary.first_seq
    }

    /// Starts a chunk whose first event will get `first_seq`.
    pub fn new(first_seq: u64) -> Self {
        Self {
            data: Vec::with_capacity(64 * 1024),
            summary: ChunkSummary {
                first_seq,
                count: 0,
                span: 0,
                ts_min: u64::MAX,
                ts_max: 0,
                kind_mask: 0,
                kind_counts: [0; KIND_SLOTS],
                pid_min: u32::MAX,
                pid_max: 0,
                func_counts: Vec::new(),
                func_stats: Vec::new(),
                index: ContentIndex::default(),
            },
            last_ts: 0,
            funcs: Default::default(),
            func_counts: Vec::new(),
            returns: Vec::new(),
            recent: [usize::MAX; 2],
        }
    }

    /// The sequence number the next pushed event gets.
    pub fn next_seq(&self) -> u64 {
        self.summary.first_seq + self.summary.span
    }

    /// Appends one event with id `seq` (at least [`Self::next_seq`]): the ids
    /// in between are recorded as a gap, as in a chunk whose trace events
    /// were evicted.
    ///
    /// # Panics
    /// When `seq` is below [`Self::next_seq`] (ids only grow).
    pub fn push_at(&mut self, seq: u64, h: &EventHeader, payload: &[u8]) {
        let next = self.next_seq();
        assert!(seq >= next, "event ids only grow ({seq} < {next})");
        if seq > next {
            self.data.push(GAP_KIND);
            put_varint(&mut self.data, seq - next);
            self.summary.span += seq - next;
        }
        self.push(h, payload);
    }

    /// Appends one event.
    pub fn push(&mut self, h: &EventHeader, payload: &[u8]) {
        let s = &mut self.summary;
        s.count += 1;
        s.span += 1;
        s.ts_min = s.ts_min.min(h.ts_ns);
        s.ts_max = s.ts_max.max(h.ts_ns);
        s.kind_mask |= 1 << (h.kind as u32 % 32);
        s.kind_counts[h.kind as usize % KIND_SLOTS] += 1;
        s.pid_min = s.pid_min.min(h.pid);
        s.pid_max = s.pid_max.max(h.pid);
        s.index.add(h, payload);
        if h.func_id != 0 {
            let i = self.count_function(h.func_id, h.kind);
            if h.kind == EventKind::FunctionExit as u8 {
                self.returns[i].add_return(h.duration_ns, h.value);
            }
        }

        // The header is encoded on the stack and appended at once: one
        // capacity check instead of one per byte (this is the writer's
        // hottest loop).
        let mut buf = [0u8; HEADER_MAX];
        buf[0] = h.kind;
        buf[1] = h.flags;
        let mut n = 2;
        n = varint_into(
            &mut buf,
            n,
            zigzag(h.ts_ns.wrapping_sub(self.last_ts) as i64),
        );
        self.last_ts = h.ts_ns;
        n = varint_into(&mut buf, n, h.pid as u64);
        n = varint_into(&mut buf, n, h.tid as u64);
        n = varint_into(&mut buf, n, h.func_id as u64);
        n = varint_into(&mut buf, n, h.parent);
        n = varint_into(&mut buf, n, h.duration_ns);
        n = varint_into(&mut buf, n, h.value);
        n = varint_into(&mut buf, n, payload.len() as u64);
        self.data.extend_from_slice(&buf[..n]);
        self.data.extend_from_slice(payload);
    }

    /// Counts one event of `func`; returns its entry's index.
    fn count_function(&mut self, func: u32, kind: u8) -> usize {
        for r in self.recent {
            if let Some(c) = self.func_counts.get_mut(r)
                && c.0 == func
                && c.1 == kind
            {
                c.2 += 1;
                return r;
            }
        }
        let next = self.func_counts.len();
        let i = *self.funcs.entry((func, kind)).or_insert(next);
        if i == next {
            self.func_counts.push((func, kind, 0));
            self.returns.push(Default::default());
        }
        self.func_counts[i].2 += 1;
        self.recent = [i, self.recent[0]];
        i
    }

    /// Events so far.
    pub fn len(&self) -> usize {
        self.summary.count as usize
    }

    /// True when no event was pushed.
    pub fn is_empty(&self) -> bool {
        self.summary.count == 0
    }

    /// True when the chunk should be sealed.
    pub fn is_full(&self, max_events: usize) -> bool {
        self.len() >= max_events || self.data.len() >= MAX_CHUNK_BYTES
    }

    /// Seals the chunk.
    pub fn finish(mut self) -> (ChunkSummary, Vec<u8>) {
        self.summary.func_stats = self.function_stats();
        let mut fc = self.func_counts;
        fc.sort_unstable();
        self.summary.func_counts = fc;
        (self.summary, self.data)
    }
}

impl ChunkBuilder {
    /// Calls and returns per function, sorted by function.
    fn function_stats(&self) -> Vec<crate::func_stats::FunctionStats> {
        let enter = EventKind::FunctionEnter as u8;
        let exit = EventKind::FunctionExit as u8;
        let mut by_func: strobe_core::fast_hash::IntMap<u32, crate::func_stats::FunctionStats> =
            Default::default();
        for (i, &(func, kind, count)) in self.func_counts.iter().enumerate() {
            if kind != enter && kind != exit {
                continue;
            }
            let s = by_func
                .entry(func)
                .or_insert_with(|| crate::func_stats::FunctionStats {
                    func_id: func,
                    ..Default::default()
                });
            if kind == enter {
                s.calls += u64::from(count);
            } else {
                s.merge(&self.returns[i], false, true);
            }
        }
        let mut v: Vec<_> = by_func.into_values().collect();
        v.sort_unstable_by_key(|s| s.func_id);
        v
    }
}

/// Decodes every event of a chunk, calling `visit` for each; stops early when
/// `visit` returns false. Returns `Err` with a reason on malformed data.
pub fn decode(
    data: &[u8],
    first_seq: u64,
    mut visit: impl FnMut(u64, EventHeader, &[u8]) -> bool,
) -> Result<(), &'static str> {
    let mut pos = 0usize;
    let mut seq = first_seq;
    let mut ts = 0u64;
    while pos < data.len() {
        if pos + 2 > data.len() && data[pos] != GAP_KIND {
            return Err("truncated event header");
        }
        let kind = data[pos];
        if kind == GAP_KIND {
            pos += 1;
            seq = seq.saturating_add(get_varint(data, &mut pos)?);
            continue;
        }
        let flags = data[pos + 1];
        pos += 2;
        ts = ts.wrapping_add(unzigzag(get_varint(data, &mut pos)?) as u64);
        let pid = get_varint(data, &mut pos)? as u32;
        let tid = get_varint(data, &mut pos)? as u32;
        let func_id = get_varint(data, &mut pos)? as u32;
        let parent = get_varint(data, &mut pos)?;
        let duration_ns = get_varint(data, &mut pos)?;
        let value = get_varint(data, &mut pos)?;
        let len = get_varint(data, &mut pos)? as usize;
        let payload = data.get(pos..pos + len).ok_or("truncated payload")?;
        pos += len;
        let header = EventHeader {
            ts_ns: ts,
            kind,
            flags,
            pid,
            tid,
            func_id,
            parent,
            duration_ns,
            value,
            payload_off: 0,
            payload_len: len as u32,
        };
        if !visit(seq, header, payload) {
            return Ok(());
        }
        seq += 1;
    }
    Ok(())
}

/// Decodes a whole chunk into owned events (for tests and small chunks).
pub fn decode_all(data: &[u8], first_seq: u64) -> Result<Vec<Event>, &'static str> {
    let mut out = Vec::new();
    decode(data, first_seq, |seq, header, payload| {
        out.push(Event {
            seq,
            header,
            payload: payload.to_vec(),
        });
        true
    })?;
    Ok(out)
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Most bytes of one encoded event header: kind, flags and eight varints
/// of at most ten bytes each.
const HEADER_MAX: usize = 2 + 8 * 10;

/// Writes `v` as a varint at `buf[at..]`; returns the position after it.
#[inline(always)]
fn varint_into(buf: &mut [u8; HEADER_MAX], mut at: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        buf[at] = (v as u8) | 0x80;
        v >>= 7;
        at += 1;
    }
    buf[at] = v as u8;
    at + 1
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn get_varint(data: &[u8], pos: &mut usize) -> Result<u64, &'static str> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = *data.get(*pos).ok_or("truncated varint")?;
        *pos += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 63 {
            return Err("varint too long");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_out_of_order_timestamps() {
        let mut b = ChunkBuilder::new(10);
        let hs = [
            EventHeader {
                ts_ns: 100,
                kind: 1,
                pid: 7,
                ..Default::default()
            },
            EventHeader {
                ts_ns: 50,
                kind: 2,
                pid: 9,
                tid: 3,
                flags: 1,
                ..Default::default()
            },
            EventHeader {
                ts_ns: u64::MAX / 2,
                kind: 4,
                func_id: 42,
                parent: 11,
                duration_ns: 123_456_789,
                pid: 7,
                ..Default::default()
            },
        ];
        let payloads: [&[u8]; 3] = [b"hello", b"\xff\xfe raw", b""];
        for (h, p) in hs.iter().zip(payloads) {
            b.push(h, p);
        }
        let (summary, data) = b.finish();
        assert_eq!(summary.count, 3);
        assert_eq!((summary.ts_min, summary.ts_max), (50, u64::MAX / 2));
        assert_eq!((summary.pid_min, summary.pid_max), (7, 9));
        assert_eq!(summary.kind_counts[1], 1);
        let events = decode_all(&data, 10).unwrap();
        assert_eq!(events.len(), 3);
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e.seq, 10 + i as u64);
            assert_eq!(e.header.ts_ns, hs[i].ts_ns);
            assert_eq!(e.header.func_id, hs[i].func_id);
            assert_eq!(e.header.duration_ns, hs[i].duration_ns);
            assert_eq!(e.header.flags, hs[i].flags);
            assert_eq!(e.payload, payloads[i]);
        }
        let counts = ChunkSummary::parse_kind_counts(&summary.kind_counts_blob());
        assert_eq!(counts, summary.kind_counts);
        assert_eq!(summary.func_counts, vec![(42, 4, 1)]);
        assert_eq!(
            ChunkSummary::parse_func_counts(&summary.func_counts_blob()),
            summary.func_counts
        );
    }

    #[test]
    fn truncated_data_is_an_error_not_a_panic() {
        let mut b = ChunkBuilder::new(1);
        b.push(
            &EventHeader {
                kind: 1,
                ..Default::default()
            },
            b"payload",
        );
        let (_, data) = b.finish();
        for cut in 0..data.len() {
            if cut == 0 {
                continue;
            }
            assert!(decode_all(&data[..cut], 1).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn gaps_keep_the_ids_of_the_events_after_them() {
        let mut b = ChunkBuilder::new(100);
        let out = |ts| EventHeader {
            ts_ns: ts,
            kind: EventKind::Stdout as u8,
            ..Default::default()
        };
        b.push_at(100, &out(1), b"first");
        b.push_at(105, &out(2), b"second");
        b.push_at(106, &out(3), b"third");
        b.push_at(4200, &out(4), b"last");
        assert_eq!(b.next_seq(), 4201);
        let (summary, data) = b.finish();
        assert_eq!((summary.count, summary.span), (4, 4101));
        assert_eq!(summary.kind_counts[EventKind::Stdout as usize], 4);
        let events = decode_all(&data, 100).unwrap();
        let ids: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(ids, [100, 105, 106, 4200]);
        assert_eq!(events[3].payload, b"last");
        assert_eq!(events[3].header.ts_ns, 4);
        assert!(decode_all(&data[..data.len() - 1], 100).is_err());
    }

    #[test]
    fn every_kind_has_its_own_count_slot() {
        let mut b = ChunkBuilder::new(1);
        for (i, kind) in EventKind::ALL.iter().enumerate() {
            let h = EventHeader {
                ts_ns: i as u64,
                kind: *kind as u8,
                ..Default::default()
            };
            b.push_at(1 + i as u64, &h, b"x");
        }
        let (summary, _) = b.finish();
        for kind in EventKind::ALL {
            assert_eq!(summary.kind_counts[kind as usize], 1, "{kind:?}");
        }
        let old_blob = [7u8, 0, 0, 0].repeat(16);
        let parsed = ChunkSummary::parse_kind_counts(&old_blob);
        assert_eq!(parsed[15], 7);
        assert_eq!(parsed[16], 0, "a 16-slot blob from before parses");
    }
}
