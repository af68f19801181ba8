// The extension's wiring, against a stand-in for the VS Code API (VS Code
// cannot run here): what it registers, what each command does, and that
// the manifest contributes exactly what the code registers.

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { test } from 'node:test';
import { fake, rec } from './fake-vscode';
import { fakeDaemon, fakeStrobe, tempDir } from './helpers';
// After the fake is installed: the extension requires 'vscode'.
import * as ext from '../src/extension';

const root = path.resolve(__dirname, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const context = { extensionPath: root, subscriptions: [] as { dispose(): void }[] };

test('activation registers the debugger, the commands, the MCP server and the status bar', async () => {
  const dir = tempDir();
  const d = await fakeDaemon('tok', [{ sessionId: 's-1', state: 'running', pid: 7, binaryPath: '/b/app', startedAt: 5 }]);
  after(d.close);
  rec.settings['strobe.path'] = fakeStrobe(dir, d.url);
  ext.activate(context as never);
  assert.ok(rec.adapterFactories.has('strobe') && rec.configProviders.has('strobe'));
  assert.deepEqual([...rec.commands.keys()].sort(), [
    'strobe.attachToSession', 'strobe.debugCurrentFile', 'strobe.openTimeline', 'strobe.registerAgents',
  ]);
  // The manifest contributes what the code registers, and nothing else.
  const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
  assert.deepEqual(contributed, [...rec.commands.keys()].sort());
  assert.deepEqual(manifest.contributes.debuggers.map((x: { type: string }) => x.type), ['strobe']);
  assert.deepEqual(manifest.contributes.mcpServerDefinitionProviders.map((x: { id: string }) => x.id), [...rec.mcpProviders.keys()]);
  assert.equal(manifest.main, './out/src/extension.js');
  assert.ok(fs.existsSync(path.join(root, manifest.main)), 'main is built');

  // The debug adapter is `strobe dap`; the MCP server `strobe mcp`.
  const desc = rec.adapterFactories.get('strobe')!.createDebugAdapterDescriptor() as InstanceType<typeof fake.DebugAdapterExecutable>;
  assert.deepEqual([desc.command, desc.args], [rec.settings['strobe.path'], ['dap']]);
  const defs = rec.mcpProviders.get('strobe')!.provideMcpServerDefinitions() as InstanceType<typeof fake.McpStdioServerDefinition>[];
  assert.deepEqual(defs.map((x) => [x.label, x.command, x.args]), [['Strobe', rec.settings['strobe.path'], ['mcp']]]);
  assert.equal(context.subscriptions.length > 5, true);
  assert.equal(rec.statusItems[0].command, 'strobe.openTimeline');
});

test('an attach without a session asks which running session, and joins it', async () => {
  const d = await fakeDaemon('tok2', [
    { sessionId: 'old', state: 'running', pid: 1, startedAt: 1 },
    { sessionId: 'gone', state: 'exited', pid: 2, startedAt: 9 },
    { sessionId: 'new', state: 'running', pid: 3, startedAt: 5 },
  ]);
  after(d.close);
  rec.settings['strobe.path'] = fakeStrobe(tempDir(), d.url);
  const resolve = rec.configProviders.get('strobe')!.resolveDebugConfiguration;
  const config = await resolve(undefined, { type: 'strobe', request: 'attach', name: 'a' });
  const offered = rec.quickPicks.at(-1) as { sessionId: string }[];
  assert.deepEqual(offered.map((i) => i.sessionId), ['new', 'old'], 'running ones, newest first');
  assert.deepEqual(config, { type: 'strobe', request: 'attach', name: 'a', sessionId: 'new' });
  // A configuration that names its session is left alone.
  const named = { type: 'strobe', request: 'attach', name: 'b', sessionId: 'x' };
  assert.deepEqual(await resolve(undefined, named), named);
  // With none running it says so and starts nothing.
  const none = await fakeDaemon('tok3', []);
  after(none.close);
  rec.settings['strobe.path'] = fakeStrobe(tempDir(), none.url);
  assert.equal(await resolve(undefined, { type: 'strobe', request: 'attach', name: 'c' }), undefined);
  assert.match(rec.infos.at(-1)!, /no session is running/);
});

test('the timeline panel frames the UI and opens the sources it is asked to', async () => {
  const dir = tempDir();
  rec.settings['strobe.path'] = fakeStrobe(dir, 'http://127.0.0.1:4555/?token=abc');
  await rec.commands.get('strobe.openTimeline')!();
  const panel = rec.panels.at(-1)!;
  assert.ok(panel.html.includes('frame-src http://127.0.0.1:4555;') && panel.html.includes('src="http://127.0.0.1:4555/?token=abc"'));
  assert.deepEqual(panel.options, { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [] });
  const src = path.join(dir, 'main.c');
  fs.writeFileSync(src, 'int main(void) { return 0; }\n');
  await panel.send({ type: 'strobe.openSource', path: src, line: 12 });
  assert.deepEqual(rec.opened.at(-1), { path: src, line: 11 }, '0-based in VS Code');
  await panel.send({ type: 'strobe.openSource', path: path.join(dir, 'gone.c'), line: 1 });
  assert.match(rec.warnings.at(-1)!, /cannot open .*gone\.c/);
  const before = rec.opened.length;
  await panel.send({ type: 'strobe.openSource', path: 'relative.c', line: 1 });
  assert.equal(rec.opened.length, before, 'a relative path is ignored');
  // A second open shows the same panel.
  await rec.commands.get('strobe.openTimeline')!();
  assert.equal(rec.panels.at(-1), panel);
});

test('debugging the current file starts the right configuration, or says why not', async () => {
  const dir = tempDir();
  rec.activeFile = path.join(dir, 'test_cart.py');
  await rec.commands.get('strobe.debugCurrentFile')!();
  assert.deepEqual((rec.started.at(-1) as { args: string[] }).args, ['-m', 'pytest', '-q', rec.activeFile]);
  rec.activeFile = path.join(dir, 'main.c');
  const n = rec.started.length;
  await rec.commands.get('strobe.debugCurrentFile')!();
  assert.equal(rec.started.length, n);
  assert.match(rec.errors.at(-1)!, /main\.c is not a program Strobe can start/);
  rec.activeFile = undefined;
  await rec.commands.get('strobe.debugCurrentFile')!();
  assert.match(rec.errors.at(-1)!, /open the file/);
});

test('registering with agents runs `strobe install` where the person sees it', () => {
  rec.settings['strobe.path'] = fakeStrobe(tempDir(), 'http://127.0.0.1:1/?token=x');
  rec.commands.get('strobe.registerAgents')!();
  assert.deepEqual(rec.terminals.at(-1), { name: 'Strobe: install', shellPath: rec.settings['strobe.path'], shellArgs: ['install'] });
});

test('the status bar counts running sessions, and never starts a daemon', async () => {
  const home = tempDir();
  process.env.STROBE_HOME = home;
  const d = await fakeDaemon('tok4', [
    { sessionId: 'a', state: 'running' }, { sessionId: 'b', state: 'running' }, { sessionId: 'c', state: 'exited' },
  ]);
  after(d.close);
  const marker = path.join(home, 'asked');
  const bin = path.join(home, 'strobe');
  fs.writeFileSync(bin, `#!/bin/sh
touch '${marker}'
echo '${d.url}'
`, { mode: 0o755 });
  rec.settings['strobe.path'] = bin;
  const item = { text: '', tooltip: '', show() {} };
  await ext.refreshStatus(context as never, item as never);
  assert.equal(item.text, '$(debug-disconnect) Strobe', 'no daemon socket: shown as off');
  assert.ok(!fs.existsSync(marker), '`strobe ui` (which would start the daemon) was not run');
  // A daemon is listening on its socket: the count.
  const sock = net.createServer().listen(path.join(home, 'strobe.sock'));
  await new Promise((r) => sock.once('listening', r));
  after(() => sock.close());
  await ext.refreshStatus(context as never, item as never);
  assert.equal(item.text, '$(debug) Strobe: 2');
  delete process.env.STROBE_HOME;
});

test('without a binary every entry point says how to get one', () => {
  rec.settings['strobe.path'] = '/nonexistent/strobe';
  assert.throws(() => rec.adapterFactories.get('strobe')!.createDebugAdapterDescriptor(), /not found/);
  assert.match(rec.errors.at(-1)!, /"strobe.path" is "\/nonexistent\/strobe"/);
  assert.deepEqual(rec.mcpProviders.get('strobe')!.provideMcpServerDefinitions(), []);
});

const cleanups: (() => void)[] = [];
function after(f: () => void) {
  cleanups.push(f);
}
test('clean up', () => {
  for (const f of cleanups) f();
  for (const s of context.subscriptions) s.dispose();
});
