import { describe, expect, it } from 'vitest';
import { failures, runCounts, runVerdict, stuckEntries } from './testruns';

const completed = {
  testRunId: 'r1',
  status: 'completed',
  framework: 'cargo',
  summary: { passed: 10, failed: 2, skipped: 1, stuck: 1, durationMs: 5000 },
  exitCode: 101,
  failures: [
    { name: 'parser::bad', message: 'assertion failed', file: 'src/p.rs', line: 12, rerun: 'cargo test parser::bad', suggestedTraces: ['p'] },
    'weird',
  ],
  stuck: [
    {
      name: 'net::hangs',
      verdict: 'deadlock',
      diagnosis: 'Deadlock: 0% CPU',
      threads: [{ tid: 5, name: 'net::hangs', state: 'futex', stack: ['pthread_mutex_lock', 'net::hangs at src/net.rs:9'] }],
    },
  ],
};

describe('test runs', () => {
  it('counts a completed run from its summary', () => {
    expect(runCounts(completed)).toEqual({ passed: 10, failed: 2, skipped: 1, stuck: 1 });
    expect(runVerdict(completed)).toBe('stuck');
    expect(runVerdict({ ...completed, stuck: [], summary: { passed: 1, failed: 1 } })).toBe('failed');
    expect(runVerdict({ status: 'completed', summary: { passed: 3 }, exitCode: 0 })).toBe('passed');
    expect(runVerdict({ status: 'completed', summary: {}, exitCode: 0, noTests: true })).toBe('no tests');
    expect(runVerdict({ status: 'completed', summary: {}, error: 'did not build' })).toBe('error');
  });
  it('counts a running run from its progress and stuck list', () => {
    const running = { status: 'running', progress: { passed: 4, failed: 1, skipped: 0 }, stuck: [{}, {}] };
    expect(runCounts(running)).toEqual({ passed: 4, failed: 1, skipped: 0, stuck: 2 });
    expect(runVerdict(running)).toBe('running');
    expect(runCounts({})).toEqual({ passed: 0, failed: 0, skipped: 0, stuck: 0 });
  });
  it('reads failures, keeping unknown fields', () => {
    const f = failures(completed);
    expect(f[0]).toMatchObject({ name: 'parser::bad', file: 'src/p.rs', line: 12, rerun: 'cargo test parser::bad' });
    expect(f[0].extra).toEqual({ suggestedTraces: ['p'] });
    expect(f[1].name).toBe('weird');
    expect(failures({ failuresSoFar: [{ name: 'x' }] })[0].name).toBe('x');
  });
  it('reads stuck tests with their stacks', () => {
    const s = stuckEntries(completed);
    expect(s[0].name).toBe('net::hangs');
    expect(s[0].threads[0].title).toBe('net::hangs (5)');
    expect(s[0].threads[0].state).toBe('futex');
    expect(s[0].threads[0].frames.map((f) => f.fn)).toEqual(['pthread_mutex_lock', 'net::hangs at src/net.rs:9']);
    const parsed = stuckEntries({ stuck: [{ name: 'dl', threads: [{ tid: 1, stack: ['main (/p/dl.c:9)'] }] }] });
    expect(parsed[0].threads[0].frames[0]).toEqual({ fn: 'main', file: '/p/dl.c', line: 9 });
  });
  it('falls back to per-process threads, stacks of frames, and errors', () => {
    const s = stuckEntries({
      stuck: [
        { test: 't', reason: 'timeout', processes: [{ threads: [[{ function: 'f', file: 'a.c', line: 1 }]] }] },
        { name: 'u', threads: { error: 'ptrace denied' } },
      ],
    });
    expect(s[0]).toMatchObject({ name: 't', diagnosis: 'timeout' });
    expect(s[0].threads[0].frames[0]).toMatchObject({ fn: 'f', file: 'a.c', line: 1 });
    expect(s[1].error).toBe('ptrace denied');
  });
});
