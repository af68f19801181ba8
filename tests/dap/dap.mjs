// `strobe dap` driven by a real DAP client (@vscode/debugadapter-testsupport's
// DebugClient, the one VS Code's own adapters are tested with): run by
// tests/dap.rs, which passes the strobe binary, the fixtures and the
// environment (STROBE_HOME, STROBE_VENV) of its daemon. Exits non-zero at the
// first failed check, saying which.
import { check, client, env } from './common.mjs';

const debugee = env('DEBUGEE');
const debugeeSource = env('DEBUGEE_SOURCE');
const output = env('OUTPUT_FIXTURE');
const line = (marker) => Number(env(`LINE_${marker.toUpperCase().replace(/-/g, '_')}`));

// 1. Launch, a line breakpoint, the stop, the stack, the arguments, a step.
{
  const dc = await client();
  const init = await dc.initializeRequest();
  check(init.body.supportsConfigurationDoneRequest && init.body.supportsConditionalBreakpoints,
    'initialize answers the capabilities', JSON.stringify(init.body));
  check(!init.body.supportsStepBack, 'no capability is claimed that is not there');
  const initialized = dc.waitForEvent('initialized');
  await dc.launchRequest({ program: debugee });
  await initialized;
  const consoleOut = [];
  dc.on('output', (e) => { if (e.body.category === 'console') consoleOut.push(e.body.output); });
  // A conditional breakpoint, and a logpoint in main's loop.
  const set = await dc.setBreakpointsRequest({
    source: { path: debugeeSource },
    breakpoints: [{ line: line('compute-body'), condition: 'x == 2' }, { line: line('main-compute'), logMessage: 'round={round}' }],
  });
  const bp = set.body.breakpoints[0];
  check(bp.verified && bp.line === line('compute-body'), 'the line breakpoint is verified at its line', JSON.stringify(bp));
  const stopped = dc.waitForEvent('stopped');
  await dc.configurationDoneRequest();
  const ev = await stopped;
  check(ev.body.reason === 'breakpoint' && ev.body.hitBreakpointIds?.[0] === bp.id,
    'the program stops at the breakpoint', JSON.stringify(ev.body));
  const tid = ev.body.threadId;
  const threads = await dc.threadsRequest();
  check(threads.body.threads.some((t) => t.id === tid), 'the stopped thread is listed', JSON.stringify(threads.body));
  const st = await dc.stackTraceRequest({ threadId: tid });
  const top = st.body.stackFrames[0];
  check(top.name === 'compute' && top.line === line('compute-body') && top.source.path.endsWith('debugee.c'),
    'the top frame is compute at its file:line', JSON.stringify(top));
  check(st.body.stackFrames.some((f) => f.name.startsWith('main')), 'main is on the stack',
    JSON.stringify(st.body.stackFrames.map((f) => f.name)));
  const scopes = await dc.scopesRequest({ frameId: top.id });
  const args = scopes.body.scopes.find((s) => s.name === 'Arguments');
  check(args && args.variablesReference > 0, 'the frame has its arguments scope', JSON.stringify(scopes.body));
  const vars = await dc.variablesRequest({ variablesReference: args.variablesReference });
  const x = vars.body.variables.find((v) => v.name === 'x');
  check(x && x.value === '2' && x.type === 'int', 'the argument x is typed, and the condition held', JSON.stringify(vars.body));
  for (let i = 0; i < 100 && !consoleOut.join('').includes('round=2'); i++) await new Promise((r) => setTimeout(r, 50));
  check(consoleOut.join('').startsWith('round=0\nround=1\nround=2\n'), 'the logpoint writes output lines', JSON.stringify(consoleOut));
  const ev2 = await dc.evaluateRequest({ expression: 'x', frameId: top.id, context: 'hover' });
  check(ev2.body.result === x.value, 'hovering x evaluates it', JSON.stringify(ev2.body));
  // setVariable: an argument, and a global's field reached through evaluate.
  const setX = await dc.setVariableRequest({ variablesReference: args.variablesReference, name: 'x', value: '7' });
  check(setX.body.value === '7', 'setVariable writes an argument', JSON.stringify(setX.body));
  const xNow = await dc.evaluateRequest({ expression: 'x', frameId: top.id, context: 'watch' });
  check(xNow.body.result === '7', 'and it reads back', JSON.stringify(xNow.body));
  const cfg = await dc.evaluateRequest({ expression: 'g_config', frameId: top.id, context: 'watch' });
  check(cfg.body.variablesReference > 0, 'a struct global evaluates to an expandable value', JSON.stringify(cfg.body));
  const fields = await dc.variablesRequest({ variablesReference: cfg.body.variablesReference });
  check(fields.body.variables.some((v) => v.name === 'origin' && v.variablesReference > 0), 'its nested struct expands',
    JSON.stringify(fields.body));
  const setGain = await dc.setVariableRequest({ variablesReference: cfg.body.variablesReference, name: 'gain', value: '2.5' });
  check(setGain.body.value === '2.5', "setVariable writes a global's field", JSON.stringify(setGain.body));
  const gain = await dc.evaluateRequest({ expression: 'g_config.gain', frameId: top.id, context: 'watch' });
  check(gain.body.result === '2.5', 'and the program sees it', JSON.stringify(gain.body));

  // A 64-element array: the client pages it.
  const samples = await dc.evaluateRequest({ expression: 'g_samples', frameId: top.id, context: 'watch' });
  const page = await dc.variablesRequest({ variablesReference: samples.body.variablesReference, filter: 'indexed', start: 40, count: 3 });
  check(JSON.stringify(page.body.variables.map((v) => [v.name, v.value])) === JSON.stringify([['[40]', '400'], ['[41]', '410'], ['[42]', '420']]),
    'an array is paged by start and count', JSON.stringify(page.body));
  // A breakpoint in a file with no code of the program is unverified, saying why.
  const nowhere = await dc.setBreakpointsRequest({ source: { path: '/tmp/strobe-no-such-source.c' }, breakpoints: [{ line: 3 }] });
  const nb = nowhere.body.breakpoints[0];
  check(nb.verified === false && typeof nb.message === 'string' && nb.message.length > 10,
    'a breakpoint in a file without code is unverified with a readable message', JSON.stringify(nb));

  // Memory: a global's address opens as memory; read it, write it, see it.
  const counter = await dc.evaluateRequest({ expression: 'g_counter', frameId: top.id, context: 'watch' });
  check(/^0x[0-9a-f]+$/.test(counter.body.memoryReference ?? ''), 'a global evaluates with its memoryReference',
    JSON.stringify(counter.body));
  const mem = await dc.customRequest('readMemory', { memoryReference: counter.body.memoryReference, count: 4 });
  check(Buffer.from(mem.body.data, 'base64').readInt32LE(0) === Number(counter.body.result),
    'readMemory returns the bytes of its value', JSON.stringify(mem.body));
  const patch = Buffer.alloc(4);
  patch.writeInt32LE(424242);
  const wrote = await dc.customRequest('writeMemory', { memoryReference: counter.body.memoryReference, data: patch.toString('base64') });
  check(wrote.body.bytesWritten === 4, 'writeMemory writes the bytes', JSON.stringify(wrote.body));
  const counter2 = await dc.evaluateRequest({ expression: 'g_counter', frameId: top.id, context: 'watch' });
  check(counter2.body.result === '424242', 'and the program sees them', JSON.stringify(counter2.body));
  const unmapped = await dc.customRequest('readMemory', { memoryReference: '0x8', count: 16 });
  check(unmapped.body.unreadableBytes === 16 && !unmapped.body.data, 'unmapped memory reads as unreadable',
    JSON.stringify(unmapped.body));

  // Step over: the next line, same function.
  await dc.setBreakpointsRequest({ source: { path: debugeeSource }, breakpoints: [] });
  const stepped = dc.waitForEvent('stopped');
  await dc.nextRequest({ threadId: tid });
  const s2 = await stepped;
  check(s2.body.reason === 'step', 'next stops with reason step', JSON.stringify(s2.body));
  const st2 = await dc.stackTraceRequest({ threadId: tid });
  check(st2.body.stackFrames[0].line === line('compute-call'), 'next went to the following line',
    JSON.stringify(st2.body.stackFrames[0]));
  // The frame's other variables: doubled = x * 2, with the x set above.
  const sc2 = await dc.scopesRequest({ frameId: st2.body.stackFrames[0].id });
  const loc2 = sc2.body.scopes.find((s) => s.name === 'Locals');
  check(loc2, 'a native frame has a Locals scope', JSON.stringify(sc2.body));
  const lv = await dc.variablesRequest({ variablesReference: loc2.variablesReference });
  check(lv.body.variables.some((v) => v.name === 'doubled' && v.value === '14' && v.type === 'int'),
    'its locals are typed and current (doubled = 7 * 2)', JSON.stringify(lv.body));
  const into = dc.waitForEvent('stopped');
  await dc.stepInRequest({ threadId: tid });
  await into;
  const st3 = await dc.stackTraceRequest({ threadId: tid });
  check(st3.body.stackFrames[0].name === 'square', 'stepIn enters the callee', JSON.stringify(st3.body.stackFrames[0]));
  // The caller's frame shows its variables as they are at this stop.
  const caller = st3.body.stackFrames[1];
  const csc = await dc.scopesRequest({ frameId: caller.id });
  const cloc = csc.body.scopes.find((s) => s.name === 'Locals');
  check(caller.name === 'compute' && cloc, "the caller's frame has a Locals scope", JSON.stringify(csc.body));
  const cv = await dc.variablesRequest({ variablesReference: cloc.variablesReference });
  const val = (n) => cv.body.variables.find((v) => v.name === n)?.value;
  check(val('x') === '7' && val('doubled') === '14', "the caller's variables are read in its own frame", JSON.stringify(cv.body));
  const ro = await dc.setVariableRequest({ variablesReference: cloc.variablesReference, name: 'doubled', value: '1' })
    .then(() => null, (e) => e.message);
  check(ro && ro.includes("belongs to a caller's frame"), "a caller's variable is not written by mistake", ro);
  const out = dc.waitForEvent('stopped');
  await dc.stepOutRequest({ threadId: tid });
  await out;
  const st4 = await dc.stackTraceRequest({ threadId: tid });
  check(st4.body.stackFrames[0].name === 'compute', 'stepOut returns to the caller', JSON.stringify(st4.body.stackFrames[0]));

  // Bad requests are DAP errors that say what is wrong.
  const bad = await dc.customRequest('frobnicate').then(() => null, (e) => e.message);
  check(bad && bad.includes("does not support the 'frobnicate' request"), 'an unknown request is refused readably', bad);
  const pause = await dc.pauseRequest({ threadId: tid }).then(() => null, (e) => e.message);
  check(pause && pause.includes('already paused'), 'pausing a paused thread says so', pause);

  await dc.continueRequest({ threadId: tid });
  // disconnect (launched here: the program is stopped with it).
  await dc.stop();
}

// 2. A program that prints and exits: its output, then exited with the code.
{
  const dc = await client();
  await dc.initializeRequest();
  const initialized = dc.waitForEvent('initialized');
  const bad = await dc.launchRequest({}).then(() => null, (e) => e.message);
  check(bad && bad.includes("launch needs 'program'"), 'launch without a program is refused readably', bad);
  await dc.launchRequest({ program: output, args: ['3'] });
  await initialized;
  const exited = dc.waitForEvent('exited');
  const terminated = dc.waitForEvent('terminated');
  const seen = dc.assertOutput('stdout', 'out 0\nout 1\nout 2\n');
  await dc.configurationDoneRequest();
  await seen;
  check(true, "the program's stdout arrives as output events");
  const e = await exited;
  check(e.body.exitCode === 3, 'exited carries the exit code', JSON.stringify(e.body));
  await terminated;
  check(true, 'terminated follows');
  // After disconnect the adapter exits by itself (an editor waits for it).
  const adapter = dc._adapterProcess;
  const gone = new Promise((resolve) => {
    if (adapter.exitCode !== null) return resolve(true);
    const timer = setTimeout(() => resolve(false), 5000);
    adapter.on('exit', () => { clearTimeout(timer); resolve(true); });
  });
  await dc.disconnectRequest({});
  check(await gone, 'the adapter exits after disconnect');
  dc.stopAdapter();
}
// 3. A crash: a post-mortem stop with the exception, its stack and locals.
{
  const dc = await client();
  const init = await dc.initializeRequest();
  check(init.body.supportsExceptionInfoRequest && init.body.exceptionBreakpointFilters?.[0]?.filter === 'crash',
    'the crash exception filter is offered', JSON.stringify(init.body.exceptionBreakpointFilters));
  const initialized = dc.waitForEvent('initialized');
  await dc.launchRequest({ program: env('CRASH_FIXTURE'), args: ['segv'] });
  await initialized;
  const badFilter = await dc.setExceptionBreakpointsRequest({ filters: ['everything'] }).then(() => null, (e) => e.message);
  check(badFilter && badFilter.includes("the one filter is 'crash'"), 'an unknown filter is refused readably', badFilter);
  await dc.setExceptionBreakpointsRequest({ filters: ['crash'] });
  // A breakpoint on main, where the launched program waits for
  // configurationDone: it is hit, not run past.
  const fbp = await dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: 'main' }] });
  const atMain = dc.waitForEvent('stopped');
  await dc.configurationDoneRequest();
  const m = await atMain;
  check(m.body.reason === 'breakpoint' && m.body.hitBreakpointIds?.[0] === fbp.body.breakpoints[0].id,
    'a breakpoint on main stops the program at once', JSON.stringify(m.body));
  const stopped = dc.waitForEvent('stopped');
  await dc.continueRequest({ threadId: m.body.threadId });
  const ev = await stopped;
  check(ev.body.reason === 'exception' && ev.body.description.includes('SIGSEGV'),
    'the crash stops with reason exception', JSON.stringify(ev.body));
  const info = await dc.customRequest('exceptionInfo', { threadId: ev.body.threadId });
  check(info.body.exceptionId === 'SIGSEGV' && info.body.description.includes('null pointer')
    && info.body.details.stackTrace.includes('write_through'), 'exceptionInfo names the signal, the cause and the stack',
    JSON.stringify(info.body));
  const st = await dc.stackTraceRequest({ threadId: ev.body.threadId });
  const top = st.body.stackFrames[0];
  check(top.name === 'write_through' && top.line === Number(env('LINE_CRASH')) && top.source.path.endsWith('crash.c'),
    'the top frame is the faulting line', JSON.stringify(top));
  const scopes = await dc.scopesRequest({ frameId: top.id });
  const locals = scopes.body.scopes.find((s) => s.name === 'Locals');
  check(locals, 'the crashing frame has its locals', JSON.stringify(scopes.body));
  const vars = await dc.variablesRequest({ variablesReference: locals.variablesReference });
  const value = vars.body.variables.find((v) => v.name === 'value');
  check(value && value.value === '21', 'read as they were at the crash', JSON.stringify(vars.body));
  const exited = dc.waitForEvent('exited');
  const terminated = dc.waitForEvent('terminated');
  await dc.continueRequest({ threadId: ev.body.threadId });
  await exited;
  await terminated;
  check(true, 'continuing past the crash ends the session');
  await dc.stop();
}
// 4. The program's threads: listed by name (none of Frida's), announced by
// thread events as they start and end.
{
  const dc = await client();
  await dc.initializeRequest();
  const initialized = dc.waitForEvent('initialized');
  const events = [];
  dc.on('thread', (e) => events.push(e.body));
  await dc.launchRequest({ program: env('THREADS_FIXTURE'), args: ['1500'] });
  await initialized;
  await dc.configurationDoneRequest();
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const until = async (what, cond) => {
    for (let i = 0; i < 300; i++) {
      const v = await cond();
      if (v) return v;
      await sleep(50);
    }
    throw new Error(`FAILED: ${what}: thread events ${JSON.stringify(events)}`);
  };
  const listed = async () => (await dc.threadsRequest()).body.threads;
  const all = await until('brief is listed', async () => {
    const ts = await listed();
    return ts.some((t) => t.name.startsWith('brief (')) && ts;
  });
  check(all.length === 3 && all[0].name === 'main' && all.some((t) => t.name.startsWith('keeper (')),
    "the threads request lists the program's three threads and none of Frida's", JSON.stringify(all));
  const brief = all.find((t) => t.name.startsWith('brief (')).id;
  const keeper = all.find((t) => t.name.startsWith('keeper (')).id;
  check(events.some((e) => e.reason === 'started' && e.threadId === keeper)
    && events.some((e) => e.reason === 'started' && e.threadId === brief),
    'each started thread was announced', JSON.stringify(events));
  await until('brief is announced as exited', () => events.some((e) => e.reason === 'exited' && e.threadId === brief));
  const after = await listed();
  check(after.length === 2 && !after.some((t) => t.id === brief), 'an ended thread leaves the list', JSON.stringify(after));
  check(!events.some((e) => e.reason === 'exited' && e.threadId === keeper), 'a live thread is not announced as exited');
  await dc.disconnectRequest({ terminateDebuggee: true });
  dc.stopAdapter();
}
console.log('all DAP checks passed');
