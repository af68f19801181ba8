// The page's address: the one-time token in the query string, and the hash
// routes.

export type Route =
  | { name: 'sessions' }
  | { name: 'session'; id: string }
  | { name: 'tests' }
  | { name: 'test'; id: string }
  | { name: 'diff'; baseline: string; candidate: string }
  | { name: 'unknown'; hash: string };

/** `#/`, `#/session/<id>`, `#/tests`, `#/tests/<id>`, `#/diff/<baseline>/<candidate>` (ids URI-encoded). */
export function parseRoute(hash: string): Route {
  const h = hash.replace(/^#/, '');
  const path = h.replace(/^\/+/, '').replace(/\/+$/, '');
  if (path === '' || path === 'sessions') return { name: 'sessions' };
  const parts = path.split('/');
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  if (parts[0] === 'session' && parts.length === 2 && parts[1]) return { name: 'session', id: decode(parts[1]) };
  if (parts[0] === 'tests' && parts.length === 1) return { name: 'tests' };
  if (parts[0] === 'tests' && parts.length === 2 && parts[1]) return { name: 'test', id: decode(parts[1]) };
  if (parts[0] === 'diff' && parts.length === 3 && parts[1] && parts[2]) {
    return { name: 'diff', baseline: decode(parts[1]), candidate: decode(parts[2]) };
  }
  return { name: 'unknown', hash: h };
}

export function sessionHref(id: string): string {
  return `#/session/${encodeURIComponent(id)}`;
}

/** The diff of `candidate` against `baseline`. */
export function diffHref(baseline: string, candidate: string): string {
  return `#/diff/${encodeURIComponent(baseline)}/${encodeURIComponent(candidate)}`;
}

export function testHref(id: string): string {
  return `#/tests/${encodeURIComponent(id)}`;
}

/**
 * Takes `token` out of a query string: returns it and the query string
 * without it (with its leading "?" when anything is left).
 */
export function takeToken(search: string): { token: string | null; search: string } {
  const params = new URLSearchParams(search.startsWith('?') ? search.slice(1) : search);
  const token = params.get('token');
  params.delete('token');
  const rest = params.toString();
  return { token: token && token.trim() ? token.trim() : null, search: rest ? `?${rest}` : '' };
}

/** Delay before reconnect attempt `attempt` (0-based): doubling from `base`, capped, with ±20 % jitter. */
export function backoffDelay(attempt: number, random: () => number = Math.random, base = 500, max = 15000): number {
  const raw = Math.min(max, base * Math.pow(2, Math.max(0, attempt)));
  const jitter = 0.8 + 0.4 * random();
  return Math.round(Math.min(max, raw * jitter));
}
