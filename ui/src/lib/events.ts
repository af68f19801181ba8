// Reading rendered events (debug_query's shapes) for display, tolerant of
// missing and unexpected fields.

import type { AgentCall, Item, LiveMessage, QueryEvent, Session } from '../types';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The last path component. */
export function baseName(path: string | null | undefined): string {
  if (!path) return '';
  const i = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'));
  return i >= 0 ? path.slice(i + 1) : path;
}

/** "file.c:12", "file.c", or "". */
export function location(file: unknown, line: unknown, full = false): string {
  const f = str(file);
  if (!f) return '';
  const l = num(line);
  return `${full ? f : baseName(f)}${l !== undefined ? `:${l}` : ''}`;
}

/** Any value, compactly on one line (strings unquoted when top-level). */
export function compact(v: unknown, max = 160): string {
  let s: string;
  if (typeof v === 'string') s = v;
  else if (v === undefined) s = '';
  else {
    try {
      s = JSON.stringify(v) ?? String(v);
    } catch {
      s = String(v);
    }
  }
  return s.length > max ? s.slice(0, max - 1) + '…' : s;
}

/** Event types of I/O channels and scenario steps. */
const CHANNEL_TYPES = new Set(['stdin', 'file', 'net', 'midi', 'audio', 'scenario_step']);

/** What the table's "function / text" column shows. */
export function eventSubject(e: QueryEvent): string {
  if (typeof e.function === 'string' && e.function) return e.function;
  // Channel and scenario events carry their own one-line summary (a
  // scenario step's `text` is the step as written).
  if (CHANNEL_TYPES.has(e.eventType) && str(e.summary)) return str(e.summary) as string;
  if (typeof e.text === 'string') return e.text;
  if (e.eventType === 'crash') {
    const sig = str(e.signal) ?? 'crash';
    const fr = crashFrames(e)[0];
    return fr?.fn ? `${sig} in ${fr.fn}` : sig;
  }
  if (e.eventType === 'process_exit') {
    const parts = [str(e.state)];
    if (num(e.exitCode) !== undefined) parts.push(`code ${e.exitCode}`);
    if (str(e.signal)) parts.push(str(e.signal));
    return parts.filter(Boolean).join(', ') || 'process exit';
  }
  if (e.eventType === 'ui_snapshot') {
    const n = (k: string) => (Array.isArray(e[k]) ? (e[k] as unknown[]).length : 0);
    const parts = [`${num(e.nodes) ?? 0} nodes`];
    if (Array.isArray(e.added)) parts.push(`+${n('added')} −${n('removed')} ~${n('changed')}`);
    if (str(e.screenshot)) parts.push('screenshot');
    return parts.join(', ');
  }
  if (e.eventType === 'ui_action') {
    const what = [str(e.action), str(e.node)].filter(Boolean).join(' ');
    const how = str(e.method);
    const seen = e.verified === true ? 'verified' : 'not verified';
    return `${what}${how ? ` by ${how}` : ''}: ${seen}`;
  }
  for (const k of ['message', 'label', 'name']) if (str(e[k])) return str(e[k]) as string;
  return '';
}

export function threadOf(e: QueryEvent): string {
  const name = str(e.threadName);
  const tid = num(e.threadId) ?? num(e.tid);
  if (name && tid !== undefined) return `${name} (${tid})`;
  if (name) return name;
  if (tid !== undefined && tid !== 0) return String(tid);
  return '';
}

export interface Frame {
  fn: string;
  file?: string;
  line?: number;
  address?: string;
  module?: string;
}

/** A backtrace / stack frame, from an object of any of the usual spellings or a string. */
export function toFrame(f: unknown): Frame {
  if (typeof f === 'string') {
    // "name (file:line)" as the stuck detector writes frames.
    const m = /^(.+?) \(([^()]+?)(?::(\d+))?\)$/.exec(f.trim());
    if (!m) return { fn: f };
    return m[3] !== undefined ? { fn: m[1], file: m[2], line: Number(m[3]) } : { fn: m[1], module: m[2] };
  }
  if (!isObj(f)) return { fn: compact(f) };
  return {
    fn: str(f.function) ?? str(f.name) ?? str(f.symbol) ?? '??',
    file: str(f.file) ?? str(f.sourceFile),
    line: num(f.line),
    address: str(f.address) ?? (num(f.address) !== undefined ? `0x${(f.address as number).toString(16)}` : undefined),
    module: str(f.module),
  };
}

export function crashFrames(e: Record<string, unknown>): Frame[] {
  const bt = e.backtrace ?? e.frames ?? e.stack;
  return Array.isArray(bt) ? bt.map(toFrame) : [];
}

export interface CrashInfo {
  signal: string;
  faultAddress?: string;
  cause?: string;
  operation?: string;
  kind?: string;
  frames: Frame[];
  registers?: Record<string, unknown>;
  locals?: unknown[] | Record<string, unknown>;
  localsFrame?: string;
}

/** The parts of a crash event worth a panel, whatever it names them. */
export function crashInfo(e: Record<string, unknown>): CrashInfo {
  const mem = isObj(e.memory) ? e.memory : {};
  const frame = isObj(e.frame) ? e.frame : undefined;
  const locals = e.locals ?? frame?.locals;
  return {
    signal: str(e.signal) ?? 'crash',
    faultAddress: str(e.faultAddress) ?? str(mem.address) ?? str(e.address),
    cause: str(mem.cause),
    operation: str(mem.operation),
    kind: str(e.kind),
    frames: crashFrames(e),
    registers: isObj(e.registers) ? e.registers : undefined,
    locals: Array.isArray(locals) || isObj(locals) ? (locals as unknown[] | Record<string, unknown>) : undefined,
    localsFrame: frame ? location(frame.file, frame.line) && `${str(frame.function) ?? '?'} at ${location(frame.file, frame.line)}` : undefined,
  };
}

export interface NamedValue {
  name: string;
  type?: string;
  value: unknown;
}

/** Arguments / locals / watches as name-type-value rows, from an array of {name,type,value} or a plain object. */
export function namedValues(v: unknown): NamedValue[] {
  if (Array.isArray(v)) {
    return v.map((x, i) =>
      isObj(x) && ('value' in x || 'name' in x)
        ? { name: str(x.name) ?? `#${i}`, type: str(x.type), value: x.value }
        : { name: `#${i}`, value: x },
    );
  }
  if (isObj(v)) return Object.entries(v).map(([name, value]) => ({ name, value }));
  return [];
}

/** A WebSocket message, or null when it is not one this UI knows. */
export function parseLiveMessage(data: unknown): LiveMessage | null {
  if (typeof data !== 'string') return null;
  let m: unknown;
  try {
    m = JSON.parse(data);
  } catch {
    return null;
  }
  if (!isObj(m)) return null;
  switch (m.type) {
    case 'status':
    case 'ended':
      return isObj(m.status) && typeof m.status.sessionId === 'string'
        ? { type: m.type, status: m.status as Session }
        : null;
    case 'output':
      return Array.isArray(m.items)
        ? {
            type: 'output',
            items: m.items.filter((i): i is Item => isObj(i) && typeof i.text === 'string'),
            skipped: num(m.skipped) ?? 0,
          }
        : null;
    case 'events':
      return { type: 'events', stored: num(m.stored) ?? 0, endNs: num(m.endNs) ?? 0 };
    case 'error':
      return { type: 'error', message: typeof m.message === 'string' ? m.message : 'the live stream failed' };
    case 'agent':
      return isObj(m.call) && typeof m.call.tool === 'string' ? { type: 'agent', call: m.call as unknown as AgentCall } : null;
    default:
      return null;
  }
}

/** States in which a session can still change. */
export function isRunning(state: string | undefined): boolean {
  return state === 'running' || state === 'paused' || state === 'starting';
}
