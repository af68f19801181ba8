import { describe, expect, it } from 'vitest';
import { diffPair, kindText } from './diff';
import { diffHref, parseRoute } from './nav';

const s = (sessionId: string, startedAt: number, binaryPath = '/bin/app') => ({ sessionId, state: 'exited', startedAt, binaryPath });

describe('diffPair', () => {
  it('makes the older session the baseline', () => {
    expect(diffPair([s('new', 20), s('old', 10)])).toEqual({ baseline: 'old', candidate: 'new' });
  });
  it('needs exactly two sessions of one program', () => {
    expect(diffPair([s('a', 1)])).toEqual({ why: 'pick two sessions to compare (1 picked)' });
    expect('why' in diffPair([s('a', 1), s('b', 2, '/bin/other')])).toBe(true);
  });
  it('names the kinds', () => {
    expect(kindText('arguments')).toBe('same call, different arguments');
    expect(kindText('newKind')).toBe('newKind');
  });
});

describe('the diff route', () => {
  it('round-trips both ids', () => {
    const href = diffHref('a/b c', 'd');
    expect(parseRoute(href)).toEqual({ name: 'diff', baseline: 'a/b c', candidate: 'd' });
    expect(parseRoute('#/diff/only-one').name).toBe('unknown');
  });
});
