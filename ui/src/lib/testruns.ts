// Reading debug_test status objects (running or completed) for the tests
// view. Shapes vary by framework and daemon version, so every read is
// defensive.

import { toFrame, type Frame } from './events';

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export interface RunCounts {
  passed: number;
  failed: number;
  skipped: number;
  stuck: number;
}

/** Pass/fail/skip/stuck counts of a run, running or completed. */
export function runCounts(run: Record<string, unknown>): RunCounts {
  const s = isObj(run.summary) ? run.summary : isObj(run.progress) ? run.progress : {};
  const stuckList = Array.isArray(run.stuck) ? run.stuck.length : 0;
  const stuck = typeof s.stuck === 'number' ? num(s.stuck) : stuckList;
  return { passed: num(s.passed), failed: num(s.failed), skipped: num(s.skipped), stuck };
}

/** "running", "passed", "failed", "stuck", "error" or the raw status. */
export function runVerdict(run: Record<string, unknown>): string {
  const status = str(run.status) ?? 'unknown';
  if (status === 'running') return 'running';
  if (status !== 'completed') return status;
  const c = runCounts(run);
  if (str(run.error)) return 'error';
  if (c.stuck > 0) return 'stuck';
  if (c.failed > 0) return 'failed';
  if (typeof run.exitCode === 'number' && run.exitCode !== 0) return 'failed';
  if (run.noTests) return 'no tests';
  return 'passed';
}

export interface Failure {
  name: string;
  message?: string;
  file?: string;
  line?: number;
  rerun?: string;
  extra: Record<string, unknown>;
}

export function failures(run: Record<string, unknown>): Failure[] {
  const list = Array.isArray(run.failures) ? run.failures : Array.isArray(run.failuresSoFar) ? run.failuresSoFar : [];
  return list.map((f) => {
    if (!isObj(f)) return { name: String(f), extra: {} };
    const { name, message, file, line, rerun, ...extra } = f;
    return {
      name: str(name) ?? '(unnamed test)',
      message: str(message) || undefined,
      file: str(file),
      line: typeof line === 'number' ? line : undefined,
      rerun: str(rerun),
      extra,
    };
  });
}

export interface StuckThread {
  title: string;
  state?: string;
  frames: Frame[];
}

export interface StuckEntry {
  name: string;
  verdict?: string;
  diagnosis?: string;
  threads: StuckThread[];
  error?: string;
  extra: Record<string, unknown>;
}

function threadsOf(v: unknown): { threads: StuckThread[]; error?: string } {
  if (isObj(v) && typeof v.error === 'string') return { threads: [], error: v.error };
  if (!Array.isArray(v)) return { threads: [] };
  return {
    threads: v.map((t, i) => {
      if (Array.isArray(t)) return { title: `thread ${i + 1}`, frames: t.map(toFrame) };
      if (!isObj(t)) return { title: `thread ${i + 1}`, frames: [toFrame(t)] };
      const name = str(t.name);
      const tid = typeof t.tid === 'number' ? t.tid : undefined;
      const title = name && tid !== undefined ? `${name} (${tid})` : name ?? (tid !== undefined ? `tid ${tid}` : `thread ${i + 1}`);
      const stack = t.stack ?? t.frames ?? t.backtrace;
      return { title, state: str(t.state), frames: Array.isArray(stack) ? stack.map(toFrame) : [] };
    }),
  };
}

/** Stuck tests with their threads' stacks. */
export function stuckEntries(run: Record<string, unknown>): StuckEntry[] {
  const list = Array.isArray(run.stuck) ? run.stuck : [];
  return list.map((s) => {
    if (!isObj(s)) return { name: String(s), threads: [], extra: {} };
    const { name, test, verdict, diagnosis, reason, threads, ...extra } = s;
    let t = threadsOf(threads);
    if (!t.threads.length && Array.isArray(extra.processes)) {
      const all: StuckThread[] = [];
      for (const p of extra.processes) if (isObj(p)) all.push(...threadsOf(p.threads).threads);
      t = { threads: all, error: t.error };
    }
    return {
      name: str(name) ?? str(test) ?? '(unknown test)',
      verdict: str(verdict),
      diagnosis: str(diagnosis) ?? str(reason),
      threads: t.threads,
      error: t.error,
      extra,
    };
  });
}
