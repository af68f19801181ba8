import { describe, expect, it } from 'vitest';
import { backoffDelay, parseRoute, sessionHref, takeToken, testHref } from './nav';

describe('parseRoute', () => {
  it('knows the four pages', () => {
    expect(parseRoute('')).toEqual({ name: 'sessions' });
    expect(parseRoute('#/')).toEqual({ name: 'sessions' });
    expect(parseRoute('#/session/trace_c-2026-11-22-09h04')).toEqual({ name: 'session', id: 'trace_c-2026-11-22-09h04' });
    expect(parseRoute('#/tests')).toEqual({ name: 'tests' });
    expect(parseRoute('#/tests/run-1/')).toEqual({ name: 'test', id: 'run-1' });
    expect(parseRoute('#/elsewhere')).toEqual({ name: 'unknown', hash: '/elsewhere' });
  });
  it('round-trips ids through the hrefs', () => {
    const id = 'a b/c%d';
    expect(parseRoute(sessionHref(id))).toEqual({ name: 'session', id });
    expect(parseRoute(testHref(id))).toEqual({ name: 'test', id });
  });
});

describe('takeToken', () => {
  it('takes the token and keeps the rest', () => {
    expect(takeToken('?token=abc123')).toEqual({ token: 'abc123', search: '' });
    expect(takeToken('?x=1&token=abc&y=2')).toEqual({ token: 'abc', search: '?x=1&y=2' });
    expect(takeToken('')).toEqual({ token: null, search: '' });
    expect(takeToken('?token=')).toEqual({ token: null, search: '' });
  });
});

describe('backoffDelay', () => {
  it('doubles up to a cap, with bounded jitter', () => {
    const mid = () => 0.5;
    expect(backoffDelay(0, mid)).toBe(500);
    expect(backoffDelay(1, mid)).toBe(1000);
    expect(backoffDelay(3, mid)).toBe(4000);
    expect(backoffDelay(20, mid)).toBe(15000);
    expect(backoffDelay(1, () => 0)).toBe(800);
    expect(backoffDelay(1, () => 1)).toBe(1200);
    expect(backoffDelay(10, () => 1)).toBe(15000);
  });
});
