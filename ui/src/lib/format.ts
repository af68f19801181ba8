// Human-readable numbers: durations, sizes, clock times, tick labels.

/** Rounds to `digits` significant digits and drops trailing zeros. */
function sig(v: number, digits = 3): string {
  if (v === 0) return '0';
  const p = Number(v.toPrecision(digits));
  // toPrecision may give exponent notation for big values; Number() fixes it.
  return String(p);
}

/** A duration in nanoseconds: "850 ns", "12.3 µs", "4.56 ms", "1.23 s", "2 m 05 s". */
export function formatDuration(ns: number | null | undefined): string {
  if (ns === null || ns === undefined || !Number.isFinite(ns)) return '—';
  if (ns < 0) return '-' + formatDuration(-ns);
  if (ns < 1e3) return `${Math.round(ns)} ns`;
  if (ns < 1e6) return `${sig(ns / 1e3)} µs`;
  if (ns < 1e9) return `${sig(ns / 1e6)} ms`;
  if (ns < 60e9) return `${sig(ns / 1e9)} s`;
  const totalS = Math.round(ns / 1e9);
  const h = Math.floor(totalS / 3600);
  const m = Math.floor((totalS % 3600) / 60);
  const s = totalS % 60;
  const ss = String(s).padStart(2, '0');
  if (h > 0) return `${h} h ${String(m).padStart(2, '0')} m ${ss} s`;
  return `${m} m ${ss} s`;
}

/** A duration in milliseconds (agent calls, test runs). */
export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  return formatDuration(ms * 1e6);
}

/** A size in bytes: "512 B", "1.5 KiB", "3.2 MiB". */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n) || n < 0) return '—';
  if (n < 1024) return `${Math.round(n)} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = -1;
  do {
    v /= 1024;
    i++;
  } while (v >= 1024 && i < units.length - 1);
  return `${v >= 100 ? Math.round(v) : sig(v, 3)} ${units[i]}`;
}

/** An integer with thousands separators, for display (data-* attributes keep the plain number). */
export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  return Math.round(n).toLocaleString('en-US');
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/** Epoch ms as local "YYYY-MM-DD HH:MM:SS". */
export function formatClock(epochMs: number | null | undefined): string {
  if (epochMs === null || epochMs === undefined || !Number.isFinite(epochMs)) return '—';
  const d = new Date(epochMs);
  return (
    `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ` +
    `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`
  );
}

/** How long ago, coarse: "just now", "42 s ago", "5 min ago", "3 h ago", "2 d ago". */
export function formatAgo(epochMs: number, nowMs: number): string {
  const s = Math.round((nowMs - epochMs) / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export interface AxisUnit {
  div: number;
  unit: string;
  decimals: number;
}

/**
 * One unit for a whole time axis whose ticks are `stepNs` apart and which
 * reaches `maxNs`: the largest in which the step needs at most 3 decimals
 * and the axis's end is at least 1, so "1.25 s" with 50 ms steps,
 * "1250.5 ms" with 500 µs steps, "3 µs" near the start of a session.
 */
export function axisUnit(stepNs: number, maxNs: number): AxisUnit {
  const units: [number, string][] = [
    [1e9, 's'],
    [1e6, 'ms'],
    [1e3, 'µs'],
    [1, 'ns'],
  ];
  let [div, unit] = units[units.length - 1];
  for (const [d, u] of units) {
    if (stepNs / d >= 0.001 - 1e-12 && Math.abs(maxNs) / d >= 1) {
      [div, unit] = [d, u];
      break;
    }
  }
  const decimals = Math.max(0, Math.min(6, Math.ceil(-Math.log10(stepNs / div) - 1e-9)));
  return { div, unit, decimals };
}

/**
 * A label for `ns` on an axis with ticks `stepNs` apart reaching `maxNs`;
 * `extra` decimals for finer readouts (the cursor) in the same unit.
 */
export function formatTick(ns: number, stepNs: number, maxNs: number = ns, extra = 0): string {
  const u = axisUnit(stepNs, maxNs);
  return `${(ns / u.div).toFixed(Math.min(9, u.decimals + extra))} ${u.unit}`;
}

/** An event's time since session start, precise enough for a table: "1.234567 s". */
export function formatTimestamp(ns: number | null | undefined): string {
  if (ns === null || ns === undefined || !Number.isFinite(ns)) return '—';
  return `${(ns / 1e9).toFixed(6)} s`;
}
