// A few lines of DOM building so views read like the markup they make.

export type Child = Node | string | number | null | undefined | false | Child[];
type Handler = (ev: never) => void;
export type Attrs = Record<string, string | number | boolean | null | undefined | Handler>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') {
        el.addEventListener(k.slice(2).toLowerCase(), v as EventListener);
      } else if (k === 'class') {
        el.className = String(v);
      } else if (k === 'value' && 'value' in el) {
        (el as HTMLInputElement).value = String(v);
      } else {
        el.setAttribute(k, v === true ? '' : String(v));
      }
    }
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/** Replaces an element's children. */
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/** A collapsible block. */
export function details(summary: Child, body: Child, open = false): HTMLDetailsElement {
  const d = h('details', { open }, h('summary', null, summary), body);
  return d;
}

/** Pretty JSON in a <pre>. */
export function jsonBlock(v: unknown): HTMLPreElement {
  let text: string;
  try {
    text = JSON.stringify(v, null, 2) ?? String(v);
  } catch {
    text = String(v);
  }
  return h('pre', { class: 'json' }, text);
}

/** A button that copies `text`, saying so briefly. */
export function copyButton(text: string, label = 'Copy'): HTMLButtonElement {
  const b = h('button', { type: 'button', class: 'small', title: 'Copy to the clipboard' }, label);
  b.addEventListener('click', async (ev) => {
    ev.stopPropagation();
    try {
      await navigator.clipboard.writeText(text);
      b.textContent = 'Copied';
    } catch {
      // Clipboard may be refused (insecure context): select the text instead.
      const range = document.createRange();
      const target = b.previousElementSibling;
      if (target) {
        range.selectNodeContents(target);
        const sel = getSelection();
        sel?.removeAllRanges();
        sel?.addRange(range);
      }
      b.textContent = 'Selected';
    }
    setTimeout(() => (b.textContent = label), 1200);
  });
  return b;
}

/** State badge, e.g. running / exited / crashed. */
export function stateBadge(state: string): HTMLSpanElement {
  const known = ['running', 'exited', 'crashed', 'killed', 'stopped', 'paused'];
  const cls = known.includes(state) ? state : 'other';
  return h('span', { class: `badge state-${cls}` }, state || 'unknown');
}

/** Runs `fn` at most once per `ms`, trailing call included. */
export function throttle(fn: () => void, ms: number): { call: () => void; cancel: () => void } {
  let last = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  return {
    call() {
      const now = Date.now();
      const wait = last + ms - now;
      if (wait <= 0) {
        last = now;
        fn();
      } else if (!timer) {
        timer = setTimeout(() => {
          timer = null;
          last = Date.now();
          fn();
        }, wait);
      }
    },
    cancel() {
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}

/** Runs `fn` `ms` after the last call. */
export function debounce(fn: () => void, ms: number): { call: () => void; cancel: () => void; flush: () => void } {
  let timer: ReturnType<typeof setTimeout> | null = null;
  return {
    call() {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        timer = null;
        fn();
      }, ms);
    },
    cancel() {
      if (timer) clearTimeout(timer);
      timer = null;
    },
    flush() {
      if (timer) {
        clearTimeout(timer);
        timer = null;
        fn();
      }
    },
  };
}

/**
 * A spot in the page where an element is present or absent (not merely
 * hidden), so `[data-testid]` queries find it only while it shows.
 */
export function slot(el: Element): { anchor: Comment; show: (visible: boolean) => void } {
  const anchor = document.createComment('slot');
  return {
    anchor,
    show(visible: boolean) {
      if (visible && !el.isConnected) anchor.after(el);
      else if (!visible && el.isConnected) el.remove();
    },
  };
}
