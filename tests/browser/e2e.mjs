// The web UI in a real Chromium (Debian's, driven by playwright-core)
// against a real daemon: run by tests/browser.rs, which launches the
// sessions through MCP and passes them here. Exits non-zero on the first
// failed check, saying which; screenshots go to $OUT_DIR.
//
// Env: STROBE_UI_URL (the URL `strobe ui` printed), LIVE_SESSION (a
// running ticker traced with tick_work/tick_wait), DONE_SESSION (a finished
// traced trace_c), CRASH_SESSION (a crash fixture that segfaulted),
// OUT_DIR, CHROMIUM (default /usr/bin/chromium), STROBE_TEST_NODE_MODULES
// (where playwright-core is installed).
import { createRequire } from 'node:module';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run through tests/browser.rs)`);
  return v;
};
const modules =
  process.env.STROBE_TEST_NODE_MODULES ||
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'strobe/test-tools/node/node_modules');
const { chromium } = createRequire(path.join(modules, 'noop.js'))('playwright-core');

const url = new URL(env('STROBE_UI_URL'));
const token = url.searchParams.get('token');
const origin = url.origin;
const live = env('LIVE_SESSION');
const done = env('DONE_SESSION');
const crashed = env('CRASH_SESSION');
const gui = env('GUI_SESSION');
const guiSnapshot = Number(env('GUI_SNAPSHOT'));
const out = env('OUT_DIR');
fs.mkdirSync(out, { recursive: true });

const checks = [];
function check(ok, what, detail = '') {
  if (!ok) throw new Error(`FAILED: ${what}${detail ? `: ${detail}` : ''}`);
  checks.push(what);
  console.log(`ok - ${what}`);
}

// launch() gives the browser a fresh temporary profile of its own.
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ],
});
let evil;
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  const shot = (name) => page.screenshot({ path: path.join(out, `${name}.png`), fullPage: true });

  // The session list, opened with the URL's token.
  const first = await page.goto(url.href);
  check(first && first.status() === 200, 'the UI loads with the token', String(first && first.status()));
  check(!page.url().includes('token='), 'the token is taken out of the address bar', page.url());
  const row = page.locator(`[data-testid=session-row][data-session-id="${live}"]`);
  await row.waitFor({ timeout: 15000 });
  check(true, 'the live session appears in the list');
  check(
    (await page.locator(`[data-testid=session-row][data-session-id="${done}"]`).getAttribute('data-state')) === 'exited',
    'the finished session is listed as exited',
  );
  await shot('01-sessions');

  // The live session: timeline, output streaming in, agent calls.
  await row.click();
  await page.locator(`[data-testid=session-header][data-session-id="${live}"]`).waitFor({ timeout: 10000 });
  const timeline = page.locator('[data-testid=timeline][data-ready=true]');
  await timeline.waitFor({ timeout: 15000 });
  await page.waitForFunction(
    () => Number(document.querySelector('[data-testid=timeline]')?.getAttribute('data-drawn-spans')) > 0,
    null,
    { timeout: 15000 },
  );
  const spans = Number(await timeline.getAttribute('data-drawn-spans'));
  const lanes = Number(await timeline.getAttribute('data-lanes'));
  check(spans > 0 && lanes >= 1, 'the timeline draws call spans in a thread lane', `spans=${spans} lanes=${lanes}`);
  await page.locator('[data-testid=live-state][data-state=open]').waitFor({ timeout: 10000 });
  const lines = page.locator('[data-testid=live-output] [data-testid=output-line]');
  await lines.first().waitFor({ timeout: 10000 });
  const before = await lines.count();
  await page.waitForFunction(
    (n) => document.querySelectorAll('[data-testid=live-output] [data-testid=output-line]').length > n + 2,
    before,
    { timeout: 15000 },
  );
  check(true, 'live output streams in while the target runs', `${before} lines, then more`);
  check(
    (await lines.last().textContent()).includes('tick '),
    'the streamed lines are the target\'s stdout',
  );
  const launchCall = page.locator('[data-testid=agent-calls] [data-testid=agent-call][data-tool=debug_launch]');
  await launchCall.first().waitFor({ timeout: 10000 });
  check(true, 'the agent\'s calls are shown (debug_launch)');
  check(
    Number(await timeline.getAttribute('data-agent-calls')) >= 2,
    'the agent\'s calls are on the timeline',
    await timeline.getAttribute('data-agent-calls'),
  );
  await shot('02-live-session');

  // Zoom in with the wheel: the window narrows and is fetched again.
  const fromBefore = Number(await timeline.getAttribute('data-to-ns')) - Number(await timeline.getAttribute('data-from-ns'));
  const box = await page.locator('[data-testid=timeline] canvas').first().boundingBox();
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2);
  for (let i = 0; i < 5; i++) await page.mouse.wheel(0, -400);
  await page.waitForFunction(
    (w) => {
      const t = document.querySelector('[data-testid=timeline]');
      return Number(t.getAttribute('data-to-ns')) - Number(t.getAttribute('data-from-ns')) < w / 2;
    },
    fromBefore,
    { timeout: 10000 },
  );
  check(true, 'wheel zoom narrows the timeline window');
  await shot('03-zoomed');

  // The event table filters as debug_query does.
  await page.locator('[data-testid=filter-event-type]').selectOption('function_exit');
  await page.locator('[data-testid=filter-function]').fill('tick_work');
  await page.locator('[data-testid=filter-apply]').click();
  await page.waitForFunction(
    () => {
      const rows = [...document.querySelectorAll('[data-testid=event-row]')];
      return rows.length > 0 && rows.every((r) => r.getAttribute('data-event-type') === 'function_exit');
    },
    null,
    { timeout: 10000 },
  );
  const total = Number(await page.locator('[data-testid=event-count]').getAttribute('data-total'));
  const rowTexts = await page.locator('[data-testid=event-row]').allTextContents();
  check(total > 0 && rowTexts.every((t) => t.includes('tick_work')), 'filtering by type and function works', `total=${total}`);
  await page.locator('[data-testid=event-row]').first().click();
  const detail = page.locator('[data-testid=event-detail]');
  await page.waitForFunction(
    () => (document.querySelector('[data-testid=event-detail]')?.textContent || '').includes('tick_work'),
    null,
    { timeout: 10000 },
  );
  check((await detail.textContent()).includes('tick_work'), 'a row\'s detail shows the call');
  await page.locator('[data-testid=filter-event-type]').selectOption('stdout');
  await page.locator('[data-testid=filter-function]').fill('');
  await page.locator('[data-testid=filter-text]').fill('tick 1 ->');
  await page.locator('[data-testid=filter-apply]').click();
  await page.waitForFunction(
    () => {
      const rows = [...document.querySelectorAll('[data-testid=event-row]')];
      return rows.length === 1 && rows[0].getAttribute('data-event-type') === 'stdout';
    },
    null,
    { timeout: 10000 },
  );
  check(true, 'filtering by output text finds the one line');
  await shot('04-filtered');

  // A pattern added from the page.
  await page.locator('[data-testid=pattern-input]').fill('tick_leaf');
  await page.locator('[data-testid=pattern-add]').click();
  await page.locator('[data-testid=pattern][data-pattern=tick_leaf]').waitFor({ timeout: 15000 });
  check(true, 'a trace pattern added from the page becomes active');

  // Export.
  const href = await page.locator('[data-testid=export]').getAttribute('href');
  const exported = await page.request.get(new URL(href, origin).href);
  const doc = await exported.json();
  check(
    exported.status() === 200 && doc.traceEvents.some((e) => e.ph === 'X' && e.name === 'tick_wait'),
    'the export link gives trace-event JSON with the spans',
  );
  const pfHref = await page.locator('[data-testid=export-perfetto]').getAttribute('href');
  const pf = await page.request.get(new URL(pfHref, origin).href);
  const pfBytes = await pf.body();
  // A Trace's first field is a packet (field 1, length-delimited: 0x0a).
  check(pf.status() === 200 && pfBytes.length > 100 && pfBytes[0] === 0x0a, 'the Perfetto link gives a protobuf trace', `${pf.status()} ${pfBytes.length} B`);

  // The crash view.
  await page.goto(`${origin}/#/session/${encodeURIComponent(crashed)}`);
  const crash = page.locator('[data-testid=crash-view]');
  await crash.waitFor({ timeout: 15000 });
  check((await crash.textContent()).includes('SIGSEGV'), 'the crash view names the signal');
  await shot('05-crash');

  // A GUI session: its debug_ui look is a ui_snapshot on the timeline's
  // ui channel lane, and its detail shows the tree and the screenshot.
  await page.goto(`${origin}/#/session/${encodeURIComponent(gui)}`);
  await page.locator('[data-testid=timeline][data-ready=true]').waitFor({ timeout: 15000 });
  const guiLanes = (await page.locator('[data-testid=timeline]').getAttribute('data-channels')) || '';
  check(/(^|,)ui:[1-9]/.test(guiLanes), 'the GUI session\'s look and click are on its ui channel lane', guiLanes);
  const tl = await page.evaluate(async ([id]) => {
    const t = sessionStorage.getItem('strobe.token');
    const r = await fetch(`/api/sessions/${encodeURIComponent(id)}/timeline?from=0&columns=800`, {
      headers: t ? { Authorization: `Bearer ${t}` } : {},
    });
    return r.json();
  }, [gui]);
  check(
    JSON.stringify(tl).includes('"ui_snapshot"'),
    'the GUI session\'s timeline has a ui_snapshot marker',
    JSON.stringify(tl).slice(0, 300),
  );
  await page.locator('[data-testid=filter-event-type]').selectOption('ui_snapshot');
  await page.locator('[data-testid=filter-apply]').click();
  const uiRow = page.locator(`[data-testid=event-row][data-event-type=ui_snapshot]`).first();
  await uiRow.waitFor({ timeout: 10000 });
  await uiRow.click();
  const tree = page.locator('[data-testid=ui-tree]');
  await tree.waitFor({ timeout: 10000 });
  check((await tree.textContent()).includes('[Play]'), 'the ui_snapshot detail shows the tree');
  await page.waitForFunction(
    () => {
      const img = document.querySelector('[data-testid=ui-screenshot]');
      return img && img.complete && img.naturalWidth === 640;
    },
    null,
    { timeout: 10000 },
  );
  check(true, 'the ui_snapshot detail shows the screenshot');
  check(Number.isInteger(guiSnapshot), 'the snapshot event id is known');
  await shot('06-ui-snapshot');

  // The click debug_ui_action made: a ui_action marker whose row says how
  // and that it was verified, and the call in the agent's lane.
  check(
    JSON.stringify(tl).includes('"ui_action"'),
    'the GUI session\'s timeline has a ui_action marker',
    JSON.stringify(tl).slice(0, 300),
  );
  await page.locator('[data-testid=filter-event-type]').selectOption('ui_action');
  await page.locator('[data-testid=filter-apply]').click();
  const actRow = page.locator('[data-testid=event-row][data-event-type=ui_action]').first();
  await actRow.waitFor({ timeout: 10000 });
  const actText = await actRow.textContent();
  check(actText.includes('click') && actText.includes(': verified'), 'the ui_action row says what was done and that it was verified', actText);
  const actCall = page.locator('[data-testid=agent-calls] [data-testid=agent-call][data-tool=debug_ui_action]');
  await actCall.first().waitFor({ timeout: 10000 });
  check((await actCall.count()) >= 1, 'the agent lane lists the debug_ui_action call');

  // Embedded in an editor: the VS Code extension's own panel page
  // (editors/vscode's timelineHtml, its CSP and its message relay) served
  // from another site (localhost, the UI being on 127.0.0.1), in a fresh
  // context with no cookie, as a webview frames it. The UI must load with
  // the token from its address alone, and a click on an event's source must
  // reach the extension through the relay.
  const { timelineHtml } = createRequire(import.meta.url)(
    path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../editors/vscode/out/src/webview.js'),
  );
  const panelHtml = timelineHtml(`${origin}/?token=${token}#/session/${encodeURIComponent(done)}`, 'n0nce0123456789abcdef');
  const webview = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(panelHtml));
  await new Promise((r) => webview.listen(0, '127.0.0.1', r));
  const editorContext = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await editorContext.addInitScript(() => {
    window.toExtension = [];
    window.acquireVsCodeApi = () => ({ postMessage: (m) => window.toExtension.push(m) });
  });
  const host = await editorContext.newPage();
  const blocked = [];
  host.on('console', (m) => { if (/Content.Security.Policy/i.test(m.text())) blocked.push(m.text()); });
  await host.goto(`http://localhost:${webview.address().port}/`);
  const framed = host.frameLocator('#strobe-ui');
  await framed.locator('[data-testid=event-row][data-event-type=function_enter]').first().click({ timeout: 15000 });
  await framed.locator('[data-testid=event-source]').click({ timeout: 10000 });
  await host.waitForFunction(() => window.toExtension.length > 0, null, { timeout: 10000 });
  const asked = await host.evaluate(() => window.toExtension[0]);
  check(
    asked.type === 'strobe.openSource' && asked.path.endsWith('trace_c.c') && asked.line > 0,
    "in the VS Code panel's page (another site, no cookie), clicking an event's source reaches the extension",
    JSON.stringify(asked),
  );
  check(blocked.length === 0, "the panel's CSP blocks nothing the UI needs", blocked.join(' | '));
  await host.screenshot({ path: path.join(out, '08-editor-panel.png') });
  await editorContext.close();
  webview.close();
  // In a browser tab the same click sends nothing (nothing embeds it).
  await page.goto(`${origin}/#/session/${encodeURIComponent(done)}`);
  await page.locator('[data-testid=event-row][data-event-type=function_enter]').first().click({ timeout: 15000 });
  check(
    (await page.locator('[data-testid=event-source]').getAttribute('class')) === null,
    'in a browser tab the source is not offered as a link',
  );

  // The program driven through stdin by a scenario: a lane for its stdin
  // channel and one for the scenario's steps, each with its items.
  await page.goto(`${origin}/#/session/${encodeURIComponent(env("CHANNEL_SESSION"))}`);
  const driven = page.locator('[data-testid=timeline][data-ready=true]');
  await driven.waitFor({ timeout: 15000 });
  const channelLanes = Object.fromEntries(
    ((await driven.getAttribute('data-channels')) || '').split(',').filter(Boolean).map((p) => p.split(':')).map(([k, v]) => [k, Number(v)]),
  );
  check(channelLanes.stdin >= 1, 'the stdin channel has a lane with the line sent', JSON.stringify(channelLanes));
  check(channelLanes.scenario >= 3, 'the scenario\'s steps have a lane of their own', JSON.stringify(channelLanes));
  await shot('07-channel-lanes');

  // Two runs of one program that differ deep in a call chain: ticked in
  // the list, compared, the divergence named and marked on both timelines.
  const diffBase = env('DIFF_BASELINE');
  const diffCand = env('DIFF_CANDIDATE');
  await page.goto(`${origin}/#/`);
  for (const id of [diffCand, diffBase]) {
    const pick = page.locator(`[data-testid=session-row][data-session-id="${id}"] [data-testid=pick]`);
    await pick.waitFor({ timeout: 15000 });
    await pick.check();
  }
  const compareButton = page.locator('[data-testid=compare]');
  check(await compareButton.isEnabled(), 'two runs of one program picked can be compared');
  await compareButton.click();
  await page.waitForURL(/#\/diff\//, { timeout: 10000 });
  check(
    page.url().endsWith(`#/diff/${encodeURIComponent(diffBase)}/${encodeURIComponent(diffCand)}`),
    'the older run is the baseline',
    page.url(),
  );
  const divergence = page.locator('[data-testid=diff-divergence]');
  await divergence.waitFor({ timeout: 20000 });
  check((await divergence.getAttribute('data-kind')) === 'arguments', 'the diff names an argument as the first divergence');
  const candText = (await page.locator('[data-testid=diff-candidate]').textContent()) || '';
  check(candText.includes('round_ > stage > leaf') && candText.includes('v=40'), 'the divergent call and its argument are shown', candText);
  for (const which of ['baseline', 'candidate']) {
    await page.waitForFunction(
      (sel) => document.querySelector(sel)?.dataset.markDrawn === '1',
      `[data-testid=diff-timeline-${which}] [data-testid=timeline]`,
      { timeout: 15000 },
    );
    check(true, `the divergence is marked on the ${which}'s timeline`);
  }
  await shot('08-diff');

  // Test runs view.
  await page.goto(`${origin}/#/tests`);
  await page.locator('[data-testid=tests-view]').waitFor({ timeout: 10000 });
  check(true, 'the test runs view opens');

  check(pageErrors.length === 0, 'no uncaught errors in the page', pageErrors.join('; '));

  // The token is enforced: a fresh browser without it is refused.
  const stranger = await browser.newContext();
  const bare = await (await stranger.newPage()).goto(`${origin}/`);
  check(bare.status() === 401, 'a page load without the token is refused', String(bare.status()));
  check(
    (await bare.text()).includes('strobe ui'),
    'the refusal page says how to get a URL with the token',
  );
  const api = await stranger.request.get(`${origin}/api/sessions`);
  check(api.status() === 401, 'an API request without the token is refused', String(api.status()));

  // A foreign page (another origin) that knows the token still cannot
  // drive the API: the browser sends its Origin and the guard refuses it.
  evil = http.createServer((req, res) => {
    res.setHeader('Content-Type', 'text/html');
    res.end(`<!doctype html><script>
      fetch(${JSON.stringify(`${origin}/api/sessions?token=${token}`)}, {mode: 'no-cors'}).catch(() => {});
    </script>`);
  });
  await new Promise((r) => evil.listen(0, '127.0.0.1', r));
  const evilPage = await stranger.newPage();
  const refused = evilPage.waitForResponse((r) => r.url().startsWith(`${origin}/api/sessions`), { timeout: 10000 });
  await evilPage.goto(`http://127.0.0.1:${evil.address().port}/`);
  const r = await refused;
  check(r.status() === 403, 'a foreign origin is refused even with the token', String(r.status()));

  console.log(`${checks.length} checks passed`);
} finally {
  if (evil) evil.close();
  await browser.close();
}
