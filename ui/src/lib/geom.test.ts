import { describe, expect, it } from 'vitest';
import { agentAt, agentOutside, agentRect, countBars, countVisibleSpans, itemAt, spanAt, spanRect } from './geom';
import type { AgentCall, Span } from '../types';

const span = (startNs: number, durNs: number, depth = 0, seq = 1): Span => ({ startNs, durNs, depth, func: 1, seq, open: false });
const call = (offsetNs: number, durationMs: number, tool = 'debug_query'): AgentCall => ({ seq: 1, tool, offsetNs, durationMs });

describe('countBars', () => {
  it('maps columns of the data window into the current view', () => {
    // 4 columns over [0, 400) drawn at the same window in 400 px: 100 px each.
    expect(countBars([1, 0, 3, 0], 0, 400, { from: 0, to: 400 }, 400)).toEqual([
      { x: 0, w: 100, value: 1 },
      { x: 200, w: 100, value: 3 },
    ]);
  });
  it('rescales when zoomed before the new data arrives', () => {
    // Zoomed into [100, 300): column 2 ([200,300)) now fills the right half.
    const bars = countBars([1, 2, 3, 4], 0, 400, { from: 100, to: 300 }, 400);
    expect(bars).toEqual([
      { x: 0, w: 200, value: 2 },
      { x: 200, w: 200, value: 3 },
    ]);
  });
  it('clips partial columns and keeps slivers at least a pixel wide', () => {
    const bars = countBars([5, 5], 0, 1000, { from: 250, to: 100_000_250 }, 100);
    expect(bars.length).toBe(2);
    expect(bars[0].x).toBe(0);
    expect(bars[0].w).toBe(1);
  });
});

describe('spans', () => {
  const v = { from: 0, to: 1000 };
  it('gives on-screen rectangles, culls off-screen ones', () => {
    expect(spanRect(span(100, 200), v, 100)).toEqual({ x: 10, w: 20 });
    expect(spanRect(span(2000, 10), v, 100)).toBeNull();
    expect(spanRect(span(100, 1), v, 100)!.w).toBe(1);
    expect(countVisibleSpans([span(100, 200), span(2000, 10), span(-500, 400)], v, 100)).toBe(1);
  });
  it('finds the span under the cursor at a depth', () => {
    const spans = [span(0, 500, 0, 1), span(100, 100, 1, 2), span(600, 5, 1, 3)];
    expect(spanAt(spans, 0, 20, v, 100)?.seq).toBe(1);
    expect(spanAt(spans, 1, 15, v, 100)?.seq).toBe(2);
    expect(spanAt(spans, 1, 61, v, 100)?.seq).toBe(3); // thin span, within slop
    expect(spanAt(spans, 1, 40, v, 100)).toBeNull();
    expect(spanAt(spans, 2, 15, v, 100)).toBeNull();
  });
  it('finds the nearest item', () => {
    const items = [{ tsNs: 100 }, { tsNs: 130 }];
    expect(itemAt(items, 12, v, 100)).toEqual({ tsNs: 130 });
    expect(itemAt(items, 50, v, 100)).toBeNull();
  });
});

describe('agent calls', () => {
  const v = { from: 0, to: 10_000_000 }; // 10 ms across 100 px
  it('draws a call at its offset for its duration, at least 2 px', () => {
    expect(agentRect(call(1_000_000, 2), v, 100)).toEqual({ x: 10, w: 20 });
    expect(agentRect(call(5_000_000, 0.0001), v, 100)!.w).toBe(2);
    expect(agentRect(call(20_000_000, 1), v, 100)).toBeNull();
  });
  it('clips a call that began before launch', () => {
    expect(agentRect(call(-2_000_000, 3), v, 100)).toEqual({ x: 0, w: 10 });
  });
  it('hit-tests and counts calls outside the view', () => {
    const calls = [call(-9_000_000, 1, 'debug_trace'), call(1_000_000, 2, 'debug_launch'), call(50_000_000, 1), call(60_000_000, 1)];
    expect(agentAt(calls, 15, v, 100)?.tool).toBe('debug_launch');
    expect(agentAt(calls, 60, v, 100)).toBeNull();
    expect(agentOutside(calls, v)).toEqual({ before: 1, after: 2 });
  });
});
