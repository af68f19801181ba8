// Which rows of a long list are on screen, for a table that keeps only
// those in the DOM. Browsers cap an element's height (~16–33 M px), so past
// `maxHeight` the scroll position maps to rows proportionally.

export interface VirtualInput {
  scrollTop: number;
  viewportHeight: number;
  rowHeight: number;
  total: number;
  /** Extra rows rendered above and below the viewport. */
  overscan?: number;
  /** Tallest scroll content to create. */
  maxHeight?: number;
}

export interface VirtualWindow {
  /** First row to render. */
  first: number;
  /** One past the last row to render. */
  last: number;
  /** Height of the scroll content. */
  totalHeight: number;
  /** `top` (px, in scroll-content coordinates) of row `i`. */
  rowTop: (i: number) => number;
}

export const DEFAULT_MAX_HEIGHT = 8_000_000;

export function virtualWindow(inp: VirtualInput): VirtualWindow {
  const { rowHeight, viewportHeight } = inp;
  const total = Math.max(0, Math.floor(inp.total));
  const overscan = inp.overscan ?? 8;
  const maxHeight = inp.maxHeight ?? DEFAULT_MAX_HEIGHT;
  const natural = total * rowHeight;
  const totalHeight = Math.min(natural, maxHeight);
  const maxScroll = Math.max(0, totalHeight - viewportHeight);
  const scrollTop = Math.min(Math.max(0, inp.scrollTop), maxScroll);
  // How far the rows have moved for each pixel scrolled.
  const naturalMaxScroll = Math.max(0, natural - viewportHeight);
  const ratio = maxScroll > 0 ? naturalMaxScroll / maxScroll : 1;
  const virtualTop = scrollTop * ratio;
  const first = Math.max(0, Math.floor(virtualTop / rowHeight) - overscan);
  const last = Math.min(total, Math.ceil((virtualTop + viewportHeight) / rowHeight) + overscan);
  return {
    first,
    last: Math.max(first, last),
    totalHeight,
    rowTop: (i: number) => i * rowHeight - virtualTop + scrollTop,
  };
}

/** The scrollTop that puts row `i` at the top of the viewport. */
export function scrollTopForRow(i: number, inp: Omit<VirtualInput, 'scrollTop'>): number {
  const total = Math.max(0, Math.floor(inp.total));
  const maxHeight = inp.maxHeight ?? DEFAULT_MAX_HEIGHT;
  const natural = total * inp.rowHeight;
  const totalHeight = Math.min(natural, maxHeight);
  const maxScroll = Math.max(0, totalHeight - inp.viewportHeight);
  const naturalMaxScroll = Math.max(0, natural - inp.viewportHeight);
  const ratio = maxScroll > 0 ? naturalMaxScroll / maxScroll : 1;
  return Math.min(maxScroll, Math.max(0, (i * inp.rowHeight) / ratio));
}

/** Page numbers (of `pageSize` rows) covering rows [first, last). */
export function pagesFor(first: number, last: number, pageSize: number): number[] {
  if (last <= first) return [];
  const out: number[] = [];
  for (let p = Math.floor(first / pageSize); p <= Math.floor((last - 1) / pageSize); p++) out.push(p);
  return out;
}

/**
 * Pages of rows fetched by offset, remembered per filter generation: a new
 * generation (filters changed) forgets everything, and replies for an
 * older generation are dropped.
 */
export class PageCache<T> {
  private pages = new Map<number, T[]>();
  private pending = new Set<number>();
  generation = 0;

  constructor(readonly pageSize: number) {}

  /** Forgets every page; returns the new generation. */
  reset(): number {
    this.pages.clear();
    this.pending.clear();
    return ++this.generation;
  }

  /** Forgets one page (e.g. the last, which grows while a session runs). */
  invalidate(page: number): void {
    this.pages.delete(page);
  }

  /** The pages among `wanted` neither cached nor being fetched; marks them pending. */
  claim(wanted: number[]): number[] {
    const out = wanted.filter((p) => !this.pages.has(p) && !this.pending.has(p));
    for (const p of out) this.pending.add(p);
    return out;
  }

  /** Stores a page's rows if the reply belongs to the current generation. */
  fill(generation: number, page: number, rows: T[]): boolean {
    if (generation !== this.generation) return false;
    this.pending.delete(page);
    this.pages.set(page, rows);
    return true;
  }

  /** A fetch failed: the page may be claimed again. */
  release(generation: number, page: number): void {
    if (generation === this.generation) this.pending.delete(page);
  }

  /** Row `i`, when its page is here. */
  row(i: number): T | undefined {
    const page = this.pages.get(Math.floor(i / this.pageSize));
    return page?.[i % this.pageSize];
  }

  has(page: number): boolean {
    return this.pages.has(page);
  }
}
