import { describe, expect, it } from 'vitest';
import { EMPTY_FORM, buildQueryArgs, parseDurationNs, parseTimeBound } from './filters';

describe('parseDurationNs', () => {
  it('understands ns and unit suffixes', () => {
    expect(parseDurationNs('1500')).toBe(1500);
    expect(parseDurationNs('250ns')).toBe(250);
    expect(parseDurationNs('12us')).toBe(12_000);
    expect(parseDurationNs('12µs')).toBe(12_000);
    expect(parseDurationNs(' 1.5 ms ')).toBe(1_500_000);
    expect(parseDurationNs('2s')).toBe(2e9);
    expect(parseDurationNs('1m')).toBe(60e9);
  });
  it('rejects junk', () => {
    for (const bad of ['', 'abc', '-5', '5 sec', '1.2.3ms', 'ms']) expect(parseDurationNs(bad)).toBeNull();
  });
});

describe('parseTimeBound', () => {
  it('turns absolute times into ns and passes relative ones on', () => {
    expect(parseTimeBound('1.5s')).toBe(1_500_000_000);
    expect(parseTimeBound('42')).toBe(42);
    expect(parseTimeBound('-5s')).toBe('-5s');
    expect(parseTimeBound('-250ms')).toBe('-250ms');
  });
  it('rejects a relative time without a unit', () => {
    expect(parseTimeBound('-5')).toBeNull();
    expect(parseTimeBound('yesterday')).toBeNull();
  });
});

describe('buildQueryArgs', () => {
  it('an empty form asks for everything', () => {
    expect(buildQueryArgs(EMPTY_FORM)).toEqual({ args: {}, errors: [] });
  });
  it('maps every field to debug_query arguments', () => {
    const r = buildQueryArgs({
      eventType: 'function_exit',
      fn: ' fib ',
      file: 'trace_c.c',
      thread: 'worker',
      text: 'tick',
      minDuration: '1ms',
      pid: '25329',
      timeFrom: '0.5s',
      timeTo: '-1s',
    });
    expect(r.errors).toEqual([]);
    expect(r.args).toEqual({
      eventType: 'function_exit',
      function: { contains: 'fib' },
      sourceFile: { contains: 'trace_c.c' },
      threadName: { contains: 'worker' },
      textContains: 'tick',
      minDurationNs: 1_000_000,
      pid: 25329,
      timeFrom: 500_000_000,
      timeTo: '-1s',
    });
  });
  it('reports each bad field with an actionable message', () => {
    const r = buildQueryArgs({ ...EMPTY_FORM, minDuration: 'slow', pid: '-3', timeFrom: 'soon', eventType: 'nope' });
    const fields = r.errors.map((e) => e.field).sort();
    expect(fields).toEqual(['eventType', 'minDuration', 'pid', 'timeFrom']);
    expect(r.errors.find((e) => e.field === 'minDuration')!.message).toMatch(/1\.5ms/);
    expect(r.args.pid).toBeUndefined();
  });
  it('catches a reversed time range and a duration on the wrong type', () => {
    expect(buildQueryArgs({ ...EMPTY_FORM, timeFrom: '2s', timeTo: '1s' }).errors[0].field).toBe('timeTo');
    expect(buildQueryArgs({ ...EMPTY_FORM, eventType: 'stdout', minDuration: '5us' }).errors[0].field).toBe('minDuration');
    expect(buildQueryArgs({ ...EMPTY_FORM, eventType: 'function_exit', minDuration: '5us' }).errors).toEqual([]);
  });
});
