// A Python or Node.js program through the same adapter: run by tests/dap.rs
// with PROGRAM (python3 or node, as an editor's launch.json names it),
// SCRIPT (the debugee's stepper.py or stepper.js), STOP_FILE (its stop file)
// and the lines of its markers. Launch the interpreter on the script, a
// conditional line breakpoint in it, the stop with the script's frame and
// its locals, a step, and the end.
import fs from 'node:fs';
import path from 'node:path';
import { check, client, env } from './common.mjs';

const script = env('SCRIPT');
const lang = env('PROGRAM');
const dc = await client();
await dc.initializeRequest();
const initialized = dc.waitForEvent('initialized');
await dc.launchRequest({ program: lang, args: [script, env('STOP_FILE')], cwd: path.dirname(script) });
await initialized;
const set = await dc.setBreakpointsRequest({
  source: { path: script },
  breakpoints: [{ line: Number(env('LINE_COMPUTE_BODY')), condition: 'x == 3' }],
});
check(set.body.breakpoints[0].verified, `${lang}: a line breakpoint in the script is verified`, JSON.stringify(set.body));
const stopped = dc.waitForEvent('stopped');
await dc.configurationDoneRequest();
const ev = await stopped;
check(ev.body.reason === 'breakpoint', `${lang}: the program stops at it`, JSON.stringify(ev.body));
const st = await dc.stackTraceRequest({ threadId: ev.body.threadId });
const top = st.body.stackFrames[0];
check(top.name.includes('compute') && top.line === Number(env('LINE_COMPUTE_BODY')) && top.source.path === script,
  `${lang}: the top frame is the script's function at its line`, JSON.stringify(top));
check(st.body.stackFrames.length > 1 && st.body.stackFrames.some((f, i) => i > 0 && (f.name.includes('main') || f.name.includes('anonymous'))), `${lang}: its callers follow`, JSON.stringify(st.body.stackFrames.map((f) => f.name)));
const scopes = await dc.scopesRequest({ frameId: top.id });
const locals = scopes.body.scopes.find((s) => s.name === 'Locals');
check(locals, `${lang}: the frame has its locals`, JSON.stringify(scopes.body));
const vars = await dc.variablesRequest({ variablesReference: locals.variablesReference });
check(vars.body.variables.some((v) => v.name === 'x' && v.value === '3'), `${lang}: x is 3, as the condition said`, JSON.stringify(vars.body));
const stepped = dc.waitForEvent('stopped');
await dc.nextRequest({ threadId: ev.body.threadId });
await stepped;
const st2 = await dc.stackTraceRequest({ threadId: ev.body.threadId });
check(st2.body.stackFrames[0].line === Number(env('LINE_COMPUTE_CALL')), `${lang}: next goes to the next line`, JSON.stringify(st2.body.stackFrames[0]));
await dc.setBreakpointsRequest({ source: { path: script }, breakpoints: [] });
const exited = dc.waitForEvent('exited');
fs.writeFileSync(env('STOP_FILE'), '');
await dc.continueRequest({ threadId: ev.body.threadId });
const e = await exited;
check(e.body.exitCode === 0, `${lang}: it exits with 0 once the stop file is there`, JSON.stringify(e.body));
await dc.stop();
console.log(`${lang} DAP checks passed`);
