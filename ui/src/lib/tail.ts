// The output pane's first lines: the last N of each stream, read with as
// few queries as the session allows. The first timeline answer, when it
// covers the whole session, says how many output lines there are (and, when
// it lists them all, how many of each stream), which spares the queries
// that would only count them; without it each stream is counted first.

import type { QueryEvent, Timeline } from '../types';

export type Stream = 'stdout' | 'stderr';
export const STREAMS: readonly Stream[] = ['stdout', 'stderr'];

/**
 * What the whole-session timeline says about the output: each stream's
 * count when it lists every line, else only the total; null when it says
 * nothing (no answer, or a zoomed window).
 */
export type OutputHint = { stdout: number; stderr: number } | { total: number } | null;

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** The output counts a timeline answer gives, when it is the whole session's. */
export function outputHint(t: Timeline | null | undefined, whole: boolean): OutputHint {
  if (!t || !whole || !Array.isArray(t.output) || !Array.isArray(t.outputCounts)) return null;
  const total = sum(t.outputCounts);
  if (t.output.length !== total) return { total };
  const n = { stdout: 0, stderr: 0 };
  for (const it of t.output) {
    if (it.kind === 'stdout' || it.kind === 'stderr') n[it.kind]++;
    else return { total };
  }
  return n;
}

/**
 * Whether the session may hold a crash event: false only when a
 * whole-session timeline lists every marker and none is a crash.
 */
export function mayHoldCrash(t: Timeline | null | undefined, whole: boolean): boolean {
  if (!t || !whole || !Array.isArray(t.markers) || !Array.isArray(t.markerCounts)) return true;
  if (t.markers.length !== sum(t.markerCounts)) return true;
  return t.markers.some((m) => m.kind === 'crash');
}

/** One debug_query of a stream: `limit` lines from `offset`. */
export type TailQuery = (stream: Stream, offset: number, limit: number) => Promise<{ events: QueryEvent[]; totalCount: number }>;

export interface StreamTail {
  /** The last lines, oldest first. */
  events: QueryEvent[];
  /** Lines of the stream before them. */
  offset: number;
  /** Lines of the stream in all, as last counted. */
  total: number;
}

export type Tails = Record<Stream, StreamTail>;

/** Where the last `keep` of `n` lines start. */
export const tailOffset = (n: number, keep: number) => Math.max(0, n - keep);

/**
 * Reads the last `keep` lines of each stream. `guess` is how many lines a
 * stream has as far as the caller knows (0: none, so no query;
 * undefined: unknown, so counted first); a wrong guess costs one more query.
 */
async function streamTail(query: TailQuery, stream: Stream, keep: number, guess: number | undefined): Promise<StreamTail> {
  if (guess !== undefined && guess <= 0) return { events: [], offset: 0, total: 0 };
  let n = guess;
  if (n === undefined) {
    const head = await query(stream, 0, 1);
    n = head.totalCount;
    if (n <= 0) return { events: [], offset: 0, total: 0 };
    if (n <= 1) return { events: head.events, offset: 0, total: n };
  }
  const offset = tailOffset(n, keep);
  const r = await query(stream, offset, keep);
  const wanted = tailOffset(r.totalCount, keep);
  if (r.totalCount <= 0) return { events: [], offset: 0, total: 0 };
  if (wanted === offset) return { events: r.events, offset, total: r.totalCount };
  // The guess was off (or the stream grew): read where the tail really is.
  const again = await query(stream, wanted, keep);
  return { events: again.events, offset: wanted, total: again.totalCount };
}

/** The last `keep` lines of stdout and of stderr. */
export async function loadTails(query: TailQuery, keep: number, hint: OutputHint): Promise<Tails> {
  if (hint && 'stdout' in hint) {
    const [stdout, stderr] = await Promise.all(STREAMS.map((s) => streamTail(query, s, keep, hint[s])));
    return { stdout, stderr };
  }
  if (hint) {
    // The total only: stdout first, and stderr is the rest (very often none).
    const stdout = await streamTail(query, 'stdout', keep, hint.total);
    const stderr = await streamTail(query, 'stderr', keep, Math.max(0, hint.total - stdout.total));
    return { stdout, stderr };
  }
  const [stdout, stderr] = await Promise.all(STREAMS.map((s) => streamTail(query, s, keep, undefined)));
  return { stdout, stderr };
}
