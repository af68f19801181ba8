// Which two sessions a diff compares, from the sessions picked in the list.

import type { Session } from '../types';

/**
 * The diff of two picked sessions: the older one is the baseline (the run
 * that worked before), the newer the candidate; or why there is none.
 */
export function diffPair(picked: Session[]): { baseline: string; candidate: string } | { why: string } {
  if (picked.length !== 2) return { why: `pick two sessions to compare (${picked.length} picked)` };
  const [a, b] = [...picked].sort((x, y) => (x.startedAt ?? 0) - (y.startedAt ?? 0));
  if (a.binaryPath !== b.binaryPath) return { why: 'the two sessions ran different programs: a diff compares two runs of one program' };
  return { baseline: a.sessionId, candidate: b.sessionId };
}

/** What a divergence kind means, in words. */
export function kindText(kind: string): string {
  switch (kind) {
    case 'arguments':
      return 'same call, different arguments';
    case 'returnValue':
      return 'same call, different return value';
    case 'differentCall':
      return 'each run made a different call here';
    case 'onlyInBaseline':
      return 'only the baseline made this call';
    case 'onlyInCandidate':
      return 'only the candidate made this call';
    default:
      return kind;
  }
}
