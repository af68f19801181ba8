// What the tests share: a fake `strobe` (a shell script that prints a UI
// address) and a real HTTP server playing the daemon's session list.

import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';

/** A temporary folder, removed at exit. */
export function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'strobe-vscode-'));
  process.on('exit', () => fs.rmSync(d, { recursive: true, force: true }));
  return d;
}

/** An executable shell script at `dir/name` printing `stdout` (for `ui`). */
export function fakeStrobe(dir: string, uiUrl: string, name = 'strobe'): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, `#!/bin/sh\n[ "$1" = ui ] && { echo '${uiUrl}'; exit 0; }\necho "unexpected $*" >&2; exit 2\n`, { mode: 0o755 });
  return p;
}

/** A loopback server answering /api/sessions with `sessions` for `token` only. */
export async function fakeDaemon(token: string, sessions: unknown[]): Promise<{ url: string; close: () => void; seen: string[] }> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":"REFUSED"}}');
      return;
    }
    if (req.url === '/api/sessions') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(sessions));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/?token=${token}`, close: () => server.close(), seen };
}
