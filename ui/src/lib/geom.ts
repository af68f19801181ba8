// Timeline geometry: where the server's spans, counts, items and the
// agent's calls land on the canvas for the current view. The data may
// belong to an older window (it is redrawn at once while the new window is
// fetched), so everything maps through absolute time.

import { type View, xOf } from './scale';
import type { AgentCall, Item, Span } from '../types';

export interface Bar {
  x: number;
  w: number;
  value: number;
}

/**
 * Per-column counts of the window [dataFrom, dataTo) as bars in the current
 * view, clipped to [0, width]; empty columns are skipped.
 */
export function countBars(counts: number[], dataFrom: number, dataTo: number, v: View, width: number): Bar[] {
  const n = counts.length;
  if (!n || dataTo <= dataFrom) return [];
  const cw = (dataTo - dataFrom) / n;
  const out: Bar[] = [];
  for (let i = 0; i < n; i++) {
    const c = counts[i];
    if (!c) continue;
    let x0 = xOf(v, width, dataFrom + i * cw);
    let x1 = xOf(v, width, dataFrom + (i + 1) * cw);
    if (x1 <= 0 || x0 >= width) continue;
    x0 = Math.max(0, x0);
    x1 = Math.min(width, x1);
    out.push({ x: x0, w: Math.max(1, x1 - x0), value: c });
  }
  return out;
}

/** A span's rectangle in the view (at least 1 px wide), or null when off screen. */
export function spanRect(s: Span, v: View, width: number): { x: number; w: number } | null {
  const x0 = xOf(v, width, s.startNs);
  const x1 = xOf(v, width, s.startNs + s.durNs);
  if (x1 < 0 || x0 > width) return null;
  const cx0 = Math.max(-1, x0);
  const cx1 = Math.min(width + 1, x1);
  return { x: cx0, w: Math.max(1, cx1 - cx0) };
}

/** The span at depth `depth` covering x (with `slop` px of tolerance for thin ones). */
export function spanAt(spans: Span[], depth: number, x: number, v: View, width: number, slop = 2): Span | null {
  let best: Span | null = null;
  let bestDist = Infinity;
  for (const s of spans) {
    if (s.depth !== depth) continue;
    const r = spanRect(s, v, width);
    if (!r) continue;
    const d = x < r.x ? r.x - x : x > r.x + r.w ? x - (r.x + r.w) : 0;
    if (d <= slop && d < bestDist) {
      best = s;
      bestDist = d;
      if (d === 0) break;
    }
  }
  return best;
}

/** The item nearest x within `slop` px. */
export function itemAt<T extends Pick<Item, 'tsNs'>>(items: T[], x: number, v: View, width: number, slop = 4): T | null {
  let best: T | null = null;
  let bestDist = Infinity;
  for (const it of items) {
    const d = Math.abs(xOf(v, width, it.tsNs) - x);
    if (d <= slop && d < bestDist) {
      best = it;
      bestDist = d;
    }
  }
  return best;
}

export function agentCallEndNs(c: AgentCall): number {
  return c.offsetNs + Math.max(0, c.durationMs) * 1e6;
}

/** An agent call's bar (at least 2 px wide), or null when off screen. */
export function agentRect(c: AgentCall, v: View, width: number): { x: number; w: number } | null {
  const x0 = xOf(v, width, c.offsetNs);
  const x1 = xOf(v, width, agentCallEndNs(c));
  if (x1 < 0 || x0 > width) return null;
  const cx0 = Math.max(0, x0);
  const cx1 = Math.min(width, x1);
  return { x: cx0, w: Math.max(2, cx1 - cx0) };
}

/** The agent call under x, or null. */
export function agentAt(calls: AgentCall[], x: number, v: View, width: number, slop = 3): AgentCall | null {
  let best: AgentCall | null = null;
  let bestDist = Infinity;
  for (const c of calls) {
    const r = agentRect(c, v, width);
    if (!r) continue;
    const d = x < r.x ? r.x - x : x > r.x + r.w ? x - (r.x + r.w) : 0;
    if (d <= slop && d < bestDist) {
      best = c;
      bestDist = d;
    }
  }
  return best;
}

/** How many calls lie wholly before and after the view. */
export function agentOutside(calls: AgentCall[], v: View): { before: number; after: number } {
  let before = 0;
  let after = 0;
  for (const c of calls) {
    if (agentCallEndNs(c) < v.from) before++;
    else if (c.offsetNs > v.to) after++;
  }
  return { before, after };
}

/** Spans of the response that are on screen in the view. */
export function countVisibleSpans(spans: Span[], v: View, width: number): number {
  let n = 0;
  for (const s of spans) if (spanRect(s, v, width)) n++;
  return n;
}
