// `#/session/<id>`: header, crash, patterns, timeline, events + details,
// output and the agent's calls, kept current over the live WebSocket (or by
// polling when the daemon has none). Opening a session asks for the
// timeline first; the rest waits for its answer (see lib/gate.ts).

import { ApiError, api, errorText } from '../api';
import { h, replace, slot, stateBadge } from '../dom';
import { isRunning } from '../lib/events';
import { Gate } from '../lib/gate';
import { STREAMS, loadTails, mayHoldCrash, outputHint } from '../lib/tail';
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
import { type FirstAnswer, createTimeline } from './timeline';

const OUTPUT_TAIL = 500;
/** The longest the table, output and crash queries wait for the timeline's first answer. */
const FIRST_CAP_MS = 1500;

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
  const teardown = () => {
    destroyed = true;
    for (const c of cleanups.splice(0)) c();
  };
  let session: Session | null = null;
  const running = () => session !== null && isRunning(session.state);

  // What the user sees first is the timeline: it is asked for at once,
  // alongside the session's header. The table, the output and the crash
  // wait for its first answer (or FIRST_CAP_MS) so that they do not compete
  // with it for the daemon's cores.
  const gate = new Gate(FIRST_CAP_MS);
  cleanups.push(() => gate.close());
  let first: FirstAnswer = null;

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
  const perfettoLink = h(
    'a',
    {
      class: 'button',
      'data-testid': 'export-perfetto',
      href: api.exportUrl(id, 'perfetto'),
      download: `${id}.pftrace`,
      title: 'Perfetto protobuf trace (calls with arguments and return values, the agent’s calls with flows): open it in ui.perfetto.dev',
    },
    'Perfetto',
  );
  const header = h(
    'section',
    { class: 'panel session-header', 'data-testid': 'session-header', 'data-session-id': id },
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
    if (!session) {
      replace(
        headerTitle,
        h('h1', { class: 'mono' }, id),
        h('span', { class: 'muted small' }, 'loading…'),
        h('span', { class: 'spacer' }),
        liveState,
        exportLink,
        perfettoLink,
      );
      return;
    }
    const s = session;
    header.dataset.state = s.state;
    replace(
      headerTitle,
      h('h1', { class: 'mono' }, s.sessionId),
      stateBadge(s.state),
      h('span', { class: 'spacer' }),
      liveState,
      exportLink,
      perfettoLink,
    );
    const facts: [string, Node | string][] = [];
    const pids = s.pids && s.pids.length > 1 ? ` (processes ${s.pids.join(', ')})` : '';
    if (s.pid !== undefined) facts.push(['pid', `${s.pid}${pids}`]);
    if (s.binaryPath) facts.push(['binary', s.binaryPath]);
    if (s.signal) facts.push(['signal', String(s.signal)]);
    if (typeof s.exitCode === 'number') facts.push(['exit code', String(s.exitCode)]);
    if (s.reason) facts.push(['reason', String(s.reason)]);
    facts.push(['events', countsCell(s)]);
    if (s.startedAt) facts.push(['started', formatClock(s.startedAt)]);
    if (s.startedAt) {
      const end = s.endedAt ?? (running() ? Date.now() : undefined);
      if (end) facts.push([s.endedAt ? 'ran' : 'running for', formatDuration((end - s.startedAt) * 1e6)]);
    }
    if (typeof s.trace?.hookedFunctions === 'number') facts.push(['hooked', `${s.trace.hookedFunctions} functions`]);
    if (s.projectRoot) facts.push(['project', s.projectRoot]);
    const flags = [s.live ? 'live' : '', s.retained ? 'retained' : ''].filter(Boolean).join(', ');
    if (flags) facts.push(['held', flags]);
    replace(
      headerFacts,
      facts.map(([k, v]) => h('div', null, h('dt', null, k), h('dd', { class: 'mono' }, v))),
    );
  };
  renderHeader();

  // --- panels, all in the page at once so the layout (and the timeline's
  // width) does not change when the data arrives.
  const detail = createDetail(id);
  const crash = createCrashPanel(id, (e) => detail.showEvent(e.id, { event: e, ts: e.timestampNs }));
  const patterns = createPatterns(id);
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

  // --- data: the timeline has been asked for (it fetches as soon as it is
  // laid out); the header and the agent's calls (drawn on the timeline,
  // a cheap read) go alongside it.
  void timeline.firstAnswer.then((a) => {
    first = a;
    gate.open();
  });
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

  // After the timeline: the table's first page, and the crash unless the
  // timeline showed every marker of the session and none was a crash.
  gate.then(() => {
    if (destroyed) return;
    table.start();
    if (session?.state === 'crashed' || mayHoldCrash(first?.timeline, first?.whole ?? false)) void crash.load();
  });

  api
    .session(id)
    .then((s) => {
      if (destroyed) return;
      session = s;
      renderHeader();
      patterns.update(s);
      patternsSlot.show(running());
      timeline.setRunning(running());
      gate.then(() => {
        if (!destroyed) build();
      });
    })
    .catch((e: unknown) => {
      if (destroyed) return;
      teardown();
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

  /** The output and the live channel, once the header is in and the timeline has gone first. */
  function build() {
    // Events stored as last heard: news of the same count is no news.
    let storedSeen = session?.events?.stored;

    // Output: the tail of each stream, then whatever arrives.
    const known = { stdout: 0, stderr: 0 };
    const loadTail = async () => {
      // The timeline's first answer often says how many lines each stream
      // has, which spares the queries that would count them.
      const hint = outputHint(first?.timeline, first?.whole ?? false);
      const tails = await loadTails((k, offset, limit) => api.query(id, { eventType: k, limit, offset }), OUTPUT_TAIL, hint);
      if (destroyed) return;
      for (const k of STREAMS) known[k] = tails[k].offset + tails[k].events.length;
      output.add(STREAMS.flatMap((k) => tails[k].events.map(toItem)));
      const cut = tails.stdout.offset + tails.stderr.offset;
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
      const wasCrashed = session?.state === 'crashed';
      session = { ...session, ...s };
      renderHeader();
      patterns.update(session);
      patternsSlot.show(running());
      timeline.setRunning(running());
      if ((!wasCrashed && session.state === 'crashed') || (wasRunning && !running())) void crash.load();
    };

    const grew = (endNs?: number, stored?: number) => {
      if (typeof stored === 'number') {
        // The live channel's first message repeats what the header said.
        if (stored === storedSeen) return;
        storedSeen = stored;
        if (session?.events) {
          session = { ...session, events: { ...session.events, stored } };
          renderHeader();
        }
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
      let lastStored = session?.events?.stored ?? 0;
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

  return teardown;
}
