import { describe, expect, it } from 'vitest';
import { baseName, compact, crashInfo, eventSubject, location, namedValues, parseLiveMessage, threadOf, toFrame } from './events';

describe('event display helpers', () => {
  it('shortens paths and formats file:line', () => {
    expect(baseName('/a/b/trace_c.c')).toBe('trace_c.c');
    expect(location('/a/b/trace_c.c', 11)).toBe('trace_c.c:11');
    expect(location('/a/b/trace_c.c', null, true)).toBe('/a/b/trace_c.c');
    expect(location(null, 3)).toBe('');
  });
  it('sums a ui_snapshot up: nodes, changes, screenshot', () => {
    const base = { id: 1, timestampNs: 0, eventType: 'ui_snapshot' };
    expect(eventSubject({ ...base, nodes: 23 })).toBe('23 nodes');
    expect(
      eventSubject({ ...base, nodes: 25, added: ['a', 'b'], removed: [], changed: ['c'], screenshot: '/s.png' }),
    ).toBe('25 nodes, +2 −0 ~1, screenshot');
  });
  it('says what a ui_action did and whether it was seen to work', () => {
    const base = { id: 1, timestampNs: 0, eventType: 'ui_action' };
    expect(eventSubject({ ...base, action: 'click', node: 'btn#1', method: 'native action (click)', verified: true })).toBe(
      'click btn#1 by native action (click): verified',
    );
    expect(eventSubject({ ...base, action: 'key', verified: false })).toBe('key: not verified');
  });
  it('shows a channel or scenario event by its summary', () => {
    const net = { id: 1, timestampNs: 0, eventType: 'net', channel: 'net:8080', dir: 'sent', summary: 'GET /x → 500' };
    expect(eventSubject(net)).toBe('GET /x → 500');
    expect(eventSubject({ id: 2, timestampNs: 0, eventType: 'scenario_step', summary: 's step 1/2 passed: x' })).toBe(
      's step 1/2 passed: x',
    );
    // A step's `text` is the step as written: the summary says how it went.
    const step = { id: 3, timestampNs: 0, eventType: 'scenario_step', text: '{"do":"stdio.send"}', summary: 'step 2/3 passed' };
    expect(eventSubject(step)).toBe('step 2/3 passed');
  });
  it('picks the subject by event type', () => {
    expect(eventSubject({ id: 1, timestampNs: 0, eventType: 'function_exit', function: 'add' })).toBe('add');
    expect(eventSubject({ id: 1, timestampNs: 0, eventType: 'stdout', text: 'hello' })).toBe('hello');
    expect(
      eventSubject({ id: 1, timestampNs: 0, eventType: 'crash', signal: 'SIGSEGV', backtrace: [{ name: 'write_through' }] }),
    ).toBe('SIGSEGV in write_through');
    expect(eventSubject({ id: 1, timestampNs: 0, eventType: 'process_exit', state: 'exited', exitCode: 0 })).toBe('exited, code 0');
    expect(eventSubject({ id: 1, timestampNs: 0, eventType: 'mystery' })).toBe('');
  });
  it('names threads', () => {
    expect(threadOf({ id: 1, timestampNs: 0, eventType: 'x', threadName: 'main', threadId: 5 })).toBe('main (5)');
    expect(threadOf({ id: 1, timestampNs: 0, eventType: 'stdout', threadId: 0 })).toBe('');
  });
  it('compacts values', () => {
    expect(compact({ a: 1 })).toBe('{"a":1}');
    expect(compact('x'.repeat(10), 5)).toBe('xxxx…');
    expect(compact(undefined)).toBe('');
  });
  it('reads frames in any spelling', () => {
    expect(toFrame('main+0x10')).toEqual({ fn: 'main+0x10' });
    expect(toFrame('transfer (/p/dl.c:5)')).toEqual({ fn: 'transfer', file: '/p/dl.c', line: 5 });
    expect(toFrame('_start (dl)')).toEqual({ fn: '_start', module: 'dl' });
    expect(toFrame({ function: 'f', file: 'a.c', line: 3 })).toMatchObject({ fn: 'f', file: 'a.c', line: 3 });
    expect(toFrame({ name: 'g', address: 4096 })).toMatchObject({ fn: 'g', address: '0x1000' });
  });
  it('reads a crash event as the daemon renders it', () => {
    const c = crashInfo({
      signal: 'SIGSEGV',
      address: '0x556d6cb501c3',
      memory: { operation: 'write', address: '0x0', cause: 'null pointer' },
      registers: { pc: '0x1' },
      backtrace: [{ address: '0x5', module: 'crash', name: 'write_through', file: '/x/crash.c', line: 17 }],
      frame: { function: 'write_through', file: '/x/crash.c', line: 17, locals: [{ name: 'p', type: 'int *', value: null }] },
    });
    expect(c.signal).toBe('SIGSEGV');
    expect(c.faultAddress).toBe('0x0');
    expect(c.operation).toBe('write');
    expect(c.frames[0]).toMatchObject({ fn: 'write_through', line: 17 });
    expect(c.registers).toEqual({ pc: '0x1' });
    expect(namedValues(c.locals)).toEqual([{ name: 'p', type: 'int *', value: null }]);
    expect(c.localsFrame).toBe('write_through at crash.c:17');
    expect(crashInfo({ faultAddress: '0x10' }).faultAddress).toBe('0x10');
    expect(crashInfo({}).frames).toEqual([]);
  });
  it('reads named values from arrays and objects', () => {
    expect(namedValues([{ name: 'a', type: 'int', value: 0 }, 5])).toEqual([
      { name: 'a', type: 'int', value: 0 },
      { name: '#1', value: 5 },
    ]);
    expect(namedValues({ x: 1 })).toEqual([{ name: 'x', value: 1 }]);
    expect(namedValues(null)).toEqual([]);
  });
});

describe('parseLiveMessage', () => {
  it('accepts the known message types', () => {
    expect(parseLiveMessage('{"type":"events","stored":5,"endNs":99}')).toEqual({ type: 'events', stored: 5, endNs: 99 });
    const out = parseLiveMessage(
      JSON.stringify({ type: 'output', items: [{ tsNs: 1, kind: 'stdout', seq: 3, pid: 1, tid: 0, text: 'hi' }, { bad: 1 }] }),
    );
    expect(out).toMatchObject({ type: 'output', skipped: 0 });
    expect(out && out.type === 'output' && out.items.length).toBe(1);
    expect(parseLiveMessage('{"type":"ended","status":{"sessionId":"s","state":"exited"}}')).toMatchObject({ type: 'ended' });
    expect(parseLiveMessage('{"type":"agent","call":{"tool":"debug_query","seq":1,"offsetNs":0,"durationMs":1}}')).toMatchObject({
      type: 'agent',
    });
  });
  it('passes stream errors on', () => {
    expect(parseLiveMessage('{"type":"error","message":"session deleted"}')).toEqual({ type: 'error', message: 'session deleted' });
    expect(parseLiveMessage('{"type":"error"}')).toMatchObject({ type: 'error' });
  });
  it('ignores junk and unknown types', () => {
    expect(parseLiveMessage('not json')).toBeNull();
    expect(parseLiveMessage('{"type":"future"}')).toBeNull();
    expect(parseLiveMessage('{"type":"status"}')).toBeNull();
    expect(parseLiveMessage(42)).toBeNull();
  });
});
