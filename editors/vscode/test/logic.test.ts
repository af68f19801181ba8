// The decisions, without VS Code: which binary, which configuration, the
// panel's page and its message handling, the session list.

import assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import * as vm from 'node:vm';
import { findStrobe, MISSING } from '../src/binary';
import { configForFile, sessionItems, statusText } from '../src/config';
import { listSessions, running, uiUrl } from '../src/daemon';
import { parseOpenSource, timelineHtml, uiOrigin } from '../src/webview';
import { fakeDaemon, fakeStrobe, tempDir } from './helpers';

test('the binary: the setting first, then PATH, then a checkout build, else how to get one', () => {
  const have = new Set(['/opt/s/strobe', '/usr/bin/strobe', '/repo/target/debug/strobe', '/repo/target/release/strobe']);
  const isExecutable = (p: string) => have.has(p);
  const base = { envPath: ['/nope', '/usr/bin'].join(path.delimiter), checkouts: ['/repo'], isExecutable };
  assert.deepEqual(findStrobe({ ...base, setting: '/opt/s/strobe' }), { path: '/opt/s/strobe', from: 'setting' });
  assert.deepEqual(findStrobe(base), { path: '/usr/bin/strobe', from: 'PATH' });
  assert.deepEqual(findStrobe({ ...base, envPath: '/nope' }), { path: '/repo/target/release/strobe', from: 'build' });
  const bad = findStrobe({ ...base, setting: '/opt/s/missing' });
  assert.ok('error' in bad && bad.error.includes('"strobe.path"') && bad.error.includes('/opt/s/missing'));
  assert.deepEqual(findStrobe({ envPath: '', checkouts: [], isExecutable }), { error: MISSING });
  assert.match(MISSING, /\.\/dev setup/);
});

test('the current file: tests through their runner, scripts through their interpreter, programs as they are', () => {
  const c = (f: string, x = false) => configForFile(f, x);
  assert.deepEqual(c('/p/test_cart.py'), {
    type: 'strobe', request: 'launch', name: 'Strobe: test test_cart.py', program: 'python3', args: ['-m', 'pytest', '-q', '/p/test_cart.py'], cwd: '/p',
  });
  assert.deepEqual((c('/p/app.py') as { args: string[] }).args, ['/p/app.py']);
  assert.deepEqual((c('/p/a.test.mjs') as { args: string[] }).args, ['--test', '/p/a.test.mjs']);
  assert.equal((c('/p/server.js') as { program: string }).program, 'node');
  assert.equal((c('/p/build/app', true) as { program: string }).program, '/p/build/app');
  const src = c('/p/main.c');
  assert.ok('error' in src && src.error.includes('build it'), JSON.stringify(src));
});

test('the attach picker lists running sessions, newest first; the status bar counts them', () => {
  const sessions = [
    { sessionId: 'old-1', state: 'running', pid: 10, binaryPath: '/b/old', startedAt: 1 },
    { sessionId: 'done-2', state: 'exited', pid: 11, startedAt: 3 },
    { sessionId: 'new-3', state: 'running', pid: 12, binaryPath: '/b/new', startedAt: 2 },
  ];
  const items = sessionItems(running(sessions));
  assert.deepEqual(items.map((i) => i.sessionId), ['new-3', 'old-1']);
  assert.deepEqual(items[0], { label: 'new', description: 'pid 12 · running', detail: 'new-3', sessionId: 'new-3' });
  assert.equal(statusText(2).text, '$(debug) Strobe: 2');
  assert.match(statusText(1).tooltip, /1 session running/);
  assert.match(statusText(null).tooltip, /not running/);
});

test("the panel's page frames only the loopback UI, under a strict CSP", () => {
  const nonce = 'abcdefABCDEF0123456789';
  const html = timelineHtml('http://127.0.0.1:4555/?token=t0k"en', nonce);
  const csp = /http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(html)?.[1];
  assert.equal(csp, `default-src 'none'; frame-src http://127.0.0.1:4555; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'`);
  assert.ok(html.includes('src="http://127.0.0.1:4555/?token=t0k&quot;en"'), 'the address is escaped in the attribute');
  assert.equal((html.match(/<script/g) ?? []).length, 1);
  assert.ok(html.includes(`<script nonce="${nonce}">`));
  assert.throws(() => timelineHtml('https://evil.example/?token=x', nonce), /loopback/);
  assert.throws(() => timelineHtml('http://10.0.0.2:80/', nonce), /loopback/);
  assert.throws(() => timelineHtml('not a url', nonce), /not a URL/);
  assert.throws(() => timelineHtml('http://127.0.0.1:1/', 'x"><script>'), /nonce/);
  assert.equal(uiOrigin('http://localhost:9/x'), 'http://localhost:9');
});

test("the page's script passes on only the UI's open-source requests", () => {
  const html = timelineHtml('http://127.0.0.1:4555/?token=t', 'abcdefABCDEF0123456789');
  const script = /<script nonce="[^"]+">([\s\S]*?)<\/script>/.exec(html)![1];
  const posted: unknown[] = [];
  let onMessage: (e: { origin: string; data: unknown }) => void = () => {};
  vm.runInNewContext(script, {
    acquireVsCodeApi: () => ({ postMessage: (m: unknown) => posted.push(m) }),
    window: { addEventListener: (_: string, f: typeof onMessage) => (onMessage = f) },
  });
  onMessage({ origin: 'http://127.0.0.1:4555', data: { type: 'strobe.openSource', path: '/src/a.c', line: 12 } });
  onMessage({ origin: 'http://evil.example', data: { type: 'strobe.openSource', path: '/etc/passwd', line: 1 } });
  onMessage({ origin: 'http://127.0.0.1:4555', data: { type: 'something-else' } });
  onMessage({ origin: 'http://127.0.0.1:4555', data: null });
  assert.deepEqual(JSON.parse(JSON.stringify(posted)), [{ type: 'strobe.openSource', path: '/src/a.c', line: 12 }]);
});

test('open-source requests are checked', () => {
  assert.deepEqual(parseOpenSource({ type: 'strobe.openSource', path: '/a.c', line: 3 }), { type: 'strobe.openSource', path: '/a.c', line: 3 });
  assert.equal(parseOpenSource({ type: 'strobe.openSource', path: '/a.c', line: -1 })?.line, 0);
  assert.equal(parseOpenSource({ type: 'strobe.openSource', path: 'relative.c', line: 3 }), null);
  assert.equal(parseOpenSource({ type: 'other', path: '/a.c' }), null);
  assert.equal(parseOpenSource('strobe.openSource'), null);
});

test('the session list is read with the Bearer token of the UI address', async () => {
  const d = await fakeDaemon('s3cret', [{ sessionId: 'a-1', state: 'running' }, { bogus: true }]);
  try {
    assert.deepEqual(await listSessions(d.url), [{ sessionId: 'a-1', state: 'running' }]);
    assert.ok(d.seen[0].endsWith('Bearer s3cret'), d.seen[0]);
    const wrong = d.url.replace('s3cret', 'guess');
    await assert.rejects(listSessions(wrong), /refused the session list \(401\)/);
    await assert.rejects(listSessions(d.url.split('?')[0]), /no token/);
  } finally {
    d.close();
  }
});

test('`strobe ui` gives the address, or says why not', async () => {
  const dir = tempDir();
  const bin = fakeStrobe(dir, 'http://127.0.0.1:4555/?token=abc');
  assert.equal(await uiUrl(bin), 'http://127.0.0.1:4555/?token=abc');
  const broken = path.join(dir, 'broken');
  require('node:fs').writeFileSync(broken, '#!/bin/sh\necho "the daemon could not start" >&2\nexit 1\n', { mode: 0o755 });
  await assert.rejects(uiUrl(broken), /`strobe ui` failed: the daemon could not start/);
});
