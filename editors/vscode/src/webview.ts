// The "Strobe" panel: a webview whose only content is the daemon's web UI
// in a frame. The Content-Security-Policy allows nothing but that one
// loopback origin in the frame and this page's own nonce'd script, which
// passes the UI's "open source" requests on to the extension (the contract
// is ui/src/lib/editor.ts's).

/** A loopback UI address, or why it is refused. */
export function uiOrigin(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`"${url}" is not a URL: expected what \`strobe ui\` prints`);
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'];
  if (u.protocol !== 'http:' || !loopback.includes(u.hostname)) {
    throw new Error(`the web UI must be on this machine's loopback address, not ${u.origin}`);
  }
  return u.origin;
}

/** The panel's page: the UI at `uiUrl` (with its token) in a frame. */
export function timelineHtml(uiUrl: string, nonce: string): string {
  if (!/^[A-Za-z0-9]{16,}$/.test(nonce)) throw new Error('the nonce must be 16+ letters and digits');
  const origin = uiOrigin(uiUrl);
  const csp = [
    "default-src 'none'",
    `frame-src ${origin}`,
    `script-src 'nonce-${nonce}'`,
    "style-src 'unsafe-inline'",
  ].join('; ');
  const attr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${attr(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Strobe</title>
<style>html, body, iframe { margin: 0; padding: 0; border: 0; width: 100%; height: 100%; overflow: hidden; }</style>
</head>
<body>
<iframe id="strobe-ui" title="Strobe timeline" src="${attr(uiUrl)}"></iframe>
<script nonce="${nonce}">
  const vscode = acquireVsCodeApi();
  const uiOrigin = ${JSON.stringify(origin)};
  window.addEventListener('message', (e) => {
    if (e.origin !== uiOrigin || !e.data || e.data.type !== 'strobe.openSource') return;
    vscode.postMessage({ type: 'strobe.openSource', path: String(e.data.path), line: Number(e.data.line) || 0 });
  });
</script>
</body>
</html>`;
}

/** What the panel asks the extension: open `path` at `line` (1-based; 0 unknown). */
export interface OpenSource {
  type: 'strobe.openSource';
  path: string;
  line: number;
}

/** The message as an OpenSource request, or null for anything else. */
export function parseOpenSource(m: unknown): OpenSource | null {
  if (typeof m !== 'object' || m === null) return null;
  const o = m as Record<string, unknown>;
  if (o.type !== 'strobe.openSource' || typeof o.path !== 'string' || !o.path.startsWith('/')) return null;
  const line = typeof o.line === 'number' && Number.isInteger(o.line) && o.line > 0 ? o.line : 0;
  return { type: 'strobe.openSource', path: o.path, line };
}
