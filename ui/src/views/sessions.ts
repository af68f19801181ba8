// `#/`: every session the daemon knows, refreshed every 2 s.

import { api, errorText } from '../api';
import { h, replace, stateBadge } from '../dom';
import { formatAgo, formatClock, formatCount, formatDuration } from '../lib/format';
import { baseName } from '../lib/events';
import { diffHref, sessionHref } from '../lib/nav';
import { diffPair } from '../lib/diff';
import type { Ctx, Unmount } from '../main';
import type { Session } from '../types';

export function exitText(s: Session): string {
  if (s.signal) return String(s.signal);
  if (typeof s.exitCode === 'number') return `exit ${s.exitCode}`;
  if (s.reason) return String(s.reason);
  return '';
}

export function countsCell(s: Session): HTMLElement {
  const ev = s.events;
  const cell = h('span', { class: 'counts' }, formatCount(ev?.stored ?? 0));
  if (ev?.dropped) cell.append(' ', h('span', { class: 'badge warn', title: 'events the target produced faster than Strobe could store them; they are lost' }, `${formatCount(ev.dropped)} dropped`));
  if (ev?.evicted) cell.append(' ', h('span', { class: 'badge warn', title: 'oldest events removed to stay within the session’s event limit' }, `${formatCount(ev.evicted)} evicted`));
  return cell;
}

export function sessionsView(root: HTMLElement, ctx: Ctx): Unmount {
  ctx.title('Sessions');
  const tbody = h('tbody');
  const status = h('p', { class: 'muted small', 'aria-live': 'polite' }, 'Loading…');
  const table = h(
    'table',
    { class: 'grid sessions' },
    h(
      'thead',
      null,
      h('tr', null, h('th', null, h('span', { class: 'sr-only' }, 'Compare')), h('th', null, 'Session'), h('th', null, 'Binary'), h('th', null, 'State'), h('th', null, 'Exit'), h('th', { class: 'num' }, 'Events'), h('th', null, 'Started'), h('th', null, 'Duration'), h('th', null, '')),
    ),
    tbody,
  );
  // Two sessions ticked can be compared (debug_diff): the older is the baseline.
  const picked = new Set<string>();
  let latest: Session[] = [];
  const compare = h('button', { type: 'button', class: 'small', 'data-testid': 'compare', disabled: true }, 'Compare');
  const compareNote = h('span', { class: 'muted small' }, 'tick two runs of one program to compare them');
  const pickedSessions = () => latest.filter((s) => picked.has(s.sessionId));
  const updateCompare = () => {
    const pair = diffPair(pickedSessions());
    compare.disabled = 'why' in pair;
    compareNote.textContent = 'why' in pair ? pair.why : 'older = baseline, newer = candidate';
  };
  compare.addEventListener('click', () => {
    const pair = diffPair(pickedSessions());
    if (!('why' in pair)) location.hash = diffHref(pair.baseline, pair.candidate);
  });
  const container = h(
    'div',
    { 'data-testid': 'sessions', class: 'sessions-view' },
    h('div', { class: 'page-head' }, h('h1', null, 'Sessions'), status, h('span', { class: 'compare-bar' }, compare, ' ', compareNote)),
    table,
  );
  replace(root, container);

  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | null = null;

  const open = (id: string) => {
    location.hash = sessionHref(id);
  };

  const render = (list: Session[]) => {
    const focusedId = (document.activeElement as HTMLElement | null)?.closest?.('[data-testid=session-row]')?.getAttribute('data-session-id');
    if (!list.length) {
      table.hidden = true;
      replace(
        status,
        h(
          'div',
          { class: 'empty' },
          h('h2', null, 'No sessions yet'),
          h(
            'p',
            null,
            'A session starts when an agent calls ',
            h('code', null, 'debug_launch'),
            ' (or ',
            h('code', null, 'debug_test'),
            ' runs tests under Strobe). Ask your agent to launch the program it is debugging; it shows up here within two seconds.',
          ),
        ),
      );
      return;
    }
    table.hidden = false;
    latest = list;
    for (const id of [...picked]) if (!list.some((s) => s.sessionId === id)) picked.delete(id);
    updateCompare();
    const now = Date.now();
    const sorted = [...list].sort((a, b) => (b.startedAt ?? 0) - (a.startedAt ?? 0));
    replace(status, `${sorted.length} session${sorted.length === 1 ? '' : 's'} · refreshed every 2 s`);
    replace(
      tbody,
      sorted.map((s) => {
        const dur = s.startedAt ? ((s.endedAt ?? now) - s.startedAt) * 1e6 : undefined;
        const flags: HTMLElement[] = [];
        if (s.live) flags.push(h('span', { class: 'badge subtle', title: 'held by the daemon' }, 'live'));
        if (s.retained) flags.push(h('span', { class: 'badge subtle', title: 'kept after stopping for later queries' }, 'retained'));
        const row = h(
          'tr',
          {
            'data-testid': 'session-row',
            'data-session-id': s.sessionId,
            'data-state': s.state,
            tabindex: 0,
            class: 'clickable',
            title: `Open ${s.sessionId}`,
            onclick: (ev: MouseEvent) => {
              if ((ev.target as HTMLElement).closest('a')) return;
              open(s.sessionId);
            },
            onkeydown: (ev: KeyboardEvent) => {
              if (ev.key === 'Enter' || ev.key === ' ') {
                ev.preventDefault();
                open(s.sessionId);
              }
            },
          },
          h(
            'td',
            null,
            h('input', {
              type: 'checkbox',
              'data-testid': 'pick',
              'aria-label': `Pick ${s.sessionId} to compare`,
              checked: picked.has(s.sessionId),
              onclick: (ev: MouseEvent) => ev.stopPropagation(),
              onchange: (ev: Event) => {
                if ((ev.target as HTMLInputElement).checked) picked.add(s.sessionId);
                else picked.delete(s.sessionId);
                updateCompare();
              },
            }),
          ),
          h('td', { class: 'mono' }, h('a', { href: sessionHref(s.sessionId), tabindex: -1 }, s.sessionId)),
          h('td', { class: 'mono', title: s.binaryPath ?? '' }, baseName(s.binaryPath) || '—'),
          h('td', null, stateBadge(s.state)),
          h('td', { class: 'mono' }, exitText(s) || '—'),
          h('td', { class: 'num mono' }, countsCell(s)),
          h('td', { title: formatClock(s.startedAt) }, s.startedAt ? formatAgo(s.startedAt, now) : '—'),
          h('td', { class: 'mono' }, dur !== undefined ? formatDuration(dur) : '—'),
          h('td', null, flags),
        );
        return row;
      }),
    );
    if (focusedId) (tbody.querySelector(`[data-session-id="${CSS.escape(focusedId)}"]`) as HTMLElement | null)?.focus();
  };

  const tick = async () => {
    try {
      const list = await api.sessions();
      if (stopped) return;
      ctx.error('sessions', null);
      render(Array.isArray(list) ? list : []);
    } catch (e) {
      if (stopped) return;
      ctx.error('sessions', errorText(e));
      if (status.textContent === 'Loading…') status.textContent = 'Could not load the sessions.';
    }
    if (!stopped) timer = setTimeout(tick, 2000);
  };
  void tick();

  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
