// A gate that holds work back until something more important is done, or
// until a time cap, whichever comes first: opening a session asks for the
// timeline alone, and the table, output and crash queries wait behind it
// so they do not compete with it for the daemon's cores.

export type Timers = {
  set: (fn: () => void, ms: number) => unknown;
  clear: (handle: unknown) => void;
};

const realTimers: Timers = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
};

export class Gate {
  private waiting: (() => void)[] = [];
  private timer: unknown = null;
  private state: 'shut' | 'open' | 'closed' = 'shut';
  /** Why it opened: the awaited work finished, or the cap ran out. */
  reason: 'done' | 'cap' | null = null;

  /** Opens by itself after `capMs` (none when not finite). */
  constructor(
    capMs: number,
    private readonly timers: Timers = realTimers,
  ) {
    if (Number.isFinite(capMs)) this.timer = timers.set(() => this.release('cap'), Math.max(0, capMs));
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  /** The awaited work is done: run what waits. */
  open(): void {
    this.release('done');
  }

  /** Runs `fn` once the gate opens (at once when it is open); never after close(). */
  then(fn: () => void): void {
    if (this.state === 'open') fn();
    else if (this.state === 'shut') this.waiting.push(fn);
  }

  /** Drops whatever waits and stops the timer (the page is going away). */
  close(): void {
    this.state = 'closed';
    this.waiting = [];
    this.stopTimer();
  }

  private release(reason: 'done' | 'cap'): void {
    if (this.state !== 'shut') return;
    this.state = 'open';
    this.reason = reason;
    this.stopTimer();
    const run = this.waiting;
    this.waiting = [];
    for (const fn of run) fn();
  }

  private stopTimer(): void {
    if (this.timer !== null) this.timers.clear(this.timer);
    this.timer = null;
  }
}
