// The web UI inside an editor (a VS Code webview): clicking a source
// location asks the editor to open it, by a message to the page that embeds
// this one. In a browser tab nothing embeds it, so nothing is sent.
//
// The contract (editors/vscode listens for it): { type: 'strobe.openSource',
// path: absolute file path, line: 1-based line or 0 when unknown }.

/** What the UI posts to the editor to open a source location. */
export interface OpenSource {
  type: 'strobe.openSource';
  path: string;
  line: number;
}

/** The message for `file`:`line`, or null when there is no file. */
export function openSourceMessage(file: unknown, line: unknown): OpenSource | null {
  if (typeof file !== 'string' || file === '') return null;
  const n = typeof line === 'number' && Number.isFinite(line) && line > 0 ? Math.floor(line) : 0;
  return { type: 'strobe.openSource', path: file, line: n };
}

/** Is this page embedded (an editor's webview), not a browser tab? */
export function embedded(w: Pick<Window, 'parent'> = window): boolean {
  return w.parent !== undefined && w.parent !== (w as unknown as Window['parent']);
}

/** Asks the embedding editor to open `file`:`line`; false (and nothing
 *  sent) in a browser tab or without a file. */
export function openInEditor(file: unknown, line: unknown, w: Pick<Window, 'parent'> = window): boolean {
  const m = openSourceMessage(file, line);
  if (!m || !embedded(w)) return false;
  w.parent.postMessage(m, '*');
  return true;
}
