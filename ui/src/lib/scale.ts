// Time ↔ pixel mapping for the timeline: zooming around the cursor, panning
// within bounds, and nicely spaced axis ticks.

import { formatTick } from './format';

/** A visible time window, ns since session start; `to` exclusive. */
export interface View {
  from: number;
  to: number;
}

/** How far the view may go. */
export interface Bounds {
  min: number;
  max: number;
}

/** Never zoom in further than this many ns across the whole width. */
export const MIN_SPAN_NS = 50;

export function span(v: View): number {
  return v.to - v.from;
}

/** x (px from the plotting area's left edge) of time `ns`. */
export function xOf(v: View, width: number, ns: number): number {
  return ((ns - v.from) / span(v)) * width;
}

/** Time at x. */
export function nsAt(v: View, width: number, x: number): number {
  return v.from + (x / width) * span(v);
}

/**
 * Keeps a view inside its bounds: no wider than the bounds, no narrower
 * than `minSpan`, shifted (not shrunk) back inside when it sticks out.
 */
export function clampView(v: View, b: Bounds, minSpan = MIN_SPAN_NS): View {
  const full = Math.max(b.max - b.min, minSpan);
  let s = Math.min(Math.max(span(v), minSpan), full);
  if (!Number.isFinite(s) || s <= 0) s = full;
  let from = v.from;
  if (!Number.isFinite(from)) from = b.min;
  if (from < b.min) from = b.min;
  if (from + s > b.min + full) from = b.min + full - s;
  return { from, to: from + s };
}

/**
 * Zooms by `factor` (< 1 zooms in, > 1 out) keeping the time under `x`
 * where it is on screen, then clamps.
 */
export function zoomAt(v: View, width: number, x: number, factor: number, b: Bounds, minSpan = MIN_SPAN_NS): View {
  const anchor = nsAt(v, width, x);
  const full = Math.max(b.max - b.min, minSpan);
  const s = Math.min(Math.max(span(v) * factor, minSpan), full);
  const frac = width > 0 ? x / width : 0.5;
  return clampView({ from: anchor - frac * s, to: anchor - frac * s + s }, b, minSpan);
}

/** Pans by `dx` pixels (positive dx = dragging right = earlier times). */
export function panBy(v: View, width: number, dx: number, b: Bounds, minSpan = MIN_SPAN_NS): View {
  const dns = (dx / width) * span(v);
  return clampView({ from: v.from - dns, to: v.to - dns }, b, minSpan);
}

/** The zoom factor for one wheel event. */
export function wheelFactor(deltaY: number, deltaMode = 0): number {
  // Lines and pages scroll much further per unit than pixels.
  const px = deltaMode === 1 ? deltaY * 16 : deltaMode === 2 ? deltaY * 400 : deltaY;
  const clamped = Math.max(-300, Math.min(300, px));
  return Math.exp(clamped * 0.002);
}

/** 1, 2 or 5 times a power of ten, at least `raw`. */
export function niceStep(raw: number): number {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const pow = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) {
    if (m * pow >= raw * (1 - 1e-12)) return Math.max(1, m * pow);
  }
  return Math.max(1, 10 * pow);
}

export interface Tick {
  ns: number;
  x: number;
  label: string;
}

/** Axis ticks at least `minPx` apart, on round times. */
export function ticks(v: View, width: number, minPx = 90): { step: number; ticks: Tick[] } {
  if (width <= 0 || span(v) <= 0) return { step: 1, ticks: [] };
  const step = niceStep((span(v) * minPx) / width);
  const out: Tick[] = [];
  const first = Math.ceil(v.from / step) * step;
  for (let ns = first; ns <= v.to && out.length < 1000; ns += step) {
    out.push({ ns, x: xOf(v, width, ns), label: formatTick(ns, step, Math.max(Math.abs(v.from), Math.abs(v.to))) });
  }
  return { step, ticks: out };
}

/** Whether a view shows the end of a session reaching `endNs` (within 2 % of its width). */
export function showsEnd(v: View, endNs: number): boolean {
  return v.to >= endNs - span(v) * 0.02;
}

/**
 * The view after a running session's end moved to `newEnd`, for a user
 * following it: the whole session stays whole, a view pinned to the end
 * slides along keeping its width, any other view stays put.
 */
export function followEnd(v: View, newEnd: number, pinned: boolean, whole: boolean): View {
  if (whole) return { from: 0, to: Math.max(newEnd, v.to, 1) };
  if (pinned && newEnd > v.to) {
    const s = span(v);
    return { from: newEnd - s, to: newEnd };
  }
  return v;
}
