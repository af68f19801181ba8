// Strobe in VS Code. Everything VS Code-specific is here; the decisions
// (which binary, which configuration, the panel's page, the status text)
// are in the modules it calls, each tested without VS Code.
//
// - The `strobe` debugger type runs `strobe dap` (a Strobe session per
//   debug session, shared with agents). An attach configuration without a
//   sessionId or pid asks which running session to join.
// - "Strobe: Open timeline" shows the daemon's web UI in a panel; clicking
//   an event's source there opens it here.
// - Agents in VS Code get `strobe mcp` from the MCP server definition
//   provider, without configuration.
// - A status-bar item counts running sessions (it never starts the daemon
//   itself); clicking it opens the timeline.

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { findStrobe } from './binary';
import { configForFile, sessionItems, statusText, type StrobeConfig } from './config';
import { daemonUp, listSessions, running, uiUrl } from './daemon';
import { parseOpenSource, timelineHtml } from './webview';

/** How often the status bar counts sessions. */
const STATUS_POLL_MS = 5000;

function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** The strobe binary, or undefined after telling the user how to get one. */
export function strobeBinary(context: vscode.ExtensionContext, quiet = false): string | undefined {
  const found = findStrobe({
    setting: vscode.workspace.getConfiguration('strobe').get<string>('path'),
    envPath: process.env.PATH,
    checkouts: [
      ...(vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
      // Built from a Strobe checkout: editors/vscode is two levels down.
      path.resolve(context.extensionPath, '..', '..'),
    ],
    isExecutable,
  });
  if ('error' in found) {
    if (!quiet) void vscode.window.showErrorMessage(found.error);
    return undefined;
  }
  return found.path;
}

export function activate(context: vscode.ExtensionContext): void {
  const out = vscode.window.createOutputChannel('Strobe');
  context.subscriptions.push(out);

  context.subscriptions.push(
    vscode.debug.registerDebugAdapterDescriptorFactory('strobe', {
      createDebugAdapterDescriptor() {
        const bin = strobeBinary(context);
        if (!bin) throw new Error('Strobe was not found (see the message for how to get it)');
        out.appendLine(`strobe dap: ${bin}`);
        return new vscode.DebugAdapterExecutable(bin, ['dap']);
      },
    }),
    vscode.debug.registerDebugConfigurationProvider('strobe', {
      resolveDebugConfiguration: (_folder, config) => resolveConfiguration(context, config),
    }),
  );

  context.subscriptions.push(
    vscode.commands.registerCommand('strobe.openTimeline', () => openTimeline(context, out)),
    vscode.commands.registerCommand('strobe.debugCurrentFile', () => debugCurrentFile()),
    vscode.commands.registerCommand('strobe.registerAgents', () => registerAgents(context)),
    vscode.commands.registerCommand('strobe.attachToSession', () =>
      vscode.debug.startDebugging(undefined, { type: 'strobe', request: 'attach', name: 'Strobe: attach to a session' }),
    ),
  );

  // Agents in VS Code (Copilot's agent mode and others) get Strobe's tools.
  context.subscriptions.push(
    vscode.lm.registerMcpServerDefinitionProvider('strobe', {
      provideMcpServerDefinitions() {
        const bin = strobeBinary(context, true);
        return bin ? [new vscode.McpStdioServerDefinition('Strobe', bin, ['mcp'])] : [];
      },
    }),
  );

  const item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  item.command = 'strobe.openTimeline';
  context.subscriptions.push(item);
  const refresh = () => void refreshStatus(context, item);
  refresh();
  const timer = setInterval(refresh, STATUS_POLL_MS);
  context.subscriptions.push({ dispose: () => clearInterval(timer) });
}

export function deactivate(): void {}

/** Fills in what a configuration leaves out: an attach's session, a launch's program. */
async function resolveConfiguration(
  context: vscode.ExtensionContext,
  config: vscode.DebugConfiguration,
): Promise<vscode.DebugConfiguration | undefined> {
  if (!config.type && !config.request) {
    // F5 with no launch.json: the current file.
    const file = vscode.window.activeTextEditor?.document.uri.fsPath;
    if (!file) return undefined;
    const c = configForFile(file, isExecutable(file));
    if ('error' in c) {
      void vscode.window.showErrorMessage(c.error);
      return undefined;
    }
    return c;
  }
  if (config.request === 'attach' && !config.sessionId && !config.pid && !config.processId) {
    const sessionId = await pickSession(context);
    if (!sessionId) return undefined;
    return { ...config, sessionId };
  }
  return config;
}

/** Asks which running session to attach to. */
async function pickSession(context: vscode.ExtensionContext): Promise<string | undefined> {
  const bin = strobeBinary(context);
  if (!bin) return undefined;
  let live;
  try {
    live = running(await listSessions(await uiUrl(bin)));
  } catch (e) {
    void vscode.window.showErrorMessage(`Strobe: cannot list the sessions: ${(e as Error).message}`);
    return undefined;
  }
  if (live.length === 0) {
    void vscode.window.showInformationMessage(
      'Strobe: no session is running. Start one (an agent\'s debug_launch, or a "strobe" launch configuration) first.',
    );
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(sessionItems(live), {
    placeHolder: 'The Strobe session to attach to',
    matchOnDescription: true,
    matchOnDetail: true,
  });
  return picked?.sessionId;
}

let panel: vscode.WebviewPanel | undefined;

async function openTimeline(context: vscode.ExtensionContext, out: vscode.OutputChannel): Promise<void> {
  if (panel) {
    panel.reveal();
    return;
  }
  const bin = strobeBinary(context);
  if (!bin) return;
  let url: string;
  try {
    url = await uiUrl(bin);
  } catch (e) {
    void vscode.window.showErrorMessage(`Strobe: ${(e as Error).message}`);
    return;
  }
  const p = vscode.window.createWebviewPanel('strobe.timeline', 'Strobe', vscode.ViewColumn.Beside, {
    enableScripts: true,
    retainContextWhenHidden: true,
    localResourceRoots: [],
  });
  panel = p;
  p.webview.html = timelineHtml(url, crypto.randomBytes(16).toString('hex'));
  p.onDidDispose(() => {
    panel = undefined;
  });
  p.webview.onDidReceiveMessage(async (m) => {
    const req = parseOpenSource(m);
    if (!req) return;
    try {
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(req.path));
      const line = Math.max(0, req.line - 1);
      await vscode.window.showTextDocument(doc, {
        viewColumn: vscode.ViewColumn.One,
        selection: new vscode.Range(line, 0, line, 0),
      });
    } catch (e) {
      out.appendLine(`cannot open ${req.path}: ${(e as Error).message}`);
      void vscode.window.showWarningMessage(`Strobe: cannot open ${req.path} (it may be on another machine or gone).`);
    }
  });
}

async function debugCurrentFile(): Promise<void> {
  const file = vscode.window.activeTextEditor?.document.uri.fsPath;
  if (!file) {
    void vscode.window.showErrorMessage('Strobe: open the file (a script, a test or an executable) to debug first.');
    return;
  }
  const c: StrobeConfig | { error: string } = configForFile(file, isExecutable(file));
  if ('error' in c) {
    void vscode.window.showErrorMessage(c.error);
    return;
  }
  await vscode.debug.startDebugging(vscode.workspace.getWorkspaceFolder(vscode.Uri.file(file)), c);
}

function registerAgents(context: vscode.ExtensionContext): void {
  const bin = strobeBinary(context);
  if (!bin) return;
  // In a terminal: the person sees each file it writes, and what it skipped.
  const t = vscode.window.createTerminal({ name: 'Strobe: install', shellPath: bin, shellArgs: ['install'] });
  t.show();
}

/** The UI address the status bar counts with, kept while it works. */
let statusUrl: string | undefined;

/** Counts the running sessions into the status bar (exported for tests). */
export async function refreshStatus(context: vscode.ExtensionContext, item: vscode.StatusBarItem): Promise<void> {
  let live: number | null = null;
  const bin = daemonUp() ? strobeBinary(context, true) : undefined;
  if (bin) {
    try {
      statusUrl ??= await uiUrl(bin);
      live = running(await listSessions(statusUrl)).length;
    } catch {
      statusUrl = undefined;
    }
  }
  const s = statusText(live);
  item.text = s.text;
  item.tooltip = s.tooltip;
  item.show();
}
