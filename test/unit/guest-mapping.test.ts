import { expect } from 'chai';
import type { PermissionOption } from '@agentclientprotocol/sdk';
import { approvalParams, clarifyParams, elicitationAnswer, permissionOutcome, toolResultText, turnStop, updateEvent } from '../../agents/acp/guest-mapping.js';

const OPTIONS: PermissionOption[] = [
  { optionId: 'always', name: 'Always', kind: 'allow_always' },
  { optionId: 'once', name: 'Allow', kind: 'allow_once' },
  { optionId: 'no', name: 'Reject', kind: 'reject_once' },
];

describe('guest mapping (AGENT.md §6): what turnhost says for what a guest says', () => {
  it('an approval question is the title, safe for a terminal and cut; the arguments whole', () => {
    const params = approvalParams({ sessionId: 's', toolCall: { toolCallId: 't', title: 'rm -rf /\rls', kind: 'execute', rawInput: { command: 'x'.repeat(900) } }, options: OPTIONS });
    expect(params['question']).to.equal('rm -rf /\\u000dls');
    expect(params['tool']).to.equal('acp_execute');
    expect((params['arguments'] as { command: string }).command).to.have.length(900);
    const long = approvalParams({ sessionId: 's', toolCall: { toolCallId: 't', title: 'y'.repeat(600) }, options: OPTIONS });
    expect(long['question']).to.equal(`${'y'.repeat(500)}… [100 more characters not shown]`);
    expect(long['tool']).to.equal('acp_other');
  });

  it('answers pick options: approved the first allow_once, refused or unanswered the first reject_once, option_id that one when offered', () => {
    expect(permissionOutcome(OPTIONS, { approved: true })).to.deep.equal({ outcome: { outcome: 'selected', optionId: 'once' } });
    expect(permissionOutcome(OPTIONS, { approved: false })).to.deep.equal({ outcome: { outcome: 'selected', optionId: 'no' } });
    expect(permissionOutcome(OPTIONS, null)).to.deep.equal({ outcome: { outcome: 'selected', optionId: 'no' } });
    expect(permissionOutcome(OPTIONS, { option_id: 'always' })).to.deep.equal({ outcome: { outcome: 'selected', optionId: 'always' } });
    expect(permissionOutcome(OPTIONS, { option_id: 'not-offered' })).to.deep.equal({ outcome: { outcome: 'selected', optionId: 'no' } });
    expect(permissionOutcome([{ optionId: 'a', name: 'A', kind: 'allow_always' }], { approved: true })).to.deep.equal({ outcome: { outcome: 'selected', optionId: 'a' } });
    expect(permissionOutcome([{ optionId: 'a', name: 'A', kind: 'allow_once' }], { approved: false })).to.deep.equal({ outcome: { outcome: 'cancelled' } });
  });

  it('stop reasons end the turn as AGENT.md §6 says', () => {
    expect(turnStop('end_turn')).to.deep.equal({ interrupted: false });
    expect(turnStop('max_tokens')).to.deep.equal({ interrupted: false, finishReason: 'length' });
    expect(turnStop('refusal')).to.deep.equal({ interrupted: false, status: 'refusal' });
    expect(turnStop('max_turn_requests')).to.deep.equal({ interrupted: false, status: 'max_turn_requests' });
    expect(turnStop('cancelled')).to.deep.equal({ interrupted: true });
  });

  it('a tool result is its content as text (a diff and a terminal by name), else its rawOutput', () => {
    expect(toolResultText([{ type: 'content', content: { type: 'text', text: 'out' } }, { type: 'diff', path: '/a', oldText: 'x', newText: 'y' }, { type: 'terminal', terminalId: 't1' }], undefined)).to.equal('out\n[diff /a]\n[terminal t1]');
    expect(toolResultText([], { exit: 0 })).to.equal('{"exit":0}');
    expect(toolResultText(undefined, 'raw')).to.equal('raw');
  });

  it('updates that make no event: a load replaying its transcript, the guest\'s commands; other content as a placeholder', () => {
    expect(updateEvent({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'old' } })).to.equal(null);
    expect(updateEvent({ sessionUpdate: 'available_commands_update', availableCommands: [] })).to.equal(null);
    expect(updateEvent({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: '' } })).to.equal(null);
    expect(updateEvent({ sessionUpdate: 'agent_message_chunk', content: { type: 'image', data: '', mimeType: 'image/png' } })).to.deep.equal({ type: 'message.delta', text: '[image]' });
  });

  it('an elicitation is a clarify batch of its fields; a batch answer is its content, no answer declines', () => {
    const request = { sessionId: 's', mode: 'form', message: 'm', requestedSchema: { type: 'object', properties: { a: { type: 'string', title: 'A', enum: ['x', 'y'] }, b: { type: 'string', description: 'the b' } } } } as unknown as Parameters<typeof clarifyParams>[0];
    expect(clarifyParams(request)).to.deep.equal({ questions: [{ id: 'a', question: 'A', choices: ['x', 'y'] }, { id: 'b', question: 'b: the b' }] });
    expect(elicitationAnswer(request, { answers: { a: 'y', b: 'z' } })).to.deep.equal({ action: 'accept', content: { a: 'y', b: 'z' } });
    expect(elicitationAnswer(request, null)).to.deep.equal({ action: 'decline' });
  });
});
