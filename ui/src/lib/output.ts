// The live output pane's model: the newest lines in a ring buffer, each
// line once even when the initial load, the WebSocket and polling overlap.

import { RingBuffer } from './ring';
import type { Item } from '../types';

export const OUTPUT_CAPACITY = 5000;

export class OutputLog {
  readonly ring: RingBuffer<Item>;
  /** Highest sequence number taken in. */
  maxSeq = 0;
  /** Lines the server said it did not send. */
  skipped = 0;

  constructor(capacity = OUTPUT_CAPACITY) {
    this.ring = new RingBuffer<Item>(capacity);
  }

  /**
   * Takes in the lines not seen yet (by sequence number), oldest first, and
   * returns them; how many old lines fell out is `removed`.
   */
  add(items: Item[]): { added: Item[]; removed: number } {
    const fresh = items
      .filter((i) => typeof i.seq === 'number' && i.seq > this.maxSeq)
      .sort((a, b) => a.seq - b.seq);
    const added: Item[] = [];
    for (const it of fresh) {
      if (it.seq <= this.maxSeq) continue; // duplicates within the batch
      added.push(it);
      this.maxSeq = it.seq;
    }
    const removed = this.ring.pushAll(added);
    return { added, removed };
  }

  clear(): void {
    this.ring.clear();
    this.maxSeq = 0;
    this.skipped = 0;
  }
}
