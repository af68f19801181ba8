// Who made a tool call on a session: the agent, an editor debugging through
// `strobe dap`, or a scenario run (the daemon names the side from the MCP
// client's name). The agent lane colours and labels calls by it.

import type { AgentCall } from '../types';

/** "by the editor (strobe-dap)", "by the agent (claude-code)", "by the agent". */
export function byText(c: Pick<AgentCall, 'side' | 'client'>): string {
  const who = c.side === 'editor' ? 'the editor' : c.side === 'scenarios' ? 'a scenario run' : 'the agent';
  return c.client ? `by ${who} (${c.client})` : `by ${who}`;
}
