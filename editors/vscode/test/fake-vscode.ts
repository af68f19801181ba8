// A stand-in for the `vscode` module (VS Code cannot run here): just the
// parts the extension calls, recording what it registered and showed, typed
// against @types/vscode where it hands objects back. Installed before the
// extension is loaded, as `require('vscode')`.

import Module = require('node:module');

export interface Recorded {
  commands: Map<string, (...a: unknown[]) => unknown>;
  adapterFactories: Map<string, { createDebugAdapterDescriptor: (...a: unknown[]) => unknown }>;
  configProviders: Map<string, { resolveDebugConfiguration: (...a: unknown[]) => unknown }>;
  mcpProviders: Map<string, { provideMcpServerDefinitions: () => unknown }>;
  statusItems: { text: string; tooltip: string; command?: string; shown: boolean }[];
  panels: { html: string; options: unknown; send: (m: unknown) => Promise<void>; disposed: boolean }[];
  errors: string[];
  infos: string[];
  warnings: string[];
  opened: { path: string; line?: number }[];
  terminals: { name?: string; shellPath?: string; shellArgs?: string[] }[];
  started: unknown[];
  quickPicks: unknown[][];
  settings: Record<string, unknown>;
  pick: (items: unknown[]) => unknown;
  workspaceFolders: string[];
  activeFile?: string;
}

export const rec: Recorded = {
  commands: new Map(),
  adapterFactories: new Map(),
  configProviders: new Map(),
  mcpProviders: new Map(),
  statusItems: [],
  panels: [],
  errors: [],
  infos: [],
  warnings: [],
  opened: [],
  terminals: [],
  started: [],
  quickPicks: [],
  settings: {},
  pick: (items) => items[0],
  workspaceFolders: [],
};

const disposable = { dispose() {} };

class Range {
  constructor(
    readonly startLine: number,
    readonly startCharacter: number,
    readonly endLine: number,
    readonly endCharacter: number,
  ) {}
}

class DebugAdapterExecutable {
  constructor(
    readonly command: string,
    readonly args: string[],
  ) {}
}

class McpStdioServerDefinition {
  constructor(
    readonly label: string,
    readonly command: string,
    readonly args: string[],
  ) {}
}

const uri = (p: string) => ({ fsPath: p, path: p, scheme: 'file' });

export const fake = {
  Range,
  DebugAdapterExecutable,
  McpStdioServerDefinition,
  StatusBarAlignment: { Left: 1, Right: 2 },
  ViewColumn: { One: 1, Beside: -2 },
  Uri: { file: uri },
  debug: {
    registerDebugAdapterDescriptorFactory: (type: string, f: never) => (rec.adapterFactories.set(type, f), disposable),
    registerDebugConfigurationProvider: (type: string, p: never) => (rec.configProviders.set(type, p), disposable),
    startDebugging: async (_folder: unknown, config: unknown) => (rec.started.push(config), true),
  },
  commands: {
    registerCommand: (id: string, f: never) => (rec.commands.set(id, f), disposable),
  },
  lm: {
    registerMcpServerDefinitionProvider: (id: string, p: never) => (rec.mcpProviders.set(id, p), disposable),
  },
  workspace: {
    getConfiguration: (section: string) => ({ get: (k: string) => rec.settings[`${section}.${k}`] }),
    get workspaceFolders() {
      return rec.workspaceFolders.map((f) => ({ uri: uri(f) }));
    },
    getWorkspaceFolder: () => undefined,
    openTextDocument: async (u: { fsPath: string }) => {
      if (!require('node:fs').existsSync(u.fsPath)) throw new Error(`cannot open file ${u.fsPath}`);
      return { uri: u };
    },
  },
  window: {
    createOutputChannel: () => ({ appendLine() {}, dispose() {} }),
    createStatusBarItem: () => {
      const item = { text: '', tooltip: '', command: undefined as string | undefined, shown: false,
        show() { item.shown = true; }, dispose() {} };
      rec.statusItems.push(item);
      return item;
    },
    createWebviewPanel: (_id: string, _title: string, _col: number, options: unknown) => {
      let listener: (m: unknown) => unknown = () => {};
      const entry = { html: '', options, disposed: false, send: async (m: unknown) => { await listener(m); } };
      rec.panels.push(entry);
      return {
        webview: {
          set html(h: string) { entry.html = h; },
          get html() { return entry.html; },
          onDidReceiveMessage: (f: (m: unknown) => unknown) => { listener = f; return disposable; },
        },
        onDidDispose: () => disposable,
        reveal() {},
      };
    },
    showTextDocument: async (doc: { uri: { fsPath: string } }, opts: { selection?: Range }) => {
      rec.opened.push({ path: doc.uri.fsPath, line: opts.selection?.startLine });
    },
    showErrorMessage: async (m: string) => void rec.errors.push(m),
    showInformationMessage: async (m: string) => void rec.infos.push(m),
    showWarningMessage: async (m: string) => void rec.warnings.push(m),
    showQuickPick: async (items: unknown[]) => (rec.quickPicks.push(items), rec.pick(items)),
    createTerminal: (o: { name?: string; shellPath?: string; shellArgs?: string[] }) => (rec.terminals.push(o), { show() {} }),
    get activeTextEditor() {
      return rec.activeFile ? { document: { uri: uri(rec.activeFile) } } : undefined;
    },
  },
};

// `require('vscode')` from here on gives the fake.
const M = Module as unknown as { _resolveFilename: (r: string, ...rest: unknown[]) => string };
const resolve = M._resolveFilename;
M._resolveFilename = function (request: string, ...rest: unknown[]) {
  if (request === 'vscode') return 'vscode';
  return resolve.call(this, request, ...rest);
};
require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: fake } as unknown as NodeJS.Module;
