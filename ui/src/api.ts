// The daemon's JSON API. Every request carries the token as a Bearer header
// (the HttpOnly cookie the first page load set covers it too, unless the
// browser blocks cookies). Errors come back as ApiError with the server's
// message, written to be shown as is.

import type {
  AgentCall,
  DiffReply,
  EventDetail,
  QueryArgs,
  QueryReply,
  Session,
  TestRun,
  Timeline,
  TraceReply,
} from './types';
import { windowKey } from './lib/window';

const TOKEN_KEY = 'strobe.token';

let token: string | null = null;
try {
  token = sessionStorage.getItem(TOKEN_KEY);
} catch {
  // Storage may be unavailable (privacy settings); the cookie still works.
}

export function setToken(t: string): void {
  token = t;
  try {
    sessionStorage.setItem(TOKEN_KEY, t);
  } catch {
    /* kept in memory only */
  }
}

export function getToken(): string | null {
  return token;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }

  /** The daemon has no such route: an older daemon than this UI. */
  get routeMissing(): boolean {
    return this.status === 404 && this.code === 'NOT_FOUND' && /route/i.test(this.message);
  }

  get unauthorized(): boolean {
    return this.status === 401;
  }
}

type UnauthorizedHandler = (e: ApiError) => void;
let onUnauthorized: UnauthorizedHandler = () => {};
/** What to do when the token is refused (the app shows its "get a fresh link" screen). */
export function setUnauthorizedHandler(f: UnauthorizedHandler): void {
  onUnauthorized = f;
}

function headers(json: boolean): HeadersInit {
  const hd: Record<string, string> = { Accept: 'application/json' };
  if (token) hd.Authorization = `Bearer ${token}`;
  if (json) hd['Content-Type'] = 'application/json';
  return hd;
}

async function request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  let resp: Response;
  try {
    resp = await fetch(path, {
      method,
      headers: headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      cache: 'no-store',
      signal,
    });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(0, 'NETWORK', `cannot reach the Strobe daemon (${(e as Error).message}); is it still running?`);
  }
  const text = await resp.text();
  let data: unknown = undefined;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON */
  }
  if (!resp.ok) {
    const err = (data as { error?: { code?: string; message?: string } } | undefined)?.error;
    const e = new ApiError(
      resp.status,
      err?.code ?? `HTTP_${resp.status}`,
      err?.message ?? (text.slice(0, 300) || `${resp.status} ${resp.statusText}`),
    );
    if (e.unauthorized) onUnauthorized(e);
    throw e;
  }
  if (data === undefined) throw new ApiError(resp.status, 'BAD_REPLY', `the daemon's reply to ${path} was not JSON`);
  return data as T;
}

const enc = encodeURIComponent;
const base = (id: string) => `/api/sessions/${enc(id)}`;

export const api = {
  sessions: () => request<Session[]>('GET', '/api/sessions'),
  session: (id: string) => request<Session>('GET', base(id)),
  timeline: (id: string, p: { from?: number; to?: number; columns: number }, signal?: AbortSignal) => {
    const w = windowKey(p);
    const q = new URLSearchParams();
    q.set('from', String(w.from));
    if (w.to !== undefined) q.set('to', String(w.to));
    q.set('columns', String(w.columns));
    return request<Timeline>('GET', `${base(id)}/timeline?${q}`, undefined, signal);
  },
  // The page's tables size themselves by totalCount: it asks for the exact
  // count (debug_query estimates past a few ms otherwise).
  query: (id: string, args: QueryArgs, signal?: AbortSignal) =>
    request<QueryReply>('POST', `${base(id)}/query`, { exactCount: true, ...args }, signal),
  exportUrl: (id: string, format: 'chrome' | 'perfetto' = 'chrome') =>
    format === 'chrome' ? `${base(id)}/export` : `${base(id)}/export?format=${format}`,
  event: (id: string, eventId: number) => request<EventDetail>('GET', `${base(id)}/events/${eventId}`),
  agent: (id: string) => request<{ calls: AgentCall[] }>('GET', `${base(id)}/agent`),
  /** A ui_snapshot event's screenshot, as an object URL the caller revokes. */
  screenshot: async (id: string, eventId: number): Promise<string> => {
    const resp = await fetch(`${base(id)}/events/${eventId}/screenshot`, {
      headers: token ? { Authorization: `Bearer ${token}` } : {},
      credentials: 'same-origin',
      cache: 'no-store',
    });
    if (!resp.ok) throw new ApiError(resp.status, `HTTP_${resp.status}`, `no screenshot (${resp.status})`);
    return URL.createObjectURL(await resp.blob());
  },
  trace: (id: string, body: { add?: string[]; remove?: string[] }) =>
    request<TraceReply>('POST', `${base(id)}/trace`, body),
  diff: (baseline: string, candidate: string, maxItems = 10) =>
    request<DiffReply>('GET', `/api/diff?baseline=${enc(baseline)}&candidate=${enc(candidate)}&maxItems=${maxItems}`),
  tests: () => request<{ runs: TestRun[] }>('GET', '/api/tests'),
  test: (id: string) => request<TestRun>('GET', `/api/tests/${enc(id)}`),
  /** Whether a route exists (for the WebSocket, whose failures say nothing). */
  probe: async (path: string): Promise<'missing' | 'present' | 'unknown'> => {
    try {
      await request<unknown>('GET', path);
      return 'present';
    } catch (e) {
      if (e instanceof ApiError) {
        if (e.routeMissing) return 'missing';
        if (e.status === 0 || e.unauthorized) return 'unknown';
        return 'present';
      }
      return 'unknown';
    }
  },
  liveUrl: (id: string) => {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const t = token ? `?token=${enc(token)}` : '';
    return `${proto}//${location.host}${base(id)}/live${t}`;
  },
  livePath: (id: string) => `${base(id)}/live`,
};

/** A short, human sentence for an API failure. */
export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}
