// The AG-UI view of a turn (edge/ag-ui-events.ts) on events the script agent does not make:
// reasoning, tool arguments and usage. Every event must pass @ag-ui/core's schema, in an order
// AG-UI accepts (a message closed before another kind begins).
import type { BaseEvent } from '@ag-ui/core';
import { EventSchemas } from '@ag-ui/core/schemas';
import { expect } from 'chai';
import { AgUiTurn } from '../../edge/ag-ui-events.js';
import { answerFrom } from '../../edge/question-answer.js';

describe('AG-UI events of a turn', () => {
  it('reasoning, a tool call with arguments, the reply and usage: each event valid, each message closed before the next kind', () => {
    const events: BaseEvent[] = [];
    const turn = new AgUiTurn('t1', 'r1', 'turn-1', (event) => events.push(EventSchemas.parse(event) as BaseEvent));
    turn.event('reasoning.delta', { text: 'think' });
    turn.event('reasoning.delta', { text: 'ing' });
    turn.event('tool.start', { id: 'call-1', name: 'grep', arguments: { pattern: 'x' } });
    turn.event('tool.complete', { id: 'call-1', ok: true, summary: '3 matches' });
    turn.event('message.delta', { text: '' });
    turn.event('message.delta', { text: 'done' });
    turn.event('message.complete', { text: 'done' });
    expect(turn.event('turn.end', { interrupted: false, usage: { prompt_tokens: 10, completion_tokens: 4, calls: 1 } })).to.equal(true);
    expect(events.map((e) => e.type)).to.deep.equal([
      'REASONING_START',
      'REASONING_MESSAGE_START',
      'REASONING_MESSAGE_CONTENT',
      'REASONING_MESSAGE_CONTENT',
      'REASONING_MESSAGE_END',
      'REASONING_END',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    expect(events[7]).to.include({ delta: '{"pattern":"x"}' });
    expect(events.at(-1)).to.deep.include({ outcome: { type: 'success' }, usage: [{ inputTokens: 10, outputTokens: 4, totalTokens: 14 }] });
  });

  it('an interrupted turn finishes cancelled; an approval becomes an interrupt whose answer is {approved}', () => {
    const events: BaseEvent[] = [];
    const turn = new AgUiTurn('t1', 'r1', 'turn-1', (event) => events.push(EventSchemas.parse(event) as BaseEvent));
    turn.event('message.delta', { text: 'half' });
    turn.interrupt([{ id: 'srq-1', method: 'approval.request', params: { question: 'rm -rf build?' } }]);
    expect(events.map((e) => e.type)).to.deep.equal(['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED']);
    expect((events.at(-1) as unknown as { outcome: { interrupts: unknown[] } }).outcome.interrupts[0]).to.deep.include({ id: 'srq-1', reason: 'approval', message: 'rm -rf build?' });
    const question = { id: 'srq-1', method: 'approval.request', params: {} };
    expect(answerFrom(question, 'resolved', { approved: true })).to.deep.equal({ result: { approved: true } });
    expect(answerFrom(question, 'cancelled', undefined)).to.have.property('error');
    const batch = { id: 'srq-2', method: 'clarify.request', params: { questions: [{ id: 'q0', question: 'a?' }] } };
    expect(answerFrom(batch, 'resolved', { q0: 'yes' })).to.deep.equal({ result: { answers: { q0: 'yes' } } });
    const cancelled: BaseEvent[] = [];
    new AgUiTurn('t1', 'r2', 'turn-2', (event) => cancelled.push(event)).event('turn.end', { interrupted: true });
    expect(cancelled.at(-1)).to.deep.include({ outcome: { type: 'cancelled' } });
  });
});
