// The timeline's lanes drawn on its canvas: a thread's call bars over the
// density of calls too narrow to draw, output, marker and channel items (or
// their density), and the agent's tool calls; what a tooltip says of each,
// and the caption under the timeline.
// Pure drawing: what to draw and the hover and selection come in a LanePaint.

import { h } from '../dom';
import { byText } from '../lib/caller';
import { functionColor } from '../lib/color';
import { compact } from '../lib/events';
import { formatDuration, formatTick } from '../lib/format';
import { agentOutside, agentRect, countBars, spanRect } from '../lib/geom';
import { DEFAULT_METRICS as M, spanY, type LaneBox } from '../lib/lanes';
import { type View, xOf } from '../lib/scale';
import type { AgentCall, Item, Lane, Span, Timeline } from '../types';
import { type Colors, drawMarker } from './timeline_paint';

/** Width of the lane labels left of the plot. */
export const GUTTER = 150;

/** What the pointer is over. */
export type Target =
  | { kind: 'span'; span: Span; lane: Lane; box: LaneBox }
  | { kind: 'density'; count: number; box: LaneBox; what: string }
  | { kind: 'item'; item: Item; box: LaneBox }
  | { kind: 'agent'; call: AgentCall; box: LaneBox }
  | { kind: 'label'; text: string };

/** One frame's drawing state. */
export interface LanePaint {
  ctx: CanvasRenderingContext2D;
  c: Colors;
  data: Timeline | null;
  view: View;
  plotW: number;
  hover: Target | null;
  selectedSeq: number | null;
  dark: boolean;
}

export function drawThread(p: LanePaint, box: LaneBox, lane: Lane, maxCount: number): number {
  const { ctx, c, data, view, plotW, hover, selectedSeq } = p;
  if (!data) return 0;
  // Density of calls too narrow to draw: the whole lane when nothing is wide enough.
  const dh = lane.spans.length ? M.densityHeight : box.height;
  const bars = countBars(lane.counts, data.fromNs, data.toNs, view, plotW);
  ctx.fillStyle = c.density;
  const logMax = Math.log1p(maxCount);
  for (const b of bars) {
    const hgt = Math.max(2, (Math.log1p(b.value) / logMax) * (dh - 2));
    ctx.fillRect(GUTTER + b.x, box.y + dh - hgt, b.w, hgt);
  }
  let n = 0;
  const rowH = M.rowHeight;
  for (const s of lane.spans) {
    const r = spanRect(s, view, plotW);
    if (!r) continue;
    const y = spanY(box, s.depth, M);
    if (y === null) continue;
    n++;
    const name = data.functions[String(s.func)] ?? `#${s.func}`;
    ctx.fillStyle = functionColor(name, p.dark);
    const x = GUTTER + r.x;
    ctx.fillRect(x, y + 1, r.w, rowH - 2);
    if (s.open) {
      // Not ended inside the window: a hatched tail.
      ctx.fillStyle = c.bg;
      ctx.globalAlpha = 0.5;
      ctx.fillRect(x + Math.max(0, r.w - 6), y + 1, Math.min(6, r.w), rowH - 2);
      ctx.globalAlpha = 1;
    }
    if (r.w > 28) {
      ctx.save();
      ctx.beginPath();
      ctx.rect(x, y, r.w, rowH);
      ctx.clip();
      ctx.fillStyle = c.spanText;
      ctx.fillText(name, Math.max(x, GUTTER) + 3, y + rowH / 2);
      ctx.restore();
    }
    if (s.seq === selectedSeq) {
      ctx.strokeStyle = c.select;
      ctx.lineWidth = 2;
      ctx.strokeRect(x + 1, y + 1, Math.max(1, r.w - 2), rowH - 2);
      ctx.lineWidth = 1;
    }
  }
  if (hover?.kind === 'span' && hover.lane === lane) {
    const r = spanRect(hover.span, view, plotW);
    const y = spanY(box, hover.span.depth, M);
    if (r && y !== null) {
      ctx.strokeStyle = c.fg;
      ctx.strokeRect(GUTTER + r.x + 0.5, y + 0.5, Math.max(1, r.w - 1), rowH - 1);
    }
  }
  return n;
}

/** A channel item that reports a failure (a failed scenario step, a
 *  request that failed). */
function failed(it: Item): boolean {
  return /\bFAIL|\bfailed\b/.test(it.text);
}

export function drawItems(p: LanePaint, box: LaneBox, items: Item[], counts: number[], what: 'output' | 'markers' | 'channel'): number {
  const { ctx, c, data, view, plotW, hover, selectedSeq } = p;
  if (!data) return 0;
  const total = counts.reduce((a, b) => a + b, 0);
  if (!items.length && total > 0) {
    // Too many to send one by one: density.
    const bars = countBars(counts, data.fromNs, data.toNs, view, plotW);
    const max = Math.max(1, ...counts);
    ctx.fillStyle = what === 'output' ? c.stdout : c.logpoint;
    for (const b of bars) {
      const hgt = Math.max(2, (Math.log1p(b.value) / Math.log1p(max)) * (box.height - 4));
      ctx.fillRect(GUTTER + b.x, box.y + box.height - 2 - hgt, b.w, hgt);
    }
    return total;
  }
  // stderr after stdout so it stays visible where they overlap.
  const sorted = what === 'output' ? [...items].sort((a, b) => (a.kind === 'stderr' ? 1 : 0) - (b.kind === 'stderr' ? 1 : 0)) : items;
  for (const it of sorted) {
    const x = xOf(view, plotW, it.tsNs);
    if (x < -6 || x > plotW + 6) continue;
    // Keep glyphs at the very ends (a process exit is the last event) inside.
    const px = GUTTER + (what === 'output' ? x : Math.min(Math.max(x, 6), plotW - 7));
    const mid = box.y + box.height / 2;
    if (what === 'output') {
      ctx.fillStyle = it.kind === 'stderr' ? c.stderr : c.stdout;
      ctx.fillRect(Math.round(px) - (it.kind === 'stderr' ? 1 : 0.5), box.y + 3, it.kind === 'stderr' ? 2 : 1.5, box.height - 6);
    } else if (what === 'channel' && !it.kind.startsWith('ui_')) {
      // A tick per stimulus or observation; failures in the crash colour.
      ctx.fillStyle = failed(it) ? c.crash : c.logpoint;
      ctx.fillRect(Math.round(px) - 1, box.y + 3, 2, box.height - 6);
    } else {
      drawMarker(ctx, c, it.kind, px, mid);
    }
    if (hover?.kind === 'item' && hover.item === it) {
      ctx.strokeStyle = c.fg;
      ctx.strokeRect(px - 5.5, box.y + 1.5, 11, box.height - 3);
    }
    if (it.seq === selectedSeq) {
      ctx.strokeStyle = c.select;
      ctx.lineWidth = 2;
      ctx.strokeRect(px - 6, box.y + 1, 12, box.height - 2);
      ctx.lineWidth = 1;
    }
  }
  return items.length;
}

export function drawAgent(p: LanePaint, box: LaneBox, agentCalls: AgentCall[]) {
  const { ctx, c, view, plotW, hover } = p;
  for (const call of agentCalls) {
    const r = agentRect(call, view, plotW);
    if (!r) continue;
    ctx.fillStyle = call.isError ? c.agentError : call.side === 'editor' ? c.editor : c.agent;
    ctx.fillRect(GUTTER + r.x, box.y + 3, r.w, box.height - 6);
    if (hover?.kind === 'agent' && hover.call === call) {
      ctx.strokeStyle = c.fg;
      ctx.strokeRect(GUTTER + r.x - 0.5, box.y + 1.5, r.w + 1, box.height - 3);
    }
  }
  const out = agentOutside(agentCalls, view);
  const label = (t: string, x: number) => {
    const w = ctx.measureText(t).width + 8;
    ctx.fillStyle = c.bg;
    ctx.globalAlpha = 0.9;
    ctx.fillRect(x, box.y + 2, w, box.height - 4);
    ctx.globalAlpha = 1;
    ctx.fillStyle = c.fg;
    ctx.fillText(t, x + 4, box.y + box.height / 2);
    return w;
  };
  if (out.before) label(`◀ ${out.before} earlier`, GUTTER + 2);
  if (out.after) {
    const t = `${out.after} later ▶`;
    label(t, GUTTER + plotW - ctx.measureText(t).width - 10);
  }
  if (!agentCalls.length) {
    ctx.fillStyle = c.muted;
    ctx.fillText('no tool calls recorded for this session', GUTTER + 4, box.y + box.height / 2);
  }
}

/** What a tooltip says of target `t` (`functions` names the spans). */
export function tipLines(t: Target, functions: Record<string, string> | undefined): (string | HTMLElement)[] {
  const lines: (string | HTMLElement)[] = [];
  switch (t.kind) {
    case 'label':
      lines.push(h('b', null, t.text));
      break;
    case 'span': {
      const name = functions?.[String(t.span.func)] ?? `#${t.span.func}`;
      lines.push(h('b', { class: 'mono' }, name));
      lines.push(`${formatDuration(t.span.durNs)}${t.span.open ? ' so far (no exit in this window)' : ''} · depth ${t.span.depth}`);
      lines.push(`starts at ${formatTick(t.span.startNs, 1000, t.span.startNs)}`);
      lines.push(h('span', { class: 'muted' }, 'click for its arguments and return value'));
      break;
    }
    case 'density':
      lines.push(`${t.count} ${t.what}`);
      lines.push(h('span', { class: 'muted' }, 'click or scroll to zoom in'));
      break;
    case 'item':
      lines.push(h('b', null, t.item.kind));
      lines.push(h('span', { class: 'mono tip-text' }, compact(t.item.text, 300) || '(empty)'));
      lines.push(h('span', { class: 'muted' }, `at ${formatTick(t.item.tsNs, 1000, t.item.tsNs)}`));
      break;
    case 'agent':
      lines.push(h('b', { class: 'mono' }, t.call.tool), t.call.isError ? h('span', { class: 'badge err' }, 'error') : '');
      lines.push(byText(t.call));
      lines.push(`${formatDuration(t.call.durationMs * 1e6)} · ${t.call.offsetNs < 0 ? 'before launch' : `at ${formatTick(t.call.offsetNs, 1000, t.call.offsetNs)}`}`);
      if (t.call.args !== undefined) lines.push(h('span', { class: 'mono tip-text' }, compact(t.call.args, 300)));
      if (t.call.summary) lines.push(h('span', { class: 'muted tip-text' }, compact(t.call.summary, 200)));
      break;
  }
  return lines;
}

/** What a frame drew, for its caption. */
export interface Drawn {
  threads: number;
  spans: number;
  output: number;
  markers: number;
  channels: number;
}

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/** The caption under the timeline: what is drawn, and what is only counted. */
export function captionText(data: Timeline, d: Drawn, agentAvailable: boolean | null, agentCalls: number): string {
  const narrow = data.lanes.reduce((a, l) => a + l.counts.reduce((x, y) => x + y, 0), 0);
  const parts = [plural(d.threads, 'thread lane'), `${plural(d.spans, 'call')} drawn`];
  if (narrow) parts.push(`${narrow} too short to draw at this zoom (shaded; zoom in to see them)`);
  parts.push(plural(d.output, 'output line'), plural(d.markers, 'marker'));
  if (d.channels) parts.push(plural(d.channels, 'channel lane'));
  if (agentAvailable) parts.push(plural(agentCalls, 'agent call'));
  else if (agentAvailable === false) parts.push('agent calls: not available in this daemon');
  if (!data.lanes.length && !data.output.length && !data.markers.length && !data.channels?.length)
    parts.push('nothing recorded in this window');
  return parts.join(' · ');
}
