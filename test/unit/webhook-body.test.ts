// A webhook's body (PROTOCOL.md §8.2) names the session's agent (AGENT.md §8) beside the session,
// from the rows committed with the event; a session without one (stored before there were several
// agents) has none in its body.
import { expect } from 'chai';
import { webhookBody, type OutboxEvent } from '../../persistence/outbox.js';

describe('a webhook body (persistence/outbox.ts)', () => {
  const event: OutboxEvent = { sid: 's1', type: 'turn.end', ref: 't1', detail: null, created_at: Date.UTC(2026, 11, 4) };
  const turn = { status: 'completed', error: null, prompt_tokens: 3, completion_tokens: 2, model_calls: 1, reply: 'done' };

  it("carries the session's agent, and the turn's facts", () => {
    expect(JSON.parse(webhookBody(event, { agent: 'claude', turn }))).to.deep.equal({
      type: 'turn.end',
      timestamp: '2026-12-04T00:00:00.000Z',
      data: { session_id: 's1', agent: 'claude', turn_id: 't1', interrupted: false, usage: { prompt_tokens: 3, completion_tokens: 2, calls: 1 }, reply: 'done' },
    });
    expect(JSON.parse(webhookBody(event, { agent: null, turn })).data).to.not.have.property('agent');
  });
});
