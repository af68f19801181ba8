//! A chunk's content index: what text and return-value filters, duration
//! and thread filters consult to skip a chunk without decoding it. Built
//! event by event by the chunk builder (codec.rs), stored with the chunk's
//! summary.

use strobe_core::event::{EventHeader, EventKind, FLAG_CAPTURE, FLAG_VALUE_TYPED};

/// A Bloom filter over a chunk's contents: every 3-byte window of the
/// payloads of non-function events (text filters), and the return value of
/// every function exit whose value the query engine compares as stored
/// (`returnValue` filters). False positives only cost a decode; a chunk it
/// rules out has no match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentIndex {
    bits: Vec<u64>,
    /// Some exit's return value is only known once decoded: value filters
    /// cannot rule this chunk out.
    unindexed_returns: bool,
    /// The longest duration of the chunk's events (`minDurationNs`
    /// filters); `None` in indexes stored before it was kept.
    dur_max: Option<u64>,
    /// One bit per thread id hash, of [`TID_BITS`] (`threadName`
    /// filters); `None` in indexes stored before it was kept.
    tids: Option<[u64; TID_WORDS]>,
}

/// Bits of the thread set (few threads per chunk: false positives rare).
const TID_BITS: usize = 256;
const TID_WORDS: usize = TID_BITS / 64;

/// Bits of a chunk's content index (1 KiB).
const INDEX_BITS: usize = 8192;
const NS_RETURN: u64 = 2;

impl Default for ContentIndex {
    fn default() -> Self {
        Self {
            bits: vec![0; INDEX_BITS / 64],
            unindexed_returns: false,
            dur_max: Some(0),
            tids: Some([0; TID_WORDS]),
        }
    }
}

impl ContentIndex {
    /// Two bit positions for a return value (mixed with a namespace tag,
    /// which stored indexes depend on).
    fn positions(key: u64) -> [usize; 2] {
        let mut h = (key ^ NS_RETURN.wrapping_mul(0xA076_1D64_78BD_642F))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^= h >> 31;
        h = h.wrapping_mul(0xE703_7ED1_A0B4_28DB);
        h ^= h >> 29;
        [(h as usize) % INDEX_BITS, ((h >> 32) as usize) % INDEX_BITS]
    }

    /// The one bit position of a text trigram: output is indexed at ~50
    /// trigrams per line, so one multiply and one bit each (a needle of n
    /// bytes still needs n − 2 hits, which keeps false positives rare).
    fn trigram_bit(tri: u32) -> usize {
        ((u64::from(tri) | 1 << 40).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 51) as usize
    }

    fn set(&mut self, p: usize) {
        self.bits[p / 64] |= 1 << (p % 64);
    }

    fn get(&self, p: usize) -> bool {
        self.bits[p / 64] & (1 << (p % 64)) != 0
    }

    fn tid_bit(tid: u32) -> usize {
        ((u64::from(tid) | 3 << 40).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % TID_BITS
    }

    fn trigram(w: &[u8]) -> u32 {
        u32::from(w[0]) << 16 | u32::from(w[1]) << 8 | u32::from(w[2])
    }

    /// Records one event.
    pub fn add(&mut self, h: &EventHeader, payload: &[u8]) {
        if let Some(d) = &mut self.dur_max {
            *d = (*d).max(h.duration_ns);
        }
        if let Some(t) = &mut self.tids {
            let b = Self::tid_bit(h.tid);
            t[b / 64] |= 1 << (b % 64);
        }
        let function =
            h.kind == EventKind::FunctionEnter as u8 || h.kind == EventKind::FunctionExit as u8;
        if !function {
            let mut tri = 0u32;
            for (i, b) in payload.iter().enumerate() {
                tri = (tri << 8 | u32::from(*b)) & 0xff_ffff;
                if i >= 2 {
                    self.set(Self::trigram_bit(tri));
                }
            }
        } else if h.kind == EventKind::FunctionExit as u8 {
            if h.flags & FLAG_CAPTURE == 0 || h.flags & FLAG_VALUE_TYPED != 0 {
                for p in Self::positions(h.value) {
                    self.set(p);
                }
            } else {
                self.unindexed_returns = true;
            }
        }
    }

    /// False when no non-function event of the chunk can contain `needle`
    /// (needles under 3 bytes are never ruled out).
    pub fn may_contain_text(&self, needle: &[u8]) -> bool {
        needle
            .windows(3)
            .all(|w| self.get(Self::trigram_bit(Self::trigram(w))))
    }

    /// False when no function exit of the chunk returned any of `values`
    /// (as compared by the query engine).
    pub fn may_return_any(&self, values: &[u64]) -> bool {
        self.unindexed_returns
            || values
                .iter()
                .any(|v| Self::positions(*v).iter().all(|p| self.get(*p)))
    }

    /// False when no event of the chunk lasted `min_ns` or more.
    pub fn may_last(&self, min_ns: u64) -> bool {
        self.dur_max.is_none_or(|d| d >= min_ns)
    }

    /// False when none of `tids` has an event in the chunk.
    pub fn may_have_thread(&self, tids: &std::collections::HashSet<u32>) -> bool {
        let Some(t) = &self.tids else { return true };
        tids.iter().any(|tid| {
            let b = Self::tid_bit(*tid);
            t[b / 64] & (1 << (b % 64)) != 0
        })
    }

    /// As stored: a flags byte, the bits, then the longest duration and
    /// the thread set (absent from indexes stored before they were kept).
    pub fn to_blob(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1 + INDEX_BITS / 8 + 8 + TID_BITS / 8);
        out.push(u8::from(self.unindexed_returns));
        for w in &self.bits {
            out.extend_from_slice(&w.to_le_bytes());
        }
        if let (Some(d), Some(t)) = (self.dur_max, &self.tids) {
            out.extend_from_slice(&d.to_le_bytes());
            for w in t {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        out
    }

    /// Parses [`ContentIndex::to_blob`] (either length); `None` for
    /// anything else (chunks stored before indexes existed have none).
    pub fn from_blob(blob: &[u8]) -> Option<ContentIndex> {
        let base = 1 + INDEX_BITS / 8;
        let words = |b: &[u8]| -> Vec<u64> {
            b.chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect()
        };
        let (dur_max, tids) = match blob.len() {
            n if n == base => (None, None),
            n if n == base + 8 + TID_BITS / 8 => {
                let trailer = words(&blob[base..]);
                let mut t = [0u64; TID_WORDS];
                t.copy_from_slice(&trailer[1..]);
                (Some(trailer[0]), Some(t))
            }
            _ => return None,
        };
        Some(ContentIndex {
            bits: words(&blob[1..base]),
            unindexed_returns: blob[0] & 1 != 0,
            dur_max,
            tids,
        })
    }
}
