// What the DAP scripts share: their environment, the DebugClient from the
// test tools' node_modules, and the check that stops at the first failure.
import { createRequire } from 'node:module';
import path from 'node:path';
import os from 'node:os';

/** The environment variable `name`, which tests/dap.rs sets. */
export const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run through tests/dap.rs)`);
  return v;
};

const modules =
  process.env.STROBE_TEST_NODE_MODULES ||
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'strobe/test-tools/node/node_modules');
export const { DebugClient } = createRequire(path.join(modules, 'noop.js'))('@vscode/debugadapter-testsupport');

/** A started DebugClient on `strobe dap` (DebugClient runs `<runtime> <executable>`). */
export async function client() {
  const dc = new DebugClient(env('STROBE_BIN'), 'dap', 'strobe', { env: process.env });
  dc.defaultTimeout = 20000;
  await dc.start();
  return dc;
}

/** Throws (ending the script non-zero) unless `ok`; logs each passed check. */
export function check(ok, what, detail = '') {
  if (!ok) throw new Error(`FAILED: ${what}${detail ? `: ${detail}` : ''}`);
  console.error(`ok - ${what}`);
}
