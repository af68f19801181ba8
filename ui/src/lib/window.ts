// Which timeline windows to ask the server for. A window is (from, to,
// columns) exactly as sent on the wire; asking again for the one in flight,
// or for the one already drawn, is never needed unless the session has
// grown since. Only a real change of window or width fetches, and a reply
// for a window that was replaced since is dropped.

/** A timeline request as sent: `to` absent means "to the session's end". */
export interface WindowKey {
  from: number;
  to?: number;
  columns: number;
}

/** The server's column limit. */
export const MAX_COLUMNS = 8192;

/** The request as the wire carries it (whole ns, at least one column). */
export function windowKey(p: { from?: number; to?: number; columns: number }): WindowKey {
  const from = Math.max(0, Math.floor(p.from ?? 0));
  const columns = Math.max(1, Math.min(MAX_COLUMNS, Math.round(p.columns)));
  if (p.to === undefined) return { from, columns };
  return { from, to: Math.max(1, Math.ceil(p.to)), columns };
}

/** Whether two requests ask the server for the same thing. */
export function sameWindow(a: WindowKey, b: WindowKey): boolean {
  const x = windowKey(a);
  const y = windowKey(b);
  return x.from === y.from && x.to === y.to && x.columns === y.columns;
}

/** What the caller should do about a wanted window. */
export type WindowPlan =
  /** Send a request; its reply is answered with this ticket. */
  | { kind: 'fetch'; ticket: number }
  /** The same window is in flight: wait for it. */
  | { kind: 'join' }
  /** The drawn data is that window already (a request in flight, if any, was dropped). */
  | { kind: 'have' };

/** What to do with a reply. */
export type WindowAnswer =
  /** Replaced since, or dropped: ignore it. */
  | 'stale'
  /** Draw it. */
  | 'fresh'
  /** Draw it, then ask for the same window again: the session grew past it while it was in flight. */
  | 'again';

/** News that the session has grown: `endNs` when known (ns of its newest event). */
export interface Growth {
  endNs?: number;
}

/**
 * The bookkeeping of one timeline's requests: at most one in flight, the
 * window the drawn data is for, and whether growth reported while a
 * request was in flight needs another one after it.
 */
export class WindowRequests {
  private seq = 0;
  private inflight: { ticket: number; key: WindowKey } | null = null;
  private drawn: { key: WindowKey; endNs: number } | null = null;
  /** Growth reported during the request in flight (undefined end: unknown). */
  private grown: Growth | null = null;

  /**
   * The caller wants `key` drawn; `grew` says the session has grown since
   * (data drawn or in flight may be older than that).
   */
  request(key: WindowKey, grew?: Growth): WindowPlan {
    const want = windowKey(key);
    if (this.inflight && sameWindow(this.inflight.key, want)) {
      if (grew) this.grown = mergeGrowth(this.grown, grew);
      return { kind: 'join' };
    }
    if (this.drawn && sameWindow(this.drawn.key, want) && !this.outgrown(this.drawn.endNs, grew)) {
      this.inflight = null;
      this.grown = null;
      return { kind: 'have' };
    }
    this.inflight = { ticket: ++this.seq, key: want };
    this.grown = null;
    return { kind: 'fetch', ticket: this.seq };
  }

  /** A reply arrived for `ticket`; `endNs` is the session end it saw. */
  answer(ticket: number, endNs: number): WindowAnswer {
    if (!this.inflight || this.inflight.ticket !== ticket) return 'stale';
    this.drawn = { key: this.inflight.key, endNs };
    this.inflight = null;
    const g = this.grown;
    this.grown = null;
    return g && this.outgrown(endNs, g) ? 'again' : 'fresh';
  }

  /** The request for `ticket` failed; true when it was the current one (show the error). */
  fail(ticket: number): boolean {
    if (!this.inflight || this.inflight.ticket !== ticket) return false;
    this.inflight = null;
    this.grown = null;
    return true;
  }

  /** Forgets the request in flight (the view is going away). */
  cancel(): void {
    this.inflight = null;
    this.grown = null;
  }

  /** The window in flight, if any. */
  get pending(): WindowKey | null {
    return this.inflight?.key ?? null;
  }

  /** The window the drawn data is for, if any. */
  get current(): WindowKey | null {
    return this.drawn?.key ?? null;
  }

  private outgrown(endNs: number, g: Growth | undefined | null): boolean {
    if (!g) return false;
    return g.endNs === undefined || endNs < g.endNs;
  }
}

function mergeGrowth(a: Growth | null, b: Growth): Growth {
  if (!a) return { ...b };
  if (a.endNs === undefined || b.endNs === undefined) return {};
  return { endNs: Math.max(a.endNs, b.endNs) };
}
