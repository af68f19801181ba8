// The timeline: a canvas with one lane per thread (nested call bars over a
// density strip of calls too narrow to draw), then output, markers, a lane
// per I/O channel (stdin, file, net, midi, audio, ui, scenario steps) and the
// agent's tool calls. The server aggregates by zoom level; on zoom/pan the
// data in hand is redrawn at once at the new scale and the new window is
// fetched ~100 ms later, stale replies dropped. A window already drawn or
// in flight is never asked for again (lib/window.ts) unless the session grew.

import { api, errorText } from '../api';
import { debounce, h, throttle } from '../dom';
import { formatDuration, formatTick } from '../lib/format';
import { agentAt, agentCallEndNs, itemAt, spanAt } from '../lib/geom';
import { DEFAULT_METRICS as M, channelKey, channelSpecs, depthAt, laneAt, layoutLanes, threadLabel, type LaneBox, type LaneSpec } from '../lib/lanes';
import { type Bounds, type View, clampView, followEnd, nsAt, panBy, showsEnd, span as viewSpan, ticks, wheelFactor, xOf, zoomAt } from '../lib/scale';
import { type Growth, WindowRequests, windowKey } from '../lib/window';
import type { AgentCall, Item, Lane, Span, Timeline } from '../types';
import { GUTTER, type LanePaint, type Target, captionText, drawAgent, drawItems, drawThread, tipLines } from './timeline_lanes';
import { type Colors, drawCursor, drawGrid, drawLine, drawMark, ellipsize, readColors } from './timeline_paint';

export type TimelineSelection =
  | { kind: 'span'; span: Span; lane: Lane; name: string }
  | { kind: 'item'; item: Item }
  | { kind: 'agent'; call: AgentCall };

/** The first answer from the server; `whole` when it covers the whole session. */
export type FirstAnswer = { timeline: Timeline; whole: boolean } | null;

export interface TimelineHandle {
  el: HTMLElement;
  /**
   * Settles with the first server answer drawn, or null when the first
   * request failed (or the timeline went away first).
   */
  firstAnswer: Promise<FirstAnswer>;
  /** New events were stored (live); `endNs` when known. */
  eventsGrew: (endNs?: number) => void;
  /** The agent's calls; null when the daemon cannot tell. */
  setAgentCalls: (calls: AgentCall[] | null) => void;
  addAgentCall: (c: AgentCall) => void;
  /** Brings a call into view. */
  showCall: (c: AgentCall) => void;
  setRunning: (running: boolean) => void;
  select: (seq: number | null) => void;
  /** Marks a moment (ns since start) with a labelled line; null removes it. */
  mark: (ns: number | null, label?: string) => void;
  destroy: () => void;
}


export function createTimeline(sessionId: string, onSelect: (s: TimelineSelection) => void): TimelineHandle {
  const canvas = h('canvas', { role: 'img', 'aria-label': 'Timeline of the session: threads, output, markers, channels and agent calls' });
  const tip = h('div', { class: 'tl-tip', role: 'tooltip', hidden: true });
  const wrap = h(
    'div',
    {
      class: 'tl-canvas-wrap',
      'data-testid': 'timeline',
      tabindex: 0,
      'aria-label': 'Timeline. Mouse wheel or + and − zoom, drag or arrow keys pan, double-click or 0 shows the whole session. The event table below lists the same events.',
    },
    canvas,
    tip,
  );
  const range = h('span', { class: 'mono small' });
  const busy = h('span', { class: 'muted small', 'aria-live': 'polite' });
  const followBox = h('input', { type: 'checkbox', checked: true });
  const followLabel = h('label', { class: 'small follow', hidden: true, title: 'Keep the end of a running session in view' }, followBox, ' follow the end');
  const caption = h('p', { class: 'tl-caption muted small', 'aria-live': 'polite' });
  const zoomBtn = (label: string, title: string, f: () => void) =>
    h('button', { type: 'button', class: 'small', title, 'aria-label': title, onclick: f }, label);
  const toolbar = h(
    'div',
    { class: 'tl-toolbar' },
    h('h2', null, 'Timeline'),
    zoomBtn('−', 'Zoom out (−)', () => keyZoom(2)),
    zoomBtn('+', 'Zoom in (+)', () => keyZoom(0.5)),
    zoomBtn('Whole session', 'Show the whole session (0 or double-click)', () => reset()),
    range,
    followLabel,
    busy,
    h('span', { class: 'muted small hint' }, 'wheel: zoom · drag: pan · click a bar: details'),
  );
  const el = h('section', { class: 'panel timeline', 'aria-label': 'Timeline' }, toolbar, wrap, caption);

  let view: View = { from: 0, to: 1 };
  let whole = true;
  let pinned = true;
  let bounds: Bounds = { min: 0, max: 1 };
  let data: Timeline | null = null;
  let endNs = 0;
  const requests = new WindowRequests();
  let abort: AbortController | null = null;
  let agentCalls: AgentCall[] = [];
  let agentAvailable: boolean | null = null;
  let running = false;
  let hover: Target | null = null;
  let hoverX: number | null = null;
  let selectedSeq: number | null = null;
  let marked: { ns: number; label: string } | null = null;
  let colors: Colors | null = null;
  let dark = matchMedia('(prefers-color-scheme: dark)').matches;
  let layoutCache: { lanes: LaneBox[]; height: number } = { lanes: [], height: 0 };
  let destroyed = false;
  let error: string | null = null;
  let lastWidth = 0;

  const plotWidth = () => Math.max(50, wrap.clientWidth - GUTTER);

  const updateBounds = () => {
    let agentEnd = 0;
    for (const c of agentCalls) agentEnd = Math.max(agentEnd, agentCallEndNs(c));
    // A little room after the last agent call so it need not sit on the edge.
    const max = Math.max(endNs + 1, 1, agentEnd > endNs ? agentEnd + Math.max(1e6, (agentEnd - endNs) * 0.02) : 0);
    bounds = { min: 0, max };
  };

  // Every thread seen so far keeps its lane, so lanes do not jump while
  // zooming into windows where some threads made no calls.
  const threads = new Map<string, { pid: number; tid: number; name: string | null }>();
  const laneKey = (l: { pid: number; tid: number }) => `t${l.pid}:${l.tid}`;
  // Channel lanes likewise.
  const channelsSeen = new Set<string>();

  const specs = (): LaneSpec[] => {
    const out: LaneSpec[] = [];
    const depth = new Map((data?.lanes ?? []).map((l) => [laneKey(l), l.maxDepth]));
    const all = [...threads.values()].sort((a, b) => a.pid - b.pid || a.tid - b.tid);
    const pids = new Set(all.map((l) => l.pid));
    for (const l of all) out.push({ kind: 'thread', key: laneKey(l), label: threadLabel(l, pids.size > 1), maxDepth: depth.get(laneKey(l)) ?? 0 });
    out.push({ kind: 'output', key: 'output', label: 'output' });
    out.push({ kind: 'markers', key: 'markers', label: 'markers' });
    out.push(...channelSpecs(channelsSeen));
    if (agentAvailable !== false) out.push({ kind: 'agent', key: 'agent', label: 'agent' });
    return out;
  };

  // ---- drawing -------------------------------------------------------

  function draw(fromServer = false) {
    if (destroyed) return;
    colors ??= readColors(wrap);
    const c = colors;
    const cssW = Math.max(GUTTER + 50, wrap.clientWidth);
    const plotW = cssW - GUTTER;
    const layout = layoutLanes(specs(), M);
    layoutCache = layout;
    const cssH = Math.max(layout.height + 2, 120);
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(cssW * dpr) || canvas.height !== Math.round(cssH * dpr)) {
      canvas.width = Math.round(cssW * dpr);
      canvas.height = Math.round(cssH * dpr);
    }
    canvas.style.width = `${cssW}px`;
    canvas.style.height = `${cssH}px`;
    const ctx = canvas.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = c.bg;
    ctx.fillRect(0, 0, cssW, cssH);
    ctx.font = '11px system-ui, -apple-system, "Segoe UI", sans-serif';
    ctx.textBaseline = 'middle';

    const tk = ticks(view, plotW, 100);
    drawGrid(ctx, c, GUTTER, tk.ticks, cssH);

    let drawnSpans = 0;
    let outputItems = 0;
    let markerItems = 0;
    const channelItems: string[] = [];
    const maxCount = Math.max(1, ...(data?.lanes ?? []).flatMap((l) => l.counts));

    for (let i = 0; i < layout.lanes.length; i++) {
      const box = layout.lanes[i];
      // Lane background and label.
      ctx.fillStyle = c.laneBg;
      ctx.fillRect(GUTTER, box.y, plotW, box.height);
      ctx.fillStyle = box.kind === 'thread' ? c.fg : c.muted;
      ctx.fillText(ellipsize(ctx, box.label, GUTTER - 14), 8, box.y + Math.min(box.height, 18) / 2);

      ctx.save();
      ctx.beginPath();
      ctx.rect(GUTTER, box.y, plotW, box.height);
      ctx.clip();
      if (data) {
        if (box.kind === 'thread') {
          const lane = data.lanes.find((l) => laneKey(l) === box.key);
          if (lane) drawnSpans += drawThread(paint(ctx, c, data, plotW), box, lane, maxCount);
          else {
            ctx.fillStyle = c.muted;
            ctx.fillText('no traced calls in this window', GUTTER + 6, box.y + box.height / 2);
          }
        } else if (box.kind === 'output') {
          outputItems = drawItems(paint(ctx, c, data, plotW), box, data.output, data.outputCounts, 'output');
        } else if (box.kind === 'markers') {
          markerItems = drawItems(paint(ctx, c, data, plotW), box, data.markers, data.markerCounts, 'markers');
        } else if (box.kind === 'channel') {
          const lane = channelLane(box.key);
          const n = lane ? drawItems(paint(ctx, c, data, plotW), box, lane.items, lane.counts, 'channel') : 0;
          channelItems.push(`${box.key.slice(2)}:${n}`);
        }
      }
      if (box.kind === 'agent' && agentAvailable !== null) drawAgent(paint(ctx, c, data, plotW), box, agentCalls);
      ctx.restore();
    }

    // Process exits and crashes as lines across every lane.
    if (data) {
      for (const m of data.markers) {
        if (m.kind !== 'process_exit' && m.kind !== 'crash') continue;
        const x = xOf(view, plotW, m.tsNs);
        if (x < 0 || x > plotW) continue;
        drawLine(ctx, m.kind === 'crash' ? c.crash : c.exit, GUTTER + x, layout.height, true);
      }
    }

    if (marked) {
      const x = xOf(view, plotW, marked.ns);
      const inView = x >= 0 && x <= plotW;
      if (inView) drawMark(ctx, c, GUTTER, x, plotW, layout.height, marked.label);
      wrap.dataset.markDrawn = inView ? '1' : '0';
    }

    // Hover cursor with its time.
    if (hoverX !== null && hoverX >= 0 && hoverX <= plotW) {
      const label = formatTick(nsAt(view, plotW, hoverX), tk.step, Math.max(view.to, 1), 2);
      drawCursor(ctx, c, GUTTER, hoverX, plotW, cssH, label);
    }

    if (!data) {
      ctx.fillStyle = error ? c.crash : c.muted;
      ctx.fillText(error ?? 'Loading the timeline…', GUTTER + 12, M.top + 10);
    }

    if (fromServer && data) {
      wrap.dataset.drawnSpans = String(drawnSpans);
      wrap.dataset.lanes = String(layout.lanes.filter((l) => l.kind === 'thread').length);
      wrap.dataset.fromNs = String(data.fromNs);
      wrap.dataset.toNs = String(data.toNs);
      wrap.dataset.outputItems = String(outputItems);
      wrap.dataset.markers = String(markerItems);
      wrap.dataset.channels = channelItems.join(',');
      wrap.dataset.agentCalls = String(agentCalls.length);
      wrap.dataset.ready = 'true';
      describe(drawnSpans, outputItems, markerItems, channelItems.length);
    }
    const maxAbs = Math.max(Math.abs(view.from), Math.abs(view.to), 1);
    range.textContent = `${formatTick(view.from, tk.step, maxAbs, 1)} – ${formatTick(view.to, tk.step, maxAbs, 1)} (${formatDuration(viewSpan(view))} shown)`;
  }

  /** The lanes' drawing state for this frame. */
  function paint(ctx: CanvasRenderingContext2D, c: Colors, d: Timeline | null, plotW: number): LanePaint {
    return { ctx, c, data: d, view, plotW, hover, selectedSeq, dark };
  }

  /** The channel lane drawn in box `key`, if it has events in this window. */
  function channelLane(key: string) {
    const lane = data?.channels?.find((l) => channelKey(l.channel) === key);
    return lane ? { ...lane, what: `${lane.channel} events` } : undefined;
  }

  function describe(spans: number, output: number, markers: number, channels: number) {
    if (!data) return;
    const drawn = { threads: threads.size, spans, output, markers, channels };
    caption.textContent = captionText(data, drawn, agentAvailable, agentCalls.length);
  }

  // ---- fetching ------------------------------------------------------

  let settleFirst: (a: FirstAnswer) => void = () => {};
  const firstAnswer = new Promise<FirstAnswer>((resolve) => {
    settleFirst = (a) => {
      settleFirst = () => {};
      resolve(a);
    };
  });

  const wholeView = (t: Timeline): View => ({ from: t.fromNs, to: Math.max(t.toNs, t.fromNs + 1) });

  /**
   * Draws the window in view from the server: fetched unless that window
   * is drawn already or in flight; `grew` (the session has grown) fetches a
   * drawn window again, or once more after the one in flight.
   */
  function fetchNow(grew?: Growth) {
    if (destroyed) return;
    const columns = plotWidth();
    const key = windowKey(whole ? { from: 0, columns } : { from: view.from, to: Math.max(view.to, view.from + 1), columns });
    const plan = requests.request(key, grew);
    if (plan.kind === 'join') return;
    abort?.abort();
    abort = null;
    if (plan.kind === 'have') {
      // The data in hand is this window: no request, only a redraw.
      busy.textContent = '';
      if (whole && data) view = wholeView(data);
      draw(!!data);
      return;
    }
    const ticket = plan.ticket;
    const mine = new AbortController();
    abort = mine;
    busy.textContent = 'updating…';
    api
      .timeline(sessionId, key, mine.signal)
      .then((t) => {
        if (destroyed) return;
        const verdict = requests.answer(ticket, t.endNs);
        if (verdict === 'stale') return;
        if (abort === mine) abort = null;
        error = null;
        data = t;
        for (const l of t.channels ?? []) channelsSeen.add(l.channel);
        for (const l of t.lanes) {
          const known = threads.get(laneKey(l));
          if (!known || (l.name && !known.name)) threads.set(laneKey(l), { pid: l.pid, tid: l.tid, name: l.name });
        }
        endNs = Math.max(endNs, t.endNs);
        if (whole) view = wholeView(t);
        updateBounds();
        busy.textContent = '';
        draw(true);
        settleFirst({ timeline: t, whole: key.from === 0 && key.to === undefined });
        if (verdict === 'again') fetchNow({});
      })
      .catch((e: unknown) => {
        if (destroyed || !requests.fail(ticket)) return;
        if (abort === mine) abort = null;
        if ((e as Error).name === 'AbortError') return;
        error = `Could not load the timeline: ${errorText(e)}`;
        busy.textContent = '';
        caption.textContent = error;
        draw();
        settleFirst(null);
      });
  }
  const fetchSoon = debounce(fetchNow, 100);

  const changed = (how: 'zoom' | 'pan' = 'pan') => {
    whole = false;
    if (how === 'zoom' && following()) {
      // Zooming while following the end keeps the end at the right edge.
      const s = viewSpan(view);
      view = clampView({ from: endNs - s, to: endNs }, bounds);
    } else {
      // A view that shows the end keeps showing it while the session runs.
      pinned = showsEnd(view, endNs);
    }
    draw();
    fetchSoon.call();
  };

  function reset() {
    whole = true;
    pinned = true;
    view = { from: 0, to: Math.max(endNs + 1, 1) };
    draw();
    fetchSoon.cancel();
    // A running session may have grown past the whole-session data in hand.
    fetchNow(running ? {} : undefined);
  }

  /** Following a running session's end: zooming keeps the end in place. */
  const following = () => running && followBox.checked && pinned;
  const zoomAnchor = (x: number, plotW: number) => (following() ? plotW : x);

  function keyZoom(factor: number) {
    const plotW = plotWidth();
    const x = zoomAnchor(hoverX ?? plotW / 2, plotW);
    view = zoomAt(view, plotW, x, factor, bounds);
    changed('zoom');
  }

  // ---- interaction ---------------------------------------------------

  function hitTest(x: number, y: number): Target | null {
    const plotW = plotWidth();
    const i = laneAt(layoutCache, y);
    if (i < 0) return null;
    const box = layoutCache.lanes[i];
    if (x < GUTTER) return { kind: 'label', text: box.label };
    const px = x - GUTTER;
    const countAt = (counts: number[]) => {
      if (!data || !counts.length) return 0;
      const ns = nsAt(view, plotW, px);
      const col = Math.floor(((ns - data.fromNs) / (data.toNs - data.fromNs)) * counts.length);
      return col >= 0 && col < counts.length ? counts[col] : 0;
    };
    if (box.kind === 'agent') {
      const call = agentAt(agentCalls, px, view, plotW);
      return call ? { kind: 'agent', call, box } : null;
    }
    if (!data) return null;
    if (box.kind === 'thread') {
      const lane = data.lanes.find((l) => laneKey(l) === box.key);
      if (!lane) return null;
      const d = lane.spans.length ? depthAt(box, y, M) : -1;
      if (d >= 0) {
        const s = spanAt(lane.spans, d, px, view, plotW);
        if (s) return { kind: 'span', span: s, lane, box };
      }
      const n = countAt(lane.counts);
      return n ? { kind: 'density', count: n, box, what: 'calls too short to draw here' } : null;
    }
    // Output, markers or a channel.
    const lane = box.kind === 'output' ? { items: data.output, counts: data.outputCounts, what: 'output lines' }
      : box.kind === 'markers' ? { items: data.markers, counts: data.markerCounts, what: 'markers' }
      : channelLane(box.key);
    if (!lane) return null;
    const it = itemAt(lane.items, px, view, plotW);
    if (it) return { kind: 'item', item: it, box };
    const n = countAt(lane.counts);
    return n ? { kind: 'density', count: n, box, what: lane.what } : null;
  }

  function showTip(t: Target | null, x: number, y: number) {
    if (!t) {
      tip.hidden = true;
      return;
    }
    const lines = tipLines(t, data?.functions);
    tip.replaceChildren(...lines.map((l) => h('div', null, l)));
    tip.hidden = false;
    const ww = wrap.clientWidth;
    const tw = tip.offsetWidth;
    const left = Math.min(Math.max(4, x + 14), ww - tw - 4);
    tip.style.left = `${left}px`;
    tip.style.top = `${y + 16}px`;
  }

  function click(t: Target | null, x: number) {
    if (!t) return;
    switch (t.kind) {
      case 'span':
        selectedSeq = t.span.seq;
        draw();
        onSelect({ kind: 'span', span: t.span, lane: t.lane, name: data?.functions[String(t.span.func)] ?? `#${t.span.func}` });
        break;
      case 'item':
        selectedSeq = t.item.seq;
        draw();
        onSelect({ kind: 'item', item: t.item });
        break;
      case 'agent':
        onSelect({ kind: 'agent', call: t.call });
        break;
      case 'density':
        view = zoomAt(view, plotWidth(), x - GUTTER, 0.1, bounds);
        changed();
        break;
    }
  }

  let drag: { x: number; view: View; moved: boolean; id: number } | null = null;
  const pos = (ev: MouseEvent) => {
    const r = canvas.getBoundingClientRect();
    return { x: ev.clientX - r.left, y: ev.clientY - r.top };
  };

  canvas.addEventListener('pointerdown', (ev) => {
    if (ev.button !== 0) return;
    const p = pos(ev);
    drag = { x: p.x, view, moved: false, id: ev.pointerId };
    canvas.setPointerCapture(ev.pointerId);
  });
  canvas.addEventListener('pointermove', (ev) => {
    const p = pos(ev);
    if (drag) {
      const dx = p.x - drag.x;
      if (!drag.moved && Math.abs(dx) > 3) drag.moved = true;
      if (drag.moved) {
        tip.hidden = true;
        canvas.style.cursor = 'grabbing';
        view = panBy(drag.view, plotWidth(), dx, bounds);
        changed();
        return;
      }
    }
    hoverX = p.x >= GUTTER ? p.x - GUTTER : null;
    const t = hitTest(p.x, p.y);
    hover = t;
    canvas.style.cursor = t && t.kind !== 'label' ? 'pointer' : 'crosshair';
    showTip(t, p.x, p.y);
    draw();
  });
  const endDrag = (ev: PointerEvent) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    canvas.style.cursor = 'crosshair';
    try {
      canvas.releasePointerCapture(d.id);
    } catch {
      /* already released */
    }
    if (!d.moved && ev.type === 'pointerup') {
      const p = pos(ev);
      click(hitTest(p.x, p.y), p.x);
    }
  };
  canvas.addEventListener('pointerup', endDrag);
  canvas.addEventListener('pointercancel', endDrag);
  canvas.addEventListener('pointerleave', () => {
    hover = null;
    hoverX = null;
    tip.hidden = true;
    draw();
  });
  canvas.addEventListener('dblclick', (ev) => {
    ev.preventDefault();
    reset();
  });
  canvas.addEventListener(
    'wheel',
    (ev) => {
      ev.preventDefault();
      const p = pos(ev);
      const plotW = plotWidth();
      if (Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
        const dx = ev.deltaMode === 1 ? ev.deltaX * 16 : ev.deltaX;
        view = panBy(view, plotW, -dx, bounds);
      } else if (ev.shiftKey) {
        const dy = ev.deltaMode === 1 ? ev.deltaY * 16 : ev.deltaY;
        view = panBy(view, plotW, -dy, bounds);
      } else {
        view = zoomAt(view, plotW, zoomAnchor(Math.max(0, p.x - GUTTER), plotW), wheelFactor(ev.deltaY, ev.deltaMode), bounds);
        changed('zoom');
        return;
      }
      changed();
    },
    { passive: false },
  );
  wrap.addEventListener('keydown', (ev) => {
    const plotW = plotWidth();
    switch (ev.key) {
      case '+':
      case '=':
        keyZoom(0.5);
        break;
      case '-':
      case '_':
        keyZoom(2);
        break;
      case 'ArrowLeft':
        view = panBy(view, plotW, plotW * 0.1, bounds);
        changed();
        break;
      case 'ArrowRight':
        view = panBy(view, plotW, -plotW * 0.1, bounds);
        changed();
        break;
      case '0':
      case 'Home':
        reset();
        break;
      default:
        return;
    }
    ev.preventDefault();
  });

  const ro = new ResizeObserver(() => {
    const w = wrap.clientWidth;
    if (w === lastWidth) return;
    const first = lastWidth === 0;
    lastWidth = w;
    draw();
    if (!first) fetchSoon.call();
  });
  ro.observe(wrap);

  const mq = matchMedia('(prefers-color-scheme: dark)');
  const onScheme = () => {
    dark = mq.matches;
    colors = null;
    draw();
  };
  mq.addEventListener('change', onScheme);

  // Following a running session: at most one refresh a second.
  let pendingEnd: number | undefined;
  const follow = throttle(() => {
    if (destroyed || !followBox.checked) return;
    const newEnd = pendingEnd;
    pendingEnd = undefined;
    if (whole) {
      fetchNow(newEnd === undefined ? {} : { endNs: newEnd });
      return;
    }
    if (newEnd !== undefined) {
      endNs = Math.max(endNs, newEnd);
      updateBounds();
      const next = followEnd(view, endNs, pinned, false);
      if (next !== view) {
        view = clampView(next, bounds);
        draw();
        fetchNow();
      }
    }
  }, 1000);

  // First load as soon as the element is laid out, so the width is known:
  // right after the caller has put it in the page (reading the width lays
  // the page out then), else after the next frame.
  const firstLoad = () => {
    if (destroyed) return;
    if (!wrap.isConnected || wrap.clientWidth === 0) {
      requestAnimationFrame(firstLoad);
      return;
    }
    lastWidth = wrap.clientWidth;
    fetchNow();
    draw();
  };
  queueMicrotask(firstLoad);

  return {
    el,
    firstAnswer,
    eventsGrew(end?: number) {
      if (end !== undefined) {
        if (data && end <= endNs) return; // nothing past what is drawn
        pendingEnd = Math.max(pendingEnd ?? 0, end);
      }
      follow.call();
    },
    setAgentCalls(calls) {
      agentAvailable = calls !== null;
      agentCalls = calls ?? [];
      updateBounds();
      draw(!!data);
    },
    addAgentCall(call) {
      if (agentCalls.some((c) => c.seq === call.seq)) return;
      agentAvailable = true;
      agentCalls = [...agentCalls, call];
      updateBounds();
      if (data) wrap.dataset.agentCalls = String(agentCalls.length);
      draw();
    },
    showCall(call) {
      const start = call.offsetNs;
      const end = agentCallEndNs(call);
      const pad = Math.max((end - start) * 2, viewSpan(view) * 0.05, 1e6);
      whole = false;
      view = clampView({ from: start - pad, to: end + pad }, bounds);
      pinned = showsEnd(view, endNs);
      draw();
      fetchSoon.call();
    },
    setRunning(r) {
      running = r;
      followLabel.hidden = !running;
    },
    select(seqNo) {
      selectedSeq = seqNo;
      draw();
    },
    mark(ns, label = '') {
      marked = ns === null ? null : { ns, label };
      draw();
    },
    destroy() {
      destroyed = true;
      requests.cancel();
      settleFirst(null);
      abort?.abort();
      fetchSoon.cancel();
      follow.cancel();
      ro.disconnect();
      mq.removeEventListener('change', onScheme);
    },
  };
}
