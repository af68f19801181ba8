import { describe, expect, it } from 'vitest';
import { embedded, openInEditor, openSourceMessage } from './editor';

describe('openSourceMessage', () => {
  it('names the file and the line, or no line', () => {
    expect(openSourceMessage('/src/a.c', 12)).toEqual({ type: 'strobe.openSource', path: '/src/a.c', line: 12 });
    expect(openSourceMessage('/src/a.c', null)).toEqual({ type: 'strobe.openSource', path: '/src/a.c', line: 0 });
    expect(openSourceMessage(undefined, 3)).toBeNull();
    expect(openSourceMessage('', 3)).toBeNull();
  });
});

describe('openInEditor', () => {
  it('posts to the embedding editor, and does nothing in a browser tab', () => {
    const sent: unknown[] = [];
    const parent = { postMessage: (m: unknown) => sent.push(m) } as unknown as Window;
    const inWebview = { parent };
    expect(embedded(inWebview)).toBe(true);
    expect(openInEditor('/src/a.c', 7, inWebview)).toBe(true);
    expect(sent).toEqual([{ type: 'strobe.openSource', path: '/src/a.c', line: 7 }]);
    // A top-level tab is its own parent.
    const tab = {} as { parent: Window };
    tab.parent = tab as unknown as Window;
    expect(embedded(tab)).toBe(false);
    expect(openInEditor('/src/a.c', 7, tab)).toBe(false);
    expect(openInEditor(undefined, 7, inWebview)).toBe(false);
    expect(sent.length).toBe(1);
  });
});
