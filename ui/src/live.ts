// The session's live channel: a WebSocket that reconnects with backoff
// while the session runs. When the daemon has no such route the caller is
// told so (and polls instead).

import { api } from './api';
import { backoffDelay } from './lib/nav';
import { parseLiveMessage } from './lib/events';
import type { LiveMessage } from './types';

export type LiveState = 'connecting' | 'open' | 'closed' | 'ended';

export interface LiveHandlers {
  onMessage: (m: LiveMessage) => void;
  onState: (s: LiveState, note?: string) => void;
  /** The daemon has no live route. */
  onUnavailable: () => void;
  /** Asked before each reconnect: is the session still running? */
  stillRunning: () => Promise<boolean>;
}

export interface LiveConnection {
  close: () => void;
  readonly state: LiveState;
}

export function connectLive(sessionId: string, handlers: LiveHandlers): LiveConnection {
  let ws: WebSocket | null = null;
  let state: LiveState = 'connecting';
  let attempt = 0;
  let everOpened = false;
  let stopped = false;
  let ended = false;
  let timer: ReturnType<typeof setTimeout> | null = null;

  const set = (s: LiveState, note?: string) => {
    state = s;
    handlers.onState(s, note);
  };

  const open = () => {
    if (stopped) return;
    set('connecting');
    let opened = false;
    try {
      ws = new WebSocket(api.liveUrl(sessionId));
    } catch {
      ws = null;
      void failed(false);
      return;
    }
    ws.onopen = () => {
      opened = true;
      everOpened = true;
      attempt = 0;
      set('open');
    };
    ws.onmessage = (ev) => {
      const m = parseLiveMessage(ev.data);
      if (!m) return;
      handlers.onMessage(m);
      if (m.type === 'ended') {
        // The stream stays open after the end: the agent's later calls on
        // the finished session still arrive. It is not reopened if it drops.
        ended = true;
        set('ended');
      }
    };
    ws.onclose = () => {
      ws = null;
      if (stopped || ended) return;
      void failed(opened);
    };
  };

  const failed = async (hadOpened: boolean) => {
    if (stopped) return;
    // A route that never opened may simply not exist in this daemon.
    if (!hadOpened && !everOpened && attempt === 0) {
      const probe = await api.probe(api.livePath(sessionId));
      if (stopped) return;
      if (probe === 'missing') {
        stopped = true;
        set('closed', 'live updates are not available in this daemon');
        handlers.onUnavailable();
        return;
      }
    }
    let running = true;
    try {
      running = await handlers.stillRunning();
    } catch {
      running = true;
    }
    if (stopped) return;
    if (!running) {
      stopped = true;
      set('ended');
      return;
    }
    const delay = backoffDelay(attempt++);
    set('closed', `reconnecting in ${Math.ceil(delay / 1000)} s`);
    timer = setTimeout(open, delay);
  };

  open();

  return {
    close() {
      stopped = true;
      if (timer) clearTimeout(timer);
      if (ws) {
        ws.onclose = null;
        ws.close();
        ws = null;
      }
    },
    get state() {
      return state;
    },
  };
}
