// `#/tests` and `#/tests/<id>`: debug_test runs, their failures and stuck
// tests with thread stacks.

import { ApiError, api, errorText } from '../api';
import { copyButton, details, h, jsonBlock, replace } from '../dom';
import { location as fileLocation } from '../lib/events';
import { formatMs } from '../lib/format';
import { sessionHref, testHref } from '../lib/nav';
import { failures, runCounts, runVerdict, stuckEntries } from '../lib/testruns';
import type { Ctx, Unmount } from '../main';
import type { TestRun } from '../types';
import { renderFrames } from './crash';

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

function notAvailable(root: HTMLElement) {
  replace(
    root,
    h(
      'div',
      { class: 'empty', 'data-testid': 'tests-view' },
      h('h1', null, 'Test runs'),
      h('p', null, 'Not available in this daemon: it does not list test runs over HTTP (no /api/tests route). Update Strobe to see debug_test runs here.'),
    ),
  );
}

function countsEl(run: TestRun) {
  const c = runCounts(run);
  return h(
    'span',
    { class: 'test-counts mono' },
    h('span', { class: 'c-pass', title: 'passed' }, `${c.passed} passed`),
    h('span', { class: c.failed ? 'c-fail' : 'c-zero', title: 'failed' }, `${c.failed} failed`),
    c.skipped ? h('span', { class: 'c-skip', title: 'skipped' }, `${c.skipped} skipped`) : '',
    c.stuck ? h('span', { class: 'c-stuck', title: 'stuck' }, `${c.stuck} stuck`) : '',
  );
}

function verdictBadge(run: TestRun) {
  const v = runVerdict(run);
  const cls = v === 'passed' ? 'ok' : v === 'running' ? 'running' : v === 'no tests' ? 'subtle' : v === 'stuck' ? 'warn' : 'err';
  return h('span', { class: `badge ${cls}` }, v);
}

function durationOf(run: TestRun): string {
  const s = run.summary as Record<string, unknown> | undefined;
  if (s && typeof s.durationMs === 'number') return formatMs(s.durationMs);
  if (typeof run.elapsedMs === 'number') return `${formatMs(run.elapsedMs)} so far`;
  return '';
}

/** The watchdog's note on a running test that has gone quiet. */
function stuckWarning(w: unknown) {
  if (typeof w !== 'object' || w === null) return h('div', { class: 'panel warn-panel' }, h('h2', null, 'Quiet test'), h('p', null, String(w)));
  const o = w as Record<string, unknown>;
  const headline = str(o.judgement) ?? str(o.message) ?? str(o.diagnosis);
  const rows = Object.entries(o)
    .filter(([k]) => !['judgement', 'message', 'diagnosis'].includes(k))
    .map(([k, v]) => [k.replace(/Ms$/, '').replace(/([A-Z])/g, ' $1').toLowerCase(), /Ms$/.test(k) && typeof v === 'number' ? formatMs(v) : typeof v === 'object' ? JSON.stringify(v) : String(v)] as const);
  return h(
    'div',
    { class: 'panel warn-panel' },
    h('h2', null, 'Quiet test'),
    headline ? h('p', null, headline) : '',
    h('dl', { class: 'facts' }, rows.map(([k, v]) => [h('dt', null, k), h('dd', { class: 'mono' }, v)])),
  );
}

export function testsView(root: HTMLElement, ctx: Ctx): Unmount {
  ctx.title('Tests');
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const tbody = h('tbody');
  const status = h('p', { class: 'muted small' }, 'Loading…');
  const table = h(
    'table',
    { class: 'grid', hidden: true },
    h('thead', null, h('tr', null, ['Run', 'Framework', 'Result', 'Counts', 'Duration', 'Session'].map((t) => h('th', null, t)))),
    tbody,
  );
  replace(root, h('div', { 'data-testid': 'tests-view' }, h('div', { class: 'page-head' }, h('h1', null, 'Test runs'), status), table));

  const tick = async () => {
    let again = true;
    try {
      const r = await api.tests();
      if (stopped) return;
      ctx.error('tests', null);
      const runs = Array.isArray(r.runs) ? r.runs : [];
      table.hidden = runs.length === 0;
      if (!runs.length) {
        replace(status, 'No test runs yet. An agent starts one with ', h('code', null, 'debug_test'), '.');
      } else {
        replace(status, `${runs.length} run${runs.length === 1 ? '' : 's'} · refreshed every 2 s`);
      }
      replace(
        tbody,
        runs.map((run) => {
          const id = str(run.testRunId) ?? '?';
          const open = () => (window.location.hash = testHref(id));
          return h(
            'tr',
            {
              'data-testid': 'test-run-row',
              'data-test-run-id': id,
              'data-status': str(run.status) ?? 'unknown',
              class: 'clickable',
              tabindex: 0,
              onclick: (ev: MouseEvent) => {
                if (!(ev.target as HTMLElement).closest('a')) open();
              },
              onkeydown: (ev: KeyboardEvent) => {
                if (ev.key === 'Enter') open();
              },
            },
            h('td', { class: 'mono' }, h('a', { href: testHref(id), tabindex: -1 }, id)),
            h('td', null, str(run.framework) ?? ''),
            h('td', null, verdictBadge(run)),
            h('td', null, countsEl(run)),
            h('td', { class: 'mono' }, durationOf(run)),
            h('td', { class: 'mono' }, str(run.sessionId) ? h('a', { href: sessionHref(str(run.sessionId) as string) }, str(run.sessionId)) : ''),
          );
        }),
      );
    } catch (e) {
      if (stopped) return;
      if (e instanceof ApiError && e.routeMissing) {
        notAvailable(root);
        again = false;
      } else {
        ctx.error('tests', errorText(e));
      }
    }
    if (!stopped && again) timer = setTimeout(tick, 2000);
  };
  void tick();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}


export function testRunView(root: HTMLElement, ctx: Ctx, id: string): Unmount {
  ctx.title(`Test run ${id}`);
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const body = h('div');
  replace(
    root,
    h('div', { 'data-testid': 'tests-view', class: 'test-run' }, h('div', { class: 'crumbs small' }, h('a', { href: '#/tests' }, '← Test runs')), body),
  );
  replace(body, h('p', { class: 'muted' }, 'Loading…'));

  const render = (run: TestRun) => {
    const fails = failures(run);
    const stuck = stuckEntries(run);
    const progress = (run.progress ?? {}) as Record<string, unknown>;
    const facts: [string, Node | string][] = [];
    if (str(run.framework)) facts.push(['framework', str(run.framework) as string]);
    facts.push(['result', verdictBadge(run)]);
    facts.push(['counts', countsEl(run)]);
    const dur = durationOf(run);
    if (dur) facts.push(['duration', dur]);
    if (typeof run.exitCode === 'number') facts.push(['exit code', String(run.exitCode)]);
    if (str(run.phase)) facts.push(['phase', str(run.phase) as string]);
    if (str(progress.currentGroup)) facts.push(['group', str(progress.currentGroup) as string]);
    if (str(progress.currentTest)) {
      const el = typeof progress.currentTestElapsedMs === 'number' ? ` for ${formatMs(progress.currentTestElapsedMs)}` : '';
      const base = typeof progress.currentTestBaselineMs === 'number' ? ` (usually ${formatMs(progress.currentTestBaselineMs)})` : '';
      facts.push(['running', `${progress.currentTest}${el}${base}`]);
    }
    if (str(run.sessionId)) facts.push(['session', h('a', { href: sessionHref(str(run.sessionId) as string) }, str(run.sessionId))]);
    if (str(run.details)) facts.push(['details file', str(run.details) as string]);
    const running = Array.isArray(run.running) ? (run.running as unknown[]).map(String) : [];

    replace(
      body,
      h('div', { class: 'page-head' }, h('h1', { class: 'mono' }, id)),
      h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', null, k), h('dd', null, v)])),
      str(run.error) ? h('div', { class: 'panel error-panel' }, h('h2', null, 'The run failed'), h('pre', { class: 'output-text' }, str(run.error))) : '',
      run.noTests ? h('div', { class: 'panel' }, h('h2', null, 'No tests ran'), h('p', null, str(run.hint) ?? '')) : '',
      run.stuckWarning ? stuckWarning(run.stuckWarning) : '',
      running.length ? h('div', { class: 'panel' }, h('h2', null, 'Running now'), h('ul', { class: 'mono' }, running.map((r) => h('li', null, r)))) : '',
      fails.length
        ? h(
            'section',
            { class: 'panel' },
            h('h2', null, `${run.status === 'running' ? 'Failures so far' : 'Failures'} (${fails.length})`),
            fails.map((f) =>
              h(
                'article',
                { class: 'failure', 'data-testid': 'test-failure' },
                h('h3', { class: 'mono' }, f.name),
                f.file ? h('div', { class: 'mono small', title: f.file }, fileLocation(f.file, f.line, true)) : '',
                f.message ? h('pre', { class: 'output-text' }, f.message) : '',
                f.rerun ? h('div', { class: 'rerun' }, h('code', null, f.rerun), copyButton(f.rerun, 'Copy rerun command')) : '',
                Object.keys(f.extra).length ? details('More', jsonBlock(f.extra)) : '',
              ),
            ),
          )
        : '',
      stuck.length
        ? h(
            'section',
            { class: 'panel' },
            h('h2', null, `Stuck tests (${stuck.length})`),
            stuck.map((s) =>
              h(
                'article',
                { class: 'stuck', 'data-testid': 'test-stuck' },
                h('h3', { class: 'mono' }, s.name, ' ', s.verdict ? h('span', { class: 'badge warn' }, s.verdict) : ''),
                s.diagnosis ? h('p', null, s.diagnosis) : '',
                s.error ? h('p', { class: 'error-text' }, `No stacks: ${s.error}`) : '',
                s.threads.map((t) => details(`${t.title}${t.state ? ` — ${t.state}` : ''} (${t.frames.length} frames)`, renderFrames(t.frames), s.threads.length <= 3)),
                Object.keys(s.extra).length ? details('More', jsonBlock(s.extra)) : '',
              ),
            ),
          )
        : '',
      details('Raw JSON', jsonBlock(run)),
    );
  };

  const tick = async () => {
    let again = false;
    try {
      const run = await api.test(id);
      if (stopped) return;
      ctx.error('test', null);
      render(run);
      again = run.status === 'running';
    } catch (e) {
      if (stopped) return;
      if (e instanceof ApiError && e.routeMissing) notAvailable(root);
      else if (e instanceof ApiError && e.status === 404) replace(body, h('p', null, e.message));
      else {
        ctx.error('test', errorText(e));
        again = true;
      }
    }
    if (!stopped && again) timer = setTimeout(tick, 2000);
  };
  void tick();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
