import { describe, expect, it } from 'vitest';
import { Gate, type Timers } from './gate';

/** Timers driven by hand. */
function fakeTimers() {
  let now = 0;
  let next = 1;
  const pending = new Map<number, { at: number; fn: () => void }>();
  const timers: Timers = {
    set: (fn, ms) => {
      pending.set(next, { at: now + ms, fn });
      return next++;
    },
    clear: (h) => {
      pending.delete(h as number);
    },
  };
  const advance = (ms: number) => {
    now += ms;
    for (const [k, t] of [...pending]) {
      if (t.at <= now) {
        pending.delete(k);
        t.fn();
      }
    }
  };
  return { timers, advance, pending };
}

describe('Gate', () => {
  it('holds work until opened, then runs it in order, once', () => {
    const t = fakeTimers();
    const g = new Gate(1500, t.timers);
    const ran: string[] = [];
    g.then(() => ran.push('table'));
    g.then(() => ran.push('output'));
    expect(ran).toEqual([]);
    expect(g.isOpen).toBe(false);
    g.open();
    expect(ran).toEqual(['table', 'output']);
    expect(g.reason).toBe('done');
    g.open();
    t.advance(2000);
    expect(ran).toEqual(['table', 'output']);
    expect(t.pending.size).toBe(0);
  });

  it('runs work at once when already open', () => {
    const g = new Gate(1500, fakeTimers().timers);
    g.open();
    let n = 0;
    g.then(() => n++);
    expect(n).toBe(1);
  });

  it('opens by itself after the cap', () => {
    const t = fakeTimers();
    const g = new Gate(1500, t.timers);
    let n = 0;
    g.then(() => n++);
    t.advance(1499);
    expect(n).toBe(0);
    t.advance(1);
    expect(n).toBe(1);
    expect(g.reason).toBe('cap');
    g.open(); // the awaited answer, late: nothing runs twice
    expect(n).toBe(1);
  });

  it('close drops what waits and never runs later work', () => {
    const t = fakeTimers();
    const g = new Gate(1500, t.timers);
    let n = 0;
    g.then(() => n++);
    g.close();
    t.advance(5000);
    g.open();
    g.then(() => n++);
    expect(n).toBe(0);
    expect(t.pending.size).toBe(0);
  });
});
