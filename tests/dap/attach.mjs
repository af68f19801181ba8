// An editor joining a session an agent started: run by tests/dap.rs, which
// plays the agent over MCP. Protocol with it on stdout/stdin: this script
// prints READY once attached and configured, then STOPPED <threadId> when the
// agent's breakpoint (announced as a breakpoint event) stops a thread, and
// waits for a line on stdin (the agent has removed the breakpoint and resumed
// the thread by then) before it checks both reached it and detaches.
import readline from 'node:readline';
import { check, client, env } from './common.mjs';

const dc = await client();
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
// The agent removes its breakpoint and resumes the thread: the editor sees both.
const removed = dc.waitForEvent('breakpoint');
const continued = dc.waitForEvent('continued');
console.log(`STOPPED ${ev.body.threadId}`);
const rl = readline.createInterface({ input: process.stdin });
await new Promise((resolve) => rl.once('line', resolve));
rl.close();
const gone = await removed;
check(gone.body.reason === 'removed' && gone.body.breakpoint.id === bp.body.breakpoint.id,
  "the agent's removal reaches the editor", JSON.stringify(gone.body));
const cont = await continued;
check(cont.body.threadId === ev.body.threadId, "the agent's continue reaches the editor", JSON.stringify(cont.body));
// The editor pauses the main thread (it sleeps between rounds: it pauses
// where that sleep returns); the agent sees the pause in its status.
const main = (await dc.threadsRequest()).body.threads.find((t) => t.name === 'main');
const pausedEv = dc.waitForEvent('stopped');
for (let i = 0; ; i++) {
  const refused = await dc.pauseRequest({ threadId: main.id }).then(() => null, (e) => e.message);
  if (refused === null) break;
  check(refused.includes("running the program's code") && i < 50, 'pause is refused only while the thread is busy', refused);
  await new Promise((r) => setTimeout(r, 3));
}
const p = await pausedEv;
check(p.body.reason === 'pause' && p.body.threadId === main.id, "the editor's pause stops the thread", JSON.stringify(p.body));
const pst = await dc.stackTraceRequest({ threadId: main.id });
check(pst.body.stackFrames[0].name === 'main', 'in the program\'s own code', JSON.stringify(pst.body.stackFrames[0]));
console.log(`PAUSED ${main.id}`);
const rl2 = readline.createInterface({ input: process.stdin });
await new Promise((resolve) => rl2.once('line', resolve));
rl2.close();
await dc.continueRequest({ threadId: main.id });
// Disconnecting from an agent's session leaves it running.
await dc.stop();
console.error('attach checks passed');
