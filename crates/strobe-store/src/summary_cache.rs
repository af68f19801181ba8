//! Chunk summaries kept in memory between queries.
//!
//! Every query starts by listing a session's chunks and their summaries
//! (time, pid and sequence ranges, counts per kind and function, content
//! index, per-function statistics). At 10 M events that is ~2,400 rows and
//! ~13 MB of blobs read and parsed per query, the floor under every filter.
//! A sealed chunk's row never changes (eviction writes a new row and deletes
//! the old), so the list is kept here and only the rows added since are
//! read.
//!
//! Coherence with each query's snapshot: a trigger counts each session's
//! deleted chunk rows (`sessions.chunk_deletes`). At another count than
//! the kept list's, the chunk ids the snapshot has are listed: kept
//! summaries of those stay, the others are read (eviction's rewritten
//! chunks are new rows). A new chunk's row id is past every id of its
//! session while none of the session's chunks is deleted (SQLite gives
//! the table's largest id + 1, and ids freed by another session's
//! deletion are all past this session's largest): so a query whose
//! snapshot is older than the list ignores the chunks past its snapshot's
//! largest id of the session, and a newer one reads only the rows past
//! the list's. (Not the table's largest id: after another session's
//! chunks at the top are deleted, ids below it are given again.) The blocks `aggregate` merges are computed when it first asks
//! after a deletion, and extended as chunks are added.

use crate::codec::{self, ChunkSummary, ContentIndex};
use crate::error::StoreError;
use crate::func_stats::{self, FunctionStats};
use rusqlite::{Connection, params};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The most summary bytes kept over all sessions; the least recently used
/// sessions are let go past it.
const MAX_BYTES: usize = 128 << 20;

/// About what a parsed content index holds (its 1 KiB bit set and more).
const CONTENT_INDEX_BYTES: usize = 1024 + 96;

/// One stored chunk's summary.
pub(crate) struct ChunkMeta {
    pub id: i64,
    pub first_seq: u64,
    pub count: u64,
    pub ts_min: u64,
    pub ts_max: u64,
    pub kind_mask: u32,
    pub pid_min: u32,
    pub pid_max: u32,
    pub kind_counts: [u32; codec::KIND_SLOTS],
    /// The stored `func_counts` blob.
    pub func_counts: Vec<u8>,
    /// The content index (`None` for chunks stored before they existed).
    pub content: Option<ContentIndex>,
    /// The stored per-function statistics (`None` for chunks stored
    /// before they existed).
    pub func_stats: Option<Vec<u8>>,
}

impl ChunkMeta {
    fn bytes(&self) -> usize {
        std::mem::size_of::<ChunkMeta>()
            + self.func_counts.len()
            + self.func_stats.as_ref().map_or(0, Vec::len)
            + self.content.as_ref().map_or(0, |_| CONTENT_INDEX_BYTES)
    }
}

/// Chunks per block of summed statistics.
pub(crate) const BLOCK: usize = 32;

/// The per-function statistics of [`BLOCK`] consecutive chunks summed
/// (enters and exits), so `aggregate` over a long session merges one
/// block instead of parsing each chunk's.
pub(crate) struct Block {
    /// The index of its first chunk.
    pub start: usize,
    /// `None` when a chunk of the block has no statistics (stored before
    /// they existed) or unreadable ones.
    pub stats: Option<Vec<FunctionStats>>,
}

/// A session's chunks as a query's snapshot sees them.
pub(crate) struct Snapshot {
    /// Every kept chunk in sequence order, some perhaps past the snapshot.
    pub all: Arc<Vec<Arc<ChunkMeta>>>,
    /// The full blocks of `all`, in order (none unless asked for).
    pub blocks: Arc<Vec<Arc<Block>>>,
    /// The snapshot's largest chunk id of the session: chunks past it are
    /// not in it.
    pub max_id: i64,
}

impl Snapshot {
    /// The snapshot's chunks, in sequence order.
    pub(crate) fn chunks(&self) -> Vec<Arc<ChunkMeta>> {
        self.all.iter().filter(|c| self.has(c)).cloned().collect()
    }

    /// Whether kept chunk `c` is in the snapshot.
    pub(crate) fn has(&self, c: &ChunkMeta) -> bool {
        c.id <= self.max_id
    }
}

/// A session's chunks in sequence order, as of `max_id`.
struct SessionChunks {
    /// The session's id and start: its key alone is reused after a
    /// deletion.
    identity: (String, i64),
    deletes: i64,
    max_id: i64,
    chunks: Arc<Vec<Arc<ChunkMeta>>>,
    /// Computed when `aggregate` first asks after a change other than
    /// chunks added in order.
    blocks: Option<Arc<Vec<Arc<Block>>>>,
    bytes: usize,
    last_used: u64,
}

/// The cache every reader of one store shares.
#[derive(Default)]
pub(crate) struct SummaryCache {
    sessions: Mutex<(HashMap<i64, SessionChunks>, u64)>,
}

impl SummaryCache {
    /// The chunks of `session` in `conn`'s snapshot (a read transaction),
    /// with their blocks when `with_blocks` (else perhaps none).
    pub(crate) fn snapshot(
        &self,
        conn: &Connection,
        session: i64,
        with_blocks: bool,
    ) -> Result<Snapshot, StoreError> {
        use rusqlite::OptionalExtension;
        let Some((deletes, max_id, identity)): Option<(i64, i64, (String, i64))> = conn
            .query_row(
                "SELECT chunk_deletes, (SELECT IFNULL(MAX(id), 0) FROM chunks WHERE session = ?1),
                        id, started_at
                 FROM sessions WHERE key = ?1",
                [session],
                |r| Ok((r.get(0)?, r.get(1)?, (r.get(2)?, r.get(3)?))),
            )
            .optional()?
        else {
            // The session is gone: so is what was kept of it.
            let mut guard = self.sessions.lock().expect("summary cache lock");
            guard.0.remove(&session);
            return Ok(Snapshot {
                all: Arc::default(),
                blocks: Arc::default(),
                max_id: 0,
            });
        };
        let mut guard = self.sessions.lock().expect("summary cache lock");
        let (map, clock) = &mut *guard;
        *clock += 1;
        let now = *clock;
        // A deleted session's key is given again to the next one created:
        // what was kept of the old one must not pass for the new one's.
        if map.get(&session).is_some_and(|e| e.identity != identity) {
            map.remove(&session);
        }
        let e = map.entry(session).or_insert_with(|| SessionChunks {
            identity,
            deletes: -1,
            max_id: 0,
            chunks: Arc::default(),
            blocks: None,
            bytes: 0,
            last_used: now,
        });
        if e.deletes != deletes {
            // The first read, or chunks were deleted since (eviction, a
            // purge): the kept summaries of chunks still stored stay, the
            // rows not kept are read (eviction's rewritten chunks are new
            // rows, so past nearly all kept ids).
            let ids = chunk_ids(conn, session, max_id)?;
            let kept: HashMap<i64, &Arc<ChunkMeta>> = e.chunks.iter().map(|c| (c.id, c)).collect();
            let mut chunks = Vec::with_capacity(ids.len());
            let mut missing = std::collections::HashSet::new();
            for id in ids {
                match kept.get(&id) {
                    Some(c) => chunks.push(Arc::clone(c)),
                    None => {
                        missing.insert(id);
                    }
                }
            }
            if let Some(first) = missing.iter().min() {
                let read = load(conn, session, first - 1, max_id)?;
                chunks.extend(read.into_iter().filter(|c| missing.contains(&c.id)));
            }
            chunks.sort_by_key(|c| c.first_seq);
            e.chunks = Arc::new(chunks);
            e.blocks = None;
            e.deletes = deletes;
            e.max_id = max_id;
            e.bytes = bytes_of(&e.chunks, e.blocks.as_deref());
        } else if e.max_id < max_id {
            let added = load(conn, session, e.max_id, max_id)?;
            let mut chunks = e.chunks.to_vec();
            chunks.extend(added);
            if !chunks.is_sorted_by_key(|c| c.first_seq) {
                chunks.sort_by_key(|c| c.first_seq);
                e.blocks = None;
            }
            if let Some(blocks) = &e.blocks {
                // The full blocks stay as they are; new ones are added.
                let mut blocks = blocks.to_vec();
                add_blocks(&chunks, &mut blocks);
                e.blocks = Some(Arc::new(blocks));
            }
            e.chunks = Arc::new(chunks);
            e.max_id = max_id;
            e.bytes = bytes_of(&e.chunks, e.blocks.as_deref());
        }
        if with_blocks && e.blocks.is_none() {
            let mut blocks = Vec::new();
            add_blocks(&e.chunks, &mut blocks);
            e.blocks = Some(Arc::new(blocks));
            e.bytes = bytes_of(&e.chunks, e.blocks.as_deref());
        }
        e.last_used = now;
        let snapshot = Snapshot {
            all: e.chunks.clone(),
            blocks: e.blocks.clone().unwrap_or_default(),
            max_id,
        };
        trim(map, session);
        Ok(snapshot)
    }
}

/// The ids of `session`'s chunks up to `upto`.
fn chunk_ids(conn: &Connection, session: i64, upto: i64) -> Result<Vec<i64>, StoreError> {
    let mut stmt = conn.prepare_cached("SELECT id FROM chunks WHERE session = ?1 AND id <= ?2")?;
    let ids = stmt.query_map(params![session, upto], |r| r.get(0))?;
    Ok(ids.collect::<rusqlite::Result<Vec<i64>>>()?)
}

/// Adds the full blocks of `chunks` past those in `blocks`.
fn add_blocks(chunks: &[Arc<ChunkMeta>], blocks: &mut Vec<Arc<Block>>) {
    while (blocks.len() + 1) * BLOCK <= chunks.len() {
        let start = blocks.len() * BLOCK;
        let mut sums: std::collections::BTreeMap<u32, FunctionStats> = Default::default();
        let all_read = chunks[start..start + BLOCK].iter().all(|c| {
            c.func_stats.as_ref().is_some_and(|blob| {
                func_stats::for_each(blob, |s| {
                    sums.entry(s.func_id)
                        .or_insert_with(|| FunctionStats {
                            func_id: s.func_id,
                            ..Default::default()
                        })
                        .merge(&s, true, true)
                })
                .is_some()
            })
        });
        blocks.push(Arc::new(Block {
            start,
            stats: all_read.then(|| sums.into_values().collect()),
        }));
    }
}

fn bytes_of(chunks: &[Arc<ChunkMeta>], blocks: Option<&Vec<Arc<Block>>>) -> usize {
    chunks.iter().map(|c| c.bytes()).sum::<usize>()
        + blocks
            .into_iter()
            .flatten()
            .map(|b| {
                std::mem::size_of::<Block>()
                    + b.stats
                        .as_ref()
                        .map_or(0, |s| s.len() * std::mem::size_of::<FunctionStats>())
            })
            .sum::<usize>()
}

/// Lets the least recently used sessions go while the total is over
/// [`MAX_BYTES`], never `keep`.
fn trim(map: &mut HashMap<i64, SessionChunks>, keep: i64) {
    let mut total: usize = map.values().map(|e| e.bytes).sum();
    while total > MAX_BYTES {
        let Some((&old, e)) = map
            .iter()
            .filter(|(k, _)| **k != keep)
            .min_by_key(|(_, e)| e.last_used)
        else {
            return;
        };
        total -= e.bytes;
        map.remove(&old);
    }
}

/// The chunks of `session` with `after < id <= upto`, in sequence order.
fn load(
    conn: &Connection,
    session: i64,
    after: i64,
    upto: i64,
) -> Result<Vec<Arc<ChunkMeta>>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT c.id, c.first_seq, c.count, c.ts_min, c.ts_max, c.kind_mask, c.pid_min, c.pid_max,
                c.kind_counts, c.func_counts,
                (SELECT content FROM chunk_indexes WHERE id = c.id),
                (SELECT stats FROM chunk_func_stats WHERE id = c.id)
         FROM chunks c
         WHERE c.session = ?1 AND c.id > ?2 AND c.id <= ?3
         ORDER BY c.first_seq",
    )?;
    let rows = stmt.query_map(params![session, after, upto], |r| {
        let kinds: Vec<u8> = r.get(8)?;
        let content: Option<Vec<u8>> = r.get(10)?;
        Ok(Arc::new(ChunkMeta {
            id: r.get(0)?,
            first_seq: r.get::<_, i64>(1)? as u64,
            count: r.get::<_, i64>(2)? as u64,
            ts_min: r.get::<_, i64>(3)? as u64,
            ts_max: r.get::<_, i64>(4)? as u64,
            kind_mask: r.get::<_, i64>(5)? as u32,
            pid_min: r.get(6)?,
            pid_max: r.get(7)?,
            kind_counts: ChunkSummary::parse_kind_counts(&kinds),
            func_counts: r.get(9)?,
            content: content.as_deref().and_then(ContentIndex::from_blob),
            func_stats: r.get(11)?,
        }))
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}
