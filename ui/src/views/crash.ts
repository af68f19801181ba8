// A crash: signal, fault address, backtrace, registers and locals. Shown as
// a panel on the session page and inside the detail panel.

import { api, errorText } from '../api';
import { details, h, jsonBlock, slot } from '../dom';
import { compact, crashInfo, location, namedValues, threadOf } from '../lib/events';
import { formatTimestamp } from '../lib/format';
import type { QueryEvent } from '../types';

export function renderFrames(frames: ReturnType<typeof crashInfo>['frames']): HTMLElement {
  if (!frames.length) return h('p', { class: 'muted small' }, 'No backtrace was recorded.');
  return h(
    'ol',
    { class: 'frames', start: 0 },
    frames.map((f) =>
      h(
        'li',
        null,
        h('span', { class: 'mono fn' }, f.fn),
        f.file ? h('span', { class: 'mono loc', title: f.file }, ' ', location(f.file, f.line, true)) : '',
        f.module || f.address ? h('span', { class: 'mono muted small' }, ` ${[f.module, f.address].filter(Boolean).join(' ')}`) : '',
      ),
    ),
  );
}

export function renderValues(v: unknown): HTMLElement {
  const rows = namedValues(v);
  if (!rows.length) return h('p', { class: 'muted small' }, 'none');
  return h(
    'table',
    { class: 'kv mono' },
    h(
      'tbody',
      null,
      rows.map((r) => h('tr', null, h('th', null, r.name), h('td', { class: 'muted' }, r.type ?? ''), h('td', null, compact(r.value, 400) || String(r.value)))),
    ),
  );
}

/** The body of a crash event. */
export function renderCrash(e: QueryEvent): HTMLElement {
  const c = crashInfo(e);
  const facts: [string, string][] = [['signal', c.signal]];
  if (c.kind) facts.push(['kind', c.kind]);
  if (c.faultAddress) facts.push(['fault address', c.faultAddress]);
  if (c.operation) facts.push(['operation', c.operation]);
  if (c.cause) facts.push(['cause', c.cause]);
  const thread = threadOf(e);
  if (thread) facts.push(['thread', thread]);
  facts.push(['time', formatTimestamp(e.timestampNs)]);
  return h(
    'div',
    { class: 'crash-body' },
    h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', null, k), h('dd', { class: 'mono' }, v)])),
    h(
      'div',
      { class: 'crash-side' },
      h('h4', null, 'Backtrace'),
      renderFrames(c.frames),
      c.locals ? details(`Locals${c.localsFrame ? ` of ${c.localsFrame}` : ''}`, renderValues(c.locals), true) : '',
      c.registers ? details('Registers', renderValues(c.registers)) : '',
    ),
  );
}

/** The crash panel: present only when the session has crash events. */
export function createCrashPanel(sessionId: string, onShow: (e: QueryEvent) => void) {
  const el = h('section', { class: 'panel crash', 'data-testid': 'crash-view', 'aria-label': 'Crash' });
  const place = slot(el);
  let loaded = false;
  const load = async () => {
    try {
      const r = await api.query(sessionId, { eventType: 'crash', verbose: true, limit: 20 });
      if (!r.events.length) {
        place.show(false);
        return;
      }
      loaded = true;
      place.show(true);
      el.replaceChildren(
        h('h2', null, r.totalCount === 1 ? 'Crash' : `Crashes (${r.totalCount})`),
        ...r.events.map((e) =>
          h(
            'article',
            { class: 'crash-item' },
            h(
              'div',
              { class: 'crash-title' },
              h('strong', { class: 'mono' }, crashInfo(e).signal),
              crashInfo(e).frames[0] ? h('span', null, ' in ', h('span', { class: 'mono' }, crashInfo(e).frames[0].fn)) : '',
              h('button', { type: 'button', class: 'small', onclick: () => onShow(e) }, 'Show in details'),
            ),
            renderCrash(e),
            details('Raw JSON', jsonBlock(e)),
          ),
        ),
      );
    } catch (e) {
      place.show(true);
      el.replaceChildren(h('h2', null, 'Crash'), h('p', { class: 'error-text' }, `Could not read the crash: ${errorText(e)}`));
    }
  };
  return {
    /** Where the panel goes; it is in the page only when there is a crash. */
    anchor: place.anchor,
    load,
    get loaded() {
      return loaded;
    },
  };
}
