import { describe, expect, it } from 'vitest';
import { WindowRequests, sameWindow, windowKey } from './window';

describe('windowKey / sameWindow', () => {
  it('normalizes as the wire does', () => {
    expect(windowKey({ columns: 1390.4 })).toEqual({ from: 0, columns: 1390 });
    expect(windowKey({ from: -5, to: 0.2, columns: 0 })).toEqual({ from: 0, to: 1, columns: 1 });
    expect(windowKey({ from: 10.9, to: 20.1, columns: 1e6 })).toEqual({ from: 10, to: 21, columns: 8192 });
  });
  it('compares what is sent, not the raw numbers', () => {
    expect(sameWindow({ from: 0, columns: 1390 }, { from: 0.4, columns: 1389.6 })).toBe(true);
    expect(sameWindow({ from: 100.2, to: 200.2, columns: 500 }, { from: 100.7, to: 200.9, columns: 500 })).toBe(true);
    expect(sameWindow({ from: 0, columns: 1390 }, { from: 0, columns: 1375 })).toBe(false);
    expect(sameWindow({ from: 0, columns: 1390 }, { from: 0, to: 1000, columns: 1390 })).toBe(false);
    expect(sameWindow({ from: 0, to: 1000, columns: 10 }, { from: 0, to: 1001, columns: 10 })).toBe(false);
  });
});

describe('WindowRequests', () => {
  const whole = { from: 0, columns: 1390 };
  const zoomed = { from: 1000, to: 5000, columns: 1390 };

  it('never asks twice for the window in flight', () => {
    const r = new WindowRequests();
    const a = r.request(whole);
    expect(a.kind).toBe('fetch');
    // e.g. a resize pass or a live "events" message that changes nothing
    expect(r.request({ ...whole })).toEqual({ kind: 'join' });
    expect(r.request({ from: 0.3, columns: 1390.2 })).toEqual({ kind: 'join' });
    expect(r.pending).toEqual(whole);
    if (a.kind !== 'fetch') throw new Error();
    expect(r.answer(a.ticket, 100)).toBe('fresh');
    expect(r.pending).toBeNull();
    expect(r.current).toEqual(whole);
  });

  it('never asks again for the window drawn', () => {
    const r = new WindowRequests();
    const a = r.request(whole);
    if (a.kind !== 'fetch') throw new Error();
    r.answer(a.ticket, 100);
    expect(r.request(whole)).toEqual({ kind: 'have' });
  });

  it('fetches on a real change of window or width', () => {
    const r = new WindowRequests();
    const a = r.request(whole);
    if (a.kind !== 'fetch') throw new Error();
    r.answer(a.ticket, 100);
    expect(r.request({ ...whole, columns: 1375 }).kind).toBe('fetch');
    expect(r.request(zoomed).kind).toBe('fetch');
  });

  it('drops the reply of a window replaced while in flight', () => {
    const r = new WindowRequests();
    const a = r.request(whole);
    const b = r.request(zoomed);
    if (a.kind !== 'fetch' || b.kind !== 'fetch') throw new Error();
    expect(b.ticket).not.toBe(a.ticket);
    expect(r.answer(a.ticket, 100)).toBe('stale');
    expect(r.fail(a.ticket)).toBe(false);
    expect(r.answer(b.ticket, 100)).toBe('fresh');
    expect(r.current).toEqual(zoomed);
    // A late reply of the first one changes nothing.
    expect(r.answer(a.ticket, 100)).toBe('stale');
    expect(r.current).toEqual(zoomed);
  });

  it('going back to the drawn window drops the one in flight', () => {
    const r = new WindowRequests();
    const a = r.request(whole);
    if (a.kind !== 'fetch') throw new Error();
    r.answer(a.ticket, 100);
    const b = r.request(zoomed);
    if (b.kind !== 'fetch') throw new Error();
    expect(r.request(whole)).toEqual({ kind: 'have' });
    expect(r.answer(b.ticket, 100)).toBe('stale');
    expect(r.current).toEqual(whole);
  });

  it('a session that grew fetches the drawn window again', () => {
    const r = new WindowRequests();
    const a = r.request(whole);
    if (a.kind !== 'fetch') throw new Error();
    r.answer(a.ticket, 100);
    expect(r.request(whole, { endNs: 90 })).toEqual({ kind: 'have' }); // already drawn past it
    expect(r.request(whole, { endNs: 100 })).toEqual({ kind: 'have' });
    expect(r.request(whole, { endNs: 150 }).kind).toBe('fetch');
    const r2 = new WindowRequests();
    const b = r2.request(whole);
    if (b.kind !== 'fetch') throw new Error();
    r2.answer(b.ticket, 100);
    expect(r2.request(whole, {}).kind).toBe('fetch'); // end unknown
  });

  it('growth during a request asks once more after it, only if its answer is older', () => {
    const r = new WindowRequests();
    const a = r.request(whole);
    if (a.kind !== 'fetch') throw new Error();
    expect(r.request(whole, { endNs: 120 })).toEqual({ kind: 'join' });
    expect(r.request(whole, { endNs: 150 })).toEqual({ kind: 'join' });
    expect(r.answer(a.ticket, 140)).toBe('again');
    const b = r.request(whole, {});
    expect(b.kind).toBe('fetch');
    if (b.kind !== 'fetch') throw new Error();
    expect(r.answer(b.ticket, 160)).toBe('fresh');

    const c = r.request(zoomed);
    if (c.kind !== 'fetch') throw new Error();
    r.request(zoomed, { endNs: 150 });
    expect(r.answer(c.ticket, 160)).toBe('fresh'); // the answer saw it already
    const d = r.request(whole, {});
    if (d.kind !== 'fetch') throw new Error();
    r.request(whole, {});
    expect(r.answer(d.ticket, 1e9)).toBe('again'); // end unknown: once more
    const e = r.request(whole, {});
    if (e.kind !== 'fetch') throw new Error();
    expect(r.answer(e.ticket, 1e9)).toBe('fresh'); // and only once
  });

  it('after a failure the same window may be asked for again', () => {
    const r = new WindowRequests();
    const a = r.request(whole);
    if (a.kind !== 'fetch') throw new Error();
    expect(r.fail(a.ticket)).toBe(true);
    expect(r.request(whole).kind).toBe('fetch');
  });

  it('cancel forgets the request in flight', () => {
    const r = new WindowRequests();
    const a = r.request(whole);
    if (a.kind !== 'fetch') throw new Error();
    r.cancel();
    expect(r.answer(a.ticket, 1)).toBe('stale');
    expect(r.fail(a.ticket)).toBe(false);
  });
});
