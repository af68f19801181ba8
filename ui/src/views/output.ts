// The live output pane: the program's stdout/stderr as it arrives, the last
// 5000 lines kept, following the bottom unless the user scrolled up.

import { h } from '../dom';
import { OutputLog } from '../lib/output';
import { formatTimestamp } from '../lib/format';
import type { Item } from '../types';

export function createOutput() {
  const log = new OutputLog();
  const lines = h('div', { class: 'out-lines', 'data-testid': 'live-output', tabindex: 0, role: 'log', 'aria-label': 'Program output' });
  const note = h('p', { class: 'muted small out-note' });
  const jump = h('button', { type: 'button', class: 'small jump', hidden: true }, 'Jump to the newest ↓');
  const countEl = h('span', { class: 'muted small' });
  const el = h(
    'section',
    { class: 'panel output', 'aria-label': 'Output' },
    h('div', { class: 'panel-head' }, h('h2', null, 'Output'), countEl, jump),
    note,
    lines,
  );
  let notes: string[] = [];

  const atBottom = () => lines.scrollHeight - lines.scrollTop - lines.clientHeight < 8;
  const toBottom = () => {
    lines.scrollTop = lines.scrollHeight;
    jump.hidden = true;
  };
  jump.addEventListener('click', toBottom);
  lines.addEventListener('scroll', () => {
    if (atBottom()) jump.hidden = true;
  });

  const lineEl = (it: Item) =>
    h(
      'div',
      { class: `out-line ${it.kind === 'stderr' ? 'stderr' : 'stdout'}`, 'data-testid': 'output-line', 'data-stream': it.kind === 'stderr' ? 'stderr' : 'stdout', 'data-seq': it.seq },
      h('span', { class: 'ts', title: `event #${it.seq}` }, formatTimestamp(it.tsNs)),
      h('span', { class: 'txt' }, it.text),
    );

  const renderNote = () => {
    note.textContent = notes.join(' ');
    note.hidden = notes.length === 0;
  };
  renderNote();

  const updateCount = () => {
    countEl.textContent = `${log.ring.length} line${log.ring.length === 1 ? '' : 's'}${log.ring.dropped ? ` (oldest ${log.ring.dropped} dropped from this pane)` : ''}`;
  };
  updateCount();

  return {
    el,
    add(items: Item[]) {
      const stick = atBottom();
      const { added } = log.add(items);
      if (!added.length) return;
      if (added.length >= log.ring.capacity || lines.childElementCount + added.length > log.ring.capacity) {
        // Rebuild from the buffer: what fell out of it leaves the DOM too.
        const all = log.ring.toArray();
        const frag = document.createDocumentFragment();
        for (const it of all) frag.appendChild(lineEl(it));
        lines.replaceChildren(frag);
      } else {
        const frag = document.createDocumentFragment();
        for (const it of added) frag.appendChild(lineEl(it));
        lines.appendChild(frag);
      }
      updateCount();
      if (lines.querySelector('.out-empty')) lines.querySelector('.out-empty')?.remove();
      if (stick) toBottom();
      else jump.hidden = false;
    },
    /** Lines the server left out of the stream. */
    skipped(n: number) {
      if (n <= 0) return;
      log.skipped += n;
      notes = notes.filter((x) => !x.startsWith('Skipped'));
      notes.push(`Skipped ${log.skipped} line${log.skipped === 1 ? '' : 's'} that came too fast to stream: filter the event table on stdout/stderr to read them all.`);
      renderNote();
    },
    setNote(key: string, text: string | null) {
      notes = notes.filter((x) => !x.startsWith(key));
      if (text) notes.push(`${key}${text}`);
      renderNote();
    },
    empty(text: string) {
      if (!lines.childElementCount) lines.replaceChildren(h('div', { class: 'out-empty muted' }, text));
    },
    get maxSeq() {
      return log.maxSeq;
    },
  };
}
