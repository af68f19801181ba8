//! What the writer does to a session's chunks when it commits: inserting
//! sealed chunks, and keeping the session within its two caps (function
//! calls, and everything else) by deleting or rewriting its oldest chunks.
//! Runs inside the writer's transaction; the writer changes its in-memory
//! state only once that committed.

use crate::codec::{self, ChunkBuilder, ChunkSummary, MAX_CHUNK_EVENTS};
use crate::error::StoreError;
use crate::sessions::EventCaps;
use rusqlite::{Connection, params};
use std::collections::VecDeque;

/// A committed chunk as eviction sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkRec {
    pub(crate) id: i64,
    pub(crate) first_seq: u64,
    /// Function enter/exit events in it.
    pub(crate) trace: u64,
    /// Every other event in it.
    pub(crate) output: u64,
    pub(crate) bytes: u64,
    /// Rewritten by eviction: its trace events are gone, its ids have gaps.
    pub(crate) stripped: bool,
}

/// A session's stored counts, as committed (or about to be).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counts {
    pub(crate) trace: u64,
    pub(crate) output: u64,
    pub(crate) evicted: u64,
    pub(crate) evicted_output: u64,
    pub(crate) stored_bytes: u64,
}

/// Inserts one sealed chunk and its content index.
pub(crate) fn insert_chunk(
    tx: &Connection,
    key: i64,
    (summary, data): &(ChunkSummary, Vec<u8>),
) -> Result<ChunkRec, StoreError> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO chunks (session, first_seq, count, ts_min, ts_max, kind_mask, kind_counts,
                             pid_min, pid_max, func_counts, data)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    let mut insert_index =
        tx.prepare_cached("INSERT INTO chunk_indexes (id, content) VALUES (?1, ?2)")?;
    let mut insert_stats =
        tx.prepare_cached("INSERT INTO chunk_func_stats (id, stats) VALUES (?1, ?2)")?;
    let index = summary.index.to_blob();
    // The stored count is the span of ids, which range filters prune by.
    insert.execute(params![
        key,
        summary.first_seq as i64,
        summary.span as i64,
        summary.ts_min as i64,
        summary.ts_max as i64,
        summary.kind_mask,
        summary.kind_counts_blob(),
        summary.pid_min,
        summary.pid_max,
        summary.func_counts_blob(),
        data
    ])?;
    let id = tx.last_insert_rowid();
    insert_index.execute(params![id, index])?;
    if !summary.func_stats.is_empty() {
        insert_stats.execute(params![id, crate::func_stats::to_blob(&summary.func_stats)])?;
    }
    let trace: u64 = summary
        .kind_counts
        .iter()
        .enumerate()
        .filter(|(kind, _)| codec::is_trace_kind(*kind as u8))
        .map(|(_, n)| u64::from(*n))
        .sum();
    Ok(ChunkRec {
        id,
        first_seq: summary.first_seq,
        trace,
        output: u64::from(summary.count) - trace,
        bytes: (data.len() + index.len()) as u64,
        stripped: false,
    })
}

fn delete_chunk(tx: &Connection, id: i64) -> Result<(), StoreError> {
    tx.prepare_cached("DELETE FROM chunks WHERE id = ?1")?
        .execute([id])?;
    tx.prepare_cached("DELETE FROM chunk_indexes WHERE id = ?1")?
        .execute([id])?;
    tx.prepare_cached("DELETE FROM chunk_func_stats WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Applies a session's caps, oldest first. Over `caps.trace`, the oldest
/// chunks holding function events lose them: a chunk holding nothing else is
/// deleted, the others are rewritten with only their other events (same ids),
/// consecutive ones into one chunk (joined to the rewritten chunk before them
/// while that stays under a chunk's size), so each evicted chunk is decoded
/// once. Over `caps.output`, the oldest chunk holding output goes whole.
pub(crate) fn evict(
    tx: &Connection,
    key: i64,
    caps: EventCaps,
    chunks: &mut VecDeque<ChunkRec>,
    counts: &mut Counts,
) -> Result<(), StoreError> {
    if counts.trace > caps.trace {
        let mut out = VecDeque::with_capacity(chunks.len());
        let mut run: Option<ChunkBuilder> = None;
        for c in chunks.drain(..) {
            if counts.trace <= caps.trace || c.trace == 0 {
                flush_kept(tx, key, &mut run, &mut out, counts)?;
                out.push_back(c);
                continue;
            }
            counts.trace -= c.trace;
            counts.evicted += c.trace;
            if c.output > 0 {
                // A rewritten chunk stays within a chunk's limits: what is
                // being built is stored first when this chunk's output would
                // take it past them (a source chunk alone never does).
                if run
                    .as_ref()
                    .is_some_and(|b| b.len() as u64 + c.output > MAX_CHUNK_EVENTS as u64)
                {
                    flush_kept(tx, key, &mut run, &mut out, counts)?;
                }
                if run.is_none()
                    && let Some(prev) = out.back().copied()
                    && prev.stripped
                    && prev.output + c.output <= MAX_CHUNK_EVENTS as u64
                {
                    out.pop_back();
                    keep_output(tx, prev, &mut run, counts)?;
                }
                keep_output(tx, c, &mut run, counts)?;
                if run.as_ref().is_some_and(|b| b.is_full(MAX_CHUNK_EVENTS)) {
                    flush_kept(tx, key, &mut run, &mut out, counts)?;
                }
            } else {
                delete_chunk(tx, c.id)?;
                counts.stored_bytes -= c.bytes;
            }
        }
        flush_kept(tx, key, &mut run, &mut out, counts)?;
        *chunks = out;
    }
    while counts.output > caps.output {
        let Some(i) = chunks.iter().position(|c| c.output > 0) else {
            break;
        };
        let c = chunks.remove(i).expect("position is in range");
        delete_chunk(tx, c.id)?;
        counts.trace -= c.trace;
        counts.output -= c.output;
        counts.evicted += c.trace + c.output;
        counts.evicted_output += c.output;
        counts.stored_bytes -= c.bytes;
    }
    Ok(())
}

/// Moves a chunk's non-trace events into the rewritten chunk being built
/// and deletes the chunk.
fn keep_output(
    tx: &Connection,
    c: ChunkRec,
    run: &mut Option<ChunkBuilder>,
    counts: &mut Counts,
) -> Result<(), StoreError> {
    let data: Vec<u8> = tx
        .prepare_cached("SELECT data FROM chunks WHERE id = ?1")?
        .query_row([c.id], |r| r.get(0))?;
    codec::decode(&data, c.first_seq, |seq, h, payload| {
        if !codec::is_trace_kind(h.kind) {
            run.get_or_insert_with(|| ChunkBuilder::new(seq))
                .push_at(seq, &h, payload);
        }
        true
    })
    .map_err(|reason| StoreError::Corrupt {
        chunk: c.id,
        reason,
    })?;
    delete_chunk(tx, c.id)?;
    counts.stored_bytes -= c.bytes;
    Ok(())
}

/// Stores the rewritten chunk being built, if any, at the end of `out`.
fn flush_kept(
    tx: &Connection,
    key: i64,
    run: &mut Option<ChunkBuilder>,
    out: &mut VecDeque<ChunkRec>,
    counts: &mut Counts,
) -> Result<(), StoreError> {
    if let Some(b) = run.take() {
        let mut rec = insert_chunk(tx, key, &b.finish())?;
        rec.stripped = true;
        counts.stored_bytes += rec.bytes;
        out.push_back(rec);
    }
    Ok(())
}
