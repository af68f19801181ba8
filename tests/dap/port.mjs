// `strobe dap --port`: DAP clients on a loopback port, each proving itself
// with the daemon's token in its launch. Run by tests/dap.rs with PORT (what
// `strobe dap --port 0` printed), TOKEN (the daemon's) and OUTPUT_FIXTURE.
import { DebugClient, check, env } from './common.mjs';

const port = Number(env('PORT'));
const connect = async () => {
  const dc = new DebugClient('unused', 'unused', 'strobe');
  await dc.start(port);
  await dc.initializeRequest();
  return dc;
};
const refusal = (p) => p.then(() => null, (e) => e.message);

{
  const dc = await connect();
  const why = await refusal(dc.launchRequest({ program: env('OUTPUT_FIXTURE') }));
  check(why && why.includes('needs "token"') && why.includes('strobe ui'), 'a launch without the token is refused, saying where it is', why);
  dc.stopAdapter();
}
{
  const dc = await connect();
  const why = await refusal(dc.attachRequest({ sessionId: 'x', token: 'guess' }));
  check(why && why.includes('wrong "token"'), 'a wrong token is refused', why);
  dc.stopAdapter();
}
{
  const dc = await connect();
  const why = await refusal(dc.threadsRequest());
  check(why && why.includes("before 'threads'"), 'nothing but initialize is answered before the token', why);
  dc.stopAdapter();
}
{
  const dc = await connect();
  const initialized = dc.waitForEvent('initialized');
  await dc.launchRequest({ program: env('OUTPUT_FIXTURE'), args: ['3'], token: env('TOKEN') });
  await initialized;
  const exited = dc.waitForEvent('exited');
  await dc.configurationDoneRequest();
  const e = await exited;
  check(e.body.exitCode === 3, 'with the token, the program runs to its exit code', JSON.stringify(e.body));
  await dc.stop();
}
console.log('port checks passed');
