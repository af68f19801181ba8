import { describe, expect, it } from 'vitest';
import { PageCache, pagesFor, scrollTopForRow, virtualWindow } from './virtual';

describe('virtualWindow', () => {
  it('renders only the rows in view plus overscan', () => {
    const w = virtualWindow({ scrollTop: 2400, viewportHeight: 480, rowHeight: 24, total: 10_000, overscan: 5 });
    expect(w.first).toBe(95);
    expect(w.last).toBe(125);
    expect(w.totalHeight).toBe(240_000);
    expect(w.rowTop(100)).toBe(2400);
  });
  it('stops at the ends', () => {
    const top = virtualWindow({ scrollTop: 0, viewportHeight: 480, rowHeight: 24, total: 10, overscan: 5 });
    expect([top.first, top.last]).toEqual([0, 10]);
    const none = virtualWindow({ scrollTop: 0, viewportHeight: 480, rowHeight: 24, total: 0 });
    expect([none.first, none.last, none.totalHeight]).toEqual([0, 0, 0]);
  });
  it('a scroll position past the end shows the last rows', () => {
    const w = virtualWindow({ scrollTop: 1e9, viewportHeight: 240, rowHeight: 24, total: 1000, overscan: 0 });
    expect(w.last).toBe(1000);
    expect(w.first).toBe(990);
  });
  it('maps huge lists proportionally under the height cap', () => {
    const inp = { viewportHeight: 500, rowHeight: 25, total: 10_000_000, overscan: 0, maxHeight: 1_000_000 };
    const w = virtualWindow({ ...inp, scrollTop: 1_000_000 - 500 });
    expect(w.totalHeight).toBe(1_000_000);
    expect(w.last).toBe(10_000_000);
    expect(w.first).toBe(10_000_000 - 20);
    const mid = virtualWindow({ ...inp, scrollTop: (1_000_000 - 500) / 2 });
    expect(mid.first).toBeGreaterThan(4_990_000);
    expect(mid.first).toBeLessThan(5_000_000);
    // Visible rows sit inside the viewport.
    expect(mid.rowTop(mid.first)).toBeLessThanOrEqual((1_000_000 - 500) / 2);
    expect(mid.rowTop(mid.first) + 25).toBeGreaterThan((1_000_000 - 500) / 2);
  });
  it('scrollTopForRow is the inverse', () => {
    const inp = { viewportHeight: 500, rowHeight: 25, total: 10_000_000, overscan: 0, maxHeight: 1_000_000 };
    const st = scrollTopForRow(7_000_000, inp);
    expect(virtualWindow({ ...inp, scrollTop: st }).first).toBe(7_000_000);
    expect(scrollTopForRow(40, { viewportHeight: 100, rowHeight: 20, total: 1000 })).toBe(800);
  });
});

describe('pages', () => {
  it('lists the pages covering a row range', () => {
    expect(pagesFor(0, 10, 500)).toEqual([0]);
    expect(pagesFor(495, 530, 500)).toEqual([0, 1]);
    expect(pagesFor(500, 1000, 500)).toEqual([1]);
    expect(pagesFor(5, 5, 500)).toEqual([]);
  });
  it('PageCache fetches each page once and drops replies of old filters', () => {
    const c = new PageCache<string>(2);
    const g = c.generation;
    expect(c.claim([0, 1])).toEqual([0, 1]);
    expect(c.claim([0, 1, 2])).toEqual([2]);
    expect(c.fill(g, 0, ['a', 'b'])).toBe(true);
    expect(c.row(1)).toBe('b');
    expect(c.row(2)).toBeUndefined();
    const g2 = c.reset();
    expect(c.fill(g, 1, ['c', 'd'])).toBe(false);
    expect(c.row(0)).toBeUndefined();
    expect(c.claim([0])).toEqual([0]);
    c.release(g2, 0);
    expect(c.claim([0])).toEqual([0]);
    c.fill(g2, 0, ['x']);
    c.invalidate(0);
    expect(c.has(0)).toBe(false);
  });
});
