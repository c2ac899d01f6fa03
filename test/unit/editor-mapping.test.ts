// What `turnhost acp` asks an editor that has no forms: a single question with choices as one
// permission option per choice; the option chosen is the answer, a cancel is no answer.
import { expect } from 'chai';
import { clarifyFromPermission, clarifyPermission, historyUpdates, promptText } from '../../agents/acp/editor-mapping.js';

describe('ACP mapping', () => {
  it('a clarify with choices becomes permission options, and the chosen option is the answer', () => {
    const request = { id: 'srq-1', session_id: 's1', question: 'which branch?', choices: ['main', 'dev'] };
    const permission = clarifyPermission('s1', request)!;
    expect(permission.options.map((o) => [o.name, o.kind])).to.deep.equal([
      ['main', 'allow_once'],
      ['dev', 'allow_once'],
    ]);
    expect(clarifyFromPermission(request, { outcome: { outcome: 'selected', optionId: permission.options[1]!.optionId } })).to.equal('dev');
    expect(clarifyFromPermission(request, { outcome: { outcome: 'cancelled' } })).to.equal(null);
    expect(clarifyPermission('s1', { id: 'srq-2', session_id: 's1', question: 'free text?' })).to.equal(null);
  });

  it('a prompt\'s resources are part of its text; the history replays tool calls with their results', () => {
    expect(promptText([{ type: 'text', text: 'look at' }, { type: 'resource_link', uri: 'file:///a.ts', name: 'a.ts' }])).to.equal('look at\nfile:///a.ts');
    const updates = historyUpdates([
      { seq: 1, role: 'user', content: 'grep it', turn_id: 't1' },
      { seq: 2, role: 'assistant', content: '', turn_id: 't1', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'grep', arguments: '{}' } }] },
      { seq: 3, role: 'tool', content: '3 matches', turn_id: 't1', tool_call_id: 'c1' },
      { seq: 4, role: 'assistant', content: 'found 3', turn_id: 't1' },
    ]);
    expect(updates.map((u) => u.sessionUpdate)).to.deep.equal(['user_message_chunk', 'tool_call', 'tool_call_update', 'agent_message_chunk']);
  });
});
