// An editor joining a session an agent started: run by tests/dap.rs, which
// plays the agent over MCP. Protocol with it on stdout/stdin: this script
// prints READY once attached and configured, then STOPPED <threadId> when the
// agent's breakpoint (announced as a breakpoint event) stops a thread, and
// waits for a line on stdin before it continues and detaches.
import { createRequire } from 'node:module';
import readline from 'node:readline';
import path from 'node:path';
import os from 'node:os';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run through tests/dap.rs)`);
  return v;
};
const modules =
  process.env.STROBE_TEST_NODE_MODULES ||
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'strobe/test-tools/node/node_modules');
const { DebugClient } = createRequire(path.join(modules, 'noop.js'))('@vscode/debugadapter-testsupport');

function check(ok, what, detail = '') {
  if (!ok) throw new Error(`FAILED: ${what}${detail ? `: ${detail}` : ''}`);
  console.error(`ok - ${what}`);
}

const dc = new DebugClient(env('STROBE_BIN'), 'dap', 'strobe', { env: process.env });
dc.defaultTimeout = 20000;
await dc.start();
await dc.initializeRequest();
const initialized = dc.waitForEvent('initialized');
await dc.attachRequest({ sessionId: env('SESSION') });
await initialized;
const announced = dc.waitForEvent('breakpoint');
const stopped = dc.waitForEvent('stopped');
await dc.configurationDoneRequest();
console.log('READY');
const bp = await announced;
check(bp.body.reason === 'new' && bp.body.breakpoint.line === Number(env('LINE')),
  "the agent's breakpoint appears in the editor", JSON.stringify(bp.body));
const ev = await stopped;
check(ev.body.reason === 'breakpoint' && ev.body.hitBreakpointIds?.[0] === bp.body.breakpoint.id,
  'and stops the editor at it', JSON.stringify(ev.body));
const st = await dc.stackTraceRequest({ threadId: ev.body.threadId });
check(st.body.stackFrames[0].name === 'compute', 'with its stack', JSON.stringify(st.body.stackFrames[0]));
console.log(`STOPPED ${ev.body.threadId}`);
const rl = readline.createInterface({ input: process.stdin });
await new Promise((resolve) => rl.once('line', resolve));
rl.close();
await dc.continueRequest({ threadId: ev.body.threadId });
// Disconnecting from an agent's session leaves it running.
await dc.stop();
console.error('attach checks passed');
