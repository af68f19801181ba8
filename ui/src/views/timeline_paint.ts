// The timeline's paint kit: its colours (read from the page's CSS
// variables, so themes apply) and the pure drawing helpers that need
// nothing of the timeline's state: text cut to a width, the marker glyph
// of each event kind, the axis, the lines across lanes (exits, crashes, a
// marked moment) and the hover cursor. `timeline.ts` owns the state, the
// fetching and the input; these only paint.

export interface Colors {
  bg: string;
  fg: string;
  muted: string;
  grid: string;
  laneBg: string;
  density: string;
  stdout: string;
  stderr: string;
  crash: string;
  logpoint: string;
  snapshot: string;
  exit: string;
  agent: string;
  /** Calls an editor made (strobe dap), on the same lane. */
  editor: string;
  agentError: string;
  select: string;
  spanText: string;
}

/** The timeline's colours, from the CSS variables of `el`. */
export function readColors(el: HTMLElement): Colors {
  const cs = getComputedStyle(el);
  const v = (n: string, d: string) => cs.getPropertyValue(n).trim() || d;
  return {
    bg: v('--tl-bg', '#fff'),
    fg: v('--fg', '#222'),
    muted: v('--muted', '#777'),
    grid: v('--tl-grid', '#e4e4e4'),
    laneBg: v('--tl-lane', '#f6f7f9'),
    density: v('--tl-density', '#8aa'),
    stdout: v('--stdout', '#3a7'),
    stderr: v('--stderr', '#d60'),
    crash: v('--err', '#d22'),
    logpoint: v('--accent', '#36c'),
    snapshot: v('--tl-snapshot', '#85c'),
    exit: v('--muted', '#777'),
    agent: v('--tl-agent', '#5b6'),
    editor: v('--tl-editor', '#c7a'),
    agentError: v('--err', '#d22'),
    select: v('--tl-select', '#000'),
    spanText: v('--tl-span-text', '#111'),
  };
}

/** `text`, cut with an ellipsis to fit `max` pixels. */
export function ellipsize(ctx: CanvasRenderingContext2D, text: string, max: number): string {
  if (ctx.measureText(text).width <= max) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(text.slice(0, mid) + '…').width <= max) lo = mid;
    else hi = mid - 1;
  }
  return lo > 0 ? text.slice(0, lo) + '…' : '';
}

/** The glyph of a marker of `kind` centred at (`x`, `y`). */
export function drawMarker(ctx: CanvasRenderingContext2D, c: Colors, kind: string, x: number, y: number) {
  ctx.beginPath();
  switch (kind) {
    case 'crash':
      ctx.fillStyle = c.crash;
      ctx.moveTo(x, y - 6);
      ctx.lineTo(x + 6, y + 5);
      ctx.lineTo(x - 6, y + 5);
      ctx.closePath();
      ctx.fill();
      return;
    case 'logpoint':
      ctx.fillStyle = c.logpoint;
      ctx.arc(x, y, 4, 0, Math.PI * 2);
      ctx.fill();
      return;
    case 'variable_snapshot':
      ctx.fillStyle = c.snapshot;
      ctx.fillRect(x - 4, y - 4, 8, 8);
      return;
    case 'ui_snapshot':
      // A small screen: what the GUI looked like at that moment.
      ctx.strokeStyle = c.snapshot;
      ctx.lineWidth = 2;
      ctx.strokeRect(x - 5, y - 5, 10, 8);
      ctx.fillStyle = c.snapshot;
      ctx.fillRect(x - 2, y + 4, 4, 2);
      ctx.lineWidth = 1;
      return;
    case 'ui_action':
      // A pointer: the agent acted on the GUI here.
      ctx.fillStyle = c.snapshot;
      ctx.moveTo(x - 4, y - 6);
      ctx.lineTo(x + 5, y + 2);
      ctx.lineTo(x, y + 2);
      ctx.lineTo(x - 4, y + 6);
      ctx.closePath();
      ctx.fill();
      return;
    case 'process_exit':
      ctx.fillStyle = c.exit;
      ctx.fillRect(x - 1, y - 6, 2, 12);
      ctx.fillRect(x, y - 6, 6, 5);
      return;
    default:
      ctx.fillStyle = c.muted;
      ctx.moveTo(x, y - 5);
      ctx.lineTo(x + 5, y);
      ctx.lineTo(x, y + 5);
      ctx.lineTo(x - 5, y);
      ctx.closePath();
      ctx.fill();
  }
}

/** A vertical line at `px` (canvas coordinates) from under the axis to `bottom`; dashed for exits and crashes. */
export function drawLine(ctx: CanvasRenderingContext2D, color: string, px: number, bottom: number, dashed = false, width = 1) {
  const x = Math.round(px) + 0.5;
  ctx.strokeStyle = color;
  ctx.lineWidth = width;
  if (dashed) ctx.setLineDash([3, 3]);
  ctx.beginPath();
  ctx.moveTo(x, 14);
  ctx.lineTo(x, bottom);
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.lineWidth = 1;
}

/** The time axis: a grid line and label per tick, and the gutter's edge. */
export function drawGrid(ctx: CanvasRenderingContext2D, c: Colors, gutter: number, ticks: { x: number; label: string }[], height: number) {
  ctx.strokeStyle = c.grid;
  ctx.lineWidth = 1;
  ctx.fillStyle = c.muted;
  for (const t of ticks) {
    const x = Math.round(gutter + t.x) + 0.5;
    ctx.beginPath();
    ctx.moveTo(x, 14);
    ctx.lineTo(x, height);
    ctx.stroke();
    ctx.fillText(t.label, x + 3, 9);
  }
  ctx.beginPath();
  ctx.moveTo(gutter + 0.5, 0);
  ctx.lineTo(gutter + 0.5, height);
  ctx.stroke();
}

/** The hover cursor at `x` (plot coordinates) with its time in a box at the top. */
export function drawCursor(ctx: CanvasRenderingContext2D, c: Colors, gutter: number, x: number, plotW: number, height: number, label: string) {
  ctx.globalAlpha = 0.6;
  drawLine(ctx, c.muted, gutter + x, height);
  ctx.globalAlpha = 1;
  const px = Math.round(gutter + x) + 0.5;
  const w = ctx.measureText(label).width + 8;
  const lx = Math.min(px + 2, gutter + plotW - w);
  ctx.fillStyle = c.bg;
  ctx.fillRect(lx, 1, w, 16);
  ctx.fillStyle = c.fg;
  ctx.fillText(label, lx + 4, 9);
}

/**
 * A marked moment (a diff's divergence): a solid line across every lane at
 * `x` (plot coordinates) with its label at the top.
 */
export function drawMark(ctx: CanvasRenderingContext2D, c: Colors, gutter: number, x: number, plotW: number, bottom: number, label: string) {
  drawLine(ctx, c.crash, gutter + x, bottom, false, 2);
  const px = Math.round(gutter + x) + 0.5;
  const w = ctx.measureText(label).width + 8;
  // Right of the line, or left of it where the plot ends first.
  const lx = px + 2 + w > gutter + plotW ? px - 2 - w : px + 2;
  ctx.fillStyle = c.crash;
  ctx.fillRect(lx, 15, w, 14);
  ctx.fillStyle = c.bg;
  ctx.fillText(label, lx + 4, 22);
}
