// Where each timeline lane sits vertically: thread lanes get a density
// strip (calls too narrow to draw) and one row per nesting depth; the
// output, marker, channel and agent lanes are one strip each.

export type LaneKind = 'thread' | 'output' | 'markers' | 'channel' | 'agent';

export interface LaneSpec {
  kind: LaneKind;
  key: string;
  label: string;
  /** Deepest nesting (0-based) for thread lanes. */
  maxDepth?: number;
}

/** The I/O channel lanes in drawing order (the server's). */
export const CHANNEL_ORDER = ['stdin', 'file', 'net', 'midi', 'audio', 'ui', 'scenario'];

/** The lane key of channel `name`. */
export const channelKey = (name: string) => `c:${name}`;

/** Lanes of the channels seen so far, in CHANNEL_ORDER (unknown names last). */
export function channelSpecs(seen: Iterable<string>): LaneSpec[] {
  const rank = (n: string) => (CHANNEL_ORDER.includes(n) ? CHANNEL_ORDER.indexOf(n) : CHANNEL_ORDER.length);
  return [...seen]
    .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
    .map((name) => ({ kind: 'channel', key: channelKey(name), label: `channel ${name}` }));
}

export interface LaneMetrics {
  /** Height of one nesting row. */
  rowHeight: number;
  /** Height of a thread lane's density strip. */
  densityHeight: number;
  /** Height of the output / markers / agent strips. */
  stripHeight: number;
  /** Space between lanes. */
  gap: number;
  /** y of the first lane (below the axis). */
  top: number;
  /** Rows drawn at most per lane (deeper nesting is clipped). */
  maxRows: number;
}

export const DEFAULT_METRICS: LaneMetrics = {
  rowHeight: 15,
  densityHeight: 12,
  stripHeight: 18,
  gap: 5,
  top: 24,
  maxRows: 24,
};

export interface LaneBox extends LaneSpec {
  y: number;
  height: number;
  /** y of nesting row 0 (thread lanes), else y. */
  rowsY: number;
  /** Rows drawn (thread lanes). */
  rows: number;
}

export interface LaneLayout {
  lanes: LaneBox[];
  height: number;
}

export function layoutLanes(specs: LaneSpec[], m: LaneMetrics = DEFAULT_METRICS): LaneLayout {
  let y = m.top;
  const lanes: LaneBox[] = [];
  for (const s of specs) {
    let height: number;
    let rowsY = y;
    let rows = 0;
    if (s.kind === 'thread') {
      rows = Math.min(Math.max(0, Math.floor(s.maxDepth ?? 0)) + 1, m.maxRows);
      rowsY = y + m.densityHeight;
      height = m.densityHeight + rows * m.rowHeight;
    } else {
      height = m.stripHeight;
    }
    lanes.push({ ...s, y, height, rowsY, rows });
    y += height + m.gap;
  }
  return { lanes, height: y };
}

/** y of a span at `depth` in a thread lane, or null when clipped. */
export function spanY(lane: LaneBox, depth: number, m: LaneMetrics = DEFAULT_METRICS): number | null {
  if (lane.kind !== 'thread' || depth < 0 || depth >= lane.rows) return null;
  return lane.rowsY + depth * m.rowHeight;
}

/** The lane under y, or -1. */
export function laneAt(layout: LaneLayout, y: number): number {
  return layout.lanes.findIndex((l) => y >= l.y && y < l.y + l.height);
}

/** Nesting row under y in a thread lane, or -1 (density strip, other lanes). */
export function depthAt(lane: LaneBox, y: number, m: LaneMetrics = DEFAULT_METRICS): number {
  if (lane.kind !== 'thread' || y < lane.rowsY) return -1;
  const d = Math.floor((y - lane.rowsY) / m.rowHeight);
  return d < lane.rows ? d : -1;
}

/** A thread lane's label: its name (or tid), with the pid when several processes show. */
export function threadLabel(l: { pid: number; tid: number; name: string | null }, multiProcess: boolean): string {
  const base = l.name ? `${l.name} (${l.tid})` : `tid ${l.tid}`;
  return multiProcess ? `${base} · pid ${l.pid}` : base;
}
