// Talking to the Strobe daemon: `strobe ui` gives the web UI's address with
// its access token (starting the daemon if need be), and the JSON API at
// that address lists the sessions (the status bar's count and the attach
// picker). No VS Code here.

import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** A session as `/api/sessions` lists it (the fields used here). */
export interface Session {
  sessionId: string;
  state: string;
  pid?: number;
  binaryPath?: string;
  projectRoot?: string;
  startedAt?: number;
  live?: boolean;
}

/** The daemon's data folder: $STROBE_HOME, else ~/.strobe. */
export function strobeHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.STROBE_HOME || path.join(os.homedir(), '.strobe');
}

/** Is a daemon listening? (Its socket exists; nothing is started.) */
export function daemonUp(env: NodeJS.ProcessEnv = process.env): boolean {
  try {
    return fs.statSync(path.join(strobeHome(env), 'strobe.sock')).isSocket();
  } catch {
    return false;
  }
}

/** Runs `strobe ui`: the web UI's URL, token included. */
export function uiUrl(bin: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(bin, ['ui'], { env, timeout: 30000 }, (err, stdout, stderr) => {
      const url = stdout.trim().split('\n').pop() ?? '';
      if (err || !url.startsWith('http')) {
        const why = stderr.trim() || (err ? err.message : 'it printed no URL');
        reject(new Error(`\`strobe ui\` failed: ${why}`));
      } else {
        resolve(url);
      }
    });
  });
}

/** The live sessions at the UI address `url` (its token is the Bearer). */
export async function listSessions(url: string, fetcher: typeof fetch = fetch): Promise<Session[]> {
  const u = new URL(url);
  const token = u.searchParams.get('token');
  if (!token) throw new Error('the UI address has no token: ask `strobe ui` again');
  const resp = await fetcher(`${u.origin}/api/sessions`, {
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
  });
  if (!resp.ok) throw new Error(`the daemon refused the session list (${resp.status}): ask \`strobe ui\` again`);
  const body = (await resp.json()) as unknown;
  const list = Array.isArray(body) ? body : (body as { sessions?: unknown[] }).sessions;
  if (!Array.isArray(list)) throw new Error("the daemon's session list was not a list");
  return list.filter((s): s is Session => typeof (s as Session)?.sessionId === 'string');
}

/** Sessions whose program still runs. */
export function running(sessions: Session[]): Session[] {
  return sessions.filter((s) => s.state === 'running' || s.state === 'starting');
}
