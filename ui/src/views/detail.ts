// The detail panel: one event with every field (arguments, return value,
// crash, the matching function_enter of an exit), or one agent call.

import { ApiError, api, errorText } from '../api';
import { details, h, jsonBlock, replace } from '../dom';
import { embedded, openInEditor } from '../lib/editor';
import { compact, eventSubject, location, threadOf } from '../lib/events';
import { formatBytes, formatClock, formatDuration, formatMs, formatTimestamp } from '../lib/format';
import type { AgentCall, QueryEvent } from '../types';
import { renderCrash, renderValues } from './crash';

/** What the caller already knows about an event, for when /events/{id} is missing. */
export interface EventHint {
  /** The event's timestamp. */
  ts?: number;
  /** The event as listed (summary or verbose). */
  event?: QueryEvent;
}

const SHOWN = new Set([
  'id',
  'timestampNs',
  'eventType',
  'function',
  'sourceFile',
  'line',
  'functionRaw',
  'durationNs',
  'returnValue',
  'pid',
  'threadId',
  'threadName',
  'text',
  'arguments',
  'parentEventId',
]);

export function createDetail(sessionId: string) {
  const body = h('div', { class: 'detail-body' });
  const el = h(
    'section',
    { class: 'panel detail', 'data-testid': 'event-detail', 'aria-label': 'Details', 'aria-live': 'polite' },
    h('h2', null, 'Details'),
    body,
  );
  let token = 0;

  const placeholder = () =>
    replace(body, h('p', { class: 'muted' }, 'Select a row in the event table, or click a bar or tick in the timeline.'));
  placeholder();

  function renderEvent(e: QueryEvent, enter: QueryEvent | undefined, note?: string) {
    const facts: [string, Node | string][] = [];
    facts.push(['type', e.eventType]);
    facts.push(['time', formatTimestamp(e.timestampNs)]);
    if (typeof e.durationNs === 'number') facts.push(['duration', formatDuration(e.durationNs)]);
    const thread = threadOf(e);
    if (thread) facts.push(['thread', thread]);
    if (typeof e.pid === 'number') facts.push(['pid', String(e.pid)]);
    if (e.sourceFile) {
      // Inside an editor, a click opens the file there (lib/editor.ts).
      const inEditor = embedded();
      facts.push(['source', h('span', {
        title: inEditor ? `open ${String(e.sourceFile)} in the editor` : String(e.sourceFile),
        class: inEditor ? 'open-source' : null,
        'data-testid': 'event-source',
        onClick: () => openInEditor(e.sourceFile, e.line),
      }, location(e.sourceFile, e.line, true))]);
    }
    if (typeof e.functionRaw === 'string' && e.functionRaw) facts.push(['symbol', e.functionRaw]);
    if ('returnValue' in e) facts.push(['returned', compact(e.returnValue, 400)]);
    if (typeof e.parentEventId === 'number') facts.push(['called from', `event #${e.parentEventId}`]);
    if (e.sampled) facts.push(['sampled', 'yes: a hot function, 1 call in N recorded']);

    const args = e.arguments ?? enter?.arguments;
    const other: Record<string, unknown> = {};
    const ui = e.eventType === 'ui_snapshot';
    for (const [k, v] of Object.entries(e)) {
      if (SHOWN.has(k) || e.eventType === 'crash' || (ui && (k === 'tree' || k === 'screenshot'))) continue;
      other[k] = v;
    }

    replace(
      body,
      h(
        'div',
        { class: 'detail-title' },
        h('span', { class: `badge type-${e.eventType}` }, e.eventType),
        h('span', { class: 'mono subject' }, eventSubject(e) || '—'),
        h('span', { class: 'muted small' }, `#${e.id}`),
      ),
      note ? h('p', { class: 'note small' }, note) : '',
      h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', null, k), h('dd', { class: 'mono' }, v)])),
      typeof e.text === 'string' ? h('pre', { class: `output-text ${e.eventType}` }, e.text) : '',
      args !== undefined ? [h('h4', null, enter && !e.arguments ? 'Arguments (at entry)' : 'Arguments'), renderValues(args)] : '',
      e.returnValue !== undefined && typeof e.returnValue === 'object' && e.returnValue !== null
        ? [h('h4', null, 'Return value'), jsonBlock(e.returnValue)]
        : '',
      e.eventType === 'crash' ? renderCrash(e) : '',
      ui ? renderUiSnapshot(e) : '',
      Object.keys(other).length ? [h('h4', null, 'Other fields'), jsonBlock(other)] : '',
      enter ? details(`Entry event #${enter.id} at ${formatTimestamp(enter.timestampNs)}`, jsonBlock(enter)) : '',
      details('Raw JSON', jsonBlock(enter ? { event: e, enter } : e)),
    );
  }

  /** A ui_snapshot: the tree as debug_ui rendered it, and its screenshot. */
  function renderUiSnapshot(e: QueryEvent): Node[] {
    const out: Node[] = [];
    if (typeof e.screenshot === 'string') {
      const img = h('img', {
        class: 'ui-screenshot',
        alt: `screenshot of the program's window (${e.screenshot})`,
        'data-testid': 'ui-screenshot',
      }) as HTMLImageElement;
      api
        .screenshot(sessionId, e.id)
        .then((url) => {
          img.onload = () => URL.revokeObjectURL(url);
          img.src = url;
        })
        .catch((err: Error) => img.replaceWith(h('p', { class: 'muted small' }, err.message)));
      out.push(h('h4', null, 'Screenshot'), img);
    }
    if (typeof e.tree === 'string') {
      out.push(h('h4', null, 'Accessibility tree'), h('pre', { class: 'ui-tree', 'data-testid': 'ui-tree' }, e.tree));
    }
    return out;
  }

  /** Looks an event up through debug_query by its timestamp (older daemons). */
  async function viaQuery(id: number, ts: number): Promise<{ event?: QueryEvent; enter?: QueryEvent }> {
    const r = await api.query(sessionId, { timeFrom: ts, timeTo: ts, verbose: true, limit: 500 });
    const event = r.events.find((x) => x.id === id);
    if (!event) return {};
    let enter: QueryEvent | undefined;
    if (event.eventType === 'function_exit' && typeof event.durationNs === 'number') {
      const at = event.timestampNs - event.durationNs;
      const q = await api.query(sessionId, {
        eventType: 'function_enter',
        timeFrom: at,
        timeTo: at,
        verbose: true,
        limit: 500,
      });
      enter = q.events.find((x) => x.function === event.function && x.threadId === event.threadId && x.id < id);
    }
    return { event, enter };
  }

  async function showEvent(id: number, hint: EventHint = {}) {
    const mine = ++token;
    replace(body, h('p', { class: 'muted' }, `Loading event #${id}…`));
    try {
      const d = await api.event(sessionId, id);
      if (mine !== token) return;
      renderEvent(d.event, d.enter);
    } catch (e) {
      if (mine !== token) return;
      if (!(e instanceof ApiError && e.routeMissing)) {
        replace(body, h('p', { class: 'error-text' }, `Could not load event #${id}: ${errorText(e)}`));
        return;
      }
      const ts = hint.ts ?? hint.event?.timestampNs;
      try {
        if (ts !== undefined) {
          const r = await viaQuery(id, ts);
          if (mine !== token) return;
          if (r.event) {
            renderEvent(r.event, r.enter);
            return;
          }
        }
        if (hint.event) {
          renderEvent(hint.event, undefined, 'Only the fields listed in the table: this daemon cannot look events up by id.');
          return;
        }
        replace(body, h('p', { class: 'muted' }, `Event #${id} could not be found (this daemon has no event lookup).`));
      } catch (e2) {
        if (mine !== token) return;
        if (hint.event) renderEvent(hint.event, undefined, `Only the listed fields: ${errorText(e2)}`);
        else replace(body, h('p', { class: 'error-text' }, errorText(e2)));
      }
    }
  }

  function showAgentCall(c: AgentCall) {
    token++;
    const facts: [string, string][] = [
      ['tool', c.tool],
      ['when', c.offsetNs < 0 ? `${formatDuration(-c.offsetNs)} before launch` : `${formatDuration(c.offsetNs)} after launch`],
      ['took', formatMs(c.durationMs)],
    ];
    if (c.startedAtMs) facts.push(['clock', formatClock(c.startedAtMs)]);
    if (typeof c.responseBytes === 'number') facts.push(['reply', formatBytes(c.responseBytes)]);
    facts.push(['result', c.isError ? 'error' : 'ok']);
    replace(
      body,
      h(
        'div',
        { class: 'detail-title' },
        h('span', { class: `badge ${c.isError ? 'err' : 'agent'}` }, 'agent call'),
        h('span', { class: 'mono subject' }, c.tool),
        h('span', { class: 'muted small' }, `#${c.seq}`),
      ),
      h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', null, k), h('dd', { class: 'mono' }, v)])),
      h('h4', null, 'Arguments'),
      jsonBlock(c.args ?? {}),
      c.summary ? [h('h4', null, 'Reply (start)'), h('pre', { class: 'output-text' }, c.summary)] : '',
    );
  }

  return { el, showEvent, showAgentCall, clear: placeholder };
}
