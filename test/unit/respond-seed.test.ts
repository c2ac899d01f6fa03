// The seed's respond test (seed/test_compute_host_phase1.py), ported against the TypeScript
// modules: the host owns the server request's wait; a relayed lock is answered with the lock's
// result, and a relayed client response resolves the open request.
import { expect } from 'chai';
import type { Agent } from '../../agents/agent.js';
import { decode } from '../../persistence/codec.js';
import type { Frame } from '../helpers/processes.js';
import { startInProcessHost, type InProcessHost } from '../helpers/in-process-host.js';

function requestOf(frame: Frame): { id: string; method: string } {
  return frame['message'] as { id: string; method: string };
}

describe('respond (the seed rule, in process)', () => {
  let h: InProcessHost | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('answers a relayed lock with its result, and resolves the open request with a relayed response', async () => {
    const results: unknown[] = [];
    const agent: Agent = {
      name: 'asker',
      async runTurn(turn) {
        results.push(await turn.ask('clarify.request', { questions: [{ id: 'q0', question: '?' }] }));
        results.push(await turn.ask('clarify.request', { question: '?' }));
        return { reply: 'asked' };
      },
    };
    h = await startInProcessHost(agent);
    const isRequest = (f: Frame) => typeof (f['message'] as { id?: unknown }).id === 'string';
    h.host.submit({ type: 'turn.start', sid: 'host-clarify', request_id: 't1', text: 'ask' });

    const batch = requestOf(await h.frame('rpc', isRequest));
    h.host.submit({
      type: 'respond',
      sid: 'host-clarify',
      request_id: 'relay-lock',
      params: { kind: 'lock', requestId: batch.id, questionId: 'q0', answer: 'a' },
    });
    const lockAck = await h.frame('respond.ack', (f) => f['request_id'] === 'relay-lock');
    expect(lockAck['response']).to.deep.equal({ jsonrpc: '2.0', id: 'relay-lock', result: { status: 'ok', remaining: [] } });

    const single = requestOf(await h.frame('rpc', (f) => isRequest(f) && requestOf(f).id !== batch.id));
    h.host.submit({
      type: 'respond',
      sid: 'host-clarify',
      request_id: 'relay-response',
      params: { kind: 'response', id: single.id, result: { answer: 'yes' } },
    });
    const responseAck = await h.frame('respond.ack', (f) => f['request_id'] === 'relay-response');
    expect(responseAck['type']).to.equal('respond.ack');
    expect((responseAck['response'] as { result: unknown }).result).to.deep.equal({ status: 'ok' });

    await h.frame('turn.end');
    expect(results).to.deep.equal([{ answers: { q0: 'a' } }, { answer: 'yes' }]);
    h.store.flushQueued();
    const rows = h.store.db.prepare('SELECT id, status, answers FROM server_requests ORDER BY created_at, id').all() as { id: string; status: string; answers: string }[];
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(single.id)).to.include({ status: 'answered' });
    expect(decode(byId.get(single.id)!.answers)).to.deep.equal({ answer: 'yes' });
    expect(byId.get(batch.id)).to.include({ status: 'answered' });
  });
});
