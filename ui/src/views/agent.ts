// "What the agent did": every MCP tool call the agent made on the session.

import { h, replace } from '../dom';
import { byText } from '../lib/caller';
import { compact } from '../lib/events';
import { formatBytes, formatDuration, formatMs } from '../lib/format';
import type { AgentCall } from '../types';

export function whenText(offsetNs: number): string {
  return offsetNs < 0 ? `−${formatDuration(-offsetNs)}` : `+${formatDuration(offsetNs)}`;
}

export function createAgentPanel(onPick: (c: AgentCall) => void) {
  const tbody = h('tbody');
  const note = h('p', { class: 'muted small' }, 'Loading…');
  const table = h(
    'table',
    { class: 'grid agent-table', hidden: true },
    h(
      'thead',
      null,
      h('tr', null, ['#', 'When', 'By', 'Tool', 'Arguments', 'Took', 'Reply'].map((t, i) => h('th', { class: i >= 5 ? 'num' : undefined }, t))),
    ),
    tbody,
  );
  const el = h(
    'section',
    { class: 'panel agent', 'data-testid': 'agent-calls', 'aria-label': 'What the agent did' },
    h('div', { class: 'panel-head' }, h('h2', null, 'What the agent did'), h('span', { class: 'muted small' }, 'times relative to launch')),
    note,
    h('div', { class: 'table-wrap' }, table),
  );
  let calls: AgentCall[] = [];

  const row = (c: AgentCall) =>
    h(
      'tr',
      {
        'data-testid': 'agent-call',
        'data-tool': c.tool,
        'data-seq': c.seq,
        'data-side': c.side ?? 'agent',
        class: `clickable${c.isError ? ' is-error' : ''}`,
        tabindex: 0,
        title: 'Show this call in the details and on the timeline',
        onclick: () => onPick(c),
        onkeydown: (ev: KeyboardEvent) => {
          if (ev.key === 'Enter' || ev.key === ' ') {
            ev.preventDefault();
            onPick(c);
          }
        },
      },
      h('td', { class: 'mono muted' }, String(c.seq)),
      h('td', { class: 'mono' }, whenText(c.offsetNs)),
      h('td', { class: `side side-${c.side ?? 'agent'}`, title: byText(c) }, c.side ?? 'agent'),
      h('td', { class: 'mono' }, c.tool, c.isError ? [' ', h('span', { class: 'badge err', title: 'the tool call failed' }, 'error')] : ''),
      h('td', { class: 'mono args', title: compact(c.args, 2000) }, compact(c.args, 120)),
      h('td', { class: 'mono num' }, formatMs(c.durationMs)),
      h('td', { class: 'mono num' }, typeof c.responseBytes === 'number' ? formatBytes(c.responseBytes) : ''),
    );

  const render = () => {
    table.hidden = calls.length === 0;
    note.hidden = calls.length > 0;
    if (!calls.length) note.textContent = 'No tool calls recorded on this session yet.';
    replace(tbody, calls.map(row));
  };

  return {
    el,
    set(list: AgentCall[] | null, why?: string) {
      if (list === null) {
        calls = [];
        table.hidden = true;
        note.hidden = false;
        note.textContent = why ?? 'Not available in this daemon: it does not record the agent’s tool calls (no /agent route).';
        return;
      }
      calls = [...list].sort((a, b) => a.seq - b.seq);
      render();
    },
    add(c: AgentCall) {
      if (calls.some((x) => x.seq === c.seq)) return;
      calls.push(c);
      calls.sort((a, b) => a.seq - b.seq);
      render();
    },
    highlight(c: AgentCall) {
      for (const tr of tbody.querySelectorAll('tr')) tr.classList.toggle('selected', tr.dataset.seq === String(c.seq));
    },
  };
}
