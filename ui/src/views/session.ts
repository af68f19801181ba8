// `#/session/<id>`: header, crash, patterns, timeline, events + details,
// output and the agent's calls, kept current over the live WebSocket (or by
// polling when the daemon has none).

import { ApiError, api, errorText } from '../api';
import { h, replace, slot, stateBadge } from '../dom';
import { isRunning } from '../lib/events';
import { formatClock, formatDuration } from '../lib/format';
import { connectLive, type LiveConnection, type LiveState } from '../live';
import type { Ctx, Unmount } from '../main';
import type { AgentCall, Item, QueryEvent, Session } from '../types';
import { createAgentPanel } from './agent';
import { createCrashPanel } from './crash';
import { createDetail } from './detail';
import { createEventTable } from './events';
import { createOutput } from './output';
import { createPatterns } from './patterns';
import { countsCell } from './sessions';
import { createTimeline } from './timeline';

const OUTPUT_TAIL = 500;

const toItem = (e: QueryEvent): Item => ({
  tsNs: e.timestampNs,
  kind: e.eventType,
  seq: e.id,
  pid: typeof e.pid === 'number' ? e.pid : 0,
  tid: 0,
  text: typeof e.text === 'string' ? e.text : '',
});

export function sessionView(root: HTMLElement, ctx: Ctx, id: string): Unmount {
  ctx.title(id);
  let destroyed = false;
  const cleanups: (() => void)[] = [];
  replace(root, h('p', { class: 'muted' }, `Loading session ${id}…`));

  api
    .session(id)
    .then((s) => {
      if (!destroyed) build(s);
    })
    .catch((e: unknown) => {
      if (destroyed) return;
      if (e instanceof ApiError && e.status === 404) {
        replace(
          root,
          h(
            'div',
            { class: 'empty' },
            h('h1', null, 'No such session'),
            h('p', null, e.message),
            h('p', null, h('a', { href: '#/' }, '← All sessions')),
          ),
        );
      } else {
        ctx.error('session', errorText(e));
        replace(root, h('p', { class: 'error-text' }, `Could not load session ${id}.`));
      }
    });

  function build(initial: Session) {
    let session = initial;
    const running = () => isRunning(session.state);

    // --- header
    const liveState = h('span', { class: 'live-state', 'data-testid': 'live-state', 'data-state': 'connecting' }, 'connecting…');
    const headerFacts = h('dl', { class: 'facts inline' });
    const headerTitle = h('div', { class: 'title-row' });
    const exportLink = h(
      'a',
      {
        class: 'button',
        'data-testid': 'export',
        href: api.exportUrl(id),
        download: `${id}.trace.json`,
        title: 'Chrome trace-event JSON: open it in ui.perfetto.dev or chrome://tracing',
      },
      'Export trace',
    );
    const header = h(
      'section',
      { class: 'panel session-header', 'data-testid': 'session-header', 'data-session-id': id, 'data-state': session.state },
      h('div', { class: 'crumbs small' }, h('a', { href: '#/' }, '← Sessions')),
      headerTitle,
      headerFacts,
    );

    const setLive = (state: LiveState, note?: string) => {
      liveState.dataset.state = state;
      const text: Record<LiveState, string> = {
        connecting: 'connecting…',
        open: 'live',
        closed: 'disconnected',
        ended: 'ended',
      };
      liveState.textContent = note ? `${text[state]} (${note})` : text[state];
      liveState.title =
        state === 'open' ? 'Receiving updates as they happen' : state === 'ended' ? 'The session is over; nothing more will arrive' : note ?? '';
    };

    const renderHeader = () => {
      header.dataset.state = session.state;
      replace(
        headerTitle,
        h('h1', { class: 'mono' }, session.sessionId),
        stateBadge(session.state),
        h('span', { class: 'spacer' }),
        liveState,
        exportLink,
      );
      const facts: [string, Node | string][] = [];
      const pids = session.pids && session.pids.length > 1 ? ` (processes ${session.pids.join(', ')})` : '';
      if (session.pid !== undefined) facts.push(['pid', `${session.pid}${pids}`]);
      if (session.binaryPath) facts.push(['binary', session.binaryPath]);
      if (session.signal) facts.push(['signal', String(session.signal)]);
      if (typeof session.exitCode === 'number') facts.push(['exit code', String(session.exitCode)]);
      if (session.reason) facts.push(['reason', String(session.reason)]);
      facts.push(['events', countsCell(session)]);
      if (session.startedAt) facts.push(['started', formatClock(session.startedAt)]);
      if (session.startedAt) {
        const end = session.endedAt ?? (running() ? Date.now() : undefined);
        if (end) facts.push([session.endedAt ? 'ran' : 'running for', formatDuration((end - session.startedAt) * 1e6)]);
      }
      if (typeof session.trace?.hookedFunctions === 'number') facts.push(['hooked', `${session.trace.hookedFunctions} functions`]);
      if (session.projectRoot) facts.push(['project', session.projectRoot]);
      const flags = [session.live ? 'live' : '', session.retained ? 'retained' : ''].filter(Boolean).join(', ');
      if (flags) facts.push(['held', flags]);
      replace(
        headerFacts,
        facts.map(([k, v]) => h('div', null, h('dt', null, k), h('dd', { class: 'mono' }, v))),
      );
    };
    renderHeader();

    // --- panels
    const detail = createDetail(id);
    const crash = createCrashPanel(id, (e) => detail.showEvent(e.id, { event: e, ts: e.timestampNs }));
    const patterns = createPatterns(id);
    patterns.update(session);
    const patternsSlot = slot(patterns.el);
    const agent = createAgentPanel((c: AgentCall) => {
      detail.showAgentCall(c);
      timeline.showCall(c);
      agent.highlight(c);
    });
    const timeline = createTimeline(id, (sel) => {
      if (sel.kind === 'span') detail.showEvent(sel.span.seq, { ts: sel.span.open ? sel.span.startNs : sel.span.startNs + sel.span.durNs });
      else if (sel.kind === 'item')
        detail.showEvent(sel.item.seq, {
          ts: sel.item.tsNs,
          event: { id: sel.item.seq, timestampNs: sel.item.tsNs, eventType: sel.item.kind, text: sel.item.text, pid: sel.item.pid },
        });
      else {
        detail.showAgentCall(sel.call);
        agent.highlight(sel.call);
      }
    });
    timeline.setRunning(running());
    const table = createEventTable(id, (e) => {
      detail.showEvent(e.id, { event: e, ts: e.timestampNs });
      timeline.select(e.id);
    });
    const output = createOutput();
    cleanups.push(() => timeline.destroy(), () => table.destroy());

    replace(
      root,
      h(
        'div',
        { class: 'session-view' },
        header,
        crash.anchor,
        patternsSlot.anchor,
        timeline.el,
        h('div', { class: 'split' }, table.el, detail.el),
        h('div', { class: 'split even' }, output.el, agent.el),
      ),
    );

    // --- data
    patternsSlot.show(running());
    void crash.load();
    api
      .agent(id)
      .then((r) => {
        if (destroyed) return;
        const calls = Array.isArray(r.calls) ? r.calls : [];
        agent.set(calls);
        timeline.setAgentCalls(calls);
      })
      .catch((e: unknown) => {
        if (destroyed) return;
        agent.set(null, e instanceof ApiError && e.routeMissing ? undefined : `Could not load the agent’s calls: ${errorText(e)}`);
        timeline.setAgentCalls(null);
      });

    // Output: the tail of each stream, then whatever arrives.
    const known = { stdout: 0, stderr: 0 };
    const loadTail = async () => {
      const kinds = ['stdout', 'stderr'] as const;
      const heads = await Promise.all(kinds.map((k) => api.query(id, { eventType: k, limit: 1 })));
      const offsets = heads.map((r) => Math.max(0, r.totalCount - OUTPUT_TAIL));
      const tails = await Promise.all(kinds.map((k, i) => api.query(id, { eventType: k, limit: OUTPUT_TAIL, offset: offsets[i] })));
      if (destroyed) return;
      kinds.forEach((k, i) => (known[k] = offsets[i] + tails[i].events.length));
      output.add(tails.flatMap((t) => t.events.map(toItem)));
      const cut = heads.reduce((a, r) => a + Math.max(0, r.totalCount - OUTPUT_TAIL), 0);
      if (cut) output.setNote('Earlier: ', `${cut} older lines are not shown here; filter the event table on stdout/stderr to read them.`);
      if (!known.stdout && !known.stderr) output.empty(running() ? 'No output yet.' : 'The program printed nothing.');
    };
    const pollOutput = async () => {
      for (const k of ['stdout', 'stderr'] as const) {
        const r = await api.query(id, { eventType: k, limit: OUTPUT_TAIL, offset: known[k] });
        if (destroyed) return;
        known[k] += r.events.length;
        output.add(r.events.map(toItem));
      }
    };

    const onStatus = (s: Session) => {
      const wasRunning = running();
      const wasCrashed = session.state === 'crashed';
      session = { ...session, ...s };
      renderHeader();
      patterns.update(session);
      patternsSlot.show(running());
      timeline.setRunning(running());
      if ((!wasCrashed && session.state === 'crashed') || (wasRunning && !running())) void crash.load();
    };

    const grew = (endNs?: number, stored?: number) => {
      if (typeof stored === 'number' && session.events) {
        session = { ...session, events: { ...session.events, stored } };
        renderHeader();
      }
      timeline.eventsGrew(endNs);
      table.refreshCount();
    };

    let live: LiveConnection | null = null;
    let pollTimer: ReturnType<typeof setTimeout> | null = null;
    cleanups.push(() => {
      live?.close();
      if (pollTimer) clearTimeout(pollTimer);
    });

    const startPolling = () => {
      output.setNote('Live: ', 'this daemon has no live channel; checking for news every 2 s.');
      let lastStored = session.events?.stored ?? 0;
      const poll = async () => {
        try {
          const s = await api.session(id);
          if (destroyed) return;
          ctx.error('poll', null);
          onStatus(s);
          const stored = s.events?.stored ?? 0;
          if (stored !== lastStored || !running()) {
            lastStored = stored;
            grew(undefined, stored);
            await pollOutput();
          }
          if (!running()) {
            setLive('ended');
            return;
          }
        } catch (e) {
          if (destroyed) return;
          if (e instanceof ApiError && e.status === 404) {
            setLive('ended', 'the session is gone');
            return;
          }
          ctx.error('poll', errorText(e));
        }
        if (!destroyed) pollTimer = setTimeout(poll, 2000);
      };
      setLive('closed', 'polling');
      pollTimer = setTimeout(poll, 2000);
    };

    const startLive = () => {
      live = connectLive(id, {
        onState: (st, note) => setLive(st, note),
        onUnavailable: startPolling,
        stillRunning: async () => {
          try {
            const s = await api.session(id);
            onStatus(s);
            return running();
          } catch (e) {
            return !(e instanceof ApiError && e.status === 404);
          }
        },
        onMessage: (m) => {
          switch (m.type) {
            case 'status':
              onStatus(m.status);
              break;
            case 'output':
              output.add(m.items);
              for (const it of m.items) if (it.kind === 'stdout' || it.kind === 'stderr') known[it.kind]++;
              if (m.skipped) {
                output.skipped(m.skipped);
              }
              break;
            case 'events':
              grew(m.endNs, m.stored);
              break;
            case 'agent':
              agent.add(m.call);
              timeline.addAgentCall(m.call);
              break;
            case 'ended': {
              const was = running();
              onStatus(m.status);
              if (was) grew();
              break;
            }
            case 'error':
              output.setNote('Live: ', m.message);
              break;
          }
        },
      });
    };

    loadTail()
      .catch((e: unknown) => output.setNote('Error: ', `Could not read the output: ${errorText(e)}`))
      .finally(() => {
        // Finished sessions are streamed too: the agent's later calls arrive.
        if (!destroyed) startLive();
      });
  }

  return () => {
    destroyed = true;
    for (const c of cleanups) c();
  };
}
