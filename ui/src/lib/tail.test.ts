import { describe, expect, it } from 'vitest';
import { loadTails, mayHoldCrash, outputHint, tailOffset, type Stream, type TailQuery } from './tail';
import type { Item, QueryEvent, Timeline } from '../types';

/** A daemon holding `n.stdout` and `n.stderr` lines, counting the queries it answers. */
function fakeDaemon(n: Record<Stream, number>) {
  const calls: { stream: Stream; offset: number; limit: number }[] = [];
  const line = (stream: Stream, i: number): QueryEvent => ({ id: i * 2 + (stream === 'stderr' ? 1 : 0), timestampNs: i, eventType: stream, text: `${stream} ${i}` });
  const query: TailQuery = async (stream, offset, limit) => {
    calls.push({ stream, offset, limit });
    const events: QueryEvent[] = [];
    for (let i = offset; i < Math.min(n[stream], offset + limit); i++) events.push(line(stream, i));
    return { events, totalCount: n[stream] };
  };
  return { query, calls };
}

const texts = (es: QueryEvent[]) => es.map((e) => e.text);
const lastLines = (stream: Stream, total: number, keep: number) => {
  const out: string[] = [];
  for (let i = tailOffset(total, keep); i < total; i++) out.push(`${stream} ${i}`);
  return out;
};

function timeline(output: Item[], outputCounts: number[], markers: Item[] = [], markerCounts: number[] = [0]): Timeline {
  return { fromNs: 0, toNs: 10, endNs: 9, columns: outputCounts.length, lanes: [], output, outputCounts, markers, markerCounts, functions: {} };
}
const item = (kind: string, seq: number): Item => ({ tsNs: seq, kind, seq, pid: 1, tid: 0, text: '' });

describe('outputHint', () => {
  it('counts each stream when every line is listed', () => {
    const t = timeline([item('stdout', 1), item('stderr', 2), item('stdout', 3)], [2, 1]);
    expect(outputHint(t, true)).toEqual({ stdout: 2, stderr: 1 });
    expect(outputHint(timeline([], [0, 0]), true)).toEqual({ stdout: 0, stderr: 0 });
  });
  it('gives only the total when the lines were too many to list', () => {
    expect(outputHint(timeline([], [700, 550]), true)).toEqual({ total: 1250 });
  });
  it('says nothing of a zoomed window or a missing answer', () => {
    expect(outputHint(timeline([item('stdout', 1)], [1]), false)).toBeNull();
    expect(outputHint(null, true)).toBeNull();
  });
});

describe('mayHoldCrash', () => {
  it('is false only when every marker is listed and none is a crash', () => {
    expect(mayHoldCrash(timeline([], [0]), true)).toBe(false);
    expect(mayHoldCrash(timeline([], [0], [item('process_exit', 5)], [1]), true)).toBe(false);
    expect(mayHoldCrash(timeline([], [0], [item('crash', 5)], [1]), true)).toBe(true);
    expect(mayHoldCrash(timeline([], [0], [], [2000]), true)).toBe(true); // too many to list
    expect(mayHoldCrash(timeline([], [0]), false)).toBe(true);
    expect(mayHoldCrash(null, true)).toBe(true);
  });
});

describe('loadTails', () => {
  const keep = 500;
  const cases: [string, Record<Stream, number>][] = [
    ['no output', { stdout: 0, stderr: 0 }],
    ['one line', { stdout: 1, stderr: 0 }],
    ['short streams', { stdout: 40, stderr: 7 }],
    ['a long stdout', { stdout: 1250, stderr: 0 }],
    ['two long streams', { stdout: 1250, stderr: 800 }],
    ['a long stderr', { stdout: 3, stderr: 2000 }],
  ];
  for (const [name, n] of cases) {
    it(`reads the last ${keep} of each stream: ${name}, whatever the hint`, async () => {
      const hints = [null, { total: n.stdout + n.stderr }, { ...n }];
      for (const hint of hints) {
        const d = fakeDaemon(n);
        const t = await loadTails(d.query, keep, hint);
        for (const s of ['stdout', 'stderr'] as const) {
          expect(texts(t[s].events)).toEqual(lastLines(s, n[s], keep));
          expect(t[s].offset).toBe(tailOffset(n[s], keep));
          expect(t[s].total).toBe(n[s]);
        }
      }
    });
  }

  it('with each stream counted, asks once per stream that has lines', async () => {
    const d = fakeDaemon({ stdout: 1250, stderr: 0 });
    await loadTails(d.query, keep, { stdout: 1250, stderr: 0 });
    expect(d.calls).toEqual([{ stream: 'stdout', offset: 750, limit: 500 }]);
    const quiet = fakeDaemon({ stdout: 0, stderr: 0 });
    await loadTails(quiet.query, keep, { stdout: 0, stderr: 0 });
    expect(quiet.calls).toEqual([]);
  });

  it('with the total only, one query when it is all stdout', async () => {
    const d = fakeDaemon({ stdout: 1250, stderr: 0 });
    await loadTails(d.query, keep, { total: 1250 });
    expect(d.calls).toEqual([{ stream: 'stdout', offset: 750, limit: 500 }]);
  });

  it('without a hint, counts each stream first (and skips an empty one)', async () => {
    const d = fakeDaemon({ stdout: 1250, stderr: 0 });
    await loadTails(d.query, keep, null);
    expect(d.calls.length).toBe(3);
    expect(d.calls.filter((c) => c.limit === 1).length).toBe(2);
  });

  it('a stream that grew past the guess is read where it now ends', async () => {
    const d = fakeDaemon({ stdout: 2000, stderr: 0 });
    const t = await loadTails(d.query, keep, { stdout: 1250, stderr: 0 });
    expect(texts(t.stdout.events)).toEqual(lastLines('stdout', 2000, keep));
    expect(d.calls.length).toBe(2);
  });
});
