import { describe, expect, it } from 'vitest';
import { RingBuffer } from './ring';
import { OutputLog } from './output';
import type { Item } from '../types';

describe('RingBuffer', () => {
  it('keeps the newest items in order', () => {
    const r = new RingBuffer<number>(3);
    expect(r.push(1)).toBeUndefined();
    r.push(2);
    r.push(3);
    expect(r.push(4)).toBe(1);
    expect(r.toArray()).toEqual([2, 3, 4]);
    expect(r.length).toBe(3);
    expect(r.at(0)).toBe(2);
    expect(r.last()).toBe(4);
    expect(r.dropped).toBe(1);
  });
  it('pushAll says how many fell out', () => {
    const r = new RingBuffer<number>(5);
    expect(r.pushAll([1, 2, 3])).toBe(0);
    expect(r.pushAll([4, 5, 6, 7, 8, 9, 10, 11])).toBe(6);
    expect(r.toArray()).toEqual([7, 8, 9, 10, 11]);
    r.clear();
    expect(r.toArray()).toEqual([]);
    expect(r.at(0)).toBeUndefined();
  });
  it('rejects a bad capacity', () => {
    expect(() => new RingBuffer(0)).toThrow();
  });
  it('holds 5000 lines of 12000 pushed', () => {
    const r = new RingBuffer<number>(5000);
    for (let i = 0; i < 12000; i++) r.push(i);
    expect(r.length).toBe(5000);
    expect(r.at(0)).toBe(7000);
    expect(r.last()).toBe(11999);
  });
});

const line = (seq: number, kind = 'stdout'): Item => ({ seq, kind, tsNs: seq * 10, pid: 1, tid: 0, text: `l${seq}` });

describe('OutputLog', () => {
  it('takes each line once, in sequence order', () => {
    const log = new OutputLog(10);
    expect(log.add([line(2), line(1)]).added.map((i) => i.seq)).toEqual([1, 2]);
    expect(log.add([line(2), line(3), line(3)]).added.map((i) => i.seq)).toEqual([3]);
    expect(log.ring.toArray().map((i) => i.seq)).toEqual([1, 2, 3]);
  });
  it('reports lines pushed out of the buffer', () => {
    const log = new OutputLog(3);
    log.add([line(1), line(2)]);
    const r = log.add([line(3), line(4), line(5)]);
    expect(r.removed).toBe(2);
    expect(log.ring.toArray().map((i) => i.seq)).toEqual([3, 4, 5]);
  });
});
