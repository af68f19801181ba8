// The event table: debug_query's filters, and a virtualized list whose
// pages (100 rows: a screenful and some) are fetched by offset as they
// scroll into view. Nothing is fetched before start() (the session page
// lets the timeline go first) or the user applies filters.

import { ApiError, api, errorText } from '../api';
import { h, replace, throttle } from '../dom';
import { EMPTY_FORM, EVENT_TYPES, buildQueryArgs, type FilterForm } from '../lib/filters';
import { compact, eventSubject, location, threadOf } from '../lib/events';
import { formatCount, formatDuration, formatTimestamp } from '../lib/format';
import { PageCache, pagesFor, scrollTopForRow, virtualWindow } from '../lib/virtual';
import type { QueryArgs, QueryEvent } from '../types';

const PAGE = 100;
/** Short names so the type column stays narrow (the full name is the cell's title). */
const TYPE_LABEL: Record<string, string> = {
  function_enter: '→ enter',
  function_exit: '← exit',
  variable_snapshot: 'snapshot',
  process_exit: 'proc exit',
};
const ROW_H = 24;

export interface EventTableHandle {
  el: HTMLElement;
  /** New events may exist (live): refresh the count. */
  refreshCount: () => void;
  /** Fetches the first page (once; filters applied before count as a start). */
  start: () => void;
  destroy: () => void;
}

export function createEventTable(sessionId: string, onSelect: (e: QueryEvent) => void): EventTableHandle {
  const field = (name: keyof FilterForm, label: string, testid: string | null, placeholder: string, title: string, cls = '') =>
    h(
      'label',
      { class: `field ${cls}` },
      h('span', null, label),
      h('input', { name, type: 'text', placeholder, title, autocomplete: 'off', spellcheck: 'false', 'data-testid': testid }),
    );
  const typeSelect = h(
    'select',
    { name: 'eventType', 'data-testid': 'filter-event-type', title: 'Only events of this type' },
    h('option', { value: '' }, 'all types'),
    EVENT_TYPES.map((t) => h('option', { value: t }, t)),
  );
  const errorBox = h('div', { class: 'filter-error', 'data-testid': 'filter-error', role: 'alert', 'aria-live': 'assertive' });
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Event filters' },
    h('label', { class: 'field' }, h('span', null, 'Type'), typeSelect),
    field('fn', 'Function', 'filter-function', 'contains…', 'Function name contains'),
    field('file', 'Source file', 'filter-file', 'e.g. parser.c', 'Source file path contains'),
    field('thread', 'Thread', 'filter-thread', 'contains…', 'Thread name contains'),
    field('text', 'Text', 'filter-text', 'contains…', 'Output / log text contains'),
    field('minDuration', 'Min duration', null, 'e.g. 1ms', 'Only calls that took at least this long: 1500 (ns), 20us, 1.5ms, 2s', 'narrow'),
    field('pid', 'PID', null, '', 'Only this process', 'narrow'),
    field('timeFrom', 'From', null, '1.5s or -5s', 'Time since start (1.5s, 250ms, ns) or relative to the newest event (-5s)', 'narrow'),
    field('timeTo', 'To', null, '2s or -1s', 'Same forms as From', 'narrow'),
    h(
      'div',
      { class: 'field buttons' },
      h('button', { type: 'submit', class: 'primary', 'data-testid': 'filter-apply' }, 'Apply'),
      h('button', { type: 'button', onclick: () => clearForm() }, 'Clear'),
    ),
  );
  const count = h('span', { class: 'event-count', 'data-testid': 'event-count', 'aria-live': 'polite' }, 'loading…');
  const head = h(
    'div',
    { class: 'ev-row ev-head', role: 'row' },
    ['Time', 'Type', 'Thread', 'Function / text', 'Location', 'Took', 'Return'].map((t) => h('div', { role: 'columnheader' }, t)),
  );
  const spacer = h('div', { class: 'ev-spacer', role: 'rowgroup' });
  const scroller = h(
    'div',
    {
      class: 'ev-scroll',
      tabindex: 0,
      role: 'table',
      'aria-label': 'Events (↑/↓ to move, Enter to show details)',
      'aria-rowcount': 0,
    },
    head,
    spacer,
  );
  const el = h(
    'section',
    { class: 'panel events', 'aria-label': 'Events' },
    h('div', { class: 'panel-head' }, h('h2', null, 'Events'), count),
    form,
    errorBox,
    scroller,
  );

  const cache = new PageCache<QueryEvent>(PAGE);
  let args: QueryArgs = {};
  let total: number | null = null;
  let selected = -1;
  let destroyed = false;
  let renderQueued = false;
  let started = false;

  const setCount = (n: number | null, note = '') => {
    total = n;
    if (n === null) {
      count.textContent = note || '—';
      count.removeAttribute('data-total');
    } else {
      count.textContent = `${n} event${n === 1 ? '' : 's'}${Object.keys(args).length ? ' matching the filters' : ''}`;
      count.title = formatCount(n);
      count.dataset.total = String(n);
    }
    scroller.setAttribute('aria-rowcount', String(n ?? 0));
  };

  const viewportHeight = () => Math.max(ROW_H, scroller.clientHeight - ROW_H);

  function cell(text: string, cls = '', title?: string) {
    return h('div', { role: 'cell', class: cls, title: title ?? (text.length > 30 ? text : undefined) }, text);
  }

  function rowEl(i: number, e: QueryEvent | undefined, top: number) {
    if (!e) {
      return h('div', { class: 'ev-row loading', role: 'row', style: `top:${top}px`, 'aria-rowindex': i + 2 }, h('div', { role: 'cell' }, '…'));
    }
    const dur = typeof e.durationNs === 'number' ? formatDuration(e.durationNs) : '';
    const ret = 'returnValue' in e ? compact(e.returnValue, 60) : '';
    const row = h(
      'div',
      {
        class: `ev-row t-${e.eventType}${i === selected ? ' selected' : ''}`,
        role: 'row',
        'data-testid': 'event-row',
        'data-event-id': e.id,
        'data-event-type': e.eventType,
        'data-index': i,
        'aria-rowindex': i + 2,
        'aria-selected': i === selected ? 'true' : 'false',
        style: `top:${top}px`,
      },
      cell(formatTimestamp(e.timestampNs), 'mono'),
      cell(TYPE_LABEL[e.eventType] ?? e.eventType, 'type', e.eventType),
      cell(typeof e.threadName === 'string' && e.threadName ? e.threadName : threadOf(e), 'mono', threadOf(e)),
      cell(eventSubject(e), 'mono subject'),
      cell(location(e.sourceFile, e.line), 'mono', typeof e.sourceFile === 'string' ? location(e.sourceFile, e.line, true) : undefined),
      cell(dur, 'mono num'),
      cell(ret, 'mono'),
    );
    return row;
  }

  function render() {
    renderQueued = false;
    if (destroyed) return;
    const n = total ?? 0;
    // Short lists get a short table; long ones scroll in 440 px.
    const want = `${Math.min(440, Math.max(96, (n + 1) * ROW_H + 4))}px`;
    if (scroller.style.height !== want) scroller.style.height = want;
    const w = virtualWindow({ scrollTop: scroller.scrollTop, viewportHeight: viewportHeight(), rowHeight: ROW_H, total: n, overscan: 10 });
    spacer.style.height = `${w.totalHeight}px`;
    const rows: HTMLElement[] = [];
    for (let i = w.first; i < w.last; i++) rows.push(rowEl(i, cache.row(i), w.rowTop(i)));
    if (n === 0 && total !== null) rows.push(h('div', { class: 'ev-empty muted' }, Object.keys(args).length ? 'No events match these filters.' : 'No events recorded yet.'));
    replace(spacer, rows);
    fetchPages(pagesFor(w.first, w.last, PAGE));
  }

  const queueRender = () => {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(render);
  };

  function fetchPages(pages: number[]) {
    if (!started) return;
    const gen = cache.generation;
    for (const p of cache.claim(pages)) {
      const myArgs = args;
      api
        .query(sessionId, { ...myArgs, verbose: true, limit: PAGE, offset: p * PAGE })
        .then((r) => {
          if (!cache.fill(gen, p, r.events)) return;
          if (total === null || r.totalCount !== total) setCount(r.totalCount);
          errorBox.textContent = '';
          queueRender();
          if (selected >= 0 && Math.floor(selected / PAGE) === p && pendingSelect) {
            pendingSelect = false;
            emitSelect();
          }
        })
        .catch((e: unknown) => {
          cache.release(gen, p);
          if (gen !== cache.generation) return;
          showError(e);
        });
    }
  }

  function showError(e: unknown) {
    errorBox.textContent = errorText(e);
    if (e instanceof ApiError && e.status === 400) {
      setCount(null, 'filter rejected');
      replace(spacer);
      spacer.style.height = '0px';
    }
  }

  function readForm(): FilterForm {
    const fd = new FormData(form);
    const out = { ...EMPTY_FORM };
    for (const k of Object.keys(out) as (keyof FilterForm)[]) out[k] = String(fd.get(k) ?? '');
    return out;
  }

  function apply() {
    started = true;
    const f = readForm();
    const r = buildQueryArgs(f);
    for (const input of form.querySelectorAll('input, select')) input.removeAttribute('aria-invalid');
    if (r.errors.length) {
      errorBox.textContent = r.errors.map((e) => e.message).join(' · ');
      for (const e of r.errors) form.querySelector(`[name=${e.field}]`)?.setAttribute('aria-invalid', 'true');
      return;
    }
    errorBox.textContent = '';
    args = r.args;
    cache.reset();
    selected = -1;
    setCount(null, 'loading…');
    scroller.scrollTop = 0;
    replace(spacer);
    fetchPages([0]);
  }

  function clearForm() {
    form.reset();
    apply();
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    apply();
  });

  // Selection: click, or arrows on the focused table.
  let pendingSelect = false;
  const emitSelect = () => {
    const e = cache.row(selected);
    if (e) onSelect(e);
    else pendingSelect = true;
  };
  let selectTimer: ReturnType<typeof setTimeout> | null = null;
  function select(i: number, immediate: boolean) {
    if (total === null || total === 0) return;
    selected = Math.max(0, Math.min(total - 1, i));
    ensureVisible(selected);
    queueRender();
    if (selectTimer) clearTimeout(selectTimer);
    if (immediate) emitSelect();
    else selectTimer = setTimeout(emitSelect, 150);
  }

  function ensureVisible(i: number) {
    const vh = viewportHeight();
    const w = virtualWindow({ scrollTop: scroller.scrollTop, viewportHeight: vh, rowHeight: ROW_H, total: total ?? 0, overscan: 0 });
    const top = w.rowTop(i);
    if (top < scroller.scrollTop) {
      scroller.scrollTop = scrollTopForRow(i, { viewportHeight: vh, rowHeight: ROW_H, total: total ?? 0 });
    } else if (top + ROW_H > scroller.scrollTop + vh) {
      scroller.scrollTop = scrollTopForRow(Math.max(0, i - Math.floor(vh / ROW_H) + 1), { viewportHeight: vh, rowHeight: ROW_H, total: total ?? 0 });
    }
  }

  spacer.addEventListener('click', (ev) => {
    const row = (ev.target as HTMLElement).closest('[data-index]') as HTMLElement | null;
    if (!row) return;
    scroller.focus({ preventScroll: true });
    select(Number(row.dataset.index), true);
  });
  scroller.addEventListener('keydown', (ev) => {
    const page = Math.max(1, Math.floor(viewportHeight() / ROW_H) - 1);
    const cur = selected < 0 ? -1 : selected;
    switch (ev.key) {
      case 'ArrowDown':
        select(cur + 1, false);
        break;
      case 'ArrowUp':
        select(Math.max(0, cur - 1), false);
        break;
      case 'PageDown':
        select(cur + page, false);
        break;
      case 'PageUp':
        select(Math.max(0, cur - page), false);
        break;
      case 'Home':
        select(0, false);
        break;
      case 'End':
        select((total ?? 1) - 1, false);
        break;
      case 'Enter':
        if (selected >= 0) select(selected, true);
        else select(0, true);
        break;
      default:
        return;
    }
    ev.preventDefault();
  });
  scroller.addEventListener('scroll', queueRender, { passive: true });
  const ro = new ResizeObserver(queueRender);
  ro.observe(scroller);

  const countRefresh = throttle(() => {
    if (destroyed || total === null) return;
    const gen = cache.generation;
    const before = total;
    api
      .query(sessionId, { ...args, limit: 1, offset: 0 })
      .then((r) => {
        if (gen !== cache.generation || destroyed) return;
        if (r.totalCount !== before) {
          // The last page grew: fetch it again when it is on screen.
          if (before > 0) cache.invalidate(Math.floor((before - 1) / PAGE));
          setCount(r.totalCount);
          queueRender();
        }
      })
      .catch(() => {
        /* the next refresh tries again */
      });
  }, 1000);

  return {
    el,
    refreshCount: () => countRefresh.call(),
    start() {
      if (!started && !destroyed) apply();
    },
    destroy() {
      destroyed = true;
      countRefresh.cancel();
      ro.disconnect();
      if (selectTimer) clearTimeout(selectTimer);
    },
  };
}
