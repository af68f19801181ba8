// The event table's filter form → debug_query arguments, with the mistakes
// a person makes caught before the request (the server still has the last
// word: its 400 messages are shown next to the form too).

import type { QueryArgs } from '../types';

export const EVENT_TYPES = [
  'function_enter',
  'function_exit',
  'stdout',
  'stderr',
  'crash',
  'logpoint',
  'variable_snapshot',
  'process_exit',
  'exception',
  'ui_snapshot',
  'ui_action',
  'stdin',
  'file',
  'net',
  'midi',
  'audio',
  'scenario_step',
] as const;

export interface FilterForm {
  eventType: string;
  fn: string;
  file: string;
  thread: string;
  text: string;
  minDuration: string;
  pid: string;
  timeFrom: string;
  timeTo: string;
}

export const EMPTY_FORM: FilterForm = {
  eventType: '',
  fn: '',
  file: '',
  thread: '',
  text: '',
  minDuration: '',
  pid: '',
  timeFrom: '',
  timeTo: '',
};

export interface FilterError {
  field: keyof FilterForm;
  message: string;
}

export interface FilterResult {
  args: QueryArgs;
  errors: FilterError[];
}

const UNITS: Record<string, number> = {
  ns: 1,
  us: 1e3,
  'µs': 1e3,
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

/**
 * A non-negative duration: "1500" (ns), "250ns", "12us", "12µs", "1.5ms",
 * "2s", "1m". Returns ns, or null when not understood.
 */
export function parseDurationNs(input: string): number | null {
  const s = input.trim().replace(/\s+/g, '');
  const m = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)?$/.exec(s);
  if (!m) return null;
  const v = Number(m[1]) * UNITS[m[2] ?? 'ns'];
  if (!Number.isFinite(v)) return null;
  return Math.round(v);
}

/**
 * A time bound: a duration since session start ("1.5s", "250000" ns) becomes
 * a number of ns; "-5s" (relative to the newest event) is passed on as the
 * string the server understands.
 */
export function parseTimeBound(input: string): number | string | null {
  const s = input.trim().replace(/\s+/g, '');
  if (s.startsWith('-')) {
    const rest = parseDurationNs(s.slice(1));
    if (rest === null || !/[a-zµ]$/.test(s)) return null;
    return s;
  }
  return parseDurationNs(s);
}

/** The form as debug_query arguments, or what is wrong with it. */
export function buildQueryArgs(form: FilterForm): FilterResult {
  const args: QueryArgs = {};
  const errors: FilterError[] = [];
  const t = (v: string) => v.trim();

  if (t(form.eventType)) {
    if ((EVENT_TYPES as readonly string[]).includes(t(form.eventType))) args.eventType = t(form.eventType);
    else errors.push({ field: 'eventType', message: `unknown event type "${t(form.eventType)}"` });
  }
  if (t(form.fn)) args.function = { contains: t(form.fn) };
  if (t(form.file)) args.sourceFile = { contains: t(form.file) };
  if (t(form.thread)) args.threadName = { contains: t(form.thread) };
  if (t(form.text)) args.textContains = t(form.text);

  if (t(form.minDuration)) {
    const ns = parseDurationNs(form.minDuration);
    if (ns === null)
      errors.push({
        field: 'minDuration',
        message: `min duration "${t(form.minDuration)}" is not a duration: use e.g. 1500 (ns), 20us, 1.5ms, 2s`,
      });
    else args.minDurationNs = ns;
  }
  if (t(form.pid)) {
    const p = t(form.pid);
    if (!/^\d+$/.test(p) || Number(p) <= 0 || Number(p) > 2 ** 31)
      errors.push({ field: 'pid', message: `pid "${p}" must be a positive whole number` });
    else args.pid = Number(p);
  }
  for (const key of ['timeFrom', 'timeTo'] as const) {
    const raw = t(form[key]);
    if (!raw) continue;
    const v = parseTimeBound(raw);
    if (v === null)
      errors.push({
        field: key,
        message: `${key === 'timeFrom' ? 'from' : 'to'} time "${raw}" is not understood: use time since start (1.5s, 250ms, 1200 ns) or relative to the newest event (-5s, -250ms)`,
      });
    else args[key] = v;
  }
  if (typeof args.timeFrom === 'number' && typeof args.timeTo === 'number' && args.timeTo < args.timeFrom) {
    errors.push({ field: 'timeTo', message: 'the "to" time is before the "from" time' });
  }
  if (args.minDurationNs !== undefined && args.eventType && args.eventType !== 'function_exit') {
    errors.push({
      field: 'minDuration',
      message: 'min duration only applies to function_exit events: choose that type or clear the duration',
    });
  }
  return { args, errors };
}

/** Whether two argument sets ask for the same rows. */
export function sameArgs(a: QueryArgs, b: QueryArgs): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
