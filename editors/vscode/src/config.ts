// Debug configurations: what "Debug current file with Strobe" launches,
// what the attach picker shows, and the status bar's words. No VS Code here.

import * as path from 'node:path';
import type { Session } from './daemon';

/** A `strobe` debug configuration (launch.json's shape). */
export interface StrobeConfig {
  type: 'strobe';
  request: 'launch' | 'attach';
  name: string;
  program?: string;
  args?: string[];
  cwd?: string;
  sessionId?: string;
  pid?: number;
  env?: Record<string, string>;
  stopOnEntry?: boolean;
  tracePatterns?: string[];
}

/**
 * How to run `file` under Strobe: a test file through its test runner, a
 * Python or JavaScript file through its interpreter, an executable as is.
 * A source file of a compiled language has no program yet: say so.
 */
export function configForFile(file: string, isExecutable: boolean): StrobeConfig | { error: string } {
  const base = path.basename(file);
  const cwd = path.dirname(file);
  const named = (what: string) => `Strobe: ${what} ${base}`;
  if (/^test_.*\.py$|_test\.py$/.test(base)) {
    return { type: 'strobe', request: 'launch', name: named('test'), program: 'python3', args: ['-m', 'pytest', '-q', file], cwd };
  }
  if (/\.py$/.test(base)) {
    return { type: 'strobe', request: 'launch', name: named('run'), program: 'python3', args: [file], cwd };
  }
  if (/\.test\.(c|m)?js$/.test(base)) {
    return { type: 'strobe', request: 'launch', name: named('test'), program: 'node', args: ['--test', file], cwd };
  }
  if (/\.(c|m)?js$/.test(base)) {
    return { type: 'strobe', request: 'launch', name: named('run'), program: 'node', args: [file], cwd };
  }
  if (isExecutable) {
    return { type: 'strobe', request: 'launch', name: named('run'), program: file, args: [], cwd };
  }
  return {
    error:
      `${base} is not a program Strobe can start: build it, then debug the executable ` +
      '(or add a "strobe" launch configuration with its "program").',
  };
}

/** A quick-pick item per running session, newest first. */
export function sessionItems(sessions: Session[]): { label: string; description: string; detail: string; sessionId: string }[] {
  return [...sessions]
    .sort((a, b) => (b.startedAt ?? 0) - (a.startedAt ?? 0))
    .map((s) => ({
      label: s.binaryPath ? path.basename(s.binaryPath) : s.sessionId,
      description: `pid ${s.pid ?? '?'} · ${s.state}`,
      detail: s.sessionId,
      sessionId: s.sessionId,
    }));
}

/** The status bar's text and tooltip for `live` sessions (null: no daemon). */
export function statusText(live: number | null): { text: string; tooltip: string } {
  if (live === null) {
    return { text: '$(debug-disconnect) Strobe', tooltip: 'The Strobe daemon is not running. Click to open the timeline (starts it).' };
  }
  const n = live === 1 ? '1 session' : `${live} sessions`;
  return { text: `$(debug) Strobe: ${live}`, tooltip: `Strobe: ${n} running. Click to open the timeline.` };
}
