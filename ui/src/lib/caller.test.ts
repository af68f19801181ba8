import { describe, expect, it } from 'vitest';
import { byText } from './caller';

describe('byText', () => {
  it('names the side and the client', () => {
    expect(byText({ side: 'editor', client: 'strobe-dap' })).toBe('by the editor (strobe-dap)');
    expect(byText({ side: 'agent', client: 'claude-code' })).toBe('by the agent (claude-code)');
    expect(byText({ side: 'scenarios', client: 'strobe-scenarios' })).toBe('by a scenario run (strobe-scenarios)');
  });
  it('reads calls stored before the side was recorded as the agent', () => {
    expect(byText({})).toBe('by the agent');
    expect(byText({ client: '' })).toBe('by the agent');
  });
});
