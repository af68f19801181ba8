import { describe, expect, it } from 'vitest';
import { clampView, followEnd, niceStep, nsAt, panBy, showsEnd, ticks, wheelFactor, xOf, zoomAt } from './scale';

const B = { min: 0, max: 1_000_000 };

describe('time ↔ pixel', () => {
  it('maps both ways', () => {
    const v = { from: 1000, to: 2000 };
    expect(xOf(v, 500, 1500)).toBe(250);
    expect(nsAt(v, 500, 250)).toBe(1500);
    expect(nsAt(v, 500, xOf(v, 500, 1234))).toBeCloseTo(1234);
  });
});

describe('zoomAt', () => {
  it('keeps the time under the cursor in place', () => {
    const v = { from: 0, to: 1_000_000 };
    const x = 300;
    const before = nsAt(v, 1000, x);
    const z = zoomAt(v, 1000, x, 0.5, B);
    expect(z.to - z.from).toBeCloseTo(500_000);
    expect(nsAt(z, 1000, x)).toBeCloseTo(before);
  });
  it('zooming in then out by the inverse factor comes back', () => {
    const v = { from: 200_000, to: 600_000 };
    const z = zoomAt(zoomAt(v, 800, 123, 0.25, B), 800, 123, 4, B);
    expect(z.from).toBeCloseTo(v.from);
    expect(z.to).toBeCloseTo(v.to);
  });
  it('never zooms out past the bounds nor in past the minimum span', () => {
    const v = { from: 100, to: 900_000 };
    expect(zoomAt(v, 1000, 500, 10, B)).toEqual({ from: 0, to: 1_000_000 });
    const tiny = zoomAt({ from: 500, to: 600 }, 1000, 500, 0.0001, B, 50);
    expect(tiny.to - tiny.from).toBe(50);
  });
  it('zooming out near an edge shifts the view back inside', () => {
    const z = zoomAt({ from: 900_000, to: 1_000_000 }, 1000, 1000, 3, B);
    expect(z.to).toBe(1_000_000);
    expect(z.to - z.from).toBeCloseTo(300_000);
  });
});

describe('panBy', () => {
  it('moves by the time a pixel covers, dragging right goes earlier', () => {
    const v = { from: 400_000, to: 500_000 };
    const p = panBy(v, 1000, 100, B);
    expect(p.from).toBeCloseTo(390_000);
    expect(p.to).toBeCloseTo(490_000);
  });
  it('clamps at both ends without changing the span', () => {
    const v = { from: 10_000, to: 110_000 };
    expect(panBy(v, 1000, 10_000, B)).toEqual({ from: 0, to: 100_000 });
    expect(panBy({ from: 850_000, to: 950_000 }, 1000, -5000, B)).toEqual({ from: 900_000, to: 1_000_000 });
  });
  it('clampView repairs nonsense', () => {
    expect(clampView({ from: NaN, to: NaN }, B)).toEqual({ from: 0, to: 1_000_000 });
    expect(clampView({ from: -50, to: 2_000_000 }, B)).toEqual({ from: 0, to: 1_000_000 });
  });
});

describe('wheel and ticks', () => {
  it('scrolling down zooms out, up zooms in, lines scroll further than pixels', () => {
    expect(wheelFactor(100)).toBeGreaterThan(1);
    expect(wheelFactor(-100)).toBeLessThan(1);
    expect(wheelFactor(3, 1)).toBeGreaterThan(wheelFactor(3, 0));
    expect(wheelFactor(1e9)).toBe(wheelFactor(300));
  });
  it('niceStep rounds up to 1, 2 or 5 × 10^k', () => {
    expect(niceStep(7)).toBe(10);
    expect(niceStep(1.5e6)).toBe(2e6);
    expect(niceStep(3e8)).toBe(5e8);
    expect(niceStep(1000)).toBe(1000);
  });
  it('ticks are round, evenly spaced and far enough apart', () => {
    const v = { from: 123_456, to: 10_123_456 };
    const { step, ticks: t } = ticks(v, 1000, 90);
    expect(step).toBe(1_000_000);
    expect(t[0].ns).toBe(1_000_000);
    for (let i = 1; i < t.length; i++) {
      expect(t[i].ns - t[i - 1].ns).toBe(step);
      expect(t[i].x - t[i - 1].x).toBeGreaterThanOrEqual(90);
    }
    expect(t.at(-1)!.ns).toBeLessThanOrEqual(v.to);
    expect(t[1].label).toBe('2 ms');
  });
});

describe('following the end', () => {
  it('keeps the whole session whole', () => {
    expect(followEnd({ from: 0, to: 100 }, 250, false, true)).toEqual({ from: 0, to: 250 });
  });
  it('slides a view pinned to the end, keeping its width', () => {
    expect(followEnd({ from: 60, to: 100 }, 130, true, false)).toEqual({ from: 90, to: 130 });
  });
  it('leaves a view of the past alone', () => {
    expect(followEnd({ from: 10, to: 40 }, 130, false, false)).toEqual({ from: 10, to: 40 });
    expect(followEnd({ from: 60, to: 140 }, 130, true, false)).toEqual({ from: 60, to: 140 });
  });
  it('a view counts as showing the end within 2 % of its width', () => {
    expect(showsEnd({ from: 0, to: 99 }, 100)).toBe(true);
    expect(showsEnd({ from: 0, to: 97 }, 100)).toBe(false);
    expect(showsEnd({ from: 90, to: 100 }, 100.1)).toBe(true);
  });
});
