// The trace patterns of a running session, changed live through
// POST /trace (debug_trace's add/remove).

import { ApiError, api, errorText } from '../api';
import { h, replace } from '../dom';
import type { Session, TraceReply } from '../types';

export function createPatterns(sessionId: string) {
  const chips = h('ul', { class: 'chips', 'aria-label': 'Active trace patterns' });
  const input = h('input', {
    type: 'text',
    'data-testid': 'pattern-input',
    placeholder: 'fib, ns::*, ns::**, @usercode, @file:parser.c',
    'aria-label': 'Trace pattern to add',
    autocomplete: 'off',
    spellcheck: 'false',
  });
  const add = h('button', { type: 'submit', 'data-testid': 'pattern-add' }, 'Add');
  const err = h('div', { class: 'error-text small', 'data-testid': 'patterns-error', role: 'alert' });
  const info = h('span', { class: 'muted small' });
  const form = h('form', { class: 'pattern-form' }, input, add);
  const el = h(
    'section',
    { class: 'panel patterns', 'data-testid': 'patterns', 'aria-label': 'Trace patterns' },
    h('div', { class: 'panel-head' }, h('h2', null, 'Trace patterns'), info),
    chips,
    form,
    err,
  );
  let busy = false;
  let patterns: string[] = [];

  const render = (list: string[], hooked?: number, mode?: string) => {
    patterns = list;
    replace(
      chips,
      list.length
        ? list.map((p) =>
            h(
              'li',
              { class: 'chip', 'data-testid': 'pattern', 'data-pattern': p },
              h('span', { class: 'mono' }, p),
              h(
                'button',
                {
                  type: 'button',
                  class: 'chip-x',
                  'data-testid': 'pattern-remove',
                  'aria-label': `Stop tracing ${p}`,
                  title: `Stop tracing ${p}`,
                  onclick: () => change({ remove: [p] }),
                },
                '×',
              ),
            ),
          )
        : h('li', { class: 'muted small' }, 'No patterns: nothing is traced. Add one below.'),
    );
    const bits: string[] = [];
    if (typeof hooked === 'number') bits.push(`${hooked} function${hooked === 1 ? '' : 's'} hooked`);
    if (mode) bits.push(`mode ${mode}`);
    info.textContent = bits.join(' · ');
  };

  async function change(body: { add?: string[]; remove?: string[] }) {
    if (busy) return;
    busy = true;
    add.disabled = true;
    err.textContent = '';
    el.setAttribute('aria-busy', 'true');
    try {
      const r: TraceReply = await api.trace(sessionId, body);
      render(Array.isArray(r.activePatterns) ? r.activePatterns : patterns, r.hookedFunctions, typeof r.mode === 'string' ? r.mode : undefined);
      if (body.add) input.value = '';
      const warn = (r as Record<string, unknown>).warnings ?? (r as Record<string, unknown>).warning;
      if (warn) err.textContent = Array.isArray(warn) ? warn.join(' · ') : String(warn);
    } catch (e) {
      err.textContent =
        e instanceof ApiError && e.routeMissing
          ? 'Changing trace patterns from here is not available in this daemon (no /trace route); the agent can still call debug_trace.'
          : errorText(e);
    } finally {
      busy = false;
      add.disabled = false;
      el.removeAttribute('aria-busy');
    }
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const list = input.value
      .split(/[,\s]+/)
      .map((s) => s.trim())
      .filter(Boolean);
    if (!list.length) {
      err.textContent = 'Type a pattern first, e.g. fib or mylib::**';
      input.focus();
      return;
    }
    void change({ add: list });
  });

  return {
    el,
    update(s: Session) {
      if (busy) return;
      render(s.trace?.activePatterns ?? [], s.trace?.hookedFunctions, typeof s.trace?.mode === 'string' ? s.trace.mode : undefined);
    },
  };
}
