// A fixed-capacity buffer keeping the newest items (the live output pane's
// last 5000 lines).

export class RingBuffer<T> {
  private buf: (T | undefined)[];
  private start = 0;
  private len = 0;
  /** Items pushed out by newer ones since creation or `clear`. */
  dropped = 0;

  constructor(readonly capacity: number) {
    if (!(capacity >= 1) || !Number.isInteger(capacity)) throw new RangeError('capacity must be a positive integer');
    this.buf = new Array(capacity);
  }

  get length(): number {
    return this.len;
  }

  /** Adds an item; returns the one it pushed out, if any. */
  push(item: T): T | undefined {
    if (this.len < this.capacity) {
      this.buf[(this.start + this.len) % this.capacity] = item;
      this.len++;
      return undefined;
    }
    const old = this.buf[this.start];
    this.buf[this.start] = item;
    this.start = (this.start + 1) % this.capacity;
    this.dropped++;
    return old;
  }

  /** Adds many; returns how many older items were pushed out. */
  pushAll(items: Iterable<T>): number {
    let n = 0;
    for (const it of items) {
      if (this.len === this.capacity) n++;
      this.push(it);
    }
    return n;
  }

  /** Item `i`, oldest first. */
  at(i: number): T | undefined {
    if (i < 0 || i >= this.len) return undefined;
    return this.buf[(this.start + i) % this.capacity];
  }

  /** The newest item. */
  last(): T | undefined {
    return this.len ? this.at(this.len - 1) : undefined;
  }

  toArray(): T[] {
    const out: T[] = [];
    for (let i = 0; i < this.len; i++) out.push(this.buf[(this.start + i) % this.capacity] as T);
    return out;
  }

  clear(): void {
    this.buf = new Array(this.capacity);
    this.start = 0;
    this.len = 0;
    this.dropped = 0;
  }
}
