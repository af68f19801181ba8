// Where the `strobe` binary comes from: the `strobe.path` setting, then
// PATH, then a build in a Strobe checkout (the workspace itself, or the
// checkout this extension was built in). No VS Code here, so it is tested
// on its own.

import * as path from 'node:path';

/** The binary found, and how (shown in the output channel). */
export type Found = { path: string; from: 'setting' | 'PATH' | 'build' } | { error: string };

export interface Where {
  /** The `strobe.path` setting, if set. */
  setting?: string;
  /** The PATH variable. */
  envPath?: string;
  /** Checkouts to look for a build in (workspace folders, the extension's repository). */
  checkouts: string[];
  /** Is there an executable file here? */
  isExecutable: (p: string) => boolean;
}

/** What to do when there is no binary: every way to get one. */
export const MISSING =
  'Strobe was not found. Set "strobe.path" to the strobe binary, put strobe on PATH, or build it: ' +
  '`./dev setup` in a Strobe checkout builds target/release/strobe.';

export function findStrobe(w: Where): Found {
  const setting = w.setting?.trim();
  if (setting) {
    if (w.isExecutable(setting)) return { path: setting, from: 'setting' };
    return { error: `The setting "strobe.path" is ${JSON.stringify(setting)}, which is not an executable file. Fix or clear it.` };
  }
  for (const dir of (w.envPath ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, 'strobe');
    if (w.isExecutable(p)) return { path: p, from: 'PATH' };
  }
  for (const root of w.checkouts) {
    for (const profile of ['release', 'debug']) {
      const p = path.join(root, 'target', profile, 'strobe');
      if (w.isExecutable(p)) return { path: p, from: 'build' };
    }
  }
  return { error: MISSING };
}
