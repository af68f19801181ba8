// `#/diff/<baseline>/<candidate>`: what differs between two runs of one
// program (debug_diff's answer), with the first divergence marked on both
// sessions' timelines.

import { api, errorText } from '../api';
import { h, replace } from '../dom';
import { diffHref, sessionHref } from '../lib/nav';
import { kindText } from '../lib/diff';
import type { Ctx, Unmount } from '../main';
import type { DiffReply, DiffSide } from '../types';
import { createTimeline, type TimelineHandle } from './timeline';

function sideCard(title: string, sessionId: string, side: DiffSide | null | undefined, testid: string): HTMLElement {
  if (!side) {
    return h('div', { class: 'diff-side muted', 'data-testid': testid }, h('h3', null, title), 'no call here: its thread made no more calls');
  }
  return h(
    'div',
    { class: 'diff-side', 'data-testid': testid },
    h('h3', null, title, ' ', h('a', { class: 'mono small', href: sessionHref(sessionId) }, `#${side.eventId}`)),
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'call'),
      h('dd', { class: 'mono' }, side.path, side.ordinal > 0 ? ` (call ${side.ordinal + 1} of this path)` : ''),
      h('dt', null, 'arguments'),
      h('dd', { class: 'mono' }, side.arguments ?? '—'),
      h('dt', null, 'returned'),
      h('dd', { class: 'mono' }, side.returnValue ?? (side.exitEventId ? '—' : 'did not return')),
    ),
  );
}

function list<T>(title: string, items: T[], render: (t: T) => string, more?: number): HTMLElement | string {
  if (!items.length) return '';
  return h(
    'section',
    { class: 'diff-list' },
    h('h3', null, title),
    h('ul', null, items.map((i) => h('li', { class: 'mono' }, render(i)))),
    more ? h('p', { class: 'muted small' }, `${more} more not shown`) : '',
  );
}

export function diffView(root: HTMLElement, ctx: Ctx, baseline: string, candidate: string): Unmount {
  ctx.title(`Diff ${candidate}`);
  const status = h('p', { class: 'muted small', 'aria-live': 'polite' }, 'Comparing…');
  const body = h('div', { class: 'diff-body' });
  replace(
    root,
    h(
      'div',
      { class: 'diff-view', 'data-testid': 'diff' },
      h(
        'div',
        { class: 'page-head' },
        h('h1', null, 'Diff of two runs'),
        h('a', { class: 'small', href: diffHref(candidate, baseline), title: 'Make the other session the baseline' }, 'Swap'),
        status,
      ),
      body,
    ),
  );
  const timelines: TimelineHandle[] = [];
  let gone = false;

  const show = (d: DiffReply) => {
    const div = d.firstDivergence;
    status.textContent = `${d.candidate.sessionId} (candidate) against ${d.baseline.sessionId} (baseline) · ${d.candidate.program}`;
    const head = div
      ? h(
          'section',
          { class: 'panel diff-divergence', 'data-testid': 'diff-divergence', 'data-kind': div.kind },
          h('h2', null, 'First divergence'),
          h('p', null, `${kindText(div.kind)} — thread ${div.thread}, after ${div.matchedBefore} matching calls.`),
          h('div', { class: 'diff-sides' }, sideCard('Baseline', d.baseline.sessionId, div.baseline, 'diff-baseline'), sideCard('Candidate', d.candidate.sessionId, div.candidate, 'diff-candidate')),
        )
      : h('section', { class: 'panel', 'data-testid': 'diff-divergence', 'data-kind': 'none' }, h('h2', null, 'No divergence'), h('p', null, `The ${d.candidate.callsCompared} calls compared match.`));
    const exit = h('p', { 'data-testid': 'diff-exit' }, d.exit.same ? `Both ${d.baseline.ended}.` : `Baseline ${d.exit.baseline}; candidate ${d.exit.candidate}.`);
    const out = d.output.firstDifferences;
    const lanes: HTMLElement[] = [];
    for (const [title, id, side] of [
      ['Baseline', d.baseline.sessionId, div?.baseline],
      ['Candidate', d.candidate.sessionId, div?.candidate],
    ] as const) {
      const t = createTimeline(id, () => {});
      timelines.push(t);
      if (side) t.mark(side.timestampNs, `diverges: ${side.function}`);
      lanes.push(h('section', { class: 'panel', 'data-testid': `diff-timeline-${title.toLowerCase()}` }, h('h3', null, title, ' ', h('a', { class: 'mono small', href: sessionHref(id) }, id)), t.el));
    }
    replace(
      body,
      head,
      exit,
      list('Output that differs', out, (o) => `${o.stream} line ${o.line + 1}: baseline ${o.baseline ? JSON.stringify(o.baseline.text) : 'nothing'}, candidate ${o.candidate ? JSON.stringify(o.candidate.text) : 'nothing'}`),
      list('Called only in the candidate', d.calls.onlyInCandidate, (c) => `${c.function} (${c.calls})`, d.truncated.onlyInCandidate),
      list('Called only in the baseline', d.calls.onlyInBaseline, (c) => `${c.function} (${c.calls})`, d.truncated.onlyInBaseline),
      list('Call counts that differ', d.calls.countsDiffer, (c) => `${c.function}: ${c.baseline} → ${c.candidate}`, d.truncated.countsDiffer),
      list('Values seen in one run only', d.valueDifferences, (v) => `${v.function} ${v.what === 'returnValue' ? 'returned' : 'was called with'} ${v.value} in ${v.calls}/${v.of} calls in ${v.in} (first #${v.firstEventId})`, d.truncated.valueDifferences),
      list('Not compared', d.notCompared, (n) => n),
      ...lanes,
    );
  };

  api
    .diff(baseline, candidate)
    .then((d) => {
      if (!gone) show(d);
    })
    .catch((e) => {
      if (gone) return;
      status.textContent = 'Could not compare these sessions.';
      replace(body, h('p', { class: 'error-text', 'data-testid': 'diff-error' }, errorText(e)));
    });

  return () => {
    gone = true;
    for (const t of timelines) t.destroy();
  };
}
